"""Duplicate provider tool call IDs in one assistant message (issue 34, docs/contract.md
C3.7): what a scenario may say about them, what chatd and the agent do with them, and how
the properties judge them.

The copies of a provider ID share one tool call UUID. chatd runs each copy with that
identity and commits a result for each; the agent runs one of them (the others get the
replay, or 409 ``input_mismatch`` for another input); an interrupt cancels them once, only
when every copy gets the same cancel. The properties count a UUID's side effects once and
each copy's results on their own.
"""

from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import pytest

from toolcall_sim.model import chatd, chattool, system
from toolcall_sim.model import properties as props
from toolcall_sim.model.identity import tool_call_uuid
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import ScenarioError, from_dict, load

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


# ---------------------------------------------------------------------------
# The loader
# ---------------------------------------------------------------------------


def _scenario(calls: list[dict], *more_turns: list[dict], faults: list[dict] | None = None) -> dict:
    turns = [{"chat": "chat-1", "tool_calls": calls}] + [{"chat": "chat-1", "tool_calls": t} for t in more_turns]
    return {"name": "dups", "turns": turns, "faults": faults or []}


COPIES = [
    {"id": "a", "tool": "execute", "command": "make test", "timeout": "5m"},
    {"id": "b", "provider_id": "a", "tool": "execute", "command": "make test", "timeout": "20m"},
]


def _refusal(data: dict) -> str:
    with pytest.raises(ScenarioError) as err:
        from_dict(data, "dups.toml")
    line = str(err.value)
    assert "\n" not in line
    return line


def test_calls_of_one_turn_may_share_a_provider_id():
    scenario = from_dict(_scenario(COPIES))
    (turn,) = scenario.turns
    assert [tc.provider for tc in turn.tool_calls] == ["a", "a"]


def test_a_provider_id_of_an_earlier_turn_is_refused():
    line = _refusal(_scenario(COPIES[:1], [{"id": "c", "provider_id": "a", "tool": "execute", "command": "ls"}]))
    assert "turns[1].tool_calls[0].provider_id" in line and "earlier assistant message" in line


@pytest.mark.parametrize("fault, field", [
    ({"when": {"event": "process_started", "tool_call": "b"}, "kind": "interrupt"}, "faults[0].when.tool_call"),
    ({"kind": "lose", "message": {"route": "start", "tool_call": "a"}}, "faults[0].message.tool_call"),
])
def test_a_trigger_or_message_naming_a_copy_is_refused(fault, field):
    """The copies' messages carry the same headers: nothing could tell which is meant."""
    line = _refusal(_scenario(COPIES, faults=[fault]))
    assert field in line and "same assistant message" in line


def test_a_message_of_copies_is_matched_by_route_and_nth():
    from_dict(_scenario(COPIES, faults=[{"kind": "lose", "message": {"route": "start", "nth": 2}}]))


def test_a_crafted_start_of_a_copy_with_other_arguments_is_refused():
    """chatd's own request for a copy is built from its arguments: with copies that differ,
    the request a fault names is ambiguous; a cancel (by UUID alone) is not."""
    other = [COPIES[0], {**COPIES[1], "command": "make lint"}]
    start = {"at": "30s", "kind": "request", "name": "again", "route": "start", "tool_call": "b"}
    line = _refusal(_scenario(other, faults=[start]))
    assert "faults[0].tool_call" in line and "ambiguous" in line
    from_dict(_scenario(other, faults=[{**start, "route": "cancel"}]))
    same = [COPIES[0], {**COPIES[1], "timeout": "5m"}]
    from_dict(_scenario(same, faults=[start]))


def test_one_command_has_one_script():
    """The world runs one script per command: a second runs_for for it would be dropped."""
    calls = [{**COPIES[0], "runs_for": "5s"}, {**COPIES[1], "runs_for": "9s"}]
    line = _refusal(_scenario(calls))
    assert "turns[0].tool_calls[1].runs_for" in line and "one script per command" in line


# ---------------------------------------------------------------------------
# What chatd and the agent do (the shipped scenarios' runs)
# ---------------------------------------------------------------------------


def _run(name: str, variant: str):
    return run_scenario(load(SCENARIOS / f"{name}.toml"), variant)


def _sends(run, route: str, task_suffix: str = "") -> list[dict]:
    return [r for r in run.world.trace if r.get("kind") == "send" and r.get("route") == route
            and str(r.get("req", "")).split("/a")[0].endswith(task_suffix)]


def test_copies_that_qualify_get_one_process_and_one_cancel():
    """Contract: both copies' starts go out with one identity, the agent runs one process
    (the other start is replayed), and the interrupt sends ONE cancel whose answer both
    copies commit, each result marked with its copy."""
    run = _run("dup_ids_same_call_interrupted", "contract")
    trace = run.world.trace
    starts = _sends(run, "start")
    assert len(starts) == 2 and {s["tool_call"] for s in starts} == {"toolu_01"}
    assert [r for r in trace if r.get("note") == "replayed"]
    assert len(_sends(run, "cancel")) == 1
    results = [r for r in trace if r.get("truth") == "result_committed"]
    assert [(r["result_kind"], r["copy"]) for r in results] == [("canceled", 0), ("canceled", 1)]
    assert len({r["process_id"] for r in results}) == 1


def test_copies_that_qualify_run_twice_under_today():
    run = _run("dup_ids_same_call_interrupted", "today")
    assert len([r for r in run.world.trace if r.get("truth") == "process_started"]) == 2
    (v,) = [v for v in run.violations if v.property == "at_most_once"]  # once for the UUID, not per copy
    assert len(v.evidence) == 2


