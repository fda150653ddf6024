"""The per-call state: ``CallState`` and the helpers every step of a call uses.

Theory of operation
-------------------
One ``CallState`` is one tool call within one attempt or one interrupt (Rules 2 and 6 of
model/chattool/__init__.py). Every step is a pure function ``(CallState, event) ->
CallStep``, the new state and the effects to perform: ``_send`` issues the one request in
flight, ``_arm`` / ``_disarm`` manage the three timers (answer, deadline, snapshot) under
names that carry the call's prefix and a sequence number, ``_finish`` records the result
and cancels every armed timer, and ``abort`` stops a call whose attempt ended. The steps
themselves live beside it: model/chattool/calls.py (begin and dispatch),
execute.py, files.py and cancel.py.

A step that edits the state several times (a call's first step sets its command, sends,
arms two timers and moves to its phase) collects the edits in a dict and copies the
state once at its end (``replace(cs, **changes)``): ``_send_into``, ``_arm_into`` and
``_disarm_into`` are ``_send``, ``_arm`` and ``_disarm`` for such a step, and read the
fields it changed already from the dict. Copying a 30-field state is most of what a
call's step costs, and the state each step returns is the same object for object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

from .. import identity as ident
from ..core import CachedRepr, CancelTimer, Effect, Headers, Request, Response, Send, SetTimer, note, replace
from ..gocompat.encoding import json_type_name, loads_go
from ..timing import DEFAULT_TIMING, Timing
from .args import Identity, ToolCall
from .constants import AGENT_NODE, AGENT_URL, DESIGN_B, ToolLayer
from .interrupt import InterruptPlan
from .results import Result, result_row_probe


class Phase(str, Enum):
    START = "start"  # start / edit / write request in flight
    WAIT = "wait"  # blocking output reads until the wait deadline
    SNAPSHOT = "snapshot"  # one non-blocking read after the deadline or a failed read
    CANCEL = "cancel"  # the interrupt's cancel request in flight
    DONE = "done"


@dataclass(frozen=True, repr=False)
class CallState(CachedRepr):
    """One tool call within one attempt (generation) or one interrupt.

    The task layer reads ``result`` (None until done), ``pending_req_id`` and the armed
    timer names; it routes an answer here when its ``req_id`` starts with ``req_prefix``.
    ``timing`` is the task's, kept so that every later step arms the same durations.
    """

    call: ToolCall
    src: str
    req_prefix: str
    chat_id: str
    identity: Identity | None
    send_identity: bool = True
    timing: Timing = DEFAULT_TIMING
    layer: ToolLayer = DESIGN_B
    phase: Phase = Phase.START
    background: bool = False
    command: str = ""
    timeout_ms: int = 0
    plan: InterruptPlan | None = None
    seq: int = 0
    pending_req_id: str | None = None
    pending_op: str = ""
    pending_method: str = ""  # Go's url.Error Op ("Post", "Get"), for error texts
    pending_url: str = ""
    answer_timer: str | None = None
    deadline_timer: str | None = None
    snapshot_timer: str | None = None
    started_at_ms: int = 0
    deadline_at_ms: int | None = None
    process_id: str = ""
    run_age_ms: int = 0
    wait_started_at_ms: int = 0
    legacy: bool = False
    timed_out: bool = False
    read_error: str = ""
    result: Result | None = None

    def armed_timers(self) -> tuple[str, ...]:
        return tuple(t for t in (self.answer_timer, self.deadline_timer, self.snapshot_timer) if t is not None)


# What every step of a call returns: its new state and the effects to perform. Named
# CallStep, not Step: model/system.py's Step is one step of the whole world.
CallStep = tuple[CallState, tuple[Effect, ...]]


def _headers(cs: CallState, now_ms: int, tool_call: bool) -> Headers:
    headers: Headers = ((ident.CHAT_ID_HEADER, cs.chat_id),)
    if tool_call and cs.identity is not None and cs.send_identity:
        id_ = cs.identity
        headers = ident.set_tool_call_headers(headers, id_.message_id, id_.tool_call_id, id_.age.now(now_ms))
        if id_.incarnation is not None:
            headers = headers + ((ident.AGENT_INCARNATION_HEADER, str(id_.incarnation)),)
    return headers


def _send(cs: CallState, op: str, method: str, path: str, query: str, headers: Headers,
          body: bytes) -> tuple[CallState, Effect]:
    changes: dict = {}
    send = _send_into(changes, cs, op, method, path, query, headers, body)
    # One copy of the state for the name's sequence number and the pending request.
    return replace(cs, **changes), send


def _send_into(changes: dict, cs: CallState, op: str, method: str, path: str, query: str, headers: Headers,
               body: bytes) -> Effect:
    """``_send`` into a step's collected edits ``changes`` of ``cs`` (the module's
    docstring): the request's number follows the sequence number as edited so far."""
    seq = changes.get("seq", cs.seq) + 1
    req_id = f"{cs.req_prefix}:r{seq}"  # one sequence for requests and timers: no name repeats
    url = AGENT_URL + path + (f"?{query}" if query else "")
    changes["seq"] = seq
    changes["pending_req_id"] = req_id
    changes["pending_op"] = op
    changes["pending_method"] = method.title()
    changes["pending_url"] = url
    return Send(AGENT_NODE, Request(req_id, cs.src, method, path, query, headers, body))


