"""Message edits (issue 34, design Q4 and section 7; docs/contract.md C3.6): the database
transition as chatstate's ``Tx.EditMessage`` has it, the runner's reaction, and how the
checkers judge a discarded call: no result owed, no cancel sent, and a stale request that
acts after the edit reported as the residual risk ``stale_request_after_edit`` only when
it was sent before the edit and arrived before the chat's next message.

The classifier cases follow tests/test_classify.py: run a real world, check the class,
then bend the one record that proves it and check the violation becomes a new finding.
"""

from __future__ import annotations

import copy
from pathlib import Path

from toolcall_sim.model import chatd, chattool
from toolcall_sim.model import properties as props
from toolcall_sim.model.core import Publish, replace
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict, load

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
CHAT = "11111111-1111-4111-8111-111111111111"
CALL = chattool.ToolCall("toolu_01", "execute", '{"command":"make deploy","timeout":"10m"}')


def _chat_mid_batch():
    """A chat owned by a runner, its first user message answered with one tool call
    whose result is not committed yet, and a queued message."""
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [(CALL,), ()], 2_000, 0)
    db, _ = chatd.db_send_user_message(db, CHAT, "deploy", 10)
    chat = db.chats[CHAT]
    db, _ = chatd.tx_acquire(db, chat, "replica-1-w1", "replica-1-w1/r1", 20)
    db, _ = chatd.tx_commit_assistant(db, db.chats[CHAT], (CALL,), 2_000)
    db, _ = chatd.db_send_user_message(db, CHAT, "and then?", 2_100)  # queued while running
    return db


def test_edit_soft_deletes_the_branch_and_runs_again_from_a_replacement():
    """Tx.EditMessage: the edited message and everything after it leave the active history
    but stay as rows; the replacement is a new message (history moves, the attempt
    resets), the queue is cleared, the chat runs with its owner kept, and the discarded
    call is no longer unresolved: nothing answers it."""
    db = _chat_mid_batch()
    before = db.chats[CHAT]
    assert [m.role for m in before.messages] == ["user", "assistant"] and before.queue
    db2, eff = chatd.db_edit_message(db, CHAT, 3_000)
    chat = db2.chats[CHAT]
    assert [m.role for m in chat.messages] == ["user"]
    assert [m.id for m in chat.deleted_messages] == [m.id for m in before.messages]
    (replacement,) = chat.messages
    assert replacement.id > max(m.id for m in before.messages) and replacement.text == "deploy"
    assert chat.snapshot_version == before.snapshot_version + 1 == chat.history_version
    assert chat.generation_attempt == 0 and chat.queue == ()
    assert (chat.status, chat.worker_id, chat.runner_id) == (chatd.RUNNING, before.worker_id, before.runner_id)
    assert chatd.unresolved_calls(chat) == (None, ())  # no later task finds the discarded call
    assert not [m for m in chat.messages if m.role == "tool"]  # and nothing answered it
    (edited,) = [e for e in eff if getattr(e, "kind", None) == "message_edited"]
    assert edited.get("edited_message_id") == before.messages[0].id
    assert edited.get("replacement_message_id") == replacement.id and edited.get("discarded_calls") == 1
    assert [p.channel for p in eff if isinstance(p, Publish)] == ["chat:update"]  # owned: no ownership hint
    # The scripted model answers the edited prompt with its next unused answer (a text one).
    assert chatd.turn_index(chat) == 1 and chatd.decide_generation_action(chat) == "generate_assistant"


def test_edit_is_refused_on_an_archived_chat_before_a_message_and_with_the_db_down():
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [(CALL,)], 2_000, 0)
    same, eff = chatd.db_edit_message(db, CHAT, 5)
    assert same == db and (eff[0].kind, eff[0].get("reason")) == ("refused", "no_message")
    db, _ = chatd.db_send_user_message(db, CHAT, "go", 10)
    archived, _ = chatd.db_archive(db, CHAT, 20)
    same, eff = chatd.db_edit_message(archived, CHAT, 30)
    assert same == archived and eff[0].get("reason") == "no_chat"
    down = chatd.db_set_up(db, False)
    same, eff = chatd.db_edit_message(down, CHAT, 30)
    assert same == down and eff[0].get("reason") == chatd.DB_DOWN


