"""Fidelity per arm, the pure rule (issue 44, ``protocol.arm_fidelity``): an arm with a server is counted and judged
delivered exactly like the treatment; an arm without one keeps the control's proof and is never "not delivered";
the end-of-run summary judges the study by both arms."""

from __future__ import annotations

from agentstudy.protocol.arm_fidelity import (
    arm_not_delivered_sentence,
    arms_fidelity,
    control_sentence,
    use_clause,
)
from agentstudy.protocol.treatment import ServerCall, TreatmentRecord, treatment_record
from agentstudy.runners.summary import treatment_line


def _record(server: str | None, *errors: bool) -> TreatmentRecord:
    calls = [ServerCall("lookup.grep", failed, 10) for failed in errors]
    return treatment_record(server=server, offered_server_tools=["lookup.grep"] if server else [],
                            evidence="request", calls=calls)


def test_a_control_server_is_counted_and_judged_like_the_treatment() -> None:
    observed = [("repository-only", _record("lookup", True)), ("repository-only", _record("lookup", True, False)),
                ("repository-only", _record("lookup")), ("doc-bridge-mcp", _record("doc", False, False, False)),
                ("doc-bridge-mcp", _record("doc", False))]
    control, treatment = arms_fidelity(observed, {"repository-only": "lookup", "doc-bridge-mcp": "doc"}, 0.5)
    assert (control.attempts, control.using, control.calls, control.errors, control.all_failed) == (3, 1, 3, 2, 1)
    assert control.delivered is False  # 1 of 3 < 50 %
    assert (treatment.attempts, treatment.using, treatment.median_calls, treatment.delivered) == (2, 2, 2, True)
    assert use_clause(control) == ("used in 1 of 3 control attempts (median 2 calls; 2 calls errored; 1 attempts "
                                   "where every call failed)")
    assert control_sentence(control).startswith("The control arm's lookup was used in 1 of 3 control attempts")
    assert "NOT delivered" in control_sentence(control)
    assert arm_not_delivered_sentence(control, "doc").startswith(
        "This study cannot answer whether doc helps against lookup: the control arm's server was not delivered")
    assert control.to_json()["delivered"] is False and treatment.to_json()["attemptsUsingServer"] == 2


def test_an_arm_without_a_server_keeps_the_proof_and_is_never_undelivered() -> None:
    observed = [("repository-only", _record(None)), ("repository-only", None), ("doc-bridge-mcp", _record("doc"))]
    control, treatment = arms_fidelity(observed, {"doc-bridge-mcp": "doc"}, 0.5)
    assert control.server is None and control.delivered is None and control.offered == 0
    assert control_sentence(control) == "No server tool was offered in any of the 2 control attempts."
    assert treatment.delivered is False and treatment.median_calls is None


def test_the_run_summary_is_not_delivered_when_the_control_server_was_not() -> None:
    class Observation:
        def __init__(self, scenario: str, record: TreatmentRecord) -> None:
            self.scenario, self.treatment = scenario, record

    observed = [Observation("repository-only", _record("lookup", True)), Observation("doc-bridge-mcp", _record("doc",
                                                                                                              False))]
    line = treatment_line(observed, "doc", 0.5, control_server="lookup")  # type: ignore[arg-type]
    assert line["delivered"] is False and line["control"]["delivered"] is False
    assert line["warning"].startswith("This study cannot answer whether doc helps against lookup")
    assert line["notDeliveredArm"] == "control"
    assert (line["treatmentAttempts"], line["attemptsUsingServer"]) == (1, 1)
    plain = treatment_line(observed[1:], "doc", 0.5)  # type: ignore[arg-type]
    assert plain == {"delivered": True, "treatmentAttempts": 1, "attemptsUsingServer": 1, "serverCalls": 1}


def test_ray_workers_prove_every_scheduled_arms_server_command() -> None:
    from agentstudy.protocol.mcp_spec import McpServerSpec
    from agentstudy.protocol.schedule import ScheduleEntry
    from agentstudy.runners.executor_choice import served_commands

    def spec(command: str) -> McpServerSpec:
        return McpServerSpec(name=command, command=(f"/opt/{command}", "{root}"), read_only_tools=("x.find",),
                             probe_tool="x.find", config_candidates=())

    both = (ScheduleEntry("t", "r", "repository-only", 1), ScheduleEntry("t", "r", "doc-bridge-mcp", 1))
    assert served_commands(both, spec("a"), spec("b")) == ("/opt/b", "/opt/a")  # first scheduled first
    assert served_commands(both, spec("a"), None) == ("/opt/a",)  # a repository-only control runs none
    assert served_commands(both[:1], spec("a"), None) == ()
    assert served_commands(both, spec("a"), spec("a")) == ("/opt/a",)  # one server, two configurations
