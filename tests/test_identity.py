"""Conformance tests for model/identity.py: the SDK part of the tool call contract.

Each parametrized row is one numbered case of docs/contract.md A5.6 (items
85-120), 5.7 (121-147) or 5.8 (148), and its pytest id starts with the item number. The
``mirrors`` column names the Go test it ports. The reference describes the Go subtests
but does not quote their names, so the text after the slash is the reference's
description, not the literal Go subtest name.

The model has no sockets, contexts or ``*http.Response``, so where a Go test checks an
HTTP detail (dial time, ``*url.Error``, ``ReadBodyAsError`` equality, a body read that
fails part-way) the row checks the decision the model makes instead, and its ``mirrors``
text says so. tests/test_agent_sdk.py holds the full ports of 118, 125-138 and 148 (Go's
ReadBodyAsError value compared, and requests answered by the agent model).
"""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall_sim.model import core
from toolcall_sim.model.identity import (
    AGE_MS_HEADER,
    AGENT_STARTED_AFTER_TOOL_CALL,
    CHAT_ID_HEADER,
    INPUT_MISMATCH,
    MAX_MS,
    MESSAGE_ID_HEADER,
    RUN_AGE_MS_HEADER,
    STALE_TOOL_CALL,
    TOOL_CALL_CANCELED,
    TOOL_CALL_ID_HEADER,
    TOOL_CALL_UUID_NAMESPACE,
    HeaderError,
    Key,
    ToolCallError,
    ToolCallHeaders,
    clamp_ms,
    parse_run_age_ms,
    parse_tool_call_headers,
    path_escape,
    path_unescape,
    read_tool_call_error,
    set_tool_call_headers,
    tool_call_error,
    tool_call_uuid,
)

TOOLCALL_TEST = "codersdk/workspacesdk/toolcall_test.go"
AGENTCONN_INTERNAL_TEST = "codersdk/workspacesdk/agentconn_internal_test.go"
AGENTCONN_TEST = "codersdk/workspacesdk/agentconn_test.go"

CHAT = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
OTHER_CHAT = "11111111-2222-3333-4444-555555555555"


def _value(headers: core.Headers, name: str) -> list[str]:
    return core.header_values(headers, name)


# ---------------------------------------------------------------------------
# 5.6 TestToolCallHeadersRoundTrip (items 85-91)
# ---------------------------------------------------------------------------

ROUND_TRIP = [
    # (provider ID, age in ms, Id header on the wire, Age header, parsed age in ms)
    # Mirrors TestToolCallHeadersRoundTrip/plain ID.
    pytest.param("toolu_01ABC", 1500, "toolu_01ABC", "1500", 1500, id="85-plain-id"),
    # Mirrors TestToolCallHeadersRoundTrip/slash.
    pytest.param("call/1", 0, "call%2F1", "0", 0, id="86-slash"),
    # Mirrors TestToolCallHeadersRoundTrip/percent.
    pytest.param("100%x", 1000, "100%25x", "1000", 1000, id="87-percent"),
    # Mirrors TestToolCallHeadersRoundTrip/space.
    pytest.param("a b", 60_000, "a%20b", "60000", 60_000, id="88-space"),
    # Mirrors TestToolCallHeadersRoundTrip/non-ASCII.
    pytest.param("工具-é", 3_600_000, "%E5%B7%A5%E5%85%B7-%C3%A9", "3600000", 3_600_000,
                 id="89-non-ascii"),
    # Mirrors TestToolCallHeadersRoundTrip/sub-millisecond age floors (2.999 ms).
    pytest.param("toolu_01", 2.999, "toolu_01", "2", 2, id="90-sub-ms-age-floors"),
    # Mirrors TestToolCallHeadersRoundTrip/negative age sends 0 (-1 s).
    pytest.param("toolu_01", -1000, "toolu_01", "0", 0, id="91-negative-age-sends-zero"),
]


