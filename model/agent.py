"""The workspace agent half of the contract: record store, tool call middleware, cancel
handler, processes and files ("Rev C", agent-contract.md sections 2 to 4).

Theory of operation
-------------------
The agent is one pure state machine. A request arrives (``on_request``), a handler run
finishes (``on_timer("handler:<run>")`` or ``on_handler_done``), a process exits
(``on_timer("exit:<pid>")``), a blocking output read reaches its cap
(``on_timer("outwait:<req>")``), a caller stops waiting (``on_client_gone``) or the agent
shuts down (``shutdown``). Each returns ``(new_state, effects)``; answers leave as
``Reply`` effects addressed to the request's sender, ground truth as ``Truth``.

Rule 1 (decision order, section 2.2/2.4). For a request with tool call headers in chat C
        for message M: malformed headers 400; no chat 400; then under one step:
        M < C.latest -> 409 stale_tool_call (stale before the age rule); a record of M
        exists -> canceled marker 409 tool_call_canceled, different input hash 409
        input_mismatch (never waits), pending -> wait, done -> replay; no record and
        ``uptime - margin <= age`` (negative age counts as 0) -> 409
        agent_started_after_tool_call; otherwise the call is proven new: insert the record
        FIRST (raising C.latest to M and dropping older messages' records), then run the
        handler once.
Rule 2 (A1). The record is inserted before the handler runs. A handler run is a separate
        step (timer ``handler:<run>`` after ``AgentRules.handler_ms``, world.handler_time)
        so that concurrent requests, cancels and faults can land while it is pending; they
        wait on the run, never run it again. Every start, edit and write runs this way,
        with tool call headers or without (today's chatd, an old agent): a slow handler is
        slow for everyone, and a handler_panic fault reaches every run.
Rule 3. Every answer that comes from a record (first run, replay, cancel of a started
        call) carries ``Coder-Tool-Call-Run-Age-Ms`` = floor(now - record creation). Only
        Content-Type and that header are forwarded, never other handler headers. The one
        exception is a panic (section 2.5): the panic leaves the creating request's stack,
        so httpmw.Recover answers it 500 "An internal server error occurred." without the
        header, while waiters and later requests get the recorded 500.
Rule 4. Refusals change nothing: a 400 or any 409 records nothing and does not raise the
        chat's latest message ID.
Rule 5 (cancel, section 3). Validate (headers, path ID == UUID of the request's own chat
        and headers, JSON body) before touching the store. No record and provable: insert
        a canceled marker, answer started=false. Pending run: wait, then stop. Started:
        call the stopper after the run published, on every repeated cancel too. A cancel
        never turns a record that ran into a marker. The threshold is clamped to [0, max].
Rule 6 (stop rule, section 4.2). Kill the process only while it runs with run age below
        the threshold (0 never stops). Canceled is sticky and only a cancel sets it; a
        killed process keeps its partial output and exit code -1. A process's run age
        counts from the request's arrival, the record's instant (design glossary "run
        age"), so it equals the header's run age even after a slow spawn. A failed kill
        (``Script.kill_fails``) is the stopper error: 500, process untouched.
Rule 7 (A2, A7). Work outlives its request: a caller that goes away stops nothing. The
        creating request's handler runs even if its client left; a waiter whose client
        left is answered with nothing. Shutdown kills every process (not a cancel) and
        loses every record; restart is shutdown plus a fresh boot with a new uptime.
Rule 8 (section 4.4). Reaping is lazy (on list): an exited process is removed 5 minutes
        after exit unless its tool call record is current (latest message of its chat).
Rule 9 (agentproc api.go). Output and signal refuse (404, ``%q``-quoted ID) only when the
        request has a chat and the process a different, non-empty one; list with a chat
        shows that chat's processes, without one every process. Signal checks in Go's
        order: isolation, JSON body, empty signal, kill/terminate only (SIGKILL/SIGTERM),
        unknown 404, exited 409 "not running".
Rule 10. Bodies decode as Go's encoding/json does (gojson.py): one value, trailing bytes
        unread, case-folded keys, int64 range, ``null`` keeps; any decode error is the
        handler's 400 with Go's error as detail, never a Python exception.

Model abstractions (recorded so a reader can check them against the Go code):
- The body is always fully readable, so the middleware's "Failed to read request body"
  400 does not occur; a handler panic is injected with ``on_handler_done(panic=True)``,
  and ``after_effects=True`` makes it panic after its side effects (the process spawned).
- Output is reported through Go's head/tail buffer (16 KiB + 16 KiB, lines cut at 2048
  bytes) with its ``truncated`` info; the model keeps the whole output underneath.
- SIGTERM ends a model process like SIGKILL (exit -1): scripts do not trap signals.
- Answers written with ``httpapi.Write`` carry Content-Type ``application/json`` here;
  Go writes ``application/json; charset=utf-8`` and a trailing newline.
- Processes run scripts (``Script``): output written at start, a run time, output written
  at exit and an exit code. Commands the config does not name are read as a tiny shell
  (``echo X; sleep N; exit K``, ``true``, ``false``).
- The process ID of a request without tool call headers is ``proc-<incarnation>-<n>``
  from the agent's own counter (the real agent draws a random UUID).
- Output reads are never wrapped by the middleware; signal and list neither.

Where the design and the code facts differ we follow the code facts (agent-contract.md):
there is no time-based record expiry in Rev C (design section 6 mentions none either; the
chatd-contract's 1 h retention belongs to Rev D), and a canceled marker is only created when
a cancel comes first (section 6.1 item 2). The stopper looks the process up by ID alone,
as Go's ``StopToolCallProcess`` does (the ID already names the cancel's own chat). Where
no code fact exists we follow the design: the process's start instant is the record's
(Rev C process.go is not in the repository history, agent-contract.md 0.3 and 4.3), and
the cancel answer's JSON tags and omitempty are the design's (agent-contract.md 6.4 could
not verify them). The reference texts disagree on the panic: agent-contract.md 2.5 and
the design say waiters and later requests get the recorded 500, and the Go test says the
panic "reaches the caller"; middleware.go re-panics after publishing, so the creating
request's answer is httpmw.Recover's, which is what the model gives it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import uuid
from urllib.parse import unquote_plus
from dataclasses import dataclass
from typing import Any

from .core import (
    CachedRepr,
    replace,
    EMPTY,
    CancelTimer,
    FMap,
    Note,
    Reply,
    Request,
    Response,
    SetTimer,
    TransportError,
    header_value,
    json_body,
    note,
    truth,
)
from .gocompat.decode import BOOL, INT64, STRING, GoJSONError, ListOf, MapOf, Struct, decode, go_quote
from .identity import (
    AGENT_STARTED_AFTER_TOOL_CALL,
    CHAT_ID_HEADER,
    INPUT_MISMATCH,
    MAX_MS,
    RUN_AGE_MS_HEADER,
    STALE_TOOL_CALL,
    TOOL_CALL_CANCELED,
    HeaderError,
    Key,
    clamp_ms,
    parse_tool_call_headers,
    tool_call_error,
)

JSON = "application/json"

# Routes (agent-contract.md 1.4, 4.1, 4.6). Order matters: first match wins.
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

# The Go structs the handlers decode bodies into (gojson.py). Field names are the JSON tags:
# stop_if_run_age_below_ms is asserted by a Go test; the others are the model's names, which
# chatd's requests use too (agent-contract.md 6.4: the tags were not all seen).
CANCEL_REQUEST = Struct("workspacesdk.CancelToolCallRequest", (("stop_if_run_age_below_ms", INT64),))
START_REQUEST = Struct(
    "workspacesdk.StartProcessRequest",
    (("command", STRING), ("workdir", STRING), ("env", MapOf(STRING, "map[string]string")), ("background", BOOL)),
)
SIGNAL_REQUEST = Struct("workspacesdk.SignalProcessRequest", (("signal", STRING),))
_FILE_EDIT = Struct("workspacesdk.FileEdit", (("search", STRING), ("replace", STRING)))
_FILE_EDITS = Struct("workspacesdk.FileEdits", (("path", STRING), ("edits", ListOf(_FILE_EDIT, "[]workspacesdk.FileEdit"))))
EDIT_REQUEST = Struct("workspacesdk.FileEditRequest", (("files", ListOf(_FILE_EDITS, "[]workspacesdk.FileEdits")),))

# The head/tail output buffer (agent/agentproc/headtail.go): what output and cancel answers
# report of a process's output.
MAX_HEAD_BYTES = 16 << 10
MAX_TAIL_BYTES = 16 << 10
MAX_LINE_LENGTH = 2048
LINE_TRUNCATION_SUFFIX = " ... [truncated]"


@dataclass(frozen=True, repr=False)
class AgentRules(CachedRepr):
    """The agent's contract rules as named knobs, so a variant or a planted bug is a small
    object over the same code. ``AgentRules()`` is Rev C."""

    name: str = "rev-c"
    understands_tool_calls: bool = True  # False: an old agent (US8) ignores the headers
    age_margin_ms: int = 2_000  # ageMargin: transit allowance after chatd measured the age
    record_before_run: bool = True  # A1: insert the record before running the handler
    cancel_inserts_marker: bool = True  # US10: a cancel of an unknown call refuses later starts
    stop_rule_inclusive: bool = False  # kill when run age < threshold (True: <=, a bug)
    drop_only_older_messages: bool = True  # a new record drops only older messages' records
    pid_from_command: bool = False  # planted bug: process ID from the command, looked up without the chat
    handler_ms: int = 0  # how long a handler run takes before it publishes (a slow spawn or edit)
    exited_reap_after_ms: int = 300_000  # exitedProcessReapAge
    output_wait_cap_ms: int = 300_000  # maxWaitDuration of ?wait=true reads


OLD_AGENT = AgentRules(name="old-agent", understands_tool_calls=False)
AGENT_VARIANTS = {"rev-c": AgentRules(), "old": OLD_AGENT}


@dataclass(frozen=True, repr=False)
class Script(CachedRepr):
    """What a process does: writes ``output_at_start``, runs ``runs_for_ms``, writes
    ``output_at_exit`` and exits with ``exit_code``."""

    runs_for_ms: int = 0
    exit_code: int = 0
    output_at_start: str = ""
    output_at_exit: str = ""
    kill_fails: bool = False  # a kill of its process group fails (EPERM): the stopper errors


@dataclass(frozen=True, repr=False)
class AgentConfig(CachedRepr):
    rules: AgentRules = AgentRules()
    scripts: FMap = EMPTY  # command -> Script
    dirs: tuple[str, ...] = ("/home/coder",)  # existing working directories


@dataclass(frozen=True, repr=False)
class Recorded(CachedRepr):
    """A recorded response: status, Content-Type and body of the one run."""

    status: int
    content_type: str
    body: bytes


# middleware.go panicResponse: what a panicking run records (section 2.5).
PANIC_RECORDED = Recorded(500, JSON, json_body({"message": MSG_HANDLER_FAILED}))


@dataclass(frozen=True, repr=False)
class Record(CachedRepr):
    input_hash: str
    canceled: bool
    created_at_ms: int
    run_id: str  # the pending or finished run that owns this record; "" for markers
    recorded: Recorded | None  # None while the run is pending


@dataclass(frozen=True, repr=False)
class ChatRecords(CachedRepr):
    latest_message_id: int
    records: FMap = EMPTY  # provider tool call ID -> Record


@dataclass(frozen=True, repr=False)
class Run(CachedRepr):
    """A handler run that has its record but has not published yet."""

    key: Key | None  # None: no tool call headers (or an old agent), nothing is recorded
    kind: str  # start | edit | write
    request: Request
    created_at_ms: int  # the request's arrival: the record's instant, and the process's start


@dataclass(frozen=True, repr=False)
class Waiter(CachedRepr):
    """A request waiting for something: a run to publish (replay or cancel), or a process
    to exit (output read)."""

    request: Request
    kind: str  # replay | cancel | output
    target: str  # run ID for replay/cancel, process ID for output
    key: Key | None = None
    threshold_ms: int = 0  # cancel only


@dataclass(frozen=True, repr=False)
class Process(CachedRepr):
    pid: str
    chat_id: str
    key: Key | None
    command: str
    background: bool
    started_at_ms: int
    output: str
    running: bool = True
    exit_code: int | None = None
    exited_at_ms: int | None = None
    canceled: bool = False


@dataclass(frozen=True, repr=False)
class AgentState(CachedRepr):
    config: AgentConfig
    incarnation: int
    started_at_ms: int
    chats: FMap = EMPTY  # chat ID -> ChatRecords
    runs: FMap = EMPTY  # run ID -> Run
    waiters: FMap = EMPTY  # request ID -> Waiter
    processes: FMap = EMPTY  # pid -> Process
    files: FMap = EMPTY  # path -> content (the workspace disk; survives restarts)
    pid_counter: int = 0


Effects = list


# ---------------------------------------------------------------------------
# Boot, shutdown
# ---------------------------------------------------------------------------


def boot(config: AgentConfig, now_ms: int, files: FMap = EMPTY, incarnation: int = 1) -> AgentState:
    """A fresh agent process: no records, no processes, uptime starts now (A7)."""
    return AgentState(config=config, incarnation=incarnation, started_at_ms=now_ms, files=files)


def shutdown(state: AgentState, now_ms: int) -> tuple[AgentState, Effects]:
    """Agent shutdown (rule 7): kill every process (not a cancel), break every open
    request. Returns the dead state; ``restart`` boots the next incarnation."""
    effects: Effects = []
    for pid, proc in state.processes.items():
        if proc.running:
            effects.append(CancelTimer(f"exit:{pid}"))
            effects.append(truth("process_killed", pid=pid, by="shutdown", incarnation=state.incarnation))
    for req_id, waiter in state.waiters.items():
        if waiter.kind == "output":
            effects.append(CancelTimer(f"outwait:{req_id}"))
        effects.append(Reply(waiter.request.src, TransportError(req_id, "agent shut down")))
    for run_id in state.runs:
        effects.append(CancelTimer(f"handler:{run_id}"))
    dead = replace(state, chats=EMPTY, runs=EMPTY, waiters=EMPTY, processes=EMPTY)
    return dead, effects


def restart(state: AgentState, now_ms: int) -> tuple[AgentState, Effects]:
    """Shutdown then boot the next incarnation; the disk (files) survives."""
    dead, effects = shutdown(state, now_ms)
    return boot(state.config, now_ms, dead.files, state.incarnation + 1), effects


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def input_hash(req: Request) -> str:
    """SHA-256 over method, path, raw query and body, each prefixed by its length as an
    8-byte big-endian integer (section 2.6). Headers are not part of it."""
    h = hashlib.sha256()
    for part in (req.method.encode(), req.path.encode(), req.query.encode(), req.body):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


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


# The lookup verdicts that refuse a request before anything else is looked at (rule 1).
REFUSAL_FOR_VERDICT = {"stale": STALE_TOOL_CALL, "not_provable": AGENT_STARTED_AFTER_TOOL_CALL}


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
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def current(state: AgentState, key: Key) -> bool:
    """``Store.Current``: the key is in its chat's latest message and has a record
    (pending, done or a canceled marker)."""
    chat = state.chats.get(key.chat_id)
    return chat is not None and chat.latest_message_id == key.message_id and key.tool_call_id in chat.records


def uptime_ms(state: AgentState, now_ms: int) -> int:
    return now_ms - state.started_at_ms


# ---------------------------------------------------------------------------
# The store's shared lookup (section 2.2, 2.3)
# ---------------------------------------------------------------------------


def lookup(state: AgentState, key: Key, age_ms: int, now_ms: int) -> tuple[str, Record | None]:
    """Returns (verdict, record): verdict is ``stale``, ``found``, ``not_provable`` or
    ``new``. Stale comes first; a found record ignores the age; the age rule refuses
    iff ``uptime - margin <= age`` with a negative age counted as 0."""
    chat = state.chats.get(key.chat_id)
    if chat is not None:
        if key.message_id < chat.latest_message_id:
            return "stale", None
        if key.message_id == chat.latest_message_id and key.tool_call_id in chat.records:
            return "found", chat.records[key.tool_call_id]
    age_ms = max(age_ms, 0)
    if uptime_ms(state, now_ms) - state.config.rules.age_margin_ms <= age_ms:
        return "not_provable", None
    return "new", None


def _insert(state: AgentState, key: Key, record: Record) -> AgentState:
    """Insert a record; a newer message (or an unknown chat) replaces the chat's state,
    which drops every older message's records (section 2.4 step 5)."""
    chat = state.chats.get(key.chat_id)
    if chat is not None and key.message_id < chat.latest_message_id:
        return state  # only reachable from a planted bug that records late
    if chat is None or key.message_id > chat.latest_message_id:
        chat = ChatRecords(latest_message_id=key.message_id)
    elif not state.config.rules.drop_only_older_messages:
        # Planted bug: the same message's other records are lost on every insert.
        chat = ChatRecords(latest_message_id=key.message_id)
    chat = replace(chat, records=chat.records.set(key.tool_call_id, record))
    return replace(state, chats=state.chats.set(key.chat_id, chat))


