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
        step (timer ``handler:<run>`` with delay 0) so that concurrent requests, cancels and
        faults can land while it is pending; they wait on the run, never run it again.
Rule 3. Every answer that comes from a record (first run, replay, cancel of a started
        call) carries ``Coder-Tool-Call-Run-Age-Ms`` = floor(now - record creation). Only
        Content-Type and that header are forwarded, never other handler headers.
Rule 4. Refusals change nothing: a 400 or any 409 records nothing and does not raise the
        chat's latest message ID.
Rule 5 (cancel, section 3). Validate (headers, path ID == UUID of the request's own chat
        and headers, JSON body) before touching the store. No record and provable: insert
        a canceled marker, answer started=false. Pending run: wait, then stop. Started:
        call the stopper after the run published, on every repeated cancel too. A cancel
        never turns a record that ran into a marker. The threshold is clamped to [0, max].
Rule 6 (stop rule, section 4.2). Kill the process only while it runs with run age below
        the threshold (0 never stops). Canceled is sticky and only a cancel sets it; a
        killed process keeps its partial output and exit code -1.
Rule 7 (A2, A7). Work outlives its request: a caller that goes away stops nothing. The
        creating request's handler runs even if its client left; a waiter whose client
        left is answered with nothing. Shutdown kills every process (not a cancel) and
        loses every record; restart is shutdown plus a fresh boot with a new uptime.
Rule 8 (section 4.4). Reaping is lazy (on list): an exited process is removed 5 minutes
        after exit unless its tool call record is current (latest message of its chat).

Model abstractions (recorded so a reader can check them against the Go code):
- The body is always fully readable, so the middleware's "Failed to read request body"
  400 does not occur; a handler panic is injected with ``on_handler_done(panic=True)``.
- Processes run scripts (``Script``): output written at start, a run time, output written
  at exit and an exit code. Commands the config does not name are read as a tiny shell
  (``echo X; sleep N; exit K``, ``true``, ``false``).
- The process ID of a request without tool call headers is ``proc-<incarnation>-<n>``
  from the agent's own counter (the real agent draws a random UUID).
- Output reads are never wrapped by the middleware; signal and list neither.

Where the design and the code facts differ we follow the code facts (agent-contract.md):
there is no time-based record expiry in Rev C (design section 6 mentions none either; the
chatd-contract's 1 h retention belongs to Rev D), and a canceled marker is only created when
a cancel comes first (section 6.1 item 2).
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

    key: Key
    kind: str  # start | edit | write
    request: Request
    created_at_ms: int


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
        state, rec, effects = _run_handler(state, route, req, None, now_ms)
        return state, effects + [Reply(req.src, Response(req.req_id, rec.status, rec.content_type, rec.body))]
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
        state, rec, effects = _run_handler(state, kind, req, None, now_ms)
        return state, effects + [Reply(req.src, Response(req.req_id, rec.status, rec.content_type, rec.body))]
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
    run_id = req.req_id
    record = Record(digest, False, now_ms, run_id, None)
    if state.config.rules.record_before_run:
        state = _insert(state, key, record)
    run = Run(key, kind, req, now_ms)
    state = replace(
        state,
        runs=state.runs.set(run_id, run),
        waiters=state.waiters.set(req.req_id, Waiter(req, "replay", run_id, key)),
    )
    return state, [
        SetTimer(f"handler:{run_id}", state.config.rules.handler_ms),
        note("run_pending", uuid=key.uuid, route=kind),
    ]


def on_handler_done(state: AgentState, run_id: str, now_ms: int, panic: bool = False) -> tuple[AgentState, Effects]:
    """The pending run executes its handler and publishes its recorded response; every
    request waiting on the run is answered (a dropped record still wakes its waiters)."""
    run = state.runs.get(run_id)
    if run is None:
        return state, []
    state = replace(state, runs=state.runs.remove(run_id))
    effects: Effects = []
    if panic:
        recorded = Recorded(500, JSON, json_body({"message": MSG_HANDLER_FAILED}))
        effects.append(note("handler_panicked", uuid=run.key.uuid))
    else:
        state, recorded, effects = _run_handler(state, run.kind, run.request, run.key, now_ms)
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
            if waiter.kind == "replay":
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
    state: AgentState, kind: str, req: Request, key: Key | None, now_ms: int
) -> tuple[AgentState, Recorded, Effects]:
    if kind == "start":
        return _start_process(state, req, key, now_ms)
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


def _start_process(state: AgentState, req: Request, key: Key | None, now_ms: int):
    try:
        body = json.loads(req.body.decode("utf-8"))
        if not isinstance(body, dict):
            raise ValueError
    except (UnicodeDecodeError, ValueError):
        return state, _rec(400, {"message": MSG_BAD_JSON}), []
    command = body.get("command") or ""
    if not command:
        return state, _rec(400, {"message": "Command is required."}), []
    workdir = body.get("workdir") or ""
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
    proc = Process(pid, chat_id, key, command, bool(body.get("background")), now_ms, script.output_at_start)
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


