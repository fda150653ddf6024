"""The chat database that every chatd replica shares: chats, messages, heartbeats, fences.

Theory of operation
-------------------
The database is one pure value (``Db``). A replica's handler runs its transactions
synchronously: it passes the database in, gets a new one back, and hands it to the world
together with its effects. A transaction therefore never interleaves with another
replica's, which is exactly what row locking buys the real chatd (docs/contract.md C1.1,
2.4). Time enters as ``db_now_ms``, the database clock (Postgres ``now()``); replica
clocks never touch the database. No constant here decides a wait: the heartbeat stale
limit is a parameter (chatd passes its rules' timing, model/timing.py) and a chat's
generation time is a row value the world sets (``Chat.gen_time_ms``).

Rule 1 (1.1). Every state-machine transition locks the chat row and raises
        ``snapshot_version`` by one before it changes anything.
Rule 2 (1.1). Inserting messages sets ``history_version = snapshot_version`` and resets
        ``generation_attempt`` to 0 (the trigger). Message IDs come from one increasing
        sequence shared by all chats; ``created_at_ms`` is the database clock.
Rule 3 (2.4). Task reads and writes check the task fence, per operation, from the table
        ``FENCES``: owner (``worker_id`` and ``runner_id``), status, ``history_version``,
        and for generation commits ``generation_attempt``. A fenced-out write changes
        nothing, is reported as a ``Note("fenced_out")`` and is never retried by the task.
Rule 4 (2.2). Heartbeats change neither ``snapshot_version`` nor publish anything.
Rule 5. A commit that changes a chat publishes ``chat:update``. Every transition that
        leaves a chat runnable with its ownership missing or stale (no owner, or no
        heartbeat of the current runner within ``Db.heartbeat_stale_ms``) also publishes
        ``chat:ownership``, whatever the chat was before: chatstate's
        ``ChatMachine.Update`` checks ``ownershipStaleOrMissing`` after each transition,
        ``RecordGenerationAttempt`` included (coder/coder ``coderd/x/chatd/chatstate``).
        docs/contract.md C2.2 says "only when a transition leaves a chat runnable and
        unowned"; the code also hints a stale owner, and we follow the code.
Rule 6. ``db_up`` false makes every transaction fail with ``DB_DOWN``; tasks treat that
        as a retryable error, user actions are refused.
Rule 7 (1.3). The unresolved tool calls of a chat are the calls of its LAST assistant
        message that no later tool result answers (by provider ID), in call order.
Rule 8. Every committed tool result emits ``Truth("result_committed")`` with chat_id,
        message_id (the tool call message), provider_id, uuid, kind and is_error (from
        ``chattool.Result``), replica, attempt (the retry wrapper's 1-based attempt
        number), generation_attempt (0 for interrupt commits), task (generation or
        interrupt), result_message_id and at_db_ms (the database clock).
Rule 9 (C3.6). ``EditMessage`` (the user edits the current turn's user message; chatstate
        ``Tx.EditMessage``, coder/coder ``coderd/x/chatd/chatstate/transitions.go``) is
        allowed from every status but archived (``transitionMatrix``: W, E, R, I, A ->
        R0). In one transaction it soft-deletes the edited message and every message
        after it (``SoftDeleteChatMessageByID``, ``SoftDeleteChatMessagesAfterID``: the
        rows stay, in ``Chat.deleted_messages``, out of the active history), inserts the
        replacement user message (a new ID: history_version moves and
        generation_attempt resets, rule 2), clears the queue and sets ``running`` with
        the owner kept. Nothing answers the discarded calls and nothing is sent to the
        agent: their branch is gone (design Q4, "canceling on message edit is out of
        scope"). The note ``message_edited`` names the edited and the replacement
        message IDs; every message of the chat between them was discarded by it.

The module is longer than the project's ~500 lines on purpose: every transaction goes
through the same private row helpers (``_lock``, ``_insert_messages``, ``_publishes``),
which is what makes rules 1, 2 and 5 hold for every transition at once; splitting the
transactions from them would make those helpers public between modules.

Model abstractions:
- All tool calls are local; provider-executed and dynamic calls do not exist, so
  ``requires_action`` and ``error`` are never entered by the modelled transitions.
- The model is scripted (``Chat.turns``): the k-th assistant message after the latest user
  message holds ``turns[k]``; once the script is used up the next generation finishes the
  turn. A turn with no calls is a text answer, after which the turn finishes too. After
  an edit the model answers the replacement message with the script's next unused answer
  (``Chat.script_skip``: the discarded answers are used up), as a real model answers an
  edited prompt with a new answer; the new branch's calls are other entries of the script,
  with their own IDs and commands.
- No message part buffer and no billing: partial messages of an interrupt are empty
  (as after an ownership change, docs/contract.md C3.2 step 2).
- Inserting a user message never has open calls to answer here: a user message is
  inserted from ``waiting`` (every call resolved by FinishTurn / FinishInterruption) or by
  promoting the queue inside those transitions (docs/contract.md C8.9 is thus moot). The
  same holds for an edit: Go's ``EditMessage`` answers the open calls of the last assistant
  message left after the soft delete with synthetic cancellations
  (``synthesizePendingToolCancellations``), but the model only edits the current turn's
  user message, and every turn before it ended with every call resolved.
- ``RecordGenerationAttempt`` publishes no ``chat:update``: it changes neither history nor
  status, so every runner ignores it (runner rule 3) and the publish would only add world
  events. Its ownership hint (rule 5) is published: it wakes the other workers' acquisition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .core import EMPTY, CachedRepr, FMap, Note, Publish, note, probe, replace, truth
from .identity import tool_call_uuid
from .timing import DEFAULT_TIMING

# Chat statuses (docs/contract.md C1.1).
WAITING = "waiting"
RUNNING = "running"
INTERRUPTING = "interrupting"
REQUIRES_ACTION = "requires_action"
ERROR = "error"
ARCHIVED = "archived"
# Every status; chatd maps each to the task its runner starts (checked by a test).
STATUSES = (WAITING, RUNNING, INTERRUPTING, REQUIRES_ACTION, ERROR, ARCHIVED)
RUNNABLE = (RUNNING, INTERRUPTING, REQUIRES_ACTION)

CHANNEL_UPDATE = "chat:update"
CHANNEL_OWNERSHIP = "chat:ownership"

# Outcomes of a task transaction. Anything starting with "fenced" is an expected exit.
OK = "ok"
DB_DOWN = "db_down"
FENCED_NO_CHAT = "fenced:no_chat"
FENCED_OWNER = "fenced:owner"
FENCED_STATUS = "fenced:status"
FENCED_HISTORY = "fenced:history"
FENCED_ATTEMPT = "fenced:attempt"


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Message(CachedRepr):
    """One ``chat_messages`` row. ``role`` is ``user``, ``assistant`` or ``tool``.

    An assistant message carries its tool calls (``chattool.ToolCall``); a tool message
    answers one call by ``provider_id`` and carries the ``chattool.Result``.
    """

    id: int
    role: str
    created_at_ms: int
    text: str = ""
    tool_calls: tuple = ()
    provider_id: str = ""
    result: Any = None


@dataclass(frozen=True, repr=False)
class Chat(CachedRepr):
    chat_id: str
    status: str
    worker_id: str | None = None
    runner_id: str | None = None
    snapshot_version: int = 0
    history_version: int = 0
    generation_attempt: int = 0
    messages: tuple[Message, ...] = ()
    queue: tuple[str, ...] = ()  # queued user messages, promoted by FinishTurn/Interruption
    turns: tuple[tuple, ...] = ()  # the scripted model: one tuple of ToolCalls per answer
    gen_time_ms: int = DEFAULT_TIMING.default_gen_time_ms  # the world sets it per chat
    # The chat model's context window in tokens (its model config's context_limit); 0 is
    # unknown. It sets the per-result byte budget of every committed tool result
    # (chattool.tool_result_byte_budget, docs/contract.md C1.3 step 6).
    context_limit_tokens: int = 0
    # Rows a message edit soft-deleted (rule 9): kept, as Go keeps them with deleted set,
    # but out of the active history every transaction and task reads (``messages``).
    deleted_messages: tuple[Message, ...] = ()
    # Answers of the script that edits of the current user turn discarded: the model's
    # next answer is ``turns[script_skip + k]`` (``turn_index``); a new user turn resets it.
    script_skip: int = 0

    @property
    def owned(self) -> bool:
        return self.worker_id is not None


@dataclass(frozen=True, repr=False)
class Db(CachedRepr):
    db_up: bool = True
    # Scenario worlds only: number each chat's messages on its own (1, 2, ...), so two
    # chats can hold messages with the same ID (real chatd has one sequence; the agent
    # must still keep them apart, US9). Default: the one sequence, ``next_message_id``.
    message_ids_per_chat: bool = False
    next_message_id: int = 1
    chats: FMap = EMPTY  # chat_id -> Chat
    heartbeats: FMap = EMPTY  # (chat_id, runner_id) -> heartbeat_at_ms (database clock)
    # chatstate's HeartbeatStaleSeconds: a transition publishes an ownership hint when the
    # current runner's heartbeat is older (rule 5). The world sets chatd's timing value.
    heartbeat_stale_ms: int = DEFAULT_TIMING.heartbeat_stale_ms
    # The design variants' durable rows per tool call UUID (model/chatd/designs.py): a
    # ledger's process IDs or the incarnation tokens. Design B writes none (docs/contract.md D3).
    execution_rows: FMap = EMPTY
    # The incarnation of the agent as it last reported its start (the world writes it at
    # every boot, model/system.py Rule 4); only the incarnation-token design reads it.
    agent_incarnation: int = 0


def db_empty(heartbeat_stale_ms: int = DEFAULT_TIMING.heartbeat_stale_ms) -> Db:
    return Db(heartbeat_stale_ms=heartbeat_stale_ms)


def db_set_up(db: Db, up: bool) -> Db:
    """World action: the database goes down or comes back."""
    return replace(db, db_up=up)


# ---------------------------------------------------------------------------
# Fences (rule 3)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class TaskFence(CachedRepr):
    """What a task was started for: its owner, status and history version."""

    worker_id: str
    runner_id: str
    status: str
    history_version: int


@dataclass(frozen=True)
class FenceRule:
    owner: bool
    status: bool
    history: bool
    attempt: bool


# operation -> which parts of the fence it checks (docs/contract.md C2.4, C2.3).
FENCES: dict[str, FenceRule] = {
    #                                 owner  status history attempt
    "load_generation": FenceRule(True, True, True, False),
    "begin_generation_attempt": FenceRule(True, True, True, False),
    "commit_step": FenceRule(True, True, True, True),
    "finish_turn": FenceRule(True, True, True, True),
    "load_interrupt": FenceRule(True, True, True, False),
    "finish_interruption": FenceRule(True, True, True, False),
    # Abandon is fenced by owner, status and the history version: Go's StartAbandon calls
    # verifyTaskFence with requireHistory (coderd/x/chatd, taskStarter.StartAbandon),
    # before and after the stack alike (issue 34; the reference once said owner and
    # status only, after TestAbandonTask_*).
    "abandon": FenceRule(True, True, True, False),
}


def check_fence(
    db: Db, chat_id: str, op: str, fence: TaskFence, rules: Any, generation_attempt: int | None = None
) -> tuple[str, Chat | None]:
    """Lock the chat row and check the fence of ``op``; ``(OK, chat)`` or an outcome.

    ``rules`` is the replica's ``ChatdRules``: ``rules.fence_checks(op)`` is the row of
    ``FENCES`` for ``op``, with a part switched off only by a planted fence bug.
    """
    if not db.db_up:
        return DB_DOWN, None
    chat = db.chats.get(chat_id)
    if chat is None:
        return FENCED_NO_CHAT, None
    rule = rules.fence_checks(op)
    if rule.owner and (chat.worker_id, chat.runner_id) != (fence.worker_id, fence.runner_id):
        return FENCED_OWNER, chat
    if rule.status and chat.status != fence.status:
        return FENCED_STATUS, chat
    if rule.history and chat.history_version != fence.history_version:
        return FENCED_HISTORY, chat
    if rule.attempt and chat.generation_attempt != generation_attempt:
        return FENCED_ATTEMPT, chat
    return OK, chat


def fenced_note(op: str, outcome: str, chat_id: str, fence: TaskFence, chat: Chat | None) -> Note:
    return note(
        "fenced_out",
        op=op,
        outcome=outcome,
        chat_id=chat_id,
        task_runner=fence.runner_id,
        owner_runner=chat.runner_id if chat else None,
    )


# ---------------------------------------------------------------------------
# Row helpers (rules 1, 2, 7)
# ---------------------------------------------------------------------------


def _put(db: Db, chat: Chat) -> Db:
    return replace(db, chats=db.chats.set(chat.chat_id, chat))


def _lock(chat: Chat, **changes) -> Chat:
    """Rule 1: every transition bumps the snapshot before it changes anything. A
    transition's own ``changes`` of the row are made in the same copy."""
    return replace(chat, snapshot_version=chat.snapshot_version + 1, **changes)


