#!/usr/bin/env bash
# One-shot set-up on a fresh machine: bubblewrap (the sandbox of every attempt), chromium (the
# reports' screenshots and first-screen test), a project virtualenv (.venv) with agentstudy and
# its dev tools and the optional Ray extra (--executor ray, issue 20; its tests run in CI, each
# local cluster in its own network namespace: unshare, nsenter and ip), the Claude Code CLI
# pinned to 2.1.296 in the git-ignored folder .tools/claude-code (and the newest 2.1.x when it was pinned,
# 2.1.328, in .tools/claude-code-next: tests/test_claude_code_next.py runs the pilot with it),
# and the third-party MCP server @modelcontextprotocol/server-filesystem pinned to 2026.8.31 in
# .tools/mcp-server-filesystem (the README's "Study your own MCP server" walkthrough and its
# end-to-end test study it), and the third-party Python MCP server code-index-mcp pinned to 2.17.1 in
# its own virtualenv .tools/code-index-mcp (unannotated, needs a preparation step: tests/test_prepare_code_index.py).
# Idempotent: re-running it only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
CLAUDE_CODE_VERSION="2.1.296"
CLAUDE_CODE_NEXT_VERSION="2.1.328"
SERVER_FILESYSTEM_VERSION="2026.8.31"
PYTHON="${PYTHON:-python3}"
APT_LOCK_WAIT_S="${APT_LOCK_WAIT_S:-600}"

# Each phase says what it does and, when the next starts, how long it took (pip and npm are quiet for minutes).
phase_name=""
phase_start=0
phase() {
  if [ -n "$phase_name" ]; then
    echo "setup: $phase_name done in $(( $(date +%s) - phase_start )) s"
  fi
  phase_name="$1"
  phase_start=$(date +%s)
  if [ -n "$phase_name" ]; then
    echo "setup: $phase_name ..."
  fi
}

# apt_install PACKAGE...: waits (bounded, saying so) for a dpkg lock held by another install, then installs.
apt_lock_held() {
  "$PYTHON" - <<'PY' 2>/dev/null
import fcntl, sys
for path in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"):
    try:
        with open(path, "w") as lock:
            fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(0)
    except OSError:
        pass
sys.exit(1)
PY
}
apt_install() {
  if apt_lock_held; then
    echo "setup: another install holds the apt lock; waiting up to ${APT_LOCK_WAIT_S} s for it (APT_LOCK_WAIT_S)"
  fi
  local wait=(-o "DPkg::Lock::Timeout=${APT_LOCK_WAIT_S}")
  apt-get install "${wait[@]}" -y -qq "$@" >/dev/null 2>&1 \
    || { apt-get update "${wait[@]}" -qq >/dev/null 2>&1 && apt-get install "${wait[@]}" -y -qq "$@" >/dev/null; } \
    || { echo "setup: apt-get install $* failed (after waiting up to ${APT_LOCK_WAIT_S} s for the apt lock)" >&2; exit 1; }
}

phase "system packages (bubblewrap, chromium, iproute2)"

if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap (apt-get install bubblewrap)"
    apt_install bubblewrap
  else
    echo "setup: bubblewrap is missing and cannot be installed from here; run: sudo apt-get install bubblewrap" >&2
    echo "setup: (or run studies with --containment restricted, which the ledger and reports then record)" >&2
  fi
fi

# chromium: headless screenshots of the HTML reports and the first-screen test (issue 17).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium (apt-get install chromium)"
    apt_install chromium
  else
    echo "setup: chromium is missing and cannot be installed from here; run: sudo apt-get install chromium" >&2
  fi
fi

# iproute2 (ip): the Ray tests bring up loopback in the network namespace of their local cluster (issue 20).
if ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing iproute2 and util-linux (apt-get install iproute2 util-linux)"
    apt_install iproute2 util-linux
  else
    echo "setup: ip or unshare is missing; run: sudo apt-get install iproute2 util-linux" >&2
  fi
fi

phase "Python virtualenv .venv (agentstudy, its dev tools, Ray)"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -e '.[dev,ray,export]'
# pip would byte-compile every installed library first, one file after another (about 20 s); here that runs in
# the background while the agent CLIs install, and set-up waits for it at the end. Idempotent (fresh files are
# skipped); a file that does not compile is compiled when imported, as pip would leave it.
site_packages="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
.venv/bin/python -m compileall -q -j 0 "$site_packages" >/dev/null 2>&1 &
compile_pid=$!

phase "Claude Code ${CLAUDE_CODE_VERSION} and ${CLAUDE_CODE_NEXT_VERSION}, server-filesystem ${SERVER_FILESYSTEM_VERSION} (npm)"
claude=.tools/claude-code/node_modules/.bin/claude
if [ ! -x "$claude" ] || [ "$("$claude" --version 2>/dev/null | awk '{print $1}')" != "$CLAUDE_CODE_VERSION" ]; then
  mkdir -p .tools/claude-code
  (cd .tools/claude-code && npm install --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}")
