"""The replica's entry points: ``replica_on_timer``, ``replica_on_answer`` and
``replica_on_publish``, which route each input to the loop, runner or task it is for.

Theory of operation
-------------------
The worker's own timers (``acquire``, ``heartbeat``) and each runner's sync timer
(``sync/<chat_id>``) are named plainly; everything else a task waits for is named after
its task and attempt (rule 7), so ``_find_task`` finds the task, and a name whose task,
attempt or call has moved on is a stale timer or a late answer, noted and otherwise
ignored. Only the planted bug of a timed-out batch that goes on routes to an attempt
that has ended (``Task.zombie``, retry.py).
"""

from __future__ import annotations

from .. import chattool
from ..chatd_db import CHANNEL_OWNERSHIP, CHANNEL_UPDATE, Db
from ..core import Response, SetTimer, TransportError, note, probe
from .batch import _call_progress, _commit_assistant, _on_dial
from .retry import _end_task, _start_attempt, _zombie_call, _zombie_progress
from .runner import _acquire, _heartbeat, _observe
from .state import SYNC_PREFIX, TIMED_OUT, TIMER_ACQUIRE, TIMER_HEARTBEAT, Out, ReplicaState, _call_index, _find_task


def replica_on_timer(rep: ReplicaState, db: Db, name: str, now_ms: int, db_now_ms: int) -> Out:
    timing = rep.rules.timing
    if name == TIMER_ACQUIRE:
        # (the loops' effect lists are their own, fresh per call: the re-arm is appended)
        rep, db, eff = _acquire(rep, db, now_ms, db_now_ms)
        eff.append(SetTimer(TIMER_ACQUIRE, timing.acquisition_interval_ms))
        return rep, db, eff
    if name == TIMER_HEARTBEAT:
        db, eff = _heartbeat(rep, db, db_now_ms)
        eff.append(SetTimer(TIMER_HEARTBEAT, timing.heartbeat_interval_ms))
        return rep, db, eff
    if name.startswith(SYNC_PREFIX):
        chat_id = name[len(SYNC_PREFIX) :]
        if chat_id not in rep.runners:
            return rep, db, [note("stale_timer", replica=rep.name, timer=name)]
        rep, db, eff = _observe(rep, db, chat_id, now_ms, db_now_ms, "sync")
        if chat_id in rep.runners:
            eff.append(SetTimer(name, timing.runner_sync_interval_ms))
        return rep, db, eff
    found = _find_task(rep, name)
    if found is None:
        return rep, db, [note("stale_timer", replica=rep.name, timer=name)]
    runner, task, rest = found
    if rest == ["backoff"]:
        if task.attempt is not None:
            return rep, db, [note("stale_timer", replica=rep.name, timer=name)]
        return _start_attempt(rep, db, runner, task, now_ms, db_now_ms)
    if _zombie_call(task, rest) is not None:
        return _zombie_progress(rep, db, runner, task, rest, lambda cs: chattool.on_timer(cs, name, now_ms), db_now_ms)
    att = task.attempt
    if att is None or f"{task.task_id}/{rest[0]}" != att.key or len(rest) < 2:
        return rep, db, [note("stale_timer", replica=rep.name, timer=name)]
    what = rest[1]
    if what == "timeout":
        return _end_task(rep, db, runner, task, TIMED_OUT, [note("attempt_timeout", task=task.task_id)])
    if what == "dial":
        if att.step != "dial":
            return rep, db, [note("stale_timer", replica=rep.name, timer=name)]
        return _on_dial(rep, db, runner, task, None, now_ms, db_now_ms)
    if what == "gen":
        return _commit_assistant(rep, db, runner, task, db_now_ms)
    i = _call_index(what)
    if i is None or i >= len(att.states) or att.states[i] is None or att.results[i] is not None:
        return rep, db, [note("stale_timer", replica=rep.name, timer=name)]
    cs, eff = chattool.on_timer(att.states[i], name, now_ms)
    return _call_progress(rep, db, runner, task, i, cs, eff, now_ms, db_now_ms)


def _awaited(rep: ReplicaState, req_id: str, found=False):
    """(runner, task, call index or None for the dial) of the attempt waiting for this
    answer, or None when nobody waits for it any more (a late answer: its task, attempt
    or call has moved on). ``found``: ``_find_task(rep, req_id)`` when the caller has it."""
    if found is False:
        found = _find_task(rep, req_id)
    if found is None:
        return None
    runner, task, rest = found
    att = task.attempt
    if att is None or len(rest) < 2 or f"{task.task_id}/{rest[0]}" != att.key:
        return None
    if rest[1] == "dial":
        return (runner, task, None) if att.step == "dial" else None
    i = _call_index(rest[1])
    if i is None or i >= len(att.states) or att.states[i] is None or att.results[i] is not None:
        return None
    return runner, task, i


def awaits(rep: ReplicaState, req_id: str) -> bool:
    """Whether an answer to ``req_id`` would still be read (the explorer delivers the
    others at once: their delivery changes nothing)."""
    return _awaited(rep, req_id) is not None


def replica_on_answer(rep: ReplicaState, db: Db, answer: Response | TransportError, now_ms: int, db_now_ms: int) -> Out:
    zombie = _find_task(rep, answer.req_id)
    if zombie is not None and _zombie_call(zombie[1], zombie[2]) is not None:
        return _zombie_progress(rep, db, *zombie, lambda cs: chattool.on_answer(cs, answer, now_ms), db_now_ms)
    found = _awaited(rep, answer.req_id, zombie)  # (the task found once)
    if found is None:
        # (rule coverage: the answer of a task, attempt or call that ended is ignored, C3.5)
        return rep, db, [probe("C3.5.late-answer-ignored"), note("late_answer", replica=rep.name, req_id=answer.req_id)]
    runner, task, i = found
    if i is None:
        return _on_dial(rep, db, runner, task, answer, now_ms, db_now_ms)
    cs, eff = chattool.on_answer(task.attempt.states[i], answer, now_ms)
    return _call_progress(rep, db, runner, task, i, cs, eff, now_ms, db_now_ms)


def publish_changes_nothing(rep: ReplicaState | None, db: Db, channel: str, chat_id: str) -> bool:
    """Whether ``replica_on_publish`` answers this publish with the replica and database it
    was given and no effect, whatever the clocks: a replica that is down, an update of a
    chat it runs no runner for, an update its runner has seen already (the database up and
    the chat's snapshot no newer than the runner's: ``_observe``'s first answers), or an
    ownership change seen by a paused worker (``_acquire`` reads nothing then). Most
    publishes are one of these (a chat's update reaches every replica, and one runs it):
    ``toolcall_sim.model.system.apply`` delivers them without the general step (the same step,
    tests/test_system_publish.py)."""
    if rep is None:
        return True
    if channel == CHANNEL_OWNERSHIP:
        return rep.heartbeats_paused
    if channel != CHANNEL_UPDATE:
        return True
    runner = rep.runners._index.get(chat_id)  # (FMap.get without the call)
    if runner is None:
        return True
    chat = db.chats._index.get(chat_id) if db is not None and db.db_up else None
    return chat is not None and chat.snapshot_version <= runner.seen_snapshot


def replica_on_publish(rep: ReplicaState, db: Db, channel: str, chat_id: str, now_ms: int, db_now_ms: int) -> Out:
    if channel == CHANNEL_OWNERSHIP:
        return _acquire(rep, db, now_ms, db_now_ms)
    if channel == CHANNEL_UPDATE and chat_id in rep.runners:
        return _observe(rep, db, chat_id, now_ms, db_now_ms, "publish")
    return rep, db, []