def _kill(state: AgentState, pid: str, by: str, now_ms: int) -> tuple[AgentState, Effects]:
    """SIGKILL the process group: partial output kept, exit code -1 (Go's signal death)."""
    proc = state.processes[pid]
    proc = replace(proc, running=False, exit_code=-1, exited_at_ms=now_ms, canceled=proc.canceled or by == "cancel")
    state = replace(state, processes=state.processes.set(pid, proc))
    effects: Effects = [
        CancelTimer(f"exit:{pid}"),
        truth("process_killed", pid=pid, by=by, incarnation=state.incarnation),
    ]
    return _wake_output_waiters(state, pid, effects)


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
        content = content.replace(str(edit.get("search", "")), str(edit.get("replace", "")), 1)
    return content


def _edit_files(state: AgentState, req: Request, key: Key | None):
    try:
        body = json.loads(req.body.decode("utf-8"))
        files = body["files"]
        if not isinstance(files, list):
            raise ValueError
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return state, _rec(400, {"message": MSG_BAD_JSON}), []
    effects: Effects = []
    paths = []
    for entry in files:
        path = str(entry.get("path", ""))
        if path not in state.files:
            # Files written before the failure stay written (design section 7, last item).
            return state, _rec(404, {"message": f"open {path}: file does not exist"}), effects
        state = replace(state, files=state.files.set(path, _apply_edit(state.files[path], entry.get("edits") or [])))
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


def _process_for(state: AgentState, req: Request, pid: str) -> Process | None:
    """A5: another chat's process gets the same 404 as an unknown one."""
    proc = state.processes.get(pid)
    if proc is None:
        return None
    if proc.chat_id != (chat_of(req) or "") and not state.config.rules.pid_from_command:
        return None
    return proc


def _output_value(proc: Process) -> dict:
    return {"running": proc.running, "exit_code": proc.exit_code, "output": proc.output}


def _output_reply(req: Request, proc: Process) -> Reply:
    return _json_response(req, 200, _output_value(proc))


def _output(state: AgentState, req: Request, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    proc = _process_for(state, req, pid)
    if proc is None:
        return state, [_message(req, 404, f"Process {pid} not found.")]
    if proc.running and _query(req).get("wait") == "true":
        waiter = Waiter(req, "output", pid)
        state = replace(state, waiters=state.waiters.set(req.req_id, waiter))
        return state, [SetTimer(f"outwait:{req.req_id}", state.config.rules.output_wait_cap_ms)]
    return state, [_output_reply(req, proc)]


def _signal(state: AgentState, req: Request, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    proc = _process_for(state, req, pid)
    if proc is None:
        return state, [_message(req, 404, f"Process {pid} not found.")]
    effects: Effects = []
    if proc.running:
        # The model's own process_signal: a kill, never a cancel (Canceled stays false).
        state, effects = _kill(state, pid, "signal", now_ms)
    return state, effects + [_json_response(req, 200, {})]


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
    chat_id = chat_of(req) or ""
    procs = [
        {"id": pid, "command": p.command, **_output_value(p)}
        for pid, p in state.processes.items()
        if p.chat_id == chat_id
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
        body = json.loads(req.body.decode("utf-8"))
        raw = body.get("stop_if_run_age_below_ms", 0) if isinstance(body, dict) else None
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise ValueError
    except (UnicodeDecodeError, ValueError):
        return state, [_message(req, 400, MSG_BAD_JSON)]
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
    """Steps 7-9: the recorded response plus the process state after the stop rule."""
    assert record.recorded is not None
    out: dict[str, Any] = {
        "started": True,
        "status_code": record.recorded.status,
        "content_type": record.recorded.content_type,
        "body": base64.b64encode(record.recorded.body).decode("ascii"),
    }
    pid = key.uuid
    if state.config.rules.pid_from_command:
        try:
            pid = json.loads(record.recorded.body.decode("utf-8")).get("id", pid)
        except (ValueError, AttributeError):
            pass
    state, process, effects = stop_tool_call_process(state, pid, key.chat_id, threshold_ms, now_ms)
    if process is not None:
        out["process"] = process
    reply = _json_response(req, 200, out, _run_age_header(now_ms, record.created_at_ms))
    return state, effects + [reply]


def stop_tool_call_process(
    state: AgentState, pid: str, chat_id: str, threshold_ms: int, now_ms: int
) -> tuple[AgentState, dict | None, Effects]:
    """``ProcessStopper.StopToolCallProcess`` (rule 6). Returns the process state after
    the stop attempt, or None when no process has that ID."""
    if state.config.rules.pid_from_command:
        # Planted bug: the process ID came from the command, so it is looked up as it is,
        # without the chat; another chat's process may have taken that ID over.
        proc = state.processes.get(pid)
        if proc is None:
            return state, None, []
    else:
        proc = state.processes.get(pid)
        if proc is None or proc.chat_id != chat_id:
            return state, None, []
    effects: Effects = []
    run_age_ms = now_ms - proc.started_at_ms
    below = run_age_ms <= threshold_ms if state.config.rules.stop_rule_inclusive else run_age_ms < threshold_ms
    if proc.running and threshold_ms > 0 and below:
        state, effects = _kill(state, pid, "cancel", now_ms)
        proc = state.processes[pid]
    elif proc.running:
        effects.append(note("left_running", pid=pid, run_age_ms=run_age_ms, threshold_ms=threshold_ms))
    value = {
        "running": proc.running,
        "canceled": proc.canceled,
        "output": proc.output,
        "exit_code": proc.exit_code,
        "run_age_ms": run_age_ms,
    }
    return state, value, effects


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
