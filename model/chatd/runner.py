"""The worker's loops (rule 1: acquisition and heartbeats) and the runner of each owned chat
(rule 2: read the chat, start the task its status asks for).

Theory of operation
-------------------
``_acquire`` claims up to ``ACQUISITION_BATCH_SIZE`` runnable chats that are unowned or
whose runner's heartbeat is stale, gives each a new runner and lets it read the chat at
once. ``_heartbeat`` upserts a heartbeat per runner. A paused worker runs neither loop.
``_observe`` is the runner's read: a snapshot that is not newer is ignored, a chat owned
by someone else drops the runner, and a change of history or status cancels the running
task WITHOUT waiting (rule 3) and starts the task for the new status (``TASK_FOR_STATUS``).
"""

from __future__ import annotations

from ..chatd_db import (
    ARCHIVED,
    ERROR,
    INTERRUPTING,
    REQUIRES_ACTION,
    RUNNABLE,
    RUNNING,
    WAITING,
    Db,
    TaskFence,
    cleanup_heartbeats,
    heartbeat_stale,
    tx_acquire,
    upsert_heartbeats,
)
from ..core import SetTimer, note, probe, replace
from .rules import ACQUISITION_BATCH_SIZE
from .retry import _cancel_task, _drop_runner, _start_attempt
from .state import SYNC_PREFIX, Out, ReplicaState, Runner, Task, _new_id, _put_runner

# Runner rule 2: chat status -> the task its runner starts (None: not modelled, stay idle).
TASK_FOR_STATUS = {
    RUNNING: "generation",
    INTERRUPTING: "interrupt",
    REQUIRES_ACTION: None,  # the dynamic-tool timeout task; dynamic tools are not modelled
    WAITING: "abandon",
    ERROR: "abandon",
    ARCHIVED: "abandon",
}

# Rule coverage (model/probes.py): the task the runner starts for the chat's status
# (C1.2; the interrupt task is C3.1's), and how the old runner learnt of a new owner (C2.3).
_TASK_PROBES = {
    "generation": probe("C1.2.start-generation"),
    "interrupt": probe("C3.1.start-interrupt-task"),
    "abandon": probe("C1.2.start-abandon"),
    None: probe("C1.2.no-task"),
}
# (a runner reads its chat right after acquiring it, which it then owns: "acquired" never
# meets another owner)
_OWNER_CHANGED_PROBES = {
    "publish": probe("C2.3.noticed-on-publish"),
    "sync": probe("C2.3.noticed-on-sync"),
}


def _acquire(rep: ReplicaState, db: Db, now_ms: int, db_now_ms: int) -> Out:
    if rep.heartbeats_paused:
        return rep, db, []
    if not db.db_up:
        return rep, db, [probe("C2.1.db-down"), note("db_down", replica=rep.name, op="acquire")]
    stale_ms = rep.rules.timing.heartbeat_stale_ms
    before = db
    db = cleanup_heartbeats(db, db_now_ms, stale_ms)
    effects: list = [] if db is before else [probe("C2.2.expire")]
    candidates = [
        chat
        for chat in db.chats.values()
        if chat.status in RUNNABLE and (not chat.owned or heartbeat_stale(db, chat, db_now_ms, stale_ms))
    ][:ACQUISITION_BATCH_SIZE]
    for chat in candidates:
        # Rule coverage (model/probes.py): whose chat the poll claims (C2.1).
        if not chat.owned:
            effects.append(probe("C2.1.claim-unowned"))
        elif chat.chat_id in rep.runners:
            effects.append(probe("C2.1.reclaim-own"))
        else:
            effects.append(probe("C2.1.claim-stale"))
        if chat.chat_id in rep.runners:
            # Our own runner went stale (heartbeats stopped): replace it, like the old
            # runner would clean itself up on seeing the new runner_id.
            rep, eff = _drop_runner(rep, chat.chat_id, "reacquired")
            effects += eff
        rep, runner_id = _new_id(rep, "/r")
        db, eff = tx_acquire(db, chat, rep.worker_id, runner_id, db_now_ms)
        effects += eff
        rep = replace(rep, runners=rep.runners.set(chat.chat_id, Runner(chat.chat_id, runner_id)))
        effects.append(SetTimer(SYNC_PREFIX + chat.chat_id, rep.rules.timing.runner_sync_interval_ms))
        rep, db, eff = _observe(rep, db, chat.chat_id, now_ms, db_now_ms, "acquired")
        effects += eff
    return rep, db, effects


def _heartbeat(rep: ReplicaState, db: Db, db_now_ms: int) -> tuple[Db, list]:
    if rep.heartbeats_paused or not rep.runners:
        return db, []
    if not db.db_up:
        return db, [probe("C2.2.db-down"), note("db_down", replica=rep.name, op="heartbeat")]
    keys = [(r.chat_id, r.runner_id) for r in rep.runners.values()]
    # (no probe for the renewal: model/idle.py takes a firing whose only effect is its
    # re-arm for idle and batches it without this handler, so a probe here would make
    # every heartbeat an ordinary step and move every trace)
    return upsert_heartbeats(db, keys, db_now_ms), []


def _observe(rep: ReplicaState, db: Db, chat_id: str, now_ms: int, db_now_ms: int, why: str) -> Out:
    runner = rep.runners.get(chat_id)
    if runner is None:
        return rep, db, []
    if not db.db_up:
        return rep, db, [probe("C1.2.db-down"), note("db_down", replica=rep.name, op="runner_" + why)]
    chat = db.chats.get(chat_id)
    if chat is None:
        rep, eff = _drop_runner(rep, chat_id, "deleted")
        return rep, db, [probe("C1.2.chat-gone"), *eff]
    if chat.snapshot_version <= runner.seen_snapshot:
        # (no probe: most such reads are publishes the world delivers without this
        # handler, model/system.py ``_quiet_publish``, which must stay effect-free)
        return rep, db, []
    if (chat.worker_id, chat.runner_id) != (rep.worker_id, runner.runner_id):
        rep, eff = _drop_runner(rep, chat_id, "owner_changed")
        return rep, db, [_OWNER_CHANGED_PROBES[why], *eff]
    changed = chat.history_version != runner.seen_history or chat.status != runner.seen_status
    if not changed:
        return _put_runner(rep, replace(runner, seen_snapshot=chat.snapshot_version)), db, [probe("C1.2.unchanged")]
    effects = [probe("C1.2.cancel-task"), *_cancel_task(runner.task)] if runner.task else []
    seen = {"seen_snapshot": chat.snapshot_version, "seen_history": chat.history_version, "seen_status": chat.status}
    kind = TASK_FOR_STATUS.get(chat.status)
    effects.append(_TASK_PROBES[kind])
    if kind is None:
        return _put_runner(rep, replace(runner, task=None, **seen)), db, effects
    task_id = f"{rep.worker_id}/t{rep.next_seq}"
    fence = TaskFence(rep.worker_id, runner.runner_id, chat.status, chat.history_version)
    task = Task(task_id, kind, chat_id, fence, backoff_ms=rep.rules.timing.task_retry_initial_backoff_ms)
    effects.append(note("task_started", replica=rep.name, chat_id=chat_id, task=task_id, kind=kind))
    # What the runner has seen and the task ID taken go into the runner and the replica
    # with the first attempt's outcome: one copy of each (``_start_attempt``'s edits; the
    # old task the runner still holds is replaced by the new one in that copy).
    rep, db, eff = _start_attempt(rep, db, runner, task, now_ms, db_now_ms, (seen, {"next_seq": rep.next_seq + 1}))
    return rep, db, effects + eff
