"""Allowlisted environments for every process agentstudy starts (issue 15, deliverable 6). Pure.

No child inherits the parent's environment: each gets a few harmless names copied from the
parent (``PASSED_THROUGH``), a private ``HOME`` and ``TMPDIR``, and what its job needs
(``extra``). ``FORBIDDEN`` names — the provider API keys — are removed last, whatever asked for
them, so neither an allowlist nor an MCP server's configured ``env`` can pass them on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PASSED_THROUGH: tuple[str, ...] = ("PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM")
"""Names copied from the parent when present: the program search path, identity and locale."""
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
FORBIDDEN: tuple[str, ...] = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""Never in any child's environment (issue 15: the API keys stay with agentstudy)."""


def allowlisted_environment(
    parent: Mapping[str, str],
    *,
    home: str,
    tmpdir: str,
    extra: Mapping[str, str] | None = None,
    names: Iterable[str] = PASSED_THROUGH,
) -> dict[str, str]:
    """A child's complete environment: ``names`` copied from ``parent``, ``HOME``/``TMPDIR``, then ``extra``.

    Args:
        parent: the environment to copy allowlisted names from (``os.environ`` in production).
        home: the child's ``HOME`` (a private directory, or the user's where a login is needed).
        tmpdir: the child's ``TMPDIR``.
        extra: names the child's job needs, set after the copied ones (they win).
        names: the names copied from ``parent`` (default ``PASSED_THROUGH``).

    Returns:
        A new dict; ``PATH`` defaults to ``DEFAULT_PATH`` and ``LANG`` to ``C.UTF-8``; no name of
        ``FORBIDDEN`` is ever present.
    """
    env = {name: parent[name] for name in names if name in parent}
    env.setdefault("PATH", DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = home
    env["TMPDIR"] = tmpdir
    env.update(extra or {})
    for name in FORBIDDEN:
        env.pop(name, None)
    return env
