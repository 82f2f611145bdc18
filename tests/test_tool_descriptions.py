"""Either arm may carry a server; ``toolDescriptions`` rewrite what the agent is shown (issue 44).

The study file refuses an override of a tool the arm does not offer, or one that touches more than the
description (one line, exit 2); the ``io.warm_up`` relay, in the server's own bubblewrap sandbox, rewrites the
real server's ``tools/list`` for the real MCP SDK client (names, input schemas and annotations as the server sent
them); a free http rehearsal of the example study with a rewrite records the hashes per arm and sends the
rewritten description in the agent's request.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.io.mcp_client import probe_mcp_server
from agentstudy.io.mcp_sandbox import contained_server
from agentstudy.protocol.arm_configurations import configuration_sentences, configurations
from agentstudy.protocol.manifest import ManifestError, parse_manifest
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.tool_roles import choose_server_tools
from agentstudy.protocol.treatment import tool_set_sha256
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from study_files import EXAMPLE_STUDY, study_document

KB_SERVER = Path(__file__).resolve().parent / "data" / "kb_server.py"
REWRITE = "Search the corpus for a term; prefer this for every lookup of a number or a limit."


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    """The example study's corpora, built once for the module: the runs below only read them."""
    return build_example_study(tmp_path_factory.mktemp("tool-descriptions") / "example")


def _invoke(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    base: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None,
                                   "STUDY_OUTPUT_USD_PER_MILLION": None}
    return CliRunner().invoke(main, args, env={**base, **(env or {})}, catch_exceptions=False)


def _with(document: dict[str, Any], arm: str, **fields: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["arms"][arm].update(fields)
    return changed


def _refused(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "study.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = _invoke(["study", "--manifest", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert not result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(("arm", "fields", "words"), [
    ("treatment", {"toolDescriptions": {"kb.erase": "Erase nothing."}},
     "arms.treatment.toolDescriptions names kb.erase, not among arms.treatment.tools"),
    ("treatment", {"toolDescriptions": {"kb.search": {"description": "x", "inputSchema": {}}}},
     "arms.treatment.toolDescriptions.kb.search must be the description's text"),
    ("treatment", {"toolDescriptions": {"kb.search": {"annotations": {"readOnlyHint": True}}}},
     "a tool's name, input schema and annotations are the server's"),
    ("treatment", {"toolDescriptions": {"kb.search": "   "}}, "must be 1-8000 characters of text, not blank"),
    ("control", {"toolDescriptions": {"kb.search": "x"}}, "arms.control names a server (toolDescriptions) but no"),
    ("control", {"tools": ["kb.search"], "probe": {"tool": "kb.search", "arguments": {}},
                 "toolDescriptions": {"kb.read": "Read."}},
     "arms.control.toolDescriptions names kb.read, not among arms.control.tools"),
    ("control", {"tools": ["kb.search"]}, "arms.control names a server (tools or probe) but no probe"),
    ("control", {"tools": ["kb.search"], "probe": {"tool": "kb.read", "arguments": {}}},
     "arms.control.probe.tool"),
])
def test_a_bad_override_or_control_server_is_one_line_and_exit_2(
    tmp_path: Path, arm: str, fields: dict[str, Any], words: str
) -> None:
    line = _refused(tmp_path, _with(study_document({"solo": 1}, 1), arm, **fields))
    assert words in line


def test_a_control_server_loads_with_the_treatment_checks_and_the_dry_run_names_it(tmp_path: Path) -> None:
    server = {"mcpConfig": {"mcpServers": {"kb2": {"command": "/usr/bin/kb2", "args": ["{root}"]}}},
              "tools": ["kb2.find"], "probe": {"tool": "kb2.find", "arguments": {"term": "the"}},
              "toolDescriptions": {"kb2.find": "Find a term."}}
    document = _with(study_document({"solo": 1}, 1), "control", **server)
    loaded = parse_manifest(json.dumps(document))
    assert loaded.arms is not None and loaded.arms.control.has_server
    assert loaded.arms.control.server_name() == "kb2" and not parse_manifest(
        json.dumps(study_document({"solo": 1}, 1))).arms.control.has_server  # type: ignore[union-attr]
    with pytest.raises(ManifestError, match=r"arms\.control\.allowOpenWorld names kb2\.read"):
        parse_manifest(json.dumps(_with(document, "control", allowOpenWorld=["kb2.read"])))
    path = tmp_path / "study.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = _invoke(["study", "--manifest", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    control, treatment = json.loads(result.stdout)["arms"]
    assert control["mcpServer"] == "kb2" and control["offeredTools"] == ["kb2.find"]
    assert control["toolDescriptionsSha256"] == tool_set_sha256({"kb2.find": "Find a term."})
    assert treatment["mcpServer"] == "kb" and treatment["toolDescriptionsSha256"] == tool_set_sha256({})


