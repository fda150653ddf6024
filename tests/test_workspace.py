"""The workspace's states (issue 34; docs/contract.md C5.6; model/system.py Rule 4): a
chat without a workspace, a deleted workspace and a stopped one, at the start and
mid-run, and what chatd commits for execute and the file tools in each, under today
and the contract, on start and on interrupt."""

from __future__ import annotations

import copy

import pytest

from toolcall_sim.model import chattool
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict

FILES = {"/home/coder/main.go": "package one\n"}
CALLS = [
    {"id": "toolu_01", "tool": "execute", "command": "make test", "runs_for": "1h", "timeout": "2h"},
    {"id": "toolu_02", "tool": "execute", "command": "npm run dev", "background": True, "runs_for": "1h"},
    {"id": "toolu_03", "tool": "edit_files", "path": "/home/coder/main.go",
     "edits": [{"search": "one", "replace": "two"}]},
    {"id": "toolu_04", "tool": "write_file", "path": "/home/coder/notes.txt", "content": "hello\n"},
]
BASE = {"name": "workspace", "seed": 34, "until": "10m", "world": {"files": FILES},
        "turns": [{"chat": "chat-1", "tool_calls": CALLS}]}


def _run(world=None, faults=(), variant="contract", until=None):
    data = copy.deepcopy(BASE)
    data["world"].update(world or {})
    data["faults"] = list(faults)
    if until:
        data["until"] = until
    return run_scenario(from_dict(data), variant)


def _records(run, kind, **match):
    return [r for r in run.world.trace if r.get("kind") == kind and all(r.get(k) == v for k, v in match.items())]


def _results(run) -> dict:
    return {r["provider_id"]: r for r in run.world.trace if r.get("truth") == "result_committed"}


# (state, dial status, chattool dial error kind)
STATES = [("none", 424, chattool.DIAL_NO_WORKSPACE), ("deleted", 410, chattool.DIAL_DELETED),
          ("stopped", 404, chattool.DIAL_NO_AGENT)]


@pytest.mark.parametrize("state,status,error", STATES)
def test_a_workspace_that_is_not_running_has_no_agent_and_its_dial_fails_at_once(state, status, error):
    """No agent boots; the dial's answer comes back at once (a network round trip, no
    dial timer) with the state's status, which chatd maps to the dial error."""
    run = _run({"workspace": state})
    assert not _records(run, "agent_up")
    assert _records(run, "workspace", state=state, was=None)
    sends = {r["req"]: r["t_ms"] for r in _records(run, "send", route="dial")}
    replies = _records(run, "reply", route="dial")
    assert replies and {r["status"] for r in replies} == {status}
    assert all(r["t_ms"] - sends[r["req"]] < 1_000 for r in replies)
    assert {r.get("result_kind") for r in _records(run, "note", note="dial_failed")} == {error}


# On start (the first attempt), per state: execute (foreground, background), edit, write.
ON_START = {
    ("today", "none"): ["failed"] * 4,
    ("today", "deleted"): ["failed"] * 4,
    ("today", "stopped"): ["failed"] * 4,
    ("contract", "none"): ["failed"] * 4,
    ("contract", "deleted"): ["failed"] * 4,
    # a stopped workspace keeps its disk: an earlier attempt's change may be there
    ("contract", "stopped"): ["failed", "failed", "unknown", "unknown"],
}


@pytest.mark.parametrize("variant,state", list(ON_START), ids=lambda v: str(v))
def test_results_on_start_keep_todays_where_the_design_says_so(variant, state):
    """docs/contract.md C5.6 (C4.2 step 1, C5.4): execute keeps the plain error in every
    state (processes do not outlive the agent); a file tool's is unknown, naming
    start_workspace, only when the stopped workspace keeps its disk; today has no
    identity and always gives the plain error."""
    run = _run({"workspace": state}, variant=variant)
    results = _results(run)
    assert [results[c["id"]]["result_kind"] for c in CALLS] == ON_START[variant, state]
    for c in CALLS:
        assert results[c["id"]]["is_error"] is True
    unknown = [results[c["id"]] for c in CALLS if results[c["id"]]["result_kind"] == "unknown"]
    assert all(r["reason"] == "unreachable" for r in unknown)
    assert run.violations == []


def _stopped_then_interrupted(state: str) -> list:
    """The workspace moves to ``state`` a minute into the calls; the user interrupts a
    millisecond later, before chatd learns of it."""
    trigger = {"event": "process_started", "tool_call": "toolu_01"}
    return [{"kind": "workspace", "state": state, "when": trigger, "offset": "1m"},
            {"kind": "interrupt", "chat": "chat-1", "when": trigger, "offset": "1m1ms"}]


