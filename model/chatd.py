"""chatd, the control plane: one worker per coderd replica, a runner per owned chat, and
the tasks a runner starts (generation, interrupt, abandon) inside the retry wrapper.

Theory of operation
-------------------
A replica is a pure state machine (``ReplicaState``). The world calls four handlers:
``replica_on_timer``, ``replica_on_answer`` (an agent or dial answer), ``replica_on_publish``
(a pubsub event any replica's commit produced) and ``replica_crash``. Each takes the shared
database (``chatd_db.Db``), runs its transactions synchronously, and returns the new
replica, the new database and effects. ``now_ms`` is the replica's monotonic clock and
``db_now_ms`` the database clock; the two are never compared (guarantee A6, C1). Every
duration a replica waits for is read from ``rules.timing`` (model/timing.py) and handed on
to chattool; the durations the rules below name are its defaults, the reference values,
which a scaled variant (``replace(rules, timing=Timing.small())``) changes without
changing a rule.

Rule 1 (worker, chatd-contract.md 2.1/2.2). Every 30 s (timer ``acquire``) and on
        ``chat:ownership`` the worker acquires up to 10 runnable chats (running,
        interrupting, requires_action) that have no owner or whose current runner's
        heartbeat is older than 30 s, each with a new ``runner_id``. Every 9 s (timer
        ``heartbeat``) it upserts a heartbeat for each of its runners. A crash loses all
        replica state; a booted replica has a new ``worker_id``. A paused worker
        (``replica_pause_heartbeats``) runs neither loop; its runners carry on.
Rule 2 (runner, 1.2). On ``chat:update`` and every 15 s (timer ``sync/<chat_id>``) the
        runner reads the chat: ignore a snapshot that is not newer; if the owner is not its
        own, drop the runner; if neither history_version nor status changed, do nothing;
        otherwise cancel the active task WITHOUT waiting and start the task for the status
        (table ``TASK_FOR_STATUS``).
Rule 3 (C4). Canceling a task aborts its tool calls (``chattool.abort``): timers are
        canceled and nothing more is sent to the agent; their late answers are dropped.
        Nothing is committed by a canceled or timed-out attempt.
Rule 4 (retry wrapper, 1.4a). Each attempt has a 15-minute timer (``<attempt>/timeout``)
        that tool work never extends. A timed-out attempt is always retried; a DB error is
        retried; a fence mismatch is an expected exit and never retried. Backoff is 100 ms,
        doubling, capped at 5 s, with no retry limit.
Rule 5 (generation, 1.3). One attempt takes ONE action decided from the committed
        history: execute the unresolved calls of the last assistant message as one
        parallel batch (beginGenerationAttempt, one DB clock read for the tool call age,
        one dial, every call begun at once, wait for ALL, then ONE commit fenced on
        history_version and generation_attempt); or generate the next scripted assistant
        message (timer ``<attempt>/gen``); or finish the turn.
Rule 6 (interrupt, 3.2 design B2). Under the ``interrupting`` fence: select the cancels
        (``chattool.select_cancels``); none -> no dial; else one DB clock read, one dial;
        dial failure -> ``chattool.unreachable_result`` per cancel; else every cancel in
        parallel, each bounded by chattool's 1-minute answer timeout. Then one commit that
        writes a result for EVERY unresolved call (the cancel's, else the generic one) and
        FinishInterruption. If the attempt ends first, nothing is committed.
Rule 7 (routing). Every request id and timer name of a task starts with its task id
        ``<worker_id>/t<n>``; an attempt's with ``<task>/a<m>``; a call's with
        ``<attempt>/c<i>`` (the prefix handed to chattool, which appends ``:<kind><n>``). The worker id is in every
        prefix, so answers to a crashed incarnation's requests never reach a new one.
Rule 8 (result budget, 1.3 step 6, 3.2 step 3.7). Every committed tool result, of a
        batch or of an interrupt, is first cut to the per-result byte budget of the chat
        model's context window (``fit_to_context``; the rule is chattool's). The cut is
        not part of the contract stack: ``today`` cuts its live results the same way.

Variants (``VARIANTS``) are objects naming their rules, never forks of the code:
``today`` is chatd before the CODAGT-757 stack, ``contract`` is design B (``ChatdRules``
lists, per knob, the PR of the stack that brought the behaviour and what chatd did
before). The fence switches exist to plant bugs.

Rule 8 (serial tools, 1.3 step 3). In an execute batch, calls of tools the build marks
        serial (``rules.serial_tools``, Go's ``SerialToolCalls()``) run one at a time in
        call order: a serial call begins when the serial call before it has its result.
        Every other call begins at once. Interrupt cancels are all sent in parallel.

Where chatd-contract.md (code facts) and the design differ, we follow chatd-contract.md:
- the interrupt bounds each cancel by the 1-minute agent answer timeout plus the dial's own
  30 s timeout (B2, 8.4), not one timer for the whole interrupt (B1);
- the stop age of a foreground execute uses the 10 s default timeout (8.5), which is
  chattool's business;
- the attempt timeout is re-armed only by a healthy model stream (1.4a), which the
  scripted model never needs (generation time is far below 15 min), so it is never
  re-armed here.

Model abstractions (see also chatd_db's docstring):
- Dynamic tools, requires_action's timeout task, LLM retries (recordGenerationRetry),
  compaction, the prepare phase's own retries, billing and the message part buffer are
  not modelled.
- A publish carries only the chat ID; the runner reads the chat when the event is
  delivered (a newer snapshot than the event's, never an older one). Pubsub rides on the
  database, so with the DB down events and syncs are skipped (the next sync catches up).
- The dial is a ``Request(method="DIAL")`` that the world answers (interfaces.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import chattool
from .timing import DEFAULT_TIMING, Timing
from .chatd_db import (  # noqa: F401  (re-exported: the world uses chatd as one module)
    ARCHIVED,
    CHANNEL_OWNERSHIP,
    CHANNEL_UPDATE,
    DB_DOWN,
    ERROR,
    INTERRUPTING,
    OK,
    REQUIRES_ACTION,
    RUNNABLE,
    RUNNING,
    WAITING,
    Chat,
    Db,
    Message,
    TaskFence,
    check_fence,
    cleanup_heartbeats,
    db_archive,
    db_empty,
    db_interrupt,
    db_new_chat,
    db_send_user_message,
    db_set_up,
    decide_generation_action,
    fenced_note,
    heartbeat_stale,
    interrupt,
    is_fenced,
    send_user_message,
    turn_index,
    tx_abandon,
    tx_acquire,
    tx_begin_generation_attempt,
    tx_commit_assistant,
    tx_commit_results,
    tx_finish_interruption,
    tx_finish_turn,
    unresolved_calls,
    upsert_heartbeats,
)
from .identity import MAX_MS
from .core import (
    CachedRepr,
    replace,
    EMPTY,
    CancelTimer,
    FMap,
    Request,
    Response,
    Send,
    SetTimer,
    TransportError,
    note,
)

# ---------------------------------------------------------------------------
# Constants (chatd-contract.md appendix)
# ---------------------------------------------------------------------------

# The reference durations, for readers and tests: the code reads ``rules.timing``
# (model/timing.py), whose defaults these are.
TASK_TIMEOUT_MS = DEFAULT_TIMING.task_timeout_ms  # defaultTaskTimeout, 15 min
TASK_RETRY_INITIAL_BACKOFF_MS = DEFAULT_TIMING.task_retry_initial_backoff_ms  # 100 ms
TASK_RETRY_MAX_BACKOFF_MS = DEFAULT_TIMING.task_retry_max_backoff_ms  # 5 s
ACQUISITION_INTERVAL_MS = DEFAULT_TIMING.acquisition_interval_ms  # 30 s
RUNNER_SYNC_INTERVAL_MS = DEFAULT_TIMING.runner_sync_interval_ms  # 15 s
HEARTBEAT_INTERVAL_MS = DEFAULT_TIMING.heartbeat_interval_ms  # 9 s
HEARTBEAT_STALE_MS = DEFAULT_TIMING.heartbeat_stale_ms  # 30 s
DIAL_TIMEOUT_MS = DEFAULT_TIMING.dial_timeout_ms  # 30 s, design section 9, PR 5 text
DEFAULT_GEN_TIME_MS = DEFAULT_TIMING.default_gen_time_ms  # 2 s

ACQUISITION_BATCH_SIZE = 10  # a count, not a duration: the same at every timing

AGENT = "agent"
TIMER_ACQUIRE = "acquire"
TIMER_HEARTBEAT = "heartbeat"
SYNC_PREFIX = "sync/"

# Dial answers -> the dial error kind chattool maps to a result. The world answers a dial
# with 200, nothing (our dial timer fires), or a TransportError (interfaces.md); a non-200
# answer is how a world says there is no agent / workspace (chatd learns that from the
# database in Go, before dialing; the world owns that fact here).
DIAL_FAILURE_FOR_STATUS = {
    404: chattool.DIAL_NO_AGENT,
    410: chattool.DIAL_DELETED,
    424: chattool.DIAL_NO_WORKSPACE,
}
DIAL_FAILURE_TRANSPORT = "refused"
DIAL_FAILURE_TIMEOUT = "timeout"

# Runner rule 2: chat status -> the task its runner starts (None: not modelled, stay idle).
TASK_FOR_STATUS = {
    RUNNING: "generation",
    INTERRUPTING: "interrupt",
    REQUIRES_ACTION: None,  # the dynamic-tool timeout task; dynamic tools are not modelled
    WAITING: "abandon",
    ERROR: "abandon",
    ARCHIVED: "abandon",
}

# Attempt outcomes (rule 4).
PENDING = "pending"
DONE = "done"
RETRY = "retry"  # retry:<why>
EXIT = "exit"  # exit:<why>  (expected exit, never retried)


# ---------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class ChatdRules(CachedRepr):
    """The rules one chatd build follows. Real variants differ in ``send_identity``,
    ``interrupt_cancels`` and ``tool_layer``; the fence switches are for planted bugs (a
    checker must catch them). ``timing`` holds every duration chatd and its tool layer wait
    for: the reference values by default, ``replace(rules, timing=Timing.small())`` for
    exhaustive exploration (model/timing.py).

    What the CODAGT-757 stack changed in chatd (codagt-757-design.md section 9, PRs 4-6 on
    the SDK of PR 1; Q9), and what ``today`` (chatd before the stack) does instead. The
    facts of "before" come from chatd-contract.md 2.3, 3.3, 4.2, 4.5, 5.2 and section 6,
    design section 2 ("What breaks today"), and the legacy branches of the Go execute tool
    (coder/coder ``coderd/x/chatd/chattool/execute.go``: ``executeBackground``,
    ``executeForeground`` without an identity, ``waitForProcess``):

    - Tool call identity and headers (PR 1 SDK headers; PR 4 dispatch identity, the tool
      call age from the DB clock, execute sends headers; PR 6 edit_files/write_file):
      ``send_identity``. Today: no identity, no headers; the agent picks every process ID,
      so each retry or new owner starts the command again (the incident, section 6).
    - Attach by the run age, deadline = process start + timeout (PR 4, 4.3): follows from
      the identity. Today: the legacy wait, the full timeout from this attempt's start,
      wall time from the local start.
    - The agent answer timeout of 1 min on starts, edits and writes (PR 4 per Q9b; PR 6):
      ``tool_layer.agent_answer_timeout``. Today: none. A foreground start waits on its
      command context (the execute timeout), a background start, edit or write on the
      attempt: a start whose answer is lost waits for the 15-minute attempt timeout and
      the retry starts the command again.
    - A snapshot failing past the execute deadline reports unknown (PR 4, Q9c):
      ``tool_layer.snapshot_failure_unknown``. Today: "command timed out after <timeout>;
      failed to get output: <err>" (kind ``timed_out``).
    - The shared classifier and its unknown texts (PR 4, used by PR 5 and PR 6), and the
      dial failure "an earlier attempt may have started the command" (PR 4): follow from
      the identity. Today: the legacy texts, "start process: <err>", plain dial errors.
    - Interrupt cancels and their result mapping (PR 5 execute, PR 6 file tools; C5):
      ``interrupt_cancels``. Today: no dial, no cancel; every unresolved call gets the
      generic "tool call was interrupted before it produced a result" (3.3).
    Unchanged by the stack, so ``today`` has them too: the 30 s dial timeout (design line 7
    calls it "chatd's 30-second dial timeout"), the snapshot after a failed or ended wait,
    re-reading after the agent's 5-minute read cap, the retry wrapper, fences and serial
    tools.
    """

    name: str
    send_identity: bool  # C1/C2: tool call headers (identity from the DB clock) on requests
    interrupt_cancels: bool  # C5: the interrupt task cancels on the agent; else generic
    tool_layer: chattool.ToolLayer = chattool.DESIGN_B  # answer timeout (Q9b) and Q9c
    # Tools marked serial (Go's SerialToolCalls): box_* and find_tools in Go; none of the
    # three tools with an agent side is, so a test marks one to see the order (Rule 8).
    serial_tools: tuple[str, ...] = chattool.SERIAL_TOOLS
    history_fence: bool = True  # 2.4 requireHistory
    attempt_fence: bool = True  # 2.4 requireGenerationAttempt
    owner_fence: bool = True  # 2.4 ownedByTask
    # 1.4a: a timed-out attempt's calls stop with it. False plants a bug (the Go mistake
    # of an attempt context not handed down to the tool calls): its calls go on and the
    # batch still commits, which only the attempt fence then refuses.
    attempt_timeout_stops_calls: bool = True
    interrupt_rereads_unresolved: bool = True  # 3.2 step 4: answer only calls still unresolved
    interrupt_commits_not_run: bool = True  # 3.3: a call that never ran still gets its result
    interrupt_spares_background: bool = True  # C5/US6: background cancels carry stop age 0
    timing: Timing = DEFAULT_TIMING


TODAY = ChatdRules("today", send_identity=False, interrupt_cancels=False, tool_layer=chattool.BEFORE_STACK)
CONTRACT = ChatdRules("contract", send_identity=True, interrupt_cancels=True)
VARIANTS: dict[str, ChatdRules] = {"today": TODAY, "contract": CONTRACT}


# ---------------------------------------------------------------------------
# Replica state
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def replica_on_timer(rep: ReplicaState, db: Db, name: str, now_ms: int, db_now_ms: int) -> Out:
    timing = rep.rules.timing
    if name == TIMER_ACQUIRE:
        rep, db, eff = _acquire(rep, db, now_ms, db_now_ms)
        return rep, db, eff + [SetTimer(TIMER_ACQUIRE, timing.acquisition_interval_ms)]
    if name == TIMER_HEARTBEAT:
        db, eff = _heartbeat(rep, db, db_now_ms)
        return rep, db, eff + [SetTimer(TIMER_HEARTBEAT, timing.heartbeat_interval_ms)]
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
        return _settle(rep, db, runner, task, f"{RETRY}:timeout", [note("attempt_timeout", task=task.task_id)])
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


def _awaited(rep: ReplicaState, req_id: str):
    """(runner, task, call index or None for the dial) of the attempt waiting for this
    answer, or None when nobody waits for it any more (a late answer: its task, attempt
    or call has moved on)."""
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
    found = _awaited(rep, answer.req_id)
    if found is None:
        return rep, db, [note("late_answer", replica=rep.name, req_id=answer.req_id)]
    runner, task, i = found
    if i is None:
        return _on_dial(rep, db, runner, task, answer, now_ms, db_now_ms)
    cs, eff = chattool.on_answer(task.attempt.states[i], answer, now_ms)
    return _call_progress(rep, db, runner, task, i, cs, eff, now_ms, db_now_ms)


def replica_on_publish(rep: ReplicaState, db: Db, channel: str, chat_id: str, now_ms: int, db_now_ms: int) -> Out:
    if channel == CHANNEL_OWNERSHIP:
        return _acquire(rep, db, now_ms, db_now_ms)
    if channel == CHANNEL_UPDATE and chat_id in rep.runners:
        return _observe(rep, db, chat_id, now_ms, db_now_ms, "publish")
    return rep, db, []


# ---------------------------------------------------------------------------
# Worker: acquisition and heartbeats (rule 1)
# ---------------------------------------------------------------------------


def _new_id(rep: ReplicaState, kind: str) -> tuple[ReplicaState, str]:
    return replace(rep, next_seq=rep.next_seq + 1), f"{rep.worker_id}{kind}{rep.next_seq}"


def _acquire(rep: ReplicaState, db: Db, now_ms: int, db_now_ms: int) -> Out:
    if rep.heartbeats_paused:
        return rep, db, []
    if not db.db_up:
        return rep, db, [note("db_down", replica=rep.name, op="acquire")]
    stale_ms = rep.rules.timing.heartbeat_stale_ms
    db = cleanup_heartbeats(db, db_now_ms, stale_ms)
    candidates = [
        chat
        for chat in db.chats.values()
        if chat.status in RUNNABLE and (not chat.owned or heartbeat_stale(db, chat, db_now_ms, stale_ms))
    ][:ACQUISITION_BATCH_SIZE]
    effects: list = []
    for chat in candidates:
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
        return db, [note("db_down", replica=rep.name, op="heartbeat")]
    keys = [(r.chat_id, r.runner_id) for r in rep.runners.values()]
    return upsert_heartbeats(db, keys, db_now_ms), []


# ---------------------------------------------------------------------------
# Runner (rule 2)
# ---------------------------------------------------------------------------


def _drop_runner(rep: ReplicaState, chat_id: str, reason: str) -> tuple[ReplicaState, list]:
    runner = rep.runners.get(chat_id)
    if runner is None:
        return rep, []
    effects = _cancel_task(runner.task) if runner.task else []
    effects += [
        CancelTimer(SYNC_PREFIX + chat_id),
        note("runner_dropped", replica=rep.name, chat_id=chat_id, reason=reason),
    ]
    return replace(rep, runners=rep.runners.remove(chat_id)), effects


def _put_runner(rep: ReplicaState, runner: Runner) -> ReplicaState:
    return replace(rep, runners=rep.runners.set(runner.chat_id, runner))


def _observe(rep: ReplicaState, db: Db, chat_id: str, now_ms: int, db_now_ms: int, why: str) -> Out:
    runner = rep.runners.get(chat_id)
    if runner is None:
        return rep, db, []
    if not db.db_up:
        return rep, db, [note("db_down", replica=rep.name, op="runner_" + why)]
    chat = db.chats.get(chat_id)
    if chat is None:
        rep, eff = _drop_runner(rep, chat_id, "deleted")
        return rep, db, eff
    if chat.snapshot_version <= runner.seen_snapshot:
        return rep, db, []
    if (chat.worker_id, chat.runner_id) != (rep.worker_id, runner.runner_id):
        rep, eff = _drop_runner(rep, chat_id, "owner_changed")
        return rep, db, eff
    changed = chat.history_version != runner.seen_history or chat.status != runner.seen_status
    runner = replace(runner, seen_snapshot=chat.snapshot_version)
    if not changed:
        return _put_runner(rep, runner), db, []
    effects = _cancel_task(runner.task) if runner.task else []
    runner = replace(runner, seen_history=chat.history_version, seen_status=chat.status, task=None)
    kind = TASK_FOR_STATUS.get(chat.status)
    rep = _put_runner(rep, runner)
    if kind is None:
        return rep, db, effects
    rep, task_id = _new_id(rep, "/t")
    fence = TaskFence(rep.worker_id, runner.runner_id, chat.status, chat.history_version)
    task = Task(task_id, kind, chat_id, fence, backoff_ms=rep.rules.timing.task_retry_initial_backoff_ms)
    effects.append(note("task_started", replica=rep.name, chat_id=chat_id, task=task_id, kind=kind))
    rep, db, eff = _start_attempt(rep, db, runner, task, now_ms, db_now_ms)
    return rep, db, effects + eff


# ---------------------------------------------------------------------------
# Retry wrapper (rule 4)
# ---------------------------------------------------------------------------


def _cancel_task(task: Task) -> list:
    """Rule 3: stop waiting, send nothing."""
    effects = [CancelTimer(f"{task.task_id}/backoff")]
    if task.attempt is not None:
        effects += _end_attempt(task.attempt)
    effects.append(note("task_canceled", task=task.task_id, chat_id=task.chat_id, kind=task.kind))
    return effects


def _end_attempt(att: Attempt) -> list:
    effects: list = [CancelTimer(f"{att.key}/timeout")]
    if att.step == "dial":
        effects.append(CancelTimer(f"{att.key}/dial"))
    if att.step == "generate":
        effects.append(CancelTimer(f"{att.key}/gen"))
    for cs, res in zip(att.states, att.results):
        if cs is not None and res is None:
            effects += list(chattool.abort(cs))
    return effects


def _start_attempt(rep: ReplicaState, db: Db, runner: Runner, task: Task, now_ms: int, db_now_ms: int) -> Out:
    number = task.attempts + 1
    task = replace(task, attempts=number, attempt=None)
    key = f"{task.task_id}/a{number}"
    start = _ATTEMPT_STARTS[task.kind]
    db, outcome, att, effects = start(rep, db, task, key, number, now_ms, db_now_ms)
    if outcome == PENDING:
        effects = [SetTimer(f"{key}/timeout", rep.rules.timing.task_timeout_ms)] + effects
    return _settle(rep, db, runner, replace(task, attempt=att), outcome, effects)


def _settle(rep: ReplicaState, db: Db, runner: Runner, task: Task, outcome: str, effects: list) -> Out:
    """Apply an attempt's outcome to the runner (the body of ``runTaskWithRetry``)."""
    if outcome == PENDING:
        return _put_runner(rep, replace(runner, task=task)), db, effects
    effects = list(effects)
    att = task.attempt
    if outcome == f"{RETRY}:timeout" and not rep.rules.attempt_timeout_stops_calls and att is not None \
            and att.step == "calls" and att.action == "execute_local_tools":
        task = replace(task, zombie=att)  # planted bug: the batch goes on (attempt_timeout_stops_calls)
    elif att is not None:
        effects += _end_attempt(att)
    if outcome.startswith(RETRY):
        effects += [
            SetTimer(f"{task.task_id}/backoff", task.backoff_ms),
            note("task_retry", task=task.task_id, chat_id=task.chat_id, why=outcome[len(RETRY) + 1 :],
                 attempt=task.attempts, backoff_ms=task.backoff_ms),
        ]
        max_backoff_ms = rep.rules.timing.task_retry_max_backoff_ms
        task = replace(task, attempt=None, backoff_ms=min(task.backoff_ms * 2, max_backoff_ms))
        return _put_runner(rep, replace(runner, task=task)), db, effects
    effects.append(note("task_" + ("done" if outcome == DONE else "exit"), task=task.task_id,
                        chat_id=task.chat_id, kind=task.kind, why=outcome))
    rep = _put_runner(rep, replace(runner, task=None))
    if task.kind == "abandon" and outcome in (DONE, f"{EXIT}:fenced:owner"):
        # Abandoned, or someone else owns it: either way this runner is finished (2.3).
        rep, eff = _drop_runner(rep, task.chat_id, "abandoned" if outcome == DONE else "owner_changed")
        effects += eff
    return rep, db, effects


