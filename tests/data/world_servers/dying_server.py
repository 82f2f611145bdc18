"""A stdio MCP server that writes to stderr and exits during ``initialize`` (issue 39): nothing can use it."""

import sys

sys.stdin.readline()  # the client's initialize request
sys.stderr.write("loading the index\n")
sys.stderr.write("fatal: the index database /var/lib/docs-index is missing; run docs-index --build first\n")
sys.stderr.flush()
sys.exit(3)
