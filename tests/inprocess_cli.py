"""Run an ``agentstudy`` command inside the test's own process (click's ``CliRunner``), for tests that read its
exit code and output but are not about the process (its signals, containment or environment): no interpreter
start and no second import of the libraries a command loads (issue 42 item 7, the suite's CPU).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from click.testing import CliRunner


def invoke_agentstudy(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``agentstudy args`` in this process, shaped like :func:`checkout_run.run_agentstudy`'s answer: its exit code
    as ``returncode``, its stdout and stderr apart. ``env`` (default: ours) replaces the environment for the call
    (variables of ours it lacks are unset meanwhile). Exceptions other than the command's own exits propagate."""
    from agentstudy.cli import main

    unset: dict[str, str | None] = {name: None for name in os.environ if env is not None and name not in env}
    result = CliRunner().invoke(main, list(args), env={**unset, **(env or {})}, catch_exceptions=False)
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)