@pytest.mark.parametrize("provider_id, age_ms, wire_id, wire_age, parsed_age", ROUND_TRIP)
def test_tool_call_headers_round_trip(provider_id, age_ms, wire_id, wire_age, parsed_age):
    """Mirrors TestToolCallHeadersRoundTrip/<row> (codersdk/workspacesdk/toolcall_test.go)."""
    headers = set_tool_call_headers((), 42, provider_id, age_ms)
    assert _value(headers, MESSAGE_ID_HEADER) == ["42"]
    assert _value(headers, TOOL_CALL_ID_HEADER) == [wire_id]
    assert _value(headers, AGE_MS_HEADER) == [wire_age]
    assert parse_tool_call_headers(headers) == ToolCallHeaders(42, provider_id, parsed_age)


# ---------------------------------------------------------------------------
# 5.6 TestToolCallFromHeaders (items 92-111)
# ---------------------------------------------------------------------------

VALID = ((MESSAGE_ID_HEADER, "42"), (TOOL_CALL_ID_HEADER, "toolu_01"), (AGE_MS_HEADER, "250"))
CHAT_ONLY = ((CHAT_ID_HEADER, CHAT),)


def _replace(name: str, value: str) -> core.Headers:
    """The valid set with one header's value replaced."""
    return CHAT_ONLY + core.with_header(VALID, name, value)


def _twice(name: str) -> core.Headers:
    """The valid set with one header given a second time."""
    return CHAT_ONLY + VALID + ((name, core.header_value(VALID, name)),)


def _without(name: str) -> core.Headers:
    return CHAT_ONLY + tuple((k, v) for k, v in VALID if k != name)


FROM_HEADERS_OK = [
    # Mirrors TestToolCallFromHeaders/none present: only Coder-Chat-Id is not a tool call.
    pytest.param(CHAT_ONLY, None, id="92-none-present"),
    # Mirrors TestToolCallFromHeaders/all valid.
    pytest.param(CHAT_ONLY + VALID, ToolCallHeaders(42, "toolu_01", 250), id="93-all-valid"),
    # Mirrors TestToolCallFromHeaders/age at max (9223372036854 ms).
    pytest.param(_replace(AGE_MS_HEADER, "9223372036854"),
                 ToolCallHeaders(42, "toolu_01", 9_223_372_036_854), id="94-age-at-max"),
]


@pytest.mark.parametrize("headers, expected", FROM_HEADERS_OK)
def test_tool_call_from_headers_ok(headers, expected):
    """Mirrors TestToolCallFromHeaders/<row> (codersdk/workspacesdk/toolcall_test.go),
    rows without an error; ``None`` is Go's ``ok == false, err == nil``."""
    assert parse_tool_call_headers(headers) == expected


