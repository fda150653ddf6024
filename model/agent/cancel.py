"""The cancel handler: ``POST /api/v0/tool-calls/{id}/cancel`` (docs/contract.md
A3, cancel.go; rule 5 of the package docstring).

Theory of operation
-------------------
A cancel is validated (tool call headers, the path ID equal to the UUID of the request's
own chat and headers, a JSON body) before the store is touched, then shares the store's
lookup with the middleware. A call never received and provably never to run gets a
canceled marker (``AgentRules.mark_canceled``) and ``started=false``; a pending run is
waited for, then stopped; a run that published is stopped now, on every repeated cancel
too. The answer carries the recorded response and the process state after the stop rule,
which the stopper (processes.py ``stop_tool_call_process``) applies. The stopper is
called through its module (``processes.stop_tool_call_process``), where the Go-shaped
tests install their fake stopper; not through the package, which would make the package
and this module import each other (issue 33).
"""

from __future__ import annotations

import base64
from typing import Any

from ..core import Request, note, probe, replace
from ..gocompat.decode import GoJSONError
from ..identity import HeaderError, Key, clamp_ms, parse_tool_call_headers
from . import processes  # the seam: tests replace processes.stop_tool_call_process
from .state import AgentState, Effects, Record, Waiter
from .store import REFUSAL_FOR_VERDICT, dropped_pending, lookup
from .wire import (
    MSG_BAD_JSON,
    MSG_CANCEL_NEEDS_HEADERS,
    MSG_CANCEL_WRONG_ID,
    MSG_INVALID_HEADERS,
    MSG_NO_CHAT,
    MSG_STOP_FAILED,
    _json_response,
    _message,
    _refused,
    _run_age_header,
    chat_of,
    decode_cancel,
)


def _cancel(state: AgentState, req: Request, path_id: str, now_ms: int) -> tuple[AgentState, Effects]:
    try:
        headers = parse_tool_call_headers(req.headers)
    except HeaderError as err:
        return state, [probe("A3.bad-headers"), _message(req, 400, MSG_INVALID_HEADERS, str(err))]
    if headers is None:
        return state, [probe("A3.no-headers"), _message(req, 400, MSG_CANCEL_NEEDS_HEADERS)]
    chat_id = chat_of(req)
    if chat_id is None:
        return state, [probe("A3.no-chat"), _message(req, 400, MSG_NO_CHAT)]
    key = Key(chat_id, headers.message_id, headers.tool_call_id)
    if key.uuid != path_id:
        return state, [probe("A3.wrong-id"), _message(req, 400, MSG_CANCEL_WRONG_ID)]
    try:
        # httpapi.Read: one json.Decoder.Decode into CancelToolCallRequest (model/gocompat/decode.py), so
        # `null` is threshold 0, keys match case-insensitively, trailing bytes are ignored
        # and a value past int64 is a 400.
        raw = decode_cancel(req.body)["stop_if_run_age_below_ms"]
    except GoJSONError as err:
        return state, [probe("A3.bad-json"), _message(req, 400, MSG_BAD_JSON, str(err))]
    threshold_ms = clamp_ms(raw)
    # A4.3: a threshold below 0 counts as 0 (never stops), one past the maximum as it.
    clamped = [probe("A4.3.threshold-clamped")] if threshold_ms != raw else []
    verdict, record = lookup(state, key, headers.age_ms, now_ms, req)
    if verdict in REFUSAL_FOR_VERDICT:
        return state, [*clamped, probe("A3.refused"), *_refused(req, REFUSAL_FOR_VERDICT[verdict], key)]
    if verdict == "new":
        before = state
        state, marked = state.config.rules.mark_canceled(state, key, now_ms)
        dropped = [probe("A2.7.drop-pending")] if dropped_pending(before, state, key.chat_id) else []
        effects: Effects = [*clamped, *dropped, probe("A3.never-received"), note("cancel_never_received", uuid=key.uuid),
                            *marked]
        return state, effects + [_json_response(req, 200, {"started": False})]
    assert record is not None
    if record.canceled:
        return state, [*clamped, probe("A3.already-canceled"), _json_response(req, 200, {"started": False})]
    if record.recorded is None:
        waiter = Waiter(req, "cancel", record.run_id, key, threshold_ms)
        return replace(state, waiters=state.waiters.set(req.req_id, waiter)), [
            *clamped, probe("A3.waits-pending"), note("cancel_waiting", uuid=key.uuid)]
    state, effects = _answer_cancel(state, req, key, record, threshold_ms, now_ms)
    return state, [*clamped, *effects]


def _answer_cancel(
    state: AgentState, req: Request, key: Key, record: Record, threshold_ms: int, now_ms: int
) -> tuple[AgentState, Effects]:
    """Steps 7-9: the recorded response plus the process state after the stop rule.

    The answer is ``CancelToolCallResponse`` with the design's omitempty tags
    (docs/contract.md D9, PR 1): ``started`` always, ``status_code``,
    ``content_type``, ``body`` (base64) and ``process`` only when non-zero. A stopper
    error is the 500 of cancel.go (test StopperError), without the run-age header, which
    Go sets only after the stopper succeeded."""
    assert record.recorded is not None
    out: dict[str, Any] = {"started": True}
    if record.recorded.status:
        out["status_code"] = record.recorded.status
    if record.recorded.content_type:
        out["content_type"] = record.recorded.content_type
    if record.recorded.body:
        out["body"] = base64.b64encode(record.recorded.body).decode("ascii")
    pid = state.config.rules.pid_to_stop(key, record.recorded)
    state, process, effects, error = processes.stop_tool_call_process(state, pid, threshold_ms, now_ms)
    if error:
        return state, effects + [probe("A3.stop-failed"), _message(req, 500, MSG_STOP_FAILED, error)]
    if process is not None:
        out["process"] = process
    reply = _json_response(req, 200, out, _run_age_header(now_ms, record.created_at_ms))
    return state, effects + [probe("A3.answered-recorded"), reply]