def _zombie_call(task: Task, rest: list) -> int | None:
    """The call index of a timed-out attempt's call this name belongs to, if any (only
    with the planted bug ``attempt_timeout_stops_calls=False``)."""
    z = task.zombie
    if z is None or len(rest) < 2 or f"{task.task_id}/{rest[0]}" != z.key:
        return None
    i = _call_index(rest[1])
    if i is None or i >= len(z.states) or z.states[i] is None or z.results[i] is not None:
        return None
    return i


def _zombie_progress(rep, db, runner, task, rest, step, db_now_ms) -> Out:
    """A timed-out attempt's call moves on; once its batch has every result it commits
    under its own (old) generation attempt, as the current attempt would."""
    z = task.zombie
    i = _call_index(rest[1])
    cs, eff = step(z.states[i])
    z = replace(z, states=z.states[:i] + (cs,) + z.states[i + 1:], results=z.results[:i] + (cs.result,) + z.results[i + 1:])
    effects = list(eff)
    if any(r is None for r in z.results):
        return _put_runner(rep, replace(runner, task=replace(task, zombie=z))), db, effects
    db, outcome, more = _execute_commit(rep, db, task, z, db_now_ms)
    effects += more + [note("timed_out_attempt_committed", task=task.task_id, attempt=z.number, outcome=outcome)]
    return _put_runner(rep, replace(runner, task=replace(task, zombie=None))), db, effects


