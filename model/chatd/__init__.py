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

Rule 1 (worker, docs/contract.md C2.1/C2.2). Every 30 s (timer ``acquire``) and on
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
before). The fence switches and the other planted-bug knobs are read only by the hooks of
``ChatdRules`` (rules.py), never by an ``if`` in the code that follows the contract.

Rule 9 (serial tools, 1.3 step 3). In an execute batch, calls of tools the build marks
        serial (``rules.serial_tools``, Go's ``SerialToolCalls()``) run one at a time in
        call order: a serial call begins when the serial call before it has its result.
        Every other call begins at once. Interrupt cancels are all sent in parallel.
Rule 10 (message edit, C3.6; chatd_db rule 9). An edit is a user action on the
        database, not a task: the runner sees the new history (and ``running``) like any
        other change, cancels its task WITHOUT waiting (a generation batch's requests
        already on the wire still arrive; rule 3 sends nothing after them) and starts a
        generation from the replacement message. No cancel is sent to the agent for the discarded calls and
        nothing commits a result for them (Go ``Server.EditMessage`` only runs the
        ``chatstate`` transition, publishes and schedules debug cleanup; design Q4).

Where docs/contract.md (code facts) and the design differ, we follow docs/contract.md:
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

Layout
------
The package splits along the seams above; this module re-exports every public name, so
``from toolcall_sim.model import chatd; chatd.replica_on_timer`` is the one way in, and the database
names (model/chatd_db.py) are re-exported too (the world uses chatd as one module).

- rules.py: ``ChatdRules`` and its planted-bug hooks, the variants, reference durations.
- state.py: replica, runner, task and attempt states; boot and crash; routing (rule 7).
- replica.py: the entry points (timers, answers, publishes).
- runner.py: the worker's acquisition and heartbeats (rule 1), the runner (rule 2).
- retry.py: the retry wrapper (rule 4) and task canceling (rule 3).
- tasks.py: generation and abandon (rule 5), fenced loads, the dial, the batch commit.
- interrupt.py: the interrupt task (rule 6).
- batch.py: the calls after the dial, serial tools (rule 9), the one commit.
"""

from __future__ import annotations

from ..chatd_db import (  # noqa: F401  (re-exported: the world uses chatd as one module)
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
    STATUSES,
    WAITING,
    Chat,
    Db,
    Message,
    TaskFence,
    check_fence,
    cleanup_heartbeats,
    db_archive,
    db_edit_message,
    db_empty,
    db_interrupt,
    db_new_chat,
    db_send_user_message,
    db_set_up,
    decide_generation_action,
    fenced_note,
    find_message,
    heartbeat_stale,
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
from .batch import DIAL_FAILURE_FOR_STATUS, DIAL_FAILURE_TIMEOUT, DIAL_FAILURE_TRANSPORT  # noqa: F401
from .replica import awaits, publish_changes_nothing, replica_on_answer, replica_on_publish, replica_on_timer  # noqa: F401
from .retry import _end_task  # noqa: F401  (tests hand an outcome to the retry wrapper)
from .rules import (  # noqa: F401
    ACQUISITION_BATCH_SIZE,
    ACQUISITION_INTERVAL_MS,
    CONTRACT,
    DEFAULT_GEN_TIME_MS,
    DIAL_TIMEOUT_MS,
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_STALE_MS,
    RUNNER_SYNC_INTERVAL_MS,
    TASK_RETRY_INITIAL_BACKOFF_MS,
    TASK_RETRY_MAX_BACKOFF_MS,
    TASK_TIMEOUT_MS,
    TODAY,
    VARIANTS,
    ChatdRules,
)
from .runner import TASK_FOR_STATUS  # noqa: F401
from .state import (  # noqa: F401
    AGENT,
    DONE,
    EXIT,
    PENDING,
    RETRY,
    SYNC_PREFIX,
    TIMER_ACQUIRE,
    TIMER_HEARTBEAT,
    Attempt,
    Out,
    ReplicaState,
    Runner,
    Task,
    replica_boot,
    replica_crash,
    replica_pause_heartbeats,
)
from .tasks import finish_generation_turn, fit_to_context  # noqa: F401