def _listing(tmp_path: Path, name: str, descriptions: dict[str, str]) -> Any:
    corpus = tmp_path / name
    corpus.mkdir()
    (corpus / "kb.json").write_text("{}", encoding="utf-8")
    spec = McpServerSpec(name="kb", command=(sys.executable, str(KB_SERVER), "--config", "{root}/kb.json"),
                         read_only_tools=("kb.find", "kb.read"), probe_tool="kb.find",
                         probe_arguments={"term": "x"}, config_candidates=(), tool_descriptions=descriptions)
    with contained_server(spec, ServerPaths(root=str(corpus), pin="0" * 40), "bwrap", dict(os.environ)) as (
            argv, child, cwd):
        return probe_mcp_server(argv[0], argv[1:], child, "kb.find", {"term": "x"}, cwd=cwd)


def test_the_relay_in_the_servers_sandbox_rewrites_descriptions_and_nothing_else(tmp_path: Path) -> None:
    own = _listing(tmp_path, "own", {})
    rewritten = _listing(tmp_path, "rewritten", {"kb.find": REWRITE})
    assert own.descriptions["kb.find"] == "Find lines containing a term."
    assert rewritten.descriptions == {**own.descriptions, "kb.find": REWRITE}
    assert rewritten.tools == own.tools and rewritten.annotations == own.annotations
    assert rewritten.hints == own.hints and rewritten.probe_ok and own.probe_ok
    assert rewritten.listing_sha256 != own.listing_sha256 and len(own.listing_sha256) == 64


def test_a_rehearsal_with_rewritten_descriptions_records_them_per_arm_and_sends_them(
        tmp_path: Path, example: ExampleStudy) -> None:
    study = example
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    overrides = {"doc.search": REWRITE}
    document["arms"]["treatment"]["toolDescriptions"] = overrides
    path = tmp_path / "rewrite.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    output = tmp_path / "ledger.json"
    result = _invoke(["study", "--manifest", str(path), "--pilot", "--transport", "http",
                      *[f"--root={name}={root}" for name, root in study.roots.items()], "--output", str(output),
                      "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal",
                      "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"],
                     {"ANTHROPIC_API_KEY": "sk-ant-planted-0123456789abcdef"})
    assert result.exit_code == 0, result.output
    ledger = json.loads(output.read_text(encoding="utf-8"))
    control, treatment = ledger["arms"]
    assert set(control) == {"scenario", "id", "label"}
    assert treatment["toolDescriptionsSha256"] == tool_set_sha256(overrides)
    assert len(treatment["toolsListSha256"]) == 64
    transcripts = [p for p in output.parent.rglob("*") if p.is_file() and p != output]
    shown = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in transcripts}
    assert any(REWRITE in text for text in shown.values()), sorted(shown)  # the treatment's request
    assert not any(REWRITE in text for name, text in shown.items() if "repository-only" in name)


LOOKUP_SERVER = Path(__file__).resolve().parent / "data" / "lookup_server.py"


def test_server_a_against_server_b_on_http_probes_contains_and_records_both_arms(
        tmp_path: Path, example: ExampleStudy) -> None:
    """Also the healthy control server's fidelity (issue 44): delivered in its own arm, in the report and in
    ``agentstudy ledger``."""
    study = example
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    document["arms"]["control"] = _lookup_arm("lookup", "Repository tools + lookup")
    path = tmp_path / "a-vs-b.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    output = tmp_path / "ledger.json"
    result = _invoke(["study", "--manifest", str(path), "--pilot", "--transport", "http",
                      *[f"--root={name}={root}" for name, root in study.roots.items()], "--output", str(output),
                      "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal",
                      "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"],
                     {"ANTHROPIC_API_KEY": "sk-ant-planted-0123456789abcdef"})
    assert result.exit_code == 0, result.output
    ledger = json.loads(output.read_text(encoding="utf-8"))
    control, treatment = ledger["arms"]
    assert control["mcpServer"] == "lookup" and treatment["mcpServer"] == ledger["mcpServer"]["name"]
    assert control["toolDescriptionsSha256"] == tool_set_sha256({}) and len(control["toolsListSha256"]) == 64
    by_arm = {o["scenario"]: o for o in ledger["observations"]}
    assert by_arm["repository-only"]["treatment"]["server"] == "lookup"
    assert set(by_arm["repository-only"]["treatment"]["offeredServerTools"]) == {
        "lookup.find_text", "lookup.grep", "lookup.read"}
    assert by_arm["doc-bridge-mcp"]["treatment"]["server"] == treatment["mcpServer"]
    assert any("MCP server" in line for line in by_arm["repository-only"]["isolationAchieved"])
    report = json.loads(_invoke(["report", str(output), "--format", "json"]).stdout)
    arms = report["treatment"]["arms"]
    assert arms["control"]["delivered"] is True and arms["treatment"]["delivered"] is True
    assert arms["control"]["attemptsUsingServer"] == arms["control"]["attempts"] == 1
    assert report["treatment"]["delivered"] is True and "cannot answer" not in report["verdict"]
    fidelity = json.loads(_invoke(["ledger", str(output), "--json"]).stdout)["ledger"]["fidelity"]
    assert fidelity["notDelivered"] is None and fidelity["control"]["delivered"] is True


