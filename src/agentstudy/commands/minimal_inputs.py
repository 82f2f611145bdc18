"""The input checks of ``agentstudy minimal`` shared by ``--dry-run`` and the run: money, model, binary.

A dry run and a run call the same functions, so a dry run that passes means the run is not
refused for these inputs. Each check exits 2 with one line before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.commands.common import attempt_limit, fail, positive_usd

if TYPE_CHECKING:
    from agentstudy.pricing.http import UpperPrices
    from agentstudy.pricing.strict_cap import ReservationRule
    from agentstudy.protocol.manifest import LoadedManifest
    from agentstudy.protocol.schedule import Mode

CAP_NAME = "the cumulative cap (STUDY_BUDGET_USD or --budget-usd)"
LIMIT_NAME = "--attempt-budget-usd"
INPUT_PRICE_NAME = "the input price (--input-usd-per-million or STUDY_INPUT_USD_PER_MILLION)"
OUTPUT_PRICE_NAME = "the output price (--output-usd-per-million or STUDY_OUTPUT_USD_PER_MILLION)"


@dataclass(frozen=True)
class MoneyFlags:
    """The run's money flags, parsed, in USD (``None``: not given to a dry run, or not used by the transport).

    Attributes:
        cap: the cumulative cap.
        limit: the per-attempt limit (cli; http with ``--concurrency`` above 1, issue 19).
        prices: the upper prices per million tokens (http).
    """

    cap: Decimal | None
    limit: Decimal | None
    prices: UpperPrices | None


def require_model(model: str | None) -> str:
    """The model id, stripped; exit 2 when missing, blank or holding CR, LF or NUL."""
    if not model or not model.strip() or any(c in model for c in "\r\n\0"):
        fail("a model is required (STUDY_MODEL or --model)")
    return model.strip()


def claude_binary(claude_bin: str | None) -> Path:
    """The Claude Code binary as an absolute executable path (``find_claude_binary``, nothing started); else exit 2."""
    from agentstudy.io.claude_cli import ClaudeBinaryError, find_claude_binary
    try:
        return find_claude_binary(claude_bin, os.environ)
    except ClaudeBinaryError as error:
        fail(str(error))


def first_call_usd(loaded: LoadedManifest, mode: Mode, model: str, prices: UpperPrices) -> Decimal:
    """The reservation of the first request of the schedule's first attempt, USD.

    Its body is that attempt's prompt with the repository tools every attempt is offered: the
    exact reservation in ``repository-only``, a lower bound in ``doc-bridge-mcp`` (whose MCP tool
    definitions are only known once the server runs). Pure.
    """
    from agentstudy.pricing.http import DEFAULT_MAX_TOKENS, call_reservation, encode_request_body
    from agentstudy.protocol.arm_order import order_rule
    from agentstudy.protocol.prompt import study_prompt
    from agentstudy.protocol.schedule import build_schedule
    from agentstudy.transports.http import request_body
    from agentstudy.transports.repo_tools import DEFINITIONS as REPOSITORY_TOOL_DEFINITIONS
    first = build_schedule(loaded.manifest, mode, rule=order_rule(loaded.manifest, loaded.protocol_hash))[0]
    prompt = study_prompt(loaded.manifest.task(first.task_id).question)
    body = request_body(model, [{"role": "user", "content": prompt}], [dict(d) for d in REPOSITORY_TOOL_DEFINITIONS])
    return call_reservation(encode_request_body(body), DEFAULT_MAX_TOKENS, prices).usd


def money_flags(
    loaded: LoadedManifest,
    mode: Mode,
    transport: str,
    model: str | None,
    budget_usd: str | None,
    attempt_budget_usd: str,
    input_price: str | None,
    output_price: str | None,
    *,
    required: bool,
    rehearsal: bool = False,
    concurrency: int = 1,
) -> MoneyFlags:
    """Parse the money flags the transport uses and check them together; exit 2 on the first problem.

    Every amount goes through ``pricing.money_input.parse_usd_input``. cli: the per-attempt
    limit reserves at least one micro-USD and is at most the cap. http: both upper prices, and
    the cap holds :func:`first_call_usd`. ``required=False`` (a dry run) checks what is given.
    ``rehearsal``: a price not given is the nominal one of ``pricing.http.rehearsal_prices``
    (no money moves; issue 18, item 6). http with ``concurrency`` above 1 (issue 19) also parses the
    per-attempt limit, which must be at most the cap and hold :func:`first_call_usd` (each attempt's calls
    reserve within it).
    """
    from agentstudy.pricing.http import UpperPrices, rehearsal_prices
    from agentstudy.pricing.money_input import MoneyInputError, check_cap_fits_call
    cap = positive_usd(CAP_NAME, budget_usd) if required or budget_usd is not None else None
    if transport == "cli":
        return MoneyFlags(cap, attempt_limit(LIMIT_NAME, attempt_budget_usd, cap, CAP_NAME), None)
    if rehearsal:
        nominal = rehearsal_prices(model or "")
        input_price = str(nominal.input_usd_per_million) if input_price is None else input_price
        output_price = str(nominal.output_usd_per_million) if output_price is None else output_price
    if not (required or input_price is not None or output_price is not None):
        return MoneyFlags(cap, None, None)
    prices = UpperPrices(positive_usd(INPUT_PRICE_NAME, input_price), positive_usd(OUTPUT_PRICE_NAME, output_price))
    first = first_call_usd(loaded, mode, model or "", prices)
    if cap is not None:
        try:
            check_cap_fits_call(cap, first, cap_what=CAP_NAME)
        except MoneyInputError as error:
            fail(str(error))
    if concurrency <= 1:
        return MoneyFlags(cap, None, prices)
    limit = attempt_limit(LIMIT_NAME, attempt_budget_usd, cap, CAP_NAME)
    try:
        check_cap_fits_call(limit, first, cap_what=LIMIT_NAME)
    except MoneyInputError as error:
        fail(str(error))
    return MoneyFlags(cap, limit, prices)


def reservation_rule(transport: str, model: str | None, money: MoneyFlags, *, strict: bool) -> ReservationRule | None:
    """The run's reservation rule (issue 19, ``pricing.strict_cap``); exit 2 with one line when it cannot hold.

    http: ``per-call-ceiling`` whatever ``strict`` says (the loop cannot overshoot). cli: ``limit``, or
    with ``strict`` ``limit-plus-worst-turn`` for ``model``: refused for a model without prices or
    limits in the table, or when one reservation (the limit plus one worst-case turn, USD) does not fit
    under a given cap. ``None`` for a dry run of cli without a limit (never: it has a default).
    """
    from agentstudy.pricing.strict_cap import HTTP_RULE, NoWorstTurn, ReservationRule
    if transport != "cli":
        return HTTP_RULE
    if money.limit is None:
        return None
    if strict and model is None:
        fail("--strict-cap needs --model (the worst-case turn is priced from the model's row of the price table)")
    try:
        rule = ReservationRule.for_cli(money.limit, model or "", strict=strict)
    except NoWorstTurn as error:
        fail(str(error))
    if strict and money.cap is not None and rule.admission_usd > money.cap:
        fail(f"{CAP_NAME} {money.cap} USD is below one --strict-cap reservation of {rule.reservation_usd} USD "
             f"(the per-attempt limit plus one worst-case turn of {model})")
    return rule


def rule_json(rule: ReservationRule | None) -> dict[str, object] | None:
    """The dry run's ``budget`` entry: ``reservationRule`` and, for cli, ``reservationPerAttemptUsd`` and
    ``worstTurnUsd`` (USD; ``None`` without a rule)."""
    from agentstudy.pricing.usd_json import usd_number
    if rule is None:
        return None
    entry: dict[str, object] = {"reservationRule": rule.name}
    if rule.limit_usd is not None:
        entry["reservationPerAttemptUsd"] = usd_number(rule.reservation_usd)
        entry["maxBudgetUsdPassedToClaude"] = usd_number(rule.base_usd)
    if rule.worst_turn_usd is not None:
        entry["worstTurnUsd"] = usd_number(rule.worst_turn_usd)
    return entry
