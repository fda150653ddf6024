"""Classification (model/properties/classify.py ``classify``, issue 12): every residual risk is
recognised from the records that prove it, for every tool kind, and only from them.

Each case runs a real world, checks the class, then takes away (or bends) the one record
that proves it and checks the violation turns into a new finding: a classifier that
accepted anything would fail these.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest

from toolcall_sim.model import properties as props
from toolcall_sim.drivers import swarm
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict, load

ROOT = Path(__file__).resolve().parent.parent

# Swarm seed 16211 under contract, minimized (the file ``toolcall-sim swarm --seeds 1
# --first-seed 16211`` writes): a resent edit carrying age 58 s is delayed 68 s, past an
# agent restart, and is applied again by the new agent (docs/contract.md D7,
# the age check is best effort).
SEED_16211 = tomllib.loads('''
name = "swarm-16211"
seed = 16211
until = "5m"
[world]
replicas = 2
[world.files]
"/home/coder/src/file2.go" = "package src\\nvar v0 = 22\\nvar v1 = 93\\n"
[network]
latency = { min = "19ms", max = "19ms" }
[[turns]]
chat = "chat-1"
tool_calls = [
  { id = "toolu_02", tool = "edit_files", path = "/home/coder/src/file2.go", edits = [{ search = "var v1 = 93", replace = "var v1 = 93 // edited by toolu_02" }] },
  { id = "toolu_03", tool = "execute", command = "pytest -q --job=3", runs_for = "45m23s866ms", timeout = "1h" },
]
[[faults]]
kind = "ownership_change"
chat = "chat-1"
at = "7s860ms"
[[faults]]
kind = "agent_restart"
downtime = "0s"
when = { event = "request_sent", route = "start", tool_call = "toolu_03", nth = 2 }
[[faults]]
kind = "delay"
message = { route = "edit", tool_call = "toolu_02", direction = "request", nth = 2 }
by = "1m8s297ms"
''')


def _as_write(data: dict) -> dict:
    """The same world with toolu_02 a write_file of the same path."""
    data = copy.deepcopy(data)
    call = data["turns"][0]["tool_calls"][0]
    data["turns"][0]["tool_calls"][0] = {"id": call["id"], "tool": "write_file", "path": call["path"],
                                         "content": "package src\n"}
    data["faults"][2]["message"]["route"] = "write"
    return data


def _reclassify(result, mutate) -> list:
    """The run's violations after ``mutate(trace)`` changed a copy of its trace."""
    trace = copy.deepcopy(result.world.trace)
    mutate(trace)
    return props.evaluate(trace, result.world.system).violations


def _classes(violations, prop: str) -> set:
    return {v.residual_risk for v in violations if v.property == prop}


def test_seed_16211_is_the_age_check_risk_not_a_new_finding():
    """The issue's false finding, pinned as the seed's minimized world (issue 34's stories
    changed what seed 16211 draws): no new finding on contract, the age-check risk counted."""
    result = run_scenario(from_dict(SEED_16211), "contract")
    assert [v for v in result.violations if v.residual_risk is None] == []
    assert "age_check_best_effort" in {v.residual_risk for v in result.violations}


@pytest.mark.parametrize("shape", ["edit_files", "write_file"])
def test_duplicate_edit_across_a_restart_is_classified_from_its_incarnations(shape):
    """An edit or a write applied once by each of two agent lifetimes, the second by a
    request only its delay let through: age_check_best_effort. The edit records carry
    their incarnation; with both in one lifetime the same trace is a new finding."""
    data = SEED_16211 if shape == "edit_files" else _as_write(SEED_16211)
    result = run_scenario(from_dict(data), "contract")
    edits = [r for r in result.world.trace if r.get("truth") == "edit_applied"]
    assert [r["tool"] for r in edits] == [shape, shape]
    assert [r["incarnation"] for r in edits] == [1, 2]
    assert _classes(result.violations, "at_most_once") == {"age_check_best_effort"}
    assert _classes(result.violations, "retry_changes_nothing") == {"age_check_best_effort"}

    def one_lifetime(trace):
        for r in trace:
            if r.get("truth") == "edit_applied":
                r["incarnation"] = 1
    assert _classes(_reclassify(result, one_lifetime), "at_most_once") == {None}


def test_duplicate_edit_without_the_delay_is_a_new_finding():
    """The proof needs the age the request carried: without its send record the second
    edit is unexplained."""
    result = run_scenario(from_dict(SEED_16211), "contract")
    second = [r for r in result.world.trace if r.get("truth") == "edit_applied"][1]

    def no_send(trace):
        trace[:] = [r for r in trace if not (r.get("kind") == "send" and r.get("req") == second["cause"])]
    assert _classes(_reclassify(result, no_send), "at_most_once") == {None}


def test_unknown_cancel_is_matched_with_its_reason():
    """unknown_cancel_work_later needs the interrupt's unknown result *and* a reason that
    says the cancel got no sure answer; the same trace with another reason (or none) is
    a new finding."""
    result = run_scenario(load(ROOT / "scenarios" / "rr_cancel_within_margin_after_restart.toml"), "contract")
    prop = "canceled_before_received_never_runs"
    assert _classes(result.violations, prop) == {"unknown_cancel_work_later"}
    interrupt = next(r for r in result.world.trace
                     if r.get("truth") == "result_committed" and r.get("task") == "interrupt")
    assert interrupt["result_kind"] == "unknown" and interrupt["reason"] in props.CANCEL_UNSURE_REASONS

    for reason in (None, "not_received"):
        def other_reason(trace, reason=reason):
            for r in trace:
                if r.get("truth") == "result_committed" and r.get("task") == "interrupt":
                    r["reason"] = reason
        assert _classes(_reclassify(result, other_reason), prop) == {None}, reason


def test_unknown_cancel_with_a_recorded_cancel_is_a_new_finding():
    """US10's never-runs promise holds once the agent recorded the cancel: a late run
    after a ``cancel_never_received`` mark is not this risk."""
    result = run_scenario(load(ROOT / "scenarios" / "rr_cancel_within_margin_after_restart.toml"), "contract")
    interrupt_at = next(i for i, r in enumerate(result.world.trace)
                        if r.get("truth") == "result_committed" and r.get("task") == "interrupt")

    def recorded(trace):
        rec = trace[interrupt_at]
        trace.insert(interrupt_at, {"kind": "note", "note": "cancel_never_received", "uuid": rec["uuid"],
                                    "node": "agent", "t_ms": rec["t_ms"], "clock_ms": rec["clock_ms"]})
    classes = _classes(_reclassify(result, recorded), "canceled_before_received_never_runs")
    assert "unknown_cancel_work_later" not in classes


@pytest.mark.parametrize("tool", ["edit_files", "write_file"])
def test_unknown_cancel_of_a_file_tool(tool, tmp_path):
    """The same risk for the file tools: the restart 1.8 s before the commit, the cancel
    within the margin, the late edit or write still applied."""
    data = tomllib.loads((ROOT / "scenarios" / "rr_cancel_within_margin_after_restart.toml").read_text())
    call = {"id": "toolu_01", "tool": tool, "path": "/home/coder/a.txt"}
    if tool == "edit_files":
        call["edits"] = [{"search": "a", "replace": "b"}]
        data["world"] = {"files": {"/home/coder/a.txt": "a\n"}}
    else:
        call["content"] = "b\n"
    data["turns"][0]["tool_calls"] = [call]
    route = "edit" if tool == "edit_files" else "write"
    data["faults"][1]["when"]["route"] = route
    data["faults"][2]["message"]["route"] = route
    data.pop("expect")
    result = run_scenario(from_dict(data), "contract")
    prop = "canceled_before_received_never_runs"
    assert _classes(result.violations, prop) == {"unknown_cancel_work_later"}, result.violations