def _fenced(db: Db, task: Task, op: str, rules: ChatdRules, attempt: int | None = None):
    """Load the task's chat under its fence (2.4): ``(chat, None, [])`` when the fence
    holds, else ``(chat, outcome, effects)`` saying how the task ends."""
    st, chat = check_fence(db, task.chat_id, op, task.fence, rules, attempt)
    if st == OK:
        return chat, None, []
    outcome, eff = _failed(st, op, task, chat)
    return chat, outcome, eff


def _failed(outcome: str, op: str, task: Task, chat: Chat | None) -> tuple[str, list]:
    """A transaction that did not go through: DB errors retry, fences exit (2.4)."""
    if outcome == DB_DOWN:
        return f"{RETRY}:db_down", [note("db_down", op=op, task=task.task_id)]
    return f"{EXIT}:{outcome}", [fenced_note(op, outcome, task.chat_id, task.fence, chat)]


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


# ---------------------------------------------------------------------------
# Tasks (rules 5, 6) and abandon
# ---------------------------------------------------------------------------


def _dial(rep: ReplicaState, key: str) -> list:
    return [
        Send(AGENT, Request(req_id=f"{key}/dial", src=rep.name, method="DIAL", path="/")),
        SetTimer(f"{key}/dial", rep.rules.timing.dial_timeout_ms),
    ]


