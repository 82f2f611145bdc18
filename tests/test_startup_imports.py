"""A command imports only what it uses (issue 42): the help of the group and of every command, each in a
fresh interpreter, loads none of the heavy libraries, which load only when a server is started or probed
(the MCP SDK), statistics are computed (numpy, scipy, statsmodels), a plot is drawn (matplotlib), the Ray
executor is chosen (ray) or HTTP is used (httpx); nor our pydantic models, the state machines or rich, which
load inside the command's function (a command module imports at top only what its options need)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentstudy.cli import COMMANDS

HEAVY = ("mcp", "numpy", "scipy", "statsmodels", "matplotlib", "ray", "httpx", "pyarrow")
MODELS = ("pydantic", "statemachine", "rich")
"""What a command's options never need: our pydantic models, the state machines and the terminal
renderer load inside the command's function, so ``--help`` stays at click's floor (issue 42)."""

PROBE = """
import json, sys
from agentstudy.cli import main
try:
    main({argv!r}, prog_name="agentstudy")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print(json.dumps(sorted({{name.partition(".")[0] for name in sys.modules}})))
"""


def _loaded_after(argv: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Usage: agentstudy" in done.stdout
    loaded: set[str] = set(json.loads(done.stdout.splitlines()[-1]))
    return loaded


@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in sorted(COMMANDS))],
                         ids=lambda argv: " ".join(argv))
def test_help_loads_no_heavy_library(argv: list[str]) -> None:
    loaded = _loaded_after(argv)
    assert "click" in loaded and "agentstudy" in loaded  # the probe saw the real command line
    assert sorted(loaded & set(HEAVY)) == []
    assert sorted(loaded & set(MODELS)) == []


def test_the_probe_would_see_a_heavy_library() -> None:
    """The same probe after building a statistics report's section names numpy: the check can fail."""
    done = subprocess.run([sys.executable, "-c", "import sys, json; import agentstudy.report.stats; "
                           "print(json.dumps(sorted({n.partition('.')[0] for n in sys.modules})))"],
                          capture_output=True, text=True, check=True, timeout=120)
    assert {"numpy", "scipy"} <= set(json.loads(done.stdout))


def test_the_probe_would_see_the_models() -> None:
    """Importing a study file's models loads pydantic: the ``MODELS`` check can fail."""
    done = subprocess.run([sys.executable, "-c", "import sys, json; import agentstudy.protocol.study_arms; "
                           "print(json.dumps(sorted({n.partition('.')[0] for n in sys.modules})))"],
                          capture_output=True, text=True, check=True, timeout=120)
    assert "pydantic" in set(json.loads(done.stdout))
