"""The hard cases a scenario file must be able to say (issue 11, item 3), each as a
shipped scenario whose expectations also fail when the world does something else."""

from __future__ import annotations

import dataclasses
import pathlib
import textwrap

import pytest

from toolcall_sim.cli.main import main
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import Expectation, load

SCENARIOS = pathlib.Path(__file__).resolve().parent.parent / "scenarios"


def _run(name: str, variant: str = "contract"):
    return run_scenario(load(SCENARIOS / f"{name}.toml"), variant)


def _with_expectation(run, **changes):
    """The same run judged against a changed [expect.contract]."""
    exp = run.scenario.expectation("contract")
    exp = dataclasses.replace(exp, **changes)
    scenario = dataclasses.replace(run.scenario, expect=(("contract", exp),))
    return dataclasses.replace(run, scenario=scenario).expectation_failures()


def test_named_immediate_takeover_moves_the_chat_to_that_replica():
    """`ownership_change` with `to` and `immediate`: replica-3 acquires the chat 50 ms
    after the start was sent and commits the result (replica-2 never owns it)."""
    run = _run("takeover_by_named_replica")
    acquired = [r for r in run.world.trace if r.get("note") == "acquired"]
    assert [r["node"] for r in acquired][:2] == ["replica-1", "replica-3"]
    fault = next(r for r in run.world.trace if r.get("kind") == "fault")
    send = next(r for r in run.world.trace if r.get("kind") == "send" and r.get("route") == "start")
    assert fault["t_ms"] - send["t_ms"] == 50
    assert run.expectation_failures() == []
    exp = run.scenario.expectation("contract")
    wrong = ((("toolu_01", (("result", (("kind", "completed"), ("replica", "replica-2"))),)),))
    assert _with_expectation(run, tool_calls=wrong) == [
        "toolu_01.result.replica: expected 'replica-2', got 'replica-3'"]
    assert exp.sometimes == ("completes_after_ownership_change",)


def test_takeover_kind_is_the_same_as_an_immediate_ownership_change(tmp_path):
    text = (SCENARIOS / "takeover_by_named_replica.toml").read_text()
    takeover = text.replace('kind = "ownership_change"\nimmediate = true', 'kind = "takeover"')
    assert takeover != text
    (tmp_path / "t.toml").write_text(takeover)
    a, b = _run("takeover_by_named_replica"), run_scenario(load(tmp_path / "t.toml"), "contract")
    strip = lambda run: [r for r in run.world.trace if r.get("kind") not in ("header", "action", "fault")]
    assert strip(a) == strip(b)


def test_a_fault_that_does_nothing_fails_the_expectations(tmp_path):
    """A takeover by the replica that already owns the chat is skipped, and the run
    says so instead of passing."""
    text = (SCENARIOS / "takeover_by_named_replica.toml").read_text().replace('to = "replica-3"', 'to = "replica-1"')
    (tmp_path / "t.toml").write_text(text)
    failures = run_scenario(load(tmp_path / "t.toml"), "contract").expectation_failures()
    assert any("did nothing: the new owner already owns the chat" in f for f in failures)


@pytest.mark.parametrize("fault,reason", [
    ('kind = "ownership_change"\nimmediate = true\nto = "nosuchreplica"', "no such replica 'nosuchreplica'"),
    ('kind = "ownership_change"\nto = "replica-2"', "needs immediate = true"),
    ('kind = "takeover"', "to: missing"),
])
def test_takeover_refuses_what_it_cannot_do(fault, reason, tmp_path, capsys):
    path = tmp_path / "t.toml"
    path.write_text(textwrap.dedent(f"""
        name = "t"
        [world]
        replicas = 3
        [[turns]]
        tool_calls = [ {{ id = "toolu_01", command = "true" }} ]
        [[faults]]
        at = "1s"
        {fault}
        """))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err


def test_message_committed_and_response_sent_triggers_fire():
    """The interrupt fires in the step the assistant message commits, so the call never
    starts (not_run, committed by the interrupt); the restart fires when the agent
    answers toolu_02's start, after the process started."""
    run = _run("triggers_on_commit_and_response")
    trace = run.world.trace
    faults = [r for r in trace if r.get("kind") == "fault"]
    assert [f["fault"] for f in faults] == ["interrupt", "agent_restart"]
    committed = next(r for r in trace if r.get("note") == "assistant_committed"
                     and r["t_ms"] == faults[0]["t_ms"])
    assert committed
    started = next(r for r in trace if r.get("truth") == "process_started")
    reply = next(r for r in trace if r.get("kind") == "reply" and r.get("route") == "start")
    assert started["t_ms"] <= reply["t_ms"] == faults[1]["t_ms"]
    assert run.expectation_failures() == []