def test_slow_spawn_timed_out_is_a_known_finding_proven_by_its_record():
    """The contract finding that stands (scenarios/finding_slow_spawn_timed_out.toml) is
    reported by name as a known finding, still a violation of truthful_result; without
    the agent's ``run_pending`` record of the slow start it is a new finding."""
    result = run_scenario(load(ROOT / "scenarios" / "finding_slow_spawn_timed_out.toml"), "contract")
    found = [v for v in result.violations if v.property == "truthful_result"]
    assert [v.residual_risk for v in found] == ["run_age_counts_from_record"]
    assert props.is_known_finding(found[0]) and found[0].to_json()["known_finding"] is True
    assert result.expectation_failures() == []  # the scenario expects truthful_result as a violation

    def no_record(trace):
        trace[:] = [r for r in trace if r.get("note") != "run_pending"]
    assert _classes(_reclassify(result, no_record), "truthful_result") == {None}


def _drop_never_received(trace):
    trace[:] = [r for r in trace if r.get("note") != "cancel_never_received"]


def _headers_sent(trace):
    for r in trace:
        if r.get("truth") in ("process_started", "edit_applied"):
            r["cause_headers"] = True


@pytest.mark.parametrize("scenario,prop,risk,take_away", [
    ("rr_delayed_cancel_after_restart", "truthful_result", "age_check_best_effort", _drop_never_received),
    ("rr_rollout_mixed_versions", "truthful_result", "mixed_coderd_versions", _headers_sent),
    ("rr_rollout_mixed_versions", "interrupt_stops_foreground", "mixed_coderd_versions", _headers_sent),
], ids=["delayed cancel without its never-received mark", "rollout with headers (truthful)",
        "rollout with headers (interrupt)"])
def test_each_shipped_risk_loses_its_class_without_its_proof(scenario, prop, risk, take_away):
    """The residual-risk scenarios: classified as their risk, and a new finding once the
    record that proves the risk is taken away."""
    result = run_scenario(load(ROOT / "scenarios" / f"{scenario}.toml"), "contract")
    # rr_delayed_cancel_after_restart also holds chat-2's known finding
    # read_failure_after_restart_is_failed, whose proof the take-away leaves alone.
    other = {"read_failure_after_restart_is_failed"}
    assert _classes(result.violations, prop) - other == {risk}
    assert _classes(_reclassify(result, take_away), prop) - other == {None}


# Swarm seeds whose worlds reach each class (found with the commands in the report; a
# change to the generator or the model may move them: re-find and re-pin).
KNOWN_FINDING_SEED = 118  # (46 before issue 34's stories changed every seed's draw)


def test_swarm_samples_the_known_finding_and_reports_it_by_name():
    """The generator no longer steers clear of the slow-spawn timed_out: a seed reaches
    it, and it is counted as a known finding, not a failure nor a residual risk."""
    report = swarm.run_swarm(KNOWN_FINDING_SEED, 1, "contract")
    assert report["failures"] == []
    assert report["known_findings"] == {"run_age_counts_from_record": 1}
    assert "run_age_counts_from_record" not in report["residual_risks"]
    assert "known findings: run_age_counts_from_record=1" in swarm.format_report(report)


# A sample of the 2,000 seeds in two windows (each seed's outcome depends only on the
# seed, so a window checks what the same seeds check in one run of 2,000): seeds 1-150,
# which holds KNOWN_FINDING_SEED, and 1031-1130, past the 1,030 seeds `toolcall-sim
# check` runs in CI (scenarios/suites/ci.toml's [[swarm]] windows of contract). The whole
# 2,000 (19 s of the suite before, the largest sweep in it) is one command:
# `toolcall-sim swarm --variant contract --seeds 2000 --workers 2`.
CONTRACT_SEED_WINDOWS = [(1, 150), (1031, 100)]


@pytest.mark.slow
@pytest.mark.parametrize("first_seed,seeds", CONTRACT_SEED_WINDOWS, ids=lambda x: str(x))
def test_two_thousand_contract_seeds_have_no_new_finding(first_seed, seeds):
    """The issue's goal on a budget: swarm seeds of contract, 0 new findings, and the
    known finding is sampled among them (in the window of KNOWN_FINDING_SEED, which
    reaches it). 250 of the 2,000 seeds here (CONTRACT_SEED_WINDOWS says which and why);
    CI's `toolcall-sim check` runs seeds 1-1030, and the command there the 2,000."""
    report = swarm.run_swarm(first_seed, seeds, "contract")
    assert report["seeds_run"] == seeds
    assert report["failures"] == [], [(f["seed"], f["property"], f["detail"]) for f in report["failures"]]
    if first_seed <= KNOWN_FINDING_SEED < first_seed + seeds:
        assert report["known_findings"].get("run_age_counts_from_record", 0) > 0


def test_contract_seed_windows_are_the_two_thousand_seeds():
    """The windows are a sample of the 2,000 seeds, one of them holding the known
    finding's seed and one past the seeds CI's check runs."""
    seeds = [s for first, n in CONTRACT_SEED_WINDOWS for s in range(first, first + n)]
    assert len(set(seeds)) == len(seeds) and set(seeds) <= set(range(1, 2001))
    assert KNOWN_FINDING_SEED in seeds and max(seeds) > 1030


# Swarm seed 56 under contract, minimized: a start handler slower than the command's
# timeout, then an interrupt. Run age counts from the record (model/agent/), so the
# agent's stop rule spares the process and chatd commits timed_out for a command that
# spawned 8.6 s before: the known finding, seen by US2's checker.
SEED_56 = tomllib.loads('''
name = "swarm-56"
seed = 56
until = "5m45s"
[world]
replicas = 2
handler_time = "1m44s143ms"
[network]
latency = { min = "15ms", max = "15ms" }
loss = 0.0
[[turns]]
chat = "chat-1"
tool_calls = [
  { id = "toolu_03", tool = "execute", command = "pytest -q --job=3", runs_for = "1m", timeout = "5m" },
  { id = "toolu_04", tool = "execute", command = "go test ./... --job=4", runs_for = "11m50s726ms", timeout = "30s" },
]
[[turns]]
chat = "chat-2"
tool_calls = [
  { id = "toolu_07", tool = "execute", command = "cargo check --job=6", runs_for = "2m57s483ms", timeout = "30m" },
]
[[faults]]
kind = "ownership_change"
chat = "chat-1"
when = { event = "request_sent", route = "start", tool_call = "toolu_03", nth = 1 }
offset = "2s29ms"
[[faults]]
kind = "interrupt"
chat = "chat-1"
when = { event = "process_started", route = "start", tool_call = "toolu_07", nth = 1 }
offset = "8s510ms"
''')


