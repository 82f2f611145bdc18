"""``--agent-model NAME=MODEL`` and the other agents of a several-agent study (issue 21 item 6).

A study file that lists agents runs each of them; ``--agent`` (the primary, which ``--model``,
``--agent-version`` and ``--agent-bin`` describe) must be one of them. Every other agent runs at
its pinned version from its own binary lookup; its model is ``--agent-model NAME=MODEL``, or in a
rehearsal the agent's own rehearsal model. Each other agent gets its own local rehearsal server
(:func:`rehearsal_endpoints`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.protocol.manifest import LoadedManifest
    from agentstudy.runners.agent_runs import AgentRun
    from agentstudy.transports.cli import CliSettings

F = TypeVar("F", bound=Callable[..., Any])


def agent_model_option(command: F) -> F:
    """The ``--agent-model NAME=MODEL`` option (repeatable) of ``agentstudy minimal``."""
    return click.option(
        "--agent-model", "agent_models", multiple=True, metavar="NAME=MODEL",
        help="A several-agent study (its `agents`): the model of agent NAME other than --agent "
             "(default in a rehearsal: that agent's rehearsal model).")(command)


def _models(given: tuple[str, ...]) -> dict[str, str]:
    from agentstudy.commands.minimal_inputs import require_model
    models: dict[str, str] = {}
    for item in given:
        name, sep, model = item.partition("=")
        if not sep or not name.strip():
            fail(f"--agent-model {item!r} is not NAME=MODEL")
        if name.strip() in models:
            fail(f"--agent-model names {name.strip()!r} twice")
        models[name.strip()] = require_model(model)
    return models


def other_agent_runs(loaded: LoadedManifest, transport: str, primary: CliSettings, expected_version: str,
                     agent_models: tuple[str, ...], *, rehearsal: bool, strict_cap: bool) -> dict[str, AgentRun]:
    """The study's agents other than ``primary.agent`` as :class:`AgentRun` (empty for a one-agent study);
    exit 2 with one line when the study lists agents and ``--agent`` is not among them, with the http
    transport, with ``--strict-cap``, for an ``--agent-model`` of an agent the study does not run, or for
    a real run's agent without a model. ``expected_version`` is the primary's (unused here)."""
    from agentstudy.agents.registry import agent_cli
    from agentstudy.commands.agent_options import agent_binary, require_agent_price
    from agentstudy.runners.agent_runs import AgentRun
    del expected_version
    models = _models(agent_models)
    listed = loaded.agents if getattr(loaded.manifest, "agents", None) else ()
    if not listed:
        if models:
            fail("--agent-model is for a study file that lists several agents")
        return {}
    if transport != "cli":
        fail("a study that lists agents needs --transport cli (the http loop is the Messages API's)")
    if primary.agent not in listed:
        fail(f"--agent {primary.agent} is not one of the study's agents ({', '.join(listed)})")
    for name in models:
        if name not in listed or name == primary.agent:
            fail(f"--agent-model {name}: not another agent of the study ({', '.join(listed)}; "
                 f"--model is {primary.agent}'s)")
    others = [name for name in listed if name != primary.agent]
    if others and strict_cap:
        fail("--strict-cap prices a worst-case turn from the Claude table; a several-agent study cannot use it")
    runs: dict[str, AgentRun] = {}
    for name in others:
        agent = agent_cli(name)
        model = models.get(name) or (agent.rehearsal_model if rehearsal else None)
        if model is None:
            fail(f"agent {name} needs --agent-model {name}=MODEL (a real run)")
        require_agent_price(agent, model, f"--agent-model {name}={model}")
        login = None if rehearsal or primary.gateway_base_url else agent.login_file(os.environ)
        settings = replace(primary, binary=agent_binary(agent, None), model=model, agent=name, login_file=login,
                           rehearsal_base_url=None)
        runs[name] = AgentRun(settings, agent.pinned_version)
    return runs


@contextmanager
def rehearsal_endpoints(runs: Mapping[str, AgentRun], latency_ms: int,
                        faults: str | None = None) -> Iterator[dict[str, AgentRun]]:
    """``runs`` with each agent's own scripted rehearsal server started (127.0.0.1, each with its own copy of the
    fault SPEC ``faults``) and its URL set."""
    from agentstudy.agents.registry import agent_cli
    with ExitStack() as stack:
        ready = {name: replace(run, settings=replace(run.settings, rehearsal_base_url=stack.enter_context(
            agent_cli(name).rehearsal_endpoint(latency_ms, faults)))) for name, run in runs.items()}
        yield ready
