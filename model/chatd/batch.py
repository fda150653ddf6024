"""The tool batch of an attempt after its dial: begin the calls (or the interrupt's
cancels), follow each through chattool, and commit once every call has its result
(rules 5, 6, 8 and 9); and the commit of a generated assistant message.

Theory of operation
-------------------
An attempt in step ``dial`` waits for the dial's answer (or its 30 s timer). On success
every call begins at once through chattool (``begin_call``; an interrupt's
``begin_cancel``), except that calls of serial tools begin one at a time in call order
(rule 9). On failure chattool maps the dial error to a result per call. Each answer or
timer of a call moves its chattool state on (``_call_progress``); when the last result
is in, ``_maybe_commit`` runs the ONE fenced commit of the batch or of the interrupt and
hands the outcome to the retry wrapper.
"""

from __future__ import annotations

from .. import chattool
from ..core import CancelTimer, Response, TransportError, note, probe, replace
from ..chatd_db import tx_commit_assistant
from .interrupt import _interrupt_commit
from .retry import _end_task
from .designs import NO_PLAN, with_incarnation
from .rules import ChatdRules
from .state import DONE, PENDING, Attempt, Out
from .tasks import _execute_commit, _fenced, _identity

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


def _dial_failure_kind(answer: Response | TransportError | None) -> str | None:
    if answer is None:
        return DIAL_FAILURE_TIMEOUT
    if isinstance(answer, TransportError):
        return DIAL_FAILURE_TRANSPORT
    if answer.status == 200:
        return None
    return DIAL_FAILURE_FOR_STATUS.get(answer.status, DIAL_FAILURE_TRANSPORT)


# Rule coverage (model/probes.py): a dial that failed, in generation (C4.2 step 1) or on
# interrupt (C3.2), the workspace state it reports (C5.6: a stopped workspace has no
# agent, and only the file tools keep a change that may survive it), and a later attempt
# of a task beginning its calls again, with or without the identity (C4.4).
_DIAL_FAILED_IN_GENERATION = probe("C4.2.dial-failed")
_DIAL_FAILED_ON_INTERRUPT = probe("C3.2.dial-failed")
_WORKSPACE_PROBES = {
    (chattool.DIAL_NO_WORKSPACE, False): probe("C5.6.no-workspace"),
    (chattool.DIAL_NO_WORKSPACE, True): probe("C5.6.no-workspace"),
    (chattool.DIAL_DELETED, False): probe("C5.6.deleted"),
    (chattool.DIAL_DELETED, True): probe("C5.6.deleted"),
    (chattool.DIAL_NO_AGENT, False): probe("C5.6.no-agent-execute"),
    (chattool.DIAL_NO_AGENT, True): probe("C5.6.no-agent-file"),
}
_RETRY_WITH_IDENTITY = probe("C4.4.retry-same-identity")
_RETRY_WITHOUT_IDENTITY = probe("C4.4.retry-without-identity")


def _dial_failure_probes(tool: str, on_interrupt: bool, kind: str, result) -> list:
    """The probes of one call's result after a failed dial: its workspace state, if the
    dial reported one, and its row of the result tables (C5.2-C5.4)."""
    out = []
    workspace = _WORKSPACE_PROBES.get((kind, tool in chattool.FILE_TOOLS))
    if workspace is not None:
        out.append(workspace)
    row = chattool.result_row_probe(tool, on_interrupt, result.kind)
    if row is not None:
        out.append(row)
    return out


def _on_dial(rep, db, runner, task, answer, now_ms, db_now_ms) -> Out:
    """The dial ended: begin every call (or cancel) at once, a serial tool's calls one at
    a time (Rule 9), or map the dial failure."""
    att = task.attempt
    effects: list = [CancelTimer(f"{att.key}/dial")]
    kind = _dial_failure_kind(answer)
    states = list(att.states)
    results = list(att.results)
    plans = att.plans
    if kind is None:
        effects.append(note("dialed", task=task.task_id))
        if att.action != "interrupt" and att.number > 1:
            # (rule coverage: a task retry begins the calls again, C4.4)
            effects.append(_RETRY_WITH_IDENTITY if att.age is not None else _RETRY_WITHOUT_IDENTITY)
        # What the design keeps per tool call (designs.py; nothing in design B).
        book = rep.rules.bookkeeping
        db, outcome, plans, eff = book.before_calls(rep, db, task, att, answer)
        effects += eff
        if outcome is not None:
            return _end_task(rep, db, runner, task, outcome, effects)
        # (the plans go into the attempt with its step, states and results: one copy; the
        # calls begun below read them from ``plans``)
        for i, (call, plan) in enumerate(att.targets):
            ident = with_incarnation(_identity(task, att, call), plans[i])
            prefix = f"{att.key}/c{i}"
            if att.action == "interrupt":
                cs, eff = chattool.begin_cancel(call, plan, ident, rep.name, prefix, task.chat_id, now_ms,
                                                timing=rep.rules.timing)
            else:
                if _waits_for_serial(rep.rules, att.targets, states, results, i):
                    continue  # Rule 9: begun when the serial call before it has its result
                cs, eff = book.begin(plans[i], call, ident, rep, prefix, task.chat_id, now_ms)
            states[i], results[i] = cs, cs.result
            effects += eff
    else:
        effects.append(note("dial_failed", task=task.task_id, kind=kind))
        on_interrupt = att.action == "interrupt"
        effects.append(_DIAL_FAILED_ON_INTERRUPT if on_interrupt else _DIAL_FAILED_IN_GENERATION)
        for i, (call, plan) in enumerate(att.targets):
            ident = _identity(task, att, call)
            if on_interrupt:
                results[i] = chattool.unreachable_result(call, plan, ident, kind)
            else:
                results[i] = chattool.dial_failed_result(call, ident, kind)
            effects += _dial_failure_probes(call.tool, on_interrupt, kind, results[i])
    task = replace(task, attempt=replace(att, step="calls", states=tuple(states), results=tuple(results), plans=plans))
    return _maybe_commit(rep, db, runner, task, effects, db_now_ms)