def test_interrupt_after_a_slow_spawn_is_the_known_finding():
    """The interrupt commits timed_out for a command whose record is past its timeout but
    whose process only just spawned: interrupt_stops_foreground fires and is classified as
    run_age_counts_from_record, not reported as new (the swarm seed has no failure); without
    the record that proves it (the start's run_pending note) it is a new finding."""
    assert swarm.run_seed(56, "contract", minimize_failures=False)["failure"] is None
    result = run_scenario(from_dict(SEED_56), "contract")
    assert _classes(result.violations, "interrupt_stops_foreground") == {"run_age_counts_from_record"}

    def no_pending(trace):
        trace[:] = [r for r in trace if r.get("note") != "run_pending"]
    assert _classes(_reclassify(result, no_pending), "interrupt_stops_foreground") == {None}


# ---------------------------------------------------------------------------
# Each recognizer on hand-built traces (issue 35): the rule's every condition, and its
# boundaries, on a few records of the shapes the world writes (tests/test_properties.py's
# helpers). A trace is read back from JSON as a saved one is, so its strings are never the
# model's own literals; the violations are the ones the checkers give (checks.py).
# ---------------------------------------------------------------------------

import json  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import test_properties as tp  # noqa: E402
from toolcall_sim.model import chattool  # noqa: E402
from toolcall_sim.model.identity import tool_call_uuid  # noqa: E402

MARGIN_MS = tp.final().config.chatd_rules.timing.agent_age_margin_ms  # the contract's 2 s (A2.3)
FG_TIMEOUT_MS = 10_000  # tp.FG's timeout argument


def _call(provider_id: str, tool: str, args: dict) -> chattool.ToolCall:
    """A committed tool call whose strings come from JSON, as a scenario's do."""
    return chattool.ToolCall(*json.loads(json.dumps([provider_id, tool, json.dumps(args)])))


EXEC = _call("toolu_01", "execute", {"command": "make", "timeout": "10s"})
SERVE = _call("toolu_02", "execute", {"command": "serve", "run_in_background": True})
WRITE = _call("toolu_03", "write_file", {"path": "/notes.txt", "content": "hi"})
EDIT = _call("toolu_04", "edit_files", {"path": "/a.txt", "edits": [{"search": "a", "replace": "b"}]})
NEXT = _call("toolu_09", "execute", {"command": "go vet"})  # the call of the chat's next message
NEXT_MSG = tp.MSG + 2  # after the edit's replacement user message (tp.edited: MSG + 1)
U, UB, UW = tp.U, tp.UB, tool_call_uuid(tp.CHAT, tp.MSG, "toolu_03")
UE = tool_call_uuid(tp.CHAT, tp.MSG, "toolu_04")
FILE_UUIDS = {"write_file": UW, "edit_files": UE}


def _final(*messages, deleted=()):
    """The final state the recognizers read: chatd's timing and each chat's committed
    assistant messages, given as (chat, message ID, tool calls); ``deleted`` the same for
    messages a message edit soft-deleted."""
    chats: dict = {}
    for where, given in (("messages", messages), ("deleted_messages", deleted)):
        for chat_id, msg_id, calls in given:
            chats.setdefault(chat_id, SimpleNamespace(status="waiting", messages=[], deleted_messages=[]))
            getattr(chats[chat_id], where).append(SimpleNamespace(role="assistant", id=msg_id, tool_calls=tuple(calls)))
    return SimpleNamespace(config=tp.final().config, db=SimpleNamespace(chats=chats))


ONE_MESSAGE = ((tp.CHAT, tp.MSG, (EXEC, SERVE, WRITE, EDIT)),)


def _class(prop, trace, evidence, uuid=U, messages=ONE_MESSAGE):
    """The class ``classify`` gives a ``prop`` violation of ``uuid`` proven by the given
    records of ``trace`` (None: a new finding)."""
    where = [next(i for i, rec in enumerate(trace) if rec is e) for e in evidence]
    ev = props.Evidence(json.loads(json.dumps(trace)), _final(*messages))
    v = props.Violation(prop, uuid, "toolu_01", 0, "hand-built", tuple(where))
    return props.classify(v, ev).residual_risk


def _up(t_ms, inc):
    return tp.r(t_ms, "agent", "agent_up", incarnation=inc)


def _send(t_ms, req, age_ms=None, route="start", tool_call="toolu_01", node="replica-1"):
    age = {} if age_ms is None else {"age_ms": age_ms}
    return tp.r(t_ms, node, "send", req=req, route=route, tool_call=tool_call, dst="agent", **age)


def _start(t_ms, cause, inc=1, pid="p1", uuid=U, command="make", headers=True):
    return dict(tp.start(t_ms, uuid=uuid, pid=pid, cause=cause, inc=inc, command=command), cause_headers=headers)


def _write(t_ms, cause, inc=1, uuid=UW):
    """An applied write (``uuid=UE``: an applied edit) of the file call with that UUID."""
    tool, path = ("write_file", "/notes.txt") if uuid == UW else ("edit_files", "/a.txt")
    return tp.r(t_ms, "agent", "truth", truth="edit_applied", uuid=uuid, path=path, tool=tool,
                cause=cause, cause_chat=tp.CHAT, incarnation=inc, cause_headers=True)


def _interrupt_result(t_ms, kind, reason=None, uuid=U):
    return dict(tp.result(t_ms, kind, uuid=uuid, task="interrupt"), reason=reason)


# -- age_check_best_effort: one side effect per agent lifetime, the later ones let through
#    only by their request's delay (A2.3: the agent acts when age < uptime - 2 s)

def _twice_across_restart(second_at_ms, second_inc=2, first_age_ms=100):
    """A start run by agent 1, and again by agent 2 (up at 1 s) for a request sent at
    150 ms carrying age 150 ms and delayed past the restart."""
    first, second = _send(100, "r1", first_age_ms), _send(150, "r2", 150)
    runs = [_start(200, "r1"), _start(second_at_ms, "r2", inc=second_inc, pid="p2")]
    return [_up(0, 1), first, second, runs[0], tp.down(1_000), _up(1_000, 2), runs[1]], runs


@pytest.mark.parametrize("prop", ["at_most_once", "retry_changes_nothing"])
def test_a_repeat_is_the_age_check_risk_only_past_the_margin(prop):
    """Agent 2 is up 1 s + 2 s + 150 ms later than the request's age allows at 3.15 s:
    at that instant the contract's agent refuses it (age == uptime - margin is not new),
    so a run then is a new finding; a millisecond later only the delay explains it."""
    _age_check_risk_only_past(_twice_across_restart, 1_000 + MARGIN_MS + 150, prop)


def _age_check_risk_only_past(build, boundary_ms: int, prop: str) -> None:
    """The age check's risk explains the trace ``build`` makes a millisecond past the
    boundary, and nothing explains it at the boundary itself."""
    trace, evidence = build(boundary_ms + 1)
    assert _class(prop, trace, evidence) == "age_check_best_effort"
    trace, evidence = build(boundary_ms)
    assert _class(prop, trace, evidence) is None


