"""Contracts of the controlled study runner (seed 004; digest sections 5.1–5.4, 5.6, 5.7, 5.9, 5.12).

Modules: ``hashing`` (``sha256-normalized-v1`` with JavaScript's JSON text), ``formats`` (shared
formats and the strict base model), ``plan``, ``suite``, ``observation``, ``ledger`` (with
``upsert``), ``config`` (provider CLI and repository configs), ``contracts`` (parse, verify,
create), ``selection`` (balanced and pairwise sampling) and ``summary`` (what the inspection
commands print). Pure: no files, clock, environment or processes.
"""