def _set_record(state: AgentState, key: Key, record: Record) -> AgentState:
    """Update a record in place if its chat still holds it for that message."""
    chat = state.chats.get(key.chat_id)
    if chat is None or chat.latest_message_id != key.message_id or key.tool_call_id not in chat.records:
        return state
    chat = replace(chat, records=chat.records.set(key.tool_call_id, record))
    return replace(state, chats=state.chats.set(key.chat_id, chat))


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def on_request(state: AgentState, req: Request, now_ms: int) -> tuple[AgentState, Effects]:
    """A request arrives at the agent. The clock is read on arrival, before the body
    (C1): ``now_ms`` is that reading."""
    route = MIDDLEWARE_ROUTES.get((req.method, req.path))
    old = not state.config.rules.understands_tool_calls
    if route is not None and old:
        # An old agent has no middleware: every request runs and picks its own ID.
        return _begin_run(state, req, route, None, now_ms)
    if route is not None:
        return _middleware(state, req, route, now_ms)
    if req.method == "POST" and not old and (m := _CANCEL_RE.match(req.path)):
        return _cancel(state, req, m.group(1), now_ms)
    if req.method == "GET" and (m := _OUTPUT_RE.match(req.path)):
        return _output(state, req, m.group(1), now_ms)
    if req.method == "POST" and (m := _SIGNAL_RE.match(req.path)):
        return _signal(state, req, m.group(1), now_ms)
    if req.method == "GET" and req.path == LIST_PATH:
        return _list(state, req, now_ms)
    return state, [Reply(req.src, Response(req.req_id, 404, "text/plain; charset=utf-8", b"404 page not found\n"))]


