"""The Messages API client over real HTTP on 127.0.0.1: headers, key rules, no redirect, no retry, bounds."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentstudy.io.messages_api import (
    RESPONSE_LIMIT_BYTES,
    ApiKeyError,
    BaseUrlError,
    MessagesApiError,
    MessagesClient,
    api_key_from_environment,
    check_api_key,
    check_base_url,
)

KEY = "sk-ant-test-key-abcdef"


class _Server:
    """A real loopback server; ``answer(handler)`` responds and every request is noted in ``seen``."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        seen: list[dict[str, Any]] = []
        self.seen = seen

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                             "body": body})
                answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _respond(
    status: int, body: bytes, content_type: str = "application/json"
) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return answer


def _failure(url: str, timeout_s: float = 5.0) -> MessagesApiError:
    with MessagesClient(KEY, url) as client, pytest.raises(MessagesApiError) as failed:
        client.post(b"{}", timeout_s)
    return failed.value


@pytest.mark.parametrize("key", [None, "", "   ", "sk-ant\nx", "sk-ant\rx", "sk-ant\0x", "sk-ant-x\n"])
def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it(key: str | None) -> None:
    with pytest.raises(ApiKeyError) as refused:
        check_api_key(key)
    assert "sk-ant" not in str(refused.value)
    with pytest.raises(ApiKeyError):
        MessagesClient(key or "", "http://127.0.0.1:9")


def test_the_key_comes_from_the_environment_only() -> None:
    assert api_key_from_environment({"ANTHROPIC_API_KEY": KEY}) == KEY
    with pytest.raises(ApiKeyError, match="ANTHROPIC_API_KEY is required"):
        api_key_from_environment({"ANTHROPIC_KEY": KEY})


@pytest.mark.parametrize(
    "url", ["ftp://host", "http://", "http://user:pw@host", "https://host/?q=1", "https://host/#x", "http://h\n"]
)
def test_base_urls_with_credentials_or_odd_parts_are_refused(url: str) -> None:
    with pytest.raises(BaseUrlError):
        check_base_url(url)


def test_one_post_with_the_required_headers_and_the_exact_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # ignored: no proxy from the environment
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "é"}]}, ensure_ascii=False).encode()
    answer = _respond(200, b'{"content": [], "stop_reason": "end_turn"}')
    with _Server(answer) as server, MessagesClient(KEY, server.url + "/") as client:
        assert KEY not in repr(client)
        assert client.post(body, 5.0) == {"content": [], "stop_reason": "end_turn"}
    [request] = server.seen
    assert request["path"] == "/v1/messages" and request["body"] == body
    headers = request["headers"]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json" and "authorization" not in headers


@pytest.mark.parametrize("status", [400, 401, 429, 500, 529])
def test_an_error_status_is_one_failure_without_retry_or_provider_text(status: int) -> None:
    provider = b'{"type": "error", "error": {"type": "api_error", "message": "PROVIDER SECRET TEXT"}}'
    with _Server(_respond(status, provider)) as server:
        error = _failure(server.url)
    assert (error.kind, error.status) == ("status", status)
    assert "PROVIDER" not in str(error) and KEY not in str(error)
    assert len(server.seen) == 1, "never retried"


def test_a_redirect_is_an_error_and_is_not_followed() -> None:
    with _Server(_respond(200, b"{}")) as target:
        def redirect(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(308)
            handler.send_header("location", f"{target.url}/v1/messages")
            handler.send_header("content-length", "0")
            handler.end_headers()

        with _Server(redirect) as server:
            error = _failure(server.url)
        assert target.seen == []
    assert (error.kind, error.status) == ("redirect", 308)


def test_a_connection_dropped_before_any_answer_byte_is_a_connect_failure() -> None:
    def drop(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True

    with _Server(drop) as server:
        error = _failure(server.url)
    assert error.kind == "connect" and len(server.seen) == 1


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"\xff\xfe"])
def test_an_answer_that_is_not_a_json_object_is_refused(body: bytes) -> None:
    with _Server(_respond(200, body)) as server:
        error = _failure(server.url)
    assert error.kind == "not-json"


def test_an_oversized_answer_is_abandoned() -> None:
    huge = b'{"pad": "' + b"x" * RESPONSE_LIMIT_BYTES + b'"}'
    with _Server(_respond(200, huge)) as server:
        error = _failure(server.url)
    assert error.kind == "too-large"


def test_a_silent_server_is_a_timeout() -> None:
    release = threading.Event()

    def hang(handler: BaseHTTPRequestHandler) -> None:
        release.wait(30)

    with _Server(hang) as server:
        try:
            error = _failure(server.url, 1.0)
        finally:
            release.set()
    assert error.kind == "timeout"
