"""Registry of the JSON contracts whose JSON Schema ``agentstudy schema NAME`` prints.

A name maps to a pydantic model; other issues add their own entries with ``register_schema``
(for example the minimal-study ledger). The schema is pydantic's validation schema with the
JSON (camelCase) names, except that an optional field is shown as absent-or-value, never
``null``, since the strict contracts reject an explicit ``null`` there, and that the models'
docstrings, its descriptions, lose the issue numbers they cite for developers.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from agentstudy.protocol.adjudication import MinimalAdjudication
from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1, StudyRepositoryConfigV1
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.study_file import StudyFile

SCHEMAS: dict[str, type[BaseModel]] = {}
"""Schema name (the contract's ``type``) → model. Add entries with ``register_schema``."""


def register_schema(name: str, model: type[BaseModel]) -> None:
    """Register ``model`` under ``name``.

    Raises:
        ValueError: when ``name`` is taken by another model.
    """
    if SCHEMAS.get(name, model) is not model:
        raise ValueError(f"schema name {name!r} is already registered")
    SCHEMAS[name] = model


register_schema("ledger", MinimalLedger)
register_schema("minimal-study-ledger", MinimalLedger)
register_schema("minimal-study-adjudication", MinimalAdjudication)
register_schema("study", StudyFile)
for _model in (ControlledStudyRunPlanV1, StudyTaskSuiteV1, StudyProviderCliConfigV1, StudyRepositoryConfigV1,
               ControlledStudyObservationV1, ControlledStudyObservationLedgerV1):
    register_schema(_model.contract_type, _model)


KEEP_NULL = "x-agentstudy-null"
"""A field's schema marker: omitted when unset, but ``null`` is a value the writer records (issue 19)."""


def _drop_optional_null(node: Any) -> None:
    if isinstance(node, dict):
        properties, required = node.get("properties"), set(node.get("required", ()))
        if isinstance(properties, dict):
            for key, prop in properties.items():
                if key in required or not isinstance(prop, dict) or prop.get("default", 0) is not None:
                    continue
                if prop.pop(KEEP_NULL, False):  # written as null when set (``budget.largestOvershootUsd``)
                    prop.pop("default")
                    continue
                branches = [item for item in prop.get("anyOf", []) if item != {"type": "null"}]
                prop.pop("default")
                if len(branches) == 1 and "anyOf" in prop:
                    del prop["anyOf"]
                    prop.update(branches[0])
                elif branches:
                    prop["anyOf"] = branches
        for value in node.values():
            _drop_optional_null(value)
    elif isinstance(node, list):
        for value in node:
            _drop_optional_null(value)


_ISSUE_REFERENCE = re.compile(
    r"\s*\(issues? \d+(?: item \d+)?\)"  # "(issue 18)"
    r"|(?<=\()issues? \d+(?: item \d+)?; |[;,] issues? \d+(?: item \d+)?(?= ?\))")  # "(issue 21; …)", "(…; issue 15)"
_BEFORE_AGENTS = "written before issue 21"
"""Our issue tracker's numbers in a model's docstring: developers' notes, never in a schema a user reads."""


def _scrub_issue_references(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                text = value.replace(_BEFORE_AGENTS, "written before ledgers named their agent")
                node[key] = _ISSUE_REFERENCE.sub("", text)
            else:
                _scrub_issue_references(value)
    elif isinstance(node, list):
        for value in node:
            _scrub_issue_references(value)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, as pydantic writes it) of the contract ``name``.

    Raises:
        KeyError: when no contract is registered under ``name``.
    """
    schema = SCHEMAS[name].model_json_schema(by_alias=True, mode="validation")
    _drop_optional_null(schema)
    _scrub_issue_references(schema)
    return schema