def _middleware(state: AgentState, req: Request, kind: str, now_ms: int) -> tuple[AgentState, Effects]:
    try:
        headers = parse_tool_call_headers(req.headers)
    except HeaderError as err:
        return state, [_message(req, 400, MSG_INVALID_HEADERS, str(err))]
    if headers is None:
        # Not a tool call request: the handler runs as today, every time, no record.
        return _begin_run(state, req, kind, None, now_ms)
    chat_id = chat_of(req)
    if chat_id is None:
        return state, [_message(req, 400, MSG_NO_CHAT)]
    key = Key(chat_id, headers.message_id, headers.tool_call_id)
    digest = input_hash(req)
    verdict, record = lookup(state, key, headers.age_ms, now_ms)
    if verdict in REFUSAL_FOR_VERDICT:
        return state, _refused(req, REFUSAL_FOR_VERDICT[verdict], key)
    if verdict == "found":
        assert record is not None
        if record.canceled:
            return state, _refused(req, TOOL_CALL_CANCELED, key)
        if record.input_hash != digest:
            return state, _refused(req, INPUT_MISMATCH, key)
        if record.recorded is not None:
            return state, [
                _recorded_reply(req, record.recorded, now_ms, record.created_at_ms),
                note("replayed", uuid=key.uuid),
            ]
        waiter = Waiter(req, "replay", record.run_id, key)
        return replace(state, waiters=state.waiters.set(req.req_id, waiter)), [note("waiting", uuid=key.uuid)]
    # Proven new: record first (A1), then run the handler as its own step.
    record = Record(digest, False, now_ms, req.req_id, None)
    if state.config.rules.record_before_run:
        state = _insert(state, key, record)
    state, effects = _begin_run(state, req, kind, key, now_ms)
    return state, effects + [note("run_pending", uuid=key.uuid, route=kind)]


