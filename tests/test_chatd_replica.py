"""The replica's entry points route every input by its name (model/chatd/replica.py;
the chatd package's Rules 3 and 7; docs/contract.md C1.4, C2.1, C2.2, C3.5).

Rule 7: every timer name and request ID of a task starts with ``<worker_id>/t<n>``, an
attempt's with ``<task>/a<m>``, a call's with ``<attempt>/c<i>``; the worker's own loops
are ``acquire`` and ``heartbeat``. ``replica_on_timer`` and ``replica_on_answer`` act
only on a name that names what is still waiting (the current attempt, its step, a call
of its batch that was begun and has no result yet); any other is a stale timer or a late
answer (Rule 3, C3.5: what a canceled or ended attempt asked for is dropped), noted and
nothing else. ``awaits`` says the same for the explorer. The cases:

- a task retried ten times (C1.4, no retry limit), whose earlier attempts' timers and
  answers come late: during the backoff, while a later attempt runs, and when the
  attempt numbers no longer sort as strings (``a9`` after ``a10``);
- the names of a running batch that name no waiting call (a done call, a call the batch
  does not have, one a serial batch has not begun, the dial the attempt has left);
- a worker ID that sorts before or between the loops' timer names (a worker ID is
  opaque: Go's is a UUID), and the loops' timers fired from a replayed action file,
  whose names are strings decoded from JSON;
- the planted bug whose timed-out batch goes on (``attempt_timeout_stops_calls``): the
  answers of its calls reach it;
- ``publish_changes_nothing``, the system's shortcut for a publish the replica ignores,
  against the handler's own answer.

The worlds are tests/test_chatd.py's (its stub agent holds each output read until the
process exits, so an attempt's read is answered when the test says).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace

import pytest

from toolcall_sim.model import chatd
from toolcall_sim.model import system as msys
from toolcall_sim.model.core import Response, note, probe

from test_chatd import BG, CHAT, FG_20M, MIN, World, execute, new_world, start_turn

REPLICA = "replica-1"


def _task(w: World, replica: str = REPLICA):
    return w.reps[replica].runners[CHAT].task


def _stale(rep, name: str) -> list:
    return [note("stale_timer", replica=rep.name, timer=name)]


def _late(rep, req_id: str) -> list:
    return [probe("C3.5.late-answer-ignored"), note("late_answer", replica=rep.name, req_id=req_id)]


def _assert_stale_timer(system: msys.System, name: str):
    """Rule 7: the timer names nothing that waits: noted, the replica and database as they were."""
    rep, db = system.replicas[REPLICA], system.db
    out = chatd.replica_on_timer(rep, db, name, system.now_ms, system.now_ms)
    assert out[0] is rep and out[1] is db, name
    assert out[2] == _stale(rep, name), name


def _assert_late_answer(system: msys.System, req_id: str):
    """Rule 3, C3.5: nobody waits for this answer any more: ignored, and ``awaits`` says so."""
    rep, db = system.replicas[REPLICA], system.db
    assert not chatd.awaits(rep, req_id), req_id
    out = chatd.replica_on_answer(rep, db, Response(req_id, 200), system.now_ms, system.now_ms)
    assert out[0] is rep and out[1] is db, req_id
    assert out[2] == _late(rep, req_id), req_id


# ---------------------------------------------------------------------------
# A task retried ten times: the earlier attempts' timers and answers come late
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Retries:
    backoff: msys.System  # a1 timed out, the task backs off (no attempt)
    third: msys.System  # a3 runs, its call waiting
    tenth: msys.System  # a10 runs, its call waiting
    keys: dict  # attempt number -> key
    late: dict  # checkpoint -> the req_ids noted late when an earlier attempt's process exited
    committed: int  # results committed over the whole run


def _run_to_timeout(w: World):
    """To the current attempt's 15-minute timer (C1.4): the task backs off."""
    key = _task(w).attempt.key
    w.run(w.s.timers.get((REPLICA, f"{key}/timeout")).due_ms)
    assert _task(w).attempt is None


def _run_to_attempt(w: World, number: int, keys: dict):
    while _task(w).attempt is None or _task(w).attempt.number < number:
        if _task(w).attempt is not None:
            _run_to_timeout(w)
        w.advance(chatd.CONTRACT.timing.task_retry_max_backoff_ms)
        att = _task(w).attempt
        keys[att.number] = att.key
    att = _task(w).attempt
    assert att.number == number and att.states[0] is not None and att.results == (None,)


