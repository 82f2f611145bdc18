"""The rehearsal adjudicator policy: key-term judging, a Read of the first citation, then strict JSON."""

from __future__ import annotations

from typing import Any

import pytest

from agentstudy.adjudication.prompt import adjudicator_prompt, parse_adjudication
from agentstudy.rehearsal.adjudicator_policy import adjudicator_reply, judge, key_terms, parse_adjudication_prompt

PROPOSITIONS = [
    "Deadlines come from time.monotonic(); the cache never reads the wall clock",
    "ttl_seconds=None gives the deadline math.inf",
]
ANSWER = "Deadlines use time.monotonic for the cache clock (src/lantern/cache.py:29)."
TOOLS = [{"name": "Read", "input_schema": {}}, {"name": "Grep", "input_schema": {}}]


def _body(prompt: str, *, tools: list[dict[str, Any]] | None = None, extra: list[dict[str, Any]] | None = None
          ) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}, *(extra or [])],
            "tools": TOOLS if tools is None else tools}


def test_key_terms_are_distinctive_words_and_code_tokens() -> None:
    assert key_terms(PROPOSITIONS[0]) == ["deadlines", "monotonic", "cache", "reads", "clock"]
    assert key_terms("ttl_seconds=None gives the deadline math.inf, SEV1 in 10 minutes") == [
        "ttl_seconds", "gives", "deadline", "sev1", "10", "minutes",
    ]


def test_a_proposition_is_supported_when_half_its_key_terms_appear() -> None:
    verdict = judge(PROPOSITIONS, ANSWER)
    assert [v["verdict"] for v in verdict["verdicts"]] == ["supported", "missing"]
    assert verdict["rubric"] == "partial"
    assert judge(PROPOSITIONS, "nothing relevant")["rubric"] == "incomplete"


def test_the_prompt_is_read_back() -> None:
    prompt = adjudicator_prompt("Which clock?", PROPOSITIONS, ANSWER, "checks")
    assert parse_adjudication_prompt(prompt) == (PROPOSITIONS, ANSWER)
    assert parse_adjudication_prompt("Which clock does lantern use?") is None


def test_first_turn_reads_the_first_citation_then_answers_strict_json() -> None:
    prompt = adjudicator_prompt("Which clock?", PROPOSITIONS, ANSWER, "checks")
    first = adjudicator_reply(_body(prompt))
    assert first.stop_reason == "tool_use"
    call = first.content[-1]
    assert call["name"] == "Read" and call["input"] == {"file_path": "src/lantern/cache.py"}
    follow_up = [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "29\tclock"}]},
    ]
    second = adjudicator_reply(_body(prompt, extra=follow_up))
    assert second.stop_reason == "end_turn"
    judgement = parse_adjudication(second.content[0]["text"], len(PROPOSITIONS))
    assert judgement.rubric == "partial"


def test_without_read_or_citation_it_answers_at_once() -> None:
    prompt = adjudicator_prompt("Which clock?", PROPOSITIONS, "no citation here", "checks")
    assert adjudicator_reply(_body(prompt)).stop_reason == "end_turn"
    cited = adjudicator_prompt("Which clock?", PROPOSITIONS, ANSWER, "checks")
    assert adjudicator_reply(_body(cited, tools=[])).stop_reason == "end_turn"


def test_a_study_prompt_gets_prose_and_a_bad_body_a_400() -> None:
    reply = adjudicator_reply(_body("Which clock does lantern use?"))
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_adjudication(reply.content[0]["text"], 1)
    with pytest.raises(ValueError):
        adjudicator_reply({"model": "m", "messages": []})