def _generation_start(rep, db, task, key, number, now_ms, db_now_ms):
    rules = rep.rules
    chat, outcome, eff = _fenced(db, task, "load_generation", rules)
    if outcome is not None:
        return db, outcome, None, eff
    action = decide_generation_action(chat)
    if action == "finish_turn":
        db, outcome, eff = finish_generation_turn(rep, db, task, chat.generation_attempt, db_now_ms)
        return db, outcome, None, eff
    chat, outcome, eff = _fenced(db, task, "begin_generation_attempt", rules)
    if outcome is not None:
        return db, outcome, None, eff
    db, chat, hint = tx_begin_generation_attempt(db, chat, db_now_ms)
    gen_attempt = chat.generation_attempt
    if action == "generate_assistant":
        att = Attempt(key, number, action, "generate", gen_attempt, turn=tuple(chat.turns[turn_index(chat)]))
        return db, PENDING, att, hint + [SetTimer(f"{key}/gen", chat.gen_time_ms)]
    msg, calls = unresolved_calls(chat)
    # C1: one DB clock read per attempt; the age is measured from database timestamps only.
    age = chattool.ToolCallAge(db_now_ms - msg.created_at_ms, now_ms) if rules.send_identity else None
    n = len(calls)
    att = Attempt(key, number, action, "dial", gen_attempt, msg.id, tuple((c, None) for c in calls),
                  (None,) * n, (None,) * n, age)
    mark = note("batch_started", task=task.task_id, calls=n, generation_attempt=gen_attempt)
    return db, PENDING, att, hint + [mark] + _dial(rep, key)