def test_a_repeat_needs_each_run_in_its_own_agent_lifetime():
    trace, runs = _twice_across_restart(9_000, second_inc=1)
    assert _class("at_most_once", trace, runs) is None
    trace, runs = _twice_across_restart(9_000)
    third = _start(9_500, "r2", inc=2, pid="p3")
    assert _class("at_most_once", trace + [third], runs + [third]) is None  # two in agent 2
    assert _class("at_most_once", trace, runs[1:]) is None  # one run repeats nothing
    third = _start(12_000, "r3", inc=3, pid="p3")
    trace = trace + [tp.down(9_000, 2), _up(9_000, 3), _send(9_000, "r3", 0), third]
    assert _class("at_most_once", trace, runs + [third]) == "age_check_best_effort"  # one per lifetime


def test_a_repeat_needs_only_the_later_runs_delayed():
    """The first run's request may carry no age (nothing to explain about it); a later
    run's request without its send record, or without an age, proves nothing."""
    trace, runs = _twice_across_restart(9_000, first_age_ms=None)
    assert _class("at_most_once", trace, runs) == "age_check_best_effort"
    trace, runs = _twice_across_restart(9_000)
    trace[2].pop("age_ms")
    assert _class("at_most_once", trace, runs) is None
    trace, runs = _twice_across_restart(9_000)
    assert _class("at_most_once", [r for r in trace if r.get("req") != "r2"], runs) is None


def test_a_repeat_reads_the_incarnation_of_the_agent_start_before_an_unmarked_run():
    """A run record without its incarnation belongs to the agent start before it."""
    trace, runs = _twice_across_restart(9_000)
    for run in runs:
        run.pop("incarnation")
    assert _class("at_most_once", trace, runs) == "age_check_best_effort"
    assert _class("at_most_once", [r for r in trace if r.get("kind") != "agent_up"], runs) is None


# -- age_check_best_effort carried by a cancel: an agent started after the call ran took
#    the delayed cancel for one of a call it never received

def _cancel_after_restart(mark_at_ms, tool="execute", run_at_ms=200, second_boot_ms=1_000, cause="r1"):
    """A call run by agent 1 at 0.2 s; its cancel (sent at 0.3 s, age 250 ms) reaches agent
    2 (up at 1 s), which records it never received; the interrupt commits not_run."""
    inc = 2 if run_at_ms >= second_boot_ms else 1
    uuid = FILE_UUIDS.get(tool, U)
    run = _start(run_at_ms, cause, inc=inc) if tool == "execute" else _write(run_at_ms, cause, inc=inc, uuid=uuid)
    mark = tp.note(mark_at_ms, "agent", "cancel_never_received", uuid=uuid, cause="c1")
    committed = _interrupt_result(mark_at_ms + 10, "not_run", uuid=uuid)
    trace = [_up(0, 1), _send(100, "r1", 50), _send(300, "c1", 250, route="cancel"),
             tp.down(second_boot_ms), _up(second_boot_ms, 2), mark, committed]
    return sorted(trace + [run], key=lambda r: r["t_ms"]), (run, committed)


@pytest.mark.parametrize("prop", ["truthful_result", "canceled_before_received_never_runs"])
def test_a_delayed_cancel_after_a_restart_is_the_age_check_risk_past_the_margin(prop):
    boundary = 1_000 + MARGIN_MS + 250
    trace, evidence = _cancel_after_restart(boundary + 1)
    assert _class(prop, trace, evidence) == "age_check_best_effort"
    trace, evidence = _cancel_after_restart(boundary)
    assert _class(prop, trace, evidence) is None


@pytest.mark.parametrize("tool", ["write_file", "edit_files"])
def test_a_delayed_cancel_after_a_restart_of_a_file_tool(tool):
    trace, evidence = _cancel_after_restart(5_000, tool=tool)
    assert _class("truthful_result", trace, evidence, uuid=FILE_UUIDS[tool]) == "age_check_best_effort"


def test_a_delayed_cancel_needs_the_run_before_it_in_an_earlier_lifetime():
    """A run after the never-received mark, or one by the agent that recorded the mark
    (no restart between them), is the contract's promise broken: a new finding (each run
    by a request that carried no age, which no delay explains)."""
    trace, evidence = _cancel_after_restart(5_000, run_at_ms=6_000, cause="r9")
    assert _class("truthful_result", trace, evidence) is None
    trace, evidence = _cancel_after_restart(5_000, run_at_ms=1_500, cause="r9")
    assert _class("truthful_result", trace, evidence) is None
    # a run after the mark is no older agent's, even when yet another agent ran it
    trace, evidence = _cancel_after_restart(5_000, run_at_ms=6_000, cause="r9")
    trace = sorted(trace + [tp.down(5_500, 2), _up(5_500, 3)], key=lambda r: r["t_ms"])
    evidence[0]["incarnation"] = 3
    assert _class("truthful_result", trace, evidence) is None
    trace, evidence = _cancel_after_restart(5_000)
    assert _class("truthful_result", [r for r in trace if r.get("note") != "cancel_never_received"],
                  evidence) is None


def test_a_delayed_cancel_is_judged_by_the_first_never_received_mark():
    """The first cancel the agent took as never received is the one the risk explains:
    one that arrived within the margin's reach proves nothing, whatever a later one did;
    and the run must be an earlier agent's than that first mark's, whatever agent took
    a later cancel as never received."""
    trace, evidence = _cancel_after_restart(2_000)  # 1 s of uptime: not past age + margin
    later = [tp.down(7_000, 2), _up(7_000, 3), _send(8_000, "c2", 100, route="cancel"),
             tp.note(10_000, "agent", "cancel_never_received", uuid=U, cause="c2")]  # past the margin
    assert _class("truthful_result", trace + later, evidence) is None
    for run_at_ms in (1_500, 6_000):  # agent 2's run, before or after its own first mark
        trace, evidence = _cancel_after_restart(5_000, run_at_ms=run_at_ms, cause="r9")
        assert _class("truthful_result", trace + later, evidence) is None, run_at_ms
    # agent 3's run, after agent 2's first mark and before agent 3's own
    trace, evidence = _cancel_after_restart(5_000, run_at_ms=7_500, cause="r9")
    evidence[0]["incarnation"] = 3
    trace = sorted(trace + later, key=lambda r: r["t_ms"])
    assert _class("truthful_result", trace, evidence) is None


# -- age_check_best_effort carried by the effect's own request: committed before the
#    agent that ran it booted, delayed past the margin

def _late_run_after_restart(run_at_ms, committed_at_ms=100, boots=(0, 1_000), tool="execute"):
    """The interrupt commits not_run at 0.6 s; a start (or write) sent at 0.5 s for a call
    committed at ``committed_at_ms``, delayed, runs on the agent started last."""
    sent = _send(500, "r1", 500 - committed_at_ms)
    committed = _interrupt_result(600, "not_run", uuid=U if tool == "execute" else UW)
    run = _start(run_at_ms, "r1", inc=len(boots)) if tool == "execute" else _write(run_at_ms, "r1", inc=len(boots))
    trace = [sent, committed]
    for inc, at in enumerate(boots, 1):
        trace += [tp.down(at, inc - 1), _up(at, inc)] if inc > 1 else [_up(at, inc)]
    trace = sorted(trace, key=lambda r: r["t_ms"]) + [run]
    return trace, (committed, run)


@pytest.mark.parametrize("prop", ["truthful_result", "canceled_before_received_never_runs",
                                  "interrupt_stops_foreground"])
