"""How the SDK reads a failed agent answer: Go's ``codersdk.ReadBodyAsError`` and
``workspacesdk``'s ``readToolCallError``, as pure functions over (status, Content-Type,
body).

Theory of operation
-------------------
chatd never sees an HTTP answer; it sees the Go error value the SDK built from it, and its
classifier (docs/contract.md C5.1 ``ClassifyAgentError``) branches on that value's TYPE:
``*workspacesdk.ToolCallError`` is a refusal, ``*codersdk.Error`` an HTTP error answer,
anything else an answer that could not be read. So the model needs the type as well as the
text, and this module returns one of four values:

- ``identity.ToolCallError``: a 409 whose JSON body has one of the four codes
  (docs/contract.md A1.3, ``readToolCallError``);
- ``SDKError``: ``*codersdk.Error`` (status, message, detail, validations, helper);
- ``DecodeBodyError``: ``xerrors.Errorf("decode body: %w")``, a JSON Content-Type whose body
  is not a ``codersdk.Response`` (invalid JSON other than an empty body, a wrong type);
- ``ReadBodyError``: ``xerrors.Errorf("read body: %w")``, the body read failed part-way
  (docs/contract.md A1.3 and A5.7 item 135: even when the part read has a code).

Rule 1 (``read_body_as_error``, codersdk/client.go, read in coder/coder):
        a body read error -> ReadBodyError; a media type other than application/json ->
        SDKError(message ``unexpected non-JSON response "<Content-Type>"``, detail the body
        cut at 2048 bytes plus "...", or "no response body" when empty); an empty JSON
        body (io.EOF) -> SDKError("empty response body"); a decode error ->
        DecodeBodyError; a message-less response -> message ``unexpected status code <N>,
        response has no message`` with the body (cut at 1024 bytes) as detail; 401 adds
        the "coder login" helper.
Rule 2. The JSON decode is Go's ``json.NewDecoder(...).Decode(&Response)``: only the first
        JSON value is read (trailing bytes are ignored), keys match case-insensitively, a
        field of the wrong type is a decode error, ``null`` leaves a field empty, invalid
        UTF-8 becomes U+FFFD.
Rule 3 (``read_agent_error``): 409 + JSON + known code -> ToolCallError; everything else
        is exactly ``read_body_as_error`` (docs/contract.md A1.3).
Rule 4. ``SDKError.text()`` is ``(*codersdk.Error).Error()``. The method and URL prefix is
        left out by default, as chatd's result texts quote it (docs/contract.md C5.5:
        ``unexpected status code 404: ...``).

Differences from the Go code: Go's decode error texts name Go types
(``json: cannot unmarshal number into Go struct field Response.message of type string``);
the model produces the same words for the cases the agent can send, and "unexpected EOF" /
"invalid character" for syntax errors, but does not reproduce every offset Go reports. Older
codersdk versions cut a non-JSON body at 1024 bytes; the current one at 2048 (we use 2048).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .gocompat.encoding import json_type_name
from .identity import ToolCallError, read_tool_call_error

NON_JSON_CUT_BYTES = 2048
NO_MESSAGE_CUT_BYTES = 1024
UNAUTHORIZED_HELPER = "Try logging in using 'coder login'."


@dataclass(frozen=True)
class SDKError:
    """``*codersdk.Error``: a failed HTTP answer the SDK could read."""

    status: int
    message: str
    detail: str = ""
    validations: tuple[tuple[str, str], ...] = ()
    helper: str = ""

    def text(self, method: str = "", url: str = "") -> str:
        out = f"{method} {url}: " if method and url else ""
        out += f"unexpected status code {self.status}: {self.message}"
        if self.helper:
            out += f": {self.helper}"
        if self.detail:
            out += f"\n\tError: {self.detail}"
        for field_name, detail in self.validations:
            out += f"\n\t{field_name}: {detail}"
        return out


@dataclass(frozen=True)
class DecodeBodyError:
    """``decode body: <json error>``: not a ``*codersdk.Error`` (chatd: Unreadable)."""

    reason: str

    def text(self, method: str = "", url: str = "") -> str:
        return f"decode body: {self.reason}"


@dataclass(frozen=True)
class ReadBodyError:
    """``read body: <read error>``: the body could not be read to its end."""

    reason: str

    def text(self, method: str = "", url: str = "") -> str:
        return f"read body: {self.reason}"


AgentReadError = ToolCallError | SDKError | DecodeBodyError | ReadBodyError


class _GoDecodeError(ValueError):
    pass


def media_type(content_type: str) -> str:
    """``parseMimeType``: the media type before any parameter, lower-cased and trimmed."""
    return content_type.split(";", 1)[0].strip().lower()


def _cut(body: bytes, limit: int) -> str:
    if len(body) > limit:
        body = body[:limit] + b"..."
    return body.decode("utf-8", errors="replace")


def _reject_constant(name: str):
    raise _GoDecodeError(f"invalid character {name[0]!r} looking for beginning of value")


def _first_json_value(text: str) -> Any:
    """Rule 2: the first JSON value only, like ``json.Decoder.Decode``. Raises EOFError for
    a body with no value at all (Go's io.EOF)."""
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise EOFError
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    try:
        value, _ = decoder.raw_decode(text, start)
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip(" \t\r\n")):
            raise _GoDecodeError("unexpected EOF") from None
        raise _GoDecodeError(f"invalid character {text[err.pos]!r} looking for beginning of value") from None
    return value