def _begin_run(state: AgentState, req: Request, kind: str, key: Key | None, now_ms: int) -> tuple[AgentState, Effects]:
    """Rule 2: the handler runs as its own step, ``handler_ms`` after the request arrived.
    Every handler run takes this path, with a tool call (``key``) or without one (no
    headers, or an old agent), because a slow spawn is slow for every start."""
    run_id = req.req_id
    state = replace(
        state,
        runs=state.runs.set(run_id, Run(key, kind, req, now_ms)),
        waiters=state.waiters.set(req.req_id, Waiter(req, "replay", run_id, key)),
    )
    return state, [SetTimer(f"handler:{run_id}", state.config.rules.handler_ms)]


def _recovered_reply(req: Request) -> Reply:
    """httpmw.Recover, outermost in the agent: the panic left the creating request's stack,
    so that request gets ``httpapi.InternalServerError`` and no run-age header."""
    return _json_response(req, 500, {"message": MSG_INTERNAL})


def on_handler_done(
    state: AgentState, run_id: str, now_ms: int, panic: bool = False, after_effects: bool = False
) -> tuple[AgentState, Effects]:
    """The pending run executes its handler and publishes its recorded response; every
    request waiting on the run is answered (a dropped record still wakes its waiters).

    ``panic`` (section 2.5, middleware.go ``record.run``): the record gets
    ``PANIC_RECORDED`` and the panic goes on up the creating request's stack to
    httpmw.Recover, so the creating request gets the recovery 500 (no run-age header) while
    waiters and later requests get the recorded 500 with the run-age header.
    ``after_effects``: the handler panicked after its side effects, e.g. after
    ``manager.start`` spawned the process (while writing the answer). The process exists,
    keeps running under its background context and is addressable by the tool call UUID;
    only the answer is lost, so the record holds the 500 and a cancel reports
    ``status_code`` 500 together with the process, which the stop rule may kill."""
    run = state.runs.get(run_id)
    if run is None:
        return state, []
    state = replace(state, runs=state.runs.remove(run_id))
    effects: Effects = []
    uuid_ = run.key.uuid if run.key is not None else None
    if panic and not after_effects:
        recorded = PANIC_RECORDED
    else:
        # The handler's clock reading is the run's start (the request's arrival): a process
        # it spawns takes that instant as its start time (rule 6).
        state, recorded, effects = _run_handler(state, run.kind, run.request, run.key, run.created_at_ms)
    if panic:
        recorded = PANIC_RECORDED
        effects.append(note("handler_panicked", uuid=uuid_, after_effects=after_effects))
    if run.key is None:
        # No record: only the creating request hears of this run.
        waiter = state.waiters.get(run_id)
        if waiter is not None:
            state = replace(state, waiters=state.waiters.remove(run_id))
            answer = Response(run_id, recorded.status, recorded.content_type, recorded.body)
            effects.append(_recovered_reply(waiter.request) if panic else Reply(waiter.request.src, answer))
        return state, effects
    record = Record(input_hash(run.request), False, run.created_at_ms, run_id, recorded)
    if state.config.rules.record_before_run:
        state = _set_record(state, run.key, record)
    else:
        # Planted bug: the record appears only after the handler ran.
        state = _insert(state, run.key, record)
    effects.append(note("published", uuid=run.key.uuid, status=recorded.status))
    for req_id, waiter in list(state.waiters.items()):
        if waiter.kind in ("replay", "cancel") and waiter.target == run_id:
            state = replace(state, waiters=state.waiters.remove(req_id))
            if waiter.kind == "replay" and panic and req_id == run_id:
                effects.append(_recovered_reply(waiter.request))
            elif waiter.kind == "replay":
                effects.append(_recorded_reply(waiter.request, recorded, now_ms, run.created_at_ms))
            else:
                state, more = _answer_cancel(state, waiter.request, run.key, record, waiter.threshold_ms, now_ms)
                effects.extend(more)
    return state, effects