def test_a_delayed_run_after_a_restart_is_the_age_check_risk_past_the_margin(prop):
    _age_check_risk_only_past(_late_run_after_restart, 1_000 + MARGIN_MS + 400, prop)


def test_a_delayed_write_after_a_restart_is_the_age_check_risk():
    trace, evidence = _late_run_after_restart(5_000, tool="write_file")
    assert _class("canceled_before_received_never_runs", trace, evidence, uuid=UW) == "age_check_best_effort"


def test_a_delayed_run_needs_a_restart_after_the_commit():
    """A call committed after the agent's restart, or before its first start with no
    restart at all, had its cancel reach the agent that ran it: no mark was lost. A
    commit in the restart's own millisecond is before it (the trace's milliseconds
    cannot order them, and with no latency the cancel can reach the old agent then)."""
    trace, evidence = _late_run_after_restart(5_000, committed_at_ms=1_001, boots=(0, 1_000))
    assert _class("truthful_result", trace, evidence) is None
    trace, evidence = _late_run_after_restart(5_000, committed_at_ms=100, boots=(1_000,))
    assert _class("truthful_result", trace, evidence) is None
    trace, evidence = _late_run_after_restart(5_000, committed_at_ms=1_000, boots=(0, 1_000))
    assert _class("truthful_result", trace, evidence) == "age_check_best_effort"


def test_a_delayed_run_needs_the_age_its_request_carried():
    trace, evidence = _late_run_after_restart(5_000)
    next(r for r in trace if r["kind"] == "send").pop("age_ms")
    assert _class("truthful_result", trace, evidence) is None
    trace, evidence = _late_run_after_restart(5_000)
    assert _class("truthful_result", [r for r in trace if r.get("kind") != "send"], evidence) is None


def test_a_delayed_run_needs_every_late_run_explained_and_one_at_least():
    trace, (committed, run) = _late_run_after_restart(5_000)
    early = _start(1_500, "r1", inc=2, pid="p2")  # 0.5 s after the restart: not past the margin
    assert _class("truthful_result", trace + [early], (committed, run, early)) is None
    assert _class("truthful_result", trace, (committed,)) is None


# -- unknown_cancel_work_later: the interrupt's unknown with a reason that says its cancel
#    got no sure answer, and no recorded cancel before the late run

def _unknown_then_run(reason="no_answer", kind="unknown", task="interrupt", mark_at_ms=None):
    first = dict(tp.result(1_000, kind, task=task), reason=reason)
    run = _start(2_000, "r1")
    trace = [_up(0, 1), first, run]
    if mark_at_ms is not None:
        trace.append(tp.note(mark_at_ms, "agent", "cancel_never_received", uuid=U, cause="c1"))
        trace.sort(key=lambda r: r["t_ms"])
    return trace, (first, run)


@pytest.mark.parametrize("reason", props.CANCEL_UNSURE_REASONS)
def test_an_unsure_interrupt_then_a_run_is_the_unknown_cancel_risk(reason):
    trace, evidence = _unknown_then_run(reason)
    assert _class("canceled_before_received_never_runs", trace, evidence) == "unknown_cancel_work_later"
    assert _class("truthful_result", trace, evidence) is None  # not a property this risk explains


@pytest.mark.parametrize("kind,task", [("not_run", "interrupt"), ("canceled", "interrupt"),
                                       ("unknown", "generation")])
def test_the_unknown_cancel_risk_needs_the_interrupts_unknown(kind, task):
    """A generation's unknown is no cancel's answer; an interrupt's sure answer is none."""
    trace, evidence = _unknown_then_run(kind=kind, task=task)
    assert _class("canceled_before_received_never_runs", trace, evidence) is None


def test_the_unknown_cancel_risk_needs_a_committed_result():
    """chatd's decision note before the commit (``chattool_result``) carries the same kind
    and reason, but only the commit is what the model was told."""
    trace, (first, run) = _unknown_then_run()
    decided = tp.note(1_000, "replica-1", "chattool_result", result_kind="unknown", reason="no_answer",
                      task="interrupt", uuid=U, provider_id="toolu_01", tool="execute")
    trace = [trace[0], decided, run]
    assert _class("canceled_before_received_never_runs", trace, (decided, run)) is None


def test_the_unknown_cancel_risk_ends_with_a_recorded_cancel():
    """A cancel the agent recorded before the late run carries US10's promise; one after
    it does not change what ran."""
    trace, evidence = _unknown_then_run(mark_at_ms=1_500)
    assert _class("canceled_before_received_never_runs", trace, evidence) is None
    trace, evidence = _unknown_then_run(mark_at_ms=2_500)
    assert _class("canceled_before_received_never_runs", trace, evidence) == "unknown_cancel_work_later"


def test_the_unknown_cancel_risk_explains_no_run_after_a_recorded_cancel():
    """The risk is work done while no cancel was recorded. A later run after the agent
    recorded the call's cancel (here agent 2, after a restart) breaks US10's promise
    itself, which this risk does not explain: a new finding, though an earlier run was
    the risk."""
    trace, (first, run) = _unknown_then_run()
    again = _start(5_000, "r2", inc=2, pid="p2")
    trace = trace + [tp.down(3_000, 1), _up(3_000, 2),
                     tp.note(4_000, "agent", "cancel_never_received", uuid=U, cause="c1"), again]
    assert _class("canceled_before_received_never_runs", trace, (first, run)) == "unknown_cancel_work_later"
    assert _class("canceled_before_received_never_runs", trace, (first, run, again)) is None


def test_the_unknown_cancel_risk_needs_the_late_run():
    trace, (first, run) = _unknown_then_run()
    assert _class("canceled_before_received_never_runs", trace, (first,)) is None
    assert _class("canceled_before_received_never_runs", trace, (first, run), uuid=None) is None


# -- mixed_coderd_versions: the run was an old coderd's request without headers

def _header_less_run(headers=False):
    mark = tp.note(1_000, "agent", "cancel_never_received", uuid=U, cause="c1")
    run = _start(2_000, "r1", headers=headers)
    return [_up(0, 1), mark, run, tp.result(3_000, "not_run", task="interrupt")], (mark, run)


@pytest.mark.parametrize("prop", ["truthful_result", "canceled_before_received_never_runs",
                                  "interrupt_stops_foreground"])
def test_a_header_less_run_after_a_never_received_cancel_is_the_rollout_risk(prop):
    trace, evidence = _header_less_run()
    assert _class(prop, trace, evidence) == "mixed_coderd_versions"


@pytest.mark.parametrize("headers", [True, None])
def test_the_rollout_risk_needs_a_run_known_to_carry_no_headers(headers):
    trace, evidence = _header_less_run(headers)
    if headers is None:
        evidence[1].pop("cause_headers")
    assert _class("canceled_before_received_never_runs", trace, evidence) is None


def test_the_rollout_risk_needs_the_never_received_cancel_and_the_run():
    trace, (mark, run) = _header_less_run()
    assert _class("canceled_before_received_never_runs", trace[:1] + trace[2:], (run,)) is None
    assert _class("canceled_before_received_never_runs", trace, (mark,)) is None


# -- run_age_counts_from_record: the timed_out commit, proven by the record's age

PENDING_AT_MS = 1_000


