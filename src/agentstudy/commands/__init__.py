"""One module per ``agentstudy`` subcommand; ``agentstudy.cli`` registers them on the group."""