FROM_HEADERS_ERR = [
    # Mirrors TestToolCallFromHeaders/age above max (9223372036855 ms).
    pytest.param(_replace(AGE_MS_HEADER, "9223372036855"), AGE_MS_HEADER, id="95-age-above-max"),
    # Mirrors TestToolCallFromHeaders/duplicate Message-Id.
    pytest.param(_twice(MESSAGE_ID_HEADER), MESSAGE_ID_HEADER, id="96-message-id-twice"),
    # Mirrors TestToolCallFromHeaders/duplicate Id.
    pytest.param(_twice(TOOL_CALL_ID_HEADER), TOOL_CALL_ID_HEADER, id="97-id-twice"),
    # Mirrors TestToolCallFromHeaders/duplicate Age.
    pytest.param(_twice(AGE_MS_HEADER), AGE_MS_HEADER, id="98-age-twice"),
    # Mirrors TestToolCallFromHeaders/missing Message-Id.
    pytest.param(_without(MESSAGE_ID_HEADER), MESSAGE_ID_HEADER, id="99-message-id-missing"),
    # Mirrors TestToolCallFromHeaders/missing Id.
    pytest.param(_without(TOOL_CALL_ID_HEADER), TOOL_CALL_ID_HEADER, id="100-id-missing"),
    # Mirrors TestToolCallFromHeaders/missing Age.
    pytest.param(_without(AGE_MS_HEADER), AGE_MS_HEADER, id="101-age-missing"),
    # Mirrors TestToolCallFromHeaders/message id zero.
    pytest.param(_replace(MESSAGE_ID_HEADER, "0"), MESSAGE_ID_HEADER, id="102-message-id-0"),
    # Mirrors TestToolCallFromHeaders/message id negative.
    pytest.param(_replace(MESSAGE_ID_HEADER, "-1"), MESSAGE_ID_HEADER, id="103-message-id-neg"),
    # Mirrors TestToolCallFromHeaders/message id not a number.
    pytest.param(_replace(MESSAGE_ID_HEADER, "abc"), MESSAGE_ID_HEADER, id="104-message-id-abc"),
    # Mirrors TestToolCallFromHeaders/message id empty.
    pytest.param(_replace(MESSAGE_ID_HEADER, ""), MESSAGE_ID_HEADER, id="105-message-id-empty"),
    # Mirrors TestToolCallFromHeaders/id empty.
    pytest.param(_replace(TOOL_CALL_ID_HEADER, ""), TOOL_CALL_ID_HEADER, id="106-id-empty"),
    # Mirrors TestToolCallFromHeaders/id bad escape (%zz).
    pytest.param(_replace(TOOL_CALL_ID_HEADER, "%zz"), TOOL_CALL_ID_HEADER, id="107-id-bad-escape"),
    # Mirrors TestToolCallFromHeaders/age negative.
    pytest.param(_replace(AGE_MS_HEADER, "-1"), AGE_MS_HEADER, id="108-age-negative"),
    # Mirrors TestToolCallFromHeaders/age fractional.
    pytest.param(_replace(AGE_MS_HEADER, "1.5"), AGE_MS_HEADER, id="109-age-fractional"),
    # Mirrors TestToolCallFromHeaders/age empty.
    pytest.param(_replace(AGE_MS_HEADER, ""), AGE_MS_HEADER, id="110-age-empty"),
    # Mirrors TestToolCallFromHeaders/age MaxInt64 (fits int64, not a Duration in ms).
    pytest.param(_replace(AGE_MS_HEADER, "9223372036854775807"), AGE_MS_HEADER,
                 id="111-age-maxint64"),
]


@pytest.mark.parametrize("headers, names", FROM_HEADERS_ERR)
def test_tool_call_from_headers_error(headers, names):
    """Mirrors TestToolCallFromHeaders/<row> (codersdk/workspacesdk/toolcall_test.go),
    error rows. Go returns ``ok == false`` with the error; the model raises, so there is no
    value. The reference asserts the header name for 95-101 only; the model promises it
    for every row (HeaderError's docstring), so every row checks it."""
    with pytest.raises(HeaderError) as err:
        parse_tool_call_headers(headers)
    assert names in str(err.value)


def test_multiple_values_checked_before_missing():
    """Section 1.2 rule 1: "multiple values" wins over "missing" (no Go test of its own;
    it pins the order TestToolCallFromHeaders relies on)."""
    headers = ((MESSAGE_ID_HEADER, "1"), (MESSAGE_ID_HEADER, "2"))
    with pytest.raises(HeaderError, match="multiple values"):
        parse_tool_call_headers(headers)


def test_header_names_are_case_insensitive():
    """HTTP header names are case-insensitive (Go canonicalises them); lower-case names
    parse like canonical ones."""
    lower = tuple((k.lower(), v) for k, v in VALID)
    assert parse_tool_call_headers(lower) == ToolCallHeaders(42, "toolu_01", 250)


# ---------------------------------------------------------------------------
# 5.6 TestToolCallUUID, TestToolCallContext, TestToolCallErrorMessage (items 112-120)
# ---------------------------------------------------------------------------


def test_tool_call_uuid_namespace():
    """112. Mirrors TestToolCallUUID/namespace (codersdk/workspacesdk/toolcall_test.go)."""
    expected = uuid.uuid5(uuid.NAMESPACE_URL, "https://coder.com/workspace-agent/tool-call")
    assert TOOL_CALL_UUID_NAMESPACE == expected
    assert str(TOOL_CALL_UUID_NAMESPACE) == "c5773f4c-0b3f-57bc-9147-36daf7921a1b"


