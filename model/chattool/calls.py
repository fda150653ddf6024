"""A tool call's entry points: begin it, and route each answer and timer to its step.

Theory of operation
-------------------
The task layer (model/chatd/) calls ``begin_call`` once per call of an attempt, then
``on_answer`` and ``on_timer`` for everything addressed to it (Rule 2 of
model/chattool/__init__.py: anything but the pending request or an armed timer is stale).
A successful answer goes to the handler of the pending operation (``_ANSWER_HANDLERS``);
a failure is classified (model/chattool/classifier.py) and goes to the failure handler
of the same operation (``_FAILURE_HANDLERS``). The operations themselves are in execute.py,
files.py and cancel.py; this module only routes.
"""

from __future__ import annotations

from typing import Callable

from ..core import Response, TransportError, probe, replace
from ..timing import DEFAULT_TIMING, Timing
from .args import Identity, ToolCall
from .cancel import _cancel_failed, _on_cancel_answer
from .classifier import AgentError, Deadline, NoAnswer, _is_2xx, classified, classify, sdk_text_probe
from .constants import DESIGN_B, EXECUTE, FILE_TOOLS, ToolLayer
from .execute import (
    _begin_execute, _begin_snapshot, _on_output_answer, _on_snapshot_answer, _on_start_answer,
    _read_failed, _snapshot_failed, _start_failed,
)
from .files import _begin_file, _file_failed, _on_file_answer
from .lookup import lookup_failed, on_lookup_answer
from .results import Result
from .state import CallState, CallStep, Phase, _finish


# --- generation: begin ------------------------------------------------------


def begin_call(
    call: ToolCall,
    identity: Identity | None,
    src: str,
    req_prefix: str,
    chat_id: str,
    now_ms: int,
    send_identity: bool = True,
    *,
    timing: Timing = DEFAULT_TIMING,
    layer: ToolLayer = DESIGN_B,
) -> CallStep:
    """Run ``call`` in a generation attempt whose connection to the agent is live, with
    the durations of ``timing`` (the replica's) and the behaviours of ``layer``."""
    cs = new_call_state(call, identity, src, req_prefix, chat_id, now_ms, send_identity, timing=timing, layer=layer)
    if call.tool == EXECUTE:
        return _begin_execute(cs, now_ms)
    if call.tool in FILE_TOOLS:
        return _begin_file(cs, now_ms)
    # Tools without tool call headers still run at least once (section 8 item 10); the
    # model gives them no agent contact.
    return _finish(cs, Result("completed", False, "{}"))


def new_call_state(
    call: ToolCall,
    identity: Identity | None,
    src: str,
    req_prefix: str,
    chat_id: str,
    now_ms: int,
    send_identity: bool = True,
    *,
    timing: Timing = DEFAULT_TIMING,
    layer: ToolLayer = DESIGN_B,
) -> CallState:
    """The state of a call before its first step (``begin_call``, or a design variant's
    ``begin_attach`` / ``begin_lookup``)."""
    return CallState(call=call, src=src, req_prefix=req_prefix, chat_id=chat_id, identity=identity,
                     send_identity=send_identity, timing=timing, layer=layer, started_at_ms=now_ms)


# --- events ------------------------------------------------------------------


def on_answer(cs: CallState, answer: Response | TransportError, now_ms: int) -> CallStep:
    """An answer arrived for some request of this replica. Answers to anything but our
    one pending request are stale (Rule 2)."""
    if cs.result is not None or answer.req_id != cs.pending_req_id:
        return cs, ()
    op = cs.pending_op
    if isinstance(answer, TransportError) or not _is_2xx(answer.status):
        cs, effects = _on_failure(cs, op, classify(answer, cs.pending_method, cs.pending_url), now_ms)
        quoted = sdk_text_probe(answer)  # (rule coverage: C5.5)
        if quoted is not None:
            effects = (quoted, *effects)
    else:
        cs, effects = _ANSWER_HANDLERS[op](cs, answer, now_ms)
    # The answered request is pending no more. No step reads ``pending_req_id`` (the gate
    # above does), and a step that sends or finishes sets it anew (a new request's ID is
    # never the answered one: its number grows), so only a step that does neither keeps
    # the answered ID and is copied here: most answers are one copy of the state, not two.
    if cs.pending_req_id == answer.req_id:
        cs = replace(cs, pending_req_id=None)
    return cs, effects


def on_timer(cs: CallState, name: str, now_ms: int) -> CallStep:
    """One of our timers fired. A name that is not armed is a stale firing."""
    if cs.result is not None:
        return cs, ()
    op, method, url = cs.pending_op, cs.pending_method, cs.pending_url
    if name == cs.answer_timer:
        cs = replace(cs, answer_timer=None, pending_req_id=None)
        cs, effects = _on_failure(cs, op, classify(NoAnswer(method, url, cs.timing.agent_answer_timeout_ms)), now_ms)
        return cs, (_ANSWER_TIMEOUT_PROBES[op], *effects)
    if name == cs.deadline_timer:
        cs = replace(cs, deadline_timer=None, pending_req_id=None)
        if cs.phase is Phase.START:
            return _on_failure(cs, op, classify(Deadline(method, url)), now_ms)
        # The wait deadline: stop the blocking read and look once more.
        err = classify(Deadline(method, url))
        cs, effects = _begin_snapshot(cs, now_ms, timed_out=True, read_error=err.text)
        return cs, (_WAIT_DEADLINE_PROBE, *effects)
    if name == cs.snapshot_timer:
        cs = replace(cs, snapshot_timer=None, pending_req_id=None)
        return _on_failure(cs, op, classify(Deadline(method, url)), now_ms)
    return cs, ()


def _on_failure(cs: CallState, op: str, err: AgentError, now_ms: int) -> CallStep:
    handler = _FAILURE_HANDLERS.get(op)
    if handler is None:
        raise ValueError(f"unknown pending op {op!r}")
    return classified(handler(cs, err, now_ms), err)


# Rule coverage (model/probes.py): the request the agent answer timer ended (C4.5; only
# starts, edits, writes and cancels arm it), and the end of a foreground wait (C4.3).
_ANSWER_TIMEOUT_PROBES = {
    "start": probe("C4.5.start"),
    "edit": probe("C4.5.file"),
    "write": probe("C4.5.file"),
    "cancel": probe("C4.5.cancel"),
}
_WAIT_DEADLINE_PROBE = probe("C4.3.deadline-fired")


# The step of each pending operation: for its 2xx answer, and for its classified failure.
_ANSWER_HANDLERS: dict[str, Callable[[CallState, Response, int], CallStep]] = {
    "start": _on_start_answer,
    "wait": _on_output_answer,
    "snapshot": _on_snapshot_answer,
    "edit": _on_file_answer,
    "write": _on_file_answer,
    "cancel": _on_cancel_answer,
    "lookup": on_lookup_answer,  # design variants only (lookup.py)
}
_FAILURE_HANDLERS: dict[str, Callable[[CallState, AgentError, int], CallStep]] = {
    "start": lambda cs, err, now_ms: _start_failed(cs, err),
    "wait": _read_failed,
    "snapshot": _snapshot_failed,
    "edit": lambda cs, err, now_ms: _file_failed(cs, err),
    "write": lambda cs, err, now_ms: _file_failed(cs, err),
    "cancel": lambda cs, err, now_ms: _cancel_failed(cs, err),
    "lookup": lookup_failed,
}