def _insert_messages(db: Db, chat: Chat, messages: list[Message]) -> tuple[Db, Chat, tuple[int, ...]]:
    """Rule 2: assign IDs from the one sequence, move history, reset the attempt."""
    # (per chat, the soft-deleted rows count too: an ID is never handed out twice)
    next_id = 1 + max((m.id for m in chat.messages + chat.deleted_messages), default=0) \
        if db.message_ids_per_chat else db.next_message_id
    stored = []
    for m in messages:
        stored.append(replace(m, id=next_id))
        next_id += 1
    chat = replace(
        chat,
        messages=chat.messages + tuple(stored),
        history_version=chat.snapshot_version,
        generation_attempt=0,
    )
    return replace(db, next_message_id=next_id), chat, tuple(m.id for m in stored)


def ownership_hint(db: Db, after: Chat, db_now_ms: int) -> list:
    """Rule 5: ``chat:ownership`` when the transition left the chat runnable with no owner
    or a stale one (``ownershipStaleOrMissing``); ``db`` holds the heartbeats after it."""
    if after.status not in RUNNABLE:
        return []
    # (rule coverage, model/probes.py: which of the two C2.2 hints the transition gives)
    if not after.owned:
        return [_HINT_UNOWNED, Publish(CHANNEL_OWNERSHIP, after.chat_id)]
    if heartbeat_stale(db, after, db_now_ms, db.heartbeat_stale_ms):
        return [_HINT_STALE_OWNER, Publish(CHANNEL_OWNERSHIP, after.chat_id)]
    return []