def test_tool_call_uuid_vector():
    """113. Mirrors TestToolCallUUID/vector (codersdk/workspacesdk/toolcall_test.go)."""
    got = tool_call_uuid(CHAT, 42, "toolu_01/%x y")
    assert got == "1a9cb501-66b5-51bd-a7c6-1bf0e500b268"
    assert uuid.UUID(got).version == 5
    assert Key(CHAT, 42, "toolu_01/%x y").uuid == got


BASE_UUID = (CHAT, 42, "toolu_01")

EACH_INPUT = [
    # Mirrors TestToolCallUUID/each input changes the UUID: another chat.
    pytest.param((OTHER_CHAT, 42, "toolu_01"), id="114-other-chat"),
    # Mirrors TestToolCallUUID/each input changes the UUID: message 43.
    pytest.param((CHAT, 43, "toolu_01"), id="115-other-message"),
    # Mirrors TestToolCallUUID/each input changes the UUID: provider ID toolu_02.
    pytest.param((CHAT, 42, "toolu_02"), id="116-other-provider-id"),
    # Mirrors TestToolCallUUID/each input changes the UUID: the escaped form toolu%5F01.
    pytest.param((CHAT, 42, "toolu%5F01"), id="117-escaped-provider-id"),
]


@pytest.mark.parametrize("changed", EACH_INPUT)
def test_tool_call_uuid_each_input_changes(changed):
    """Mirrors TestToolCallUUID/each input changes the UUID
    (codersdk/workspacesdk/toolcall_test.go); the base is stable across calls."""
    base = tool_call_uuid(*BASE_UUID)
    assert tool_call_uuid(*BASE_UUID) == base
    assert tool_call_uuid(*changed) != base


def test_tool_call_context():
    """118. Mirrors TestToolCallContext (codersdk/workspacesdk/toolcall_test.go).

    The model has no context.Context: a tool call travels as per-request headers. The
    observable twin: a request with no tool call headers carries no tool call, and
    writing a tool call then reading it back gives the same value unchanged."""
    assert parse_tool_call_headers(()) is None
    call = ToolCallHeaders(42, "toolu_01/%x y", 1500)
    headers = set_tool_call_headers((), call.message_id, call.tool_call_id, call.age_ms)
    assert parse_tool_call_headers(headers) == call


ERROR_TEXT = [
    # Mirrors TestToolCallErrorMessage/message only.
    pytest.param(ToolCallError(STALE_TOOL_CALL, "Tool call is stale."),
                 "tool call error stale_tool_call: Tool call is stale.",
                 id="119-message-only"),
    # Mirrors TestToolCallErrorMessage/detail and validations.
    pytest.param(ToolCallError(INPUT_MISMATCH, "Input differs.", "command changed",
                               (("command", "differs"),)),
                 "tool call error input_mismatch: Input differs."
                 "\n\tError: command changed\n\tcommand: differs",
                 id="120-detail-and-validations"),
]


@pytest.mark.parametrize("err, text", ERROR_TEXT)
def test_tool_call_error_message(err, text):
    """Mirrors TestToolCallErrorMessage/<row> (codersdk/workspacesdk/toolcall_test.go)."""
    assert err.text() == text


# ---------------------------------------------------------------------------
# 5.7 TestReadToolCallError (items 121-135)
# ---------------------------------------------------------------------------


def _json(value) -> bytes:
    return json.dumps(value).encode()


CODED = [
    # Mirrors TestReadToolCallError/stale_tool_call (with detail).
    pytest.param(_json({"message": "Stale.", "code": STALE_TOOL_CALL, "detail": "message 41"}),
                 STALE_TOOL_CALL, id="121-stale"),
    # Mirrors TestReadToolCallError/agent_started_after_tool_call.
    pytest.param(tool_call_error(AGENT_STARTED_AFTER_TOOL_CALL).body(),
                 AGENT_STARTED_AFTER_TOOL_CALL, id="122-agent-started"),
    # Mirrors TestReadToolCallError/input_mismatch.
    pytest.param(tool_call_error(INPUT_MISMATCH).body(), INPUT_MISMATCH, id="123-input-mismatch"),
    # Mirrors TestReadToolCallError/tool_call_canceled.
    pytest.param(tool_call_error(TOOL_CALL_CANCELED).body(), TOOL_CALL_CANCELED,
                 id="124-canceled"),
]