def _waits_for_serial(rules: ChatdRules, targets, states, results, i: int) -> bool:
    """Rule 9: call ``i`` of a batch is serial and an earlier serial call has not been
    begun or has no result yet."""
    serial = rules.serial_tools
    if targets[i][0].tool not in serial:
        return False
    return any(targets[j][0].tool in serial and (states[j] is None or results[j] is None) for j in range(i))


def _begin_next_serial(rep, task, att, now_ms) -> tuple[Attempt, list]:
    """Rule 9: after a call of the batch got its result, begin the serial calls now due
    (a serial call that finishes at once lets the next one begin too)."""
    states, results, effects = list(att.states), list(att.results), []
    for i, (call, _) in enumerate(att.targets):
        if states[i] is not None or call.tool not in rep.rules.serial_tools:
            continue
        if _waits_for_serial(rep.rules, att.targets, states, results, i):
            break
        plan = att.plans[i] if att.plans else NO_PLAN
        ident = with_incarnation(_identity(task, att, call), plan)
        cs, eff = rep.rules.bookkeeping.begin(plan, call, ident, rep, f"{att.key}/c{i}", task.chat_id, now_ms)
        states[i], results[i] = cs, cs.result
        effects += eff
    return replace(att, states=tuple(states), results=tuple(results)), effects


def _call_progress(rep, db, runner, task, i, cs, eff, now_ms, db_now_ms) -> Out:
    att = task.attempt
    # A row the design writes from what the step learnt (designs.py; none in design B).
    db, booked = rep.rules.bookkeeping.after_step(rep, db, task, att, i, att.states[i], cs)
    effects = [*eff, *booked]
    states = att.states[:i] + (cs,) + att.states[i + 1 :]
    results = att.results[:i] + (cs.result,) + att.results[i + 1 :]
    att = replace(att, states=states, results=results)
    if cs.result is not None and att.action != "interrupt" and any(s is None for s in states):
        att, more = _begin_next_serial(rep, task, att, now_ms)
        effects += more
    task = replace(task, attempt=att)
    return _maybe_commit(rep, db, runner, task, effects, db_now_ms)


def _maybe_commit(rep, db, runner, task, effects, db_now_ms) -> Out:
    """Wait for ALL results of the batch, then one fenced commit (1.3 step 4-5)."""
    att = task.attempt
    if any(r is None for r in att.results):
        return _end_task(rep, db, runner, task, PENDING, effects)
    if att.action == "interrupt":
        db, outcome, eff = _interrupt_commit(rep, db, task, att, db_now_ms)
    else:
        db, outcome, eff = _execute_commit(rep, db, task, att, db_now_ms)
    return _end_task(rep, db, runner, task, outcome, effects + eff)


def _commit_assistant(rep, db, runner, task, db_now_ms) -> Out:
    """The model answered (timer ``<attempt>/gen``): commit the assistant message, fenced on
    history_version and generation_attempt."""
    att = task.attempt
    if att.step != "generate":
        return rep, db, [note("stale_timer", replica=rep.name, timer=f"{att.key}/gen")]
    chat, outcome, eff = _fenced(db, task, "commit_step", rep.rules, att.generation_attempt)
    if outcome is not None:
        task = replace(task, attempt=replace(att, step="calls"))
        return _end_task(rep, db, runner, task, outcome, eff)
    db, eff = tx_commit_assistant(db, chat, att.turn, db_now_ms)
    return _end_task(rep, db, runner, replace(task, attempt=replace(att, step="calls")), DONE, eff)