_HINT_UNOWNED = probe("C2.2.hint-unowned")
_HINT_STALE_OWNER = probe("C2.2.hint-stale-owner")


def _publishes(db: Db, after: Chat, db_now_ms: int) -> list:
    """Rule 5: ``chat:update``, then the ownership hint if any."""
    return [Publish(CHANNEL_UPDATE, after.chat_id)] + ownership_hint(db, after, db_now_ms)


def last_assistant(chat: Chat) -> Message | None:
    for m in reversed(chat.messages):
        if m.role == "assistant":
            return m
    return None


def unresolved_calls(chat: Chat) -> tuple[Message | None, tuple]:
    """Rule 7: ``(tool call message, unresolved calls in call order)``."""
    idx = None
    for i in range(len(chat.messages) - 1, -1, -1):
        if chat.messages[i].role == "assistant":
            idx = i
            break
    if idx is None:
        return None, ()
    msg = chat.messages[idx]
    answered = tuple(m.provider_id for m in chat.messages[idx + 1 :] if m.role == "tool")
    calls = tuple(c for c in msg.tool_calls if c.provider_id not in answered)
    return msg, calls


def find_message(chat: Chat, message_id: int) -> Message | None:
    """The row with this ID, in the active history or among the soft-deleted rows."""
    for m in chat.messages + chat.deleted_messages:
        if m.id == message_id:
            return m
    return None


