"""Blind agent adjudication of a finished study (seed 000: "a separate agent run that is blind to scenario identity").

``ledger_view`` reads the run ledger (never modified); ``blinding`` turns completed
observations into opaque items; ``scrub`` removes what would reveal the scenario from an
answer; ``citations`` checks every ``path:line`` citation against the pinned corpus;
``prompt`` builds the adjudicator's prompt and parses its strict JSON; ``run`` drives the
adjudicator attempts (reserve, run, settle, checkpoint) into the companion file; ``demo`` is the
zero-spend adjudication of ``agentstudy demo``. There is no human review.
"""
