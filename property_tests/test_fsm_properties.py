"""The state machines under random event sequences: illegal transitions raise, settlement happens once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from statemachine.exceptions import TransitionNotAllowed

from agentstudy.fsm.attempt import FINAL_STATUSES, AttemptMachine
from agentstudy.fsm.run import RunMachine

STATUSES = list(FINAL_STATUSES)
attempt_events = st.lists(
    st.one_of(
        st.just(("reserve", {})),
        st.just(("refuse", {})),
        st.tuples(st.just("start"), st.fixed_dictionaries({"checkpointed": st.booleans()})),
        st.tuples(st.just("settle"), st.fixed_dictionaries({"status": st.sampled_from([*STATUSES, "bogus"])})),
    ),
    max_size=12,
)

LEGAL = {
    ("pending", "reserve"): "reserved",
    ("pending", "refuse"): "refused",
    ("reserved", "start"): "running",
    ("running", "settle"): None,  # the target is the status sent
}


@settings(max_examples=300, deadline=None)
@given(attempt_events)
def test_attempt_machine_accepts_exactly_the_legal_transitions(events: list[tuple[str, dict[str, object]]]) -> None:
    machine = AttemptMachine()
    for name, kwargs in events:
        before = machine.status
        key = (before, name)
        legal = key in LEGAL
        if name == "start" and not kwargs.get("checkpointed"):
            legal = False  # a reservation that is not on disk never lets the agent start
        if name == "settle" and kwargs.get("status") not in STATUSES:
            legal = False
        if legal:
            machine.send(name, **kwargs)
            expected = LEGAL[key] if LEGAL[key] is not None else kwargs["status"]
            assert machine.status == expected
        else:
            try:
                machine.send(name, **kwargs)
            except TransitionNotAllowed:
                pass
            else:
                raise AssertionError(f"{name} {kwargs} was accepted in {before}")
            assert machine.status == before
    if machine.status in STATUSES:
        assert machine.settlements == 1
    else:
        assert machine.settlements == 0


@settings(max_examples=200, deadline=None)
@given(
    planned=st.integers(min_value=1, max_value=5),
    statuses=st.lists(st.sampled_from(STATUSES), max_size=7),
    transport=st.sampled_from(["cli", "http"]),
)
def test_run_machine_finishes_only_when_every_planned_attempt_completed(
    planned: int, statuses: list[str], transport: str
) -> None:
    run = RunMachine(planned, "cli" if transport == "cli" else "http")
    try:
        run.observe(status="completed")
    except TransitionNotAllowed:
        pass
    else:
        raise AssertionError("no observation before the run begins")
    run.begin()
    observed: list[str] = []
    for status in statuses:
        if len(observed) == planned:
            try:
                run.observe(status=status)
            except TransitionNotAllowed:
                break
            raise AssertionError("observed more attempts than planned")
        run.observe(status=status)
        observed.append(status)
        if run.should_stop():
            break
    run.finish()
    done = len(observed) == planned and all(s == "completed" for s in observed)
    assert run.status == ("awaiting-adjudication" if done else "blocked")
    try:
        run.begin()
    except TransitionNotAllowed:
        pass
    else:
        raise AssertionError("a finished run cannot start again")


def test_cli_stop_rule_stops_on_anything_but_completed() -> None:
    for status in STATUSES:
        run = RunMachine(3, "cli")
        run.begin()
        run.observe(status=status)
        assert run.should_stop() is (status != "completed")


def test_http_stop_rule_goes_on_after_incomplete_and_timeout() -> None:
    expected = {"failed": True, "budget-exceeded": True, "incomplete": False, "timed-out": False, "completed": False}
    for status, stops in expected.items():
        run = RunMachine(3, "http")
        run.begin()
        run.observe(status=status)
        assert run.should_stop() is stops
