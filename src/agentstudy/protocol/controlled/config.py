"""Operational configs of a controlled run: ``StudyProviderCliConfigV1`` and the repository config.

Both are content-addressed (digest 5.2). The provider config (digest section 5.7, config part)
maps each (model, scenario) to the command that runs it; the repository config (digest 5.8)
maps each repository of the population to a local root. Neither is checked against the
filesystem here: whether a command is executable or a root a directory is the runner's
preflight (the next issue).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from agentstudy.pricing.provider_cost import ProviderRates, provider_cost_usd
from agentstudy.protocol.controlled.formats import (
    ContentHashAlgo,
    ContractModel,
    Hash,
    Identifier,
    NonNegativeNumber,
    Reference,
    ScenarioId,
    SchemaVersion,
    integral,
    js_length,
    unique,
)

MAX_INPUT_BYTES = 8_000_000
MAX_OUTPUT_BYTES = 256_000
MAX_REPOSITORIES = 32
_CONTROL = re.compile("[\x00\r\n]")


def _command_text(low: int, high: int) -> Any:
    def check(value: str) -> str:
        if not low <= js_length(value) <= high:
            raise ValueError(f"must be {low}–{high} characters long")
        if _CONTROL.search(value):
            raise ValueError("must not contain NUL, CR or LF")
        return value

    return AfterValidator(check)


Command = Annotated[str, Field(min_length=1, max_length=512), _command_text(1, 512)]
Argument = Annotated[str, Field(max_length=2048), _command_text(0, 2048)]
EnvironmentName = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]{0,127}$")]


class ProviderPricing(ContractModel):
    """List prices of a provider in USD per million tokens (finite, ≥ 0)."""

    currency: Literal["USD"]
    input_per_million_usd: NonNegativeNumber
    cached_input_per_million_usd: NonNegativeNumber
    output_per_million_usd: NonNegativeNumber

    def cost_usd(self, input_tokens: int | None, output_tokens: int | None,
                 cached_input_tokens: float | int | None = None) -> Decimal | None:
        """``agentCostUsd`` for these token counts (see ``agentstudy.pricing.provider_cost``)."""
        rates = ProviderRates(Decimal(repr(self.input_per_million_usd)),
                              Decimal(repr(self.cached_input_per_million_usd)),
                              Decimal(repr(self.output_per_million_usd)))
        cached = None if cached_input_tokens is None else Decimal(repr(cached_input_tokens))
        return provider_cost_usd(rates, input_tokens, output_tokens, cached)


class ProviderCli(ContractModel):
    """One provider mapping: ``modelId`` and the 1–3 ``scenarioIds`` it serves, then its command.

    Command fields: ``command`` (1–512 chars) is launched without a shell; ``args`` (≤ 64, each
    ≤ 2048 chars) are passed unchanged; ``envAllowlist`` ≤ 64 upper-case names (credentials must
    be named); ``providerNetwork`` is an audit declaration; ``maxInputBytes`` 1–8 000 000 and
    ``maxOutputBytes`` 1–256 000 bytes; optional ``pricing``. No NUL, CR or LF in the command or
    its arguments.
    """

    model_id: Identifier
    scenario_ids: Annotated[list[ScenarioId], Field(min_length=1, max_length=3)]
    command: Command
    args: Annotated[list[Argument], Field(max_length=64)]
    env_allowlist: Annotated[list[EnvironmentName], Field(max_length=64)]
    provider_network: bool
    max_input_bytes: Annotated[int, Field(ge=1, le=MAX_INPUT_BYTES), BeforeValidator(integral)]
    max_output_bytes: Annotated[int, Field(ge=1, le=MAX_OUTPUT_BYTES), BeforeValidator(integral)]
    pricing: ProviderPricing | None = None


class AdjudicatorCli(ContractModel):
    """The independent adjudicator: ``id`` and ``modelId``, then its command (as ``ProviderCli``)."""

    id: Identifier
    model_id: Identifier
    command: Command
    args: Annotated[list[Argument], Field(max_length=64)]
    env_allowlist: Annotated[list[EnvironmentName], Field(max_length=64)]
    provider_network: bool
    max_input_bytes: Annotated[int, Field(ge=1, le=MAX_INPUT_BYTES), BeforeValidator(integral)]
    max_output_bytes: Annotated[int, Field(ge=1, le=MAX_OUTPUT_BYTES), BeforeValidator(integral)]
    pricing: ProviderPricing | None = None


_COMMAND_DEFAULTS = (("args", list), ("envAllowlist", list))


def _with_defaults(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    filled = dict(entry)
    for key, factory in _COMMAND_DEFAULTS:
        filled.setdefault(key, factory())
    return filled


class StudyProviderCliConfigV1(ContractModel):
    """The provider CLI config (``type: study-provider-cli-config``, digest 5.7).

    ``providers`` has 1–16 mappings; ``adjudicator`` is optional. A (modelId, scenarioId)
    pair may be served by one mapping only (the original checked this on parse only; here it
    is a rule of the model).

    Hashing: the original fills ``args: []`` and ``envAllowlist: []`` when absent *before*
    hashing, on creation and on verification alike; ``normalized_document`` does the same,
    so a config written without them verifies with the original's hash.
    """

    contract_type: ClassVar[str] = "study-provider-cli-config"

    type: Literal["study-provider-cli-config"]
    schema_version: SchemaVersion
    config_version: Reference
    providers: Annotated[list[ProviderCli], Field(min_length=1, max_length=16)]
    adjudicator: AdjudicatorCli | None = None
    content_hash: Hash
    content_hash_algo: ContentHashAlgo

    @classmethod
    def normalized_document(cls, document: dict[str, Any]) -> dict[str, Any]:
        """The document with the command defaults (``args``, ``envAllowlist``: ``[]``) filled in."""
        normalized = dict(document)
        if isinstance(normalized.get("providers"), list):
            normalized["providers"] = [_with_defaults(entry) for entry in normalized["providers"]]
        if "adjudicator" in normalized:
            normalized["adjudicator"] = _with_defaults(normalized["adjudicator"])
        return normalized

    @model_validator(mode="after")
    def _one_mapping_per_pair(self) -> StudyProviderCliConfigV1:
        seen: set[tuple[str, str]] = set()
        for index, provider in enumerate(self.providers):
            for scenario_id in provider.scenario_ids:
                pair = (provider.model_id, scenario_id)
                if pair in seen:
                    raise ValueError(f"providers[{index}].scenarioIds: duplicate mapping for model "
                                     f"{provider.model_id!r} and scenario {scenario_id!r}")
                seen.add(pair)
        return self

    def provider_for(self, model_id: str, scenario_id: str) -> ProviderCli:
        """The mapping serving (model, scenario). Raises ``KeyError`` when none does."""
        for provider in self.providers:
            if provider.model_id == model_id and scenario_id in provider.scenario_ids:
                return provider
        raise KeyError((model_id, scenario_id))


class RepositoryRoot(ContractModel):
    """A repository of the population (``id``) and its local checkout ``root`` (1–4096 chars)."""

    id: Identifier
    root: Annotated[str, Field(min_length=1, max_length=4096), _command_text(1, 4096)]


class StudyRepositoryConfigV1(ContractModel):
    """The repository config (``type: controlled-study-repository-config``, digest 5.8).

    Repository ids are unique. Count (digest section 7 item 27, ARCHITECTURE decision 11): one
    root per declared population id, 1 to 32 of them — not the original's fixed six; that
    every population id of the suite has a root is checked when a run starts. Roots must not
    hold NUL, CR or LF (ours; the original checks only the length).
    """

    contract_type: ClassVar[str] = "controlled-study-repository-config"

    type: Literal["controlled-study-repository-config"]
    schema_version: SchemaVersion
    config_version: Reference
    repositories: Annotated[list[RepositoryRoot], Field(min_length=1, max_length=MAX_REPOSITORIES)]
    content_hash: Hash
    content_hash_algo: ContentHashAlgo

    @model_validator(mode="after")
    def _unique_ids(self) -> StudyRepositoryConfigV1:
        duplicate = unique([repository.id for repository in self.repositories])
        if duplicate is not None:
            raise ValueError(f"repositories: duplicate repository id {duplicate!r}")
        return self

    def root_for(self, repository_id: str) -> str:
        """The configured root of ``repository_id``. Raises ``KeyError`` when there is none."""
        for repository in self.repositories:
            if repository.id == repository_id:
                return repository.root
        raise KeyError(repository_id)
