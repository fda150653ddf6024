"""The retry wrapper's, the task cancel's and the runner's edges (model/chatd/retry.py and
runner.py; docs/contract.md C1.2, C1.4, C2.1-C2.3, C3.2 step 6): what every outcome of an
attempt does to the runner, which probe and note it gives, that an ended attempt leaves
nothing of itself armed, which calls the planted bug's zombie batch still owns, and how a
runner reads its chat (a read not newer, another owner, a new task's ID).

The direct tests hand ``_end_task`` and ``_cancel_task`` one task each; the sweep runs
the shipped scenarios that cancel, retry, time out or lose the database and checks rule
3 ("stop waiting") on their traces: no timer of an ended attempt or task ever fires
(``stale_timer``), and none is left armed at the end.
"""

from __future__ import annotations

import pathlib

import pytest

from toolcall_sim.model import chatd, chatd_db, chattool
from toolcall_sim.model.chatd import retry
from toolcall_sim.model.chatd import runner as runner_mod
from toolcall_sim.model.chatd.state import DONE, EXIT, RETRY, TIMED_OUT, Attempt, ReplicaState, Runner, Task
from toolcall_sim.model.core import EMPTY, CancelTimer, Note, Probe, SetTimer, replace
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import load

CHAT = "5d2e8f10-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
WORKER, RUNNER = "replica-1-w1", "replica-1-w1/r1"
FENCE = chatd_db.TaskFence(WORKER, RUNNER, chatd.RUNNING, 3)
CALL = chattool.ToolCall("call_a", "execute", '{"command":"true"}')
DB_DOWN = f"{RETRY}:db_down"
FENCED_STATUS = f"{EXIT}:{chatd_db.FENCED_STATUS}"
FENCED_OWNER = f"{EXIT}:{chatd_db.FENCED_OWNER}"


def _task(kind: str = "generation", action: str | None = "execute_local_tools", step: str = "calls",
          backoff_ms: int = 100) -> Task:
    task = Task("replica-1-w1/t1", kind, CHAT, FENCE, attempts=1, backoff_ms=backoff_ms)
    if action is None:
        return task
    return replace(task, attempt=Attempt(f"{task.task_id}/a1", 1, action, step))


def _end(task: Task, outcome: str, rules=chatd.CONTRACT):
    runner = Runner(CHAT, RUNNER, task=task)
    rep = ReplicaState("replica-1", WORKER, rules=rules, runners=EMPTY.set(CHAT, runner))
    return retry._end_task(rep, chatd_db.db_empty(), runner, task, outcome, [])


def _probes(effects) -> list[str]:
    return [e.rule for e in effects if isinstance(e, Probe)]


def _notes(effects, kind: str) -> list:
    return [e for e in effects if isinstance(e, Note) and e.kind == kind]


# ---------------------------------------------------------------------------
# _end_task: each outcome
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("action, outcome, probes", [
    # an interrupt attempt that its timer ended committed nothing (C3.2 step 6); one that
    # finished, failed on the database or was fenced out is no such end
    ("interrupt", TIMED_OUT, ["C3.2.ended-uncommitted", "C1.4.retry-timed-out"]),
    ("interrupt", DB_DOWN, ["C1.4.retry-error"]),
    ("interrupt", DONE, ["C1.4.done"]),
    ("interrupt", FENCED_STATUS, ["C1.4.exit-no-retry"]),
    ("execute_local_tools", TIMED_OUT, ["C1.4.retry-timed-out"]),
    ("generate_assistant", DB_DOWN, ["C1.4.retry-error"]),
    ("execute_local_tools", DONE, ["C1.4.done"]),
])
def test_each_outcome_gives_its_probe(action, outcome, probes):
    kind = "interrupt" if action == "interrupt" else "generation"
    _, _, effects = _end(_task(kind, action), outcome)
    assert _probes(effects) == probes