def turn_index(chat: Chat) -> int:
    """The script cursor: how many answers of the script the current user turn has used
    (its assistant messages, after the answers an edit discarded: ``script_skip``)."""
    k = chat.script_skip
    for m in reversed(chat.messages):
        if m.role == "user":
            break
        if m.role == "assistant":
            k += 1
    return k


def decide_generation_action(chat: Chat) -> str:
    """``decideGenerationAction`` for the scripted model (docs/contract.md C1.3)."""
    _, calls = unresolved_calls(chat)
    if calls:
        return "execute_local_tools"
    last = chat.messages[-1] if chat.messages else None
    if last is not None and last.role == "assistant" and not last.tool_calls:
        return "finish_turn"  # a text answer completes the turn
    if turn_index(chat) >= len(chat.turns):
        return "finish_turn"
    return "generate_assistant"


# ---------------------------------------------------------------------------
# Task transactions (the caller has checked the fence with check_fence)
# ---------------------------------------------------------------------------


def tx_begin_generation_attempt(db: Db, chat: Chat, db_now_ms: int) -> tuple[Db, Chat, list]:
    """``RecordGenerationAttempt``: generation_attempt + 1; no ``chat:update`` (see the
    docstring), but the ownership hint when the runner's heartbeat is stale (rule 5)."""
    chat = _lock(chat, generation_attempt=chat.generation_attempt + 1)
    db = _put(db, chat)
    return db, chat, ownership_hint(db, chat, db_now_ms)


