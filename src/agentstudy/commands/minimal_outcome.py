"""How ``agentstudy minimal`` turns a run into an exit code, and its sequential plan: the refusals and stops a
run can end with (one line each), the summary it prints, and the plan of a sequential design."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentstudy.commands.common import EXIT_BLOCKED, emit_summary, fail

if TYPE_CHECKING:
    from agentstudy.protocol.manifest import LoadedManifest
    from agentstudy.protocol.sequential_plan import SequentialPlan
    from agentstudy.runners.summary import RunSummary


def sequential_plan(loaded: LoadedManifest, flag: bool, pilot: bool) -> SequentialPlan | None:
    """The run's sequential plan (issue 35): with ``--sequential`` or a study file's ``design.sequential``; ``None``
    otherwise. It decides on the study's declared primary endpoint (``analysis.primary``); a study that declares
    none decides on input tokens, lower is better. Exits 2 (one line) with ``--pilot`` or a study it cannot run
    sequentially (a primary endpoint only known after adjudication, several agents, too few tasks)."""
    from agentstudy.protocol.sequential_plan import plan_sequential
    design = getattr(loaded.manifest, "design", None)
    if not flag and (design is None or design.sequential is None):
        return None
    if pilot:
        fail("a sequential design runs the study itself, not a pilot (drop --pilot or --sequential)")
    declared = loaded.analysis
    try:
        if declared is None:
            return plan_sequential(loaded.manifest, loaded.protocol_hash)
        return plan_sequential(loaded.manifest, loaded.protocol_hash, metric=declared.primary.metric,
                               better_when=declared.primary.better_when)
    except ValueError as error:
        fail(f"--sequential: {error}")


def run_and_summarise(study: Callable[[], RunSummary]) -> int:
    """Run ``study`` and print its summary (table on stderr, JSON line on stdout); its exit code. A refusal
    before anything was reserved exits 2 (one line); a checkpoint failure, an attempt body's error or an
    internal error exits 1 naming what to review (issue 29: the body's error in its own words)."""
    from agentstudy.commands.view import print_summary_table
    from agentstudy.io.ledger_store import CheckpointError, OutputPathError
    from agentstudy.runners.concurrent_walk import AttemptBodyError
    from agentstudy.runners.preflight import PreflightError
    try:
        summary = study()
    except (PreflightError, OutputPathError) as error:
        fail(f"run refused, nothing reserved: {error}")
    except CheckpointError as error:
        fail(f"the run stopped because a checkpoint failed: {error}; the ledger on disk is the last one written, "
             "review the budget before any rerun", EXIT_BLOCKED)
    except AttemptBodyError as error:
        fail(f"the run stopped: {error}; the attempts already running were recorded, see the ledger and review "
             "the budget before any rerun", EXIT_BLOCKED)
    except Exception:
        fail("the run stopped on an internal error; see the ledger, do not retry without a budget review",
             EXIT_BLOCKED)
    print_summary_table(summary)
    return emit_summary(summary)


