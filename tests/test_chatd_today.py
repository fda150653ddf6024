"""`today` is chatd before the CODAGT-757 stack, and the chatd facts of issue 10.

The variant ``today`` (model/chatd/rules.py ``TODAY``, model/chattool/ ``BEFORE_STACK``) has
none of the stack's behaviours (docs/contract.md D9, PRs 4-6, and Q9): no
identity or headers, no agent answer timeout, the pre-Q9c text for a snapshot that fails
past the deadline, no interrupt cancels. Each test below names the design line, the
docs/contract.md line or the Go code it follows, and fails with the behaviour removed:

- the lost start answer: today waits for the 15-minute attempt timeout and the retry
  starts the command again; the contract reports unknown after 1 minute (Q9b; the
  scenario ``lost_start_answer`` tells the same story in the simpy world);
- Q9c: a snapshot that fails past the deadline said "command timed out" before the stack;
- serial tools run one after another in a batch (docs/contract.md C1.3 step 3);
- ``finish_turn`` is fenced on the attempt that loaded the chat (2.4);
- ``chat:ownership`` is published after every transition that leaves a chat runnable
  with a missing or stale owner (chatstate ``ChatMachine.Update``; 2.2).
"""

from __future__ import annotations

import pathlib
from dataclasses import replace

from toolcall_sim.model import chatd, chatd_db
from toolcall_sim.model import chattool as ct
from toolcall_sim.model.core import Probe, Publish, Response, TransportError, json_body
from toolcall_sim.model.identity import parse_tool_call_headers
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import load

from test_chatd import CHAT, DB_OFFSET_MS, MIN, START, execute, new_world, start_turn, uuid_of
from test_chattool import SRC, Clock, content, output_answer, start_answer

SCENARIOS = pathlib.Path(__file__).resolve().parent.parent / "scenarios"

FG_20M = execute("toolu_fg", "sleep 1200", "20m")
BG = execute("toolu_bg", "serve", background=True)


# ---------------------------------------------------------------------------
# The variant: what today has and has not
# ---------------------------------------------------------------------------


def test_today_is_the_layer_before_the_stack():
    """docs/contract.md D9: identity and headers (PR 1/4/6), the answer timeout
    (PR 4 per Q9b, PR 6), Q9c (PR 4) and interrupt cancels (PR 5/6) all belong to the
    stack, so ``today`` has none of them and ``contract`` has all of them."""
    today, contract = chatd.TODAY, chatd.CONTRACT
    assert (today.send_identity, today.interrupt_cancels) == (False, False)
    assert (today.tool_layer.agent_answer_timeout, today.tool_layer.snapshot_failure_unknown) == (False, False)
    assert (contract.send_identity, contract.interrupt_cancels) == (True, True)
    assert (contract.tool_layer.agent_answer_timeout, contract.tool_layer.snapshot_failure_unknown) == (True, True)


# ---------------------------------------------------------------------------
# The start's answer is lost (Q9b)
# ---------------------------------------------------------------------------


def test_today_lost_start_answer_waits_for_the_attempt_and_starts_again():
    """Before the stack a start whose answer is lost waits on its context until the
    15-minute attempt timeout, and the retry starts the command again (issue 10; Q9b
    says the agent answer timeout "replaced" this; Go's legacy executeForeground starts on
    cmdCtx, whose 20-minute execute timeout is longer than the attempt). No false
    ``failed`` after 62 s, no answer timer at all."""
    w = new_world([(FG_20M,)], rules="today")
    w.agent.hold_starts = True  # the agent runs the start; its answer never arrives
    start_turn(w)
    assert w.agent.started == ["proc-1-1"]
    w.run(w.t + 2 * MIN)
    assert w.committed() == [] and len(w.starts()) == 1
    assert not w.notes("chattool_result")
    w.run(2_000 + 15 * MIN + 200)
    (t1, _, _), (t2, _, r2) = w.starts()
    assert t2 - t1 >= 15 * MIN
    assert parse_tool_call_headers(r2.headers) is None
    assert w.agent.started == ["proc-1-1", "proc-1-2"]
    assert [n.get("why") for n in w.notes("task_retry")] == ["timeout"]