@pytest.mark.parametrize("body, code", CODED)
def test_read_tool_call_error_coded(body, code):
    """Mirrors TestReadToolCallError/<code> (codersdk/workspacesdk/agentconn_internal_test.go):
    a 409 with a known code is a ToolCallError with that code and a non-empty message."""
    err = read_tool_call_error(409, body)
    assert isinstance(err, ToolCallError)
    assert err.code == code
    assert err.message


def test_read_tool_call_error_keeps_detail():
    """Item 121's detail survives the read (the Go test compares the whole error)."""
    body = _json({"message": "Stale.", "code": STALE_TOOL_CALL, "detail": "message 41",
                  "validations": [{"field": "message_id", "detail": "41 < 42"}]})
    assert read_tool_call_error(409, body) == ToolCallError(
        STALE_TOOL_CALL, "Stale.", "message 41", (("message_id", "41 < 42"),))


PLAIN = [
    # Mirrors TestReadToolCallError/409 no code.
    pytest.param(409, _json({"message": "Conflict."}), id="125-409-no-code"),
    # Mirrors TestReadToolCallError/409 unknown code.
    pytest.param(409, _json({"message": "Pending.", "code": "start_pending"}),
                 id="126-409-unknown-code"),
    # Mirrors TestReadToolCallError/409 empty object.
    pytest.param(409, b"{}", id="127-409-empty-object"),
    # Mirrors TestReadToolCallError/409 empty body.
    pytest.param(409, b"", id="128-409-empty-body"),
    # Mirrors TestReadToolCallError/409 invalid JSON.
    pytest.param(409, b'{"code":', id="129-409-invalid-json"),
    # Mirrors TestReadToolCallError/409 text/plain.
    pytest.param(409, b"conflict\n", id="130-409-text-plain"),
    # Mirrors TestReadToolCallError/404 JSON with a known code.
    pytest.param(404, tool_call_error(STALE_TOOL_CALL).body(), id="131-404-known-code"),
    # Mirrors TestReadToolCallError/404 text/plain.
    pytest.param(404, b"404 page not found\n", id="132-404-text-plain"),
    # Mirrors TestReadToolCallError/400 JSON.
    pytest.param(400, _json({"message": "Invalid tool call headers.", "detail": "x"}),
                 id="133-400-json"),
    # Mirrors TestReadToolCallError/500 JSON.
    pytest.param(500, _json({"message": "The tool call handler failed."}), id="134-500-json"),
    # Mirrors TestReadToolCallError/body read failure: the model has whole bodies, so the
    # twin is the part read before the failure; it must not become a ToolCallError.
    pytest.param(409, b'{"code":"stale_tool_call"', id="135-body-read-failure"),
]


@pytest.mark.parametrize("status, body", PLAIN)
def test_read_tool_call_error_plain(status, body):
    """Mirrors TestReadToolCallError/<row> (codersdk/workspacesdk/agentconn_internal_test.go).

    Go checks the error equals ``codersdk.ReadBodyAsError`` (type, text, status, response);
    the model has no SDK error type, so the observable decision is that
    read_tool_call_error returns None and the caller treats the answer as a plain HTTP
    error with its status and body."""
    assert read_tool_call_error(status, body) is None


GO_DECODE = [
    # Go's json.Unmarshal into ToolCallError fails on a wrong field type, so the SDK falls
    # back to ReadBodyAsError: the model returns None instead of crashing.
    pytest.param(_json({"code": STALE_TOOL_CALL, "validations": 5}), None,
                 id="validations-not-a-list"),
    pytest.param(_json({"code": STALE_TOOL_CALL, "message": 7}), None, id="message-not-a-string"),
    pytest.param(_json({"code": STALE_TOOL_CALL, "validations": ["x"]}), None,
                 id="validation-not-an-object"),
    pytest.param(_json([STALE_TOOL_CALL]), None, id="array-body"),
    pytest.param(b'{"code":"stale_tool_call","x":NaN}', None, id="nan-is-not-json"),
    # null leaves a Go string field empty instead of becoming the text "None".
    pytest.param(_json({"code": STALE_TOOL_CALL, "message": None, "detail": None,
                        "validations": None}),
                 ToolCallError(STALE_TOOL_CALL, ""), id="nulls-are-empty"),
    # Invalid UTF-8 inside a JSON string becomes U+FFFD in Go; the error still reads.
    pytest.param(b'{"code":"stale_tool_call","message":"a\xffb"}',
                 ToolCallError(STALE_TOOL_CALL, "a\ufffdb"), id="invalid-utf8-in-string"),
]


