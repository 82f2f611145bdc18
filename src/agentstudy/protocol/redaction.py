"""Replacing a secret in JSON data and child text before anything is saved (never persist a credential)."""

from __future__ import annotations

from typing import Any

REDACTED = "[redacted]"
"""What a secret is replaced by in every saved document and quoted text."""


def redact(value: Any, secret: str) -> Any:
    """``value`` (JSON data) with every occurrence of ``secret`` in strings and keys replaced by ``[redacted]``."""
    if isinstance(value, str):
        return value.replace(secret, REDACTED)
    if isinstance(value, list):
        return [redact(item, secret) for item in value]
    if isinstance(value, dict):
        return {redact(key, secret): redact(item, secret) for key, item in value.items()}
    return value
