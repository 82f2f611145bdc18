"""The agents of one cli run (issue 21 item 6): which settings an attempt of each agent runs with.

A run has a primary agent (``CliRunRequest.settings``, from ``--agent``) and, for a study file that
lists several agents, the others (``CliRunRequest.other_agents``: each its own binary, expected
version, model and rehearsal server; the MCP server, containment and limits are the run's). Each
schedule entry names its agent; a study that lists none runs the primary agent
(:func:`schedule_for`). Preflight probes every other agent's ``--version`` and reads its
``cli.otherAgents`` record (:func:`check_other_agents`) before anything is reserved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from agentstudy.agents.registry import agent_cli
from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.protocol.manifest import LoadedManifest
from agentstudy.protocol.run_records import AgentRecord
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.preflight import PreflightError, check_cli_version
from agentstudy.transports.cli import CliSettings


@dataclass(frozen=True)
class AgentRun:
    """Another agent of a several-agent run: its ``settings`` (``settings.agent`` is its name) and the
    ``expected_version`` its ``--version`` must report (its pin unless given)."""

    settings: CliSettings
    expected_version: str


@dataclass(frozen=True)
class CheckedAgent:
    """What preflight learnt of an agent: its ``--version`` line and its ledger ``record``."""

    version_line: str
    record: AgentRecord


def lists_agents(loaded: LoadedManifest) -> bool:
    """Whether the study file names its agents (``agents``; issue 21)."""
    return bool(getattr(loaded.manifest, "agents", None))


def schedule_for(
    loaded: LoadedManifest, schedule: tuple[ScheduleEntry, ...], primary: str,
) -> tuple[ScheduleEntry, ...]:
    """``schedule`` with each entry's agent as it will run: the study's own agents when it lists them,
    else every entry the ``primary`` agent's (a study without ``agents`` run with ``--agent codex``)."""
    if lists_agents(loaded):
        return schedule
    return tuple(replace(entry, agent=primary) for entry in schedule)


def settings_for(primary: CliSettings, others: Mapping[str, AgentRun], agent: str) -> CliSettings:
    """The settings an attempt of ``agent`` runs with.

    Raises:
        KeyError: ``agent`` is neither the primary nor one of ``others`` (a programming error).
    """
    return primary if agent == primary.agent else others[agent].settings


def expected_for(primary_expected: str, primary: CliSettings, others: Mapping[str, AgentRun], agent: str) -> str:
    """The version ``agent``'s observations record as expected (``expectedCliVersion``)."""
    return primary_expected if agent == primary.agent else others[agent].expected_version


def check_other_agents(others: Mapping[str, AgentRun], parent_env: Mapping[str, str]) -> dict[str, CheckedAgent]:
    """Probe each other agent's ``--version`` (allowlisted environment, contained like an attempt) and read
    its ledger record (Codex: ``codex features list``), in order.

    Raises:
        PreflightError: a probe failed, a version differs or a record could not be read.
    """
    checked: dict[str, CheckedAgent] = {}
    for name, run in others.items():
        settings = run.settings
        line = check_cli_version(settings.binary, run.expected_version, parent_env, settings.containment, name)
        try:
            record = agent_cli(name).agent_record(settings, line, parent_env)
        except AgentBinaryError as error:
            raise PreflightError(str(error)) from None
        checked[name] = CheckedAgent(line, record)
    return checked
