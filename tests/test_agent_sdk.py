"""The SDK cases of docs/contract.md A5.6-A5.8 that need more than header parsing:
how a failed answer is read (``TestReadToolCallError``, items 125-135), how a tool call
request is sent (``TestDoWithToolCall``, 136-138), the tool call in the handler's context
(``TestToolCallContext``, 118) and the connection test (``TestAgentConnToolCallRequests``,
148). The other SDK cases stay in tests/test_identity.py.

Items 125-135 compare with Go's ``codersdk.ReadBodyAsError`` result, worked out by hand
from codersdk/client.go (read in coder/coder) and written here as literals: the error's
type (``*codersdk.Error`` / a plain ``decode body`` or ``read body`` error, never a
``*workspacesdk.ToolCallError``), its status, message, detail and ``Error()`` text, and the
class chatd's ``ClassifyAgentError`` gives it (docs/contract.md C5.1). The functions under
test are model/sdk.py's ``read_agent_error`` and model/chattool/classifier.py's ``classify``; where the
agent model can produce the answer itself (a 404 from an unknown route, a 400, a recorded
500, a coded 409) the answer comes from the agent model, not from a literal.

Items 136-138 and 148 run chatd's tool layer (model/chattool/) and the agent model
(model/agent/) against each other: requests are built by the model's own SDK code and
answered by the agent model.
"""

from __future__ import annotations

import json

import pytest

from agent_harness import CHAT, AgentHarness, CountingHandler
from toolcall_sim.model import agent, sdk
from toolcall_sim.model.agent import middleware as agent_middleware
from toolcall_sim.model import chattool as ct
from toolcall_sim.model.core import CancelTimer, Request, Response, Send, SetTimer, TransportError, header_values, json_body
from toolcall_sim.model.identity import (
    AGE_MS_HEADER,
    CHAT_ID_HEADER,
    MESSAGE_ID_HEADER,
    STALE_TOOL_CALL,
    TOOL_CALL_ID_HEADER,
    Key,
    ToolCallError,
    parse_run_age_ms,
    parse_tool_call_headers,
    set_tool_call_headers,
    tool_call_error,
    tool_call_uuid,
)

AGENTCONN_INTERNAL_TEST = "codersdk/workspacesdk/agentconn_internal_test.go"
AGENTCONN_TEST = "codersdk/workspacesdk/agentconn_test.go"
TOOLCALL_TEST = "codersdk/workspacesdk/toolcall_test.go"

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
START_URL = ct.AGENT_URL + agent.START_PATH


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------
# 5.7 TestReadToolCallError (items 125-135)
# ---------------------------------------------------------------------------

NO_MESSAGE_409 = "unexpected status code 409, response has no message"

READ_AS_GO = [
    # (status, Content-Type, body) -> Go's ReadBodyAsError value, its Error() text without
    # method and URL, and chatd's class for it.
    pytest.param(409, JSON, _json({"message": "Conflict."}),
                 sdk.SDKError(409, "Conflict."), "unexpected status code 409: Conflict.",
                 ct.ErrorClass.RESPONSE, id="125-409-no-code"),
    pytest.param(409, JSON, _json({"message": "Pending.", "code": "start_pending"}),
                 sdk.SDKError(409, "Pending."), "unexpected status code 409: Pending.",
                 ct.ErrorClass.RESPONSE, id="126-409-unknown-code"),
    pytest.param(409, JSON, b"{}",
                 sdk.SDKError(409, NO_MESSAGE_409, "{}"),
                 f"unexpected status code 409: {NO_MESSAGE_409}\n\tError: {{}}",
                 ct.ErrorClass.RESPONSE, id="127-409-empty-object"),
    pytest.param(409, JSON, b"",
                 sdk.SDKError(409, "empty response body"), "unexpected status code 409: empty response body",
                 ct.ErrorClass.RESPONSE, id="128-409-empty-body"),
    pytest.param(409, "", b"",
                 sdk.SDKError(409, 'unexpected non-JSON response ""', "no response body"),
                 'unexpected status code 409: unexpected non-JSON response ""\n\tError: no response body',
                 ct.ErrorClass.RESPONSE, id="128-409-empty-body-no-content-type"),
    # json.Decoder.Decode on a truncated object fails with io.ErrUnexpectedEOF, not io.EOF,
    # so ReadBodyAsError returns a plain "decode body" error: chatd cannot read the answer.
    pytest.param(409, JSON, b'{"code":',
                 sdk.DecodeBodyError("unexpected EOF"), "decode body: unexpected EOF",
                 ct.ErrorClass.UNREADABLE, id="129-409-invalid-json"),
    pytest.param(409, TEXT, b"conflict\n",
                 sdk.SDKError(409, 'unexpected non-JSON response "text/plain; charset=utf-8"', "conflict\n"),
                 'unexpected status code 409: unexpected non-JSON response "text/plain; charset=utf-8"'
                 "\n\tError: conflict\n",
                 ct.ErrorClass.RESPONSE, id="130-409-text-plain"),
    pytest.param(404, JSON, tool_call_error(STALE_TOOL_CALL).body(),
                 sdk.SDKError(404, "The tool call is in an older message than the chat's latest message."),
                 "unexpected status code 404: The tool call is in an older message than the chat's latest message.",
                 ct.ErrorClass.RESPONSE, id="131-404-known-code"),
    pytest.param(404, TEXT, b"404 page not found\n",
                 sdk.SDKError(404, 'unexpected non-JSON response "text/plain; charset=utf-8"', "404 page not found\n"),
                 'unexpected status code 404: unexpected non-JSON response "text/plain; charset=utf-8"'
                 "\n\tError: 404 page not found\n",
                 ct.ErrorClass.RESPONSE, id="132-404-text-plain"),
    pytest.param(400, JSON, _json({"message": "Invalid tool call headers.", "detail": "x",
                                   "validations": [{"field": "age", "detail": "negative"}]}),
                 sdk.SDKError(400, "Invalid tool call headers.", "x", (("age", "negative"),)),
                 "unexpected status code 400: Invalid tool call headers.\n\tError: x\n\tage: negative",
                 ct.ErrorClass.RESPONSE, id="133-400-json"),
    pytest.param(500, JSON, _json({"message": "The tool call handler failed."}),
                 sdk.SDKError(500, "The tool call handler failed."),
                 "unexpected status code 500: The tool call handler failed.",
                 ct.ErrorClass.RESPONSE, id="134-500-json"),
]


