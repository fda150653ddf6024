"""The generation and abandon tasks (rule 5), and what every task shares: the fenced load,
the dial, the tool call identity and the execute batch's commit (rule 8's result budget).

Theory of operation
-------------------
A task's attempt starts with ``<kind>_start(rep, db, task, key, number, now_ms,
db_now_ms) -> (db, outcome, attempt, effects)``: it runs its transactions under the task
fence at once and either finishes (``DONE``, ``RETRY:...``, ``EXIT:...``) or returns the
``Attempt`` that waits (``PENDING``) for a model answer (timer ``<attempt>/gen``) or a
dial. The retry wrapper (retry.py) decides what an outcome means. The tool batch the
generation attempt dials for is driven by batch.py; its one commit is
``_execute_commit`` here, so the retry wrapper's planted-bug path can commit it too.
"""

from __future__ import annotations

from typing import Any

from .. import chattool
from ..chatd_db import (
    DB_DOWN,
    FENCED_ATTEMPT,
    FENCED_HISTORY,
    FENCED_OWNER,
    FENCED_STATUS,
    OK,
    Chat,
    Db,
    check_fence,
    decide_generation_action,
    fenced_note,
    turn_index,
    tx_abandon,
    tx_begin_generation_attempt,
    tx_commit_results,
    tx_finish_turn,
    unresolved_calls,
)
from ..core import Request, Send, SetTimer, note, probe
from .rules import ChatdRules
from .state import AGENT, DONE, EXIT, PENDING, RETRY, Attempt, ReplicaState, Task


def _fenced(db: Db, task: Task, op: str, rules: ChatdRules, attempt: int | None = None):
    """Load the task's chat under its fence (2.4): ``(chat, None, [])`` when the fence
    holds, else ``(chat, outcome, effects)`` saying how the task ends."""
    st, chat = check_fence(db, task.chat_id, op, task.fence, rules, attempt)
    if st == OK:
        return chat, None, []
    outcome, eff = _failed(st, op, task, chat)
    return chat, outcome, eff


# Rule coverage (model/probes.py): which part of a fence (C2.4) turned a write away.
_FENCE_PROBES = {
    FENCED_OWNER: probe("C2.4.fenced-owner"),
    FENCED_STATUS: probe("C2.4.fenced-status"),
    FENCED_HISTORY: probe("C2.4.fenced-history"),
    FENCED_ATTEMPT: probe("C2.4.fenced-attempt"),
}
_NO_CHAT_PROBE = probe("C2.4.fenced-no-chat")


def _failed(outcome: str, op: str, task: Task, chat: Chat | None) -> tuple[str, list]:
    """A transaction that did not go through: DB errors retry, fences exit (2.4)."""
    if outcome == DB_DOWN:
        return f"{RETRY}:db_down", [probe("C2.4.db-down"), note("db_down", op=op, task=task.task_id)]
    return f"{EXIT}:{outcome}", [_FENCE_PROBES.get(outcome, _NO_CHAT_PROBE),
                                 fenced_note(op, outcome, task.chat_id, task.fence, chat)]


def _dial(rep: ReplicaState, key: str) -> list:
    return [
        Send(AGENT, Request(req_id=f"{key}/dial", src=rep.name, method="DIAL", path="/")),
        SetTimer(f"{key}/dial", rep.rules.timing.dial_timeout_ms),
    ]


def _identity(task: Task, att: Attempt, call) -> Any:
    if att.age is None:
        return None
    return chattool.Identity(task.chat_id, att.message_id, call.provider_id, att.age)


# Rule coverage (model/probes.py): the one action a generation attempt picks (C1.3).
_ACTION_PROBES = {
    "execute_local_tools": probe("C1.3.execute-batch"),
    "generate_assistant": probe("C1.3.generate"),
    "finish_turn": probe("C1.3.finish-turn"),
}


def _generation_start(rep, db, task, key, number, now_ms, db_now_ms):
    rules = rep.rules
    chat, outcome, eff = _fenced(db, task, "load_generation", rules)
    if outcome is not None:
        return db, outcome, None, eff
    action = decide_generation_action(chat)
    picked = _ACTION_PROBES[action]
    if action == "finish_turn":
        db, outcome, eff = finish_generation_turn(rep, db, task, chat.generation_attempt, db_now_ms)
        return db, outcome, None, [picked, *eff]
    chat, outcome, eff = _fenced(db, task, "begin_generation_attempt", rules)
    if outcome is not None:
        return db, outcome, None, eff
    db, chat, hint = tx_begin_generation_attempt(db, chat, db_now_ms)
    gen_attempt = chat.generation_attempt
    if action == "generate_assistant":
        att = Attempt(key, number, action, "generate", gen_attempt, turn=tuple(chat.turns[turn_index(chat)]))
        return db, PENDING, att, [picked, *hint, SetTimer(f"{key}/gen", chat.gen_time_ms)]
    msg, calls = unresolved_calls(chat)
    # C1: one DB clock read per attempt; the age is measured from database timestamps only.
    # ``today`` sends no identity (a real difference, see ChatdRules).
    age = chattool.ToolCallAge(db_now_ms - msg.created_at_ms, now_ms) if rules.send_identity else None
    identity_probe = probe("C4.1.age-from-db") if age is not None else probe("C4.1.no-identity")
    n = len(calls)
    att = Attempt(key, number, action, "dial", gen_attempt, msg.id, tuple((c, None) for c in calls),
                  (None,) * n, (None,) * n, age)
    mark = note("batch_started", task=task.task_id, calls=n, generation_attempt=gen_attempt)
    return db, PENDING, att, [picked, identity_probe, *hint, mark, *_dial(rep, key)]


def finish_generation_turn(rep: ReplicaState, db: Db, task: Task, loaded_attempt: int, db_now_ms: int):
    """``finishGenerationTurn``: ``FinishTurn`` under the task fence plus
    ``requireGenerationAttempt`` against ``loaded_attempt``, the generation attempt of the
    chat as the attempt loaded it (docs/contract.md C2.4: "check generation_attempt == the
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


def _abandon_start(rep, db, task, key, number, now_ms, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "abandon", rep.rules)
    if outcome is not None:
        return db, outcome, None, eff
    db, eff = tx_abandon(db, chat, db_now_ms)
    return db, DONE, None, eff


def _execute_commit(rep, db, task, att, db_now_ms):
    """The execute batch's ONE commit, fenced on history_version and generation_attempt
    (1.3 step 5)."""
    chat, outcome, eff = _fenced(db, task, "commit_step", rep.rules, att.generation_attempt)
    if outcome is not None:
        return db, outcome, eff
    results = [(call.provider_id, fit_to_context(chat, res)) for (call, _), res in zip(att.targets, att.results)]
    db, eff = tx_commit_results(
        db, chat, att.message_id, results, db_now_ms, rep.name, att.number, att.generation_attempt
    )
    return db, DONE, [probe("C1.3.batch-committed"), *eff]


def fit_to_context(chat: Chat, result: chattool.Result) -> chattool.Result:
    """Rule 8: a result as committed, cut to the per-result budget of the chat model's
    context window (docs/contract.md C1.3 step 6 for generation, 3.2 step 3.7 for the
    interrupt's cancel answers; TestInterruptTask_ResultsTruncatedLikeLiveResults). Go
    cuts a live result in chatloop before the commit and an interrupt result in
    newInterruptResult; both read the same model config, so cutting at the commit is the
    same. The interrupt's generic result is far below any budget, so cutting every result
    equals Go's cutting only the answers that describe the call."""
    return chattool.fit_result_to_context(result, chattool.tool_result_byte_budget(chat.context_limit_tokens))
