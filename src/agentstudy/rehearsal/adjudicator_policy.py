"""The scripted adjudicator behind the rehearsal server (pure): it judges by the propositions' key terms.

Pass :func:`adjudicator_reply` as ``RehearsalServer(policy=...)`` to rehearse an adjudication
at zero spend with the real Claude Code binary. From the request body alone it reads the
adjudication prompt (question, numbered expected propositions, the answer between its
markers). Turn 1 opens the answer's first ``path:line`` citation with ``Read`` when ``Read`` is
offered, as a careful grader would (absolute when the conversation names the working
directory, else relative, which the CLI resolves there); the next turn, or turn 1 without a
citation, returns the strict JSON in a ```` ```json ```` fence. A proposition is ``supported`` when at least half of
its key terms appear as words of the answer, else ``missing`` (this policy never says
``contradicted``); the rubric follows from the verdicts. A prompt that is not an adjudication
prompt gets a plain sentence (which the parser rejects, so the item stays pending).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentstudy.adjudication.citations import extract_citations
from agentstudy.adjudication.prompt import ANSWER_CLOSE, ANSWER_OPEN, PROPOSITIONS_HEADER
from agentstudy.protocol.adjudication import rubric_for
from agentstudy.rehearsal.conversation import find_cwd, find_prompt, tool_steps
from agentstudy.rehearsal.policy import ScriptedReply

__all__ = ["adjudicator_reply", "judge", "key_terms", "parse_adjudication_prompt"]

_TOKEN = re.compile(r"[A-Za-z0-9_]+")
_NUMBERED = re.compile(r"^(\d+)\. (.+)$")
_STOPWORDS = frozenset({
    "about", "after", "again", "before", "being", "between", "cannot", "could", "every", "their", "there",
    "these", "those", "through", "under", "until", "where", "which", "while", "within", "without", "would",
    "instead", "never", "other", "rather", "still", "should",
})


def key_terms(proposition: str) -> list[str]:
    """The proposition's key terms, lower-case, in order, without repeats: words of at least 5 letters that
    are not stopwords, and tokens of at least 2 characters holding a digit or an underscore."""
    terms: list[str] = []
    for token in _TOKEN.findall(proposition.lower()):
        distinctive = len(token) >= 2 and any(c.isdigit() or c == "_" for c in token)
        if (distinctive or (len(token) >= 5 and token not in _STOPWORDS)) and token not in terms:
            terms.append(token)
    return terms


def parse_adjudication_prompt(prompt: str) -> tuple[list[str], str] | None:
    """``(propositions, answer)`` from an adjudication prompt, or ``None`` when it is not one."""
    if PROPOSITIONS_HEADER not in prompt or ANSWER_OPEN not in prompt or ANSWER_CLOSE not in prompt:
        return None
    block = prompt.split(PROPOSITIONS_HEADER, 1)[1].split("\n\n", 1)[0]
    propositions = [m.group(2) for m in (_NUMBERED.match(line) for line in block.strip().splitlines()) if m]
    answer = prompt.split(ANSWER_OPEN + "\n", 1)[-1].rsplit("\n" + ANSWER_CLOSE, 1)[0]
    return (propositions, answer) if propositions else None


def judge(propositions: Sequence[str], answer: str) -> dict[str, Any]:
    """The adjudication JSON object for ``answer``, judged by key terms (see the module docstring)."""
    words = set(_TOKEN.findall(answer.lower()))
    verdicts: list[dict[str, Any]] = []
    for number, proposition in enumerate(propositions, start=1):
        terms = key_terms(proposition)
        found = [term for term in terms if term in words]
        supported = bool(terms) and 2 * len(found) >= len(terms)
        verdicts.append({
            "proposition": number,
            "verdict": "supported" if supported else "missing",
            "reason": f"{len(found)} of {len(terms)} key terms of the proposition appear in the answer.",
        })
    supported_count = sum(v["verdict"] == "supported" for v in verdicts)
    return {
        "verdicts": verdicts,
        "rubric": rubric_for(v["verdict"] for v in verdicts),
        "reason": f"{supported_count} of {len(verdicts)} propositions supported (rehearsal key-term adjudicator).",
    }


def _usage(body: Mapping[str, Any], content: list[dict[str, Any]]) -> dict[str, int]:
    sent = {key: body.get(key) for key in ("messages", "system", "tools")}
    in_bytes = len(json.dumps(sent, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    out_bytes = len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return {"input_tokens": max(1, in_bytes // 4), "output_tokens": max(1, out_bytes // 4),
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _offered(tools: Any) -> set[str]:
    if not isinstance(tools, list):
        return set()
    return {t["name"] for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)}


def adjudicator_reply(body: Mapping[str, Any]) -> ScriptedReply:
    """Decide the scripted adjudicator's next message for a Messages API request ``body``.

    Raises:
        ValueError: ``body["messages"]`` is not a non-empty list (the server answers 400).
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("request body needs a non-empty 'messages' list")
    parsed = parse_adjudication_prompt(find_prompt(messages))
    content: list[dict[str, Any]]
    if parsed is None:
        content = [{"type": "text", "text": "I can only grade an adjudication prompt."}]
        return ScriptedReply(content, "end_turn", _usage(body, content))
    propositions, answer = parsed
    citations = extract_citations(answer)
    cwd = find_cwd(messages)
    if "Read" in _offered(body.get("tools")) and not tool_steps(messages) and citations:
        path = citations[0].path
        tool_input = {"file_path": f"{cwd}/{path}" if cwd and not path.startswith("/") else path}
        tool_id = "toolu_" + hashlib.sha256(json.dumps(tool_input).encode("utf-8")).hexdigest()[:24]
        content = [
            {"type": "text", "text": "I will open the first cited file to check it."},
            {"type": "tool_use", "id": tool_id, "name": "Read", "input": tool_input},
        ]
        return ScriptedReply(content, "tool_use", _usage(body, content))
    text = "```json\n" + json.dumps(judge(propositions, answer), ensure_ascii=False) + "\n```"
    content = [{"type": "text", "text": text}]
    return ScriptedReply(content, "end_turn", _usage(body, content))
