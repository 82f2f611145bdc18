"""The paired report of a minimal study: load and join the ledger and its adjudication companion,
compute paired differences with exploratory statistics, and render text, Markdown or a
self-contained HTML page with inline SVG plots.

Entry points: :func:`agentstudy.report.build.build_report` (files -> a rendered document) and
:func:`agentstudy.report.demo.write_demo_reports`. The report never prints an answer's text.
"""
