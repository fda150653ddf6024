"""chatd's half of the design variants (model/designs.py): what chatd keeps per tool call
besides the committed tool call, as one bookkeeping object on ``ChatdRules``.

Theory of operation
-------------------
Design B keeps nothing (docs/contract.md D3 item 1: chatd owns the conversation and
adds no table of executions): ``Bookkeeping`` is that, and every hook of it is a no-op. The batch (batch.py)
asks its rules' bookkeeping three things, in this order, and never branches on a design:

1. ``before_calls`` once the dial answered: read or write the design's durable rows and
   return one ``Plan`` per target (how the call begins, which incarnation it carries), or
   the outcome that ends the attempt (a database that is down: retried, as any DB error).
2. ``begin`` per call: ``chattool.begin_call`` unless the plan says otherwise.
3. ``after_step`` after every step of a call: write a row learnt from the step.

A durable write is a real step of the model's database: it changes ``Db.execution_rows``,
fails while the database is down, and leaves a ``durable_write`` note (the cost column of
``toolcall-sim compare``). The rows are keyed by the tool call UUID (the database could
equally key them by chat, message and provider ID).

- ``Ledger`` (#27100, #27317-#27325, an execution table in Postgres): after a start answers,
  the process ID the agent picked goes into the ledger; a later attempt that finds a row
  waits on that process (``chattool.begin_attach``) instead of starting. No row (the
  answer was lost, or the attempt ended before it arrived: the window D3 names between
  starting a process and recording its ID) starts again. One durable write per
  start. The PRs also had claims, sweeps and reconciliation, which are left out: they
  do not close that window.
- ``FirstAttemptOnly`` (the design's previous revision): only the batch's first generation
  attempt (``generation_attempt == 1``: the counter restarts at every inserted message,
  chatd_db rule 2, docs/contract.md C1.1) starts an execute; a later one looks the call's process up by its tool call UUID
  (``chattool.begin_lookup``) and reports unknown on a 404 (the design's stated flaw).
- ``IncarnationTokens`` (D7's fix, rejected for its cost): once the dial answered
  and before the first request for a call, chatd stores the agent incarnation the
  database last heard of (``Db.agent_incarnation``: a booting agent reports its start,
  model/system.py Rule 4) as the call's token (``Db.execution_rows``, insert if absent,
  one write per call); every request for the call, cancels included, carries the stored
  token (``Identity.incarnation``), which the agent checks (model/agent/designs.py
  ``IncarnationToken``). An agent that restarted after the token was stored refuses the
  call (unknown): the token can only err towards unknown, never towards a second run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .. import chattool
from ..core import CachedRepr, note
from ..identity import tool_call_uuid

# state.RETRY, which this module cannot import (state.py imports the rules, which import
# this): a DB error's outcome, retried by the retry wrapper.
_RETRY_DB_DOWN = "retry:db_down"


@dataclass(frozen=True, repr=False)
class Plan(CachedRepr):
    """How one call of a batch begins: ``attach_pid`` (wait on a known process),
    ``lookup`` (look its process up) or a start; ``incarnation``: the token it carries."""

    attach_pid: str | None = None
    lookup: bool = False
    incarnation: int | None = None


NO_PLAN = Plan()


def _uuid(task: Any, att: Any, call: Any) -> str:
    return tool_call_uuid(task.chat_id, att.message_id, call.provider_id)


def _write(db: Any, rows: dict, table: str, replica: str) -> tuple[Any, list]:
    """Insert ``rows`` (uuid -> value) into ``Db.execution_rows``: one durable write per
    row, each a ``durable_write`` note."""
    table_rows = db.execution_rows
    effects = []
    for uuid, value in rows.items():
        table_rows = table_rows.set(uuid, value)
        effects.append(note("durable_write", table=table, uuid=uuid, replica=replica))
    return replace(db, execution_rows=table_rows), effects


@dataclass(frozen=True, repr=False)
class Bookkeeping(CachedRepr):
    """Design B: nothing per tool call (docs/contract.md D3 item 1)."""

    name: str = "none"

    def before_calls(self, rep: Any, db: Any, task: Any, att: Any, dial: Any) -> tuple[Any, str | None, tuple, list]:
        """``(db, outcome or None, one Plan per target, effects)`` once the dial answered."""
        return db, None, (NO_PLAN,) * len(att.targets), []

    def begin(self, plan: Plan, call: Any, ident: Any, rep: Any, prefix: str, chat_id: str, now_ms: int):
        """Begin one call of a generation batch as ``plan`` says."""
        return chattool.begin_call(call, ident, rep.name, prefix, chat_id, now_ms, rep.rules.send_identity,
                                   timing=rep.rules.timing, layer=rep.rules.tool_layer)

    def after_step(self, rep: Any, db: Any, task: Any, att: Any, i: int, before: Any, after: Any) -> tuple[Any, list]:
        """``(db, effects)`` after call ``i`` moved from ``before`` to ``after``."""
        return db, []

    def _state(self, call: Any, ident: Any, rep: Any, prefix: str, chat_id: str, now_ms: int):
        return chattool.new_call_state(call, ident, rep.name, prefix, chat_id, now_ms, rep.rules.send_identity,
                                       timing=rep.rules.timing, layer=rep.rules.tool_layer)


NONE = Bookkeeping()


@dataclass(frozen=True, repr=False)
class Ledger(Bookkeeping):
    """The execution ledger: a start's process ID is written after its answer."""

    name: str = "ledger"

    def before_calls(self, rep, db, task, att, dial):
        if att.action == "interrupt":
            return super().before_calls(rep, db, task, att, dial)
        if not db.db_up:
            return db, _RETRY_DB_DOWN, (), [note("db_down", op="read_ledger", task=task.task_id)]
        plans = tuple(Plan(attach_pid=db.execution_rows.get(_uuid(task, att, call)))
                      if call.tool == chattool.EXECUTE else NO_PLAN for call, _ in att.targets)
        return db, None, plans, []

    def begin(self, plan, call, ident, rep, prefix, chat_id, now_ms):
        if plan.attach_pid is None:
            return super().begin(plan, call, ident, rep, prefix, chat_id, now_ms)
        return chattool.begin_attach(self._state(call, ident, rep, prefix, chat_id, now_ms), plan.attach_pid, now_ms)

    def after_step(self, rep, db, task, att, i, before, after):
        if before.pending_op != "start" or after.pending_op == "start":
            return db, []  # only a start's answer teaches a process ID
        pid = after.process_id or (after.result.process_id if after.result is not None
                                    and after.result.kind == "background_started" else None)
        uuid = _uuid(task, att, after.call)
        if not pid or uuid in db.execution_rows:
            return db, []
        if not db.db_up:
            # The write fails and the call goes on without a row: a later attempt starts again.
            return db, [note("durable_write_failed", table="ledger", uuid=uuid, replica=rep.name)]
        return _write(db, {uuid: pid}, "ledger", rep.name)


