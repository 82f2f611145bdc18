"""One ATIF v1.8 trajectory per attempt, from its steps (issue 43 item 2; shared/reference/atif-v1.8.md).

The attempt's steps (``stream.steps``) become ATIF agent steps: the assistant's text and the tool calls it
made before the next result form one step (``message``, ``tool_calls`` with their ids and arguments, the
turn's token ``metrics``); each result joins the ``observation`` of the step that holds its call. An attempt
whose transcript holds no step (it failed before the agent spoke, or no transcript was kept) gets one
``system`` step saying so. ``final_metrics`` are the ledger's totals for the attempt; the study's facts
(study, run, task, arm, repetition, agent, model, status, failureKind, chargedUsd, correctness) are under
``extra.agentstudy``. Builds plain JSON values only: validity is checked in the tests against the
format's reference models.
"""

from __future__ import annotations

from typing import Any

from agentstudy.report.observed import ObservedAttempt, ObservedStudy
from agentstudy.report.tidy import tidy_row
from agentstudy.stream.steps import Step, StepUsage

SCHEMA_VERSION = "ATIF-v1.8"
EXTENSION_KEY = "agentstudy"
STUDY_FACTS = ("study", "run", "task", "repository", "armId", "armLabel", "scenario", "repetition", "agent",
               "agentVersion", "model", "transport", "status", "statusReason", "failureKind", "chargedUsd",
               "correctness", "position")


def _metrics(usages: list[StepUsage]) -> dict[str, int] | None:
    if not usages:
        return None
    return {"prompt_tokens": sum(u.input_tokens for u in usages),
            "completion_tokens": sum(u.output_tokens for u in usages),
            "cached_tokens": sum(u.cached_tokens for u in usages)}


def atif_steps(steps: tuple[Step, ...], model: str | None) -> list[dict[str, Any]]:
    """ATIF ``steps`` (1-based ``step_id``) from an attempt's steps; ``[]`` when there are none."""
    built: list[dict[str, Any]] = []
    usages: list[list[StepUsage]] = []
    holder: dict[str, int] = {}  # call id -> index of the ATIF step holding the call
    open_step: dict[str, Any] | None = None
    for step in steps:
        if step.kind == "result":
            where = holder.get(step.call_id or "")
            if where is None:  # a result of no call we saw: a step of its own
                built.append({"source": "system", "message": step.text})
                usages.append([])
                open_step = None
                continue
            results = built[where].setdefault("observation", {"results": []})["results"]
            results.append({"source_call_id": step.call_id, "content": step.text,
                            **({"extra": {"isError": True}} if step.error else {})})
            open_step = None
            continue
        if open_step is None:
            open_step = {"source": "agent", "message": "", **({"model_name": model} if model else {})}
            built.append(open_step)
            usages.append([])
        if step.usage is not None:
            usages[-1].append(step.usage)
        if step.kind == "text":
            open_step["message"] = "\n\n".join(p for p in (open_step["message"], step.text) if p)
        else:
            call_id = step.call_id or f"call-{len(holder) + 1}"
            open_step.setdefault("tool_calls", []).append({
                "tool_call_id": call_id, "function_name": step.tool or "",
                "arguments": dict(step.arguments),
                **({"extra": {"server": step.server}} if step.server else {})})
            holder[call_id] = len(built) - 1
    for index, step_dict in enumerate(built):
        step_dict["step_id"] = index + 1
        metrics = _metrics(usages[index])
        if metrics is not None and step_dict["source"] == "agent":
            step_dict["metrics"] = metrics
    return built


def trajectory(study: ObservedStudy, item: ObservedAttempt, steps: tuple[Step, ...] | None) -> dict[str, Any]:
    """The attempt's ATIF v1.8 trajectory as a JSON object (``steps`` ``None``: no transcript was kept)."""
    facts = tidy_row(study, item, {}, with_answers=False)
    attempt = item.attempt
    model = facts["model"]
    body = atif_steps(steps or (), model)
    if not body:
        why = "no transcript was kept" if steps is None else "the transcript holds no step"
        body = [{"step_id": 1, "source": "system", "message": f"{why}; the attempt ended {attempt.status}"}]
    final: dict[str, Any] = {"total_steps": len(body)}
    totals = (("total_prompt_tokens", attempt.input_tokens), ("total_completion_tokens", attempt.output_tokens),
              ("total_cached_tokens", attempt.cache_read_tokens), ("total_cost_usd", facts["chargedUsd"]))
    for key, value in totals:
        if value is not None:
            final[key] = value
    agent: dict[str, Any] = {"name": attempt.agent, "version": attempt.agent_version or "unknown"}
    if model:
        agent["model_name"] = model
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": f"{item.run.run_id}--{attempt.task_id}--{attempt.scenario}--r{attempt.repetition}"
                      f"--{attempt.agent}",
        "agent": agent,
        "steps": body,
        "final_metrics": final,
        "extra": {EXTENSION_KEY: {key: facts[key] for key in STUDY_FACTS}},
    }


def tool_call_count(document: dict[str, Any]) -> int:
    """How many tool calls a trajectory holds (over all its steps)."""
    return sum(len(step.get("tool_calls") or []) for step in document["steps"])


__all__ = ["EXTENSION_KEY", "SCHEMA_VERSION", "atif_steps", "tool_call_count", "trajectory"]