def on_client_gone(state: AgentState, req_id: str, now_ms: int) -> tuple[AgentState, Effects]:
    """The caller stopped waiting for ``req_id`` (its context ended). A waiter writes
    nothing and is forgotten; a run it created still runs (rule 7)."""
    waiter = state.waiters.get(req_id)
    if waiter is None:
        return state, []
    effects: Effects = [note("client_gone", req=req_id)]
    if waiter.kind == "output":
        effects.append(CancelTimer(f"outwait:{req_id}"))
    return replace(state, waiters=state.waiters.remove(req_id)), effects


def on_timer(state: AgentState, name: str, now_ms: int) -> tuple[AgentState, Effects]:
    kind, _, ident = name.partition(":")
    if kind == "handler":
        return on_handler_done(state, ident, now_ms)
    if kind == "exit":
        return _process_exit(state, ident, now_ms)
    if kind == "outwait":
        waiter = state.waiters.get(ident)
        if waiter is None:
            return state, []
        state = replace(state, waiters=state.waiters.remove(ident))
        return state, [_output_reply(waiter.request, state.processes[waiter.target])]
    return state, []


# ---------------------------------------------------------------------------
# Handlers (what runs once per tool call)
# ---------------------------------------------------------------------------


def _run_handler(
    state: AgentState, kind: str, req: Request, key: Key | None, started_at_ms: int
) -> tuple[AgentState, Recorded, Effects]:
    if kind == "start":
        return _start_process(state, req, key, started_at_ms)
    if kind == "edit":
        return _edit_files(state, req, key)
    return _write_file(state, req, key)


def _rec(status: int, value: Any) -> Recorded:
    return Recorded(status, JSON, json_body(value))


def parse_script(command: str) -> Script:
    """A tiny shell for commands no scenario names: ``echo X``, ``sleep N``, ``exit K``,
    ``true``, ``false`` separated by ';'. Output before the first sleep is written at
    start, the rest at exit."""
    runs_for_ms, exit_code, before, after = 0, 0, [], []
    for part in (p.strip() for p in command.split(";")):
        words = part.split()
        if not words:
            continue
        target = after if runs_for_ms else before
        if words[0] == "echo":
            target.append(" ".join(words[1:]) + "\n")
        elif words[0] == "sleep" and len(words) > 1:
            runs_for_ms += int(float(words[1]) * 1000)
        elif words[0] == "exit" and len(words) > 1:
            exit_code = int(words[1])
            break
        elif words[0] == "false":
            exit_code = 1
    return Script(runs_for_ms, exit_code, "".join(before), "".join(after))


def _bad_json(err: GoJSONError) -> dict:
    """The 400 body of ``httpapi.Read`` and of agentproc's own decode: same text, Go's
    decode error as the detail."""
    return {"message": MSG_BAD_JSON, "detail": str(err)}


