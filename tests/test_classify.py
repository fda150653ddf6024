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
