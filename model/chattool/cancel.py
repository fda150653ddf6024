"""The interrupt's cancel: one request per picked call, and the tables that read its answer.

Theory of operation
-------------------
Rule 7 of model/chattool/__init__.py (docs/contract.md C5.3, C5.4; C5): ``begin_cancel``
sends the one cancel of a call picked by ``select_cancels`` (model/chattool/interrupt.py)
with the stop run age, bounded by the agent answer timeout and never resent. The answer
(``CancelToolCallResponse``) is decoded into ``CancelAnswer`` and mapped to a result by
the first matching row of ``_EXECUTE_CANCEL_RULES`` or ``_FILE_CANCEL_RULES``: not
received (not run), a recorded start error, canceled, left running, exited, no process;
for the file tools, the recorded answer of the edit or write. A failed cancel is
classified and worded like any other request.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Callable

from ..core import Response, json_body, note, probe, replace
from ..gocompat.duration import format_duration_ms
from ..gocompat.encoding import json_type_name, loads_go
from ..timing import DEFAULT_TIMING, Timing
from .args import Identity, ToolCall
from .classifier import (
    AgentError, ErrorClass, NO_PROCESS_REASON, Undecodable, _FILE_TEXTS, _enrich_start_error, _file_words,
    _interrupt_words, _is_2xx, agent_error_text, classified, classify, sdk_error_text, unknown_outcome,
)
from .constants import EXECUTE, WRITE_FILE
from .files import _edit_success, _write_success
from .interrupt import InterruptPlan
from .results import Result, _background_started, _text_error, execute_result_json, generic_result
from .state import (
    CallState, CallStep, Phase, _UndecodableError, _arm_into, _decode, _disarm_into, _finish, _headers,
    _send_into,
)


# --- interrupt: cancel ---------------------------------------------------------


def begin_cancel(
    call: ToolCall,
    plan: InterruptPlan,
    identity: Identity,
    src: str,
    req_prefix: str,
    chat_id: str,
    now_ms: int,
    *,
    timing: Timing = DEFAULT_TIMING,
) -> CallStep:
    """Send the one cancel of ``call`` (C5): tool call headers, the stop run age, at most
    the timing's answer timeout (1 min) for the answer, never resent. ``plan`` comes from
    ``select_cancels`` with the same timing."""
    timeout_ms = plan.stop_run_age_ms if plan.tool == EXECUTE and not plan.background else 0
    cs = CallState(call=call, src=src, req_prefix=req_prefix, chat_id=chat_id, identity=identity,
                   timing=timing, plan=plan, background=plan.background, timeout_ms=timeout_ms,
                   started_at_ms=now_ms, process_id=identity.uuid)
    path = f"/api/v0/tool-calls/{identity.uuid}/cancel"
    body = json_body({"stop_if_run_age_below_ms": plan.stop_run_age_ms})
    changes: dict = {}  # the step's edits of the state, copied into it once (state.py's docstring)
    send = _send_into(changes, cs, "cancel", "POST", path, "", _headers(cs, now_ms, True), body)
    armed: list = []
    _arm_into(changes, cs, "answer_timer", timing.agent_answer_timeout_ms, armed)
    mark = note("chattool_cancel_sent", provider_id=call.provider_id, stop_if_run_age_below_ms=plan.stop_run_age_ms)
    changes["phase"] = Phase.CANCEL
    return replace(cs, **changes), (mark, send, *armed)


@dataclass(frozen=True)
class ToolCallProcess:
    """The cancel answer's ``process``: state after the stop attempt."""

    running: bool = False
    canceled: bool = False
    output: str = ""
    exit_code: int | None = None
    run_age_ms: int = 0


@dataclass(frozen=True)
class CancelAnswer:
    """``CancelToolCallResponse`` as decoded; ``process`` None when absent."""

    started: bool
    status_code: int = 0
    content_type: str = ""
    body: bytes = b""
    process: ToolCallProcess | None = None


# Go's types of the answer's fields (``CancelToolCallResponse`` and its ``process``): a
# JSON value of another type (``"running": 1``, ``"exit_code": "0"``) is an
# ``UnmarshalTypeError``, so the SDK's decode fails and the whole answer is unreadable (C5.1,
# "anything else"); absent or ``null`` keeps the Go zero value. ``type(v) is`` because a
# JSON true is no int for Go (Python's bool is one).
_ANSWER_FIELDS = {"status_code": (int, "int"), "content_type": (str, "string"), "body": (str, "[]uint8")}
_PROCESS_FIELDS = {"running": (bool, "bool"), "canceled": (bool, "bool"), "output": (str, "string"),
                   "exit_code": (int, "int"), "run_age_ms": (int, "int64")}