@dataclass(frozen=True, repr=False)
class FirstAttemptOnly(Bookkeeping):
    """Only the batch's first generation attempt starts; later ones look up."""

    name: str = "first-attempt-only"

    def before_calls(self, rep, db, task, att, dial):
        if att.action == "interrupt" or att.generation_attempt <= 1:
            return super().before_calls(rep, db, task, att, dial)
        plans = tuple(Plan(lookup=call.tool == chattool.EXECUTE) for call, _ in att.targets)
        return db, None, plans, [note("lookup_only", task=task.task_id, generation_attempt=att.generation_attempt)]

    def begin(self, plan, call, ident, rep, prefix, chat_id, now_ms):
        if not plan.lookup or ident is None:
            return super().begin(plan, call, ident, rep, prefix, chat_id, now_ms)
        return chattool.begin_lookup(self._state(call, ident, rep, prefix, chat_id, now_ms), now_ms)


@dataclass(frozen=True, repr=False)
class IncarnationTokens(Bookkeeping):
    """The agent incarnation, stored per tool call before its first request."""

    name: str = "incarnation-token"

    def before_calls(self, rep, db, task, att, dial):
        reported = db.agent_incarnation  # as the agent last reported its start (0: never)
        uuids = [_uuid(task, att, call) for call, _ in att.targets]
        missing = {u: reported for u in uuids if u not in db.execution_rows} if reported else {}
        effects: list = []
        if missing:
            if not db.db_up:
                # No request goes out before its token is durable: the attempt is retried.
                return db, _RETRY_DB_DOWN, (), [note("db_down", op="store_incarnation", task=task.task_id)]
            db, effects = _write(db, dict(sorted(missing.items())), "incarnation_tokens", rep.name)
        plans = tuple(Plan(incarnation=db.execution_rows.get(u)) for u in uuids)
        return db, None, plans, effects


def with_incarnation(ident: Any, plan: Plan) -> Any:
    """The call's identity carrying the plan's token (None: unchanged)."""
    if ident is None or plan.incarnation is None:
        return ident
    return replace(ident, incarnation=plan.incarnation)