@pytest.mark.parametrize("status, content_type, body, expected, text, chatd_class", READ_AS_GO)
def test_read_tool_call_error_as_read_body_as_error(status, content_type, body, expected, text, chatd_class):
    """Mirrors TestReadToolCallError/<row> (codersdk/workspacesdk/agentconn_internal_test.go,
    items 125-134): not a ToolCallError, but exactly the value ReadBodyAsError gives (type,
    status, message, detail, validations, text); chatd classifies it by that type, with the
    same text and no refusal code."""
    got = sdk.read_agent_error(status, content_type, body)
    assert not isinstance(got, ToolCallError)
    assert got == expected
    assert got.text() == text
    err = ct.classify(Response("r1", status, content_type, body), op="Post", url=START_URL)
    assert (err.cls, err.text, err.code) == (chatd_class, text, "")


def test_read_tool_call_error_body_read_failure():
    """Mirrors TestReadToolCallError/body read failure (agentconn_internal_test.go, item
    135): a 409 whose body fails after ``{"code":"stale_tool_call"`` gives the read error
    wrapped as ReadBodyAsError does ("read body: ..."), not a ToolCallError, although the
    part read has a known code. The model's answers are whole, so the failure is passed in
    explicitly; without it the same bytes are an undecodable body, still no refusal."""
    partial = b'{"code":"stale_tool_call"'
    got = sdk.read_agent_error(409, JSON, partial, read_error="unexpected EOF")
    assert got == sdk.ReadBodyError("unexpected EOF") and got.text() == "read body: unexpected EOF"
    assert got.text() == sdk.read_body_as_error(409, JSON, partial, read_error="unexpected EOF").text()
    assert sdk.read_agent_error(409, JSON, partial) == sdk.DecodeBodyError("unexpected EOF")


@pytest.mark.parametrize("code", ["stale_tool_call", "agent_started_after_tool_call", "input_mismatch",
                                  "tool_call_canceled"])
def test_read_tool_call_error_known_codes_are_refusals(code):
    """The other side of items 121-124: the same reader gives a ToolCallError for a 409
    with a known code, and chatd classifies it Refused with that code."""
    body = tool_call_error(code).body()
    assert sdk.read_agent_error(409, JSON, body) == tool_call_error(code)
    err = ct.classify(Response("r1", 409, JSON, body))
    assert (err.cls, err.code) == (ct.ErrorClass.REFUSED, code)