def _slow_spawn(commit_at_ms, kind="timed_out", uuid=U, command="make", pending_cause="r1",
                pending_uuid=U, run_at_ms=9_000, waits=0, pending_note="run_pending"):
    """The start request's record at 1 s (``run_pending``, first in the trace), ``waits``
    other requests waiting on it, the process spawned by the slow handler at 9 s, chatd's
    commit at ``commit_at_ms``."""
    pending = tp.note(PENDING_AT_MS, "agent", pending_note, uuid=pending_uuid, cause=pending_cause, route="start")
    waiting = [tp.note(PENDING_AT_MS + 1 + n, "agent", "waiting", uuid=uuid, cause=f"w{n}") for n in range(waits)]
    run = _start(run_at_ms, "r1", uuid=uuid, command=command)
    committed = tp.result(commit_at_ms, kind, uuid=uuid, provider="toolu_02" if uuid == UB else "toolu_01")
    trace = sorted([pending, *waiting, run, committed], key=lambda r: r["t_ms"])
    return trace, (run, committed)


@pytest.mark.parametrize("prop", ["truthful_result", "interrupt_stops_foreground"])
@pytest.mark.parametrize("waits", [0, 1, 2, 5])
def test_a_timed_out_commit_when_the_record_reached_the_timeout_is_the_known_finding(prop, waits):
    """Record age at the commit == the timeout: the record has reached it (chatd's
    timed_out, and truthful_result's own test, are age >= timeout). The record is found
    however many records lie between it and the start."""
    trace, evidence = _slow_spawn(PENDING_AT_MS + FG_TIMEOUT_MS, waits=waits)
    assert _class(prop, trace, evidence) == "run_age_counts_from_record"
    trace, evidence = _slow_spawn(PENDING_AT_MS + FG_TIMEOUT_MS - 1, waits=waits)
    assert _class(prop, trace, evidence) is None


@pytest.mark.parametrize("kind", ["completed", "unknown", "failed"])
def test_the_record_age_finding_needs_a_timed_out_commit(kind):
    trace, evidence = _slow_spawn(12_000, kind=kind)
    assert _class("truthful_result", trace, evidence) is None
    # chatd's decision note before a commit carries the kind too: it is no commit
    trace, (run, committed) = _slow_spawn(12_000)
    decided = tp.note(12_000, "replica-1", "chattool_result", result_kind="timed_out", provider_id="toolu_01",
                      tool="execute", reason="")
    assert _class("truthful_result", trace + [decided], (run, decided)) is None


def test_the_record_age_finding_needs_a_foreground_command():
    trace, evidence = _slow_spawn(12_000, uuid=UB, command="serve", pending_uuid=UB)
    assert _class("truthful_result", trace, evidence, uuid=UB) is None
    trace, (run, committed) = _slow_spawn(12_000)
    note = tp.note(12_000, "agent", "left_running", pid="p1")  # evidence ending in no commit
    assert _class("truthful_result", trace + [note], (run, note)) is None
    assert _class("truthful_result", trace, (run, committed), uuid=None) is None
    assert _class("truthful_result", trace, ()) is None


@pytest.mark.parametrize("bent", [{"pending_cause": "r0"}, {"pending_cause": "r2"},
                                  {"pending_uuid": "00000000-0000-4000-8000-000000000000"},
                                  {"pending_uuid": "ffffffff-ffff-4fff-8fff-ffffffffffff"},
                                  {"pending_note": "waiting"}, {"pending_note": "published"}])
def test_the_record_age_finding_needs_the_pending_record_of_the_same_request_and_call(bent):
    """The record the run age counts from is the one the start's own request created
    (``run_pending``, its cause and the call's UUID): another request's or another call's
    record, or a request that only waited on a record, proves nothing."""
    trace, evidence = _slow_spawn(12_000, **bent)
    assert _class("truthful_result", trace, evidence) is None


def test_the_record_age_finding_reads_only_a_record_made_before_the_start():
    """A pending record is made before its handler starts the process; one after the start
    (right after it, or the trace's last record) is not the start's."""
    trace, (run, committed) = _slow_spawn(12_000, waits=2)
    pending, rest = trace[0], trace[1:]
    assert pending["note"] == "run_pending" and rest[2] is run
    assert _class("truthful_result", rest + [pending], (run, committed)) is None
    assert _class("truthful_result", rest[:3] + [pending] + rest[3:], (run, committed)) is None


def test_the_record_age_finding_needs_the_start_before_the_commit():
    trace, evidence = _slow_spawn(12_000, run_at_ms=13_000)
    assert trace[-1] is evidence[0]
    assert _class("truthful_result", trace, evidence) is None


def test_the_record_age_finding_looks_at_every_start():
    """An earlier start of the call with no pending record (a header-less one) does not
    hide the slow one's."""
    trace, (run, committed) = _slow_spawn(12_000)
    other = _start(500, "r0", pid="p0")
    assert _class("truthful_result", [other] + trace, (other, run, committed)) == "run_age_counts_from_record"


# -- read_failure_after_restart_is_failed: failed, exit -1, after the restart's kill

def _read_failure(kind="failed", code=-1, by="shutdown"):
    kill = tp.killed(5_000, by=by)
    committed = tp.result(6_000, kind, code=code)
    return [_up(0, 1), _start(100, "r1"), kill, tp.down(5_000), _up(5_000, 2), committed], (kill, committed)


def test_a_failed_result_after_a_restart_killed_the_process_is_the_known_finding():
    trace, evidence = _read_failure()
    assert _class("truthful_result", trace, evidence) == "read_failure_after_restart_is_failed"
    assert _class("truthful_result", trace, evidence[1:]) is None  # no kill before it
    assert _class("truthful_result", trace, evidence, uuid=None) is None
    # the kill anywhere before the commit
    assert _class("truthful_result", trace, (trace[1], *evidence)) == "read_failure_after_restart_is_failed"


@pytest.mark.parametrize("bent", [{"code": 1}, {"code": None}, {"kind": "unknown"}, {"kind": "timed_out"},
                                  {"kind": "canceled"}, {"kind": "completed"}, {"by": "cancel"}, {"by": "signal"}])
def test_the_read_failure_finding_needs_failed_with_no_exit_code_after_a_shutdown_kill(bent):
    trace, evidence = _read_failure(**bent)
    assert _class("truthful_result", trace, evidence) is None


# -- kill_failed_reported_interrupted: the agent's stop_failed between start and result

def _kill_failed(note_at_ms=1_000, pid="p1", note="stop_failed"):
    """A start, the cancel's arrival, the agent's note on the stop (``stop_failed``: the
    kill failed) and the interrupt's generic result."""
    run = _start(100, "r1")
    arrived = tp.r(900, "agent", "truth", truth="request_received", route="cancel", cause="c1")
    failed = tp.note(note_at_ms, "agent", note, pid=pid)
    committed = _interrupt_result(1_100, "interrupted_generic")
    return sorted([_up(0, 1), run, arrived, failed, committed], key=lambda r: r["t_ms"]), (run, committed)


def test_an_interrupt_whose_kill_failed_is_the_known_finding():
    trace, evidence = _kill_failed()
    assert _class("interrupt_stops_foreground", trace, evidence) == "kill_failed_reported_interrupted"
    assert _class("truthful_result", trace, evidence) is None
    assert _class("interrupt_stops_foreground", trace, evidence[1:]) is None
    assert _class("interrupt_stops_foreground", trace, evidence, uuid=None) is None


