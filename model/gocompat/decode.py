"""Request bodies decoded the way the agent's Go handlers decode them.

Theory of operation
-------------------
Every JSON body the agent reads goes through Go's ``encoding/json`` into a typed struct:
``httpapi.Read`` (cancel, edit-files; coderd/httpapi/httpapi.go) and
``json.NewDecoder(r.Body).Decode`` (process start and signal; agent/agentproc/api.go).
Both are one ``Decoder.Decode`` call, so they accept and refuse the same bodies. Python's
``json.loads`` differs in ways that change answers (it refuses trailing bytes, accepts
``NaN``, matches keys exactly, has unbounded integers), so the model decodes here instead.

Rule 1. One value is read. Leading whitespace is skipped; an empty or all-space body is
        ``EOF``; bytes after the first complete value are never looked at (``{}x`` and
        ``{} {`` decode as ``{}``), because ``Decode`` stops at the value's end and the
        handlers never call ``More`` or ``DisallowUnknownFields``.
Rule 2. ``null`` leaves the target unchanged: a top-level ``null`` is the zero struct, a
        field ``null`` keeps what an earlier duplicate key set (zero otherwise).
Rule 3. Keys match a field's JSON name exactly, else case-insensitively with Go's fold
        (ASCII letters, and ``unicode.ToUpper(unicode.ToLower(r))`` beyond ASCII, so
        U+017F long s matches ``s``). Unknown keys are skipped. A repeated key is decoded
        again in document order: the last one wins (a nested struct merges).
Rule 4. A value of the wrong JSON type is an ``UnmarshalTypeError``; the first one is the
        error. An int64 takes only an integer literal in [-2^63, 2^63-1]: ``1.0``, ``1e3``
        and ``9223372036854775808`` are errors (``-0`` is 0).
Rule 5. Strings keep invalid UTF-8 and lone surrogate escapes as U+FFFD, as Go does.

Differences from Go (documented, not silent):
- Syntax error details are Go-shaped (``invalid character 'x' looking for beginning of
  value``, ``unexpected EOF``) but chosen from Python's parser message, so the phrase
  after the character can differ from Go's for unusual inputs. Statuses never differ.
- Nesting deeper than Python's recursion limit (about 1 000 levels) is refused; Go allows
  10 000. Only a deeply nested value inside an ignored key tells the two apart.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_JSON_SPACE = " \t\n\r"


class GoJSONError(ValueError):
    """The body does not decode; ``str(err)`` is Go's ``err.Error()`` text."""


# ---------------------------------------------------------------------------
# Target types (the Go struct a handler decodes into)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    kind: str  # string | bool | int64

    @property
    def go_type(self) -> str:
        return self.kind


@dataclass(frozen=True)
class ListOf:
    item: Any
    go_type: str


@dataclass(frozen=True)
class MapOf:
    """``map[string]V``."""

    value: Any
    go_type: str


@dataclass(frozen=True)
class Struct:
    go_type: str  # e.g. "workspacesdk.CancelToolCallRequest"
    fields: tuple[tuple[str, Any], ...]  # (JSON name, type)

    @property
    def short(self) -> str:
        return self.go_type.rsplit(".", 1)[-1]


STRING = Scalar("string")
BOOL = Scalar("bool")
INT64 = Scalar("int64")


def zero(t: Any) -> Any:
    """Go's zero value; a nil slice or map is None."""
    if isinstance(t, Scalar):
        return {"string": "", "bool": False, "int64": 0}[t.kind]
    if isinstance(t, Struct):
        return {name: zero(ft) for name, ft in t.fields}
    return None


# ---------------------------------------------------------------------------
# Go's text helpers
# ---------------------------------------------------------------------------


def fold_name(name: str) -> str:
    """encoding/json's foldName: ASCII upper-cased, other runes ToUpper(ToLower(r))."""
    out = []
    for ch in name:
        if ch < "\x80":
            out.append(ch.upper() if "a" <= ch <= "z" else ch)
        else:
            low = ch.lower()
            low = low if len(low) == 1 else ch  # Go's ToLower maps one rune to one rune
            up = low.upper()
            out.append(up if len(up) == 1 else low)
    return "".join(out)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(value: str) -> str:
    """``strconv.Quote`` (what ``%q`` prints): printable runes kept, ``"`` and ``\\``
    escaped, control characters as ``\\n``-style or ``\\xNN``, other non-printable runes
    as ``\\uNNNN``; a byte that was not UTF-8 (a surrogateescape code point) as ``\\xNN``."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif ch == " " or (ch.isprintable() and unicodedata.category(ch) != "Zs"):
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _quote_char(ch: str) -> str:
    """encoding/json's quoteChar for syntax errors."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    return "'" + go_quote(ch)[1:-1] + "'"


# ---------------------------------------------------------------------------
# Parsing one value
# ---------------------------------------------------------------------------


class _Obj(list):
    """A JSON object as its (key, value) pairs in document order (duplicates kept)."""


class _Num(str):
    """A JSON number, kept as its literal so int64 range and error texts are exact."""


def _reject_constant(name: str):
    raise ValueError(name)  # NaN, Infinity, -Infinity: Python extensions, not JSON