def tx_commit_assistant(db: Db, chat: Chat, tool_calls: tuple, db_now_ms: int) -> tuple[Db, list]:
    """``CommitStep`` of generate_assistant: insert the assistant message with its calls."""
    chat = _lock(chat)
    db, chat, ids = _insert_messages(
        db, chat, [Message(0, "assistant", db_now_ms, tool_calls=tuple(tool_calls))]
    )
    effects: list = [note("assistant_committed", chat_id=chat.chat_id, message_id=ids[0], calls=len(tool_calls))]
    db = _put(db, chat)
    return db, effects + _publishes(db, chat, db_now_ms)


def _result_truths(
    chat: Chat, call_msg: Message, committed: list[tuple[int, str, Any]], replica: str, attempt: int,
    generation_attempt: int, task: str, db_now_ms: int,
) -> list:
    out = []
    # A provider ID that several calls of the message share (one UUID) gets one result per
    # copy, in call order (docs/contract.md C3.7); each record says its copy, so a checker and a report tell the
    # copies' results apart (model/properties/evidence.py ``results_of``). Only then: every
    # other record is as it was.
    counts: dict[str, int] = {}
    for c in call_msg.tool_calls:
        counts[c.provider_id] = counts.get(c.provider_id, 0) + 1
    copies: dict[str, int] = {}
    for result_id, provider_id, result in committed:
        extra = {}
        if counts.get(provider_id, 0) > 1:
            extra["copy"] = copies[provider_id] = copies.get(provider_id, -1) + 1
        out.append(
            truth(
                "result_committed",
                chat_id=chat.chat_id,
                message_id=call_msg.id,
                provider_id=provider_id,
                uuid=tool_call_uuid(chat.chat_id, call_msg.id, provider_id),
                kind=result.kind,
                is_error=result.is_error,
                exit_code=getattr(result, "exit_code", None),
                process_id=getattr(result, "process_id", None),
                reason=getattr(result, "reason", None),
                replica=replica,
                attempt=attempt,
                generation_attempt=generation_attempt,
                task=task,
                result_message_id=result_id,
                at_db_ms=db_now_ms,
                **extra,
            )
        )
    return out