def _typed(obj: dict, name: str, fields: dict, struct: str, path: str) -> Any:
    """``obj[name]`` if it is of the field's Go type, None when absent or null, else Go's
    ``UnmarshalTypeError`` as the decode error."""
    value = obj.get(name)
    py_type, go_type = fields[name]
    if value is None or type(value) is py_type:
        return value
    raise _UndecodableError(f"decode response: json: cannot unmarshal {json_type_name(value)} "
                            f"into Go struct field {struct}.{path}{name} of type {go_type}")


def _read_cancel_answer(answer: Response) -> CancelAnswer:
    value = _decode(answer, (("started", bool),))
    field = {name: _typed(value, name, _ANSWER_FIELDS, "CancelToolCallResponse", "") for name in _ANSWER_FIELDS}
    try:
        recorded = base64.b64decode(field["body"] or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise _UndecodableError("decode response: illegal base64 data in \"body\"") from None
    proc = value.get("process")
    process = None
    if proc is not None and not isinstance(proc, dict):
        raise _UndecodableError(f"decode response: json: cannot unmarshal {json_type_name(proc)} "
                                "into Go struct field CancelToolCallResponse.process of type *workspacesdk.ToolCallProcess")
    if proc is not None:
        got = {name: _typed(proc, name, _PROCESS_FIELDS, "ToolCallProcess", "process.") for name in _PROCESS_FIELDS}
        process = ToolCallProcess(
            running=bool(got["running"]),
            canceled=bool(got["canceled"]),
            output=got["output"] or "",
            exit_code=got["exit_code"],
            run_age_ms=got["run_age_ms"] or 0,
        )
    return CancelAnswer(
        started=value["started"],
        status_code=field["status_code"] or 0,
        content_type=field["content_type"] or "",
        body=recorded,
        process=process,
    )


# Go's ``http.StatusText`` for the statuses an agent answers with ("" for any other).
HTTP_STATUS_TEXT = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
    413: "Request Entity Too Large", 422: "Unprocessable Entity", 424: "Failed Dependency",
    429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}


def recorded_error_text(status: int, content_type: str, body: bytes) -> str:
    """The error a cancel answer's recorded start failure stands for (docs/contract.md
    C5.3, "Started, Process nil, recorded StatusCode >= 400"): a JSON body gives
    ``<message>: <detail>`` (``<message>`` alone without a detail); a body that is not a
    JSON object gives the status text, e.g. ``Internal Server Error``. Unlike
    ``sdk_error_text`` there is no "unexpected status code" prefix."""
    decoded: Any = None
    if content_type.split(";")[0].strip().lower() == "application/json":
        try:
            decoded = loads_go(body.decode("utf-8", errors="replace"))
        except ValueError:
            decoded = None
    if not isinstance(decoded, dict):
        return HTTP_STATUS_TEXT.get(status, "")
    message = str(decoded.get("message") or "")
    detail = str(decoded.get("detail") or "")
    return f"{message}: {detail}" if detail else message


def _recorded_start_error(cs: CallState, ans: CancelAnswer) -> Result:
    action = "start background process" if cs.background else "start process"
    text = _enrich_start_error(f"{action}: {recorded_error_text(ans.status_code, ans.content_type, ans.body)}")
    return Result("failed", False, execute_result_json(error=text))


def _interrupt_canceled(cs: CallState, ans: CancelAnswer) -> Result:
    proc = ans.process
    assert proc is not None
    exit_code = -1 if proc.exit_code is None else proc.exit_code
    content = execute_result_json(
        output=proc.output, exit_code=exit_code, wall_duration_ms=proc.run_age_ms,
        error=f"canceled by the user after {format_duration_ms(proc.run_age_ms)}.",
    )
    return Result("canceled", False, content, exit_code=exit_code, process_id=cs.process_id,
                  wall_duration_ms=proc.run_age_ms)


def _interrupt_left_running(cs: CallState, ans: CancelAnswer) -> Result:
    proc = ans.process
    assert proc is not None
    content = execute_result_json(
        output=proc.output, exit_code=-1, wall_duration_ms=proc.run_age_ms,
        error=f"command timed out after {format_duration_ms(cs.timeout_ms)}", background_process_id=cs.process_id,
    )
    return Result("timed_out", False, content, exit_code=-1, process_id=cs.process_id,
                  wall_duration_ms=proc.run_age_ms)


def _interrupt_exited(cs: CallState, ans: CancelAnswer) -> Result:
    proc = ans.process
    assert proc is not None
    code = 0 if proc.exit_code is None else proc.exit_code
    content = execute_result_json(success=code == 0, output=proc.output, exit_code=code,
                                  wall_duration_ms=proc.run_age_ms)
    return Result("completed", False, content, exit_code=code, process_id=cs.process_id,
                  wall_duration_ms=proc.run_age_ms)


