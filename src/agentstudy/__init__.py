"""agentstudy: controlled, paired, budget-safe studies of coding agents.

Subpackages, from the pure core up (imports point down only):
``protocol`` (manifests, schedules, records), ``stream`` (stream-json checks), ``pricing``
(prices, costs, reservations and settlement), ``fsm`` (run and attempt state machines);
``io`` (the thin shell: processes, git, files, sockets); ``transports`` (one attempt);
``runners`` (study loops); ``rehearsal`` (local servers and an example study for zero-spend runs).
"""

__version__ = "0.1.0"