def _late_after_exit(w: World, pid: str) -> list[str]:
    mark = len(w.notes("late_answer"))
    w.deliver(w.agent.exit(pid))
    return [n.get("req_id") for n in w.notes("late_answer")[mark:]]


@functools.cache
def _retries() -> _Retries:
    """today's batch of one 20-minute call: every attempt times out at 15 minutes and
    starts a new process (``proc-1-<attempt>``), whose output read stays open until the
    test exits that process."""
    w = new_world([(FG_20M,)], rules="today")
    start_turn(w)
    keys = {1: _task(w).attempt.key}
    _run_to_timeout(w)
    backoff = w.s
    late = {"backoff": _late_after_exit(w, "proc-1-1")}
    _run_to_attempt(w, 3, keys)
    third = w.s
    late["third"] = _late_after_exit(w, "proc-1-2")
    _run_to_attempt(w, 10, keys)
    tenth = w.s
    late["tenth"] = _late_after_exit(w, "proc-1-9")
    assert w.agent.started == [f"proc-1-{n}" for n in range(1, 11)]
    return _Retries(backoff, third, tenth, keys, late, len(w.committed()))


def test_an_earlier_attempts_answer_is_late_whatever_its_number():
    """C1.4, C3.5: the output read of an attempt that timed out is answered when its
    process exits: while the task backs off, while attempt 3 runs, and while attempt 10
    runs (``a9`` sorts after ``a10``); each answer is dropped and changes nothing."""
    r = _retries()
    assert [req.rsplit("/", 1)[0] for req in r.late["backoff"]] == [r.keys[1]]
    assert [req.rsplit("/", 1)[0] for req in r.late["third"]] == [r.keys[2]]
    assert [req.rsplit("/", 1)[0] for req in r.late["tenth"]] == [r.keys[9]]
    assert r.committed == 0  # no attempt's call got another attempt's output
    # and ``awaits`` tells the explorer so (the same answer, handed to the state before it came)
    for checkpoint in ("backoff", "third", "tenth"):
        _assert_late_answer(getattr(r, checkpoint), r.late[checkpoint][0])


@pytest.mark.parametrize("checkpoint, earlier", [("backoff", 1), ("third", 2), ("third", 1), ("tenth", 9),
                                                 ("tenth", 1)])
def test_an_earlier_attempts_timer_is_stale(checkpoint, earlier):
    """Rule 3, Rule 7: the 15-minute timer of an earlier attempt names nothing that waits
    (the current attempt has its own), during the backoff or under a later attempt,
    however the attempt numbers sort as strings."""
    r = _retries()
    _assert_stale_timer(getattr(r, checkpoint), f"{r.keys[earlier]}/timeout")


def test_the_current_attempts_timer_still_ends_it():
    """The same name of the running attempt is its timeout (C1.4): the attempt ends and
    the task backs off to an eleventh."""
    r = _retries()
    rep = r.tenth.replicas[REPLICA]
    rep, _, effects = chatd.replica_on_timer(rep, r.tenth.db, f"{r.keys[10]}/timeout", r.tenth.now_ms,
                                             r.tenth.now_ms)
    assert rep.runners[CHAT].task.attempt is None
    assert probe("C1.4.retry-timed-out") in effects


# ---------------------------------------------------------------------------
# A running batch: the names that name no waiting call
# ---------------------------------------------------------------------------


@functools.cache
def _batch() -> tuple[msys.System, str, str, str]:
    """contract: a foreground call (c0, its output read open) and a background one (c1,
    answered at its start: it has its result). -> (system, attempt key, c0's open
    request, c1's answered start request)."""
    w = new_world([(FG_20M, BG)])
    start_turn(w)
    att = _task(w).attempt
    assert att.step == "calls" and att.results[0] is None and att.results[1] is not None
    (bg_start,) = [req.req_id for _, _, req in w.starts() if req.req_id.startswith(att.states[1].req_prefix + ":")]
    return w.s, att.key, att.states[0].pending_req_id, bg_start


