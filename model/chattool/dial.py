"""Results for a call whose dial failed: no request was ever sent.

Theory of operation
-------------------
docs/contract.md C4.2 step 1, 5.3, 5.4: when the task cannot reach the agent at all, the
result depends on what the failure proves. No workspace or no agent cannot leave a
process running, and only no workspace or a deleted one loses a file change; every other
dial failure leaves the outcome of an earlier attempt (or of the interrupted call)
unknown, and the text says how to check it. ``unreachable_result`` is the interrupt's,
``dial_failed_result`` a generation attempt's.
"""

from __future__ import annotations

from .args import Identity, ToolCall
from .classifier import (
    _FILE_TEXTS, _file_words, _interrupt_words, check_file_text, check_process_text,
    unknown_outcome,
)
from .constants import (
    EXECUTE, FILE_TOOLS, _FILE_CHANGE_LOST_DIAL_ERRORS, _NO_AGENT_DIAL_ERRORS, dial_error_text,
)
from .interrupt import InterruptPlan
from .results import Result, _text_error, execute_result_json, generic_result


def unreachable_result(call: ToolCall, plan: InterruptPlan, identity: Identity, dial_error_kind: str) -> Result:
    """``InterruptedCall.Unreachable``: the interrupt's dial failed (5.3, 5.4)."""
    err_text = dial_error_text(dial_error_kind)
    reason_text = f"the workspace agent could not be reached ({err_text})"
    if plan.tool == EXECUTE:
        if dial_error_kind in _NO_AGENT_DIAL_ERRORS:
            return generic_result()
        words = _interrupt_words(identity.uuid, plan.background)
        text = unknown_outcome(reason_text, words.effect, words.check)
        return Result("unknown", False, execute_result_json(error=text), process_id=identity.uuid,
                      reason="unreachable")
    if dial_error_kind in _FILE_CHANGE_LOST_DIAL_ERRORS:
        return generic_result()
    words = _file_words(plan.tool, identity.uuid)
    return _text_error("unknown", unknown_outcome(reason_text, words.effect, words.check), reason="unreachable")


def dial_failed_result(call: ToolCall, identity: Identity | None, dial_error_kind: str) -> Result:
    """A generation attempt's dial failed (4.2 step 1; 5.4 "dial error"): an earlier
    attempt may have acted, unless no agent (execute) or no disk (file tools) exists."""
    err_text = dial_error_text(dial_error_kind)
    reason_text = f"the workspace agent could not be reached ({err_text})"
    if identity is not None and call.tool == EXECUTE and dial_error_kind not in _NO_AGENT_DIAL_ERRORS:
        text = unknown_outcome(reason_text, "an earlier attempt may have started the command",
                               check_process_text(identity.uuid))
        return _text_error("unknown", text, reason="unreachable", process_id=identity.uuid)
    if identity is not None and call.tool in FILE_TOOLS and dial_error_kind not in _FILE_CHANGE_LOST_DIAL_ERRORS:
        change = _FILE_TEXTS[call.tool][2]
        text = unknown_outcome(reason_text, f"an earlier attempt may have applied the {change}",
                               check_file_text(identity.uuid))
        return _text_error("unknown", text, reason="unreachable")
    return _text_error("failed", err_text)
