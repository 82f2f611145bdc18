"""Headless Chromium (the Debian package ``chromium``) on local HTML files: screenshots and rendered DOMs.

Issue 17, item 4: the reports' first screen is checked in a real browser. Chromium is run as a
bounded child (:func:`agentstudy.io.process.run_bounded`) with an allowlisted environment (no
API key), a private profile and HOME in a temporary directory removed afterwards, no network
(every host name resolves to nothing, no proxy, background networking, sync and component
updates off, no remote-debugging port) and only ``file://`` URLs of files that exist, or (``served_dom``,
issue 43) a page of ``agentstudy view`` on http://127.0.0.1, the one host then reachable. As root
Chromium refuses its own sandbox, so ``--no-sandbox`` is added then and only then.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.process import run_bounded

CANDIDATES = ("chromium", "chromium-browser")
WINDOW = (1400, 900)
"""The first screen: width x height in CSS pixels."""
TIMEOUT_S = 120.0
DOM_LIMIT_BYTES = 16 * 1024 * 1024
OFFLINE_FLAGS = (
    "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--mute-audio",
)


class ChromiumError(RuntimeError):
    """Chromium is missing, did not start, failed or wrote nothing."""


def find_chromium(environ: Mapping[str, str] | None = None) -> Path:
    """The Chromium executable: ``AGENTSTUDY_CHROMIUM`` when set, else ``chromium`` on PATH.

    Raises:
        ChromiumError: none found (``scripts/setup.sh`` installs the Debian package ``chromium``).
    """
    env = os.environ if environ is None else environ
    chosen = env.get("AGENTSTUDY_CHROMIUM")
    if chosen:
        return Path(chosen)
    for name in CANDIDATES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return Path(found)
    raise ChromiumError("chromium is not installed; run scripts/setup.sh (or: sudo apt-get install chromium)")


def _file_url(page: Path) -> str:
    resolved = page.resolve(strict=True)
    if not resolved.is_file():
        raise ChromiumError(f"{page} is not a file")
    return resolved.as_uri()


LOOPBACK_RESOLVER = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
"""For a page served on 127.0.0.1 (``agentstudy view``): every other host still resolves to nothing."""


def _loopback_url(url: str) -> str:
    if not url.startswith("http://127.0.0.1:"):
        raise ChromiumError(f"{url} is not a page served on http://127.0.0.1")
    return url


def _run(binary: Path, flags: list[str], page: Path | str, window: tuple[int, int]) -> bytes:
    url = _file_url(page) if isinstance(page, Path) else _loopback_url(page)
    with tempfile.TemporaryDirectory(prefix="agentstudy-chromium-") as scratch:
        profile, home = Path(scratch) / "profile", Path(scratch) / "home"
        profile.mkdir()
        home.mkdir()
        offline = [LOOPBACK_RESOLVER if f.startswith("--host-resolver-rules=") and isinstance(page, str) else f
                   for f in OFFLINE_FLAGS]
        argv = [str(binary), *offline, f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}"]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")
        argv += [*flags, url]
        env = allowlisted_environment(os.environ, home=str(home), tmpdir=scratch)
        result = run_bounded(argv, env, Path(scratch), TIMEOUT_S, DOM_LIMIT_BYTES)
    if not result.started:
        raise ChromiumError(f"could not start {binary}")
    if result.exit_code != 0 or result.timed_out or result.truncated:
        shown = page if isinstance(page, Path) else page.split("?")[0]  # never the view's token
        raise ChromiumError(f"{binary.name} ended with exit {result.exit_code} (timed out: {result.timed_out}, "
                            f"output truncated: {result.truncated}) on {shown}")
    return result.stdout


def screenshot(page: Path, png: Path, *, window: tuple[int, int] = WINDOW, binary: Path | None = None) -> Path:
    """Render ``page`` (a local HTML file) in a ``window`` (CSS px) and write its first screen to ``png``.

    Raises:
        ChromiumError: Chromium missing or failing, or no PNG written.
        FileNotFoundError: ``page`` does not exist.
    """
    target = png.resolve()
    target.unlink(missing_ok=True)
    _run(binary or find_chromium(), [f"--screenshot={target}"], page, window)
    if not target.is_file() or target.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise ChromiumError(f"chromium wrote no PNG for {page}")
    return target


def rendered_dom(page: Path, *, window: tuple[int, int] = WINDOW, binary: Path | None = None,
                 budget_ms: int = 5000) -> str:
    """The DOM of ``page`` after its scripts ran (``--dump-dom`` with a virtual time budget in ms), as HTML.

    Raises:
        ChromiumError: Chromium missing or failing.
        FileNotFoundError: ``page`` does not exist.
    """
    out = _run(binary or find_chromium(), [f"--virtual-time-budget={budget_ms}", "--dump-dom"], page, window)
    return out.decode("utf-8", errors="replace")


def served_dom(url: str, *, window: tuple[int, int] = WINDOW, binary: Path | None = None,
               budget_ms: int = 5000) -> str:
    """The DOM of a page served on ``http://127.0.0.1:PORT/`` (``agentstudy view``) after its scripts ran for
    ``budget_ms`` of virtual time (which stands still while a request is pending), as HTML. Only that host is
    reachable; every other name still resolves to nothing.

    Raises:
        ChromiumError: Chromium missing or failing, or ``url`` not on http://127.0.0.1.
    """
    out = _run(binary or find_chromium(), [f"--virtual-time-budget={budget_ms}", "--dump-dom"], url, window)
    return out.decode("utf-8", errors="replace")