@functools.cache
def _generating() -> tuple[msys.System, str]:
    """A generation attempt waiting for the model's answer (step ``generate``, no dial)."""
    w = new_world([(FG_20M,)])
    w.user(chatd.db_send_user_message, CHAT, "go")
    w.run(w.t + 1_000)
    att = _task(w).attempt
    assert (att.action, att.step) == ("generate_assistant", "generate")
    return w.s, att.key


@functools.cache
def _serial() -> tuple[msys.System, str]:
    """Rule 9 with execute made serial: the second call waits for the first's result, not
    begun (no state, no request, no timer of its own)."""
    rules = replace(chatd.CONTRACT, serial_tools=("execute",))
    w = new_world([(execute("toolu_a", "sleep 1200", "20m"), execute("toolu_b", "sleep 1200", "20m"))], rules=rules)
    start_turn(w)
    att = _task(w).attempt
    assert att.states[0] is not None and att.states[1] is None and att.results == (None, None)
    return w.s, att.key


@pytest.mark.parametrize("kind, suffix, why", [
    ("timer", "dial", "the attempt has left its dial"),
    ("timer", "c1:answer1", "call 1 has its result"),
    ("timer", "c2:answer1", "the batch has calls 0 and 1"),
    ("timer", "c7:answer1", "the batch has calls 0 and 1"),
    ("timer", "c0", "no call's name (chattool appends :<kind><n>)"),
    ("answer", "dial", "the dial was answered"),
    ("answer", "c2:r1", "the batch has calls 0 and 1"),
    ("answer", "c7:r1", "the batch has calls 0 and 1"),
    ("answer", "c0", "no call's name"),
])
def test_a_batch_name_that_names_no_waiting_call_is_ignored(kind, suffix, why):
    """Rule 7: a stale timer or a late answer (C3.5) under the running attempt."""
    system, key, _, _ = _batch()
    (_assert_stale_timer if kind == "timer" else _assert_late_answer)(system, f"{key}/{suffix}")


def test_the_start_answer_of_a_call_with_its_result_is_late():
    """A start answered twice (the network repeats it): the call took the first."""
    system, _, _, bg_start = _batch()
    _assert_late_answer(system, bg_start)


def test_the_open_read_is_awaited():
    """``awaits``: the one request of the batch still open is read; the others are not."""
    system, key, open_read, bg_start = _batch()
    rep = system.replicas[REPLICA]
    assert chatd.awaits(rep, open_read)
    assert not chatd.awaits(rep, bg_start) and not chatd.awaits(rep, f"{key}/dial")
    assert not chatd.awaits(rep, "replica-2-w1/t3/a1/c0:r5")  # another worker's


def test_a_dial_name_is_stale_while_the_model_answers():
    """A generation attempt that asks the model has no dial: its dial timer and answer name nothing."""
    system, key = _generating()
    _assert_stale_timer(system, f"{key}/dial")
    _assert_late_answer(system, f"{key}/dial")


def test_a_serial_call_not_begun_has_no_timer_and_no_answer():
    system, key = _serial()
    _assert_stale_timer(system, f"{key}/c1:answer1")
    _assert_late_answer(system, f"{key}/c1:r1")


# ---------------------------------------------------------------------------
# The worker's own timers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("replica", ["0c8f2d1e", "b3e1a9f0"])
def test_a_workers_id_does_not_decide_which_loop_a_timer_runs(replica):
    """A worker ID is opaque (Go's is a UUID): one that sorts before ``acquire`` or between
    ``acquire`` and ``heartbeat`` still runs its tasks' timers (the 15-minute timeout
    retries the attempt, C1.4) and its loops (C2.1 claims the chat, C2.2 renews it)."""
    w = new_world([(FG_20M,)], rules="today", replicas=(replica,))
    start_turn(w)
    assert CHAT in w.reps[replica].runners and w.chat().worker_id == w.reps[replica].worker_id
    w.run(2_000 + 15 * MIN + 100)
    assert [n.get("why") for n in w.notes("task_retry")] == ["timeout"]
    assert len(w.agent.started) == 2
    # the heartbeat kept the lease: no other claim of the chat, no expiry
    assert w.chat().runner_id == w.reps[replica].runners[CHAT].runner_id


