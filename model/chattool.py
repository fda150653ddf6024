"""chatd's tool layer for execute, edit_files and write_file (CODAGT-757 design B).

Theory of operation
-------------------
This module is the Python twin of chatd's ``chattool`` package as design B has it
(chatd-contract.md sections 3.2 step 3, 4 and 5; the Go files named there: toolcall.go,
execute.go, interrupt.go, filetoolcall.go). It knows nothing about tasks, attempts,
replicas or the database: the task layer (model/chatd.py) dials the agent, creates one
``CallState`` per tool call and feeds it answers and timer firings, and commits
``CallState.result``. Everything here is a pure function of its arguments; time enters as
the replica's own clock reading in integer milliseconds. Every duration this layer waits
for comes from the ``timing`` (model/timing.py) the task passes to ``begin_call``,
``begin_cancel`` and ``select_cancels`` and ``CallState`` keeps; the durations named below
are its defaults (the reference values), which a scaled run replaces.

Rule 1 (identity, 4.1). ``ToolCallAge`` is measured from database timestamps at the read
        plus the replica's monotonic time since then, never negative; its zero value
        reports 0. Tool call headers are built from it immediately before each start,
        edit, write or cancel request; output reads never carry them.
Rule 2 (one request at a time). A call has at most one request in flight
        (``pending_req_id``). An answer for any other request ID, and a timer whose name
        is not currently armed, is stale and ignored. Request IDs and timer names start
        with the caller's ``req_prefix`` and carry a per-call sequence number, so several
        calls share a replica and an old timer can never be mistaken for a new one.
Rule 3 (agent answer timeout, 4.5). Every start, edit, write and cancel request waits at
        most ``timing.agent_answer_timeout_ms`` (1 min) for its answer; output reads
        never do. A foreground start also ends at the execute timeout; when both are
        equal the execute timeout wins (so the result is "could not be reached", 7.17).
        The timer exists only in the layer ``DESIGN_B`` (``ToolLayer``): before the
        stack (``BEFORE_STACK``) a start, edit or write waits on its command context
        (a foreground start: the execute timeout) or on the attempt (15 min).
Rule 4 (classifier, 5.1). A failed request is classified in this order: NoAnswer (our
        answer timer fired), Refused(code) (a coded 409), Response (any other HTTP
        error, 404 included), Unreachable (a transport failure or a deadline inside the
        transport), Unreadable (a 2xx answer we cannot decode). ``AGENT_ERROR_OUTCOMES``
        maps the class to a result kind or to "fall back" (AgentErrorText's ok=false).
Rule 5 (foreground execute, 4.2 step 4, 4.3). A start answer whose ID is the tool call
        UUID is a new agent: wait ``timeout - max(run_age, 0)`` from the answer with
        blocking reads (the agent caps each at its output wait cap, 5 min; a read that
        returns "running" is simply repeated). Any other ID is an old agent: the legacy
        wait runs until the execute timeout counted from this attempt's start. When the
        wait deadline passes or a read fails, one snapshot (``timing.snapshot_timeout_ms``)
        decides: exited -> completed; running past the deadline -> timed out with
        ``background_process_id``; the snapshot itself failing past the deadline ->
        unknown "not received" (never "timed out"; C6, Q9c). Before the stack
        (``BEFORE_STACK``) that last case said "command timed out after <timeout>;
        failed to get output: <err>", kind ``timed_out``.
Rule 6 (C4). When the attempt's context ends the task calls ``abort``: we stop waiting
        and send nothing more; the only effects are ``CancelTimer``.
Rule 7 (interrupt, 3.2 step 3, 5.3, 5.4). ``interrupted_call`` decides whether a call gets
        a cancel and its stop run age (effective timeout for a foreground execute, 0
        otherwise). Calls sharing a provider ID get one cancel only when every copy has
        ``same_cancel``. A cancel is sent once, never resent, and bounded by Rule 3; its
        answer maps to a result through ``_EXECUTE_CANCEL_RULES`` / ``_FILE_CANCEL_RULES``.
Rule 8 (results). ``Result.kind`` is what checkers read; ``content`` is the text the
        model sees (ExecuteResult JSON in Go's field order, or the file tools' JSON, or a
        plain error text), ``is_error`` whether chatd stores it as an error result.
        Unknown results carry a ``reason`` from ``UNKNOWN_REASONS``.
Rule 9 (context budget, 1.3 step 6, 3.2 step 3.7). Before the task commits a result it
        is cut to ``tool_result_byte_budget`` of the chat model's context window
        (``fit_result_to_context``: chatloop's head-and-tail cut with a "Coder truncated"
        marker); a cut non-error result is stored as ``{"output": <cut text>}``, as
        chatprompt stores text that is not JSON. The cut never changes ``kind``.

Where the reference (chatd-contract.md, code facts) and the design differ we follow the
reference:
- The agent answer timeout also bounds write_file requests (4.5 and 5.4); the newest
  writefile.go seen does not wrap its request, the reference says it does.
- A live or recorded HTTP error of a file tool reads ``unexpected status code N: <message>``
  (5.4's write example), not the newer message-only text.
- Stale / canceled refusals of a file request read ``<action>: <err>`` (5.4).
- The interrupt stop age uses the execute default (10 s) when the call has no timeout
  argument (section 8 item 5); the timing's execute default is the only default here
  (no separate ``ExecuteOptions.DefaultTimeout``).

Layers (``ToolLayer``). ``DESIGN_B`` is the tool layer after the CODAGT-757 stack;
``BEFORE_STACK`` is the chattool before it (codagt-757-design.md section 9, PRs 4-6), as
the legacy branches of the Go execute tool have it (``executeBackground`` /
``executeForeground`` without an identity, ``waitForProcess``; coder/coder
``coderd/x/chatd/chattool/execute.go``): no agent answer timer and the pre-Q9c text for a
snapshot that fails past the deadline. The identity-dependent behaviour of the stack
(headers, attach by run age, the classifier's unknown texts) needs an ``identity``, which
a chatd before the stack never builds (model/chatd.py passes ``identity=None``).

Model abstractions (recorded so a reader can check them against the Go code):
- ``send_identity=False`` with an identity models a chatd that knows the identity but sends
  no tool call headers: the agent picks its own process ID, so execute takes the legacy
  wait, while error texts still use the identity's wording. ``identity=None`` is the
  pre-CODAGT-757 chatd (legacy behavior throughout).
- A call's result is only ever built while its attempt is alive (the task calls ``abort``
  otherwise), so "the tool call's context ended" legacy texts never reach a result here.
- An execute timeout that is zero or negative is a command context that has already
  expired: Go's client fails the start before sending it ("context deadline exceeded",
  classified Unreachable), so we send nothing.
- A 2xx answer that lacks a field we need (start ``id``, output ``running``, cancel
  ``started``) is Unreadable. Go would decode zero values; the stricter reading keeps a
  malformed agent from passing as "exited with code 0".
- Error texts of transport failures are ``<Op> "http://agent<path>": <reason>``, like Go's
  ``*url.Error``; exact byte equality with Go is not a goal, the kinds are.
- A read that fails before the deadline, followed by a failed snapshot, gives kind
  ``failed`` (Go's text "get process output: ...; use process_output with ID ... to
  retry" claims no outcome).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Sequence
from urllib.parse import urlencode

from . import identity as ident
from . import sdk
from .core import (
    CachedRepr,
    replace,
    CancelTimer, Effect, Headers, Request, Response, Send, SetTimer, TransportError, json_body, note,
)
from .timing import DEFAULT_TIMING, Timing

# ---------------------------------------------------------------------------
# Constants (chatd-contract.md appendix, design B)
# ---------------------------------------------------------------------------

# The reference durations, for readers and tests: the code reads the call's ``timing``
# (model/timing.py), whose defaults these are.
AGENT_ANSWER_TIMEOUT_MS = DEFAULT_TIMING.agent_answer_timeout_ms  # 1 min
EXECUTE_DEFAULT_TIMEOUT_MS = DEFAULT_TIMING.execute_default_timeout_ms  # 10 s
SNAPSHOT_TIMEOUT_MS = DEFAULT_TIMING.snapshot_timeout_ms  # 30 s
# Enforced by the agent, not here: why one blocking read can return "running" early.
AGENT_OUTPUT_WAIT_CAP_MS = DEFAULT_TIMING.agent_output_wait_cap_ms  # 5 min
MAX_OUTPUT_TO_MODEL_BYTES = 32 * 1024

AGENT_NODE = "agent"
# Only used inside error texts, where Go prints the request URL.
AGENT_URL = "http://agent"

EXECUTE = "execute"
EDIT_FILES = "edit_files"
WRITE_FILE = "write_file"
FILE_TOOLS = (EDIT_FILES, WRITE_FILE)

START_PATH = "/api/v0/processes/start"
EDIT_PATH = "/api/v0/edit-files"
WRITE_PATH = "/api/v0/write-file"

GENERIC_INTERRUPTED_TEXT = "tool call was interrupted before it produced a result"


@dataclass(frozen=True, repr=False)
class ToolLayer(CachedRepr):
    """Which chattool a replica runs: the two behaviours of the CODAGT-757 stack that
    do not follow from sending an identity (codagt-757-design.md section 9, Q9).

    ``agent_answer_timeout``: PR 4 #29965 (starts, Q9b: "replaced by the agent answer
    timeout"), PR 6 #29978 (edits and writes), PR 5 #29976 (cancels, which only design B
    sends). Without it a start, edit or write waits on its own context: the execute
    timeout for a foreground start (``cmdCtx``), the attempt for the rest.
    ``snapshot_failure_unknown``: PR 4 (Q9c, C6): a snapshot that fails past the execute
    deadline reports unknown "not received"; before, "command timed out after <timeout>;
    failed to get output: <err>" with ``background_process_id`` (Go's legacy
    ``waitForProcess``).
    """

    name: str
    agent_answer_timeout: bool
    snapshot_failure_unknown: bool


# Go's tools that opt into serial execution (``SerialToolCalls() bool { return true }``):
# the box tools and find_tools (coder/coder ``coderd/x/chatd/chattool``). The model runs
# none of them against the agent; chatd's rules name the serial tools (model/chatd.py).
SERIAL_TOOLS: tuple[str, ...] = ("box_attach_file", "box_read_file", "box_run", "box_write_file", "find_tools")

DESIGN_B = ToolLayer("design-b", agent_answer_timeout=True, snapshot_failure_unknown=True)
BEFORE_STACK = ToolLayer("before-stack", agent_answer_timeout=False, snapshot_failure_unknown=False)

# Dial failures the task layer reports to ``unreachable_result`` / ``dial_failed_result``.
DIAL_NO_WORKSPACE = "no_workspace"
DIAL_DELETED = "deleted"
DIAL_NO_AGENT = "no_agent"
# The texts of chatd's dial errors. No agent mentions start_workspace (5.4: a stopped
# workspace keeps its disk, so the model is told how to bring it back).
DIAL_ERROR_TEXTS = {
    DIAL_NO_WORKSPACE: "get workspace connection: chat has no workspace",
    DIAL_DELETED: "get workspace connection: workspace was deleted",
    DIAL_NO_AGENT: "get workspace connection: workspace has no running agent; start it with start_workspace",
    "timeout": "dial workspace agent: context deadline exceeded",
    "refused": "dial workspace agent: connection refused",
}
# Processes do not outlive the agent: none of these can leave a command running.
_NO_AGENT_DIAL_ERRORS = (DIAL_NO_WORKSPACE, DIAL_DELETED, DIAL_NO_AGENT)
# A stopped workspace keeps its disk, so only these settle a file change (5.4).
_FILE_CHANGE_LOST_DIAL_ERRORS = (DIAL_NO_WORKSPACE, DIAL_DELETED)


def dial_error_text(kind: str) -> str:
    return DIAL_ERROR_TEXTS.get(kind, f"dial workspace agent: {kind}")


# ---------------------------------------------------------------------------
# Go-style durations
# ---------------------------------------------------------------------------

_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_DURATION_NS = 2**63 - 1


class DurationError(ValueError):
    """``time.ParseDuration`` rejected the text; the message is Go's."""


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