@pytest.mark.parametrize("outcome, why", [(TIMED_OUT, "timeout"), (DB_DOWN, "db_down")])
def test_a_retried_attempt_backs_off_and_doubles_the_backoff(outcome, why):
    """runTaskWithRetry (C1.4): the attempt ends (its timers canceled), the backoff timer
    is armed with the current backoff, and the next one is doubled."""
    task = _task(backoff_ms=400)
    rep, _, effects = _end(task, outcome)
    after = rep.runners[CHAT].task
    assert (after.attempt, after.backoff_ms, after.attempts) == (None, 800, 1)
    assert SetTimer(f"{task.task_id}/backoff", 400) in effects
    assert CancelTimer(f"{task.attempt.key}/timeout") in effects
    (retried,) = _notes(effects, "task_retry")
    assert (retried.get("why"), retried.get("attempt"), retried.get("backoff_ms")) == (why, 1, 400)


def test_the_backoff_stops_doubling_at_its_cap():
    cap = chatd.CONTRACT.timing.task_retry_max_backoff_ms
    rep, _, _ = _end(_task(backoff_ms=cap * 3 // 4), TIMED_OUT)
    assert rep.runners[CHAT].task.backoff_ms == cap


@pytest.mark.parametrize("outcome, note_kind", [(DONE, "task_done"), (FENCED_STATUS, "task_exit"),
                                                (FENCED_OWNER, "task_exit")])
def test_a_finished_generation_task_leaves_its_runner_in_place(outcome, note_kind):
    rep, _, effects = _end(_task(), outcome)
    assert rep.runners[CHAT].task is None and rep.runners[CHAT].runner_id == RUNNER
    assert [n.get("why") for n in _notes(effects, note_kind)] == [outcome]
    assert not _notes(effects, "runner_dropped")


@pytest.mark.parametrize("outcome, reason, probe", [
    (DONE, "abandoned", "C2.3.abandon-released"),
    (FENCED_OWNER, "owner_changed", "C2.3.abandon-owner-moved"),
])
def test_an_abandon_that_released_or_lost_the_chat_drops_its_runner(outcome, reason, probe):
    """C2.3: an abandon that cleared the owner, or found another owner, is this runner's
    end; the note says which."""
    rep, _, effects = _end(_task("abandon", "abandon", "calls"), outcome)
    assert CHAT not in rep.runners
    assert [n.get("reason") for n in _notes(effects, "runner_dropped")] == [reason]
    assert probe in _probes(effects)


def test_an_abandon_fenced_out_otherwise_keeps_its_runner():
    """Another status or history is not another owner: the runner stays for the chat's
    next change."""
    rep, _, effects = _end(_task("abandon", "abandon", "calls"), FENCED_STATUS)
    assert CHAT in rep.runners and not _notes(effects, "runner_dropped")


def test_the_planted_timeout_bug_keeps_only_a_timed_out_batch_running():
    """attempt_timeout_stops_calls=False leaves an execute batch running after its
    attempt's TIMER; an attempt of that batch that ends any other way (its commit met the
    database down) ends as the contract says, its timeout timer canceled."""
    rules = replace(chatd.CONTRACT, attempt_timeout_stops_calls=False)
    task = _task()
    rep, _, effects = _end(task, TIMED_OUT, rules)
    assert rep.runners[CHAT].task.zombie == task.attempt
    rep, _, effects = _end(task, DB_DOWN, rules)
    assert rep.runners[CHAT].task.zombie is None
    assert CancelTimer(f"{task.attempt.key}/timeout") in effects


# ---------------------------------------------------------------------------
# _cancel_task (rule 3): stop waiting
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind, action, step, timers", [
    ("generation", "generate_assistant", "generate", ["backoff", "a1/timeout", "a1/gen"]),
    ("generation", "execute_local_tools", "dial", ["backoff", "a1/timeout", "a1/dial"]),
    ("interrupt", "interrupt", "dial", ["backoff", "a1/timeout", "a1/dial"]),
    ("generation", "execute_local_tools", "calls", ["backoff", "a1/timeout"]),
    ("generation", None, "", ["backoff"]),  # backing off between attempts
])
def test_a_canceled_task_disarms_what_its_step_armed(kind, action, step, timers):
    """Rule 3: the backoff, the attempt's timeout and the timer of the step it waits in
    (the model's answer, the dial) are canceled with the task."""
    task = _task(kind, action, step)
    effects = retry._cancel_task(task)
    # (a cancel of a timer that is not armed changes nothing: only what must go is checked)
    assert {f"{task.task_id}/{t}" for t in timers} <= {e.name for e in effects if isinstance(e, CancelTimer)}
    # an interrupt canceled mid-attempt commits nothing (C3.2 step 6)
    assert _probes(effects) == (["C3.2.ended-uncommitted"] if kind == "interrupt" else [])
    (canceled,) = _notes(effects, "task_canceled")
    assert canceled.get("kind") == kind


