"""Edges of the SDK's tool call identity (docs/contract.md A1.2, A1.3, A1.5) that the
mutation run of model/identity.py (issue 35) found no test pinning: Go's int64 range and
sign rules for the decimal headers, the bad escape an error names, an escape scan that
never skips a character, the two's complement of a message ID in the UUID, and a coded
body under a status other than 409.

Each test states the contract's answer, computed from the rule (Go's ``strconv.ParseInt``,
``url.PathUnescape``, UUIDv5), never from the model's code.
"""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from toolcall_sim.model import core
from toolcall_sim.model.identity import (
    AGE_MS_HEADER,
    INPUT_MISMATCH,
    MAX_MS,
    MESSAGE_ID_HEADER,
    STALE_TOOL_CALL,
    TOOL_CALL_ID_HEADER,
    TOOL_CALL_UUID_NAMESPACE,
    HeaderError,
    Key,
    ToolCallError,
    ToolCallHeaders,
    parse_tool_call_headers,
    path_unescape,
    read_tool_call_error,
    set_tool_call_headers,
    tool_call_error,
    tool_call_uuid,
)

CHAT = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
VALID = ((MESSAGE_ID_HEADER, "42"), (TOOL_CALL_ID_HEADER, "toolu_01"), (AGE_MS_HEADER, "250"))
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _with(name: str, value: str) -> core.Headers:
    return core.with_header(VALID, name, value)


def _error(headers: core.Headers) -> str:
    with pytest.raises(HeaderError) as err:
        parse_tool_call_headers(headers)
    return str(err.value)


# --- A1.2: the decimal headers are Go's strconv.ParseInt(s, 10, 64) -----------------


@pytest.mark.parametrize("wire, value", [("+7", 7), ("+0", 0), ("0250", 250), (str(INT64_MAX)[:13], 9_223_372_036_854)])
def test_age_header_takes_what_parseint_takes(wire, value):
    """ParseInt accepts one leading sign, '+' included, and leading zeros."""
    assert parse_tool_call_headers(_with(AGE_MS_HEADER, wire)).age_ms == value


def test_message_id_with_a_plus_sign_is_the_number():
    assert parse_tool_call_headers(_with(MESSAGE_ID_HEADER, "+42")) == ToolCallHeaders(42, "toolu_01", 250)


@pytest.mark.parametrize("wire", ["+", "-", "++1", "+-1", "1+", " 1", "\u0661\u0662", "\uff11", "+\u0661"])
def test_only_ascii_digits_after_one_sign_parse(wire):
    """ParseInt takes '0'-'9' only: a sign alone or twice, a space, and digits of other
    scripts (Arabic-Indic, fullwidth), which Python's int() would take, are invalid syntax."""
    assert "invalid syntax" in _error(_with(AGE_MS_HEADER, wire))


@pytest.mark.parametrize("wire", [str(INT64_MIN), str(INT64_MIN + 1), "-200", "-1"])
def test_negative_message_ids_inside_int64_parse_and_are_refused_as_not_positive(wire):
    """A negative message ID that fits in an int64 parses; the refusal is the positive rule
    ("must be positive"), not the range."""
    msg = _error(_with(MESSAGE_ID_HEADER, wire))
    assert "must be positive" in msg and "out of range" not in msg


@pytest.mark.parametrize("wire", [str(INT64_MIN - 1), str(INT64_MAX + 1), str(2**64), "-" + "9" * 30])
def test_message_ids_outside_int64_are_out_of_range(wire):
    msg = _error(_with(MESSAGE_ID_HEADER, wire))
    assert MESSAGE_ID_HEADER in msg and "out of range" in msg


def test_largest_int64_message_id_parses():
    assert parse_tool_call_headers(_with(MESSAGE_ID_HEADER, str(INT64_MAX))).message_id == INT64_MAX


@pytest.mark.parametrize("wire", [str(INT64_MIN), "-5"])
def test_negative_age_inside_int64_is_refused_by_the_age_range(wire):
    msg = _error(_with(AGE_MS_HEADER, wire))
    assert "must be between 0 and" in msg and "out of range" not in msg


# --- A1.2: the provider ID is url.PathUnescape'd ---------------------------------------