def test_an_unowned_waiting_chat_edited_is_offered_for_acquisition():
    """From waiting with no owner the edit leaves a runnable chat without an owner: the
    transition publishes the ownership hint (chatd_db rule 5)."""
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [()], 2_000, 0)
    db, _ = chatd.db_send_user_message(db, CHAT, "hi", 10)
    db = replace(db, chats=db.chats.set(CHAT, replace(db.chats[CHAT], status=chatd.WAITING)))
    _, eff = chatd.db_edit_message(db, CHAT, 20)
    assert [p.channel for p in eff if isinstance(p, Publish)] == ["chat:update", "chat:ownership"]


def test_per_chat_message_ids_never_reuse_a_deleted_rows_id():
    """With each chat numbering its own messages, the replacement's ID is above the
    soft-deleted rows' too (one ID is never handed out twice)."""
    db = replace(_chat_mid_batch(), message_ids_per_chat=True)
    db, _ = chatd.db_edit_message(db, CHAT, 3_000)
    chat = db.chats[CHAT]
    assert chat.messages[-1].id > max(m.id for m in chat.deleted_messages)


def _rr():
    return run_scenario(load(SCENARIOS / "rr_stale_request_after_edit.toml"), "contract")


def test_the_edit_cancels_the_batch_without_waiting_and_sends_no_cancel():
    """The runner cancels its generation task and starts a new one; no cancel route is
    ever used, and the canceled task's start, already on its way, still reaches the
    agent and its answer is dropped as late."""
    result = _rr()
    trace = result.world.trace
    edit = next(i for i, r in enumerate(trace) if r.get("note") == "message_edited")
    assert [r for r in trace if r.get("kind") == "send" and r.get("route") == "cancel"] == []
    after = [r.get("note") for r in trace[edit:] if r.get("kind") == "note" and r.get("node") == "replica-1"]
    assert after[:2] == ["task_canceled", "task_started"] and "late_answer" in after
    started = next(i for i, r in enumerate(trace) if r.get("truth") == "process_started")
    assert started > edit and trace[started]["command"] == "make deploy"


def test_a_discarded_call_is_owed_no_result():
    """one_result_eventually skips a call the edit discarded (its branch is gone, Q4);
    take the edit's note away and the same call is one without a result."""
    result = _rr()
    assert not [v for v in result.violations if v.property == "one_result_eventually"]
    trace = [r for r in result.world.trace if r.get("note") != "message_edited"]
    found = props.evaluate(trace, result.world.system).violations
    assert [v.provider_id for v in found if v.property == "one_result_eventually"] == ["toolu_01"]


def _reclassify(result, mutate) -> list:
    trace = copy.deepcopy(result.world.trace)
    mutate(trace)
    return props.evaluate(trace, result.world.system).violations


def _classes(violations, prop="canceled_before_received_never_runs") -> set:
    return {v.residual_risk for v in violations if v.property == prop}


def test_stale_request_after_edit_is_the_residual_risk():
    result = _rr()
    (v,) = result.violations
    assert (v.property, v.residual_risk, v.provider_id) == (
        "canceled_before_received_never_runs", "stale_request_after_edit", "toolu_01")
    assert "D7" in props.RESIDUAL_RISKS["stale_request_after_edit"]
    assert not props.is_known_finding(v)


