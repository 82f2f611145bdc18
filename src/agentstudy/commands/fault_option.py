"""The ``--rehearsal-faults SPEC`` check shared by the study commands (issue 33 item 1).

The SPEC grammar is :mod:`agentstudy.protocol.fault_schedule`'s; a study file's
``rehearsalFaults`` is the default a flag replaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstudy.commands.common import fail
from agentstudy.protocol.fault_schedule import FaultScheduleError, parse_fault_schedule

if TYPE_CHECKING:
    from agentstudy.protocol.manifest import LoadedManifest


def checked_faults(flag: str | None, loaded: LoadedManifest | None, rehearsal: bool) -> str | None:
    """The fault SPEC a run's scripted servers take: ``flag``, else the study file's ``rehearsalFaults``.

    Exits 2 (one line) when the SPEC does not parse, or when the flag is given without ``--rehearsal``
    (a study file's schedule is simply unused by a real run).
    """
    file_spec = getattr(loaded.manifest, "rehearsal_faults", None) if loaded is not None else None
    spec = flag if flag is not None else file_spec
    if flag is not None and not rehearsal:
        fail("--rehearsal-faults needs --rehearsal (it scripts the rehearsal server's refusals)")
    if spec is None or not rehearsal:
        return None
    try:
        parse_fault_schedule(spec)
    except FaultScheduleError as error:
        fail(f"--rehearsal-faults: {error}")
    return spec