def _field(obj: dict, name: str) -> Any:
    """Go's encoding/json: an exact key wins, else the first case-insensitive match."""
    if name in obj:
        return obj[name]
    for key, value in obj.items():
        if key.lower() == name:
            return value
    return None


def _string_field(obj: dict, name: str, struct: str = "Response") -> str:
    value = _field(obj, name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _GoDecodeError(
            f"json: cannot unmarshal {json_type_name(value)} into Go struct field {struct}.{name} of type string"
        )
    return value


def _decode_response(value: Any) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    if value is None:
        return "", "", ()
    if not isinstance(value, dict):
        raise _GoDecodeError(f"json: cannot unmarshal {json_type_name(value)} into Go value of type codersdk.Response")
    message = _string_field(value, "message")
    detail = _string_field(value, "detail")
    raw = _field(value, "validations")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise _GoDecodeError(
            f"json: cannot unmarshal {json_type_name(raw)} into Go struct field Response.validations "
            "of type []codersdk.ValidationError"
        )
    validations = []
    for entry in raw:
        entry = {} if entry is None else entry
        if not isinstance(entry, dict):
            raise _GoDecodeError(
                f"json: cannot unmarshal {json_type_name(entry)} into Go struct field Response.validations "
                "of type codersdk.ValidationError"
            )
        validations.append(
            (_string_field(entry, "field", "ValidationError"), _string_field(entry, "detail", "ValidationError"))
        )
    return message, detail, tuple(validations)


def read_body_as_error(
    status: int, content_type: str, body: bytes, read_error: str | None = None
) -> SDKError | DecodeBodyError | ReadBodyError:
    """Rule 1: ``codersdk.ReadBodyAsError`` for an answer with this status, Content-Type
    header and body. ``read_error`` is the error a body read ended with, if it failed."""
    if read_error is not None:
        return ReadBodyError(read_error)
    helper = UNAUTHORIZED_HELPER if status == 401 else ""
    if media_type(content_type) != "application/json":
        detail = _cut(body, NON_JSON_CUT_BYTES) if body else "no response body"
        return SDKError(status, f"unexpected non-JSON response {json.dumps(content_type, ensure_ascii=False)}", detail, (), helper)
    try:
        message, detail, validations = _decode_response(_first_json_value(body.decode("utf-8", errors="replace")))
    except EOFError:
        return SDKError(status, "empty response body", "", (), helper)
    except _GoDecodeError as err:
        return DecodeBodyError(str(err))
    if not message:
        message = f"unexpected status code {status}, response has no message"
        detail = _cut(body, NO_MESSAGE_CUT_BYTES)
    return SDKError(status, message, detail, validations, helper)


def read_agent_error(status: int, content_type: str, body: bytes, read_error: str | None = None) -> AgentReadError:
    """Rule 3: ``readToolCallError`` -- a ToolCallError only for a readable 409 with a known
    code, else exactly what ``read_body_as_error`` gives."""
    if read_error is None:
        refusal = read_tool_call_error(status, body)
        if refusal is not None:
            return refusal
    return read_body_as_error(status, content_type, body, read_error)