def parse_duration_ms(text: str) -> int:
    """Go's ``time.ParseDuration`` ("1h30m", "10s", "250ms", "-1.5h"), in whole
    milliseconds truncated toward zero like ``Duration.Milliseconds()``."""
    quoted = _go_quote(text)
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if rest == "":
        raise DurationError(f"time: invalid duration {quoted}")
    total_ns = 0
    while rest:
        i = 0
        while i < len(rest) and _is_digit(rest[i]):
            i += 1
        whole, rest = rest[:i], rest[i:]
        fraction = ""
        had_dot = rest[:1] == "."
        if had_dot:
            rest = rest[1:]
            j = 0
            while j < len(rest) and _is_digit(rest[j]):
                j += 1
            fraction, rest = rest[:j], rest[j:]
        if not whole and not fraction:
            raise DurationError(f"time: invalid duration {quoted}")
        k = 0
        while k < len(rest) and rest[k] != "." and not _is_digit(rest[k]):
            k += 1
        unit, rest = rest[:k], rest[k:]
        if not unit:
            raise DurationError(f"time: missing unit in duration {quoted}")
        if unit not in _UNIT_NS:
            raise DurationError(f"time: unknown unit {_go_quote(unit)} in duration {quoted}")
        scale = _UNIT_NS[unit]
        value_ns = int(whole or "0") * scale
        if fraction:
            value_ns += int(fraction) * scale // 10 ** len(fraction)
        total_ns += value_ns
        if total_ns > _MAX_DURATION_NS:
            raise DurationError(f"time: invalid duration {quoted}")
    whole_ms = total_ns // 1_000_000
    return -whole_ms if negative else whole_ms