def test_a_request_sent_after_the_edit_is_a_new_finding():
    """A start chatd sent after the edit (a chatd that kept running the discarded call)
    is no stale request: the same effect is then a new finding."""
    result = _rr()
    start = next(r for r in result.world.trace if r.get("truth") == "process_started")

    def sent_after_the_edit(trace):
        send = next(r for r in trace if r.get("kind") == "send" and r.get("req") == start["cause"])
        trace.remove(send)
        edit = next(i for i, r in enumerate(trace) if r.get("note") == "message_edited")
        trace.insert(edit + 1, send)
    assert _classes(_reclassify(result, sent_after_the_edit)) == {None}


def test_a_stale_request_after_the_chats_next_message_is_a_new_finding():
    """Once a request for a later message of the chat reached the agent, the contract
    refuses the stale one (stale_tool_call): a stale request acting after that is not the
    residual risk. In the shipped scenario only today's agent lets it act."""
    today = run_scenario(load(SCENARIOS / "q4_edit_stale_start_after_next_message.toml"), "today")
    assert _classes(today.violations) == {None}
    contract = run_scenario(load(SCENARIOS / "q4_edit_stale_start_after_next_message.toml"), "contract")
    assert contract.violations == []
    assert [r.get("code") for r in contract.world.trace if r.get("note") == "refused"] == ["stale_tool_call"]
    # The risk's own run, bent: a record of the next message's call put before the stale start.
    result = _rr()
    later = next(c.uuid for c in props.Evidence(result.world.trace, result.world.system).calls
                 if c.provider_id == "toolu_02")

    def next_message_first(trace):
        # (before the stale start's ARRIVAL: the risk is a request that arrives first)
        cause = next(r for r in trace if r.get("truth") == "process_started")["cause"]
        arrived = next(i for i, r in enumerate(trace) if r.get("truth") == "request_received" and r.get("cause") == cause)
        pending = dict(next(r for r in trace if r.get("note") == "run_pending" and r.get("uuid") == later))
        trace.insert(arrived, pending)
    assert _classes(_reclassify(result, next_message_first)) == {None}


def test_the_classifier_does_not_swallow_an_interrupts_violation():
    """US10's violation under today (the interrupt committed the result, then the late
    start ran) stays a new finding when an edit discarded the same call afterwards: the
    first mark is the interrupt's result, not the edit."""
    result = run_scenario(load(SCENARIOS / "us10_interrupt_before_start_arrives.toml"), "today")
    assert _classes(result.violations) == {None}
    call = props.Evidence(result.world.trace, result.world.system).calls[0]

    def edited_after_the_interrupt(trace):
        committed = next(i for i, r in enumerate(trace) if r.get("truth") == "result_committed")
        trace.insert(committed + 1, {"t_ms": trace[committed]["t_ms"], "node": "db", "clock_ms": 0, "kind": "note",
                                     "note": "message_edited", "chat_id": call.chat_id,
                                     "edited_message_id": call.message_id - 1,
                                     "replacement_message_id": call.message_id + 10})
    bent = _reclassify(result, edited_after_the_interrupt)
    assert _classes(bent) == {None}


def test_the_classifier_explains_only_its_property():
    """A second start of the discarded call (the same stale request's effect twice) is an
    at_most_once violation, which the row for canceled_before_received_never_runs never
    names."""
    result = _rr()

    def started_twice(trace):
        start = next(i for i, r in enumerate(trace) if r.get("truth") == "process_started")
        trace.insert(start + 1, dict(trace[start], pid="other"))
    bent = _reclassify(result, started_twice)
    assert _classes(bent, "at_most_once") == {None}
    assert _classes(bent) == {"stale_request_after_edit"}


