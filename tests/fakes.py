"""A fake ``claude`` executable for tests, as the seed describes it.

The fake is a Python script in a temporary directory. It reads ``behavior.json`` next to
itself, appends ``{argv, apiKeyPresent, cwd, cwdFiles, cwdWritable}`` to ``records.json``,
then acts by ``mode``:

- ``ok``: emit a transcript that matches the arm it was started for (init built from the
  argv's ``--model``, ``--allowedTools`` and ``--mcp-config``), one answer and a
  ``success`` result whose ``modelUsage`` prices ``inputTokens``/``outputTokens``;
- ``events``: emit ``behavior["events"]`` verbatim;
- ``sleep``: sleep ``sleepSeconds`` before acting as ``ok`` (or only on the invocations
  numbered in ``sleepOn``, 1-based);
- ``exit``: print the ``ok`` transcript and exit ``exitCode``;
- ``garbage``: print non-JSON;
- ``flood``: print ``floodBytes`` bytes of a JSON-looking line.

``malformedFirstLine`` prefixes one non-JSON line. ``answer`` replaces the ``ok`` answer text;
``trailingFloodBytes`` adds that many bytes of noise lines after the ``ok`` transcript;
``failWhenArgContains`` makes an invocation whose argv holds that text exit 3 at once, printing
nothing (``'"command"'``, in the MCP arm's ``--mcp-config`` only: every MCP-arm attempt fails);
``selfSignal`` makes the fake kill itself with that signal after the ``ok`` transcript;
``dropExecAfterVersion`` makes the file non-executable right after a ``--version`` probe (so
the next start fails); ``fillDirectory`` makes an attempt write a filler file there until the
filesystem is full (ENOSPC) before it answers. ``--version`` prints ``version``
(optionally after ``versionSleepSeconds``). A ``marker`` directory, when set, receives a
file per start (``started-<n>``) so a test can act while the fake runs, and on ``--version``
``version-probe`` (the pid) and ``version-env.json``: the probe's environment names, ``HOME``,
``TMPDIR``, working directory and the names whose value holds ``secretMarker`` (values are
never written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SCRIPT = r'''
import json, os, sys, time
from pathlib import Path

here = Path(__file__).resolve().parent
behavior = json.loads((here / "behavior.json").read_text())
args = sys.argv[1:]
def keep(write):
    try:  # a sandbox mounts the fake read-only: then nothing is recorded
        write()
    except OSError:
        pass

def append_call():
    with open(here / "calls.jsonl", "a") as calls:
        calls.write(json.dumps(args) + "\n")

keep(append_call)
if args == ["--version"]:
    if behavior.get("marker"):
        Path(behavior["marker"], "version-probe").write_text(str(os.getpid()))
        secret = behavior.get("secretMarker")
        Path(behavior["marker"], "version-env.json").write_text(json.dumps({
            "names": sorted(os.environ),
            "home": os.environ.get("HOME"),
            "tmpdir": os.environ.get("TMPDIR"),
            "cwd": os.getcwd(),
            "valuesWithSecret": sorted(k for k, v in os.environ.items() if secret and secret in v),
        }))
    time.sleep(behavior.get("versionSleepSeconds", 0))
    print(behavior.get("version", "2.1.296 (Claude Code)"))
    if behavior.get("dropExecAfterVersion"):
        os.chmod(__file__, 0o644)
    sys.exit(0)

records_path = here / "records.json"
def read_records():
    try:  # a record being replaced reads as none
        return json.loads(records_path.read_text()) if records_path.exists() else []
    except ValueError:
        return []
cwd = Path.cwd()
entry = {
    "argv": args,
    "apiKeyPresent": "ANTHROPIC_API_KEY" in os.environ,
    "env": sorted(os.environ),
    "cwd": str(cwd),
    "cwdFiles": sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*") if p.is_file()),
    "cwdWritable": os.access(cwd, os.W_OK) and (cwd.stat().st_mode & 0o222) != 0,
}
records = read_records() + [entry]
def write_records():
    # several fakes may start at once (issue 19): read, append and replace under one lock, so none is lost
    global records
    import fcntl
    with open(here / "records.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        records = read_records() + [entry]
        scratch = here / f".records.{os.getpid()}.json"
        scratch.write_text(json.dumps(records))
        os.replace(scratch, records_path)

keep(write_records)
if behavior.get("marker"):
    Path(behavior["marker"], f"started-{len(records)}").write_text(str(os.getpid()))

def value(flag, default=""):
    return args[args.index(flag) + 1] if flag in args else default

if behavior.get("fillDirectory"):
    with open(os.path.join(behavior["fillDirectory"], "filler"), "ab", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError:
            pass
if behavior.get("failWhenArgContains") and any(behavior["failWhenArgContains"] in a for a in args):
    sys.exit(3)
mode = behavior.get("mode", "ok")
if mode == "sleep" or len(records) in behavior.get("sleepOn", []):
    time.sleep(behavior.get("sleepSeconds", 60))
if behavior.get("malformedFirstLine"):
    print("this line is not json", flush=True)
if mode == "garbage":
    print("<<<garbage>>>", flush=True)
    sys.exit(0)
if mode == "flood":
    chunk = '{"type":"system","subtype":"noise","pad":"' + "x" * 65000 + '"}\n'
    written = 0
    while written < behavior["floodBytes"]:
        sys.stdout.write(chunk)
        written += len(chunk)
    sys.stdout.flush()
    sys.exit(0)
if mode == "events":
    for event in behavior["events"]:
        print(json.dumps(event), flush=True)
    sys.exit(behavior.get("exitCode", 0))

model = value("--model")
allowed = [t for t in value("--allowedTools").split(",") if t]
servers = list(json.loads(value("--mcp-config", "{}")).get("mcpServers", {}))
inp, out = behavior.get("inputTokens", 1000), behavior.get("outputTokens", 100)
price_in, price_out = behavior.get("prices", [0.10, 0.50])
cost = behavior.get("reportedCost", (inp * price_in + out * price_out) / 1e6)
events = [
    {"type": "system", "subtype": "init", "model": model, "tools": sorted(allowed),
     "mcp_servers": [{"name": n, "status": "connected", "source": "dynamic"} for n in servers]},
    {"type": "assistant", "message": {"id": "msg_fake_1",
     "content": [{"type": "text", "text": "Answer (README.md:1)."}],
     "usage": {"input_tokens": inp, "output_tokens": out}}},
    {"type": "result", "subtype": behavior.get("subtype", "success"), "is_error": behavior.get("isError", False),
     "result": behavior.get("answer", "Answer (README.md:1)."), "num_turns": 1, "total_cost_usd": cost,
     "usage": {"input_tokens": inp, "output_tokens": out, "cache_creation": {}},
     "modelUsage": {model: {"inputTokens": inp, "outputTokens": out, "cacheReadInputTokens": 0,
                             "cacheCreationInputTokens": 0, "costUSD": cost}},
     "permission_denials": []},
]
for event in events:
    print(json.dumps(event), flush=True)
if behavior.get("trailingFloodBytes"):
    noise = '{"type":"system","subtype":"noise","pad":"' + "x" * 65000 + '"}\n'
    for _ in range(behavior["trailingFloodBytes"] // len(noise) + 1):
        sys.stdout.write(noise)
    sys.stdout.flush()
if behavior.get("selfSignal"):
    os.kill(os.getpid(), behavior["selfSignal"])
sys.exit(behavior.get("exitCode", 0))
'''


class FakeClaude:
    """A fake ``claude`` in ``directory``: set ``behavior``, run, then read ``records``."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.path = directory / "claude"
        self.path.write_text(f"#!{sys.executable}\n{SCRIPT}", encoding="utf-8")
        self.path.chmod(0o755)
        self.behave(mode="ok")

    def behave(self, **behavior: Any) -> None:
        """Replace the behaviour file."""
        (self.directory / "behavior.json").write_text(json.dumps(behavior), encoding="utf-8")

    @property
    def calls(self) -> list[list[str]]:
        """The argv of every invocation, ``--version`` probes included."""
        path = self.directory / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every recorded invocation (``--version`` probes are not recorded)."""
        path = self.directory / "records.json"
        data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        return data