def _start_process(state: AgentState, req: Request, key: Key | None, started_at_ms: int):
    """agentproc ``handleStartProcess``. ``started_at_ms`` is the instant the request
    arrived, which is the record's instant for a tool call: the design (glossary, "run
    age") says the process takes that instant as its start time, so the header run age and
    the process's run age agree even when the spawn was slow (``handler_ms``). Go's Rev C
    process.go was not seen (agent-contract.md 0.3, 4.3 [inferred])."""
    try:
        body = decode(req.body, START_REQUEST)
    except GoJSONError as err:
        return state, _rec(400, _bad_json(err)), []
    command = body["command"]
    if not command:
        return state, _rec(400, {"message": "Command is required."}), []
    workdir = body["workdir"]
    if workdir and workdir not in state.config.dirs:
        detail = f"chdir {workdir}: no such file or directory"
        return state, _rec(500, {"message": "Failed to start process.", "detail": detail}), []
    if key is not None and state.config.rules.pid_from_command:
        pid = str(uuid.uuid5(uuid.NAMESPACE_URL, "command:" + command))  # planted bug
    elif key is not None:
        pid = key.uuid
    else:
        state = replace(state, pid_counter=state.pid_counter + 1)
        pid = f"proc-{state.incarnation}-{state.pid_counter}"
    script = state.config.scripts.get(command) or parse_script(command)
    chat_id = chat_of(req) or ""
    proc = Process(pid, chat_id, key, command, body["background"], started_at_ms, script.output_at_start)
    state = replace(state, processes=state.processes.set(pid, proc))
    effects: Effects = [
        truth(
            "process_started",
            pid=pid,
            chat_id=chat_id,
            command=command,
            uuid=key.uuid if key else None,
            incarnation=state.incarnation,
        ),
        SetTimer(f"exit:{pid}", script.runs_for_ms),
    ]
    return state, _rec(200, {"id": pid, "started": True}), effects