# ---------------------------------------------------------------------------
# The sweep: no timer of an ended attempt fires or stays armed
# ---------------------------------------------------------------------------

SCENARIOS = pathlib.Path(__file__).resolve().parent.parent / "scenarios"
# scenarios whose tasks are canceled, retried, timed out, fenced out or lose the database
SWEPT = ("smoke_retry", "lost_start_answer", "db_outage_during_batch", "db_outage_outlives_lease",
         "edit_while_interrupting", "fence_status_interrupt_during_commit", "us01_ownership_change",
         "us02_interrupt_stops_foreground", "us07_interrupt_unreachable_agent", "edit_before_calls",
         "takeover_by_named_replica")


def _live(system, node: str, name: str) -> bool:
    """Whether the replica would act on the timer ``name`` if it fired now (not a
    ``stale_timer``): the task, attempt, step or call it names is still waiting."""
    rep = system.replicas.get(node)
    if not isinstance(rep, ReplicaState):
        return True  # not a chatd replica's timer
    _, _, effects = chatd.replica_on_timer(rep, system.db, name, system.now_ms, system.now_ms)
    return not _notes(effects, "stale_timer")


@pytest.mark.parametrize("variant", ["today", "contract"])
@pytest.mark.parametrize("scenario", SWEPT)
def test_no_timer_outlives_what_it_waits_for(scenario, variant):
    world = run_scenario(load(SCENARIOS / f"{scenario}.toml"), variant).world
    assert [rec for rec in world.trace if rec.get("note") == "stale_timer"] == []
    system = world.system
    assert [name for (node, name) in system.timers if not _live(system, node, name)] == []


# ---------------------------------------------------------------------------
# The planted bug's zombie batch: only its own attempt's waiting calls are routed to it
# ---------------------------------------------------------------------------


class _CallState:
    """A stand-in for a call's chattool state: the zombie code reads only ``result``."""

    def __init__(self, name: str, result=None):
        self.name, self.result = name, result


def _zombie_task(n_calls: int = 3) -> Task:
    task = _task()
    states = tuple(_CallState(f"s{i}") for i in range(n_calls))
    zombie = replace(task.attempt, states=states, results=(None,) * n_calls)
    # the retried attempt a2 is the current one; a1 goes on under the planted bug
    return replace(task, attempts=2, attempt=Attempt(f"{task.task_id}/a2", 2, "execute_local_tools", "dial"),
                   zombie=zombie)


def test_only_the_zombie_attempts_own_waiting_calls_are_routed_to_it():
    task = _zombie_task(2)
    assert retry._zombie_call(task, ["a1", "c1:start"]) == 1
    assert retry._zombie_call(task, ["a2", "c1:start"]) is None  # the current attempt's call
    assert retry._zombie_call(task, ["a0", "c1:start"]) is None
    assert retry._zombie_call(task, ["a1"]) is None  # no call named
    assert retry._zombie_call(task, ["a1", "c2:start"]) is None  # no such call
    assert retry._zombie_call(task, ["a1", "c7:start"]) is None
    done = replace(task, zombie=replace(task.zombie, results=(None, "result")))
    assert retry._zombie_call(done, ["a1", "c1:start"]) is None  # that call already has its result


