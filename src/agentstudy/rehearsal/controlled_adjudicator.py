"""A scripted independent adjudicator for rehearsing ``agentstudy adjudicate-controlled`` (digest 5.10).

``python -I -m agentstudy.rehearsal.controlled_adjudicator`` reads one
``doc-bridge.study-adjudicator.v1`` request on stdin and answers one verdict object on stdout,
deterministically and without a model, from the bounded candidate record only (it is given no
path, output, prompt or credential, and reads no file):

- ``blocked`` when the execution did not complete, the acceptance counts are missing, or fewer
  checks were executed than exist;
- ``success`` when every check passed and every required evidence id is present;
- ``incomplete`` when nothing passed and no required evidence is present; ``partial`` otherwise.

Tokens are ``ceil(bytes / 4)`` of its input and output, labelled ``estimate``. Exit 2 on a
request that is not an adjudicator request. ``--latency-ms MS`` and ``--trace FILE`` as the
rehearsal provider's (issue 19). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from agentstudy.rehearsal.controlled_provider import add_pacing_options, paced, read_request

PROTOCOL = "doc-bridge.study-adjudicator.v1"
MAX_REQUEST_BYTES = 8_000_000
CONFIDENCE = 0.9


def verdict(request: dict[str, Any]) -> dict[str, Any]:
    """The verdict object for one request: ``outcome``, ``confidence``, ``reasonCodes``."""
    candidate = request.get("candidate") or {}
    acceptance = candidate.get("acceptanceExecution") or {}
    required = (candidate.get("evidenceCoverage") or {}).get("required") or []
    present = sum(1 for item in required if item.get("present") is True)
    passed, total, executed = acceptance.get("passed"), acceptance.get("total"), acceptance.get("executed")
    codes: list[str] = []
    if acceptance.get("status") != "completed":
        outcome, codes = "blocked", ["execution-not-completed"]
    elif not acceptance.get("measurementPresent"):
        outcome, codes = "blocked", ["acceptance-not-measured"]
    elif not isinstance(executed, int | float) or not isinstance(total, int | float) or executed < total:
        outcome, codes = "blocked", ["acceptance-not-executed"]
    else:
        codes.append("checks-all-passed" if passed == total else ("checks-none-passed" if passed == 0
                                                                  else "checks-some-passed"))
        codes.append("evidence-complete" if present == len(required) else ("evidence-missing" if present == 0
                                                                          else "evidence-partial"))
        if passed == total and present == len(required):
            outcome = "success"
        elif passed == 0 and present == 0:
            outcome = "incomplete"
        else:
            outcome = "partial"
    return {"outcome": outcome, "confidence": CONFIDENCE, "reasonCodes": codes}


def main(argv: list[str] | None = None) -> int:
    """Read the request, write the verdict; exit 2 on a bad request."""
    parser = argparse.ArgumentParser(prog="controlled_adjudicator", description=__doc__.splitlines()[0])
    add_pacing_options(parser)
    options = parser.parse_args(argv)
    raw, request = read_request(PROTOCOL, MAX_REQUEST_BYTES)
    if request is None:
        print("rehearsal adjudicator: the request is not a study-adjudicator v1 request", file=sys.stderr)
        return 2
    body = verdict(request)
    draft = json.dumps(body, separators=(",", ":"))
    body.update({"inputTokens": math.ceil(len(raw) / 4), "outputTokens": math.ceil(len(draft) / 4),
                 "tokenMethod": "estimate"})
    paced(options, lambda: sys.stdout.write(json.dumps(body, separators=(",", ":")) + "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