def finish_generation_turn(rep: ReplicaState, db: Db, task: Task, loaded_attempt: int, db_now_ms: int):
    """``finishGenerationTurn``: ``FinishTurn`` under the task fence plus
    ``requireGenerationAttempt`` against ``loaded_attempt``, the generation attempt of the
    chat as the attempt loaded it (chatd-contract.md 2.4: "check generation_attempt == the
    attempt's number"), not the row's number at the finish, which would always match. The
    finish_turn action records no attempt of its own, so the number is the one read with
    the chat. In Go the load and the finish are separate transactions with the prepare
    phase between them; here they run in one step, so the two agree in every run of the
    model, and the fence is the one Go checks all the same. Returns ``(db, outcome,
    effects)``."""
    chat, outcome, eff = _fenced(db, task, "finish_turn", rep.rules, loaded_attempt)
    if outcome is not None:
        return db, outcome, eff
    db, eff = tx_finish_turn(db, chat, db_now_ms)
    return db, DONE, eff


def _interrupt_start(rep, db, task, key, number, now_ms, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "load_interrupt", rep.rules)
    if outcome is not None:
        return db, outcome, None, eff
    msg, calls = unresolved_calls(chat)
    picks = chattool.select_cancels(calls, rep.rules.timing) if rep.rules.interrupt_cancels and calls else ()
    targets = tuple((pick.call, pick.plan) for pick in picks)
    if not rep.rules.interrupt_spares_background:
        # Planted bug: background calls get a stop age that stops anything.
        targets = tuple((c, replace(p, stop_run_age_ms=MAX_MS) if p.background else p) for c, p in targets)
    if not targets:
        # Nothing to cancel: no dial, commit right away (3.2 step 3).
        att = Attempt(key, number, "interrupt", "calls")
        db, outcome, eff = _interrupt_commit(rep, db, task, att, db_now_ms)
        return db, outcome, None, eff
    age = chattool.ToolCallAge(db_now_ms - msg.created_at_ms, now_ms)
    n = len(targets)
    att = Attempt(key, number, "interrupt", "dial", 0, msg.id, targets, (None,) * n, (None,) * n, age)
    mark = note("cancels_selected", task=task.task_id, cancels=n, unresolved=len(calls))
    return db, PENDING, att, [mark] + _dial(rep, key)


