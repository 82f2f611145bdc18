"""The thin shell: child processes, git reads, corpus exports, ledger files, MCP and HTTP clients."""