def test_today_lost_background_start_answer_waits_for_the_attempt():
    """A background start has no command context: before the stack its lost answer kept
    the attempt waiting for 15 minutes (Q9b: "left background starts ... retrying every 15
    minutes"), and the retry starts a second process."""
    w = new_world([(BG,)], rules="today")
    w.agent.hold_starts = True
    start_turn(w)
    w.run(w.t + 14 * MIN)
    assert w.committed() == [] and w.agent.started == ["proc-1-1"]
    w.run(2_000 + 15 * MIN + 200)
    assert w.agent.started == ["proc-1-1", "proc-1-2"]


def test_contract_lost_start_answer_is_unknown_after_one_minute():
    """The contract: the start waits at most the agent answer timeout, then commits
    unknown "did not answer within 1m0s" with the UUID, and nothing starts again
    (docs/contract.md C4.5, C5.2; TestExecuteToolCallAgentAnswerTimeout)."""
    w = new_world([(FG_20M,)])
    w.agent.hold_starts = True
    start_turn(w)
    t_start = w.starts()[0][0]
    w.run(t_start + MIN + 10)
    (res,) = w.committed()
    assert (res.get("kind"), res.get("reason")) == ("unknown", "no_answer")
    assert res.get("at_db_ms") - DB_OFFSET_MS == t_start + MIN
    w.run(w.t + 20 * MIN)
    assert len(w.agent.started) == 1 and res.get("process_id") == uuid_of(w, "toolu_fg")


def test_lost_start_answer_scenario_two_starts_today_one_under_the_contract():
    """scenarios/lost_start_answer.toml (issue 10): the start's answer is lost and nothing
    else happens. today: 2 starts, the second after the 15-minute attempt timeout, and its
    result committed; contract: 1 start and unknown after about a minute."""
    sc = load(SCENARIOS / "lost_start_answer.toml")
    today = run_scenario(sc, "today")
    starts = [r["t_ms"] for r in today.world.trace if r.get("truth") == "process_started"]
    assert len(starts) == 2 and starts[1] - starts[0] >= 15 * MIN
    (row,) = today.tool_call_rows()
    assert [r["kind"] for r in row["results"]] == ["completed"] and row["results"][0]["committed_at_s"] > 900
    contract = run_scenario(sc, "contract")
    (row,) = contract.tool_call_rows()
    assert row["process_starts"] == 1 and [r["kind"] for r in row["results"]] == ["unknown"]
    assert 60 < row["results"][0]["committed_at_s"] < 70
    assert today.expectation_failures() == [] and contract.expectation_failures() == []


# ---------------------------------------------------------------------------
# Q9c: a failed snapshot after the deadline
# ---------------------------------------------------------------------------


def _legacy_wait_until_snapshot(layer: ct.ToolLayer) -> Clock:
    call = ct.ToolCall("call_1", ct.EXECUTE, '{"command":"make test","timeout":"10m"}')
    run = Clock(ct.begin_call(call, None, SRC, "replica-1/g1/c1", CHAT, 0, layer=layer), 0)
    run.answer(start_answer(run.last, "proc-7", None), at_ms=20)
    assert run.last.path == "/api/v0/processes/proc-7/output" and "wait=true" in run.last.query
    run.fire_next()  # the execute deadline ends the blocking read: one snapshot
    assert run.last.query == ""
    run.answer(TransportError(run.last.req_id, "connection reset"), at_ms=10 * MIN + 5)
    return run


def test_today_snapshot_failure_after_deadline_says_timed_out():
    """Before Q9c (docs/contract.md D-Q9 (c), PR 4) Go's legacy waitForProcess answered a
    snapshot that failed after the deadline with "command timed out after <timeout>;
    failed to get output: <err>" and the process ID (coder/coder chattool/execute.go)."""
    r = _legacy_wait_until_snapshot(ct.BEFORE_STACK).result
    assert (r.kind, r.exit_code, r.process_id, r.reason) == ("timed_out", -1, "proc-7", None)
    body = content(r)
    assert body["error"] == ('command timed out after 10m0s; failed to get output: '
                             'Get "http://agent/api/v0/processes/proc-7/output": connection reset')
    assert body["background_process_id"] == "proc-7"


