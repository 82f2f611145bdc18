"""The example study file narrowed to its first corpus, for tests whose runs reach only the first task.

A run's preflight starts the MCP server once per repository of the study and probes it (each start ~0.65 CPU-s:
the MCP SDK's import); a pilot of one task uses one repository. A test about what a run does in its preflight or
around its first attempts, not about several corpora, runs this study file and keeps the preflight to one start
(issue 42 item 7, the suite's CPU). The seed's manifest names exactly three repositories, hence a study file
(``agentstudy-study-v1``, the same arms, MCP server, tools and probe).
"""

from __future__ import annotations

import json

from agentstudy.rehearsal.example_study import ExampleStudy

from study_files import EXAMPLE_STUDY

FIRST_CORPUS = "lantern-cache"
"""The repository of the example's first task (``lantern-discovery``)."""


def one_corpus(study: ExampleStudy) -> ExampleStudy:
    """The built example ``study`` with the example study file narrowed to :data:`FIRST_CORPUS` and its two tasks,
    written beside the study's manifest as ``one-corpus-study.json``; ``roots`` holds that repository only."""
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    document["repositories"] = {FIRST_CORPUS: document["repositories"][FIRST_CORPUS]}
    document["tasks"] = [task for task in document["tasks"] if task["repository"] == FIRST_CORPUS]
    path = study.manifest_path.with_name("one-corpus-study.json")
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return ExampleStudy(manifest_path=path, roots={FIRST_CORPUS: study.roots[FIRST_CORPUS]})