@pytest.mark.parametrize("bent", [{"pid": "p2"}, {"pid": "p0"}, {"note_at_ms": 50}, {"note_at_ms": 2_000},
                                  {"note": "left_running"}, {"note": "process_reaped"}])
def test_the_kill_failed_finding_needs_the_processs_stop_failed_between_start_and_result(bent):
    trace, evidence = _kill_failed(**bent)
    assert _class("interrupt_stops_foreground", trace, evidence) is None


def test_the_kill_failed_finding_reads_start_first_and_result_last():
    trace, (run, committed) = _kill_failed(note_at_ms=1_050)
    between = tp.note(1_020, "agent", "cancel_received", uuid=U)
    trace = sorted(trace + [between], key=lambda r: r["t_ms"])
    assert _class("interrupt_stops_foreground", trace, (run, between, committed)) == "kill_failed_reported_interrupted"


# -- stale_request_after_edit: sent before the edit, arrived before the next message did

OTHER_CHAT_EDIT = ((tp.OTHER, tp.MSG, (EXEC,)), (tp.CHAT, tp.MSG, (EXEC,)), (tp.CHAT, NEXT_MSG, (NEXT,)))
U_OTHER = tool_call_uuid(tp.OTHER, tp.MSG, "toolu_01")
U_NEXT = tool_call_uuid(tp.CHAT, NEXT_MSG, "toolu_09")


def _stale(sent_at_ms=100, node="replica-1", arrived_at_ms=900, extra=(), chat=tp.CHAT, deliveries=0):
    """A start sent at ``sent_at_ms``, the edit at 0.5 s discarding its branch, its arrival
    at ``arrived_at_ms`` and its run at 1 s; ``extra`` records join in time order, after
    ``deliveries`` records of the network at 50 ms (a long trace's indexes)."""
    uuid = U if chat == tp.CHAT else U_OTHER
    edit = tp.edited(500, chat=chat)
    run = _start(1_000, "r1", uuid=uuid)
    network = [{"kind": "action", "t_ms": 50, "action": "deliver", "seq": n} for n in range(deliveries)]
    trace = [_up(0, 1), *network, _send(sent_at_ms, "r1", 50, node=node), edit, run, *extra]
    if arrived_at_ms is not None:
        trace.append(tp.r(arrived_at_ms, "agent", "truth", truth="request_received", route="start", cause="r1"))
    trace.sort(key=lambda r: r["t_ms"])
    arrived = [r for r in trace if r.get("truth") == "request_received"]
    return trace, (edit, *arrived, run)


def _stale_class(trace, evidence, chat=tp.CHAT):
    return _class("canceled_before_received_never_runs", trace, evidence, uuid=U if chat == tp.CHAT else U_OTHER,
                  messages=OTHER_CHAT_EDIT)


@pytest.mark.parametrize("deliveries", [0, 300])
def test_a_request_sent_before_an_edit_that_discarded_its_call_is_the_stale_request_risk(deliveries):
    trace, evidence = _stale(deliveries=deliveries)
    assert _stale_class(trace, evidence) == "stale_request_after_edit"
    assert _class("truthful_result", trace, evidence, messages=OTHER_CHAT_EDIT) is None


@pytest.mark.parametrize("bent", [{"sent_at_ms": 600}, {"node": "probe"}])
def test_the_stale_request_risk_needs_chatds_send_before_the_edit(bent):
    """A request sent after the edit (a chatd that still runs the discarded call) or a
    probe's request is not a stale request of the discarded call."""
    trace, evidence = _stale(**bent)
    assert _stale_class(trace, evidence) is None


def test_the_stale_request_risk_needs_the_edit_first_and_the_send_record():
    """The edit must be what resolved the call (the violation's first mark): an interrupt
    result before it resolved the call first, with a cancel."""
    trace, (edit, arrived, run) = _stale()
    committed = _interrupt_result(400, "not_run")
    assert _stale_class(sorted(trace + [committed], key=lambda r: r["t_ms"]), (committed, edit, arrived, run)) is None
    assert _stale_class(trace, (arrived, run)) is None
    assert _stale_class(trace, ()) is None
    assert _stale_class([r for r in trace if r.get("kind") != "send"], (edit, arrived, run)) is None
    assert _stale_class(trace, (edit, arrived)) is None


def test_the_stale_request_risk_ends_once_the_next_message_reached_the_agent():
    """An agent record naming the next message's call before the stale request arrived:
    the contract's agent would have refused it (stale_tool_call, A2.2). After its
    arrival (a slow handler) it is still the risk."""
    before = tp.note(800, "agent", "run_pending", uuid=U_NEXT, cause="n1")
    assert _stale_class(*_stale(extra=[before])) is None
    after = tp.note(950, "agent", "run_pending", uuid=U_NEXT, cause="n1")
    assert _stale_class(*_stale(extra=[after])) == "stale_request_after_edit"
    assert _stale_class(*_stale(extra=[after], deliveries=300)) == "stale_request_after_edit"
    # without the arrival record, the run itself is when it arrived
    assert _stale_class(*_stale(extra=[after], arrived_at_ms=None)) is None
    later = tp.note(1_100, "agent", "run_pending", uuid=U_NEXT, cause="n1")
    assert _stale_class(*_stale(extra=[later], arrived_at_ms=None, deliveries=300)) == "stale_request_after_edit"


def test_the_next_message_reaching_the_agent_is_read_from_agent_records_or_its_runs():
    """chatd's own records of the next message (a result it committed) say nothing about
    the agent; a run of the next message's call attributed by its command (today's agent
    knows no UUIDs) does."""
    chatd_side = dict(tp.result(800, "not_run", uuid=U_NEXT, provider="toolu_09"), node="replica-1")
    assert _stale_class(*_stale(extra=[chatd_side])) == "stale_request_after_edit"
    by_command = _start(800, "n1", uuid=None, command="go vet", pid="p9")
    by_command["node"] = "world"  # counted from the call's runs, not as an agent record naming it
    assert _stale_class(*_stale(extra=[by_command])) is None
    assert _stale_class(*_stale(extra=[dict(by_command, t_ms=950, clock_ms=950)])) == "stale_request_after_edit"


def test_the_next_message_is_a_later_message_of_the_same_chat():
    """The edit discarded one chat's call: the other chat's next message reaching the
    agent does not make that chat's request stale; nor does another call of the
    discarded call's own message, nor one of an earlier message of its chat."""
    before = tp.note(800, "agent", "run_pending", uuid=U_NEXT, cause="n1")
    trace, evidence = _stale(chat=tp.OTHER, extra=[before])
    assert _stale_class(trace, evidence, chat=tp.OTHER) == "stale_request_after_edit"
    other_next = tool_call_uuid(tp.OTHER, NEXT_MSG, "toolu_09")
    messages = ((tp.CHAT, tp.MSG, (EXEC,)), (tp.OTHER, NEXT_MSG, (NEXT,)))
    trace, evidence = _stale(extra=[dict(before, uuid=other_next)])
    assert _class("canceled_before_received_never_runs", trace, evidence, messages=messages) \
        == "stale_request_after_edit"
    earlier = tool_call_uuid(tp.CHAT, tp.MSG - 2, "toolu_09")
    messages = ((tp.CHAT, tp.MSG - 2, (NEXT,)), (tp.CHAT, tp.MSG, (EXEC,)))
    trace, evidence = _stale(extra=[dict(before, uuid=earlier)])
    assert _class("canceled_before_received_never_runs", trace, evidence, messages=messages) \
        == "stale_request_after_edit"
    same_message = tp.note(800, "agent", "run_pending", uuid=U_OTHER, cause="n1")
    messages = ((tp.OTHER, tp.MSG, (EXEC, NEXT)),)
    trace, evidence = _stale(chat=tp.OTHER, extra=[same_message])
    sibling = tool_call_uuid(tp.OTHER, tp.MSG, "toolu_09")
    trace = [dict(r, uuid=sibling) if r is same_message else r for r in trace]
    assert _class("canceled_before_received_never_runs", trace, evidence, uuid=U_OTHER,
                  messages=messages) == "stale_request_after_edit"