def test_contract_snapshot_failure_after_deadline_is_unknown():
    """C6 / Q9c: the same failure under design B is unknown "not received", never timed out."""
    r = _legacy_wait_until_snapshot(ct.DESIGN_B).result
    assert (r.kind, r.reason) == ("unknown", "not_received")
    assert "timed out" not in content(r)["error"]


def test_before_stack_file_request_has_no_answer_timer():
    """PR 6 brought the answer timeout to edits and writes: before it an edit waits on the
    attempt alone (no timer armed), after it at most 1 minute."""
    call = ct.ToolCall("call_1", ct.WRITE_FILE, '{"path":"/a.txt","content":"x"}')
    before = Clock(ct.begin_call(call, None, SRC, "r/g1/c1", CHAT, 0, layer=ct.BEFORE_STACK), 0)
    after = Clock(ct.begin_call(call, None, SRC, "r/g1/c1", CHAT, 0, layer=ct.DESIGN_B), 0)
    assert before.timers == {} and list(after.timers.values()) == [ct.AGENT_ANSWER_TIMEOUT_MS]


# ---------------------------------------------------------------------------
# Serial tools (docs/contract.md C1.3 step 3)
# ---------------------------------------------------------------------------


def test_serial_tools_run_one_after_another_in_a_batch():
    """[7.3] docs/contract.md C1.3 step 3: tools not marked serial run concurrently, tools marked
    serial (``SerialToolCalls()``) one at a time. Go's chatloop tests wrap a tool as
    ``serialTool`` (TestExecuteLocalTools_BatchRuntime: "one per completing call, plus one
    for the next serial call's start"; TestExecuteLocalToolsToolCallIdentity: the serial
    call sees its own identity). Here execute is marked serial: the second start is sent
    only when the first call has its result, with the same message and its own provider ID
    and a larger age; the write_file call between them is not serial and is sent at once."""
    a = execute("toolu_a", "make a", "5m")
    b = execute("toolu_b", "make b", "5m")
    write = ct.ToolCall("toolu_w", ct.WRITE_FILE, '{"path":"/a.txt","content":"x"}')
    w = new_world([(a, write, b)], rules=replace(chatd.CONTRACT, serial_tools=(ct.EXECUTE,)))
    start_turn(w)
    assert [parse_tool_call_headers(r.headers).tool_call_id for _, _, r in w.starts()] == ["toolu_a"]
    assert len(w.requests("/write-file")) == 1
    w.advance(30_000)
    assert len(w.starts()) == 1
    w.deliver(w.agent.exit(uuid_of(w, "toolu_a"), 0))
    (_, _, ra), (_, _, rb) = w.starts()
    ha, hb = parse_tool_call_headers(ra.headers), parse_tool_call_headers(rb.headers)
    assert (hb.tool_call_id, hb.message_id) == ("toolu_b", ha.message_id)
    assert hb.age_ms - ha.age_ms >= 30_000
    assert w.committed() == []  # one commit for the whole batch, after b
    w.deliver(w.agent.exit(uuid_of(w, "toolu_b"), 0))
    assert sorted(c.get("provider_id") for c in w.committed()) == ["toolu_a", "toolu_b", "toolu_w"]


def test_non_serial_calls_do_not_wait_for_serial_ones():
    """[7.3] The same batch with only write_file marked serial: both executes are sent at once
    (the parallel batch of 1.3), nothing waits."""
    a = execute("toolu_a", "make a", "5m")
    b = execute("toolu_b", "make b", "5m")
    w = new_world([(a, b)], rules=replace(chatd.CONTRACT, serial_tools=(ct.WRITE_FILE,)))
    start_turn(w)
    assert len(w.starts()) == 2


def test_go_serial_tools_are_none_of_the_agent_tools():
    """In Go only the box tools and find_tools opt into serial execution; execute,
    edit_files and write_file run in the parallel batch (chattool ``SerialToolCalls``)."""
    assert not set(chatd.CONTRACT.serial_tools) & {ct.EXECUTE, ct.EDIT_FILES, ct.WRITE_FILE}
    assert chatd.TODAY.serial_tools == chatd.CONTRACT.serial_tools


# ---------------------------------------------------------------------------
# finish_turn's attempt fence (docs/contract.md C2.4)
# ---------------------------------------------------------------------------


