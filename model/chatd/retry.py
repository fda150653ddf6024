"""The retry wrapper (rule 4, docs/contract.md C1.4a, Go's ``runTaskWithRetry``) and the
canceling of a task (rule 3).

Theory of operation
-------------------
``_start_attempt`` runs the start of the task's kind (table ``_ATTEMPT_STARTS``) and arms
the attempt's 15-minute timer when it has to wait. Every outcome of an attempt, from any
handler, goes through ``_end_task``: ``PENDING`` keeps waiting; any other outcome ends the
attempt (its timers canceled, its calls aborted, rule 3); ``RETRY:...`` arms the backoff
(100 ms doubling, capped at 5 s, no limit); ``DONE`` and ``EXIT:...`` end the task, and an
abandon that is done (or fenced out by a new owner) drops the runner (2.3).

The only way an attempt outlives its end is the planted bug that lets a timed-out execute
batch go on (``ChatdRules.batch_left_running``): the attempt is kept as ``Task.zombie``
and its calls are driven by ``_zombie_progress`` until its batch commits.
"""

from __future__ import annotations

from .. import chattool
from ..chatd_db import Db
from ..core import CancelTimer, SetTimer, note, probe, replace
from .interrupt import _interrupt_start
from .state import (
    DONE,
    EXIT,
    PENDING,
    RETRY,
    SYNC_PREFIX,
    TIMED_OUT,
    Attempt,
    Out,
    ReplicaState,
    Runner,
    Task,
    _call_index,
    _put_runner,
)
from .tasks import _abandon_start, _execute_commit, _generation_start

# Rule coverage (model/probes.py): an interrupt attempt that ends (canceled or timed out)
# before its one commit commits nothing (C3.2 step 6).
_INTERRUPT_ENDED_UNCOMMITTED = probe("C3.2.ended-uncommitted")

_ATTEMPT_STARTS = {"generation": _generation_start, "interrupt": _interrupt_start, "abandon": _abandon_start}


def _drop_runner(rep: ReplicaState, chat_id: str, reason: str) -> tuple[ReplicaState, list]:
    """The runner of ``chat_id`` stops: its task is canceled (rule 3), its sync timer too."""
    runner = rep.runners.get(chat_id)
    if runner is None:
        return rep, []
    effects = _cancel_task(runner.task) if runner.task else []
    effects += [
        CancelTimer(SYNC_PREFIX + chat_id),
        note("runner_dropped", replica=rep.name, chat_id=chat_id, reason=reason),
    ]
    return replace(rep, runners=rep.runners.remove(chat_id)), effects


def _cancel_task(task: Task) -> list:
    """Rule 3: stop waiting, send nothing."""
    effects = [CancelTimer(f"{task.task_id}/backoff")]
    if task.attempt is not None:
        effects += _end_attempt(task.attempt)
        if task.attempt.action == "interrupt":
            effects.append(_INTERRUPT_ENDED_UNCOMMITTED)
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
            effects += chattool.abort(cs)
    return effects


def _start_attempt(rep: ReplicaState, db: Db, runner: Runner, task: Task, now_ms: int, db_now_ms: int,
                   edits: tuple[dict, dict] | None = None) -> Out:
    """Start the task's next attempt. ``edits``: the caller's own ``(runner edits, replica
    edits)``, made in the copies of both that the attempt's outcome makes anyway
    (``_put_task``); the start reads neither the runner nor those fields."""
    number = task.attempts + 1
    key = f"{task.task_id}/a{number}"
    start = _ATTEMPT_STARTS[task.kind]
    # The starts read the task's ID, kind, chat and fence, never its attempt count or
    # attempt: the task is copied once, with both, after its start.
    db, outcome, att, effects = start(rep, db, task, key, number, now_ms, db_now_ms)
    if outcome == PENDING:
        effects = [SetTimer(f"{key}/timeout", rep.rules.timing.task_timeout_ms)] + effects
    return _end_task(rep, db, runner, replace(task, attempts=number, attempt=att), outcome, effects, edits)