def test_agent_failure_answers_read_as_go():
    """Mirrors TestReadToolCallError (agentconn_internal_test.go), items 132-134 and 121,
    with answers the agent model writes itself: an unknown route's
    404 text/plain, a malformed-header 400, a recorded handler panic 500, a coded stale
    409. Each is read exactly as Go's SDK reads it."""
    h = AgentHarness()
    not_found = h.answer(h.request("POST", "/api/v0/nowhere"))
    bad = h.answer(h.start(m=None, headers=((MESSAGE_ID_HEADER, "1"),)))
    h.start(2, "other", run=False)
    h.run_handlers(panic=True)
    panicked = h.answer(h.start(2, "other"))
    stale = h.answer(h.start(1, "call"))

    def read(ans):
        return sdk.read_agent_error(ans.status, ans.content_type, ans.body)

    assert read(not_found) == sdk.SDKError(404, 'unexpected non-JSON response "text/plain; charset=utf-8"',
                                           "404 page not found\n")
    assert read(bad).status == 400 and read(bad).message == "Invalid tool call headers."
    assert "Coder-Tool-Call-Id" in read(bad).detail
    assert read(panicked) == sdk.SDKError(500, "The tool call handler failed.")
    assert read(stale) == tool_call_error(STALE_TOOL_CALL)


def test_read_body_as_error_go_decoder_rules():
    """model/sdk.py rule 1 and 2 at their edges (no Go test of their own; each follows
    codersdk/client.go): trailing bytes after the first value are ignored, keys match
    case-insensitively, a wrong field type is a decode error, null is an empty message, 401
    adds the login helper, and a long non-JSON body is cut at 2048 bytes."""
    assert sdk.read_body_as_error(409, JSON, b'{"message":"a"} trailing') == sdk.SDKError(409, "a")
    assert sdk.read_body_as_error(409, JSON, b'{"MESSAGE":"a"}') == sdk.SDKError(409, "a")
    wrong = sdk.read_body_as_error(409, JSON, b'{"message":5}')
    assert isinstance(wrong, sdk.DecodeBodyError) and "cannot unmarshal number" in wrong.reason
    assert sdk.read_body_as_error(409, JSON, b"null") == sdk.SDKError(409, NO_MESSAGE_409, "null")
    assert sdk.read_body_as_error(401, JSON, b'{"message":"no"}').text() == (
        "unexpected status code 401: no: Try logging in using 'coder login'.")
    long = sdk.read_body_as_error(502, TEXT, b"x" * 3000)
    assert long.detail == "x" * 2048 + "..."


# ---------------------------------------------------------------------------
# 5.7 TestDoWithToolCall (items 136-138)
# ---------------------------------------------------------------------------


def _execute(command: str, provider_id: str = "toolu_01", **extra) -> ct.ToolCall:
    return ct.ToolCall(provider_id, "execute", json.dumps({"command": command, **extra}))


def _sent(effects) -> list[Request]:
    return [e.request for e in effects if isinstance(e, Send)]


def test_do_with_tool_call_age_includes_connect_time():
    """Mirrors TestDoWithToolCall/age includes connect time (agentconn_internal_test.go,
    item 136): a tool call 1 s old whose connection took 5 s to set up reaches the agent
    with Age "6000", in one request. In the model the replica dials first and chatd's tool
    layer stamps the age when it sends, after the dial; the agent model then sees 6000."""
    identity = ct.Identity(CHAT, 42, "toolu_01", ct.ToolCallAge(at_read_ms=1_000, read_at_ms=0))
    dial_ms = 5_000
    _, effects = ct.begin_call(_execute("sleep 30"), identity, "replica-1", "t1", CHAT, now_ms=dial_ms)
    [start] = _sent(effects)
    assert header_values(start.headers, AGE_MS_HEADER) == ["6000"]
    h = AgentHarness()
    h.send(start)
    assert parse_tool_call_headers(h.requests[start.req_id].headers).age_ms == 6_000
    assert h.json(start.req_id)["id"] == tool_call_uuid(CHAT, 42, "toolu_01")


def test_do_with_tool_call_dial_error():
    """Mirrors TestDoWithToolCall/dial error (agentconn_internal_test.go, item 137): the
    error wraps the dial error as a ``*url.Error`` with Op "Post". chatd's twin of
    ``*url.Error`` is the Unreachable class with Go's ``Post "<url>": <dial error>`` text,
    and the call's result quotes it.

    Abstracted: Go dials inside the send and sets the Age header only after the dial, so a
    failed dial leaves the request without one. The model has no dial inside the send (the
    replica dials once before any tool call request, and that DIAL request carries no tool
    call headers); a transport failure answers a request that was built with its Age but
    delivered nothing to the agent, so the agent never saw an age for the call."""
    identity = ct.Identity(CHAT, 42, "toolu_01", ct.ToolCallAge(0, 0))
    cs, effects = ct.begin_call(_execute("sleep 30"), identity, "replica-1", "t1", CHAT, now_ms=0)
    [start] = _sent(effects)
    dial_error = "dial tcp 10.0.0.2:4: connect: connection refused"
    err = ct.classify(TransportError(start.req_id, dial_error), op="Post", url=START_URL)
    assert err.cls is ct.ErrorClass.UNREACHABLE
    assert err.text == f'Post "{START_URL}": {dial_error}'
    cs, _ = ct.on_answer(cs, TransportError(start.req_id, dial_error), now_ms=10)
    assert cs.result is not None and dial_error in cs.result.content


