"""The file tools' steps: edit_files and write_file, one request each.

Theory of operation
-------------------
docs/contract.md C5.4: an edit or write is one request with the tool call headers,
bounded by the agent answer timeout in design B; a 2xx answer is applied, a failure is
classified and worded for the tool (``_file_words``), and a coded refusal reads
``<action>: <err>``. ``_edit_success`` and ``_write_success`` are shared with the cancel
answer, which may carry the recorded answer of the same request.
"""

from __future__ import annotations

from urllib.parse import urlencode

from ..core import Effect, Response, json_body, replace
from ..gocompat.encoding import go_json, loads_go
from .classifier import (
    AgentError, ErrorClass, Undecodable, _FILE_TEXTS, _file_words, agent_error_text, classified, classify,
    sdk_error_text,
)
from .constants import EDIT_FILES, EDIT_PATH, WRITE_FILE, WRITE_PATH
from .results import Result, _text_error
from .state import (CallState, CallStep, Phase, _UndecodableError, _arm_into, _decode, _finish, _headers,
                    _send_into)


def _begin_file(cs: CallState, now_ms: int) -> CallStep:
    try:
        value = loads_go(cs.call.args_json)
    except ValueError as err:
        return _finish(cs, _text_error("failed", f"invalid parameters: {err}"))
    if not isinstance(value, dict):
        value = {}
    if cs.call.tool == EDIT_FILES:
        files = value.get("files") if isinstance(value.get("files"), list) else []
        if not files:
            return _finish(cs, _text_error("failed", "files is required"))
        cleaned = []
        for i, entry in enumerate(files):
            entry = entry if isinstance(entry, dict) else {}
            path = str(entry.get("path") or "").strip()
            if not path:
                return _finish(cs, _text_error("failed", f"files[{i}].path is required; provide the absolute "
                                                         "path of the file to edit; no files in this batch were applied"))
            if not entry.get("edits"):
                return _finish(cs, _text_error("failed", f"files[{i}].edits must contain at least one edit; "
                                                         "no files in this batch were applied"))
            cleaned.append({**entry, "path": path})
        op, path, query, body = "edit", EDIT_PATH, "", json_body({"files": cleaned})
    else:
        path_arg = str(value.get("path") or "").strip()
        if not path_arg:
            return _finish(cs, _text_error("failed", "path is required"))
        content = value.get("content") if isinstance(value.get("content"), str) else ""
        op, path, query, body = "write", WRITE_PATH, urlencode({"path": path_arg}), content.encode("utf-8")
    changes: dict = {}  # the step's edits of the state, copied into it once (state.py's docstring)
    send = _send_into(changes, cs, op, "POST", path, query, _headers(cs, now_ms, True), body)
    armed: list[Effect] = []
    if cs.layer.agent_answer_timeout:
        _arm_into(changes, cs, "answer_timer", cs.timing.agent_answer_timeout_ms, armed)
    changes["phase"] = Phase.START
    return replace(cs, **changes), (send, *armed)


# --- file tools ---------------------------------------------------------------


def _edit_success(body: bytes, status: int, content_type: str) -> Result:
    """``editFilesResult`` for a 2xx answer, live or recorded."""
    try:
        value = loads_go(body.decode("utf-8"))
        files = value.get("files") if isinstance(value, dict) else None
    except (UnicodeDecodeError, ValueError):
        return _text_error("failed", sdk_error_text(status, content_type, body))
    return Result("applied", False, go_json({"files": files if isinstance(files, list) else [], "ok": True}))


def _write_success() -> Result:
    return Result("applied", False, go_json({"ok": True}))


def _on_file_answer(cs: CallState, answer: Response, now_ms: int) -> CallStep:
    if cs.call.tool == WRITE_FILE:
        return _finish(cs, _write_success())
    try:
        _decode(answer, ())
    except _UndecodableError as err:
        failure = classify(Undecodable(str(err)))
        return classified(_file_failed(cs, failure), failure)
    return _finish(cs, _edit_success(answer.body, answer.status, answer.content_type))


def _file_failed(cs: CallState, err: AgentError) -> CallStep:
    """``fileRequestErrorResult`` with the tool's own fallback (5.4)."""
    action = _FILE_TEXTS[cs.call.tool][0]
    if cs.identity is not None:
        mapped = agent_error_text(err, _file_words(cs.call.tool, cs.identity.uuid))
        if mapped is not None:
            kind, reason, text = mapped
            return _finish(cs, _text_error(kind, text, reason=reason or None))
    text = f"{action}: {err.text}" if err.cls is ErrorClass.REFUSED else err.text
    return _finish(cs, _text_error("failed", text))