@pytest.mark.parametrize("body, expected", GO_DECODE)
def test_read_tool_call_error_decodes_like_go(body, expected):
    """Rule 4 of identity.py: a 409 body is decoded the way Go's json.Unmarshal fills
    ToolCallError (no Go test of its own; these pin the model's Go twin)."""
    assert read_tool_call_error(409, body) == expected


# ---------------------------------------------------------------------------
# 5.7 TestDoWithToolCall (items 136-138)
# ---------------------------------------------------------------------------


def test_do_with_tool_call_age_includes_connect_time():
    """136. Mirrors TestDoWithToolCall/age includes connect time
    (codersdk/workspacesdk/agentconn_internal_test.go).

    The model has no dial inside the send: the caller dials first and computes the age
    at send time, after the dial. The observable twin: a call 1000 ms old whose dial
    took 5000 ms writes Age "6000"."""
    headers = set_tool_call_headers((), 42, "toolu_01", 1000 + 5000)
    assert _value(headers, AGE_MS_HEADER) == ["6000"]


def test_do_with_tool_call_dial_error():
    """137. Mirrors TestDoWithToolCall/dial error
    (codersdk/workspacesdk/agentconn_internal_test.go).

    The model abstracts ``*url.Error``: a failed dial is a ``core.TransportError`` (no
    status, no body) answering the DIAL request (docs/interfaces.md), which carries no
    tool call headers, so no Age header was sent; the tool call request is never built.
    The observable decisions: the dial request parses as "not a tool call", and a
    transport error is not an HTTP answer, so it can never be read as a coded 409."""
    dial = core.Request("replica-1:1", "replica-1", "DIAL", "/")
    assert core.header_values(dial.headers, AGE_MS_HEADER) == []
    assert parse_tool_call_headers(dial.headers) is None
    failed = core.TransportError(dial.req_id, "dial tcp: connection refused")
    assert not isinstance(failed, core.Response)
    assert not hasattr(failed, "status")


# 138 (unused connection is closed) is ported in tests/test_agent_sdk.py, with the
# full ReadBodyAsError comparisons of 125-135, 136-137 end to end, and 148 against the
# agent model.


# ---------------------------------------------------------------------------
# 5.7 TestRunAgeFromHeader (items 139-147)
# ---------------------------------------------------------------------------

RUN_AGE = [
    # Mirrors TestRunAgeFromHeader/absent.
    pytest.param((), 0, id="139-absent"),
    # Mirrors TestRunAgeFromHeader/zero.
    pytest.param(((RUN_AGE_MS_HEADER, "0"),), 0, id="140-zero"),
    # Mirrors TestRunAgeFromHeader/2500 (2.5 s).
    pytest.param(((RUN_AGE_MS_HEADER, "2500"),), 2500, id="141-2500"),
    # Mirrors TestRunAgeFromHeader/max.
    pytest.param(((RUN_AGE_MS_HEADER, "9223372036854"),), 9_223_372_036_854, id="142-max"),
    # Mirrors TestRunAgeFromHeader/above max.
    pytest.param(((RUN_AGE_MS_HEADER, "9223372036855"),), 0, id="143-above-max"),
    # Mirrors TestRunAgeFromHeader/negative.
    pytest.param(((RUN_AGE_MS_HEADER, "-1"),), 0, id="144-negative"),
    # Mirrors TestRunAgeFromHeader/not a number.
    pytest.param(((RUN_AGE_MS_HEADER, "abc"),), 0, id="145-not-a-number"),
    # Mirrors TestRunAgeFromHeader/empty.
    pytest.param(((RUN_AGE_MS_HEADER, ""),), 0, id="146-empty"),
    # Mirrors TestRunAgeFromHeader/two values.
    pytest.param(((RUN_AGE_MS_HEADER, "1"), (RUN_AGE_MS_HEADER, "2")), 0, id="147-two-values"),
]


