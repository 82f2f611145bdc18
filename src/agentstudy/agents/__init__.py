"""The coding agents a study can drive (issue 21): one module per agent behind ``agents.base.AgentCli``."""
