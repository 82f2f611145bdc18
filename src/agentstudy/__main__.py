"""Allow ``python -m agentstudy``."""

from agentstudy.cli import main

main()