def test_do_with_tool_call_unused_connection_closed():
    """Mirrors TestDoWithToolCall/unused connection is closed (agentconn_internal_test.go,
    item 138): the request context is canceled right after the dial -> context.Canceled,
    and the connection is closed server-side. In the model the attempt's context ending is
    ``chattool.abort``: no result (nothing is committed), every timer the call armed is
    canceled (nothing is left holding the request), and the agent is told the client left,
    so it drops the waiting request and writes nothing to it; the work already begun still
    runs (A2)."""
    identity = ct.Identity(CHAT, 42, "toolu_01", ct.ToolCallAge(0, 3_600_000))
    cs, effects = ct.begin_call(_execute("sleep 30"), identity, "replica-1", "t1", CHAT, now_ms=3_600_000)
    armed = {e.name for e in effects if isinstance(e, SetTimer)}
    [start] = _sent(effects)
    h = AgentHarness()
    h.send(start, run=False)
    assert start.req_id in h.state.waiters
    aborted = ct.abort(cs)
    assert cs.result is None and armed and {e.name for e in aborted if isinstance(e, CancelTimer)} == armed
    h.gone(start.req_id)
    assert start.req_id not in h.state.waiters
    h.run_handlers()
    assert h.answer(start.req_id) is None and h.starts() == 1


# ---------------------------------------------------------------------------
# 5.6 TestToolCallContext (item 118), agent side
# ---------------------------------------------------------------------------


def test_tool_call_context_reaches_the_handler(monkeypatch):
    """Mirrors TestToolCallContext (codersdk/workspacesdk/toolcall_test.go, item 118) end to
    end: a request with no tool call carries none to the handler's context; a tool call
    written by the SDK twin (``set_tool_call_headers``) arrives in the handler as the same
    value (chat, message, raw provider ID with its escaping undone)."""
    handler = CountingHandler()
    monkeypatch.setattr(agent_middleware, "_run_handler", handler)
    h = AgentHarness()
    h.request("POST", agent.START_PATH, body=b"x")
    provider_id = "toolu_01/%x y"
    headers = set_tool_call_headers(((CHAT_ID_HEADER, CHAT),), 42, provider_id, 1_500)
    h.send(Request("sdk-1", "chatd", "POST", agent.START_PATH, "", headers, b"x"))
    assert [key for key, _ in handler.seen] == [None, Key(CHAT, 42, provider_id)]


# ---------------------------------------------------------------------------
# 5.8 TestAgentConnToolCallRequests (item 148)
# ---------------------------------------------------------------------------