def _abandon_start(rep, db, task, key, number, now_ms, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "abandon", rep.rules)
    if outcome is not None:
        return db, outcome, None, eff
    db, eff = tx_abandon(db, chat, db_now_ms)
    return db, DONE, None, eff


_ATTEMPT_STARTS = {"generation": _generation_start, "interrupt": _interrupt_start, "abandon": _abandon_start}


def _identity(task: Task, att: Attempt, call) -> Any:
    if att.age is None:
        return None
    return chattool.Identity(task.chat_id, att.message_id, call.provider_id, att.age)


def _dial_failure_kind(answer: Response | TransportError | None) -> str | None:
    if answer is None:
        return DIAL_FAILURE_TIMEOUT
    if isinstance(answer, TransportError):
        return DIAL_FAILURE_TRANSPORT
    if answer.status == 200:
        return None
    return DIAL_FAILURE_FOR_STATUS.get(answer.status, DIAL_FAILURE_TRANSPORT)


def _on_dial(rep, db, runner, task, answer, now_ms, db_now_ms) -> Out:
    """The dial ended: begin every call (or cancel) at once, a serial tool's calls one at
    a time (Rule 8), or map the dial failure."""
    att = task.attempt
    effects: list = [CancelTimer(f"{att.key}/dial")]
    kind = _dial_failure_kind(answer)
    states = list(att.states)
    results = list(att.results)
    if kind is None:
        effects.append(note("dialed", task=task.task_id))
        for i, (call, plan) in enumerate(att.targets):
            ident = _identity(task, att, call)
            prefix = f"{att.key}/c{i}"
            if att.action == "interrupt":
                cs, eff = chattool.begin_cancel(call, plan, ident, rep.name, prefix, task.chat_id, now_ms,
                                                timing=rep.rules.timing)
            else:
                if _waits_for_serial(rep.rules, att.targets, states, results, i):
                    continue  # Rule 8: begun when the serial call before it has its result
                cs, eff = chattool.begin_call(call, ident, rep.name, prefix, task.chat_id, now_ms,
                                              rep.rules.send_identity, timing=rep.rules.timing,
                                              layer=rep.rules.tool_layer)
            states[i], results[i] = cs, cs.result
            effects += list(eff)
    else:
        effects.append(note("dial_failed", task=task.task_id, kind=kind))
        for i, (call, plan) in enumerate(att.targets):
            ident = _identity(task, att, call)
            if att.action == "interrupt":
                results[i] = chattool.unreachable_result(call, plan, ident, kind)
            else:
                results[i] = chattool.dial_failed_result(call, ident, kind)
    task = replace(task, attempt=replace(att, step="calls", states=tuple(states), results=tuple(results)))
    return _maybe_commit(rep, db, runner, task, effects, db_now_ms)