def test_a_zombie_call_that_moves_on_changes_only_its_own_state():
    task = _zombie_task(3)
    runner = Runner(CHAT, RUNNER, task=task)
    rep = ReplicaState("replica-1", WORKER, runners=EMPTY.set(CHAT, runner))
    moved = _CallState("s1'")
    rep, _, _ = retry._zombie_progress(rep, chatd_db.db_empty(), runner, task, ["a1", "c1:start"],
                                       lambda cs: (moved, []), 0)
    zombie = rep.runners[CHAT].task.zombie
    assert [cs.name for cs in zombie.states] == ["s0", "s1'", "s2"]
    assert zombie.results == (None, None, None)


# ---------------------------------------------------------------------------
# The runner's read and the worker's poll (runner.py; C1.2, C2.1-C2.3)
# ---------------------------------------------------------------------------


def _owned_chat(worker_id: str = WORKER, runner_id: str = RUNNER, db_now_ms: int = 20):
    db, _ = chatd_db.db_new_chat(chatd_db.db_empty(), CHAT, [()], 1_000, 0)
    db, _ = chatd_db.db_send_user_message(db, CHAT, "go", 10)
    db, _ = chatd_db.tx_acquire(db, db.chats[CHAT], worker_id, runner_id, db_now_ms)
    return db


def _replica(runner: Runner | None = None) -> ReplicaState:
    rep = ReplicaState("replica-1", WORKER, next_seq=2)
    return rep if runner is None else replace(rep, runners=EMPTY.set(CHAT, runner))


def test_a_read_that_is_not_newer_changes_nothing():
    """A runner ignores a snapshot it has seen: no task, no probe, no effect at all (a
    publish the world delivers quietly must be effect-free, model/system.py)."""
    db = _owned_chat()
    chat = db.chats[CHAT]
    runner = Runner(CHAT, RUNNER, seen_snapshot=chat.snapshot_version, seen_history=chat.history_version,
                    seen_status=chat.status)
    rep = _replica(runner)
    assert runner_mod._observe(rep, db, CHAT, 0, 0, "publish") == (rep, db, [])


def test_a_runner_whose_chat_has_another_owner_is_dropped_whoever_it_is():
    """C2.3: any other owner ends this runner, whether its IDs sort before or after ours."""
    for other in ("a-replica-w9", "z-replica-w9"):
        db = _owned_chat(other, f"{other}/r1")
        rep, _, effects = runner_mod._observe(_replica(Runner(CHAT, RUNNER)), db, CHAT, 0, 0, "publish")
        assert CHAT not in rep.runners
        assert [n.get("reason") for n in _notes(effects, "runner_dropped")] == ["owner_changed"]


def test_each_task_a_runner_starts_gets_its_own_id():
    """Every timer and request of a task is named after its ID (rule 7), so two tasks of
    one runner never share one."""
    db = _owned_chat()
    rep, db, first = runner_mod._observe(_replica(Runner(CHAT, RUNNER)), db, CHAT, 0, 0, "acquired")
    db, _ = chatd_db.db_interrupt(db, CHAT, 30)
    rep, db, second = runner_mod._observe(rep, db, CHAT, 0, 0, "publish")
    started = [(n.get("kind"), n.get("task")) for n in _notes(first + second, "task_started")]
    assert [k for k, _ in started] == ["generation", "interrupt"]
    assert started[0][1] != started[1][1]


def test_the_poll_says_when_it_expired_stale_heartbeats():
    stale_ms = chatd.CONTRACT.timing.heartbeat_stale_ms
    db = _owned_chat(db_now_ms=0)
    _, _, effects = runner_mod._acquire(_replica(), db, 0, stale_ms)  # the row is exactly at the limit
    assert "C2.2.expire" not in _probes(effects)
    _, _, effects = runner_mod._acquire(_replica(), db, 0, stale_ms + 1)
    assert "C2.2.expire" in _probes(effects)


