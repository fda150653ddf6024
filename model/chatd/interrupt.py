"""The interrupt task (rule 6, docs/contract.md C3.2, design B2): select the cancels, dial
once, cancel every call in parallel, then commit a result for EVERY unresolved call.

Theory of operation
-------------------
``_interrupt_start`` loads the chat under the ``interrupting`` fence and asks the rules for
the cancels (``ChatdRules.cancels_for``; ``today`` sends none). With no cancel it commits
at once; otherwise it returns an ``Attempt`` in step ``dial`` whose targets are the
cancels, which batch.py then drives like a tool batch (each cancel bounded by chattool's
1-minute answer timeout). ``_interrupt_commit`` writes the cancels' results (cut to the
context budget, rule 8), the generic result for every other call the rules say to answer
(``ChatdRules.interrupt_answers``), and FinishInterruption, in one transaction.
"""

from __future__ import annotations

from .. import chattool
from ..chatd_db import tx_finish_interruption, unresolved_calls
from ..core import FMap, note, probe
from .state import DONE, PENDING, Attempt
from .tasks import _dial, _fenced, fit_to_context


def _interrupt_start(rep, db, task, key, number, now_ms, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "load_interrupt", rep.rules)
    if outcome is not None:
        return db, outcome, None, eff
    msg, calls = unresolved_calls(chat)
    targets = rep.rules.cancels_for(calls)
    picked = _selection_probes(rep.rules.interrupt_cancels, calls, targets)
    if not targets:
        # Nothing to cancel: no dial, commit right away (3.2 step 3).
        att = Attempt(key, number, "interrupt", "calls")
        db, outcome, eff = _interrupt_commit(rep, db, task, att, db_now_ms)
        return db, outcome, None, [*picked, probe("C3.2.no-dial"), *eff]
    age = chattool.ToolCallAge(db_now_ms - msg.created_at_ms, now_ms)
    n = len(targets)
    att = Attempt(key, number, "interrupt", "dial", 0, msg.id, targets, (None,) * n, (None,) * n, age)
    mark = note("cancels_selected", task=task.task_id, cancels=n, unresolved=len(calls))
    return db, PENDING, att, [*picked, probe("C3.2.dial"), mark, *_dial(rep, key)]


# Rule coverage (model/probes.py): the cancel each unresolved call gets (C3.2 step 2;
# ``chattool.interrupted_call``), and what the selection does with copies of a provider ID
# (C3.7).
_PLAN_PROBES = {
    (chattool.EXECUTE, False): probe("C3.2.cancel-foreground"),
    (chattool.EXECUTE, True): probe("C3.2.cancel-background"),
    (chattool.EDIT_FILES, False): probe("C3.2.cancel-file"),
    (chattool.WRITE_FILE, False): probe("C3.2.cancel-file"),
}
_NO_CANCEL = probe("C3.2.no-cancel")
_DUPLICATES_ONE_CANCEL = probe("C3.7.one-cancel")
_DUPLICATES_NO_CANCEL = probe("C3.7.no-cancel")


def _selection_probes(cancels: bool, calls: tuple, targets: tuple) -> list:
    """The probes of one selection: per call, the cancel its provider ID got (or none),
    per shared provider ID whether its copies got one cancel. ``cancels``: whether the
    build cancels at all (``today`` never does: no selection, C3.3)."""
    if not cancels:
        return []
    plans = {call.provider_id: plan for call, plan in targets}
    out = []
    copies: dict[str, int] = {}
    for call in calls:
        copies[call.provider_id] = copies.get(call.provider_id, 0) + 1
        plan = plans.get(call.provider_id)
        out.append(_NO_CANCEL if plan is None else _PLAN_PROBES[(plan.tool, plan.background)])
    for provider_id, n in copies.items():
        if n > 1:
            out.append(_DUPLICATES_ONE_CANCEL if provider_id in plans else _DUPLICATES_NO_CANCEL)
    return out


def _interrupt_commit(rep, db, task, att, db_now_ms):
    chat, outcome, eff = _fenced(db, task, "finish_interruption", rep.rules)
    if outcome is not None:
        return db, outcome, eff
    by_provider = FMap(
        (call.provider_id, fit_to_context(chat, res)) for (call, _), res in zip(att.targets, att.results)
    )
    db, eff = tx_finish_interruption(
        db, chat, by_provider, chattool.generic_result(), db_now_ms, rep.name, att.number,
        answered=lambda row: rep.rules.interrupt_answers(row, by_provider),
    )
    return db, DONE, eff