@pytest.mark.parametrize("headers, expected", RUN_AGE)
def test_run_age_from_header(headers, expected):
    """Mirrors TestRunAgeFromHeader/<row> (codersdk/workspacesdk/agentconn_internal_test.go)."""
    assert parse_run_age_ms(headers) == expected


# ---------------------------------------------------------------------------
# 5.8 TestAgentConnToolCallRequests (item 148)
# ---------------------------------------------------------------------------


def test_agent_conn_tool_call_requests():
    """148. Mirrors TestAgentConnToolCallRequests (codersdk/workspacesdk/agentconn_test.go).

    The model has no AgentConn, so this builds the requests the way docs/interfaces.md
    says a replica does (connection-wide headers, then ``set_tool_call_headers`` per
    request) and checks what the agent would see and what the caller reads back."""
    conn = ((CHAT_ID_HEADER, CHAT), (TOOL_CALL_ID_HEADER, "connection-wide"))

    # StartProcess with tool call {42, "toolu_start", 1.5 s}: per-request headers replace
    # the connection-wide Id (with_header semantic); Chat-Id is kept.
    start = core.Request(
        "replica-1:1", "replica-1", "POST", "/api/v0/processes/start",
        headers=set_tool_call_headers(conn, 42, "toolu_start", 1500),
        body=core.json_body({"command": "echo hi", "background": True}),
    )
    assert _value(start.headers, CHAT_ID_HEADER) == [CHAT]
    assert _value(start.headers, TOOL_CALL_ID_HEADER) == ["toolu_start"]
    assert _value(start.headers, MESSAGE_ID_HEADER) == ["42"]
    assert _value(start.headers, AGE_MS_HEADER) == ["1500"]
    started = core.Response(
        start.req_id, 200, "application/json",
        core.json_body({"id": tool_call_uuid(CHAT, 42, "toolu_start"), "started": True}),
        ((RUN_AGE_MS_HEADER, "2500"),),
    )
    assert started.json() == {"id": tool_call_uuid(CHAT, 42, "toolu_start"), "started": True}
    assert parse_run_age_ms(started.headers) == 2500

    # CancelToolCall with tool call {43, "toolu/cancel", 20 ms} and threshold 30000.
    cancel_id = tool_call_uuid(CHAT, 43, "toolu/cancel")
    cancel = core.Request(
        "replica-1:2", "replica-1", "POST", f"/api/v0/tool-calls/{cancel_id}/cancel",
        headers=set_tool_call_headers(conn, 43, "toolu/cancel", 20),
        body=core.json_body({"stop_if_run_age_below_ms": clamp_ms(30_000)}),
    )
    assert cancel.body == b'{"stop_if_run_age_below_ms":30000}'
    assert _value(cancel.headers, TOOL_CALL_ID_HEADER) == ["toolu%2Fcancel"]
    assert _value(cancel.headers, MESSAGE_ID_HEADER) == ["43"]
    assert _value(cancel.headers, AGE_MS_HEADER) == ["20"]
    # The agent derives the path's UUID from the headers of the same request.
    parsed = parse_tool_call_headers(cancel.headers)
    assert tool_call_uuid(CHAT, parsed.message_id, parsed.tool_call_id) == cancel_id

    # The cancel answer round-trips byte-exactly, a non-UTF-8 recorded body included.
    recorded = b"\xff\xfe not utf-8 \x00"
    answer = {
        "started": True, "status_code": 200, "content_type": "application/octet-stream",
        "body": base64.b64encode(recorded).decode("ascii"),
        "process": {"running": False, "canceled": True, "output": "",
                    "exit_code": 137, "run_age_ms": 1234},
    }
    canceled = core.Response(cancel.req_id, 200, "application/json", core.json_body(answer))
    assert canceled.json() == answer
    assert base64.b64decode(canceled.json()["body"]) == recorded
    assert read_tool_call_error(canceled.status, canceled.body) is None

    # A stale cancel with an empty request: the field is always sent, 0 included, and a
    # coded 409 reads as a ToolCallError.
    stale = core.Request(
        "replica-1:3", "replica-1", "POST", f"/api/v0/tool-calls/{cancel_id}/cancel",
        headers=set_tool_call_headers(conn, 43, "toolu/cancel", 20),
        body=core.json_body({"stop_if_run_age_below_ms": 0}),
    )
    assert stale.body == b'{"stop_if_run_age_below_ms":0}'
    refused = core.Response(stale.req_id, 409, "application/json",
                            tool_call_error(STALE_TOOL_CALL).body())
    err = read_tool_call_error(refused.status, refused.body)
    assert isinstance(err, ToolCallError) and err.code == STALE_TOOL_CALL

    # ListProcesses with no tool call keeps the connection-wide values.
    listing = core.Request("replica-1:4", "replica-1", "GET", "/api/v0/processes/list",
                           headers=conn)
    assert _value(listing.headers, TOOL_CALL_ID_HEADER) == ["connection-wide"]
    assert _value(listing.headers, MESSAGE_ID_HEADER) == []
    assert _value(listing.headers, AGE_MS_HEADER) == []