GREP_REWRITE = "Use this first for every lookup: matches lines of the documentation against a pattern."


def _lookup_arm(arm_id: str, label: str, **extra: Any) -> dict[str, Any]:
    server = {"command": sys.executable, "args": [str(LOOKUP_SERVER), "{root}"]}
    return {"id": arm_id, "label": label, "mcpConfig": {"mcpServers": {"lookup": server}},
            "tools": ["lookup.find_text", "lookup.grep", "lookup.read"],
            "probe": {"tool": "lookup.find_text", "arguments": {"query": "the"}}, "serverConfigCandidates": [],
            **extra}


def test_the_rehearsal_agent_prefers_the_search_its_description_recommends() -> None:
    def tools(grep_description: str) -> dict[str, dict[str, Any]]:
        return {
            "repo_search": {"description": "Search the repository.", "input_schema": {
                "type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}},
            "lookup_find_text": {"description": "Find lines of the documentation containing a word.", "input_schema": {
                "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
            "lookup_grep": {"description": grep_description, "input_schema": {
                "type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}},
        }
    own = choose_server_tools(tools("Match lines against a regular expression."))
    rewritten = choose_server_tools(tools(GREP_REWRITE))
    assert own.search is not None and own.search.name == "lookup_find_text"
    assert rewritten.search is not None and rewritten.search.name == "lookup_grep"


@pytest.fixture(scope="module")
def description_ab(tmp_path_factory: pytest.TempPathFactory, example: ExampleStudy) -> Path:
    """A 3-task http rehearsal of one server (lookup) against its own description rewrite: the ledger. The three
    tasks are one per corpus and one per category of the example study (discovery, architecture, documentation):
    each per-attempt assertion below runs over every attempt, so more tasks would repeat them, not widen them."""
    base = tmp_path_factory.mktemp("description-ab")
    study = example
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    document["arms"] = {"control": _lookup_arm("own", "lookup, its own descriptions"),
                        "treatment": _lookup_arm("rewritten", "lookup, grep rewritten",
                                                 toolDescriptions={"lookup.grep": GREP_REWRITE})}
    first = ["lantern-discovery", "quill-architecture", "harbor-documentation"]
    document["tasks"] = sorted(document["tasks"], key=lambda t: first.index(t["id"]) if t["id"] in first else 3)
    assert {t["repository"] for t in document["tasks"][:3]} == set(document["repositories"])
    path = base / "description-ab.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    output = base / "ledger.json"
    result = _invoke(["study", "--manifest", str(path), "--pilot", "--pilot-tasks", "3", "--transport", "http",
                      *[f"--root={name}={root}" for name, root in study.roots.items()], "--output", str(output),
                      "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal",
                      "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"],
                     {"ANTHROPIC_API_KEY": "sk-ant-planted-0123456789abcdef"})
    assert result.exit_code == 0, result.output
    return output


def test_a_description_ab_changes_the_rehearsal_agents_tool_choice_per_arm(description_ab: Path) -> None:
    ledger = json.loads(description_ab.read_text(encoding="utf-8"))
    observations = ledger["observations"]
    assert len(observations) == 6 and len({o["taskId"] for o in observations}) == 3
    for observation in observations:  # the rewrite recommends grep: the agent searches with it, never find_text
        calls = observation["treatment"]["serverCallsByTool"]
        if observation["scenario"] == "repository-only":
            assert calls.get("lookup.find_text", 0) >= 1, calls
        else:
            assert calls.get("lookup.grep", 0) >= 1 and "lookup.find_text" not in calls, calls
    control, treatment = ledger["arms"]
    assert control["mcpServer"] == treatment["mcpServer"] == "lookup"
    assert control["toolsListSha256"] != treatment["toolsListSha256"]
    assert treatment["shownDescriptions"]["lookup.grep"] == GREP_REWRITE


def test_the_report_and_the_ledger_command_say_what_differs_first(description_ab: Path) -> None:
    report = json.loads(_invoke(["report", str(description_ab), "--format", "json"]).stdout)
    differences = report["armDifferences"]
    assert differences["descriptions"] == {"lookup.grep": {"control": "Match lines against a regular expression.",
                                                           "treatment": GREP_REWRITE}}
    assert differences["servers"]["control"]["name"] == differences["servers"]["treatment"]["name"] == "lookup"
    assert differences["tools"]["control"] == differences["tools"]["treatment"]
    assert differences["toolCalls"]["control"]["lookup.find_text"] >= 3
    assert differences["toolCalls"]["treatment"]["lookup.grep"] >= 3
    assert "lookup.find_text" not in differences["toolCalls"]["treatment"]
    assert differences["firstRequestTokens"]["treatment"] > differences["firstRequestTokens"]["control"]
    sentences = differences["sentences"]
    assert sentences[0].startswith("Both arms run the same server: lookup")
    assert [s for s in sentences if s.startswith("The description of ")] == [
        f"The description of lookup.grep differs: lookup, its own descriptions: \"Match lines against a regular "
        f"expression.\"; lookup, grep rewritten: \"{GREP_REWRITE}\"."]
    assert not [s for s in sentences if s.startswith("The tools offered differ")]
    markdown = _invoke(["report", str(description_ab), "--format", "md"]).stdout
    assert markdown.index("The description of lookup.grep differs") < markdown.index("Fidelity:")
    assert markdown.index("Server tool calls by name: lookup, its own descriptions: lookup.find") < markdown.index(
        "Fidelity:")
    assert any(s.startswith("Server tool calls by name: lookup, its own descriptions: lookup.find_text ")
               for s in sentences)
    assert "The control arm's lookup was used in 3 of 3 control attempts" in markdown
    summary = _invoke(["ledger", str(description_ab), "--json"])
    assert json.loads(summary.stdout)["ledger"]["armDifferences"][:len(sentences)] == sentences


def test_two_servers_are_named_and_unmeasured_tokens_said_so() -> None:
    arms = [{"scenario": "repository-only", "id": "b", "label": "B", "mcpServer": "kb", "mcpCommand": ["kb"],
             "offeredTools": ["kb.find"], "shownDescriptions": {"kb.find": "Find."}},
            {"scenario": "doc-bridge-mcp", "id": "a", "label": "A", "mcpServer": "lookup", "serverVersion": "2.0",
             "mcpCommand": ["lookup", "{root}"], "offeredTools": ["lookup.grep"],
             "shownDescriptions": {"lookup.grep": "Grep."}, "prepareSteps": ["build_index (server)"]}]
    found = configurations(arms, [("repository-only", {"kb.find": 2}), ("doc-bridge-mcp", {"lookup.grep": 1})],
                           [("repository-only", None), ("doc-bridge-mcp", None)])
    said = configuration_sentences(found, {"repository-only": "B", "doc-bridge-mcp": "A"}.__getitem__)
    assert said[0] == "The arms run different servers: B: kb (kb); A: lookup 2.0 (lookup {root})."
    assert said[1] == "The tools offered differ: B: kb.find; A: lookup.grep."
    assert said[2] == "The preparation differs: B: none; A: build_index (server)."
    assert found.descriptions == {"kb.find": {"control": "Find.", "treatment": None},
                                  "lookup.grep": {"control": None, "treatment": "Grep."}}
    assert said[-2] == "Server tool calls by name: B: kb.find 2; A: lookup.grep 1."
    assert "not measurable" in said[-1]
    assert configuration_sentences(configurations([{"scenario": "repository-only", "id": "r", "label": "R"}], []),
                                   str) == ()


def test_the_dry_run_probe_checks_the_control_arms_server_too(tmp_path: Path, example: ExampleStudy) -> None:
    study = example
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    document["arms"]["control"] = _lookup_arm("lookup", "Repository tools + lookup")
    path = tmp_path / "a-vs-b.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = _invoke(["study", "--manifest", str(path), "--dry-run", "--probe", "--pilot", "--transport", "http",
                      *[f"--root={name}={root}" for name, root in study.roots.items()]])
    assert result.exit_code == 0, result.output
    probed = json.loads(result.stdout.strip().splitlines()[-1])["mcpProbe"]
    assert probed["control"]["name"] == "lookup" and probed["control"]["serversStarted"] >= 1
    assert probed["control"]["listedTools"] == ["lookup.find_text", "lookup.grep", "lookup.read"]
    document["arms"]["control"]["probe"] = {"tool": "lookup.read", "arguments": {"path": "missing.md"}}
    path.write_text(json.dumps(document), encoding="utf-8")
    failed = _invoke(["study", "--manifest", str(path), "--dry-run", "--probe", "--pilot", "--transport", "http",
                      *[f"--root={name}={root}" for name, root in study.roots.items()]])
    assert failed.exit_code == 2 and "MCP probe failed" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