def _end_task(rep: ReplicaState, db: Db, runner: Runner, task: Task, outcome: str, effects: list,
              edits: tuple[dict, dict] | None = None) -> Out:
    """Apply an attempt's outcome to the runner (the body of ``runTaskWithRetry``).
    ``edits``: as ``_start_attempt``'s."""
    if outcome == PENDING:
        return _put_task(rep, runner, task, edits), db, effects
    effects = list(effects)
    att = task.attempt
    left_running = rep.rules.batch_left_running(att, timed_out=outcome == TIMED_OUT)  # None but for a planted bug
    if left_running is not None:
        task = replace(task, zombie=left_running)
    elif att is not None:
        effects += _end_attempt(att)
        if outcome == TIMED_OUT and att.action == "interrupt":
            effects.append(_INTERRUPT_ENDED_UNCOMMITTED)
    if go_retries(outcome):
        effects += [
            probe("C1.4.retry-timed-out") if outcome == TIMED_OUT else probe("C1.4.retry-error"),
            SetTimer(f"{task.task_id}/backoff", task.backoff_ms),
            note("task_retry", task=task.task_id, chat_id=task.chat_id, why=outcome[len(RETRY) + 1 :],
                 attempt=task.attempts, backoff_ms=task.backoff_ms),
        ]
        max_backoff_ms = rep.rules.timing.task_retry_max_backoff_ms
        task = replace(task, attempt=None, backoff_ms=min(task.backoff_ms * 2, max_backoff_ms))
        return _put_task(rep, runner, task, edits), db, effects
    effects.append(probe("C1.4.done") if outcome == DONE else probe("C1.4.exit-no-retry"))
    effects.append(note("task_" + ("done" if outcome == DONE else "exit"), task=task.task_id,
                        chat_id=task.chat_id, kind=task.kind, why=outcome))
    rep = _put_task(rep, runner, None, edits)
    if task.kind == "abandon" and outcome in (DONE, f"{EXIT}:fenced:owner"):
        # Abandoned, or someone else owns it: either way this runner is finished (2.3).
        rep, eff = _drop_runner(rep, task.chat_id, "abandoned" if outcome == DONE else "owner_changed")
        effects += [probe("C2.3.abandon-released") if outcome == DONE else probe("C2.3.abandon-owner-moved"), *eff]
    return rep, db, effects


# What each outcome stands for in Go's ``runTaskWithRetry`` (tasks.go): the error ``fn``
# returned as three facts. ``RETRY:...`` is an error that is not an expected exit (a
# database that is down, a retryable error); ``TIMED_OUT`` is the attempt whose timer
# canceled its context (``context.Cause`` is ``errTaskTimeout``): whatever ``fn`` was
# waiting on (the dial, the agent's answers, the model) returns the context's error, which
# Go's normalizers join to the expected exit (``normalizeTaskInfrastructureError``,
# ``interruptToolCalls``: ``errors.Join(errTaskExpectedExit, ..., ctx.Err())``); ``EXIT:...``
# is a pure expected exit (``verifyTaskFence``, ``loadChatForTask``: a fence mismatch).
_ERROR_OF = {RETRY: (False, False, False), EXIT: (False, True, False)}  # (timed out, expected exit, context error)
_TIMED_OUT_ERROR = (True, True, True)


def go_retries(outcome: str) -> bool:
    """Whether the retry wrapper runs another attempt after ``outcome`` (rule 4, Go's
    ``runTaskWithRetry``). Go's rule, as written: a timed-out attempt whose error is not an
    expected exit, or carries ``context.Canceled``, ``DeadlineExceeded`` or
    ``errTaskTimeout``, becomes retryable; a pure expected exit is never retried, timed out
    or not; any other error is retried. In the model a step is atomic, so a fence mismatch
    and the timer never meet in one attempt: a fence read that finished before the timer
    ends the attempt in its own step (no retry), and one after it runs on a canceled context,
    whose error Go retries (``TestRetryWrapper_TaskTimeoutDBQueryCancellationRetries``); the
    retried attempt's first fenced load then exits for good."""
    if outcome == DONE or outcome == PENDING:
        return False
    return go_retry_rule(*(_TIMED_OUT_ERROR if outcome == TIMED_OUT else _ERROR_OF[outcome.partition(":")[0]]))


def go_retry_rule(timed_out: bool, expected_exit: bool, context_error: bool) -> bool:
    """``runTaskWithRetry`` on an attempt's error: retried or not."""
    if timed_out and (not expected_exit or context_error):
        return True  # taskRetryableError{errors.Join(errTaskTimeout, err)}
    return not expected_exit


def _put_task(rep: ReplicaState, runner: Runner, task: Task | None, edits: tuple[dict, dict] | None) -> ReplicaState:
    """The runner with ``task`` put into the replica (``_put_runner``), with a caller's
    ``(runner edits, replica edits)`` in the same two copies (``_observe``: what the
    runner has now seen, and the task ID the replica handed out)."""
    if edits is None:
        runner = replace(runner, task=task)
        return replace(rep, runners=rep.runners.set(runner.chat_id, runner))
    runner_edits, replica_edits = edits
    runner = replace(runner, task=task, **runner_edits)
    return replace(rep, runners=rep.runners.set(runner.chat_id, runner), **replica_edits)


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