@pytest.mark.parametrize("wire, bad", [("ab%zzcd", "%zz"), ("%4", "%4"), ("x%", "%"), ("%41%zz", "%zz"),
                                       ("%41%", "%"), ("a%4g1", "%4g"), ("zz%", "%")])
def test_bad_escape_error_names_gos_three_bytes(wire, bad):
    """url.PathUnescape's EscapeError is the bad escape: from the '%' at most three bytes,
    quoted as Go's %q does (strconv.Quote), e.g. ``invalid URL escape "%zz"``. A valid
    escape before it does not hide it."""
    msg = _error(_with(TOOL_CALL_ID_HEADER, wire))
    assert msg == f'{TOOL_CALL_ID_HEADER}: invalid URL escape "{bad}"'
    with pytest.raises(ValueError) as err:
        path_unescape(wire)
    assert str(err.value) == f'invalid URL escape "{bad}"'


@pytest.mark.parametrize("wire, raw", [("%41%42", "AB"), ("%41b", "Ab"), ("a%25", "a%"), ("%2541", "%41")])
def test_escapes_next_to_each_other_each_decode_once(wire, raw):
    assert path_unescape(wire) == raw
    assert parse_tool_call_headers(_with(TOOL_CALL_ID_HEADER, wire)).tool_call_id == raw


# --- A1.5: the UUID hashes the message ID as an 8-byte two's complement ----------------


@pytest.mark.parametrize("message_id", [-1, INT64_MIN, -(2**32) - 7])
def test_uuid_of_a_negative_message_id_hashes_its_twos_complement(message_id):
    """Go converts the int64 message ID to 8 big-endian bytes with uint64(id): two's
    complement, so -1 hashes ff ff ff ff ff ff ff ff."""
    name = uuid.UUID(CHAT).bytes + (message_id % 2**64).to_bytes(8, "big") + b"call_1"
    digest = hashlib.sha1(TOOL_CALL_UUID_NAMESPACE.bytes + name).digest()
    assert tool_call_uuid(CHAT, message_id, "call_1") == str(uuid.UUID(bytes=digest[:16], version=5))


# --- A1.3: only a 409 is a coded refusal ----------------------------------------------


@pytest.mark.parametrize("status", [400, 404, 408, 410, 422, 500, 503])
def test_a_coded_body_under_another_status_is_a_plain_error(status):
    body = json.dumps({"message": "m", "code": STALE_TOOL_CALL}).encode()
    assert read_tool_call_error(409, body) is not None
    assert read_tool_call_error(status, body) is None


def test_a_key_is_a_value():
    """Equal keys are one key: a Key sits in the agent's runs, whose state the explorer
    hashes to tell states apart (model/explore.py), so equal keys hash alike."""
    a, b = Key(CHAT, 42, "call_1"), Key(CHAT, 42, "call_1")
    assert a == b and hash(a) == hash(b) and len({a, b, Key(CHAT, 43, "call_1")}) == 2
    assert a.uuid == tool_call_uuid(CHAT, 42, "call_1")


# --- A1.3: the coded 409's body is Go's JSON of ToolCallError (omitempty fields) -------


def test_coded_409_body_leaves_out_empty_detail_and_validations():
    """codersdk.Response's detail and validations are omitempty: a refusal without them
    sends message and code only; with them, both appear and read back the same."""
    assert json.loads(tool_call_error(STALE_TOOL_CALL).body()) == {
        "message": "The tool call is in an older message than the chat's latest message.", "code": STALE_TOOL_CALL}
    full = ToolCallError(INPUT_MISMATCH, "m", "d", (("command", "differs"),))
    assert json.loads(full.body()) == {"message": "m", "code": INPUT_MISMATCH, "detail": "d",
                                       "validations": [{"field": "command", "detail": "differs"}]}
    assert read_tool_call_error(409, full.body()) == full


@pytest.mark.parametrize("age_ms, wire", [(2**53 + 1, "9007199254740993"), (MAX_MS, "9223372036854"), (7.9, "7")])
def test_written_age_is_the_exact_whole_milliseconds(age_ms, wire):
    """Go writes Duration.Milliseconds(), an exact int64: a whole-millisecond age beyond a
    float's 53 bits is written digit for digit, a fractional one floored."""
    assert core.header_value(set_tool_call_headers((), 1, "c", age_ms), AGE_MS_HEADER) == wire
