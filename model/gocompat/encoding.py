"""Go's JSON as the tool layer reads and writes it: ``json.Marshal`` text and a strict read.

Theory of operation
-------------------
chatd builds the text the chat model sees with Go's ``encoding/json`` and reads the
agent's answers and the model's tool arguments with it. Python's ``json`` differs in the
details that change bytes (spacing, HTML escapes, ``NaN``), so the tool layer goes
through these three functions instead of calling ``json`` directly. The agent's side
(typed struct decoding, ``strconv.Quote``) lives in decode.py beside it; this module is the
smaller subset chatd's tool layer needs, kept apart from it because the two sides read
different things (chatd never decodes into a typed struct here).

Rule 1. ``go_json`` is ``json.Marshal``'s text: no spaces, UTF-8 kept, ``<``, ``>``,
        ``&``, U+2028 and U+2029 escaped; dict order is kept, so callers build dicts in
        Go's struct field order.
Rule 2. ``loads_go`` is ``json.loads`` that refuses ``NaN`` and ``Infinity``, which Go's
        decoder rejects. ``json_type_name`` names a decoded value's JSON type as Go's
        ``UnmarshalTypeError`` does.
Rule 3. ``json_quote`` quotes a string as JSON; the tool layer uses it where Go prints
        ``%q`` in an error text (identical for printable text; decode.py's
        ``go_quote`` is the exact ``strconv.Quote``).
"""

from __future__ import annotations

import json
from typing import Any


def json_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _reject_constant(name: str):
    raise ValueError(f"invalid character {name!r} looking for beginning of value")


# What ``json.loads(text, parse_constant=...)`` and ``json.dumps(value, ensure_ascii=False,
# separators=(",", ":"))`` build on every call (non-default arguments); one instance each
# does the same work once. A step of the world decodes and encodes several bodies.
_GO_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_GO_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def loads_go(text: str) -> Any:
    """json.loads without NaN/Infinity, which Go's decoder rejects."""
    if type(text) is str and not text.startswith("\ufeff"):
        return _GO_DECODER.decode(text)  # what json.loads does with a str without a BOM
    return json.loads(text, parse_constant=_reject_constant)


def go_json(value: Any) -> str:
    """Go's json.Marshal text: no spaces, UTF-8 kept, and <, >, & escaped as \\u003c...
    Dict order is kept, so callers build dicts in Go's struct field order."""
    text = _GO_ENCODER.encode(value)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text