def tx_commit_results(
    db: Db, chat: Chat, message_id: int, results: list[tuple[str, Any]], db_now_ms: int, replica: str,
    attempt: int, generation_attempt: int,
) -> tuple[Db, list]:
    """``CommitStep`` of a tool batch: every result in ONE transaction (1.3 step 5).

    ``message_id`` is the tool call message the batch answered (passed in, not re-derived,
    so a planted missing history fence still records what the stale task meant)."""
    call_msg = find_message(chat, message_id)  # (a planted missing fence may commit a discarded one)
    chat = _lock(chat)
    db, chat, ids = _insert_messages(
        db, chat, [Message(0, "tool", db_now_ms, provider_id=p, result=r) for p, r in results]
    )
    committed = [(i, p, r) for i, (p, r) in zip(ids, results)]
    effects = _result_truths(
        chat, call_msg, committed, replica, attempt, generation_attempt, "generation", db_now_ms
    )
    db = _put(db, chat)
    return db, effects + _publishes(db, chat, db_now_ms)


def _finish(db: Db, chat: Chat, db_now_ms: int) -> tuple[Db, Chat]:
    """The end of a turn: ``waiting``, or promote the queue head into history (running)."""
    if chat.queue:
        head, rest = chat.queue[0], chat.queue[1:]
        chat = replace(chat, queue=rest, status=RUNNING, script_skip=0)
        db, chat, _ = _insert_messages(db, chat, [Message(0, "user", db_now_ms, text=head)])
        return db, chat
    return db, replace(chat, status=WAITING)


def tx_finish_turn(db: Db, chat: Chat, db_now_ms: int) -> tuple[Db, list]:
    db, chat = _finish(db, _lock(chat), db_now_ms)
    db = _put(db, chat)
    return db, [note("turn_finished", chat_id=chat.chat_id, status=chat.status)] + _publishes(db, chat, db_now_ms)


_INTERRUPT_COMMITS_CANCEL_RESULT = probe("C3.3.cancel-result")
_INTERRUPT_COMMITS_GENERIC = probe("C3.3.generic")
_INTERRUPT_COMMITS_NOTHING_OPEN = probe("C3.3.nothing-open")


def tx_finish_interruption(
    db: Db, chat: Chat, results_by_provider: FMap, generic: Any, db_now_ms: int, replica: str, attempt: int,
    answered: Callable[[Chat], tuple[Message | None, tuple]] | None = None,
) -> tuple[Db, list]:
    """Commit of ``StartInterrupt`` (3.2 step 4): re-read the unresolved calls, write one
    result for EVERY one of them (the interrupt's result for its provider ID, else the
    generic result), then ``FinishInterruption``. ``answered`` re-reads the calls to
    answer from the locked row; by default ``unresolved_calls`` (rule 7). chatd passes
    its rules' hook (``ChatdRules.interrupt_answers``), where the planted bugs of this
    commit live."""
    call_msg, calls = (answered or unresolved_calls)(chat)
    chat = _lock(chat)
    # Rule coverage (model/probes.py): what the interrupt commits per call (C3.3).
    effects: list = [_INTERRUPT_COMMITS_CANCEL_RESULT if c.provider_id in results_by_provider
                     else _INTERRUPT_COMMITS_GENERIC for c in calls] or [_INTERRUPT_COMMITS_NOTHING_OPEN]
    if calls:
        results = [(c.provider_id, results_by_provider.get(c.provider_id, generic)) for c in calls]
        db, chat, ids = _insert_messages(
            db, chat, [Message(0, "tool", db_now_ms, provider_id=p, result=r) for p, r in results]
        )
        committed = [(i, p, r) for i, (p, r) in zip(ids, results)]
        effects += _result_truths(chat, call_msg, committed, replica, attempt, 0, "interrupt", db_now_ms)
    db, chat = _finish(db, chat, db_now_ms)
    effects.append(note("interruption_finished", chat_id=chat.chat_id, status=chat.status, results=len(calls)))
    db = _put(db, chat)
    return db, effects + _publishes(db, chat, db_now_ms)