def _owned_running_chat():
    db, _ = chatd_db.db_new_chat(chatd.db_empty(), CHAT, [], 1_000, 0)
    db, _ = chatd_db.db_send_user_message(db, CHAT, "hi", 10)
    db, _ = chatd_db.tx_acquire(db, db.chats[CHAT], "w1", "w1/r1", 20)
    chat = db.chats[CHAT]
    rep = chatd.ReplicaState(name="replica-1", worker_id="w1", rules=chatd.CONTRACT)
    task = chatd.Task("w1/t1", "generation", CHAT,
                      chatd_db.TaskFence("w1", "w1/r1", chatd.RUNNING, chat.history_version))
    return rep, db, task


def test_finish_turn_is_fenced_on_the_attempt_that_loaded_the_chat():
    """docs/contract.md C2.4: finishGenerationTurn checks ``generation_attempt == the
    attempt's number`` (requireGenerationAttempt), the number the task loaded, not the row's
    number at the finish (which always matches itself). A RecordGenerationAttempt between
    the load and the finish (another attempt of the same history) fences the finish out."""
    rep, db, task = _owned_running_chat()
    loaded = db.chats[CHAT].generation_attempt
    db, _, _ = chatd_db.tx_begin_generation_attempt(db, db.chats[CHAT], 30)  # someone else's attempt
    after, outcome, eff = chatd.finish_generation_turn(rep, db, task, loaded, 40)
    assert outcome == f"{chatd.EXIT}:{chatd_db.FENCED_ATTEMPT}"
    assert after.chats[CHAT].status == chatd.RUNNING
    assert [e.get("outcome") for e in eff if not isinstance(e, Probe)] == [chatd_db.FENCED_ATTEMPT]
    after, outcome, _ = chatd.finish_generation_turn(rep, db, task, loaded + 1, 40)
    assert outcome == chatd.DONE and after.chats[CHAT].status == chatd.WAITING


# ---------------------------------------------------------------------------
# chat:ownership hints (chatstate ChatMachine.Update; docs/contract.md C2.2)
# ---------------------------------------------------------------------------


def _ownership(effects) -> int:
    return sum(1 for e in effects if isinstance(e, Publish) and e.channel == chatd.CHANNEL_OWNERSHIP)


def test_ownership_hint_after_every_transition_leaving_a_chat_runnable_and_unowned():
    """docs/contract.md C2.2: chat:ownership is published "when a transition leaves a chat
    runnable and unowned", every such transition, not only the one that made it so
    (chatstate publishes it after each Update whose state IsRunnable with ownership
    missing; its tests count ``ownershipPublishCount``). The interrupt of a running chat
    nobody owns yet publishes it again; archiving does not."""
    db, _ = chatd_db.db_new_chat(chatd.db_empty(), CHAT, [], 1_000, 0)
    db, eff = chatd_db.db_send_user_message(db, CHAT, "hi", 10)
    assert _ownership(eff) == 1
    db, eff = chatd_db.db_send_user_message(db, CHAT, "queued", 11)  # queued while unowned
    assert _ownership(eff) == 1
    db, eff = chatd_db.db_interrupt(db, CHAT, 12)
    assert db.chats[CHAT].status == chatd.INTERRUPTING and _ownership(eff) == 1
    db, eff = chatd_db.db_archive(db, CHAT, 13)
    assert _ownership(eff) == 0


def test_ownership_hint_when_the_owner_heartbeat_is_stale():
    """chatstate ``ownershipStaleOrMissing``: an owned runnable chat whose runner's
    heartbeat is older than HeartbeatStaleSeconds also gets the hint after a transition,
    RecordGenerationAttempt included; a fresh heartbeat gets none."""
    rep, db, task = _owned_running_chat()  # heartbeat at db time 20
    stale = db.heartbeat_stale_ms
    _, _, hint = chatd_db.tx_begin_generation_attempt(db, db.chats[CHAT], 20 + stale)
    assert hint == []
    _, _, hint = chatd_db.tx_begin_generation_attempt(db, db.chats[CHAT], 21 + stale)
    assert _ownership(hint) == 1
    _, eff = chatd_db.db_send_user_message(db, CHAT, "more", 21 + stale)
    assert _ownership(eff) == 1
    _, eff = chatd_db.db_send_user_message(db, CHAT, "more", 20 + stale)
    assert _ownership(eff) == 0
