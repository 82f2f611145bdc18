"""Provider requests and answers go through the one bounded JSON reader (issue 40 breaks 9 and 10): a request
nested 100,000 levels deep, one with NaN or Infinity, one with a duplicated key or a 200-digit number is refused
in one line with exit 2 (never a RecursionError traceback); an agent's answer likewise is no answer."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.controlled.provider_output import AgentAnswerError, parse_provider_answer

REQUEST = {"protocol": "doc-bridge.study-provider.v1", "scenario": "repository-only"}


@pytest.mark.parametrize(("stdin", "says"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
    (b'{"protocol": "doc-bridge.study-provider.v1", "x": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
     "nested deeper than 64 levels"),
    (json.dumps(REQUEST)[:-1].encode() + b', "budget": NaN}', "NaN is not JSON"),
    (json.dumps(REQUEST)[:-1].encode() + b', "budget": -Infinity}', "-Infinity is not JSON"),
    (b'{"protocol": "doc-bridge.study-provider.v1", "protocol": "doc-bridge.study-provider.v1"}',
     "duplicated key 'protocol'"),
    (json.dumps(REQUEST)[:-1].encode() + b', "budget": ' + b"9" * 200 + b"}", "longer than 100 characters"),
    (json.dumps(REQUEST)[:-1].encode() + b', "budget": 1e400}', "out of range"),
])
def test_a_hostile_request_is_one_line_and_exit_2(stdin: bytes, says: str) -> None:
    result = CliRunner().invoke(main, ["provider", "claude-code", "--rehearsal"], input=stdin, catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (2, "")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentstudy: error: the request on stdin "), result.stderr
    assert says in lines[0]


@pytest.mark.parametrize(("text", "says"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    ('{"taskOutcome": "success", "taskOutcome": "blocked"}', "duplicated key 'taskOutcome'"),
    ('{"reworkCount": Infinity}', "Infinity is not JSON"),
])
def test_a_hostile_answer_is_no_answer(text: str, says: str) -> None:
    with pytest.raises(AgentAnswerError) as raised:
        parse_provider_answer(text)
    assert says in str(raised.value) and "\n" not in str(raised.value)
