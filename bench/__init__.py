"""Benchmarks of agentstudy against the floor and the alternatives, side by side in one run.

Run from the project root: ``.venv/bin/python -m bench`` (see ``bench/README.md``). Not a test
suite: nothing here asserts a time, and nothing but ruff runs it in CI.
"""
