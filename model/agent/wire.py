"""The agent's HTTP surface: routes, answer texts, the Go structs bodies decode into, and
the helpers that build answers (docs/contract.md A1.4, A4.1, A4.6).

Theory of operation
-------------------
Everything a handler says on the wire is built here, so the handlers (middleware.py,
cancel.py, processes.py, files.py) read as decisions and this module as Go's
``httpapi`` and the texts Go writes. An answer is a ``Reply`` effect addressed to the
request's sender; a handler run's answer is a ``Recorded`` (status, Content-Type, body)
that the middleware stores and replays (rule 3 of the package docstring). Bodies decode
with model/gocompat/decode.py as Go's ``encoding/json`` does (rule 10), and a decode error is Go's 400
with the error as its detail, never a Python exception.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_plus

from ..core import Reply, Request, Response, header_value, json_body, note
from ..gocompat.decode import BOOL, INT64, STRING, GoJSONError, ListOf, MapOf, Struct, decode
from ..identity import CHAT_ID_HEADER, RUN_AGE_MS_HEADER, Key, tool_call_error
from .state import Effects, Recorded

JSON = "application/json"

# Routes (docs/contract.md A1.4, A4.1, A4.6). Order matters: first match wins.
START_PATH = "/api/v0/processes/start"
LIST_PATH = "/api/v0/processes/list"
EDIT_PATH = "/api/v0/edit-files"
WRITE_PATH = "/api/v0/write-file"
_OUTPUT_RE = re.compile(r"^/api/v0/processes/([^/]+)/output$")
_SIGNAL_RE = re.compile(r"^/api/v0/processes/([^/]+)/signal$")
_CANCEL_RE = re.compile(r"^/api/v0/tool-calls/([^/]+)/cancel$")

# Routes wrapped by the tool call middleware (section 4.1, 4.6): only side effects.
MIDDLEWARE_ROUTES = {("POST", START_PATH): "start", ("POST", EDIT_PATH): "edit", ("POST", WRITE_PATH): "write"}

# 400 texts (section 1.4).
MSG_INVALID_HEADERS = "Invalid tool call headers."
MSG_NO_CHAT = "Tool call headers require the Coder-Chat-Id header."
MSG_CANCEL_NEEDS_HEADERS = "Canceling a tool call requires tool call headers."
MSG_CANCEL_WRONG_ID = "The tool call ID in the path is not the ID of the tool call in the headers."
MSG_BAD_JSON = "Request body must be valid JSON."
MSG_HANDLER_FAILED = "The tool call handler failed."
# httpmw.Recover's answer to the request whose handler panicked (httpapi.InternalServerError).
MSG_INTERNAL = "An internal server error occurred."
MSG_STOP_FAILED = "Failed to stop the tool call's process."
MSG_SIGNAL_FAILED = "Failed to signal process."
# What a failed kill reports (Script.kill_fails). [inferred] Go wraps the syscall error; the
# model's one failure is EPERM.
KILL_ERROR = "operation not permitted"
SIGNALS = {"kill": "SIGKILL", "terminate": "SIGTERM"}  # agentproc manager.signal

# The Go structs the handlers decode bodies into (model/gocompat/decode.py). Field names are the JSON tags:
# stop_if_run_age_below_ms is asserted by a Go test; the others are the model's names, which
# chatd's requests use too (docs/contract.md A6.4: the tags were not all seen).
CANCEL_REQUEST = Struct("workspacesdk.CancelToolCallRequest", (("stop_if_run_age_below_ms", INT64),))
START_REQUEST = Struct(
    "workspacesdk.StartProcessRequest",
    (("command", STRING), ("workdir", STRING), ("env", MapOf(STRING, "map[string]string")), ("background", BOOL)),
)
SIGNAL_REQUEST = Struct("workspacesdk.SignalProcessRequest", (("signal", STRING),))
# FileEdit's replace_all (tag "replace_all,omitempty"): replace every match instead of
# refusing a search that matches more than once (model/agent/files.py fuzzy_replace).
_FILE_EDIT = Struct("workspacesdk.FileEdit", (("search", STRING), ("replace", STRING), ("replace_all", BOOL)))
_FILE_EDITS = Struct("workspacesdk.FileEdits", (("path", STRING), ("edits", ListOf(_FILE_EDIT, "[]workspacesdk.FileEdit"))))
EDIT_REQUEST = Struct("workspacesdk.FileEditRequest", (("files", ListOf(_FILE_EDITS, "[]workspacesdk.FileEdits")),))


class BodyDecoder:
    """``decode(body, target)`` for one target struct, remembered by body: the same bytes
    decode to the same value or the same error every time (decoding is pure), and a
    world's start, edit and cancel bodies repeat (a retried call, a replayed request, the
    swarm's commands): four in five decodes of a swarm are repeats. The value is shared
    between callers, who only read it; an error is raised anew with the same text. The
    memo holds at most ``MAX_BODIES`` bodies (then starts over), so it stays small in a
    long-lived process."""

    MAX_BODIES = 1024

    def __init__(self, target: Struct):
        self.target = target
        self.answers: dict[bytes, tuple[Any, str | None]] = {}

    def __call__(self, body: bytes) -> Any:
        answer = self.answers.get(body)
        if answer is None:
            try:
                answer = (decode(body, self.target), None)
            except GoJSONError as err:
                answer = (None, str(err))
            if len(self.answers) >= self.MAX_BODIES:
                self.answers.clear()
            self.answers[body] = answer
        if answer[1] is not None:
            raise GoJSONError(answer[1])
        return answer[0]

    def cache_clear(self) -> None:
        """Forget every remembered body (as ``functools`` caches do): the mutation run's
        map clears memos between tests, so each test runs the code it needs."""
        self.answers.clear()


decode_start = BodyDecoder(START_REQUEST)
decode_edit = BodyDecoder(EDIT_REQUEST)
decode_cancel = BodyDecoder(CANCEL_REQUEST)
decode_signal = BodyDecoder(SIGNAL_REQUEST)

# middleware.go panicResponse: what a panicking run records (section 2.5).
PANIC_RECORDED = Recorded(500, JSON, json_body({"message": MSG_HANDLER_FAILED}))


def _json_response(req: Request, status: int, value: Any, extra_headers=()) -> Reply:
    return Reply(req.src, Response(req.req_id, status, JSON, json_body(value), tuple(extra_headers)))


def _message(req: Request, status: int, message: str, detail: str = "") -> Reply:
    value = {"message": message}
    if detail:
        value["detail"] = detail
    return _json_response(req, status, value)


def _refused(req: Request, code: str, key: Key) -> Effects:
    """A coded 409 (rule 4: a refusal changes nothing) and the note that marks it."""
    err = tool_call_error(code)
    return [Reply(req.src, Response(req.req_id, 409, JSON, err.body())), note("refused", code=code, uuid=key.uuid)]


def _run_age_header(now_ms: int, created_at_ms: int) -> tuple[tuple[str, str], ...]:
    return ((RUN_AGE_MS_HEADER, str(max(0, now_ms - created_at_ms))),)


def _recorded_reply(req: Request, rec: Recorded, now_ms: int, created_at_ms: int) -> Reply:
    return Reply(
        req.src,
        Response(req.req_id, rec.status, rec.content_type, rec.body, _run_age_header(now_ms, created_at_ms)),
    )


def _query(req: Request) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in req.query.split("&") if req.query else ():
        name, _, value = part.partition("=")
        out.setdefault(unquote_plus(name), unquote_plus(value))
    return out


def chat_of(req: Request) -> str | None:
    """The chat context (agentchat middleware): absent or unparsable means none."""
    value = header_value(req.headers, CHAT_ID_HEADER)
    if not value:
        return None
    return _parse_chat_id(value)


@lru_cache(maxsize=1024)  # a pure function of the header's value; a world asks it of a few chats on every request
def _parse_chat_id(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _rec(status: int, value: Any) -> Recorded:
    return Recorded(status, JSON, json_body(value))


def _bad_json(err: GoJSONError) -> dict:
    """The 400 body of ``httpapi.Read`` and of agentproc's own decode: same text, Go's
    decode error as the detail."""
    return {"message": MSG_BAD_JSON, "detail": str(err)}


def decode_cancel_response(body: bytes) -> dict:
    """Read a cancel answer back, with the recorded body as bytes (round-trips exactly)."""
    value = json.loads(body.decode("utf-8"))
    if "body" in value:
        try:
            value["body"] = base64.b64decode(value["body"], validate=True)
        except (binascii.Error, ValueError):
            pass
    return value