@pytest.mark.parametrize("name", ["dup_ids_timeouts_differ_no_cancel", "dup_ids_tools_differ_no_cancel"])
def test_copies_whose_cancels_differ_get_no_cancel_and_no_dial(name):
    """Contract: no call of the ID gets a cancel, so the interrupt task neither reads the
    database clock nor dials; each copy keeps the generic result while the process runs
    on, which is the residual risk, not a new finding."""
    run = _run(name, "contract")
    trace = run.world.trace
    interrupt_tasks = {r["task"] for r in trace if r.get("note") == "task_started" and r.get("result_kind") == "interrupt"}
    assert interrupt_tasks
    for task in interrupt_tasks:
        assert not [r for r in trace if r.get("kind") == "send" and str(r.get("req", "")).startswith(task + "/")]
    assert not [r for r in trace if r.get("note") == "cancels_selected"]
    results = [r["result_kind"] for r in trace if r.get("truth") == "result_committed"]
    assert results == ["interrupted_generic", "interrupted_generic"]
    assert {v.residual_risk for v in run.violations} == {"duplicate_ids_without_cancel"}


def test_a_copy_with_another_input_is_refused_by_the_agent():
    """Contract: the second start carries the same tool call (one record) with another body:
    409 input_mismatch, committed as that copy's failed start; one process."""
    run = _run("dup_ids_arguments_differ", "contract")
    trace = run.world.trace
    replies = [r for r in trace if r.get("kind") == "reply" and r.get("route") == "start"]
    assert sorted(r["status"] for r in replies) == [200, 409]
    rows = {row["id"]: row for row in run.tool_call_rows()}
    assert [r["kind"] for r in rows["toolu_01"]["results"]] == ["completed"]
    assert [r["kind"] for r in rows["toolu_01_lint"]["results"]] == ["failed"]
    assert rows["toolu_01"]["uuid"] == rows["toolu_01_lint"]["uuid"]
    assert len([r for r in trace if r.get("truth") == "process_started"]) == 1


def test_rows_name_each_copy_by_its_scenario_id():
    run = _run("dup_ids_same_call_interrupted", "contract")
    rows = run.tool_call_rows()
    assert [(r["id"], r["provider_id"], len(r["results"])) for r in rows] == [
        ("toolu_01", "toolu_01", 1), ("toolu_01_again", "toolu_01", 1)]
    json.dumps(rows)


# ---------------------------------------------------------------------------
# The properties, on hand-written traces
# ---------------------------------------------------------------------------

CHAT = "11111111-1111-4111-8111-111111111111"
MSG = 2
U = tool_call_uuid(CHAT, MSG, "toolu_01")


def _final(*calls):
    msg = SimpleNamespace(role="assistant", id=MSG, tool_calls=tuple(calls))
    chat = SimpleNamespace(status="waiting", messages=(msg,))
    return SimpleNamespace(config=system.WorldConfig(chatd_rules=chatd.CONTRACT), db=SimpleNamespace(chats={CHAT: chat}))


def _fg(timeout: str):
    return chattool.ToolCall("toolu_01", "execute", json.dumps({"command": "make", "timeout": timeout}))


def _rec(t_ms, node, kind, **fields):
    return {"t_ms": t_ms, "node": node, "clock_ms": t_ms, "kind": kind, **fields}


def _start(t_ms, pid):
    return _rec(t_ms, "agent", "truth", truth="process_started", uuid=U, pid=pid, incarnation=1,
                cause="replica-1-w1/t3/a1/c0:r1", chat_id=CHAT, command="make")


def _result(t_ms, kind, copy, task="generation"):
    return _rec(t_ms, "replica-1", "truth", truth="result_committed", uuid=U, provider_id="toolu_01", chat_id=CHAT,
                result_kind=kind, replica="replica-1", task=task, generation_attempt=1, exit_code=None, copy=copy)


def _found(trace, final, name):
    return [v for v in props.evaluate(trace, final).violations if v.property == name]


def test_at_most_once_counts_the_copies_of_a_uuid_once():
    final = _final(_fg("10s"), _fg("10s"))
    assert _found([_start(1_000, "p1")], final, "at_most_once") == []
    (v,) = _found([_start(1_000, "p1"), _start(1_001, "p2")], final, "at_most_once")
    assert v.uuid == U and len(v.evidence) == 2


def test_each_copy_has_one_result_of_its_own():
    final = _final(_fg("10s"), _fg("10s"))
    done = [_start(1_000, "p1"), _rec(5_000, "agent", "truth", truth="process_exited", pid="p1", incarnation=1,
                                      exit_code=0)]
    both = [_result(6_000, "completed", 0), _result(6_000, "completed", 1)]
    assert _found(done + both, final, "one_result") == []
    assert _found(done + both, final, "one_result_eventually") == []
    (v,) = _found(done + both + [_result(7_000, "completed", 1)], final, "one_result")
    assert v.at_ms == 7_000
    (v,) = _found(done + both[:1], final, "one_result_eventually")
    assert v.uuid == U


@pytest.mark.parametrize("timeouts, risk", [(("10m", "20m"), "duplicate_ids_without_cancel"), (("10m", "10m"), None)])
def test_a_process_left_by_an_interrupt_is_the_residual_risk_only_when_the_copies_get_no_cancel(timeouts, risk):
    """Copies whose cancels differ get none (Go's interruptedToolCalls): the foreground
    process left running is the documented price. Copies that qualify get a cancel, so the
    same trace is a new finding."""
    final = _final(*(_fg(t) for t in timeouts))
    trace = [_start(1_000, "p1"), _result(60_000, "interrupted_generic", 0, "interrupt"),
             _result(60_000, "interrupted_generic", 1, "interrupt")]
    found = _found(trace, final, "interrupt_stops_foreground")
    assert found and {v.residual_risk for v in found} == {risk}
