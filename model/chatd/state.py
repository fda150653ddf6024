"""A replica's state (``ReplicaState`` > ``Runner`` > ``Task`` > ``Attempt``), its boot and
crash, and the routing of names back to the task they belong to.

Theory of operation
-------------------
A replica is one frozen value: its worker ID, its rules, a counter for deterministic IDs
and one ``Runner`` per owned chat. A runner holds at most one ``Task``; a task holds the
``Attempt`` of the retry wrapper that is running (None while backing off). Handlers
never mutate: they ``replace`` and return ``Out = (replica, db, effects)``.

Rule 7 (routing, see the package docstring) lives here: every request ID and timer name
a task uses starts with its task ID, so ``_find_task`` maps an answer or a timer back to
``(runner, task, remaining parts)`` and a crashed incarnation's names match nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..chatd_db import Db, TaskFence
from ..core import EMPTY, CachedRepr, FMap, SetTimer, note, replace
from .rules import CONTRACT, TASK_RETRY_INITIAL_BACKOFF_MS, VARIANTS, ChatdRules

AGENT = "agent"
TIMER_ACQUIRE = "acquire"
TIMER_HEARTBEAT = "heartbeat"
SYNC_PREFIX = "sync/"

# Attempt outcomes (rule 4).
PENDING = "pending"
DONE = "done"
RETRY = "retry"  # retry:<why>
EXIT = "exit"  # exit:<why>  (expected exit, never retried)
TIMED_OUT = f"{RETRY}:timeout"  # the attempt's 15-minute timer fired


@dataclass(frozen=True, repr=False)
class Attempt(CachedRepr):
    """One run of a task inside the retry wrapper.

    ``targets`` are ``(ToolCall, plan)`` pairs: the calls of an execute batch (plan None)
    or the selected cancels of an interrupt. ``states`` and ``results`` are aligned with
    them; a result is filled by chattool or by a dial failure.
    """

    key: str
    number: int  # 1-based attempt number of the retry wrapper
    action: str  # generate_assistant | execute_local_tools | interrupt
    step: str  # generate | dial | calls
    generation_attempt: int = 0
    message_id: int = 0
    targets: tuple = ()
    states: tuple = ()
    results: tuple = ()
    age: Any = None  # chattool.ToolCallAge, None when no identity is sent
    turn: tuple = ()  # generate_assistant: the scripted calls to commit
    plans: tuple = ()  # the bookkeeping's Plan per target (designs.py); () before the dial


@dataclass(frozen=True, repr=False)
class Task(CachedRepr):
    task_id: str
    kind: str  # generation | interrupt | abandon
    chat_id: str
    fence: TaskFence
    attempts: int = 0
    backoff_ms: int = TASK_RETRY_INITIAL_BACKOFF_MS  # the task sets its rules' initial backoff
    attempt: Attempt | None = None  # None while backing off
    zombie: Attempt | None = None  # a timed-out attempt still running (planted bug only)


@dataclass(frozen=True, repr=False)
class Runner(CachedRepr):
    chat_id: str
    runner_id: str
    seen_snapshot: int = -1
    seen_history: int = -1
    seen_status: str = ""
    task: Task | None = None


@dataclass(frozen=True, repr=False)
class ReplicaState(CachedRepr):
    name: str
    worker_id: str
    rules: ChatdRules = CONTRACT
    next_seq: int = 1  # source of runner and task IDs (deterministic "random" IDs)
    runners: FMap = EMPTY  # chat_id -> Runner
    heartbeats_paused: bool = False
    # The world's bookkeeping, not chatd's: when this replica first changed its state
    # among the world's replicas (1 = the first), 0 while it never has. An immediate
    # publish reaches the replicas in this order (model/builder.py ``flush_publishes``),
    # so which replica acts first depends on the story, never on a replica's name: what
    # makes untouched replicas interchangeable (model/explore_symmetry.py).
    joined: int = 0


Out = tuple[ReplicaState, Db, list]


def replica_boot(name: str, now_ms: int, rules: ChatdRules | str = CONTRACT, incarnation: int | None = None):
    """A fresh replica: a new ``worker_id`` and the worker's two loops.

    ``incarnation`` should count the replica's boots (the world knows it); when absent the
    boot clock reading stands in, which is unique as long as restarts take time.
    """
    if isinstance(rules, str):
        rules = VARIANTS[rules]
    inc = now_ms if incarnation is None else incarnation
    rep = ReplicaState(name=name, worker_id=f"{name}-w{inc}", rules=rules)
    return rep, [
        SetTimer(TIMER_ACQUIRE, rules.timing.acquisition_interval_ms),
        SetTimer(TIMER_HEARTBEAT, rules.timing.heartbeat_interval_ms),
        note("replica_booted", replica=name, worker_id=rep.worker_id, rules=rules.name),
    ]


def replica_crash(rep: ReplicaState) -> list:
    """The replica dies: nothing is sent, its goroutines just stop (the world drops its
    timers and forgets the state)."""
    return [note("replica_crashed", replica=rep.name, worker_id=rep.worker_id, runners=len(rep.runners))]


def replica_pause_heartbeats(rep: ReplicaState, paused: bool) -> ReplicaState:
    """World action: the worker's loops stall (or resume) while its runners keep running,
    so another replica takes its chats over after 30 s and the old runners notice later.

    Both loops stall, acquisition too: a worker whose heartbeat loop alone stopped would
    find its own chats stale and re-acquire them itself, which is no ownership change."""
    return replace(rep, heartbeats_paused=paused)


def _new_id(rep: ReplicaState, kind: str) -> tuple[ReplicaState, str]:
    return replace(rep, next_seq=rep.next_seq + 1), f"{rep.worker_id}{kind}{rep.next_seq}"


def _put_runner(rep: ReplicaState, runner: Runner) -> ReplicaState:
    return replace(rep, runners=rep.runners.set(runner.chat_id, runner))


def _find_task(rep: ReplicaState, name: str):
    """Rule 7: ``<worker_id>/t<n>/...`` -> (runner, task, remaining parts)."""
    if not name.startswith(rep.worker_id + "/"):
        return None
    parts = name[len(rep.worker_id) + 1 :].split("/")
    task_id = f"{rep.worker_id}/{parts[0]}"
    for runner in rep.runners.values():
        if runner.task is not None and runner.task.task_id == task_id:
            return runner, runner.task, parts[1:]
    return None


def _call_index(part: str) -> int | None:
    """``c<i>:<chattool's suffix>`` -> i."""
    head = part.split(":", 1)[0]
    if head.startswith("c") and head[1:].isdigit() and ":" in part:
        return int(head[1:])
    return None
