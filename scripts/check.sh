#!/usr/bin/env bash
# The whole test suite: lint, strict typing, then every example and property test.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check src tests property_tests bench
.venv/bin/mypy --strict
.venv/bin/python -m pytest tests property_tests