def tx_acquire(db: Db, chat: Chat, worker_id: str, runner_id: str, db_now_ms: int) -> tuple[Db, list]:
    """``Acquire``: set both owner columns and insert the heartbeat row (2.1)."""
    before = chat
    chat = _lock(chat, worker_id=worker_id, runner_id=runner_id)
    db = _put(replace(db, heartbeats=db.heartbeats.set((chat.chat_id, runner_id), db_now_ms)), chat)
    return db, [
        note("acquired", chat_id=chat.chat_id, worker_id=worker_id, runner_id=runner_id, previous=before.runner_id)
    ] + _publishes(db, chat, db_now_ms)


def tx_abandon(db: Db, chat: Chat, db_now_ms: int) -> tuple[Db, list]:
    """``Abandon``: clear the owner columns and the runner's heartbeat (2.3)."""
    hb = db.heartbeats.remove((chat.chat_id, chat.runner_id))
    chat = _lock(chat, worker_id=None, runner_id=None)
    db = _put(replace(db, heartbeats=hb), chat)
    return db, [note("abandoned", chat_id=chat.chat_id, status=chat.status)] + _publishes(db, chat, db_now_ms)


def heartbeat_stale(db: Db, chat: Chat, db_now_ms: int, stale_ms: int) -> bool:
    """Acquisition's takeover test: the current runner's heartbeat is missing or old."""
    at = db.heartbeats.get((chat.chat_id, chat.runner_id))
    return at is None or at < db_now_ms - stale_ms


def upsert_heartbeats(db: Db, keys: list[tuple[str, str]], db_now_ms: int) -> Db:
    hb = db.heartbeats
    for key in keys:
        hb = hb.set(key, db_now_ms)
    return replace(db, heartbeats=hb)


def cleanup_heartbeats(db: Db, db_now_ms: int, stale_ms: int) -> Db:
    """The cleanup loop: delete rows older than the stale limit (2.2)."""
    keep = [(k, v) for k, v in db.heartbeats.items() if v >= db_now_ms - stale_ms]
    if len(keep) == len(db.heartbeats):
        return db
    return replace(db, heartbeats=FMap(keep))


# ---------------------------------------------------------------------------
# User actions (the HTTP API; not fenced, refused when they do not apply)
# ---------------------------------------------------------------------------


def _refused(db: Db, action: str, chat_id: str, reason: str) -> tuple[Db, list]:
    """A user action the database refuses changes nothing; the note says why."""
    return db, [note("refused", action=action, chat_id=chat_id, reason=reason)]


def db_new_chat(
    db: Db, chat_id: str, turns, gen_time_ms: int, db_now_ms: int, context_limit_tokens: int = 0
) -> tuple[Db, list]:
    """Create an idle chat whose model answers with the scripted ``turns``.

    ``chat_id`` must be a UUID string: the tool call UUID is derived from its bytes.
    ``context_limit_tokens`` is the chat model's context window (0: unknown, the default
    per-result budget).
    """
    if not db.db_up:
        return _refused(db, "new_chat", chat_id, DB_DOWN)
    if chat_id in db.chats:
        return _refused(db, "new_chat", chat_id, "exists")
    chat = Chat(chat_id, WAITING, turns=tuple(tuple(t) for t in turns), gen_time_ms=gen_time_ms,
                context_limit_tokens=context_limit_tokens)
    return _put(db, chat), [note("chat_created", chat_id=chat_id)]


def db_send_user_message(
    db: Db, chat_id: str, text: str, db_now_ms: int, interrupt: bool = False
) -> tuple[Db, list]:
    """``SendMessage``: from waiting/error start a turn (-> running); while busy queue it,
    and with ``interrupt`` also move running -> interrupting (3.1)."""
    if not db.db_up:
        return _refused(db, "send_message", chat_id, DB_DOWN)
    chat = db.chats.get(chat_id)
    if chat is None or chat.status == ARCHIVED:
        return _refused(db, "send_message", chat_id, "no_chat")
    chat = _lock(chat)
    if chat.status in (WAITING, ERROR):
        chat = replace(chat, status=RUNNING, script_skip=0)
        db, chat, _ = _insert_messages(db, chat, [Message(0, "user", db_now_ms, text=text)])
    else:
        chat = replace(chat, queue=chat.queue + (text,))
        if interrupt and chat.status == RUNNING:
            chat = replace(chat, status=INTERRUPTING)
    db = _put(db, chat)
    return db, [note("user_message", chat_id=chat_id, status=chat.status)] + _publishes(db, chat, db_now_ms)