def format_duration_ms(duration_ms: int) -> str:
    """Go's ``Duration.String`` for whole milliseconds: "10m0s", "1m0s", "2s", "1.5s",
    "250ms", "2h0m0s", "0s"."""
    if duration_ms == 0:
        return "0s"
    sign = "-" if duration_ms < 0 else ""
    ms = abs(duration_ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rem = divmod(ms, 3_600_000)
    minutes, rem = divmod(rem, 60_000)
    seconds, millis = divmod(rem, 1000)
    sec_text = str(seconds) + ("." + f"{millis:03d}".rstrip("0") if millis else "") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{sec_text}"
    if minutes:
        return f"{sign}{minutes}m{sec_text}"
    return sign + sec_text


# ---------------------------------------------------------------------------
# Identity and age (4.1)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallAge:
    """Time since the tool call was committed, without comparing clocks.

    ``at_read_ms`` = db_now - created_at, both from the database clock; ``read_at_ms`` is
    the replica's own clock at that read. ``read_at_ms=None`` is Go's zero value (no
    clock), which reports 0.
    """

    at_read_ms: int = 0
    read_at_ms: int | None = None

    @classmethod
    def from_db(cls, db_now_ms: int, committed_at_ms: int, read_at_ms: int) -> "ToolCallAge":
        return cls(db_now_ms - committed_at_ms, read_at_ms)

    def now(self, now_ms: int) -> int:
        if self.read_at_ms is None:
            return 0
        return max(self.at_read_ms + (now_ms - self.read_at_ms), 0)


@dataclass(frozen=True)
class Identity:
    """``ToolCallIdentity``: the chat, the assistant message holding the call, the
    provider tool call ID, and the age shared by one attempt's calls."""

    chat_id: str
    message_id: int
    tool_call_id: str
    age: ToolCallAge = ToolCallAge()

    @property
    def uuid(self) -> str:
        return ident.tool_call_uuid(self.chat_id, self.message_id, self.tool_call_id)


@dataclass(frozen=True, repr=False)
class ToolCall(CachedRepr):
    """One tool call of the assistant message, as committed: provider ID, tool name and
    the raw JSON arguments the model produced."""

    provider_id: str
    tool: str
    args_json: str


# ---------------------------------------------------------------------------
# execute arguments
# ---------------------------------------------------------------------------


class ArgsError(ValueError):
    """The arguments do not decode into the tool's argument struct."""


class InvalidTimeout(ValueError):
    """The timeout argument is not a Go duration; the message is the tool's text."""


@dataclass(frozen=True)
class ExecuteArgs:
    command: str = ""
    timeout: str | None = None
    run_in_background: bool | None = None
    workdir: str | None = None


# Go's json.Unmarshal into ExecuteArgs: the JSON type each known field must have. A null
# leaves a field at its zero value; unknown fields are ignored.
_EXECUTE_ARG_TYPES: dict[str, tuple[type, str]] = {
    "command": (str, "string"),
    "timeout": (str, "string"),
    "run_in_background": (bool, "bool"),
    "workdir": (str, "string"),
    "model_intent": (str, "string"),
}


def _json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _loads_go(text: str) -> Any:
    """json.loads without NaN/Infinity, which Go's decoder rejects."""

    def reject(name: str):
        raise ValueError(f"invalid character {name!r} looking for beginning of value")

    return json.loads(text, parse_constant=reject)


def parse_execute_args(args_json: str) -> ExecuteArgs:
    try:
        value = _loads_go(args_json)
    except ValueError as err:
        raise ArgsError(f"invalid parameters: {err}") from None
    if value is None:
        return ExecuteArgs()
    if not isinstance(value, dict):
        raise ArgsError(f"invalid parameters: json: cannot unmarshal {_json_type_name(value)} "
                        "into Go value of type chattool.ExecuteArgs")
    fields: dict[str, Any] = {}
    for name, (py_type, go_type) in _EXECUTE_ARG_TYPES.items():
        if name not in value or value[name] is None:
            continue
        item = value[name]
        if not isinstance(item, py_type) or (py_type is not bool and isinstance(item, bool)):
            raise ArgsError(
                f"invalid parameters: json: cannot unmarshal {_json_type_name(item)} into Go struct field "
                f"ExecuteArgs.{name} of type {go_type}"
            )
        fields[name] = item
    fields.pop("model_intent", None)
    return ExecuteArgs(**fields)


def strip_trailing_ampersand(command: str) -> tuple[str, bool]:
    """A shell-style trailing "&" (not "&&" or "|&"): the command without it, and whether
    it had one. Models sometimes write "cmd &" instead of run_in_background."""
    trimmed = command.strip()
    if not trimmed.endswith("&") or trimmed.endswith("&&") or trimmed.endswith("|&"):
        return command, False
    return trimmed[:-1].strip(), True


def runs_in_background(args: ExecuteArgs) -> bool:
    if args.run_in_background:
        return True
    return strip_trailing_ampersand(args.command)[1]


def call_target(call: ToolCall) -> str:
    """What a call acts on, as the agent will see it: an execute call's command (without
    the trailing "&" that only means background), a file tool's (first) path; "" when
    the arguments cannot be read. Used to tell which call a header-less request serves."""
    try:
        value = json.loads(call.args_json)
    except ValueError:
        return ""
    if not isinstance(value, dict):
        return ""
    if call.tool == EXECUTE:
        return strip_trailing_ampersand(str(value.get("command", "")))[0].strip()
    files = value.get("files")
    if isinstance(files, list) and files and isinstance(files[0], dict):
        return str(files[0].get("path", ""))
    return str(value.get("path", ""))


def effective_timeout_ms(args: ExecuteArgs, timing: Timing = DEFAULT_TIMING) -> int:
    """The timeout argument, or the timing's execute default (10 s); no maximum in design B."""
    if args.timeout is None:
        return timing.execute_default_timeout_ms
    try:
        return parse_duration_ms(args.timeout)
    except DurationError as err:
        raise InvalidTimeout(f"invalid timeout {_go_quote(args.timeout)}: {err}") from None


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

EXECUTE_KINDS = (
    "completed", "timed_out", "background_started", "canceled", "not_run", "unknown",
    "interrupted_generic", "failed",
)
FILE_KINDS = ("applied", "not_applied", "unknown", "failed", "interrupted_generic")
UNKNOWN_REASONS = ("agent_restarted", "unreachable", "no_answer", "unreadable", "not_received", "no_process")


@dataclass(frozen=True)
class Result:
    """What chatd commits for one tool call. Checkers read ``kind`` (and ``reason``,
    ``process_id``, ``exit_code``), never ``content``."""

    kind: str
    is_error: bool
    content: str
    exit_code: int | None = None
    process_id: str | None = None
    reason: str | None = None
    wall_duration_ms: int | None = None


def go_json(value: Any) -> str:
    """Go's json.Marshal text: no spaces, UTF-8 kept, and <, >, & escaped as \\u003c...
    Dict order is kept, so callers build dicts in Go's struct field order."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def truncate_output(output: str) -> str:
    """``truncateOutput``: at most 32 KB, cut on a UTF-8 boundary."""
    raw = output.encode("utf-8", errors="surrogateescape")
    if len(raw) <= MAX_OUTPUT_TO_MODEL_BYTES:
        return output
    return raw[:MAX_OUTPUT_TO_MODEL_BYTES].decode("utf-8", errors="ignore")


# --- per-result context budget (chatd-contract.md 1.3 step 6, 3.2 step 3.7) ----------
#
# Every committed tool result, live or from an interrupt's cancel answer, is cut to a
# byte budget derived from the chat model's context window, so one oversized result (a
# megabyte diff, a long output) cannot overflow the next prompt on its own. The rule is
# chatloop's tooltruncate.go (coder/coder coderd/x/chatd/chatloop): at most a third of
# the window at ~3 bytes per token, never below 16 KB, 64 KB when the window is unknown;
# the cut keeps a head (2/3) and a tail (1/3) around a marker that says how many bytes
# went. It sits on top of execute's own 32 KB output cap (``truncate_output``).
TOOL_RESULT_CONTEXT_DIVISOR = 3  # a result may take at most 1/3 of the window
BYTES_PER_TOKEN_ESTIMATE = 3  # conservative: dense JSON/log output runs below 4 bytes/token
MIN_TOOL_RESULT_BYTES = 16 * 1024  # the floor, so small windows still see useful output
DEFAULT_TOOL_RESULT_BYTES = 64 * 1024  # the window is unknown (context limit <= 0)
TRUNCATION_MARKER_RESERVE_BYTES = 256  # room kept for the marker: the result never exceeds the budget
_MAX_GO_INT = 2**63 - 1


def tool_result_byte_budget(context_limit_tokens: int) -> int:
    """``toolResultByteBudget``: the most bytes one tool result may put into the prompt
    for a model whose context window is ``context_limit_tokens`` (<= 0: unknown)."""
    if context_limit_tokens <= 0:
        return DEFAULT_TOOL_RESULT_BYTES
    budget_bytes = context_limit_tokens // TOOL_RESULT_CONTEXT_DIVISOR * BYTES_PER_TOKEN_ESTIMATE
    if budget_bytes < MIN_TOOL_RESULT_BYTES:
        return MIN_TOOL_RESULT_BYTES
    return min(budget_bytes, _MAX_GO_INT)


def _utf8_valid_part(raw: bytes) -> str:
    """The bytes as text with any partial rune at a cut dropped (Go's ToValidUTF8(s, ""))."""
    return raw.decode("utf-8", errors="ignore")


def truncate_tool_result_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """``truncateToolResultText``: ``(text, False)`` when it fits (or ``max_bytes <= 0``);
    otherwise at most ``max_bytes`` of valid UTF-8: a head and a tail around the
    "Coder truncated N bytes" marker, or a plain head cut when the budget is too small
    to hold the marker and both ends."""
    raw = text.encode("utf-8", errors="surrogateescape")
    if max_bytes <= 0 or len(raw) <= max_bytes:
        return text, False
    if max_bytes <= TRUNCATION_MARKER_RESERVE_BYTES * 2:
        return _utf8_valid_part(raw[:max_bytes]), True
    avail = max_bytes - TRUNCATION_MARKER_RESERVE_BYTES
    head_bytes = avail * 2 // 3
    tail_bytes = avail - head_bytes
    head = _utf8_valid_part(raw[:head_bytes])
    tail = _utf8_valid_part(raw[len(raw) - tail_bytes:])
    removed = len(raw) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    marker = (f"\n\n[... Coder truncated {removed} bytes to fit the model context; narrow the query "
              "or read a specific file or range for the full output ...]\n\n")
    return head + marker + tail, True


def _is_json(text: str) -> bool:
    try:
        _loads_go(text)
    except ValueError:
        return False
    return True


def fit_result_to_context(result: "Result", max_bytes: int) -> "Result":
    """A committed result cut to the per-result budget, stored the way chatd stores a tool
    response (chatprompt's MarshalToolResultContent): a non-error text that is no longer
    JSON after the cut is stored as ``{"output": <cut text>}``; an error result keeps its
    (cut) text. ``kind`` and the other fields are unchanged: cutting never changes what
    the call did. A result that fits is returned as it is."""
    cut, truncated = truncate_tool_result_text(result.content, max_bytes)
    if not truncated:
        return result
    if not result.is_error and not _is_json(cut):
        cut = go_json({"output": cut})
    return replace(result, content=cut)


def execute_result_json(
    *,
    success: bool = False,
    output: str = "",
    exit_code: int = 0,
    wall_duration_ms: int = 0,
    error: str = "",
    note_text: str = "",
    background_process_id: str = "",
    backgrounded: bool = False,
) -> str:
    """``ExecuteResult`` marshaled in Go's field order, omitempty fields left out."""
    value: dict[str, Any] = {"success": success}
    if output:
        value["output"] = truncate_output(output)
    value["exit_code"] = exit_code
    value["wall_duration_ms"] = wall_duration_ms
    if error:
        value["error"] = error
    if note_text:
        value["note"] = note_text
    if background_process_id:
        value["background_process_id"] = background_process_id
    if backgrounded:
        value["backgrounded"] = True
    return go_json(value)


def generic_result() -> Result:
    """The result every interrupted call had before CODAGT-757 (3.3), and the fallback."""
    return Result("interrupted_generic", True, go_json({"error": GENERIC_INTERRUPTED_TEXT}))


def _text_error(kind: str, text: str, **fields: Any) -> Result:
    return Result(kind, True, text, **fields)


def _background_started(process_id: str) -> Result:
    return Result(
        "background_started", False,
        execute_result_json(success=True, background_process_id=process_id, backgrounded=True),
        process_id=process_id,
    )


# ---------------------------------------------------------------------------
# Classifier and error texts (5.1)
# ---------------------------------------------------------------------------


class ErrorClass(str, Enum):
    NO_ANSWER = "NoAnswer"
    REFUSED = "Refused"
    RESPONSE = "Response"
    UNREACHABLE = "Unreachable"
    UNREADABLE = "Unreadable"


@dataclass(frozen=True)
class AgentError:
    """A failed agent request: its class, refusal code, and Go's ``err.Error()`` text.
    ``sentinel`` is the wrapped sentinel error's text that AgentErrorText words an unknown
    reason with: ErrAgentAnswerTimeout's for NoAnswer, else empty."""

    cls: ErrorClass
    text: str
    code: str = ""
    sentinel: str = ""


@dataclass(frozen=True)
class NoAnswer:
    """Our own agent answer timer ended the request (``ErrAgentAnswerTimeout``) after
    ``after_ms``, the answer timeout of the call's timing."""

    op: str  # "Post" / "Get": Go's url.Error Op
    url: str
    after_ms: int = AGENT_ANSWER_TIMEOUT_MS


@dataclass(frozen=True)
class Deadline:
    """A context deadline ended the request inside the transport (a ``*url.Error``)."""

    op: str
    url: str


@dataclass(frozen=True)
class Undecodable:
    """A 2xx answer whose body could not be read."""

    detail: str


def no_answer_reason(answer_timeout_ms: int) -> str:
    """ErrAgentAnswerTimeout's text. Go formats it from the answer timeout constant, so a
    scaled timing prints its own timeout ("... within 17ms"), as a Go build with that
    constant would."""
    return f"the workspace agent did not answer within {format_duration_ms(answer_timeout_ms)}"


NO_ANSWER_REASON = no_answer_reason(AGENT_ANSWER_TIMEOUT_MS)  # the reference text, "... 1m0s"
AGENT_RESTARTED_REASON = "the workspace agent restarted after this tool call"
NO_PROCESS_REASON = "the workspace agent reported no process for this tool call"


def _is_2xx(status: int) -> bool:
    return 200 <= status < 300


def _is_refusal(failure: Any) -> bool:
    return isinstance(failure, Response) and ident.read_tool_call_error(failure.status, failure.body) is not None


# Section 5.1 ClassifyAgentError, checked top to bottom; the first matching row wins.
CLASSIFIER: tuple[tuple[str, Callable[[Any], bool], ErrorClass], ...] = (
    ("our agent answer timer fired", lambda f: isinstance(f, NoAnswer), ErrorClass.NO_ANSWER),
    ("409 with a known code", _is_refusal, ErrorClass.REFUSED),
    ("any other HTTP error answer the SDK reads as a *codersdk.Error, 404 included",
     lambda f: isinstance(f, Response) and not _is_2xx(f.status) and _is_sdk_error(f), ErrorClass.RESPONSE),
    ("transport failure or a deadline inside the transport",
     lambda f: isinstance(f, (TransportError, Deadline)), ErrorClass.UNREACHABLE),
    ("anything else: an answer that could not be read", lambda f: True, ErrorClass.UNREADABLE),
)


def _is_sdk_error(failure: Response) -> bool:
    """Whether ``codersdk.ReadBodyAsError`` makes a ``*codersdk.Error`` of this answer; a
    JSON body it cannot decode is a plain ``decode body`` error instead (model/sdk.py), which
    ClassifyAgentError puts under "anything else"."""
    return isinstance(sdk.read_body_as_error(failure.status, failure.content_type, failure.body), sdk.SDKError)


def sdk_error_text(status: int, content_type: str, body: bytes) -> str:
    """``codersdk.ReadBodyAsError(...).Error()`` without method and URL (model/sdk.py has
    the rules: a JSON body gives its message and detail, or "response has no message" with
    the body; an empty JSON body "empty response body"; anything else names the content
    type and quotes the body, "no response body" when empty)."""
    return sdk.read_body_as_error(status, content_type, body).text()


def classify(failure: Any, op: str = "", url: str = "") -> AgentError:
    """Classify one failed request (Rule 4). ``failure`` is a non-2xx ``Response``, a
    ``TransportError``, a ``NoAnswer``, a ``Deadline`` or an ``Undecodable``; ``op`` and
    ``url`` name the request in a transport error's text, as Go's ``*url.Error`` does."""
    cls = next(c for _, match, c in CLASSIFIER if match(failure))
    if cls is ErrorClass.NO_ANSWER:
        # AwaitAgentAnswer wraps the request's own error with ErrAgentAnswerTimeout.
        reason = no_answer_reason(failure.after_ms)
        return AgentError(cls, f'{failure.op} "{failure.url}": context canceled: {reason}', sentinel=reason)
    if cls is ErrorClass.REFUSED:
        refusal = ident.read_tool_call_error(failure.status, failure.body)
        assert refusal is not None
        return AgentError(cls, refusal.text(), refusal.code)
    if cls is ErrorClass.RESPONSE:
        return AgentError(cls, sdk_error_text(failure.status, failure.content_type, failure.body))
    if isinstance(failure, Deadline):
        return AgentError(cls, f'{failure.op} "{failure.url}": context deadline exceeded')
    if isinstance(failure, TransportError):
        return AgentError(cls, f'{op} "{url}": {failure.reason}' if url else failure.reason)
    if isinstance(failure, Response):
        # An error answer whose JSON body ReadBodyAsError could not decode ("decode body").
        return AgentError(cls, sdk.read_body_as_error(failure.status, failure.content_type, failure.body).text())
    return AgentError(cls, failure.detail if isinstance(failure, Undecodable) else str(failure))


def unknown_outcome(reason: str, effect: str, check: str) -> str:
    """``UnknownOutcome``: ``outcome unknown: <reason>, so <effect>. <check>``."""
    return f"outcome unknown: {reason}, so {effect}. {check}"


def _reason_text(reason: str, err: AgentError) -> str:
    texts = {
        "agent_restarted": AGENT_RESTARTED_REASON,
        "unreachable": f"the workspace agent could not be reached ({err.text})",
        "unreadable": f"the workspace agent's answer could not be read ({err.text})",
        "no_answer": err.sentinel,
    }
    return texts[reason]


@dataclass(frozen=True)
class Words:
    """``AgentErrorWords``: how one tool words its results."""

    action: str = ""
    existing: str = ""
    effect: str = ""
    check: str = ""
    restarted_effect: str = ""
    restarted_check: str = ""


# Section 5.1 AgentErrorText: (class, refusal code) -> (result kind, unknown reason).
# None means ok=false: the caller falls back (legacy text in generation, generic on
# interrupt), because only a stale attempt whose commit fails the fence sees it, or the
# agent answered with an ordinary HTTP error.
AGENT_ERROR_OUTCOMES: dict[tuple[ErrorClass, str], tuple[str, str] | None] = {
    (ErrorClass.REFUSED, ident.AGENT_STARTED_AFTER_TOOL_CALL): ("unknown", "agent_restarted"),
    (ErrorClass.REFUSED, ident.INPUT_MISMATCH): ("failed", ""),
    (ErrorClass.REFUSED, ident.STALE_TOOL_CALL): None,
    (ErrorClass.REFUSED, ident.TOOL_CALL_CANCELED): None,
    (ErrorClass.RESPONSE, ""): None,
    (ErrorClass.UNREACHABLE, ""): ("unknown", "unreachable"),
    (ErrorClass.UNREADABLE, ""): ("unknown", "unreadable"),
    (ErrorClass.NO_ANSWER, ""): ("unknown", "no_answer"),
}


def agent_error_text(err: AgentError, words: Words) -> tuple[str, str, str] | None:
    """``(kind, reason, text)`` for a classified error, or None to fall back."""
    outcome = AGENT_ERROR_OUTCOMES[(err.cls, err.code)]
    if outcome is None:
        return None
    kind, reason = outcome
    if reason == "agent_restarted":
        return kind, reason, unknown_outcome(
            AGENT_RESTARTED_REASON, words.restarted_effect or words.effect, words.restarted_check or words.check
        )
    if kind == "failed":
        return kind, reason, (
            f"{words.action}: this request changed nothing because {words.existing} already exists "
            f"with a different input: {err.text}"
        )
    return kind, reason, unknown_outcome(_reason_text(reason, err), words.effect, words.check)


# Words of each tool and context (sections 5.2, 5.3, 5.4).
_RESTARTED_COMMAND = "the command may have run before the restart"
_RESTARTED_CHECK = "Check the workspace state before running it again."


def check_process_text(process_id: str) -> str:
    return f"Check it with process_output using process ID {process_id}."


def check_or_signal_text(process_id: str) -> str:
    return f"Check or signal it with process_output or process_signal using process ID {process_id}."


def check_file_text(uuid: str) -> str:
    return f"Check the file before changing it again (tool call {uuid})."


def _start_words(uuid: str, background: bool) -> Words:
    return Words(
        action="start background process" if background else "start process",
        existing=f"a process for this tool call (process ID {uuid})",
        effect="the command may have started",
        check=check_process_text(uuid),
        restarted_effect=_RESTARTED_COMMAND,
        restarted_check=_RESTARTED_CHECK,
    )


def _interrupt_words(uuid: str, background: bool) -> Words:
    return Words(
        effect="the command may be running in the background" if background else "the command may still be running",
        check=check_or_signal_text(uuid),
        restarted_effect=_RESTARTED_COMMAND,
        restarted_check=_RESTARTED_CHECK,
    )


_FILE_TEXTS = {
    # tool: (action, existing record, change)
    EDIT_FILES: ("edit files", "an edit for this tool call", "edit"),
    WRITE_FILE: ("write file", "a write for this tool call", "write"),
}


def _file_words(tool: str, uuid: str) -> Words:
    action, existing, change = _FILE_TEXTS[tool]
    return Words(
        action=action,
        existing=existing,
        effect=f"the {change} may have been applied",
        check=check_file_text(uuid),
        restarted_effect=f"the {change} may have been applied before the restart",
    )


_SH_NOT_FOUND_FRAGMENT = 'exec: "sh": executable file not found'
_SH_NOT_FOUND_GUIDANCE = (
    'The workspace has no POSIX shell (sh) on its PATH. Coder Agents run commands with "sh -c". '
    "On Windows, install sh via Git Bash, MSYS2, or WSL, then restart the workspace to pick up the "
    "updated PATH."
)


def _enrich_start_error(text: str) -> str:
    if _SH_NOT_FOUND_FRAGMENT in text:
        return text + "\n\n" + _SH_NOT_FOUND_GUIDANCE
    return text


# ``fileDumpPatterns``: commands that dump whole files get an advisory note.
_FILE_DUMP_PATTERNS = (
    re.compile(r"^cat\s+"),
    re.compile(r"^(rg|grep)\s+.*--include-all"),
    re.compile(r"^(rg|grep)\s+-l\s+"),
)
_FILE_DUMP_NOTE = "Consider using read_file instead of dumping file contents with shell commands."


def _file_dump_note(command: str) -> str:
    return _FILE_DUMP_NOTE if any(p.search(command) for p in _FILE_DUMP_PATTERNS) else ""


# ---------------------------------------------------------------------------
# Interrupt selection (3.2 step 3)
# ---------------------------------------------------------------------------


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
    """The cancels of one interrupt, in order of first appearance. A provider ID gets one
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


# ---------------------------------------------------------------------------
# Per-call state machine
# ---------------------------------------------------------------------------


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

    @property
    def done(self) -> bool:
        return self.result is not None

    def armed_timers(self) -> tuple[str, ...]:
        return tuple(t for t in (self.answer_timer, self.deadline_timer, self.snapshot_timer) if t is not None)


Step = tuple[CallState, tuple[Effect, ...]]


def _next_name(cs: CallState, kind: str) -> tuple[CallState, str]:
    seq = cs.seq + 1
    return replace(cs, seq=seq), f"{cs.req_prefix}:{kind}{seq}"


def _headers(cs: CallState, now_ms: int, tool_call: bool) -> Headers:
    headers: Headers = ((ident.CHAT_ID_HEADER, cs.chat_id),)
    if tool_call and cs.identity is not None and cs.send_identity:
        id_ = cs.identity
        headers = ident.set_tool_call_headers(headers, id_.message_id, id_.tool_call_id, id_.age.now(now_ms))
    return headers


def _send(cs: CallState, op: str, method: str, path: str, query: str, headers: Headers,
          body: bytes) -> tuple[CallState, Effect]:
    cs, req_id = _next_name(cs, "r")
    url = AGENT_URL + path + (f"?{query}" if query else "")
    request = Request(req_id, cs.src, method, path, query, headers, body)
    cs = replace(cs, pending_req_id=req_id, pending_op=op, pending_method=method.title(), pending_url=url)
    return cs, Send(AGENT_NODE, request)


def _arm(cs: CallState, slot: str, after_ms: int) -> tuple[CallState, list[Effect]]:
    """Arm the timer ``slot`` (answer/deadline/snapshot) under a fresh name, cancelling
    the one it replaces."""
    effects: list[Effect] = []
    old = getattr(cs, slot)
    if old is not None:
        effects.append(CancelTimer(old))
    cs, name = _next_name(cs, slot.replace("_timer", ""))
    effects.append(SetTimer(name, after_ms))
    return replace(cs, **{slot: name}), effects


def _disarm(cs: CallState, slot: str) -> tuple[CallState, list[Effect]]:
    old = getattr(cs, slot)
    if old is None:
        return cs, []
    return replace(cs, **{slot: None}), [CancelTimer(old)]


def _finish(cs: CallState, result: Result, effects: Sequence[Effect] = ()) -> Step:
    out = list(effects) + [CancelTimer(t) for t in cs.armed_timers()]
    out.append(note("chattool_result", provider_id=cs.call.provider_id, tool=cs.call.tool,
                    kind=result.kind, reason=result.reason or ""))
    done = replace(cs, phase=Phase.DONE, result=result, pending_req_id=None, pending_op="",
                   answer_timer=None, deadline_timer=None, snapshot_timer=None)
    return done, tuple(out)


def abort(cs: CallState) -> tuple[Effect, ...]:
    """C4: the attempt's context ended. Stop waiting, send nothing: cancel our timers.
    The task drops the state and commits nothing for this call."""
    return tuple(CancelTimer(t) for t in cs.armed_timers())


def owns(cs: CallState, name_or_req_id: str) -> bool:
    """Whether a timer name or request ID belongs to this call (Rule 2)."""
    return name_or_req_id.startswith(cs.req_prefix + ":")


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
) -> Step:
    """Run ``call`` in a generation attempt whose connection to the agent is live, with
    the durations of ``timing`` (the replica's) and the behaviours of ``layer``."""
    cs = CallState(call=call, src=src, req_prefix=req_prefix, chat_id=chat_id, identity=identity,
                   send_identity=send_identity, timing=timing, layer=layer, started_at_ms=now_ms)
    if call.tool == EXECUTE:
        return _begin_execute(cs, now_ms)
    if call.tool in FILE_TOOLS:
        return _begin_file(cs, now_ms)
    # Tools without tool call headers still run at least once (section 8 item 10); the
    # model gives them no agent contact.
    return _finish(cs, Result("completed", False, "{}"))


def _begin_execute(cs: CallState, now_ms: int) -> Step:
    try:
        args = parse_execute_args(cs.call.args_json)
    except ArgsError as err:
        return _finish(cs, _text_error("failed", str(err)))
    if not args.command:
        return _finish(cs, _text_error("failed", "command is required"))
    background = runs_in_background(args)
    command = args.command
    if not args.run_in_background:
        command = strip_trailing_ampersand(command)[0]
    cs = replace(cs, background=background, command=command)
    if not background:
        try:
            timeout_ms = effective_timeout_ms(args, cs.timing)
        except InvalidTimeout as err:
            return _finish(cs, _text_error("failed", str(err)))
        cs = replace(cs, timeout_ms=timeout_ms, deadline_at_ms=now_ms + timeout_ms)
        if timeout_ms <= 0:
            # The command context has already expired: Go's client fails the start
            # before sending it, as a transport error.
            return _start_failed(cs, classify(Deadline("Post", AGENT_URL + START_PATH)))
    body: dict[str, Any] = {"background": background, "command": command}
    if args.workdir:
        body["workdir"] = args.workdir
    cs, send = _send(cs, "start", "POST", START_PATH, "", _headers(cs, now_ms, True), json_body(body))
    effects: list[Effect] = [send]
    if cs.layer.agent_answer_timeout and (background or cs.timeout_ms > cs.timing.agent_answer_timeout_ms):
        cs, armed = _arm(cs, "answer_timer", cs.timing.agent_answer_timeout_ms)
        effects += armed
    if not background:
        # cmdCtx: ends the start request first when the timeout is short, and is the
        # legacy wait's deadline for an old agent.
        cs, armed = _arm(cs, "deadline_timer", cs.timeout_ms)
        effects += armed
    return replace(cs, phase=Phase.START), tuple(effects)


def _begin_file(cs: CallState, now_ms: int) -> Step:
    try:
        value = _loads_go(cs.call.args_json)
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
    cs, send = _send(cs, op, "POST", path, query, _headers(cs, now_ms, True), body)
    armed: list[Effect] = []
    if cs.layer.agent_answer_timeout:
        cs, armed = _arm(cs, "answer_timer", cs.timing.agent_answer_timeout_ms)
    return replace(cs, phase=Phase.START), (send, *armed)


# --- events ------------------------------------------------------------------


def on_answer(cs: CallState, answer: Response | TransportError, now_ms: int) -> Step:
    """An answer arrived for some request of this replica. Answers to anything but our
    one pending request are stale (Rule 2)."""
    if cs.result is not None or answer.req_id != cs.pending_req_id:
        return cs, ()
    op = cs.pending_op
    cs = replace(cs, pending_req_id=None)
    if isinstance(answer, TransportError) or not _is_2xx(answer.status):
        return _on_failure(cs, op, classify(answer, cs.pending_method, cs.pending_url), now_ms)
    return _ANSWER_HANDLERS[op](cs, answer, now_ms)


def on_timer(cs: CallState, name: str, now_ms: int) -> Step:
    """One of our timers fired. A name that is not armed is a stale firing."""
    if cs.result is not None:
        return cs, ()
    op, method, url = cs.pending_op, cs.pending_method, cs.pending_url
    if name == cs.answer_timer:
        cs = replace(cs, answer_timer=None, pending_req_id=None)
        return _on_failure(cs, op, classify(NoAnswer(method, url, cs.timing.agent_answer_timeout_ms)), now_ms)
    if name == cs.deadline_timer:
        cs = replace(cs, deadline_timer=None, pending_req_id=None)
        if cs.phase is Phase.START:
            return _on_failure(cs, op, classify(Deadline(method, url)), now_ms)
        # The wait deadline: stop the blocking read and look once more.
        err = classify(Deadline(method, url))
        return _begin_snapshot(cs, now_ms, timed_out=True, read_error=err.text)
    if name == cs.snapshot_timer:
        cs = replace(cs, snapshot_timer=None, pending_req_id=None)
        return _on_failure(cs, op, classify(Deadline(method, url)), now_ms)
    return cs, ()


def _on_failure(cs: CallState, op: str, err: AgentError, now_ms: int) -> Step:
    if op == "start":
        return _start_failed(cs, err)
    if op == "wait":
        timed_out = cs.deadline_at_ms is not None and now_ms >= cs.deadline_at_ms
        return _begin_snapshot(cs, now_ms, timed_out=timed_out, read_error=err.text)
    if op == "snapshot":
        return _snapshot_failed(cs, err, now_ms)
    if op in ("edit", "write"):
        return _file_failed(cs, err)
    if op == "cancel":
        return _cancel_failed(cs, err)
    raise ValueError(f"unknown pending op {op!r}")


def _decode(answer: Response, required: tuple[tuple[str, type], ...]) -> dict[str, Any]:
    """The JSON object of a 2xx answer with the fields we need, else ``Undecodable``."""
    try:
        value = _loads_go(answer.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        detail = "unexpected EOF" if not answer.body else str(err)
        raise _UndecodableError(f"decode response: {detail}") from None
    if not isinstance(value, dict):
        raise _UndecodableError(f"decode response: json: cannot unmarshal {_json_type_name(value)} into an object")
    for name, py_type in required:
        if not isinstance(value.get(name), py_type):
            raise _UndecodableError(f'decode response: missing or invalid field "{name}"')
    return value


class _UndecodableError(Exception):
    pass


# --- execute: start answer ---------------------------------------------------


def _on_start_answer(cs: CallState, answer: Response, now_ms: int) -> Step:
    try:
        body = _decode(answer, (("id", str),))
    except _UndecodableError as err:
        return _start_failed(cs, classify(Undecodable(str(err))))
    pid = body["id"]
    cs, effects = _disarm(cs, "answer_timer")
    if cs.background:
        return _finish(cs, _background_started(pid), effects)
    if cs.identity is not None and pid == cs.identity.uuid:
        # New agent: the deadline is the process start plus the timeout (4.3), so a later
        # attempt continues the same timeout instead of restarting it.
        run_age_ms = max(ident.parse_run_age_ms(answer.headers), 0)
        remaining_ms = cs.timeout_ms - run_age_ms
        cs = replace(cs, process_id=pid, run_age_ms=run_age_ms, wait_started_at_ms=now_ms, legacy=False,
                     deadline_at_ms=now_ms + remaining_ms)
        cs, disarmed = _disarm(cs, "deadline_timer")
        effects += disarmed
        effects.append(note("chattool_attach", provider_id=cs.call.provider_id, run_age_ms=run_age_ms,
                            remaining_ms=remaining_ms))
        if remaining_ms <= 0:
            # No time left: the wait context has already expired; read once.
            cs, snap = _begin_snapshot(cs, now_ms, timed_out=True,
                                       read_error=classify(Deadline("Get", _output_url(pid, True))).text)
            return cs, tuple(effects) + snap
        cs, armed = _arm(cs, "deadline_timer", remaining_ms)
        effects += armed
    else:
        # Old agent (or no headers sent): the legacy wait until start + timeout.
        cs = replace(cs, process_id=pid, legacy=True)
        effects.append(note("chattool_legacy_wait", provider_id=cs.call.provider_id, process_id=pid))
    cs, send = _send_output_read(cs, now_ms, wait=True)
    return replace(cs, phase=Phase.WAIT), tuple(effects) + (send,)


def _start_failed(cs: CallState, err: AgentError) -> Step:
    """``startErrorResult`` (5.2): an ExecuteResult JSON error, stored as a non-error."""
    words = _start_words(cs.identity.uuid if cs.identity else "", cs.background)
    mapped = agent_error_text(err, words) if cs.identity is not None else None
    if mapped is None:
        text = _enrich_start_error(f"{words.action}: {err.text}")
        return _finish(cs, Result("failed", False, execute_result_json(error=text)))
    kind, reason, text = mapped
    # The restart text names no process: the process, if any, died with the old agent.
    process_id = None if reason == "agent_restarted" else cs.identity.uuid  # type: ignore[union-attr]
    return _finish(cs, Result(kind, False, execute_result_json(error=text), process_id=process_id,
                              reason=reason or None))


# --- execute: waiting for the process ---------------------------------------


def _output_url(pid: str, wait: bool) -> str:
    return f"{AGENT_URL}/api/v0/processes/{ident.path_escape(pid)}/output" + ("?wait=true" if wait else "")


def _send_output_read(cs: CallState, now_ms: int, wait: bool) -> tuple[CallState, Effect]:
    # Output reads never carry tool call headers (4.1).
    path = f"/api/v0/processes/{ident.path_escape(cs.process_id)}/output"
    return _send(cs, "wait" if wait else "snapshot", "GET", path, "wait=true" if wait else "",
                 _headers(cs, now_ms, False), b"")


def _wall_ms(cs: CallState, now_ms: int) -> int:
    if cs.legacy:
        return now_ms - cs.started_at_ms
    return cs.run_age_ms + (now_ms - cs.wait_started_at_ms)


def _process_result(cs: CallState, now_ms: int, kind: str, *, success: bool = False, output: str = "",
                    exit_code: int = -1, error: str = "", reason: str | None = None,
                    background_id: bool = True) -> Result:
    """A foreground result after the start, with wall time and the file-dump note."""
    wall_ms = _wall_ms(cs, now_ms)
    content = execute_result_json(
        success=success, output=output, exit_code=exit_code, wall_duration_ms=wall_ms, error=error,
        note_text=_file_dump_note(cs.command), background_process_id=cs.process_id if background_id else "",
    )
    return Result(kind, False, content, exit_code=exit_code, process_id=cs.process_id, reason=reason,
                  wall_duration_ms=wall_ms)


def _completed(cs: CallState, now_ms: int, output: str, exit_code: int | None) -> Result:
    code = 0 if exit_code is None else exit_code
    return _process_result(cs, now_ms, "completed", success=code == 0, output=output, exit_code=code,
                           background_id=False)


def _timed_out(cs: CallState, now_ms: int, output: str) -> Result:
    return _process_result(cs, now_ms, "timed_out", output=output,
                           error=f"command timed out after {format_duration_ms(cs.timeout_ms)}")


_OUTPUT_FIELDS = (("running", bool),)


def _read_output(answer: Response) -> tuple[bool, int | None, str]:
    body = _decode(answer, _OUTPUT_FIELDS)
    exit_code = body.get("exit_code")
    output = body.get("output")
    return body["running"], exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None, \
        output if isinstance(output, str) else ""


def _on_output_answer(cs: CallState, answer: Response, now_ms: int) -> Step:
    try:
        running, exit_code, output = _read_output(answer)
    except _UndecodableError as err:
        return _on_failure(cs, "wait", classify(Undecodable(str(err))), now_ms)
    if not running:
        return _finish(cs, _completed(cs, now_ms, output, exit_code))
    if cs.deadline_at_ms is not None and now_ms >= cs.deadline_at_ms:
        return _finish(cs, _timed_out(cs, now_ms, output))
    # The agent capped this read (its output wait cap); time is left, so read again.
    cs, send = _send_output_read(cs, now_ms, wait=True)
    return cs, (note("chattool_wait_again", provider_id=cs.call.provider_id), send)


def _begin_snapshot(cs: CallState, now_ms: int, *, timed_out: bool, read_error: str) -> Step:
    """Stop the blocking read and take one snapshot, limited to the timing's snapshot
    timeout (30 s) on the attempt."""
    cs, effects = _disarm(cs, "deadline_timer")
    cs = replace(cs, phase=Phase.SNAPSHOT, timed_out=timed_out, read_error=read_error)
    cs, send = _send_output_read(cs, now_ms, wait=False)
    cs, armed = _arm(cs, "snapshot_timer", cs.timing.snapshot_timeout_ms)
    mark = note("chattool_snapshot", provider_id=cs.call.provider_id, timed_out=timed_out)
    return cs, (*effects, mark, send, *armed)


def _on_snapshot_answer(cs: CallState, answer: Response, now_ms: int) -> Step:
    try:
        running, exit_code, output = _read_output(answer)
    except _UndecodableError as err:
        return _snapshot_failed(cs, classify(Undecodable(str(err))), now_ms)
    if not running:
        # Exited: the real result, even past the deadline ("transparent recovery").
        return _finish(cs, _completed(cs, now_ms, output, exit_code))
    if cs.timed_out:
        return _finish(cs, _timed_out(cs, now_ms, output))
    text = f"get process output: {cs.read_error} (process still running, use process_output to check later)"
    return _finish(cs, _process_result(cs, now_ms, "failed", output=output, error=text))


def _snapshot_failed(cs: CallState, err: AgentError, now_ms: int) -> Step:
    if cs.timed_out and not cs.layer.snapshot_failure_unknown:
        # Before Q9c: the wait hit its deadline, so the result claimed a timeout.
        text = f"command timed out after {format_duration_ms(cs.timeout_ms)}; failed to get output: {err.text}"
        return _finish(cs, _process_result(cs, now_ms, "timed_out", error=text))
    if cs.timed_out:
        # The wait may have been cut after the process exited: never claim a timeout (C6).
        text = unknown_outcome(
            f"the command's result was not received within {format_duration_ms(cs.timeout_ms)} ({err.text})",
            "the command may still be running or may have finished",
            check_process_text(cs.process_id),
        )
        return _finish(cs, _process_result(cs, now_ms, "unknown", error=text, reason="not_received"))
    text = f"get process output: {cs.read_error}; use process_output with ID {cs.process_id} to retry"
    return _finish(cs, _process_result(cs, now_ms, "failed", error=text))


# --- file tools ---------------------------------------------------------------


def _edit_success(body: bytes, status: int, content_type: str) -> Result:
    """``editFilesResult`` for a 2xx answer, live or recorded."""
    try:
        value = _loads_go(body.decode("utf-8"))
        files = value.get("files") if isinstance(value, dict) else None
    except (UnicodeDecodeError, ValueError):
        return _text_error("failed", sdk_error_text(status, content_type, body))
    return Result("applied", False, go_json({"files": files if isinstance(files, list) else [], "ok": True}))


def _write_success() -> Result:
    return Result("applied", False, go_json({"ok": True}))


def _on_file_answer(cs: CallState, answer: Response, now_ms: int) -> Step:
    if cs.call.tool == WRITE_FILE:
        return _finish(cs, _write_success())
    try:
        _decode(answer, ())
    except _UndecodableError as err:
        return _file_failed(cs, classify(Undecodable(str(err))))
    return _finish(cs, _edit_success(answer.body, answer.status, answer.content_type))


def _file_failed(cs: CallState, err: AgentError) -> Step:
    """``fileRequestErrorResult`` with the tool's own fallback (5.4)."""
    action = _FILE_TEXTS[cs.call.tool][0]
    if cs.identity is not None:
        mapped = agent_error_text(err, _file_words(cs.call.tool, cs.identity.uuid))
        if mapped is not None:
            kind, reason, text = mapped
            return _finish(cs, _text_error(kind, text, reason=reason or None))
    text = f"{action}: {err.text}" if err.cls is ErrorClass.REFUSED else err.text
    return _finish(cs, _text_error("failed", text))


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
) -> Step:
    """Send the one cancel of ``call`` (C5): tool call headers, the stop run age, at most
    the timing's answer timeout (1 min) for the answer, never resent. ``plan`` comes from
    ``select_cancels`` with the same timing."""
    timeout_ms = plan.stop_run_age_ms if plan.tool == EXECUTE and not plan.background else 0
    cs = CallState(call=call, src=src, req_prefix=req_prefix, chat_id=chat_id, identity=identity,
                   timing=timing, plan=plan, background=plan.background, timeout_ms=timeout_ms,
                   started_at_ms=now_ms, process_id=identity.uuid)
    path = f"/api/v0/tool-calls/{identity.uuid}/cancel"
    body = json_body({"stop_if_run_age_below_ms": plan.stop_run_age_ms})
    cs, send = _send(cs, "cancel", "POST", path, "", _headers(cs, now_ms, True), body)
    cs, armed = _arm(cs, "answer_timer", timing.agent_answer_timeout_ms)
    mark = note("chattool_cancel_sent", provider_id=call.provider_id, stop_if_run_age_below_ms=plan.stop_run_age_ms)
    return replace(cs, phase=Phase.CANCEL), (mark, send, *armed)


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


def _int_or(value: Any, default: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _read_cancel_answer(answer: Response) -> CancelAnswer:
    value = _decode(answer, (("started", bool),))
    try:
        recorded = base64.b64decode(value.get("body") or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise _UndecodableError("decode response: illegal base64 data in \"body\"") from None
    proc = value.get("process")
    process = None
    if isinstance(proc, dict):
        process = ToolCallProcess(
            running=proc.get("running") is True,
            canceled=proc.get("canceled") is True,
            output=proc.get("output") if isinstance(proc.get("output"), str) else "",
            exit_code=_int_or(proc.get("exit_code"), None),
            run_age_ms=_int_or(proc.get("run_age_ms"), 0),
        )
    return CancelAnswer(
        started=value["started"],
        status_code=_int_or(value.get("status_code"), 0),
        content_type=value.get("content_type") if isinstance(value.get("content_type"), str) else "",
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
    """The error a cancel answer's recorded start failure stands for (chatd-contract.md
    5.3, "Started, Process nil, recorded StatusCode >= 400"): a JSON body gives
    ``<message>: <detail>`` (``<message>`` alone without a detail); a body that is not a
    JSON object gives the status text, e.g. ``Internal Server Error``. Unlike
    ``sdk_error_text`` there is no "unexpected status code" prefix."""
    decoded: Any = None
    if content_type.split(";")[0].strip().lower() == "application/json":
        try:
            decoded = _loads_go(body.decode("utf-8", errors="replace"))
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


def _on_cancel_answer(cs: CallState, answer: Response, now_ms: int) -> Step:
    try:
        ans = _read_cancel_answer(answer)
    except _UndecodableError as err:
        return _cancel_failed(cs, classify(Undecodable(str(err))))
    rules = _EXECUTE_CANCEL_RULES if cs.call.tool == EXECUTE else _FILE_CANCEL_RULES
    name, build = next((name, build) for name, match, build in rules if match(cs, ans))
    cs, effects = _disarm(cs, "answer_timer")
    effects.append(note("chattool_cancel_answer", provider_id=cs.call.provider_id, rule=name))
    return _finish(cs, build(cs, ans), effects)


def _cancel_failed(cs: CallState, err: AgentError) -> Step:
    """A cancel error through AgentErrorText; ok=false keeps the generic result."""
    assert cs.identity is not None
    if cs.call.tool == EXECUTE:
        mapped = agent_error_text(err, _interrupt_words(cs.identity.uuid, cs.background))
        if mapped is None:
            return _finish(cs, generic_result())
        kind, reason, text = mapped
        process_id = None if reason == "agent_restarted" else cs.identity.uuid
        return _finish(cs, Result(kind, False, execute_result_json(error=text), process_id=process_id,
                                  reason=reason or None))
    mapped = agent_error_text(err, _file_words(cs.call.tool, cs.identity.uuid))
    if mapped is None:
        return _finish(cs, generic_result())
    kind, reason, text = mapped
    return _finish(cs, _text_error(kind, text, reason=reason or None))


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


_ANSWER_HANDLERS: dict[str, Callable[[CallState, Response, int], Step]] = {
    "start": _on_start_answer,
    "wait": _on_output_answer,
    "snapshot": _on_snapshot_answer,
    "edit": _on_file_answer,
    "write": _on_file_answer,
    "cancel": _on_cancel_answer,
}
