"""The scopes a controlled study's metrics are grouped by (seed 004, digest 5.9): plain data, so the
``metrics`` command's ``--scope`` choice names them without importing the metrics' models (issue 42)."""

from __future__ import annotations

__all__ = ["SCOPES"]

SCOPES = ("task", "repository", "category", "difficulty", "model", "scenario", "replicate", "aggregate")
"""Every metrics scope, in the order a report lists them."""
