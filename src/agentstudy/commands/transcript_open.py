"""``agentstudy transcript --ledger LEDGER --task T --arm A --repetition N``: open one kept transcript (issue 28).

The observation is found by task, arm (its scenario, or a study file's arm id or label) and
repetition (and ``--agent`` in a several-agent ledger); its file in ``LEDGER.transcripts/`` is
checked against the ``transcriptSha256`` the ledger records, then written to stdout as it is; the last lines
of the MCP server's kept stderr (``serverStderrFile``, issue 39) follow on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from agentstudy.commands.common import fail


def _arm_scenarios(ledger: dict[str, Any], arm: str) -> set[str]:
    """The scenarios ``arm`` may name: itself, the scenario of the ledger's arm with that id or label, or the
    scenario whose label (as reports show it, ``protocol.arm_names.arm_label``) is ``arm``."""
    from agentstudy.protocol.arm_names import arm_label, ledger_arm_labels, ledger_server_name
    from agentstudy.protocol.study_arms import SCENARIOS
    names = {arm}
    for record in ledger.get("arms") or []:
        if isinstance(record, dict) and arm in (record.get("id"), record.get("label")):
            names.add(str(record.get("scenario")))
    labels, server = ledger_arm_labels(ledger), ledger_server_name(ledger)
    names.update(scenario for scenario in SCENARIOS if arm_label(scenario, labels, server) == arm)
    return names


def find_observation(ledger: dict[str, Any], task: str, arm: str, repetition: int,
                     agent: str | None) -> dict[str, Any]:
    """The one observation of ``task`` / ``arm`` / ``repetition`` (of ``agent`` when given).

    Raises:
        LookupError: none matches, or several do (then ``--agent`` is needed).
    """
    from agentstudy.protocol.study_agents import observation_agent
    scenarios = _arm_scenarios(ledger, arm)
    found = [o for o in ledger.get("observations") or [] if isinstance(o, dict) and o.get("taskId") == task
             and o.get("scenario") in scenarios and o.get("repetition") == repetition
             and (agent is None or observation_agent(o) == agent)]
    if not found:
        raise LookupError(f"no observation of task {task!r}, arm {arm!r}, repetition {repetition}")
    if len(found) > 1:
        raise LookupError("several agents ran that attempt; name one with --agent")
    return found[0]


def show_kept_transcript(ledger_path: Path, task: str | None, arm: str | None, repetition: int | None,
                         agent: str | None) -> NoReturn:
    """Print the kept transcript's bytes and exit 0; exit 2 with one line on any problem."""
    from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
    from agentstudy.io.transcripts import TranscriptError, open_transcript
    if task is None or arm is None or repetition is None:
        fail("--ledger needs --task, --arm and --repetition")
    try:
        raw = ledger_path.read_bytes()
        data = json.loads(read_ledger(ledger_path, raw).data)
    except (OSError, LedgerJournalError, ValueError) as error:
        fail(f"cannot read the ledger {ledger_path}: {error}")
    if not isinstance(data, dict):
        fail(f"{ledger_path} is not a ledger")
    if data.get("transcripts") is False:
        fail("this run kept no transcripts (--no-transcripts)")
    try:
        observation = find_observation(data, task, arm, repetition, agent)
    except LookupError as error:
        fail(str(error))
    name = observation.get("transcriptFile")
    if not isinstance(name, str):
        fail("the observation records no transcript (a ledger written before transcripts were kept)")
    try:
        text = open_transcript(ledger_path, name, observation.get("transcriptSha256"))
    except TranscriptError as error:
        fail(str(error))
    said = _server_stderr_tail(ledger_path, observation)
    sys.stdout.buffer.write(text)
    sys.stdout.flush()
    if said:
        sys.stderr.write(f"the MCP server's stderr ends ({observation['serverStderrFile']}):\n{said}\n")
    sys.exit(0)


SERVER_STDERR_LINES = 5
"""How many of the last lines of the server's kept stderr the command shows (on stderr; the file keeps 64 KiB)."""


def _server_stderr_tail(ledger_path: Path, observation: dict[str, Any]) -> str:
    """The last ``SERVER_STDERR_LINES`` lines of the attempt's kept MCP server stderr (issue 39), checked against
    its ``serverStderrSha256``; ``""`` when none was kept.

    Exits 2 (one line) when the kept file is missing or does not match its hash."""
    from agentstudy.io.transcripts import TranscriptError, open_transcript
    name = observation.get("serverStderrFile")
    if not isinstance(name, str):
        return ""
    try:
        kept = open_transcript(ledger_path, name, observation.get("serverStderrSha256"))
    except TranscriptError as error:
        fail(str(error))
    lines = [line for line in kept.decode("utf-8", "replace").splitlines() if line.strip()]
    return "\n".join(lines[-SERVER_STDERR_LINES:])
