"""The runners' side of an explicit continuation (issue 33 item 7; ``protocol.continuation``).

Before preflight the schedule loses the cells any run of the chain observed ``completed`` (issue 40); after
preflight, when the new ledger is built but before anything is written, it must record what the old one
recorded (else the run is refused, nothing written, naming the difference) and it names its predecessor in
``continues``. Every new ledger gets its ``runId`` here.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentstudy.protocol.continuation import (
    Predecessor,
    continuation_differences,
    new_run_id,
    remaining_schedule,
)
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.preflight import PreflightError


def continued_schedule(schedule: Sequence[ScheduleEntry], predecessor: Predecessor | None) -> tuple[ScheduleEntry, ...]:
    """``schedule`` itself without a predecessor; else only its cells no run of the chain behind it (every
    link, issue 40) observed ``completed``.

    Raises:
        PreflightError: the chain observed every cell completed (nothing to continue).
    """
    if predecessor is None:
        return tuple(schedule)
    left = remaining_schedule(schedule, predecessor.completed())
    if not left:
        raise PreflightError(f"--continue-from {predecessor.name}: every cell of this schedule was completed "
                             "there; nothing to continue")
    return left


def start_ledger(ledger: MinimalLedger, predecessor: Predecessor | None) -> None:
    """Give ``ledger`` its ``runId`` and, for a continuation, its ``continues`` block.

    Raises:
        PreflightError: the new run's preflight found something other than the old ledger recorded (the
            message names each difference); nothing has been written.
    """
    ledger.run_id = new_run_id()
    if predecessor is None:
        return
    differences = continuation_differences(predecessor.ledger, ledger)
    if differences:
        raise PreflightError(f"--continue-from {predecessor.name}: this run differs from the one it would "
                             f"continue: {'; '.join(differences)}")
    ledger.continues = predecessor.record(len(predecessor.completed()))