def test_forged_cross_chat_cancel_is_refused_with_400():
    """US9, A5: the answers of the crafted requests are recorded and checked; a wrong
    expected status is a failed expectation."""
    run = _run("us09_forged_requests")
    answers = {r["name"]: r["status"] for r in run.world.trace if r.get("kind") == "probe_answer"}
    assert answers == {"cross_chat_cancel": 400, "start_without_chat_id": 400, "own_chat_cancel": 200}
    assert run.expectation_failures() == []
    assert _with_expectation(run, requests=(("cross_chat_cancel", (("status", 200),)),)) == [
        "requests.cross_chat_cancel: expected status 200, got 400"]


def test_negative_clock_offset_and_drift():
    """The agent's clock reads two hours behind true time, and drifts."""
    run = _run("clock_skew_negative")
    agent = [r for r in run.world.trace if r.get("node") == "agent" and "clock_ms" in r]
    assert all(r["clock_ms"] < r["t_ms"] - 7_000_000 for r in agent)
    assert run.expectation_failures() == []


def test_result_bounds_sometimes_and_interrupt_bound_can_fail():
    """Each expectation kind fails when the run does not meet it."""
    run = _run("clock_skew_negative")
    early = ((("toolu_01", (("result", (("committed_before", 60_000),)),)),))
    assert _with_expectation(run, tool_calls=early)[0].startswith("toolu_01.result.committed_before: committed at")
    assert _with_expectation(run, sometimes=("cancel_kills_foreground",)) == [
        "sometimes: cancel_kills_foreground was never reached"]
    run = _run("us02_interrupt_stops_foreground")
    scenario = dataclasses.replace(run.scenario, expect=(("contract", Expectation(interrupt_finished_within_ms=10)),))
    assert dataclasses.replace(run, scenario=scenario).expectation_failures()[0].startswith("interrupt_finished_within: the interrupt at 60")


@pytest.mark.parametrize("name", ["us09_forged_requests", "takeover_by_named_replica", "triggers_on_commit_and_response"])
def test_new_fault_shapes_replay_to_the_same_hash(name, tmp_path):
    """A recorded trace with crafted requests (headers as pairs), immediate takeovers and
    event-triggered faults replays through the pure model to the same trace hash."""
    from toolcall_sim.drivers import counterexample as cx

    run = _run(name)
    path = tmp_path / "trace.jsonl"
    path.write_bytes(run.trace_bytes)
    replayed = cx.replay(str(path))
    assert replayed.trace_sha256 == run.trace_sha256


def test_two_chats_with_the_same_message_id_and_provider_id():
    """US9: both assistant messages are message 2 with provider ID toolu_01; the tool
    call UUIDs differ by chat, and the interrupt stops only chat-a's process."""
    run = _run("us09_same_ids_in_two_chats")
    messages = [(m.id, tc.provider_id) for chat in run.world.system.db.chats.values() for m in chat.messages
                if m.role == "assistant" for tc in m.tool_calls]
    assert messages == [(2, "toolu_01"), (2, "toolu_01")]
    rows = {r["id"]: r for r in run.tool_call_rows()}
    assert rows["toolu_01"]["provider_id"] == rows["toolu_01_b"]["provider_id"] == "toolu_01"
    assert rows["toolu_01"]["uuid"] != rows["toolu_01_b"]["uuid"]
    assert run.expectation_failures() == []
    bug = _run("us09_same_ids_in_two_chats", "contract+pid-from-command")
    assert "chat_isolation" in {v.property for v in bug.violations}


@pytest.mark.parametrize("extra,reason", [
    ('[[faults]]\nkind = "agent_restart"\nwhen = { event = "request_sent", tool_call = "toolu_01_b" }\n',
     "faults[1].when.tool_call: toolu_01_b's provider ID 'toolu_01' is shared by calls of several chats"),
    ('[[faults]]\nkind = "lose"\nmessage = { route = "start", tool_call = "toolu_01" }\n',
     "faults[1].message.tool_call: toolu_01's provider ID 'toolu_01' is shared"),
])
def test_a_shared_provider_id_cannot_name_a_message(extra, reason, tmp_path, capsys):
    text = (SCENARIOS / "us09_same_ids_in_two_chats.toml").read_text() + extra
    (tmp_path / "t.toml").write_text(text)
    assert main(["run", str(tmp_path / "t.toml")]) == 2
    assert reason in capsys.readouterr().err


def test_provider_id_is_shared_only_within_one_assistant_message(tmp_path, capsys):
    """Calls of one turn may share a provider ID, as Go runs them (docs/contract.md C3.7,
    tests/test_duplicate_ids.py); another turn of the chat may not reuse it."""
    (tmp_path / "t.toml").write_text(textwrap.dedent("""
        name = "t"
        [[turns]]
        tool_calls = [ { id = "a", command = "x" }, { id = "b", provider_id = "a", command = "y" } ]
        [[turns]]
        tool_calls = [ { id = "c", provider_id = "a", command = "z" } ]
        """))
    assert main(["run", str(tmp_path / "t.toml")]) == 2
    assert ("turns[1].tool_calls[0].provider_id: 'a' is already a provider ID of an earlier assistant message "
            "in chat-1") in capsys.readouterr().err
