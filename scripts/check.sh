#!/usr/bin/env bash
# The whole test suite: lint, strict typing, the documentation site (warnings are errors), then every
# example and property test, in parallel: one pytest worker per core plus one (the suite waits on real
# binaries, servers and git as much as it computes); a test file stays on one worker (--dist loadfile),
# so a file's shared fixtures (a Ray cluster, a built corpus) are built once; the 30 slowest tests are listed at
# the end (where the suite's time goes). PYTEST_WORKERS overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
# No merge-conflict marker anywhere in the tracked tree.
if git grep -nIE '^(<{7}|={7}|>{7})( |$)' -- . >&2; then
  echo "check: merge-conflict markers above" >&2
  exit 1
fi
.venv/bin/ruff check src tests property_tests bench
.venv/bin/mypy --strict
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
.venv/bin/mkdocs build --strict --quiet --site-dir "$site"
workers="${PYTEST_WORKERS:-$(( $(nproc) + 1 ))}"
# One BLAS thread per process: the workers already outnumber the cores, and idle OpenBLAS threads spin.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
.venv/bin/python -m pytest -n "$workers" --dist loadfile --durations=30 tests property_tests "$@"
