"""Execution of the controlled study (seed 004; digest sections 5.5, 5.7, 5.8, 5.10, 5.11).

Modules: ``outputs`` (provider and adjudicator answers), ``requests`` (their stdin documents),
``record`` (classification of an attempt and the observation it records), ``rubric`` (the
deterministic adjudication), ``command`` (``run_controlled_command``: attempts, retries, one
observation), ``preflight`` (every check before any child), ``ledger_file`` (reading and
persisting ledgers), ``run`` (``agentstudy run``), ``adjudicate`` (the independent
adjudicator) and ``metrics`` / ``metrics_report`` (the metrics calculator). ``outputs``,
``requests``, ``record``, ``rubric`` and the metrics modules are pure.
"""
