"""Preparation steps of the MCP server under study: what runs once per checkout before any reservation. Pure.

Issue 32 item 2. Some servers answer their read tools only once a preparation step has built
their own state (an index, a cache): ``arms.treatment.prepare`` lists those steps, each a tool
call of the server (``{"tool": NAME, "arguments": {...}}``) or a command run in the server's
sandbox (``{"command": [PROGRAM, ARG…]}``); strings may use the placeholders of
``protocol.mcp_spec`` (``{root}``, ``{cwd}``…). The preflight runs them in the server's own
sandbox with a fresh private HOME and TMPDIR, keeps what they wrote there as the checkout's
prepared state, and gives every later server of that checkout (the probe, each treatment
attempt) a fresh copy of it; the repository and the snapshot stay read-only. This module holds
the step's shape, its outcome as the ledger records it, and the report's one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["MAX_STEPS", "PrepareOutcome", "PrepareStep", "prepare_line", "prepare_outcomes", "step_label",
           "steps_record"]

MAX_STEPS = 20
"""The most preparation steps a study may declare."""


class PrepareStep(BaseModel):
    """One preparation step: exactly one of ``tool`` (a tool of the server, called with ``arguments``, a JSON
    object) or ``command`` (a program and its arguments, run in the server's sandbox with its environment);
    ``scope`` ``"server"`` (tool steps only) also replays the call in every server the study starts
    (``io.warm_up``).

    Placeholders in strings are checked by the caller (``protocol.mcp_spec.unknown_placeholders``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tool: str | None = Field(default=None, min_length=1, description="A tool of the server under study.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments (JSON object).")
    command: list[str] | None = Field(default=None, min_length=1,
                                      description="A program and its arguments, run in the server's sandbox.")
    scope: Literal["checkout", "server"] = Field(
        default="checkout",
        description="checkout: run once per checkout, its written state copied into every later server; server: "
                    "also replayed in every server the study starts, before the agent's first call (a tool step of "
                    "a server that keeps what it built in memory only).")

    @model_validator(mode="after")
    def _one_kind(self) -> PrepareStep:
        if (self.tool is None) == (self.command is None):
            raise ValueError("a preparation step names exactly one of \"tool\" or \"command\"")
        if self.command is not None and self.scope == "server":
            raise ValueError("only a tool step can have \"scope\": \"server\"")
        if self.command is not None and self.arguments:
            raise ValueError("a command step takes no \"arguments\" (put them in \"command\")")
        if self.command is not None and any(not part or "\0" in part for part in self.command):
            raise ValueError("a command step's words must be non-empty and contain no NUL")
        return self

    def strings(self) -> list[str]:
        """Every string the step holds (its tool name, argument keys and values, command words)."""
        found: list[str] = [*(self.command or []), *([self.tool] if self.tool else [])]
        stack: list[Any] = [self.arguments]
        while stack:
            value = stack.pop()
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, dict):
                stack.extend([*value.keys(), *value.values()])
        return found


def step_label(step: PrepareStep) -> str:
    """How the terminal, the ledger and the report name a step: the tool's name, or ``command PROGRAM``."""
    if step.tool is not None:
        return step.tool
    assert step.command is not None
    return f"command {step.command[0].rsplit('/', 1)[-1]}"


DEFAULT_MAX_STATE_FILES = 10_000
"""Most files a checkout's prepared state may hold unless the study file says otherwise (issue 40)."""
DEFAULT_MAX_STATE_BYTES = 1 << 30
"""Most bytes (apparent sizes: a sparse file counts whole) a prepared state may hold by default: 1 GiB."""


class PreparedStateCap(BaseModel):
    """A study file's ``arms.treatment.prepareLimits``: ``maxFiles`` and ``maxBytes`` (apparent
    sizes, bytes) the prepared state of one checkout may hold; over either, the run is refused before any
    reservation. Defaults: :data:`DEFAULT_MAX_STATE_FILES` files, :data:`DEFAULT_MAX_STATE_BYTES` bytes."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True, frozen=True)

    max_files: int = Field(default=DEFAULT_MAX_STATE_FILES, alias="maxFiles", ge=1, le=10_000_000)
    max_bytes: int = Field(default=DEFAULT_MAX_STATE_BYTES, alias="maxBytes", ge=1, le=1 << 40)

    def over(self, files: int, size: int) -> str | None:
        """Why ``files`` files of ``size`` bytes break the cap (one clause naming it), else ``None``."""
        if files > self.max_files:
            return f"holds more than {self.max_files} files (prepareLimits.maxFiles)"
        if size > self.max_bytes:
            return f"holds more than {self.max_bytes} bytes (prepareLimits.maxBytes; apparent sizes)"
        return None


class PrepareOutcome(BaseModel):
    """One checkout's preparation as the ledger's ``mcpServer.prepared`` records it (camelCase JSON).

    Attributes:
        repository: the checkout's repository name.
        steps: each step's label (:func:`step_label`) and ``ok`` (a refused run records none: it has no ledger).
        state_sha256: SHA-256 of the prepared state (every file's relative path and bytes, in path order).
        state_files: how many files the prepared state holds; ``state_bytes`` their bytes.
        duration_ms: wall time of the steps (ms).
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    repository: str
    steps: list[dict[str, Any]]
    state_sha256: str = Field(alias="stateSha256")
    state_files: int = Field(alias="stateFiles")
    state_bytes: int = Field(alias="stateBytes")
    duration_ms: int = Field(alias="durationMs")


def prepare_outcomes(outcomes: Mapping[str, PrepareOutcome]) -> list[dict[str, Any]] | None:
    """The ledger's ``mcpServer.prepared`` (one object per checkout, by repository name), ``None`` when no
    step was declared (the key is then absent, so ledgers without preparation keep their hash)."""
    if not outcomes:
        return None
    return [outcomes[name].model_dump(by_alias=True) for name in sorted(outcomes)]


def prepare_line(prepared: Any) -> str | None:
    """The report's one line about the preparation (a ledger's ``mcpServer.prepared``, read tolerantly), or
    ``None`` when the ledger records none. E.g. ``build_deep_index ran once per checkout before any reservation
    (1 checkout, all ok); prepared state: demo 3 files sha256 1f2e3d4c5b6a``."""
    if not isinstance(prepared, list) or not prepared:
        return None
    entries = [p for p in prepared if isinstance(p, dict)]
    labels: list[str] = []
    ok = True
    for entry in entries:
        listed = entry.get("steps")
        for step in listed if isinstance(listed, list) else []:
            if isinstance(step, dict):
                ok = ok and step.get("ok") is True
                label = str(step.get("step", "?"))
                if label not in labels:
                    labels.append(label)
    states = "; ".join(f"{e.get('repository', '?')} {e.get('stateFiles', '?')} files sha256 "
                       f"{str(e.get('stateSha256', '?'))[:12]}" for e in entries)
    checkouts = "1 checkout" if len(entries) == 1 else f"{len(entries)} checkouts"
    return (f"{', '.join(labels) or 'no step'} ran once per checkout before any reservation ({checkouts}, "
            f"{'all ok' if ok else 'NOT all ok'}); prepared state: {states}")


def steps_record(steps: Sequence[PrepareStep], ok: Sequence[bool]) -> list[dict[str, Any]]:
    """The ``steps`` of a :class:`PrepareOutcome`: ``[{"step": label, "ok": bool}…]`` in order."""
    return [{"step": step_label(step), "ok": passed} for step, passed in zip(steps, ok, strict=True)]
