"""One signal policy for the long commands (issue 16): SIGINT, SIGTERM and SIGHUP become a recorded stop.

``stop_policy()`` installs one handler for the three signals (main thread only). On the first
signal the handler records it, terminates every child process of ours with its whole process
group (``SIGTERM``, then ``SIGKILL`` after ``KILL_GRACE_S``) and returns — it raises only when
the main thread is inside an ``interruptible()`` region (an in-process wait that no child's
death would end, e.g. a Messages API request), and only once. Later signals are ignored: the
handler is idempotent, so cleanup and the final checkpoint are never interrupted.

Everything else happens at safe points the code chooses: ``raise_if_stopped()`` raises
``StopRequested``, ``stop_signal()`` tells whether a stop was asked. Nothing depends on
``KeyboardInterrupt`` travelling through arbitrary code (python-statemachine's
``BaseEngine.__del__`` swallows exceptions raised inside it): a stop raised by the handler and
swallowed by a finalizer is raised again when the region ends, and the recorded signal keeps
every later safe point stopping.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a long command."""
KILL_GRACE_S = 1.0
"""Seconds a child has between ``SIGTERM`` and ``SIGKILL`` when a stop terminates it."""
EXIT_SIGNAL_BASE = 128
"""A command stopped by signal ``n`` exits ``128 + n`` (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
_POLL_S = 0.01


class StopRequested(BaseException):
    """A stop signal was received; raised at a safe point (never a subclass of ``Exception``, so broad
    ``except Exception`` handlers let it through).

    Attributes:
        signum: the signal number. name: its name (``SIGTERM``). reason: ``"stopped by SIGTERM"``.
        exit_code: ``128 + signum``. detail: what the raiser adds for the operator (one line, or ``""``).
    """

    def __init__(self, signum: int, detail: str = "") -> None:
        self.signum = signum
        self.name = signal_name(signum)
        self.reason = f"stopped by {self.name}"
        self.exit_code = EXIT_SIGNAL_BASE + signum
        self.detail = detail
        super().__init__(f"{self.reason}: {detail}" if detail else self.reason)


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15; ``SIG<n>`` for a number without a name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIG{signum}"


@dataclass
class _State:
    signum: int | None = None
    raised: bool = False
    regions: int = 0
    installed: bool = False


_STATE = _State()


_HOOKS: list[Callable[[], None]] = []
"""Run once by ``run_stop_hooks`` at the coordinator's first safe point after a stop (never in the handler)."""


def reclaim_stop_signals() -> None:
    """Put our handler back on ``STOP_SIGNALS`` after a library replaced it (Ray's ``ray.init`` installs its own
    SIGTERM handler, which aborted the driver: issue 29, break 7). Main thread, under ``stop_policy`` only."""
    if _STATE.installed and threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, _handle)


def add_stop_hook(hook: Callable[[], None]) -> None:
    """Have ``hook`` run once, at the coordinator's first safe point after a stop (``run_stop_hooks``): e.g.
    cancel the remote attempts, whose processes no local handler can reach."""
    _HOOKS.append(hook)


def remove_stop_hook(hook: Callable[[], None]) -> None:
    """Forget ``hook`` (nothing if it already ran or was never added)."""
    with contextlib.suppress(ValueError):
        _HOOKS.remove(hook)


def run_stop_hooks() -> None:
    """Once a stop was asked: run (and forget) every stop hook, in the calling thread; else nothing.

    A hook that raises does not keep the others from running; its error is dropped (the stop goes on).
    """
    if _STATE.signum is None:
        return
    while _HOOKS:
        hook = _HOOKS.pop(0)
        with contextlib.suppress(Exception):
            hook()


def stop_signal() -> int | None:
    """The signal that asked for a stop under the current policy, or ``None``."""
    return _STATE.signum


def stop_reason() -> str | None:
    """``"stopped by SIGTERM"`` once a stop was asked, else ``None``."""
    return None if _STATE.signum is None else f"stopped by {signal_name(_STATE.signum)}"


def raise_if_stopped(detail: str = "") -> None:
    """A safe point: raise ``StopRequested`` (with ``detail``) when a stop was asked; else nothing."""
    if _STATE.signum is not None:
        raise StopRequested(_STATE.signum, detail)


def _handle(signum: int, frame: FrameType | None) -> None:
    if _STATE.signum is not None:  # already stopping: a second signal changes nothing
        return
    _STATE.signum = signum
    terminate_children(KILL_GRACE_S)
    if _STATE.regions > 0 and not _STATE.raised:
        _STATE.raised = True
        raise StopRequested(signum)


@contextlib.contextmanager
def stop_policy() -> Iterator[None]:
    """Install the handler for ``STOP_SIGNALS`` for the duration (main thread only; elsewhere a no-op).

    The recorded stop is cleared on entry; the previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread() or _STATE.installed:
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    _STATE.signum, _STATE.raised, _STATE.regions, _STATE.installed = None, False, 0, True
    try:
        for sig in STOP_SIGNALS:
            signal.signal(sig, _handle)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _STATE.installed = False


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """A region where the handler may raise ``StopRequested`` in the main thread (an in-process wait).

    Entering after a stop raises at once. An error that leaves the region after a stop becomes
    ``StopRequested`` (chained), and a stop the body swallowed (a finalizer ate it) is raised at
    the region's end. Outside the main thread the region is inert (the handler never runs there).

    Raises:
        StopRequested: as above.
    """
    main = threading.current_thread() is threading.main_thread()
    if main:
        _STATE.regions += 1
    try:
        raise_if_stopped()
        yield
    except StopRequested:
        raise
    except BaseException as error:
        if _STATE.signum is not None:
            raise StopRequested(_STATE.signum) from error
        raise
    finally:
        if main:
            _STATE.regions -= 1
    raise_if_stopped()


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, …), or ``None``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def child_pids() -> list[int]:
    """The live (not yet exited) direct children of this process, from ``/proc``."""
    me = os.getpid()
    children: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            fields = _stat_fields(int(entry))
            if fields and len(fields) > 2 and fields[1] == str(me) and fields[0] not in ("Z", "X"):
                children.append(int(entry))
    return children


def _signal_tree(pid: int, sig: signal.Signals) -> None:
    """``sig`` to ``pid``'s process group when it leads its own (ours excluded), else to ``pid`` alone."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 3:  # gone (and maybe reaped): its pid may be someone else's now
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if fields[2] == str(pid) and pid != os.getpgrp():
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _ended(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is None or fields[0] in ("Z", "X")


def terminate_children(grace_s: float = KILL_GRACE_S) -> list[int]:
    """``SIGTERM`` every direct child's process tree, wait up to ``grace_s`` seconds, then ``SIGKILL`` them.

    A child that leads its own process group (everything we spawn does: ``start_new_session``)
    is signalled with its group, so its descendants go too; under bubblewrap the sandbox's pid
    namespace ends with it. Exited children are left for their owners to reap.

    Returns:
        The pids that were signalled.
    """
    children = child_pids()
    for pid in children:
        _signal_tree(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while children and not all(_ended(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    for pid in children:
        _signal_tree(pid, signal.SIGKILL)
    return children