def _arm(cs: CallState, slot: str, after_ms: int) -> tuple[CallState, list[Effect]]:
    """Arm the timer ``slot`` (answer/deadline/snapshot) under a fresh name, cancelling
    the one it replaces."""
    changes: dict = {}
    effects: list[Effect] = []
    _arm_into(changes, cs, slot, after_ms, effects)
    return replace(cs, **changes), effects  # one copy: the number and the slot


def _arm_into(changes: dict, cs: CallState, slot: str, after_ms: int, effects: list) -> None:
    """``_arm`` into a step's collected edits ``changes`` of ``cs``, its effects appended
    to ``effects``."""
    old = changes[slot] if slot in changes else getattr(cs, slot)
    if old is not None:
        effects.append(CancelTimer(old))
    seq = changes.get("seq", cs.seq) + 1
    name = f"{cs.req_prefix}:{slot.replace('_timer', '')}{seq}"  # the sequence ``_send_into`` numbers from
    effects.append(SetTimer(name, after_ms))
    changes["seq"] = seq
    changes[slot] = name


def _disarm(cs: CallState, slot: str) -> tuple[CallState, list[Effect]]:
    old = getattr(cs, slot)
    if old is None:
        return cs, []
    return replace(cs, **{slot: None}), [CancelTimer(old)]


def _disarm_into(changes: dict, cs: CallState, slot: str, effects: list) -> None:
    """``_disarm`` into a step's collected edits ``changes`` of ``cs``, its effect appended
    to ``effects``."""
    old = changes[slot] if slot in changes else getattr(cs, slot)
    if old is not None:
        changes[slot] = None
        effects.append(CancelTimer(old))


def _finish(cs: CallState, result: Result, effects: Sequence[Effect] = (), changes: dict | None = None) -> CallStep:
    """``changes``: the step's collected edits of ``cs`` (the module's docstring), copied
    in with the finish's own; the timers still armed are read through them."""
    if changes:
        armed = [t for t in (changes.get(slot, getattr(cs, slot)) for slot in _TIMER_SLOTS) if t is not None]
    else:
        armed = cs.armed_timers()
    out = list(effects) + [CancelTimer(t) for t in armed]
    out.append(note("chattool_result", provider_id=cs.call.provider_id, tool=cs.call.tool,
                    kind=result.kind, reason=result.reason or ""))
    row = result_row_probe(cs.call.tool, cs.plan is not None, result.kind)  # (rule coverage)
    if row is not None:
        out.append(row)
    edits = dict(changes) if changes else {}
    edits.update(phase=Phase.DONE, result=result, pending_req_id=None, pending_op="",
                 answer_timer=None, deadline_timer=None, snapshot_timer=None)
    return replace(cs, **edits), tuple(out)


_TIMER_SLOTS = ("answer_timer", "deadline_timer", "snapshot_timer")  # ``CallState.armed_timers``' order


def abort(cs: CallState) -> tuple[Effect, ...]:
    """C4: the attempt's context ended. Stop waiting, send nothing: cancel our timers.
    The task drops the state and commits nothing for this call."""
    return tuple(CancelTimer(t) for t in cs.armed_timers())


def owns(cs: CallState, name_or_req_id: str) -> bool:
    """Whether a timer name or request ID belongs to this call (Rule 2)."""
    return name_or_req_id.startswith(cs.req_prefix + ":")


# Go's decoder reads a lone surrogate escape (``"\\udc80"``) as U+FFFD; Python's json keeps
# it (a pair is joined into one code point either way), so without this an answer's string
# would reach a result as a code point Go never decodes (gocompat/decode.py rule 5 on the
# agent's side).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _go_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_go_strings(k): _go_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_strings(v) for v in value]
    return value


def _decode(answer: Response, required: tuple[tuple[str, type], ...]) -> dict[str, Any]:
    """The JSON object of a 2xx answer with the fields we need, else ``Undecodable``."""
    try:
        value = _go_strings(loads_go(answer.body.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as err:
        detail = "unexpected EOF" if not answer.body else str(err)
        raise _UndecodableError(f"decode response: {detail}") from None
    if not isinstance(value, dict):
        raise _UndecodableError(f"decode response: json: cannot unmarshal {json_type_name(value)} into an object")
    for name, py_type in required:
        if not isinstance(value.get(name), py_type):
            raise _UndecodableError(f'decode response: missing or invalid field "{name}"')
    return value


class _UndecodableError(Exception):
    pass
