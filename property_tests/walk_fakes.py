"""Parts the concurrent-walk property tests share (issue 19): a bare observation and an empty cli ledger."""

from __future__ import annotations

from decimal import Decimal

from agentstudy.protocol.records import CliObservation, MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.transports.cli import CliAttemptResult


def bare_observation(entry: ScheduleEntry, result: CliAttemptResult, status: str, reserved: Decimal,
                     charged: Decimal, cap_exceeded: bool) -> CliObservation:
    """The fields the walk's checks read (identity, status, ``chargedUsd``), as the walk's ``observe`` port."""
    return CliObservation.model_construct(task_id=entry.task_id, scenario=entry.scenario,
                                          repetition=entry.repetition, status=status,
                                          charged_usd=float(charged), tool_calls=0)


def empty_cli_ledger() -> MinimalLedger:
    """A cli ledger with no observation and no reservation, for the walk to fill."""
    return MinimalLedger.model_construct(observations=[], open_reservations=None, concurrency=None,
                                         stop_reason=None, transport="cli", open_reservation=None)
