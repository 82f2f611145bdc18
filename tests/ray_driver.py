"""``agentstudy minimal`` with a scripted server that logs every conversation's opening prompt (issue 20 tests).

Run as ``python tests/ray_driver.py LOG -- ARGS...``: the command line ``agentstudy ARGS`` runs in
this process, its rehearsal server answering with the usual careful agent (``next_reply``) and
appending, for every request that opens a conversation (no assistant turn yet), its first message's text as
one JSON line to LOG (flushed at once, so a test can watch attempts start). The exit code is the
command's.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import agentstudy.agents.claude_code as claude_code_agent
from agentstudy.cli import main
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


def recording_server(log: Path) -> type[RehearsalServer]:
    """A ``RehearsalServer`` whose policy logs each opening prompt to ``log`` before answering."""
    lock = threading.Lock()

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        messages = body.get("messages")
        if (isinstance(messages, list) and messages and isinstance(messages[0], dict)
                and not any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)):
            with lock, log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(_text(messages[0])) + "\n")
        return next_reply(body)

    class Recording(RehearsalServer):
        def __init__(self, **options: Any) -> None:
            super().__init__(policy=policy, **options)

    return Recording


if __name__ == "__main__":
    log_path, separator, *args = sys.argv[1:]
    assert separator == "--"
    setattr(claude_code_agent, "RehearsalServer", recording_server(Path(log_path)))  # noqa: B010 (the seam)
    main(args)