# -- false_unknown_after_agent_start, and the informational false unknowns

def test_a_false_unknown_is_the_agent_restarted_one():
    for reason, expected in (("agent_restarted", "false_unknown_after_agent_start"), ("not_found", None)):
        committed = tp.unknown(1_000, reason)
        assert _class("unknown_only_when_unknowable", [committed], (committed,)) == expected, reason
    committed = tp.unknown(1_000, "agent_restarted")
    assert _class("unknown_only_when_unknowable", [committed], ()) is None
    request = tp.sent(100)  # the result is the evidence's last record
    assert _class("unknown_only_when_unknowable", [request, committed], (request, committed)) \
        == "false_unknown_after_agent_start"
    assert _class("unknown_only_when_unknowable", [committed, request], (committed, request)) is None


def _informational(trace, messages=ONE_MESSAGE):
    return props.informational(props.Evidence(json.loads(json.dumps(trace)), _final(*messages)))


def test_informational_names_each_false_unknown_where_nothing_ever_ran():
    """An agent_restarted unknown for a call whose start may have reached the gone agent,
    and that never ran: the residual risk, reported as information, per call and tool."""
    trace = [tp.sent(100), tp.down(200), tp.unknown(1_000, "agent_restarted")]
    (v,) = _informational(trace)
    assert (v.property, v.uuid, v.at_ms, v.evidence, v.residual_risk) == \
        ("truthful_result", U, 1_000, (2,), "false_unknown_after_agent_start")
    for provider, uuid in (("toolu_03", UW), ("toolu_04", UE)):
        write = [tp.sent(100, route="write", tool_call=provider), tp.down(200),
                 tp.unknown(1_000, "agent_restarted", uuid=uuid, provider=provider)]
        assert [v.uuid for v in _informational(write)] == [uuid]


def test_informational_leaves_out_what_ran_and_other_unknowns():
    ran = [tp.sent(100), _start(150, "r1"), tp.down(200), tp.unknown(1_000, "agent_restarted")]
    assert _informational(ran) == []
    for provider, uuid in (("toolu_03", UW), ("toolu_04", UE)):
        write = [tp.sent(100, route="write", tool_call=provider), _write(150, "r1", uuid=uuid), tp.down(200),
                 tp.unknown(1_000, "agent_restarted", uuid=uuid, provider=provider)]
        assert _informational(write) == []
    for kind in ("not_run", "failed"):  # another kind, whatever reason it carries
        other = dict(tp.result(1_000, kind), reason="agent_restarted")
        assert _informational([tp.sent(100), tp.down(200), other]) == [], kind
    assert _informational([tp.sent(100), tp.down(200), tp.unknown(1_000, "unreachable")]) == []
    assert _informational([tp.sent(100), tp.down(200), tp.result(1_000, "not_run")]) == []
    assert _informational([tp.down(50), tp.sent(100), tp.unknown(1_000, "agent_restarted")]) == []


# -- duplicate_ids_without_cancel: copies of one provider ID whose cancels differ

def _copies_interrupted(*copies):
    run = _start(100, "r1")
    committed = _interrupt_result(1_000, "interrupted_generic")
    return [_up(0, 1), run, committed], (run, committed), ((tp.CHAT, tp.MSG, copies),)


def test_copies_whose_cancels_differ_are_the_duplicate_ids_risk():
    """Beside other calls of the message (each with its own cancel), and after an earlier
    message that used the same provider ID once: the copies are those of the call's own
    message and provider ID."""
    as_write = _call("toolu_01", "write_file", {"path": "/notes.txt", "content": "hi"})
    before, after = _call("toolu_00", "write_file", {"path": "/x", "content": "x"}), WRITE
    trace, evidence, messages = _copies_interrupted(before, EXEC, as_write, after)
    messages = ((tp.CHAT, tp.MSG - 2, (EXEC,)),) + messages
    for prop in ("interrupt_stops_foreground", "canceled_before_received_never_runs"):
        assert _class(prop, trace, evidence, messages=messages) == "duplicate_ids_without_cancel", prop
    assert _class("truthful_result", trace, evidence, messages=messages) is None


def test_copies_that_share_one_cancel_or_no_copies_are_not_the_duplicate_ids_risk():
    for copies in ((EXEC, EXEC), (EXEC,)):
        trace, evidence, messages = _copies_interrupted(*copies)
        assert _class("interrupt_stops_foreground", trace, evidence, messages=messages) is None, copies


def test_the_duplicate_ids_risk_reads_the_committed_message():
    """The copies are read from the final state's message: a violation whose message (or
    chat) is not there is no proof."""
    as_write = _call("toolu_01", "write_file", {"path": "/notes.txt", "content": "hi"})
    trace, evidence, messages = _copies_interrupted(EXEC, as_write)
    calls = props.committed_calls(_final(*messages))
    where = tuple(trace.index(e) for e in evidence)
    v = props.Violation("interrupt_stops_foreground", U, "toolu_01", 0, "hand-built", where)
    for elsewhere in (((tp.OTHER, tp.MSG, (EXEC,)),), ((tp.CHAT, tp.MSG + 2, (EXEC,)),)):
        ev = props.Evidence(trace, _final(*elsewhere), calls)
        assert props.classify(v, ev).residual_risk is None, elsewhere
    assert props.classify(v, props.Evidence(trace, _final(*messages), calls)).residual_risk \
        == "duplicate_ids_without_cancel"


def test_copies_in_a_message_an_edit_deleted_are_not_the_duplicate_ids_risk():
    """Copies whose message a message edit deleted were never the interrupt's to cancel
    (it reads the live history): a run a request sent after the edit caused is no
    part of this risk, whatever the chat's later messages hold."""
    as_write = _call("toolu_01", "write_file", {"path": "/notes.txt", "content": "hi"})
    edit, run = tp.edited(500), _start(1_000, "r1")
    trace = [_up(0, 1), edit, _send(600, "r1", 550), run]
    final = _final((tp.CHAT, NEXT_MSG, (WRITE,)), deleted=((tp.CHAT, tp.MSG, (EXEC, as_write)),))
    ev = props.Evidence(json.loads(json.dumps(trace)), final)
    assert U in ev.copied and U in ev.discarded
    v = props.Violation("canceled_before_received_never_runs", U, "toolu_01", 1_000, "hand-built", (1, 3))
    assert props.classify(v, ev).residual_risk is None
