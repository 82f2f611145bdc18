"""The seed's plain names (seed 000): the two ledger scenario ids and the bundled server's config-file
candidates. Plain strings, so a command's options name them without importing the study file's models
(issue 42); ``protocol.study_arms`` and ``protocol.mcp_spec`` re-export them."""

from __future__ import annotations

__all__ = ["DOC_BRIDGE_CONFIG_CANDIDATES", "DOC_BRIDGE_MCP", "REPOSITORY_ONLY", "SCENARIOS"]

REPOSITORY_ONLY = "repository-only"
"""The ledger scenario of the control arm (the seed's name)."""
DOC_BRIDGE_MCP = "doc-bridge-mcp"
"""The ledger scenario of the treatment arm (the seed's name, whatever the server)."""
SCENARIOS: tuple[str, str] = (REPOSITORY_ONLY, DOC_BRIDGE_MCP)
"""The two scenarios in their forward order: control, then treatment."""

DOC_BRIDGE_CONFIG_CANDIDATES: tuple[str, ...] = (
    "doc-bridge.config.ts",
    "doc-bridge.config.mts",
    "doc-bridge.config.js",
    "doc-bridge.config.mjs",
    "doc-bridge.config.json",
    "doc-bridge.config.yaml",
    "doc-bridge.config.yml",
    "package.json#docBridge",
)
"""doc-bridge's own config-file order; ``package.json#docBridge`` means package.json with that key."""