def db_interrupt(db: Db, chat_id: str, db_now_ms: int) -> tuple[Db, list]:
    """``Interrupt(user_cancel)``: running -> interrupting; history unchanged (3.1)."""
    if not db.db_up:
        return _refused(db, "interrupt", chat_id, DB_DOWN)
    chat = db.chats.get(chat_id)
    if chat is None or chat.status != RUNNING:
        db, eff = _refused(db, "interrupt", chat_id, "not_running")
        return db, [*eff, probe("C3.1.refused-not-running")]
    chat = _lock(chat, status=INTERRUPTING)
    db = _put(db, chat)
    return db, [probe("C3.1.requested"), note("interrupt_requested", chat_id=chat_id)] + _publishes(db, chat, db_now_ms)


def db_archive(db: Db, chat_id: str, db_now_ms: int) -> tuple[Db, list]:
    """Archive a chat; its runner abandons it (nothing is canceled on the agent)."""
    if not db.db_up:
        return _refused(db, "archive", chat_id, DB_DOWN)
    chat = db.chats.get(chat_id)
    if chat is None or chat.status == ARCHIVED:
        return _refused(db, "archive", chat_id, "no_chat")
    chat = _lock(chat, status=ARCHIVED)
    db = _put(db, chat)
    return db, [note("archived", chat_id=chat_id)] + _publishes(db, chat, db_now_ms)


def db_edit_message(db: Db, chat_id: str, db_now_ms: int) -> tuple[Db, list]:
    """``EditMessage`` of the current turn's user message (rule 9): soft-delete it and
    everything after it, insert the replacement, clear the queue, -> running with the owner
    kept. Nothing answers the discarded calls and nothing reaches the agent (design Q4);
    the runner sees the new history, cancels its task without waiting and starts a
    generation from the replacement (runner rule 2). Refused on an archived chat
    (``ErrChatArchived``) and on one with no user message yet (``ErrMessageNotFound``)."""
    if not db.db_up:
        return _refused(db, "edit_message", chat_id, DB_DOWN)
    chat = db.chats.get(chat_id)
    if chat is None or chat.status == ARCHIVED:
        db, eff = _refused(db, "edit_message", chat_id, "no_chat")
        return db, [*eff, probe("C3.6.refused-archived")]
    at = next((i for i in range(len(chat.messages) - 1, -1, -1) if chat.messages[i].role == "user"), None)
    if at is None:
        db, eff = _refused(db, "edit_message", chat_id, "no_message")
        return db, [*eff, probe("C3.6.refused-no-message")]
    # Rule coverage (model/probes.py): what the edit discards (C3.6): calls left without a
    # result or cancel, an interruption it ends, or only the message itself.
    probes = [probe("C3.6.ends-interruption")] if chat.status == INTERRUPTING else []
    edited, discarded = chat.messages[at], chat.messages[at:]
    chat = _lock(
        chat,
        messages=chat.messages[:at],
        deleted_messages=chat.deleted_messages + discarded,
        queue=(),
        status=RUNNING,
        script_skip=turn_index(chat),
    )
    db, chat, ids = _insert_messages(db, chat, [Message(0, "user", db_now_ms, text=edited.text)])
    db = _put(db, chat)
    calls = sum(len(m.tool_calls) for m in discarded if m.role == "assistant")
    probes.append(probe("C3.6.discards-calls") if calls else probe("C3.6.discards-no-calls"))
    return db, probes + [
        note("message_edited", chat_id=chat_id, edited_message_id=edited.id, replacement_message_id=ids[0],
             discarded_messages=len(discarded), discarded_calls=calls)
    ] + _publishes(db, chat, db_now_ms)
