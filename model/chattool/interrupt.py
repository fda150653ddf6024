"""Which calls of an interrupted message get a cancel, and with what stop rule.

Theory of operation
-------------------
Rule 7 of model/chattool/__init__.py (docs/contract.md C3.2 step 3, 5.3):
``interrupted_call`` is Go's ``NewInterruptedCall``: a file tool always gets a cancel
that never stops anything, a foreground execute one that stops a process younger than
its effective timeout, a background execute one that never stops it; anything else (or
arguments that do not parse) keeps the generic result. Calls that share a provider ID
share a UUID, so ``select_cancels`` gives them one cancel only when every copy maps to
the ``same_cancel``. Sending the cancel and reading its answer is model/chattool/cancel.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..timing import DEFAULT_TIMING, Timing
from .args import (
    ArgsError, InvalidTimeout, ToolCall, effective_timeout_ms, parse_execute_args,
    runs_in_background,
)
from .constants import EXECUTE, FILE_TOOLS


@dataclass(frozen=True)
class InterruptPlan:
    """``InterruptedCall``: the cancel one call gets. ``stop_run_age_ms`` is the
    effective timeout of a foreground execute and 0 (never stop) otherwise."""

    tool: str
    stop_run_age_ms: int
    background: bool


def interrupted_call(call: ToolCall, timing: Timing = DEFAULT_TIMING) -> InterruptPlan | None:
    """``NewInterruptedCall``: None keeps the generic result without a cancel (another
    tool, unparsable execute arguments, an invalid timeout). A foreground execute without
    a timeout argument stops below the timing's execute default."""
    if call.tool in FILE_TOOLS:
        return InterruptPlan(call.tool, 0, False)
    if call.tool != EXECUTE:
        return None
    try:
        args = parse_execute_args(call.args_json)
    except ArgsError:
        return None
    if runs_in_background(args):
        return InterruptPlan(EXECUTE, 0, True)
    try:
        return InterruptPlan(EXECUTE, effective_timeout_ms(args, timing), False)
    except InvalidTimeout:
        return None


def same_cancel(a: InterruptPlan, b: InterruptPlan) -> bool:
    """Calls sharing a provider ID share one UUID, so they may share one cancel only
    when it is the same request mapped the same way."""
    return a.tool == b.tool and a.stop_run_age_ms == b.stop_run_age_ms and a.background == b.background


@dataclass(frozen=True)
class CancelPick:
    """One cancel to send: for ``provider_id``, built from its first ``call``."""

    provider_id: str
    call: ToolCall
    plan: InterruptPlan


def select_cancels(calls: Sequence[ToolCall], timing: Timing = DEFAULT_TIMING) -> tuple[CancelPick, ...]:
    """The cancels of one interrupt, in order of first appearance (Go's
    ``interruptedToolCalls``, docs/contract.md C3.7). A provider ID gets one
    cancel only when every call with that ID has a plan and all plans ``same_cancel``;
    every call whose ID is not picked keeps the generic result. An empty answer means
    nothing to cancel: the task skips the dial too."""
    order: list[str] = []
    groups: dict[str, list[tuple[ToolCall, InterruptPlan | None]]] = {}
    for call in calls:
        if call.provider_id not in groups:
            order.append(call.provider_id)
            groups[call.provider_id] = []
        groups[call.provider_id].append((call, interrupted_call(call, timing)))
    picks = []
    for provider_id in order:
        entries = groups[provider_id]
        first_call, first_plan = entries[0]
        if first_plan is None:
            continue
        if all(plan is not None and same_cancel(first_plan, plan) for _, plan in entries[1:]):
            picks.append(CancelPick(provider_id, first_call, first_plan))
    return tuple(picks)
