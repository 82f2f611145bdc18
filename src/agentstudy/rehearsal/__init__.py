"""Zero-spend rehearsal: a scripted Messages API server, an example study and an example MCP server."""