fi
claude_next=.tools/claude-code-next/node_modules/.bin/claude
if [ ! -x "$claude_next" ] \
    || [ "$("$claude_next" --version 2>/dev/null | awk '{print $1}')" != "$CLAUDE_CODE_NEXT_VERSION" ]; then
  mkdir -p .tools/claude-code-next
  (cd .tools/claude-code-next && npm install --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@${CLAUDE_CODE_NEXT_VERSION}")
fi
filesystem_dir=.tools/mcp-server-filesystem
filesystem_pkg="$filesystem_dir/node_modules/@modelcontextprotocol/server-filesystem/package.json"
if [ ! -f "$filesystem_pkg" ] \
    || [ "$(node -p "require('./$filesystem_pkg').version" 2>/dev/null)" != "$SERVER_FILESYSTEM_VERSION" ]; then
  mkdir -p "$filesystem_dir"
  (cd "$filesystem_dir" && npm install --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-filesystem@${SERVER_FILESYSTEM_VERSION}")
fi
# --- code-index-mcp (issue 32): a third-party Python MCP server whose tools are unannotated (no readOnlyHint)
# and whose deep-index read tools answer "run build_deep_index" until a preparation step ran; pinned,
# in its own virtualenv .tools/code-index-mcp (idempotent: skipped when the pinned version is installed).
CODE_INDEX_MCP_VERSION="2.17.1"
phase "code-index-mcp ${CODE_INDEX_MCP_VERSION} (its own virtualenv)"
code_index_dir=.tools/code-index-mcp
if [ ! -x "$code_index_dir/bin/code-index-mcp" ] \
    || [ "$("$code_index_dir/bin/python" -c 'import importlib.metadata as m; print(m.version("code-index-mcp"))' 2>/dev/null)" \
         != "$CODE_INDEX_MCP_VERSION" ]; then
  "$PYTHON" -m venv "$code_index_dir"
  "$code_index_dir/bin/python" -m pip install --quiet --disable-pip-version-check \
      "code-index-mcp==${CODE_INDEX_MCP_VERSION}"
fi
# --- OpenAI Codex CLI (issue 21): pinned by the committed lockfile scripts/codex/package-lock.json,
# installed with `npm ci` into .tools/codex (idempotent: skipped when the pinned version answers).
CODEX_VERSION="0.171.0"
phase "Codex CLI ${CODEX_VERSION} (npm ci)"
codex=.tools/codex/node_modules/.bin/codex
if [ ! -x "$codex" ] || [ "$("$codex" --version 2>/dev/null)" != "codex-cli ${CODEX_VERSION}" ]; then
  mkdir -p .tools/codex
  cp scripts/codex/package.json scripts/codex/package-lock.json .tools/codex/
  (cd .tools/codex && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ "$("$codex" --version 2>/dev/null)" != "codex-cli ${CODEX_VERSION}" ]; then
  echo "setup: $codex --version did not print codex-cli ${CODEX_VERSION}" >&2
  exit 1
fi
# --- end Codex block
# --- Google Gemini CLI: pinned by the committed lockfile scripts/gemini/package-lock.json, installed
# with `npm ci --ignore-scripts` into .tools/gemini-cli (headless use needs no native module; idempotent).
GEMINI_VERSION="0.61.0"
phase "Gemini CLI ${GEMINI_VERSION} (npm ci)"
gemini=.tools/gemini-cli/node_modules/.bin/gemini
if [ ! -x "$gemini" ] || [ "$("$gemini" --version 2>/dev/null)" != "${GEMINI_VERSION}" ]; then
  mkdir -p .tools/gemini-cli
  cp scripts/gemini/package.json scripts/gemini/package-lock.json .tools/gemini-cli/
  (cd .tools/gemini-cli && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
if [ "$("$gemini" --version 2>/dev/null)" != "${GEMINI_VERSION}" ]; then
  echo "setup: $gemini --version did not print ${GEMINI_VERSION}" >&2
  exit 1
fi
# --- end Gemini block
# --- ATIF reference models (issue 43): harbor's pinned wheel, never installed; the ATIF export test imports
# only its pydantic trajectory models (harbor itself needs Python >= 3.12, those models only pydantic).
HARBOR_VERSION="0.26.0"
phase "ATIF reference wheel (harbor ${HARBOR_VERSION})"
HARBOR_WHEEL_SHA256="b7c752c5b51ae2ee1fc2ea30621493c7dc0b5a3d0157295bed4552115027baee"
harbor_wheel=".tools/harbor/harbor-${HARBOR_VERSION}-py3-none-any.whl"
if ! echo "$HARBOR_WHEEL_SHA256  $harbor_wheel" | sha256sum -c --quiet - >/dev/null 2>&1; then
  mkdir -p .tools/harbor
  .venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.12 -d .tools/harbor "harbor==${HARBOR_VERSION}"
  if ! echo "$HARBOR_WHEEL_SHA256  $harbor_wheel" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "setup: $harbor_wheel does not match its pinned SHA-256" >&2
    exit 1
  fi
fi
phase "byte-compiling the virtualenv's libraries (started after pip)"
wait "$compile_pid" || echo "setup: some library files did not byte-compile (each compiles when first imported)"
phase ""
echo "setup: $(.venv/bin/python --version), claude $("$claude" --version), $(bwrap --version 2>/dev/null || echo 'no bubblewrap')," \
  "$(chromium --version 2>/dev/null | head -n 1 || echo 'no chromium'), server-filesystem $(node -p "require('./$filesystem_pkg').version"), $("$codex" --version), gemini $("$gemini" --version)," \
  "code-index-mcp $CODE_INDEX_MCP_VERSION"
