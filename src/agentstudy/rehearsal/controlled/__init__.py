"""The example controlled study for zero-spend rehearsals: ``tasks`` (its twelve tasks) and
``example`` (builds the repositories and the verified suite, plan, provider and repository files)."""