def test_agent_conn_tool_call_requests(monkeypatch):
    """Mirrors TestAgentConnToolCallRequests (codersdk/workspacesdk/agentconn_test.go, item
    148), against the agent model. The connection's extra headers are Chat-Id and
    ``Coder-Tool-Call-Id: connection-wide``; per-request tool call headers replace them.

    - StartProcess {42, "toolu_start", 1.5 s}: the agent sees one Id "toolu_start",
      Message-Id 42, Age 1500; a retry 2.5 s later carries run age 2500, which chatd's tool
      layer reads as the process's run age.
    - CancelToolCall {43, "toolu/cancel", 20 ms}, threshold 30000: the path is the UUID,
      the body ``{"stop_if_run_age_below_ms":30000}``, Id ``toolu%2Fcancel``; the answer
      round-trips byte-exactly through chatd's reader, a non-UTF-8 recorded body included,
      with a process that exited 137 and run age 1234.
    - A stale cancel with an empty request sends ``{"stop_if_run_age_below_ms":0}`` and
      reads as a ToolCallError stale_tool_call (chatd: Refused).
    - ListProcesses with no tool call keeps Id "connection-wide", no Message-Id or Age.

    Abstracted: the model's handlers do not write non-UTF-8 bodies, so the start handler
    of message 43 is wrapped to prefix its recorded body with two such bytes."""
    real = agent._run_handler

    def raw_bytes_handler(state, kind, req, key, now_ms):
        state, rec, effects = real(state, kind, req, key, now_ms)
        if key is not None and key.message_id == 43:
            rec = agent.Recorded(rec.status, rec.content_type, b"\xff\xfe" + rec.body)
        return state, rec, effects

    monkeypatch.setattr(agent_middleware, "_run_handler", raw_bytes_handler)
    conn = ((CHAT_ID_HEADER, CHAT), (TOOL_CALL_ID_HEADER, "connection-wide"))
    h = AgentHarness()

    # StartProcess.
    body = json_body({"command": "sleep 60", "background": True})
    headers = set_tool_call_headers(conn, 42, "toolu_start", 1_500)
    first = h.send(Request("c1", "chatd", "POST", agent.START_PATH, "", headers, body))
    seen = h.requests[first].headers
    assert header_values(seen, CHAT_ID_HEADER) == [CHAT]
    assert header_values(seen, TOOL_CALL_ID_HEADER) == ["toolu_start"]
    assert (header_values(seen, MESSAGE_ID_HEADER), header_values(seen, AGE_MS_HEADER)) == (["42"], ["1500"])
    uuid42 = tool_call_uuid(CHAT, 42, "toolu_start")
    assert h.process(uuid42).key == Key(CHAT, 42, "toolu_start")
    h.advance(2_500)
    retry = h.send(Request("c2", "chatd", "POST", agent.START_PATH, "", headers, body))
    assert h.json(retry) == {"id": uuid42, "started": True}
    assert parse_run_age_ms(h.answer(retry).headers) == 2_500
    identity = ct.Identity(CHAT, 42, "toolu_start", ct.ToolCallAge(1_500, 0))
    cs, _ = ct.begin_call(_execute("sleep 60", "toolu_start"), identity, "replica-1", "t1", CHAT, now_ms=0)
    cs, _ = ct.on_answer(cs, Response(cs.pending_req_id, 200, JSON, h.answer(retry).body, h.answer(retry).headers), 0)
    assert cs.process_id == uuid42 and cs.run_age_ms == 2_500

    # CancelToolCall of a call whose process exited with 137.
    h.send(Request("c3", "chatd", "POST", agent.START_PATH, "",
                   set_tool_call_headers(conn, 43, "toolu/cancel", 0), json_body({"command": "exit 137"})))
    h.advance(1_234)
    cancel_id = tool_call_uuid(CHAT, 43, "toolu/cancel")
    cancel_headers = set_tool_call_headers(conn, 43, "toolu/cancel", 20)
    cancel_body = json_body({"stop_if_run_age_below_ms": 30_000})
    assert cancel_body == b'{"stop_if_run_age_below_ms":30000}'
    rid = h.send(Request("c4", "chatd", "POST", f"/api/v0/tool-calls/{cancel_id}/cancel", "",
                         cancel_headers, cancel_body))
    seen = h.requests[rid].headers
    assert header_values(seen, TOOL_CALL_ID_HEADER) == ["toolu%2Fcancel"]
    assert (header_values(seen, MESSAGE_ID_HEADER), header_values(seen, AGE_MS_HEADER)) == (["43"], ["20"])
    assert h.status(rid) == 200
    recorded = h.answer("c3").body
    assert recorded.startswith(b"\xff\xfe")
    read = ct._read_cancel_answer(h.answer(rid))
    assert (read.started, read.status_code, read.content_type, read.body) == (True, 200, JSON, recorded)
    assert (read.process.running, read.process.exit_code, read.process.run_age_ms) == (False, 137, 1_234)

    # A stale cancel with an empty request (threshold 0): message 42 is older than 43.
    stale_id = tool_call_uuid(CHAT, 42, "toolu_start")
    empty = json_body({"stop_if_run_age_below_ms": 0})
    assert empty == b'{"stop_if_run_age_below_ms":0}'
    stale = h.send(Request("c5", "chatd", "POST", f"/api/v0/tool-calls/{stale_id}/cancel", "",
                           set_tool_call_headers(conn, 42, "toolu_start", 0), empty))
    ans = h.answer(stale)
    assert sdk.read_agent_error(ans.status, ans.content_type, ans.body) == tool_call_error(STALE_TOOL_CALL)
    assert ct.classify(ans).code == STALE_TOOL_CALL

    # ListProcesses without a tool call.
    listing = h.send(Request("c6", "chatd", "GET", agent.LIST_PATH, "", conn, b""))
    seen = h.requests[listing].headers
    assert header_values(seen, TOOL_CALL_ID_HEADER) == ["connection-wide"]
    assert header_values(seen, MESSAGE_ID_HEADER) == header_values(seen, AGE_MS_HEADER) == []
    assert h.status(listing) == 200
    assert {p["id"] for p in h.json(listing)["processes"]} == {uuid42, cancel_id}