def _process_exit(state: AgentState, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    proc = state.processes.get(pid)
    if proc is None or not proc.running:
        return state, []
    script = state.config.scripts.get(proc.command) or parse_script(proc.command)
    proc = replace(
        proc,
        running=False,
        exit_code=script.exit_code,
        exited_at_ms=now_ms,
        output=proc.output + script.output_at_exit,
    )
    state = replace(state, processes=state.processes.set(pid, proc))
    effects: Effects = [truth("process_exited", pid=pid, exit_code=script.exit_code, incarnation=state.incarnation)]
    return _wake_output_waiters(state, pid, effects)


def _kill(state: AgentState, pid: str, by: str, now_ms: int, signal: str = "SIGKILL") -> tuple[AgentState, Effects]:
    """Signal the process group: partial output kept, exit code -1 (Go's signal death).
    SIGTERM ends a model process too: scripts never trap it (a real command may)."""
    proc = state.processes[pid]
    proc = replace(proc, running=False, exit_code=-1, exited_at_ms=now_ms, canceled=proc.canceled or by == "cancel")
    state = replace(state, processes=state.processes.set(pid, proc))
    fields = {"signal": signal} if signal != "SIGKILL" else {}
    effects: Effects = [
        CancelTimer(f"exit:{pid}"),
        truth("process_killed", pid=pid, by=by, incarnation=state.incarnation, **fields),
    ]
    return _wake_output_waiters(state, pid, effects)


def _script_of(state: AgentState, proc: Process) -> Script:
    return state.config.scripts.get(proc.command) or parse_script(proc.command)


def _wake_output_waiters(state: AgentState, pid: str, effects: Effects) -> tuple[AgentState, Effects]:
    proc = state.processes[pid]
    for req_id, waiter in list(state.waiters.items()):
        if waiter.kind == "output" and waiter.target == pid:
            state = replace(state, waiters=state.waiters.remove(req_id))
            effects.append(CancelTimer(f"outwait:{req_id}"))
            effects.append(_output_reply(waiter.request, proc))
    return state, effects


def _apply_edit(content: str, edits: list) -> str:
    for edit in edits:
        content = content.replace(edit["search"], edit["replace"], 1)
    return content


def _edit_files(state: AgentState, req: Request, key: Key | None):
    """agentfiles ``HandleEditFiles``: ``httpapi.Read`` into FileEditRequest, then at least
    one file. The edit itself is the model's search/replace (section 4.6)."""
    try:
        files = decode(req.body, EDIT_REQUEST)["files"] or []
    except GoJSONError as err:
        return state, _rec(400, _bad_json(err)), []
    if not files:
        return state, _rec(400, {"message": "must specify at least one file"}), []
    effects: Effects = []
    paths = []
    for entry in files:
        path = entry["path"]
        if path not in state.files:
            # Files written before the failure stay written (design section 7, last item).
            return state, _rec(404, {"message": f"open {path}: file does not exist"}), effects
        state = replace(state, files=state.files.set(path, _apply_edit(state.files[path], entry["edits"] or [])))
        effects.append(truth("edit_applied", path=path, uuid=key.uuid if key else None, tool="edit_files",
                             incarnation=state.incarnation))
        paths.append(path)
    return state, _rec(200, {"files": paths, "ok": True}), effects


def _write_file(state: AgentState, req: Request, key: Key | None):
    path = _query(req).get("path", "")
    if not path:
        return state, _rec(400, {"message": "path is required"}), []
    state = replace(state, files=state.files.set(path, req.body.decode("utf-8", errors="replace")))
    effect = truth("edit_applied", path=path, uuid=key.uuid if key else None, tool="write_file",
                   incarnation=state.incarnation)
    return state, _rec(200, {"ok": True}), [effect]


# ---------------------------------------------------------------------------
# Output, signal, list (not wrapped by the middleware)
# ---------------------------------------------------------------------------


def _visible(state: AgentState, req: Request, proc: Process) -> bool:
    """agentproc's chat isolation for output and signal (A5, api.go): refused only when the
    request has a chat and the process has a different, non-empty one. A request without
    a chat, or a process started without one, passes. (The pid_from_command planted bug
    looks processes up without the chat.)"""
    chat = chat_of(req)
    if chat is None or not proc.chat_id or state.config.rules.pid_from_command:
        return True
    return proc.chat_id == chat


def _not_found(req: Request, pid: str) -> Reply:
    return _message(req, 404, f"Process {go_quote(pid)} not found.")


def head_tail_output(raw: str) -> tuple[str, dict | None]:
    """``HeadTailBuffer.Output`` (agent/agentproc/headtail.go): up to 16 KiB of head and
    16 KiB of tail joined by an omission marker, long lines cut, and the truncation info;
    output that fits the head comes back whole with no info. Lengths are UTF-8 bytes, as
    Go's; a cut inside a character becomes U+FFFD per byte, as Go's JSON encoder writes it."""
    data = raw.encode("utf-8", errors="surrogateescape")
    if not data:
        return "", None
    if len(data) <= MAX_HEAD_BYTES:
        return _go_text(_truncate_lines(data)), None
    head, tail = data[:MAX_HEAD_BYTES], data[MAX_HEAD_BYTES:][-MAX_TAIL_BYTES:]
    omitted = len(data) - len(head) - len(tail)
    joint = f"\n\n... [omitted {omitted} bytes] ...\n\n".encode() if omitted > 0 else b"\n"
    result = _truncate_lines(head) + joint + _truncate_lines(tail)
    info = {"original_bytes": len(data), "retained_bytes": len(result), "omitted_bytes": omitted, "strategy": "head_tail"}
    return _go_text(result), info


def _truncate_lines(data: bytes) -> bytes:
    if len(data) <= MAX_LINE_LENGTH:
        return data
    cut = MAX_LINE_LENGTH - len(LINE_TRUNCATION_SUFFIX)
    lines = data.split(b"\n")
    return b"\n".join(line[:cut] + LINE_TRUNCATION_SUFFIX.encode() if len(line) > MAX_LINE_LENGTH else line for line in lines)


def _go_text(data: bytes) -> str:
    return "".join("\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in data.decode("utf-8", errors="surrogateescape"))


def _output_value(proc: Process) -> dict:
    output, truncated = head_tail_output(proc.output)
    value = {"running": proc.running, "exit_code": proc.exit_code, "output": output}
    if truncated is not None:
        value["truncated"] = truncated
    return value


def _output_reply(req: Request, proc: Process) -> Reply:
    return _json_response(req, 200, _output_value(proc))


def _output(state: AgentState, req: Request, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    proc = state.processes.get(pid)
    if proc is None or not _visible(state, req, proc):
        return state, [_not_found(req, pid)]
    if proc.running and _query(req).get("wait") == "true":
        waiter = Waiter(req, "output", pid)
        state = replace(state, waiters=state.waiters.set(req.req_id, waiter))
        return state, [SetTimer(f"outwait:{req.req_id}", state.config.rules.output_wait_cap_ms)]
    return state, [_output_reply(req, proc)]


def _signal(state: AgentState, req: Request, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    """agentproc ``handleSignalProcess``, checks in Go's order: another chat's process 404;
    body not JSON 400; no signal 400; a signal other than kill/terminate 400; unknown
    process 404; exited process 409; kill failed 500; else SIGKILL or SIGTERM to the
    process group and 200. A signal is the model's own action, never a cancel (Canceled
    stays false, section 4.2)."""
    proc = state.processes.get(pid)
    if proc is not None and not _visible(state, req, proc):
        return state, [_not_found(req, pid)]
    try:
        sig = decode(req.body, SIGNAL_REQUEST)["signal"]
    except GoJSONError as err:
        return state, [_message(req, 400, MSG_BAD_JSON, str(err))]
    if not sig:
        return state, [_message(req, 400, "Signal is required.")]
    if sig not in SIGNALS:
        return state, [_message(req, 400, f'Unsupported signal {go_quote(sig)}. Use "kill" or "terminate".')]
    if proc is None:
        return state, [_not_found(req, pid)]
    if not proc.running:
        return state, [_message(req, 409, f"Process {go_quote(pid)} is not running.")]
    if _script_of(state, proc).kill_fails:
        detail = f"{sig} process: {KILL_ERROR}"
        return state, [_message(req, 500, MSG_SIGNAL_FAILED, detail)]
    state, effects = _kill(state, pid, "signal", now_ms, SIGNALS[sig])
    return state, effects + [_message(req, 200, f"Signal {go_quote(sig)} sent to process {go_quote(pid)}.")]


def reap(state: AgentState, now_ms: int) -> AgentState:
    """Rule 8: drop exited processes 5 minutes after exit unless their record is current."""
    keep = []
    for pid, proc in state.processes.items():
        old = (not proc.running) and proc.exited_at_ms is not None and (
            now_ms - proc.exited_at_ms > state.config.rules.exited_reap_after_ms
        )
        if old and not (proc.key is not None and current(state, proc.key)):
            continue
        keep.append((pid, proc))
    return replace(state, processes=FMap(keep))


def _list(state: AgentState, req: Request, now_ms: int) -> tuple[AgentState, Effects]:
    state = reap(state, now_ms)
    # manager.list: a request with a chat sees that chat's processes only (not those started
    # without a chat, unlike output and signal); a request without a chat sees every one.
    chat_id = chat_of(req) or ""
    procs = [
        {"id": pid, "command": p.command, **_output_value(p)}
        for pid, p in state.processes.items()
        if not chat_id or p.chat_id == chat_id
    ]
    return state, [_json_response(req, 200, {"processes": procs})]


# ---------------------------------------------------------------------------
# Cancel (section 3)
# ---------------------------------------------------------------------------


def _cancel(state: AgentState, req: Request, path_id: str, now_ms: int) -> tuple[AgentState, Effects]:
    try:
        headers = parse_tool_call_headers(req.headers)
    except HeaderError as err:
        return state, [_message(req, 400, MSG_INVALID_HEADERS, str(err))]
    if headers is None:
        return state, [_message(req, 400, MSG_CANCEL_NEEDS_HEADERS)]
    chat_id = chat_of(req)
    if chat_id is None:
        return state, [_message(req, 400, MSG_NO_CHAT)]
    key = Key(chat_id, headers.message_id, headers.tool_call_id)
    if key.uuid != path_id:
        return state, [_message(req, 400, MSG_CANCEL_WRONG_ID)]
    try:
        # httpapi.Read: one json.Decoder.Decode into CancelToolCallRequest (gojson.py), so
        # `null` is threshold 0, keys match case-insensitively, trailing bytes are ignored
        # and a value past int64 is a 400.
        raw = decode(req.body, CANCEL_REQUEST)["stop_if_run_age_below_ms"]
    except GoJSONError as err:
        return state, [_message(req, 400, MSG_BAD_JSON, str(err))]
    threshold_ms = clamp_ms(raw)
    verdict, record = lookup(state, key, headers.age_ms, now_ms)
    if verdict in REFUSAL_FOR_VERDICT:
        return state, _refused(req, REFUSAL_FOR_VERDICT[verdict], key)
    if verdict == "new":
        effects: Effects = [note("cancel_never_received", uuid=key.uuid)]
        if state.config.rules.cancel_inserts_marker:
            state = _insert(state, key, Record("", True, now_ms, "", Recorded(0, "", b"")))
            effects.append(note("canceled_marker", uuid=key.uuid))
        return state, effects + [_json_response(req, 200, {"started": False})]
    assert record is not None
    if record.canceled:
        return state, [_json_response(req, 200, {"started": False})]
    if record.recorded is None:
        waiter = Waiter(req, "cancel", record.run_id, key, threshold_ms)
        return replace(state, waiters=state.waiters.set(req.req_id, waiter)), [note("cancel_waiting", uuid=key.uuid)]
    return _answer_cancel(state, req, key, record, threshold_ms, now_ms)


def _answer_cancel(
    state: AgentState, req: Request, key: Key, record: Record, threshold_ms: int, now_ms: int
) -> tuple[AgentState, Effects]:
    """Steps 7-9: the recorded response plus the process state after the stop rule.

    The answer is ``CancelToolCallResponse`` with the design's omitempty tags
    (codagt-757-design.md section 9, PR 1): ``started`` always, ``status_code``,
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
    pid = key.uuid
    if state.config.rules.pid_from_command:
        try:
            pid = json.loads(record.recorded.body.decode("utf-8")).get("id", pid)
        except (ValueError, AttributeError):
            pass
    state, process, effects, error = stop_tool_call_process(state, pid, threshold_ms, now_ms)
    if error:
        return state, effects + [_message(req, 500, MSG_STOP_FAILED, error)]
    if process is not None:
        out["process"] = process
    reply = _json_response(req, 200, out, _run_age_header(now_ms, record.created_at_ms))
    return state, effects + [reply]


def stop_tool_call_process(
    state: AgentState, pid: str, threshold_ms: int, now_ms: int
) -> tuple[AgentState, dict | None, Effects, str]:
    """``API.StopToolCallProcess`` (rule 6): ``(state, process, effects, error)``.
    ``process`` is None when no process has that ID; ``error`` is non-empty when the kill
    failed (``Script.kill_fails``), and the process then runs on, not canceled.

    Like Go it looks the ID up without the chat: the ID is the tool call UUID derived from
    the cancel's own chat, so it can only name that chat's process. Only the
    pid_from_command planted bug breaks that, because its IDs come from the command.

    ``process`` is ``ToolCallProcess`` with the design's tags: ``running``, ``canceled``
    and ``run_age_ms`` always; ``output`` (head/tail, as the output route reports it),
    ``truncated`` and ``exit_code`` (nil while running) only when set."""
    proc = state.processes.get(pid)
    if proc is None:
        return state, None, [], ""
    effects: Effects = []
    run_age_ms = now_ms - proc.started_at_ms
    below = run_age_ms <= threshold_ms if state.config.rules.stop_rule_inclusive else run_age_ms < threshold_ms
    if proc.running and threshold_ms > 0 and below:
        if _script_of(state, proc).kill_fails:
            return state, None, [note("stop_failed", pid=pid)], f"kill process group: {KILL_ERROR}"
        state, effects = _kill(state, pid, "cancel", now_ms)
        proc = state.processes[pid]
    elif proc.running:
        effects.append(note("left_running", pid=pid, run_age_ms=run_age_ms, threshold_ms=threshold_ms))
    output, truncated = head_tail_output(proc.output)
    value: dict[str, Any] = {"running": proc.running, "canceled": proc.canceled, "run_age_ms": run_age_ms}
    if output:
        value["output"] = output
    if truncated is not None:
        value["truncated"] = truncated
    if proc.exit_code is not None:
        value["exit_code"] = proc.exit_code
    return state, value, effects, ""


def decode_cancel_response(body: bytes) -> dict:
    """Read a cancel answer back, with the recorded body as bytes (round-trips exactly)."""
    value = json.loads(body.decode("utf-8"))
    if "body" in value:
        try:
            value["body"] = base64.b64decode(value["body"], validate=True)
        except (binascii.Error, ValueError):
            pass
    return value


__all__ = [
    "AgentConfig",
    "AgentRules",
    "AgentState",
    "MAX_MS",
    "Note",
    "Script",
    "boot",
    "current",
    "decode_cancel_response",
    "input_hash",
    "lookup",
    "on_client_gone",
    "on_handler_done",
    "on_request",
    "on_timer",
    "parse_script",
    "reap",
    "restart",
    "shutdown",
    "stop_tool_call_process",
]