@pytest.mark.parametrize("loop", [chatd.TIMER_ACQUIRE, chatd.TIMER_HEARTBEAT])
def test_a_replayed_loop_timer_is_the_loop(loop):
    """A counterexample or trace file replays its actions from JSON (sim/world/replay.py),
    so a timer's name is a string read from the file, not the model's own: the step is
    the one the run made."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    system = w.s
    timer = system.timers.get((REPLICA, loop))
    fired = msys.Fire(timer.due_ms, REPLICA, loop)
    replayed = msys.action_from_json(json.loads(json.dumps(msys.action_to_json(fired))))
    assert replayed == fired and replayed.name is not loop
    want, got = msys.apply(system, fired), msys.apply(system, replayed)
    assert got.records == want.records and got.armed == want.armed and got.system == want.system
    assert not [r for r in got.records if r.get("note") == "stale_timer"]


# ---------------------------------------------------------------------------
# The planted bug whose timed-out batch goes on
# ---------------------------------------------------------------------------


def test_the_answer_of_a_timed_out_batch_that_goes_on_reaches_it():
    """attempt_timeout_stops_calls=False: attempt 1's batch outlives its timer; when its
    process exits, the read it left open is answered and that batch commits (the bug a
    checker must catch), while attempt 2 waits on its own read."""
    rules = replace(chatd.CONTRACT, attempt_timeout_stops_calls=False)
    w = new_world([(FG_20M,)], rules=rules)
    start_turn(w)
    first = _task(w).attempt.key
    _run_to_timeout(w)
    w.advance(rules.timing.task_retry_initial_backoff_ms)
    task = _task(w)
    assert task.zombie is not None and task.zombie.key == first and task.attempt.number == 2
    (pid,) = {p for p in w.agent.procs}
    w.deliver(w.agent.exit(pid))
    assert [n.get("attempt") for n in w.notes("timed_out_attempt_committed")] == [1]


# ---------------------------------------------------------------------------
# publish_changes_nothing: the system's shortcut, against the handler
# ---------------------------------------------------------------------------


def _with_runner(rep, **seen):
    runner = rep.runners[CHAT]
    return replace(rep, runners=rep.runners.set(CHAT, replace(runner, **seen)))


def test_a_quiet_publish_is_one_the_handler_ignores():
    """``publish_changes_nothing`` is true exactly when ``replica_on_publish`` answers an
    update with the replica and database it was given and no effect (C1.2: a runner
    ignores a snapshot that is not newer), and for an ownership hint when the worker's
    loops are paused; a replica that is down ignores everything."""
    system, _, _, _ = _batch()
    db = system.db
    snapshot = db.chats[CHAT].snapshot_version
    rep = _with_runner(system.replicas[REPLICA], seen_snapshot=snapshot)
    down = chatd.db_set_up(db, False)
    cases = [
        (rep, db, CHAT),  # seen: quiet
        (_with_runner(rep, seen_snapshot=snapshot + 1), db, CHAT),  # ahead of the chat: quiet
        (_with_runner(rep, seen_snapshot=snapshot - 1), db, CHAT),  # behind: it reads the chat
        (rep, down, CHAT),  # the database is down: the runner notes it
        (rep, db, "3a0c5f7e-0000-4000-8000-000000000000"),  # a chat it runs no runner for: quiet
    ]
    for r, d, chat_id in cases:
        out = chatd.replica_on_publish(r, d, chatd.CHANNEL_UPDATE, chat_id, system.now_ms, system.now_ms)
        quiet = out[0] is r and out[1] is d and out[2] == []
        assert chatd.publish_changes_nothing(r, d, chatd.CHANNEL_UPDATE, chat_id) == quiet, (chat_id, d.db_up)
    assert [chatd.publish_changes_nothing(r, d, chatd.CHANNEL_UPDATE, c) for r, d, c in cases] == \
        [True, True, False, False, True]
    assert chatd.publish_changes_nothing(None, db, chatd.CHANNEL_UPDATE, CHAT)
    assert chatd.publish_changes_nothing(None, db, chatd.CHANNEL_OWNERSHIP, CHAT)
    assert not chatd.publish_changes_nothing(rep, db, chatd.CHANNEL_OWNERSHIP, CHAT)
    paused = chatd.replica_pause_heartbeats(rep, True)
    assert chatd.publish_changes_nothing(paused, db, chatd.CHANNEL_OWNERSHIP, CHAT)
    assert chatd.replica_on_publish(paused, db, chatd.CHANNEL_OWNERSHIP, CHAT, 0, 0) == (paused, db, [])
