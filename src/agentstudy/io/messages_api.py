"""The Messages API over httpx: one POST per call, nothing more (digest 2.1 step 4; seed 000 ``http``).

The key comes from the environment only (``ANTHROPIC_API_KEY``), must be non-empty and free of
CR, LF and NUL, and is sent as ``x-api-key`` with ``anthropic-version: 2023-06-01``. It is never
printed, logged, put in an exception, nor passed to a child process. The client follows no
redirect (a 3xx is an error), never retries by itself (``transports.api_retry`` decides, and
says which retry a request is in ``x-stainless-retry-count``, as the SDK does), keeps no cache,
ignores proxy and netrc settings from the environment (as Node's built-in ``fetch`` of the original
does), and bounds each call
by a per-request timeout and the size of the answer. Every failure is one
:class:`MessagesApiError` with a fixed text of our own: provider error text never leaves here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agentstudy.protocol.json_input import JsonInputError, load_json

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The public Messages API; ``--api-base-url`` replaces it (rehearsal and tests)."""

ANTHROPIC_VERSION = "2023-06-01"
API_KEY_ENV = "ANTHROPIC_API_KEY"
RESPONSE_LIMIT_BYTES = 4 * 1024 * 1024
"""Largest answer read (bytes); a 1,024-token reply is far below it."""


class ApiKeyError(ValueError):
    """The key is missing, empty or contains CR, LF or NUL (the message never holds the key)."""


class BaseUrlError(ValueError):
    """The base URL is not ``http(s)://host[:port][/path]`` without credentials, query or fragment."""


class MessagesApiError(RuntimeError):
    """A call got no usable answer: transport error, timeout, redirect, non-2xx, oversized or non-JSON.

    Attributes:
        kind: ``connect`` (the connection failed before any byte of the answer), ``transport`` (it broke
            after), ``timeout``, ``redirect``, ``status``, ``too-large`` or ``not-json``.
        status: the HTTP status when one was received, else ``None``.
        retry_after_s: the answer's ``retry-after-ms`` / ``retry-after`` (seconds) on a refusal, else ``None``.
    """

    def __init__(self, kind: str, status: int | None = None, retry_after_s: float | None = None) -> None:
        self.kind, self.status, self.retry_after_s = kind, status, retry_after_s
        detail = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"the Messages API call failed: {kind}{detail}")


def api_key_from_environment(env: Mapping[str, str]) -> str:
    """Return ``ANTHROPIC_API_KEY`` from ``env`` after :func:`check_api_key`.

    Raises:
        ApiKeyError: missing, empty, or containing CR, LF or NUL.
    """
    return check_api_key(env.get(API_KEY_ENV))


def check_api_key(key: str | None) -> str:
    """Return ``key`` if it can be sent as a header: non-empty, no CR, LF or NUL, not only spaces.

    Raises:
        ApiKeyError: otherwise (the message names the rule, never the key).
    """
    if key is None or not key.strip():
        raise ApiKeyError(f"{API_KEY_ENV} is required in the environment for the http transport")
    if any(c in key for c in "\r\n\0"):
        raise ApiKeyError(f"{API_KEY_ENV} contains a CR, LF or NUL character")
    return key


def check_base_url(url: str) -> str:
    """Return ``url`` without a trailing slash if it is ``http(s)://host[:port][/path]``.

    Raises:
        BaseUrlError: another scheme, no host, user info, a query or a fragment, or CR/LF/NUL.
    """
    if any(c in url for c in "\r\n\0"):
        raise BaseUrlError("the API base URL contains a CR, LF or NUL character")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BaseUrlError("the API base URL must be http(s)://host[:port][/path]")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise BaseUrlError("the API base URL must not carry credentials, a query or a fragment")
    return url.rstrip("/")


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` (milliseconds) or ``retry-after`` (whole seconds, or a float), else ``None``.

    An HTTP-date ``retry-after`` and anything unparsable or negative give ``None``.
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            continue
        if value >= 0 and value == value:  # not NaN
            return value
    return None


class MessagesClient(AbstractContextManager["MessagesClient"]):
    """A Messages API client: ``post(body, timeout_s)`` sends one request and returns the JSON answer.

    Args:
        api_key: checked with :func:`check_api_key`.
        base_url: checked with :func:`check_base_url`; requests go to ``<base_url>/v1/messages``.
        clock: monotonic seconds (the answer is read only until the request's own deadline).

    Raises:
        ApiKeyError, BaseUrlError: on construction, before any socket is opened.
    """

    def __init__(
        self, api_key: str, base_url: str = DEFAULT_BASE_URL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.__key = check_api_key(api_key)
        self.base_url = check_base_url(base_url)
        self._clock = clock
        import httpx  # loaded when HTTP is used, not with every command (issue 42)

        self._client: httpx.Client = httpx.Client(
            follow_redirects=False,
            trust_env=False,
            transport=httpx.HTTPTransport(retries=0, trust_env=False),
        )

    def __repr__(self) -> str:
        return f"MessagesClient(base_url={self.base_url!r})"

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def post(self, body: bytes, timeout_s: float, retry_count: int = 0) -> dict[str, Any]:
        """POST ``body`` (exact compact JSON bytes) and return the decoded JSON object of a 2xx answer.

        ``timeout_s`` bounds connecting, sending and each read; the answer is also abandoned once
        ``timeout_s`` has passed since the call began (checked between received chunks).
        ``retry_count`` (0 for a first try) goes out as ``x-stainless-retry-count``.

        Raises:
            MessagesApiError: no 2xx JSON object came back in time (nothing else escapes).
        """
        import httpx

        deadline = self._clock() + timeout_s
        headers = {
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            "x-api-key": self.__key,
            "x-stainless-retry-count": str(retry_count),
        }
        answered = False
        try:
            with self._client.stream(
                "POST", f"{self.base_url}/v1/messages", content=body, headers=headers,
                timeout=httpx.Timeout(timeout_s),
            ) as response:
                answered = True
                if 300 <= response.status_code < 400:
                    raise MessagesApiError("redirect", response.status_code)
                if not 200 <= response.status_code < 300:
                    raise MessagesApiError("status", response.status_code, retry_after(response.headers))
                raw = bytearray()
                for chunk in response.iter_bytes():
                    raw.extend(chunk)
                    if len(raw) > RESPONSE_LIMIT_BYTES:
                        raise MessagesApiError("too-large", response.status_code)
                    if self._clock() > deadline:
                        raise MessagesApiError("timeout", response.status_code)
                status = response.status_code
        except MessagesApiError:
            raise
        except httpx.TimeoutException:
            raise MessagesApiError("timeout") from None
        except (httpx.HTTPError, OSError, ValueError):
            raise MessagesApiError("transport" if answered else "connect") from None
        try:
            decoded = load_json(bytes(raw))
        except JsonInputError:
            raise MessagesApiError("not-json", status) from None
        if not isinstance(decoded, dict):
            raise MessagesApiError("not-json", status)
        return decoded