_DECODER = json.JSONDecoder(
    object_pairs_hook=_Obj, parse_int=_Num, parse_float=_Num, parse_constant=_reject_constant, strict=True
)

_SYNTAX_CONTEXT = (
    ("Expecting property name", "looking for beginning of object key string"),
    ("Expecting ':'", "after object key"),
    ("Expecting ',' delimiter", "after object key:value pair"),
    ("Invalid control character", "in string literal"),
    ("Invalid \\escape", "in string escape code"),
    ("Invalid \\uXXXX", "in \\u hexadecimal character escape"),
    ("Unterminated string", "in string literal"),
)


def _syntax_error(text: str, err: json.JSONDecodeError) -> GoJSONError:
    pos = err.pos
    if pos >= len(text) or text[pos:].strip(_JSON_SPACE) == "" or err.msg.startswith("Unterminated"):
        return GoJSONError("unexpected EOF")
    context = "looking for beginning of value"
    for prefix, phrase in _SYNTAX_CONTEXT:
        if err.msg.startswith(prefix):
            context = phrase
            break
    return GoJSONError(f"invalid character {_quote_char(text[pos])} {context}")


def parse_first_value(body: bytes) -> Any:
    """Rule 1: the first JSON value of the body, as ``_Obj``/list/``_Num``/str/bool/None."""
    text = body.decode("utf-8", errors="surrogateescape")
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    if start == len(text):
        raise GoJSONError("EOF")
    try:
        value, _end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as err:
        raise _syntax_error(text, err) from None
    except ValueError as err:  # NaN / Infinity: Go stops at the first letter
        name = str(err).lstrip("-")
        context = "in numeric literal" if str(err).startswith("-") else "looking for beginning of value"
        raise GoJSONError(f"invalid character {_quote_char(name[:1])} {context}") from None
    except RecursionError:
        raise GoJSONError("exceeded max depth") from None
    return value


# ---------------------------------------------------------------------------
# Storing into the target struct
# ---------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
_INT_LITERAL = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _json_kind(value: Any) -> str:
    if isinstance(value, _Obj):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, _Num):
        return "number"
    if isinstance(value, bool):
        return "bool"
    return "string"


class _Decoding:
    """One decode: remembers the first type error and keeps going, as Go's decodeState."""

    def __init__(self, root: Struct):
        self.root = root
        self.error: str | None = None

    def type_error(self, value: Any, t: Any, path: str, literal: bool = False):
        if self.error is None:
            what = f"number {value}" if literal else _json_kind(value)
            where = f"Go struct field {self.root.short}.{path}" if path else "Go value"
            self.error = f"json: cannot unmarshal {what} into {where} of type {t.go_type}"

    def store(self, value: Any, t: Any, current: Any, path: str) -> Any:
        if value is None:
            return current if isinstance(t, (Scalar, Struct)) else None  # rule 2
        if isinstance(t, Scalar):
            return self._scalar(value, t, current, path)
        if isinstance(t, ListOf):
            if not isinstance(value, list) or isinstance(value, _Obj):
                self.type_error(value, t, path)
                return current
            return [self.store(v, t.item, zero(t.item), path) for v in value]
        if isinstance(t, MapOf):
            if not isinstance(value, _Obj):
                self.type_error(value, t, path)
                return current
            out = dict(current or {})
            for k, v in value:
                out[_SURROGATE.sub("\ufffd", k)] = self.store(v, t.value, out.get(k, zero(t.value)), path)
            return out
        if not isinstance(value, _Obj):
            self.type_error(value, t, path)
            return current
        out = dict(current)
        exact = {name: (name, ft) for name, ft in t.fields}
        folded = {fold_name(name): (name, ft) for name, ft in t.fields}
        for key, v in value:
            match = exact.get(key) or folded.get(fold_name(key))
            if match is None:
                continue  # unknown keys are skipped (no DisallowUnknownFields)
            name, ft = match
            out[name] = self.store(v, ft, out[name], f"{path}.{name}" if path else name)
        return out

    def _scalar(self, value: Any, t: Scalar, current: Any, path: str) -> Any:
        if t.kind == "string":
            if isinstance(value, str) and not isinstance(value, _Num):
                return _SURROGATE.sub("\ufffd", value)  # rule 5
        elif t.kind == "bool":
            if isinstance(value, bool):
                return value
        elif isinstance(value, _Num):
            if _INT_LITERAL.match(value) and INT64_MIN <= int(value) <= INT64_MAX:
                return int(value)
            self.type_error(value, t, path, literal=True)
            return current
        self.type_error(value, t, path)
        return current


def decode(body: bytes, target: Struct) -> dict:
    """``json.NewDecoder(body).Decode(&target)``: the struct's fields as a dict, or
    ``GoJSONError`` with Go's error text."""
    value = parse_first_value(body)
    run = _Decoding(target)
    out = run.store(value, target, zero(target), "")
    if run.error is not None:
        raise GoJSONError(run.error)
    return out


__all__ = [
    "BOOL",
    "GoJSONError",
    "INT64",
    "ListOf",
    "MapOf",
    "STRING",
    "Struct",
    "decode",
    "fold_name",
    "go_quote",
    "parse_first_value",
    "zero",
]
