"""Arms identical except the server: every way the two arms differed besides it (issue 28 item 2). Pure.

A paired comparison answers "does the server help?" only when the arms differ in the server alone.
Each observation records the model that answered (from the stream), the agent's version, and the
hashes of the prompt bytes and of the built-in tool set (``protocol.treatment``); this module
compares them across arms and says, one sentence each, what differed: the answering models, an
agent's version, a task's prompt, an agent's built-in tools. The report's first screen (every
format) and ``agentstudy ledger`` show the same sentences; arms are named by their labels
(``protocol.arm_names``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.arm_names import arm_label
from agentstudy.protocol.study_agents import observation_agent
from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.treatment import TreatmentRecord, read_treatment

SHOWN_TASKS = 5
"""How many tasks a prompt-difference sentence names."""


@dataclass(frozen=True)
class ArmFacts:
    """What one observation says about its arm's setup besides the server.

    ``models``: the models that answered (from the stream); ``agent_version``: the agent's version
    (:func:`observed_agent_version`); ``prompt_sha256`` / ``builtin_tools_sha256``: the treatment record's
    hashes (``None`` when not recorded).
    """

    scenario: str
    task_id: str
    agent: str
    models: tuple[str, ...]
    agent_version: str | None
    prompt_sha256: str | None
    builtin_tools_sha256: str | None


def observed_agent_version(observation: Mapping[str, Any]) -> str | None:
    """The agent version an observation records: its treatment record's ``agentVersion`` (the version the agent
    reported while it ran, or the http transport's own), else the observation's ``cliVersion`` (the probed binary);
    ``None`` when neither is a string."""
    record = observation.get("treatment")
    version = record.get("agentVersion") if isinstance(record, Mapping) else None
    if isinstance(version, str) and version:
        return version
    probed = observation.get("cliVersion")
    return probed if isinstance(probed, str) and probed else None


def arm_facts(scenario: str, task_id: str, agent: str, record: TreatmentRecord | None,
              agent_version: str | None) -> ArmFacts:
    """:class:`ArmFacts` from an observation's parts (a missing record gives no models and no hashes)."""
    return ArmFacts(scenario, task_id, agent, tuple(record.answering_models) if record else (), agent_version,
                    record.prompt_sha256 if record else None, record.builtin_tools_sha256 if record else None)


def observation_facts(observation: Mapping[str, Any]) -> ArmFacts:
    """:class:`ArmFacts` of a ledger observation (read tolerantly: a malformed record counts as absent)."""
    return arm_facts(str(observation.get("scenario")), str(observation.get("taskId")),
                     observation_agent(dict(observation)), read_treatment(observation.get("treatment")),
                     observed_agent_version(observation))


def _per_arm(facts: Sequence[ArmFacts], values: Callable[[ArmFacts], Sequence[str]]) -> tuple[list[str], list[str]]:
    control = [v for f in facts if f.scenario == REPOSITORY_ONLY for v in values(f)]
    treatment = [v for f in facts if f.scenario == DOC_BRIDGE_MCP for v in values(f)]
    return list(dict.fromkeys(control)), list(dict.fromkeys(treatment))


def _arms_text(control: list[str], treatment: list[str], name: Callable[[str], str]) -> str:
    return f"{name(REPOSITORY_ONLY)}: {', '.join(control)}; {name(DOC_BRIDGE_MCP)}: {', '.join(treatment)}"


def arm_differences(facts: Sequence[ArmFacts], name: Callable[[str], str] = arm_label) -> tuple[str, ...]:
    """One sentence per way the arms differed besides the server, ``()`` when none did.

    Args:
        facts: every observation's :class:`ArmFacts` (both arms; other scenarios are ignored).
        name: scenario → the arm's label (``Study.arm_name``; the default labels without one).

    Compared: the answering models (all agents together), each agent's version (control's set against
    treatment's), each task's prompt hash (any two differing), each agent's built-in tool set hash (any two
    differing). A value not recorded is not compared.
    """
    found: list[str] = []
    control, treatment = _per_arm(facts, lambda f: f.models)
    if control and treatment and set(control) != set(treatment):
        found.append(f"The arms were answered by different models ({_arms_text(control, treatment, name)}), so a "
                     "difference may come from the model, not the server.")
    agents = list(dict.fromkeys(f.agent for f in facts))
    for agent in agents:
        mine = [f for f in facts if f.agent == agent]
        control, treatment = _per_arm(mine, lambda f: [f.agent_version] if f.agent_version else [])
        if control and treatment and set(control) != set(treatment):
            whose = f" of {agent}" if len(agents) > 1 else ""
            found.append(f"The arms ran different agent versions{whose} ({_arms_text(control, treatment, name)}), "
                         "so a difference may come from the agent, not the server.")
    prompts: dict[str, set[str]] = {}  # one pass: linear in observations on a large ledger (issue 29)
    for f in facts:
        prompts.setdefault(f.task_id, set()).update([f.prompt_sha256] if f.prompt_sha256 else [])
    tasks = [t for t, hashes in prompts.items() if len(hashes) > 1]
    if tasks:
        found.append(f"The arms were given different prompts in {len(tasks)} tasks "
                     f"({', '.join(tasks[:SHOWN_TASKS])}).")
    for agent in agents:
        sets = {f.builtin_tools_sha256 for f in facts if f.agent == agent and f.builtin_tools_sha256}
        if len(sets) > 1:
            whose = f"The built-in tools of {agent}" if len(agents) > 1 else "The agent's built-in tools"
            found.append(f"{whose} differed between attempts ({len(sets)} different tool sets besides the "
                         "server's).")
    return tuple(found)