ON_INTERRUPT = {
    ("today", "stopped"): ["interrupted_generic"] * 4,
    ("today", "deleted"): ["interrupted_generic"] * 4,
    ("contract", "deleted"): ["interrupted_generic"] * 4,
    # no agent: no process can run (generic); the disk may hold the changes (unknown)
    ("contract", "stopped"): ["interrupted_generic", "interrupted_generic", "unknown", "unknown"],
}


@pytest.mark.parametrize("variant,state", list(ON_INTERRUPT), ids=lambda v: str(v))
def test_results_on_interrupt_after_the_workspace_stops_or_goes(variant, state):
    """C7 groups 20, 23, 25, 32: the interrupt's dial finds no agent; execute keeps the
    generic result, a file tool's is unknown unless the disk went with the workspace.
    Every process died with the agent, so no interrupt left one running."""
    run = _run(faults=_stopped_then_interrupted(state), variant=variant)
    results = _results(run)
    assert [results[c["id"]]["result_kind"] for c in CALLS] == ON_INTERRUPT[variant, state]
    assert {r["task"] for r in results.values()} == {"interrupt"}
    kills = [r for r in run.world.trace if r.get("truth") == "process_killed"]
    assert len(kills) == 2 and {k["by"] for k in kills} == {"shutdown"}
    assert _records(run, "agent_down", why=f"workspace_{state}")
    if variant == "contract":
        assert {r["status"] for r in _records(run, "reply", route="dial")} == {200, dict((s, c) for s, c, _ in STATES)[state]}
    assert run.violations == []


def test_a_stopped_workspace_keeps_its_disk_and_starts_again_with_a_new_agent():
    """Stop: the agent goes down, its processes die, the disk stays. Start: a new agent
    (incarnation 2) boots on that disk. Delete: the agent and the disk go."""
    run = _run(faults=[{"kind": "workspace", "state": "stopped", "at": "30s"},
                       {"kind": "workspace", "state": "running", "at": "1m"},
                       {"kind": "workspace", "state": "deleted", "at": "2m"}], until="3m")
    downs = _records(run, "agent_down")
    assert [d["why"] for d in downs] == ["workspace_stopped", "workspace_deleted"]
    assert [u["incarnation"] for u in _records(run, "agent_up")] == [1, 2]
    assert [(m["was"], m["state"]) for m in _records(run, "workspace")] == [
        ("running", "stopped"), ("stopped", "running"), ("running", "deleted")]
    # (the final system: the disk after deletion is empty)
    assert dict(run.world.system.agent_files.items()) == {}


def test_disk_survives_a_stop():
    run = _run(faults=[{"kind": "workspace", "state": "stopped", "at": "30s"}], until="1m")
    assert run.world.system.agent is None
    assert dict(run.world.system.agent_files.items())["/home/coder/main.go"] == "package two\n"


@pytest.mark.parametrize("faults,why", [
    ([{"kind": "workspace", "state": "deleted", "at": "30s"}, {"kind": "workspace", "state": "running", "at": "1m"}],
     "a deleted workspace cannot become running"),
    ([{"kind": "workspace", "state": "stopped", "at": "30s"}, {"kind": "workspace", "state": "stopped", "at": "1m"}],
     "the workspace is already stopped"),
])
def test_a_move_the_workspace_cannot_make_is_skipped_and_fails_the_expectations(faults, why):
    run = _run(faults=faults, until="2m")
    skipped = _records(run, "fault_skipped", fault="workspace")
    assert [s["why"] for s in skipped] == [why]
    assert run.expectation_failures()


def test_a_chat_without_a_workspace_cannot_start_one():
    run = _run({"workspace": "none"}, faults=[{"kind": "workspace", "state": "running", "at": "30s"}], until="1m")
    assert [s["why"] for s in _records(run, "fault_skipped")] == ["a chat without a workspace cannot become running"]
    assert not _records(run, "agent_up")


def test_an_agent_restart_in_a_stopped_workspace_boots_no_agent():
    """The restart's boot timer finds the workspace stopped: only a start boots an agent."""
    run = _run(faults=[{"kind": "workspace", "state": "stopped", "at": "30s"},
                       {"kind": "agent_restart", "downtime": "5s", "at": "40s"}], until="2m")
    assert [u["incarnation"] for u in _records(run, "agent_up")] == [1]


def test_a_dial_waiting_for_a_down_agent_gets_the_stopped_workspaces_answer():
    """An agent restarting when the calls dial leaves the dial waiting (Rule 4); the
    workspace stopping meanwhile answers it with no agent at once, not at the dial
    timeout."""
    run = _run({"agent_boot_at": "20s"}, faults=[{"kind": "workspace", "state": "stopped", "at": "5s"}])
    (reply,) = _records(run, "reply", route="dial")
    assert reply["status"] == 404 and reply["t_ms"] == 5_000
    assert not _records(run, "agent_up")