def _waits_for_serial(rules: ChatdRules, targets, states, results, i: int) -> bool:
    """Rule 8: call ``i`` of a batch is serial and an earlier serial call has not been
    begun or has no result yet."""
    serial = rules.serial_tools
    if targets[i][0].tool not in serial:
        return False
    return any(targets[j][0].tool in serial and (states[j] is None or results[j] is None) for j in range(i))


def _begin_next_serial(rep, task, att, now_ms) -> tuple[Attempt, list]:
    """Rule 8: after a call of the batch got its result, begin the serial calls now due
    (a serial call that finishes at once lets the next one begin too)."""
    states, results, effects = list(att.states), list(att.results), []
    for i, (call, _) in enumerate(att.targets):
        if states[i] is not None or call.tool not in rep.rules.serial_tools:
            continue
        if _waits_for_serial(rep.rules, att.targets, states, results, i):
            break
        cs, eff = chattool.begin_call(call, _identity(task, att, call), rep.name, f"{att.key}/c{i}", task.chat_id,
                                      now_ms, rep.rules.send_identity, timing=rep.rules.timing,
                                      layer=rep.rules.tool_layer)
        states[i], results[i] = cs, cs.result
        effects += list(eff)
    return replace(att, states=tuple(states), results=tuple(results)), effects