# An interrupt whose cancel is slow, and an edit while the chat is interrupting: chatstate
# moves I0 -> R0, the interrupt task is canceled and never commits.
EDIT_WHILE_INTERRUPTING = {
    "name": "edit-while-interrupting", "seed": 5, "until": "10m",
    "turns": [{"chat": "chat-1", "tool_calls": [
        {"id": "toolu_01", "tool": "execute", "command": "make deploy", "runs_for": "5m", "timeout": "10m"}]},
        {"chat": "chat-1", "tool_calls": [{"id": "toolu_02", "tool": "execute", "command": "make status",
                                           "runs_for": "1s"}]}],
    "faults": [
        {"kind": "interrupt", "chat": "chat-1", "when": {"event": "process_started", "tool_call": "toolu_01"},
         "offset": "1s"},
        {"kind": "delay", "message": {"route": "cancel", "tool_call": "toolu_01"}, "by": "50s"},
        {"kind": "message_edit", "chat": "chat-1",
         "when": {"event": "request_sent", "route": "cancel", "tool_call": "toolu_01"}, "offset": "1s"},
    ],
}


def test_an_edit_ends_an_interruption():
    """The edit lands while the interrupt's cancel is on its way: the interrupt task is
    canceled (no FinishInterruption), the chat runs the next answer, and
    interrupt_finishes takes the edit as the interrupt's end instead of a task that
    never finished. The cancel, already sent, arrives after the new branch's message
    reached the agent and is refused stale_tool_call: the foreground process runs on to
    its end (Q4: nothing cancels a discarded branch's work)."""
    result = run_scenario(from_dict(EDIT_WHILE_INTERRUPTING), "contract")
    trace = result.world.trace
    notes = [r.get("note") for r in trace if r.get("kind") == "note"]
    assert "interrupt_requested" in notes and "message_edited" in notes and "interruption_finished" not in notes
    assert [r.get("code") for r in trace if r.get("note") == "refused"] == ["stale_tool_call"]
    assert [r.get("truth") for r in trace if r.get("pid") == trace[next(
        i for i, r in enumerate(trace) if r.get("truth") == "process_started")]["pid"]] == [
        "process_started", "process_exited"]
    rows = {r["id"]: r for r in result.tool_call_rows()}
    assert rows["toolu_01"]["results"] == [] and [r["kind"] for r in rows["toolu_02"]["results"]] == ["completed"]
    assert not [v for v in result.violations if v.property in ("interrupt_finishes", "one_result_eventually")]
    without_edit = [r for r in trace if r.get("note") != "message_edited"]
    found = props.evaluate(without_edit, result.world.system).violations
    assert "interrupt_finishes" in {v.property for v in found}


def test_a_stale_request_that_arrived_first_is_the_risk_however_slow_its_handler():
    """Swarm seed 1324 (issue 34): the stale start arrives 10 ms after the edit, before the
    new branch's message, and a 90 s handler starts its process long after that message
    reached the agent. The design's window is about arrival ("if it arrives before the
    chat's next message"), which the contract's agent judges when it records the request:
    the risk, not a new finding."""
    scenario = from_dict({
        "name": "slow-handler-stale-start", "seed": 1324, "until": "5m30s",
        "world": {"replicas": 1, "handler_time": "1m29s835ms", "files": {"/src/a.go": "var v1 = 74\n"}},
        "network": {"latency": {"min": "13ms", "max": "13ms"}},
        "turns": [
            {"chat": "chat-1", "tool_calls": [{"id": "toolu_08", "tool": "execute", "command": "cargo check",
                                               "runs_for": "1m", "timeout": "5m"}]},
            {"chat": "chat-1", "tool_calls": [{"id": "toolu_05", "tool": "edit_files", "path": "/src/a.go",
                                               "edits": [{"search": "var v1 = 74", "replace": "var v1 = 75"}]}]},
        ],
        "faults": [{"kind": "message_edit", "chat": "chat-1", "offset": "3ms",
                    "when": {"event": "request_sent", "route": "start", "tool_call": "toolu_08"}}],
    })
    result = run_scenario(scenario, "contract")
    assert [(v.property, v.residual_risk) for v in result.violations] == [
        ("canceled_before_received_never_runs", "stale_request_after_edit")]