# ---------------------------------------------------------------------------
# Model-only checks: raw-byte provider IDs, clamping
# ---------------------------------------------------------------------------


def test_non_utf8_provider_id_from_header():
    """Rule 5 of identity.py: Go keeps a provider ID's bytes raw, so ``%FF`` parses, the
    agent can derive its UUID (the raw byte 0xFF is hashed), and it escapes back the same."""
    headers = _replace(TOOL_CALL_ID_HEADER, "a%FFb")
    parsed = parse_tool_call_headers(headers)
    raw = parsed.tool_call_id.encode("utf-8", errors="surrogateescape")
    assert raw == b"a\xffb"
    assert path_escape(parsed.tool_call_id) == "a%FFb"
    assert tool_call_uuid(CHAT, 42, parsed.tool_call_id) != tool_call_uuid(CHAT, 42, "a\ufffdb")


def test_clamp_ms():
    """The cancel stop threshold rule (section 3 step 8): negative is 0, large saturates."""
    assert clamp_ms(-5) == 0
    assert clamp_ms(30_000) == 30_000
    assert clamp_ms(2**63) == MAX_MS


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@given(
    message_id=st.integers(min_value=1, max_value=2**63 - 1),
    provider_id=st.text(min_size=1),
    age_ms=st.integers(min_value=0, max_value=MAX_MS),
)
def test_set_then_parse_round_trips(message_id, provider_id, age_ms):
    """Any non-empty provider ID and any age in 0..MAX_MS survive set then parse."""
    headers = set_tool_call_headers(((CHAT_ID_HEADER, CHAT),), message_id, provider_id, age_ms)
    assert parse_tool_call_headers(headers) == ToolCallHeaders(message_id, provider_id, age_ms)


@given(st.text())
def test_path_escape_then_unescape(value):
    """path_unescape inverts path_escape for any text."""
    assert path_unescape(path_escape(value)) == value


@given(st.binary())
def test_path_escape_then_unescape_raw_bytes(raw):
    """Rule 5: any bytes (kept as surrogateescape text) survive escape then unescape."""
    value = raw.decode("utf-8", errors="surrogateescape")
    assert path_unescape(path_escape(value)) == value


@given(st.text())
def test_path_escape_output_is_a_safe_path_segment(value):
    """Go's PathEscape never leaves '/', '?', ';', ',', '%' unescaped or a non-ASCII byte."""
    escaped = path_escape(value)
    assert escaped.isascii()
    assert not set(escaped) & set("/?;, #")
    assert all(escaped[i + 1 : i + 3].isalnum() for i, c in enumerate(escaped) if c == "%")


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_written_age_is_floored_and_never_negative(age_ms):
    """Rule 3: the Age header is floor(age) for non-negative ages and 0 otherwise."""
    headers = set_tool_call_headers((), 1, "x", age_ms)
    written = int(core.header_value(headers, AGE_MS_HEADER))
    assert written == (int(age_ms // 1) if age_ms >= 0 else 0)