def _call_progress(rep, db, runner, task, i, cs, eff, now_ms, db_now_ms) -> Out:
    att = task.attempt
    states = att.states[:i] + (cs,) + att.states[i + 1 :]
    results = att.results[:i] + (cs.result,) + att.results[i + 1 :]
    att = replace(att, states=states, results=results)
    effects = list(eff)
    if cs.result is not None and att.action != "interrupt" and any(s is None for s in states):
        att, more = _begin_next_serial(rep, task, att, now_ms)
        effects += more
    task = replace(task, attempt=att)
    return _maybe_commit(rep, db, runner, task, effects, db_now_ms)


def _maybe_commit(rep, db, runner, task, effects, db_now_ms) -> Out:
    """Wait for ALL results of the batch, then one fenced commit (1.3 step 4-5)."""
    att = task.attempt
    if any(r is None for r in att.results):
        return _settle(rep, db, runner, task, PENDING, effects)
    if att.action == "interrupt":
        db, outcome, eff = _interrupt_commit(rep, db, task, att, db_now_ms)
    else:
        db, outcome, eff = _execute_commit(rep, db, task, att, db_now_ms)
    return _settle(rep, db, runner, task, outcome, effects + eff)


def _execute_commit(rep, db, task, att, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "commit_step", rep.rules, att.generation_attempt)
    if outcome is not None:
        return db, outcome, eff
    results = [(call.provider_id, fit_to_context(chat, res)) for (call, _), res in zip(att.targets, att.results)]
    db, eff = tx_commit_results(
        db, chat, att.message_id, results, db_now_ms, rep.name, att.number, att.generation_attempt
    )
    return db, DONE, eff


def _interrupt_commit(rep, db, task, att, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "finish_interruption", rep.rules)
    if outcome is not None:
        return db, outcome, eff
    by_provider = FMap(
        (call.provider_id, fit_to_context(chat, res)) for (call, _), res in zip(att.targets, att.results)
    )
    db, eff = tx_finish_interruption(
        db, chat, by_provider, chattool.generic_result(), db_now_ms, rep.name, att.number,
        only_unresolved=rep.rules.interrupt_rereads_unresolved,
        drop_kinds=() if rep.rules.interrupt_commits_not_run else ("not_run", "not_applied"),
    )
    return db, DONE, eff


def fit_to_context(chat: Chat, result: chattool.Result) -> chattool.Result:
    """Rule 8: a result as committed, cut to the per-result budget of the chat model's
    context window (chatd-contract.md 1.3 step 6 for generation, 3.2 step 3.7 for the
    interrupt's cancel answers; TestInterruptTask_ResultsTruncatedLikeLiveResults). Go
    cuts a live result in chatloop before the commit and an interrupt result in
    newInterruptResult; both read the same model config, so cutting at the commit is the
    same. The interrupt's generic result is far below any budget, so cutting every result
    equals Go's cutting only the answers that describe the call."""
    return chattool.fit_result_to_context(result, chattool.tool_result_byte_budget(chat.context_limit_tokens))


def _commit_assistant(rep, db, runner, task, db_now_ms) -> Out:
    att = task.attempt
    if att.step != "generate":
        return rep, db, [note("stale_timer", replica=rep.name, timer=f"{att.key}/gen")]
    chat, outcome, eff = _fenced(db, task, "commit_step", rep.rules, att.generation_attempt)
    if outcome is not None:
        task = replace(task, attempt=replace(att, step="calls"))
        return _settle(rep, db, runner, task, outcome, eff)
    db, eff = tx_commit_assistant(db, chat, att.turn, db_now_ms)
    return _settle(rep, db, runner, replace(task, attempt=replace(att, step="calls")), DONE, eff)
