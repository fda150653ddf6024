"""Tool call identity: the key, the tool call UUID, the tool call headers and error codes.

Theory of operation
-------------------
Both sides derive everything about a tool call from three values chatd already has: the
chat ID, the tool call message ID (the assistant message that holds the call) and the
provider tool call ID. This module is the Python twin of the SDK part of the contract
(docs/contract.md A1, codersdk/workspacesdk/toolcall.go, "Rev C").

Rule 1. ``tool_call_uuid`` is UUIDv5 over the raw chat ID bytes, the message ID as 8-byte
        big-endian two's complement, and the raw (unescaped) provider ID bytes, with no
        separators (section 1.5). It is the process ID and the cancel route's ID.
Rule 2. ``parse_tool_call_headers`` applies the parse rules of section 1.2 in their real
        order: "multiple values" for each header first, then all-absent (not a tool call
        request), then partial headers, then per-field validation.
Rule 3. Ages and run ages cross the wire as whole milliseconds. Writing floors and sends
        a negative age as 0; reading accepts 0 .. 9 223 372 036 854 (the largest
        millisecond count that fits in a Go Duration).
Rule 4. A response is a ``ToolCallError`` only when it is a 409 with a JSON body whose
        ``code`` is one of the four known codes; anything else is a plain HTTP error.
        The body is decoded the way Go's ``json.Unmarshal`` fills the struct (inferred,
        see ``read_tool_call_error``): a field of the wrong JSON type is a decode error
        (so a plain HTTP error), ``null`` leaves a field empty, and invalid UTF-8 inside
        a string becomes U+FFFD.
Rule 5. A provider ID is bytes on the wire (Go strings are bytes). Header parsing can
        yield bytes that are not UTF-8 (``%FF``); they are kept in the ``str`` as
        ``surrogateescape`` code points, and every function that turns the ID back into
        bytes (the UUID, path escaping) uses ``surrogateescape`` too, so the agent derives
        the same UUID Go would instead of failing.

Differences from the design (docs/contract.md): none in this module. The literal run
age header name was not seen in code (docs/contract.md A6.4); we use the design's name.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, unquote_to_bytes

from .core import Headers, header_values, with_header
from .gocompat.decode import go_quote

# Header names (canonical HTTP casing; lookups are case-insensitive).
CHAT_ID_HEADER = "Coder-Chat-Id"
MESSAGE_ID_HEADER = "Coder-Tool-Call-Message-Id"
TOOL_CALL_ID_HEADER = "Coder-Tool-Call-Id"
AGE_MS_HEADER = "Coder-Tool-Call-Age-Ms"
RUN_AGE_MS_HEADER = "Coder-Tool-Call-Run-Age-Ms"
# Only the incarnation-token design variant (model/designs.py) sends it: the agent
# incarnation chatd stored for the tool call before its first request. No real build has it.
AGENT_INCARNATION_HEADER = "Coder-Tool-Call-Agent-Incarnation"

# MaxInt64 nanoseconds in whole milliseconds: the bound for ages, run ages and thresholds.
MAX_MS = 9_223_372_036_854

TOOL_CALL_UUID_NAMESPACE = uuid.UUID("c5773f4c-0b3f-57bc-9147-36daf7921a1b")

# The four error codes of a coded 409 (section 1.3), with the agent's message texts.
STALE_TOOL_CALL = "stale_tool_call"
AGENT_STARTED_AFTER_TOOL_CALL = "agent_started_after_tool_call"
INPUT_MISMATCH = "input_mismatch"
TOOL_CALL_CANCELED = "tool_call_canceled"

ERROR_MESSAGES = {
    STALE_TOOL_CALL: "The tool call is in an older message than the chat's latest message.",
    AGENT_STARTED_AFTER_TOOL_CALL: "The workspace agent started after the tool call was committed.",
    INPUT_MISMATCH: "The request differs from the recorded request for this tool call.",
    TOOL_CALL_CANCELED: "The tool call was canceled.",
}
ERROR_CODES = tuple(ERROR_MESSAGES)


@dataclass(frozen=True, order=True)
class Key:
    """The identity of one tool call on the agent: (chat ID, message ID, provider ID)."""

    chat_id: str
    message_id: int
    tool_call_id: str

    @property
    def uuid(self) -> str:
        return tool_call_uuid(self.chat_id, self.message_id, self.tool_call_id)


@lru_cache(maxsize=4096)  # a pure function of its arguments; every step of a run asks it again
def tool_call_uuid(chat_id: str, message_id: int, tool_call_id: str) -> str:
    """UUIDv5 of (chat, message, provider ID), lowercase canonical form (rule 1)."""
    name = (
        uuid.UUID(chat_id).bytes
        + (message_id & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "big")
        # surrogateescape: a parsed ID may hold non-UTF-8 bytes (rule 5); Go hashes them raw.
        + tool_call_id.encode("utf-8", errors="surrogateescape")
    )
    digest = hashlib.sha1(TOOL_CALL_UUID_NAMESPACE.bytes + name).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))


@lru_cache(maxsize=4096)  # a pure function of its argument; every request of a call escapes its ID again
def path_escape(value: str) -> str:
    """Go's ``url.PathEscape``: keep letters, digits, ``-._~`` and ``$&+:=@``; escape the
    rest, '/', ';', ',' and '?' included (Go's shouldEscape for a path segment).

    ``surrogateescape`` turns the raw bytes of a parsed non-UTF-8 ID back into the same
    ``%XX`` escapes they came from (rule 5), so escape and unescape stay inverses."""
    return quote(value, safe="-._~$&+:=@", errors="surrogateescape")


def path_unescape(value: str) -> str:
    """Go's ``url.PathUnescape``; raises ValueError on a bad escape such as ``%zz``."""
    if "%" not in value and value.isascii():
        return value  # nothing to unescape (every ID the model makes): no scan, no round trip
    i = 0
    while i < len(value):
        if value[i] == "%":
            hexpart = value[i + 1 : i + 3]
            if len(hexpart) != 2 or any(c not in "0123456789abcdefABCDEF" for c in hexpart):
                raise ValueError(f"invalid URL escape {go_quote(value[i:i + 3])}")  # Go's EscapeError
            i += 3
        else:
            i += 1
    return unquote_to_bytes(value).decode("utf-8", errors="surrogateescape")


@dataclass(frozen=True)
class ToolCallHeaders:
    """The parsed tool call headers: message ID, raw provider ID, age in whole ms."""

    message_id: int
    tool_call_id: str
    age_ms: int


class HeaderError(ValueError):
    """Malformed tool call headers; the message names the header at fault."""


def _parse_int64(text: str) -> int:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, decimal digits only."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f"invalid syntax {text!r}")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"value out of range {text!r}")
    return value


def parse_tool_call_headers(headers: Headers) -> ToolCallHeaders | None:
    """Rule 2. None when no tool call header is present; HeaderError when malformed."""
    names = (MESSAGE_ID_HEADER, TOOL_CALL_ID_HEADER, AGE_MS_HEADER)
    values = {}
    for name in names:
        found = header_values(headers, name)
        if len(found) > 1:
            raise HeaderError(f"{name}: multiple values")
        values[name] = found[0] if found else None
    missing = [name for name in names if values[name] is None]
    if len(missing) == len(names):
        return None
    if missing:
        raise HeaderError("incomplete tool call headers: missing " + ", ".join(missing))
    try:
        message_id = _parse_int64(values[MESSAGE_ID_HEADER])
    except ValueError as err:
        raise HeaderError(f"{MESSAGE_ID_HEADER}: {err}") from None
    if message_id <= 0:
        raise HeaderError(f"{MESSAGE_ID_HEADER}: must be positive, got {message_id}")
    try:
        tool_call_id = path_unescape(values[TOOL_CALL_ID_HEADER])
    except ValueError as err:
        raise HeaderError(f"{TOOL_CALL_ID_HEADER}: {err}") from None
    if not tool_call_id:
        raise HeaderError(f"{TOOL_CALL_ID_HEADER}: must not be empty")
    try:
        age_ms = _parse_int64(values[AGE_MS_HEADER])
    except ValueError as err:
        raise HeaderError(f"{AGE_MS_HEADER}: {err}") from None
    if age_ms < 0 or age_ms > MAX_MS:
        raise HeaderError(f"{AGE_MS_HEADER}: must be between 0 and {MAX_MS}, got {age_ms}")
    return ToolCallHeaders(message_id, tool_call_id, age_ms)


def encode_ms(duration_ms: float | int) -> str:
    """Rule 3, writing side: floor to whole milliseconds, negative becomes 0."""
    if duration_ms < 0:
        return "0"
    return str(int(duration_ms // 1))


def set_tool_call_headers(
    headers: Headers, message_id: int, tool_call_id: str, age_ms: float | int
) -> Headers:
    """``ToolCall.SetHeaders``: Set (replace) the three headers; the ID is path-escaped."""
    headers = with_header(headers, MESSAGE_ID_HEADER, str(message_id))
    headers = with_header(headers, TOOL_CALL_ID_HEADER, path_escape(tool_call_id))
    return with_header(headers, AGE_MS_HEADER, encode_ms(age_ms))


def parse_run_age_ms(headers: Headers) -> int:
    """``runAgeFromHeader``: exactly one decimal value in [0, MAX_MS], else 0."""
    found = header_values(headers, RUN_AGE_MS_HEADER)
    if len(found) != 1:
        return 0
    try:
        value = _parse_int64(found[0])
    except ValueError:
        return 0
    if value < 0 or value > MAX_MS:
        return 0
    return value


def clamp_ms(value_ms: int) -> int:
    """Clamp a millisecond count to [0, MAX_MS] (the cancel stop threshold rule)."""
    return max(0, min(value_ms, MAX_MS))


# ---------------------------------------------------------------------------
# Coded 409 errors
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallError:
    """``workspacesdk.ToolCallError``: the body of a coded 409."""

    code: str
    message: str
    detail: str = ""
    validations: tuple[tuple[str, str], ...] = ()

    def text(self) -> str:
        out = f"tool call error {self.code}: {self.message}"
        if self.detail:
            out += f"\n\tError: {self.detail}"
        for field_name, detail in self.validations:
            out += f"\n\t{field_name}: {detail}"
        return out

    def body(self) -> bytes:
        value: dict = {"message": self.message, "code": self.code}
        if self.detail:
            value["detail"] = self.detail
        if self.validations:
            value["validations"] = [{"field": f, "detail": d} for f, d in self.validations]
        return json.dumps(value, separators=(",", ":")).encode()


def tool_call_error(code: str) -> ToolCallError:
    return ToolCallError(code, ERROR_MESSAGES[code])


def _go_string(value) -> str:
    """A JSON value decoded into a Go ``string`` field: null leaves it empty, a string is
    kept, any other type is a decode error (``json.UnmarshalTypeError``)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError("cannot unmarshal into a string field")
    return value


def _reject_constant(name: str):
    # Python's json accepts NaN and Infinity; Go's does not, so they are syntax errors.
    raise ValueError(f"invalid JSON constant {name}")


def read_tool_call_error(status: int, body: bytes) -> ToolCallError | None:
    """Rule 4: a ToolCallError only for 409 + JSON object + one of the four codes.

    None means "a plain HTTP error": the caller handles it exactly as it handles any
    other failed response (Go's ``codersdk.ReadBodyAsError``). Any decode error, a wrong
    field type included, gives None. That Go falls back to ReadBodyAsError whenever
    ``json.Unmarshal`` into ``ToolCallError`` fails is inferred: the reference lists the
    cases of agentconn_internal_test.go, not readToolCallError's source.
    """
    if status != 409:
        return None
    try:
        # errors="replace": Go's decoder turns invalid UTF-8 in a string into U+FFFD.
        value = json.loads(body.decode("utf-8", errors="replace"), parse_constant=_reject_constant)
        if not isinstance(value, dict):
            return None
        code = _go_string(value.get("code"))
        if code not in ERROR_CODES:
            return None
        raw_validations = value.get("validations")
        if raw_validations is None:
            raw_validations = []
        if not isinstance(raw_validations, list):
            return None
        validations = []
        for entry in raw_validations:
            if entry is None:  # null element of a []struct: a zero struct in Go
                entry = {}
            if not isinstance(entry, dict):
                return None
            validations.append((_go_string(entry.get("field")), _go_string(entry.get("detail"))))
        return ToolCallError(
            code,
            _go_string(value.get("message")),
            _go_string(value.get("detail")),
            tuple(validations),
        )
    except ValueError:  # json.JSONDecodeError and the type errors above
        return None