def _interrupt_no_process(cs: CallState, ans: CancelAnswer) -> Result:
    words = _interrupt_words(cs.process_id, cs.background)
    text = unknown_outcome(NO_PROCESS_REASON, words.effect, words.check)
    return Result("unknown", False, execute_result_json(error=text), process_id=cs.process_id, reason="no_process")


_NOT_RUN_TEXT = "not run: the command was canceled before the workspace agent received it."

# Section 5.3, execute cancel answers, checked top to bottom (InterruptExecute's order).
_EXECUTE_CANCEL_RULES: tuple[tuple[str, Callable[[CallState, CancelAnswer], bool],
                                   Callable[[CallState, CancelAnswer], Result]], ...] = (
    ("not started: the cancel is recorded, the call never runs",
     lambda cs, a: not a.started,
     lambda cs, a: Result("not_run", False, execute_result_json(error=_NOT_RUN_TEXT), exit_code=0)),
    ("no process, recorded start failed",
     lambda cs, a: a.process is None and a.status_code >= 400, _recorded_start_error),
    ("no process, background: its ID is the UUID",
     lambda cs, a: a.process is None and cs.background, lambda cs, a: _background_started(cs.process_id)),
    ("no process, foreground 2xx", lambda cs, a: a.process is None, _interrupt_no_process),
    ("canceled by this or an earlier cancel",
     lambda cs, a: a.process is not None and a.process.canceled, _interrupt_canceled),
    ("background, never stopped", lambda cs, a: cs.background, lambda cs, a: _background_started(cs.process_id)),
    ("foreground left running: past its execute deadline",
     lambda cs, a: a.process is not None and a.process.running, _interrupt_left_running),
    ("foreground exited before the cancel", lambda cs, a: True, _interrupt_exited),
)


def _file_recorded(cs: CallState, ans: CancelAnswer) -> Result:
    if not _is_2xx(ans.status_code):
        return _text_error("failed", sdk_error_text(ans.status_code, ans.content_type, ans.body))
    if cs.call.tool == WRITE_FILE:
        return _write_success()
    return _edit_success(ans.body, ans.status_code, ans.content_type)


# Section 5.4, file tool cancel answers (the agent waits for an edit in progress).
_FILE_CANCEL_RULES: tuple[tuple[str, Callable[[CallState, CancelAnswer], bool],
                                Callable[[CallState, CancelAnswer], Result]], ...] = (
    ("not started: the cancel is recorded, the change never happens",
     lambda cs, a: not a.started,
     lambda cs, a: _text_error(
         "not_applied",
         f"not applied: the {_FILE_TEXTS[cs.call.tool][2]} was canceled before the workspace agent received it.")),
    ("started: the tool's result for the recorded answer", lambda cs, a: True, _file_recorded),
)


def _on_cancel_answer(cs: CallState, answer: Response, now_ms: int) -> CallStep:
    try:
        ans = _read_cancel_answer(answer)
    except _UndecodableError as err:
        failure = classify(Undecodable(str(err)))
        return classified(_cancel_failed(cs, failure), failure)
    rules = _EXECUTE_CANCEL_RULES if cs.call.tool == EXECUTE else _FILE_CANCEL_RULES
    name, build = next((name, build) for name, match, build in rules if match(cs, ans))
    # (``_disarm`` of the answer timer, copied into the state with the finish's edits; the
    # rules and builders read neither the timers nor the pending request)
    changes: dict = {}
    effects: list = []
    _disarm_into(changes, cs, "answer_timer", effects)
    effects.append(note("chattool_cancel_answer", provider_id=cs.call.provider_id, rule=name))
    return _finish(cs, build(cs, ans), effects, changes)


def _cancel_failed(cs: CallState, err: AgentError) -> CallStep:
    """A cancel error through AgentErrorText; ok=false keeps the generic result."""
    assert cs.identity is not None
    if cs.call.tool == EXECUTE:
        mapped = agent_error_text(err, _interrupt_words(cs.identity.uuid, cs.background))
        if mapped is None:
            # (rule coverage: an HTTP error answer, an old agent's 404 among them, C4.6)
            return _finish(cs, generic_result(), (_CANCEL_HTTP_ERROR,) if err.cls is ErrorClass.RESPONSE else ())
        kind, reason, text = mapped
        process_id = None if reason == "agent_restarted" else cs.identity.uuid
        return _finish(cs, Result(kind, False, execute_result_json(error=text), process_id=process_id,
                                  reason=reason or None))
    mapped = agent_error_text(err, _file_words(cs.call.tool, cs.identity.uuid))
    if mapped is None:
        return _finish(cs, generic_result(), (_CANCEL_HTTP_ERROR,) if err.cls is ErrorClass.RESPONSE else ())
    kind, reason, text = mapped
    return _finish(cs, _text_error(kind, text, reason=reason or None))


_CANCEL_HTTP_ERROR = probe("C4.6.cancel-http-error")