@pytest.mark.parametrize("variant, probe", [("contract", "C4.1.age-from-db"), ("today", "C4.1.no-identity")])
def test_a_batch_says_whether_its_calls_carry_an_identity(variant, probe):
    """C4.1: the contract's batch measures the calls' age from the database clock and sends
    the identity; today's sends none."""
    db = _owned_chat()
    db, _ = chatd_db.tx_commit_assistant(db, db.chats[CHAT], (CALL,), 30)
    rep = replace(_replica(Runner(CHAT, RUNNER)), rules=chatd.VARIANTS[variant])
    _, _, effects = runner_mod._observe(rep, db, CHAT, 0, 40, "acquired")
    assert probe in _probes(effects)
    assert {"C4.1.age-from-db", "C4.1.no-identity"} - {probe} & set(_probes(effects)) == set()


def test_a_reacquired_chat_gets_a_runner_id_never_used_before():
    """C2.1: each claim is a new runner; its ID fences every task of the claim (C2.4), so
    an ID handed out again after tasks were started would let the old claim's tasks pass
    the new claim's fence."""
    db, _ = chatd_db.db_new_chat(chatd_db.db_empty(), CHAT, [(CALL,)], 1_000, 0)
    db, _ = chatd_db.db_send_user_message(db, CHAT, "go", 0)
    rep, db, _ = runner_mod._acquire(_replica(), db, 0, 0)
    first = rep.runners[CHAT]
    assert first.task is not None  # the claim started its generation task
    stale_ms = chatd.CONTRACT.timing.heartbeat_stale_ms
    rep, db, _ = runner_mod._acquire(rep, db, 0, stale_ms + 1)  # our own heartbeat went stale
    second = rep.runners[CHAT]
    assert second.runner_id != first.runner_id and db.chats[CHAT].runner_id == second.runner_id
    assert second.task.task_id != first.task.task_id


def test_one_poll_claims_at_most_the_batch_size():
    """C2.1: a poll claims up to chatworker's defaultAcquisitionBatchSize (10) runnable
    chats; the rest wait for the next poll (or a hint). Go's number, not the model's name
    for it: 11 chats, 10 claimed."""
    db = chatd_db.db_empty()
    n = 11
    for i in range(n):
        chat_id = f"00000000-0000-4000-8000-{i:012d}"
        db, _ = chatd_db.db_new_chat(db, chat_id, [()], 1_000, 0)
        db, _ = chatd_db.db_send_user_message(db, chat_id, "go", 0)
    rep, db, _ = runner_mod._acquire(_replica(), db, 0, 0)
    assert len(rep.runners) == 10
    assert sum(1 for c in db.chats.values() if c.owned) == 10


# ---------------------------------------------------------------------------
# The interrupt's selection probes and the planted timeout bug's hook
# ---------------------------------------------------------------------------


def test_an_interrupted_file_tool_gets_its_file_cancel():
    """C3.2 step 2: edit_files and write_file calls each get a cancel of their own
    (stop run age 0), probed as such."""
    from toolcall_sim.model.chatd import interrupt as chatd_interrupt
    edit = chattool.ToolCall("e", "edit_files", '{"files":[{"path":"/a.txt","edits":[{"search":"a","replace":"b"}]}]}')
    write = chattool.ToolCall("w", "write_file", '{"path":"/a.txt","content":"x"}')
    targets = chatd.CONTRACT.cancels_for((edit, write))
    assert [plan.tool for _, plan in targets] == ["edit_files", "write_file"]
    assert _probes(chatd_interrupt._selection_probes(True, (edit, write), targets)) == ["C3.2.cancel-file"] * 2


@pytest.mark.parametrize("action, step", [("execute_local_tools", "dial"), ("execute_local_tools", "generate"),
                                          ("generate_assistant", "generate"), ("interrupt", "calls")])
def test_the_planted_timeout_bug_leaves_only_a_running_batch_behind(action, step):
    """attempt_timeout_stops_calls=False keeps a timed-out attempt only while its execute
    batch's calls run (step calls); a dial, a model answer or an interrupt ends with it."""
    rules = replace(chatd.CONTRACT, attempt_timeout_stops_calls=False)
    att = Attempt("replica-1-w1/t1/a1", 1, action, step)
    assert rules.batch_left_running(att, timed_out=True) is None
    assert rules.batch_left_running(replace(att, action="execute_local_tools", step="calls"), timed_out=True) is not None
