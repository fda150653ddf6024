"""Rev C conformance: every agent case of docs/contract.md A5.1 to A5.5, ported.

Most middleware cases run over the real start, edit and write handlers, so "calls" is the
number of processes started (or edits applied) and a success is the start route's 200.
Where a Go test depends on what its ``countingHandler`` answers (201 "ran N", a 202 with
JSON, a 418, a 204) or on its fake ``ProcessStopper`` (the threshold it was called with),
the port installs the same double (tests/agent_harness.py) over the model's handler
dispatch or stopper, so the middleware and cancel code under test stay the model's. Go
mounts the middleware over a bare router that accepts any method and path; the ports of
the DifferentMethod and DifferentPath cases mount it the same way (``mount``).

Each case's docstring names its Go file and test and its section 5 case number.
``CASES`` at the end maps every case 1..148 to the pytest node that ports it, and
``test_every_go_case_is_ported`` proves the table complete and every node real.
"""

from __future__ import annotations

import pytest

from agent_harness import CHAT, FAKE_PROCESS, HOUR_MS, OTHER_CHAT, TEXT_PLAIN, AgentHarness, CountingHandler, FakeStopper
from toolcall_sim.model import agent
from toolcall_sim.model.agent import middleware as agent_middleware
from toolcall_sim.model.agent import processes as agent_processes
from toolcall_sim.model.core import FMap, Reply, Truth, json_body
from toolcall_sim.model.identity import MAX_MS, RUN_AGE_MS_HEADER, Key, tool_call_uuid

S = 1_000
MIN = 60 * S

MIDDLEWARE_TEST = "agent/agenttoolcall/middleware_test.go"
CANCEL_TEST = "agent/agenttoolcall/cancel_test.go"
PROC_TEST = "agent/agentproc/toolcall_test.go"


@pytest.fixture
def counting(monkeypatch):
    """Install Go's countingHandler over every wrapped route; returns it for its count."""

    def install(**kw) -> CountingHandler:
        handler = CountingHandler(**kw)
        monkeypatch.setattr(agent_middleware, "_run_handler", handler)
        return handler

    return install


@pytest.fixture
def stopper(monkeypatch):
    """Install Go's fake ProcessStopper; returns it for its calls."""

    def install(process=FAKE_PROCESS, error: str = "") -> FakeStopper:
        fake = FakeStopper(process, error)
        monkeypatch.setattr(agent_processes, "stop_tool_call_process", fake)
        return fake

    return install


@pytest.fixture
def mount(monkeypatch):
    """Mount the middleware on one more (method, path), as Go's test router does."""

    def install(method: str, path: str):
        monkeypatch.setitem(agent.MIDDLEWARE_ROUTES, (method, path), "start")

    return install

# ---------------------------------------------------------------------------
# 5.1 middleware_test.go
# ---------------------------------------------------------------------------

# (id, docstring, prior runs [(m, call, command)], uptime_ms, request (m, call, age_ms, command),
#  expected status, expected code, expected starts, current key and value)
DECISIONS = [
    ("NoRecordRuns", None, [], HOUR_MS, (1, "call", 0, "echo a"), 200, None, 1, ((1, "call"), True)),
    ("RecordReturnsRecordedResponse", None, [(1, "call", "echo a")], HOUR_MS, (1, "call", 0, "echo a"), 200, None, 1, ((1, "call"), True)),
    ("RecordIgnoresAge", None, [(1, "call", "echo a")], HOUR_MS, (1, "call", 2 * HOUR_MS, "echo a"), 200, None, 1, ((1, "call"), True)),
    ("InputMismatch", None, [(1, "call", "echo first")], HOUR_MS, (1, "call", 0, "echo second"), 409, "input_mismatch", 1, ((1, "call"), True)),
    ("StaleMessage", None, [(2, "other", "echo a")], HOUR_MS, (1, "call", 0, "echo a"), 409, "stale_tool_call", 1, ((1, "call"), False)),
    ("StaleBeforeAgentStartedAfterToolCall", None, [(2, "other", "echo a")], HOUR_MS, (1, "call", 2 * HOUR_MS, "echo a"), 409, "stale_tool_call", 1, ((1, "call"), False)),
    ("OtherToolCallInLatestMessage", None, [(1, "other", "echo a")], HOUR_MS, (1, "call", 0, "echo a"), 200, None, 2, ((1, "other"), True)),
    ("SameToolCallIDInNewerMessageRuns", None, [(1, "call", "echo first")], HOUR_MS, (2, "call", 0, "echo second"), 200, None, 2, ((2, "call"), True)),
    ("AgentStartedAfterToolCall", None, [], 10 * S, (1, "call", 60 * S, "echo a"), 409, "agent_started_after_tool_call", 0, ((1, "call"), False)),
    ("AgentStartedAtMargin", None, [], 10 * S, (1, "call", 8_000, "echo a"), 409, "agent_started_after_tool_call", 0, ((1, "call"), False)),
    ("AgentStartedPastMargin", None, [], 10 * S, (1, "call", 7_999, "echo a"), 200, None, 1, ((1, "call"), True)),
    ("AgentStartedAfterMaxAge", None, [], HOUR_MS, (1, "call", MAX_MS, "echo a"), 409, "agent_started_after_tool_call", 0, ((1, "call"), False)),
]


@pytest.mark.parametrize("case", DECISIONS, ids=[c[0] for c in DECISIONS])
def test_middleware_decisions(case):
    """Mirrors TestMiddlewareDecisions/<id> (middleware_test.go, items 1, 2, 4-13): one decision-table row each."""
    _, _, prior, uptime, (m, call, age, command), status, code, starts, (cur_key, cur_value) = case
    h = AgentHarness(uptime_ms=uptime)
    for pm, pcall, pcommand in prior:
        assert h.status(h.start(pm, pcall, command=pcommand)) == 200
    rid = h.start(m, call, command=command, age_ms=age)
    assert h.status(rid) == status
    if code:
        assert h.code(rid) == code
    assert h.starts() == starts
    assert h.current(*cur_key) is cur_value


def test_record_returns_recorded_failure():
    """Mirrors TestMiddlewareDecisions/RecordReturnsRecordedFailure (middleware_test.go, item 3): a recorded 500
    is replayed as 500 and the handler does not run again."""
    h = AgentHarness()
    body = json_body({"command": "true", "workdir": "/missing"})
    first = h.start(body=body)
    again = h.start(body=body)
    assert h.status(first) == h.status(again) == 500
    assert h.answer(first).body == h.answer(again).body
    assert h.starts() == 0


INPUT_MISMATCH_CASES = [
    # (id, method, path, query, body, expected status)
    ("SameRequest", "POST", agent.START_PATH, "x=1", b"a", 201),  # 14
    ("DifferentBody", "POST", agent.START_PATH, "x=1", b"b", 409),  # 15
    ("DifferentQuery", "POST", agent.START_PATH, "x=2", b"a", 409),  # 16
    ("DifferentPath", "POST", "/other", "x=1", b"a", 409),  # 17
    ("DifferentMethod", "PUT", agent.START_PATH, "x=1", b"a", 409),  # 18
]


@pytest.mark.parametrize("case", INPUT_MISMATCH_CASES, ids=[c[0] for c in INPUT_MISMATCH_CASES])
def test_middleware_input_mismatch(case, counting, mount):
    """Mirrors TestMiddlewareInputMismatch/<id> (middleware_test.go, items 14-18): after
    POST /start?x=1 body "a" answered 201 "ran 1", the same request replays 201 "ran 1" and
    a change of body, query, path or method is refused with input_mismatch; the handler
    runs once. Go's router accepts any method and path, so /other and PUT /start are
    mounted here the same way."""
    _, method, path, query, body, status = case
    handler = counting()
    mount("POST", "/other")
    mount("PUT", agent.START_PATH)
    h = AgentHarness()
    first = h.request("POST", agent.START_PATH, query="x=1", body=b"a", m=1, call="call")
    assert (h.status(first), h.answer(first).body) == (201, b"ran 1")
    rid = h.request(method, path, query=query, body=body, m=1, call="call")
    assert h.status(rid) == status
    if status == 409:
        assert h.code(rid) == "input_mismatch"
    else:
        assert h.answer(rid).body == b"ran 1"
    assert handler.calls == 1


def test_middleware_without_tool_call_headers(counting):
    """Mirrors TestMiddlewareWithoutToolCallHeaders (middleware_test.go, item 19): with no
    tool call headers, then with the chat header only, two requests each, the handler runs
    every time, sees no tool call ("payload false"), its 418 and body pass through, and no
    run-age header is set. Abstracted: the model's handlers return status, Content-Type
    and body only, so Go's ``X-Custom`` pass-through has no twin."""
    handler = counting(status=418, body=b"payload false")
    h = AgentHarness()
    for chat in (None, None, CHAT, CHAT):
        rid = h.request("POST", agent.START_PATH, body=b"payload", chat=chat)
        assert (h.status(rid), h.answer(rid).body) == (418, b"payload false")
        assert h.run_age(rid) is None and h.answer(rid).headers == ()
    assert handler.calls == 4 and [key for key, _ in handler.seen] == [None] * 4


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(chat=None),  # 20 WithoutChat
        dict(headers=(("Coder-Tool-Call-Message-Id", "1"),), m=None),  # 21 PartialHeaders
        dict(headers=(("Coder-Tool-Call-Message-Id", "1"), ("Coder-Tool-Call-Id", "call"), ("Coder-Tool-Call-Age-Ms", "-1")), m=None),  # 22
    ],
    ids=["WithoutChat", "PartialHeaders", "MalformedAge"],
)
def test_middleware_bad_request(kwargs):
    """Mirrors TestMiddlewareBadRequest/<id> (middleware_test.go, items 20-22): 400, the handler is not called,
    nothing is recorded, a later valid request runs."""
    h = AgentHarness()
    rid = h.start(**kwargs)
    assert h.status(rid) == 400 and h.starts() == 0
    assert h.status(h.start()) == 200 and h.starts() == 1


def test_middleware_tool_call_context(counting):
    """Mirrors TestMiddlewareToolCallContext (middleware_test.go, item 23): the handler sees
    ToolCall.Key = (chat, 1, "call") and its UUID, and reads the whole body "payload"; its
    204 reaches the client."""
    handler = counting(status=204, body=b"")
    h = AgentHarness()
    rid = h.request("POST", agent.START_PATH, body=b"payload", m=1, call="call")
    assert h.status(rid) == 204
    [(key, body)] = handler.seen
    assert key == Key(CHAT, 1, "call") and key.uuid == tool_call_uuid(CHAT, 1, "call")
    assert body == b"payload"


def test_middleware_tool_call_context_real_handler():
    """Mirrors TestMiddlewareToolCallContext (middleware_test.go, item 23) over the real start handler: the
    process ID is the UUID of the key the handler saw."""
    h = AgentHarness()
    pid = h.json(h.start(1, "call"))["id"]
    assert pid == tool_call_uuid(CHAT, 1, "call") and h.process(pid).key == Key(CHAT, 1, "call")


def test_middleware_records_response(counting):
    """Mirrors TestMiddlewareRecordsResponse (middleware_test.go, item 24): the handler
    answers 202, application/json, {"id":"x"}; both requests get exactly that, and neither
    carries a header but the run age (Go: no ``X-Not-Recorded``, even on the first run)."""
    counting(status=202, content_type="application/json", body=b'{"id":"x"}')
    h = AgentHarness()
    for rid in (h.start(), h.start()):
        ans = h.answer(rid)
        assert (ans.status, ans.content_type, ans.body) == (202, "application/json", b'{"id":"x"}')
        assert [k for k, _ in ans.headers] == [RUN_AGE_MS_HEADER]


def test_middleware_run_age():
    """Mirrors TestMiddlewareRunAge (middleware_test.go, item 25): the handler run takes 300 ms, so the first
    answer carries run age 300; a replay 1 200 ms later carries 1500."""
    h = AgentHarness()
    first = h.start(run=False)
    h.now_ms += 300  # the pending run publishes 300 ms after the record was created
    h.run_handlers()
    assert h.run_age(first) == "300"
    h.advance(1_200)
    assert h.run_age(h.start()) == "1500"


def test_newer_message_drops_older_records():
    """Mirrors TestNewerMessage/DropsOlderRecords (middleware_test.go, item 26)."""
    h = AgentHarness()
    h.start(1, "first")
    h.start(1, "second", command="echo 2")
    assert h.status(h.start(2, "newer")) == 200
    assert h.current(2, "newer") and not h.current(1, "first") and not h.current(1, "second")
    assert h.code(h.start(1, "first")) == "stale_tool_call"


def test_newer_message_refused_keeps_records():
    """Mirrors TestNewerMessage/AgentStartedAfterToolCallKeepsRecords (middleware_test.go, item 27): a refusal
    changes nothing."""
    h = AgentHarness()
    h.start(1, "first")
    h.start(1, "second", command="echo 2")
    assert h.code(h.start(2, "newer", age_ms=2 * HOUR_MS)) == "agent_started_after_tool_call"
    assert not h.current(2, "newer") and h.current(1, "first") and h.current(1, "second")


def test_chats_are_independent():
    """Mirrors TestChatsAreIndependent (middleware_test.go, item 28): chat B's message 1 is not stale because
    chat A is at message 5."""
    h = AgentHarness()
    h.start(5, "call", chat=CHAT)
    assert h.status(h.start(1, "call", chat=OTHER_CHAT)) == 200
    assert h.starts() == 2 and h.current(5, "call") and h.current(1, "call", OTHER_CHAT)


def test_done_context_no_record_runs():
    """Mirrors TestMiddlewareDoneContext/NoRecordRuns (middleware_test.go, item 29): the creating request runs
    the handler even though its client is already gone."""
    h = AgentHarness()
    rid = h.start(run=False)
    h.gone(rid)
    h.run_handlers()
    assert h.starts() == 1 and h.answer(rid) is None
    assert h.status(h.start()) == 200 and h.starts() == 1


def test_done_context_published_response_wins(counting):
    """Mirrors TestMiddlewareDoneContext/PublishedResponseWins (middleware_test.go, item
    30): with a published record, 50 requests whose context has already ended each get
    201 "ran 1". The model's request carries no context: an ended context is the client
    leaving (``on_client_gone``) in the same instant, and the port proves the published
    answer wins by finding it among the effects of the arrival step itself, before any
    leave can be handled."""
    handler = counting()
    h = AgentHarness()
    h.start()
    for _ in range(50):
        rid = h.start()
        h.gone(rid)
        replies = [e.answer for e in h.steps[rid] if isinstance(e, Reply)]
        assert [(r.status, r.body) for r in replies] == [(201, b"ran 1")]
    assert handler.calls == 1


def test_concurrent_runs_once():
    """Mirrors TestMiddlewareConcurrentRunsOnce (middleware_test.go, item 31): 8 requests while the first run is
    pending; none answered before it publishes; all get the same answer; one run."""
    h = AgentHarness()
    rids = [h.start(run=False) for _ in range(8)]
    assert all(h.answer(r) is None for r in rids) and h.current()
    h.run_handlers()
    assert len({h.answer(r).body for r in rids}) == 1 and h.starts() == 1


def test_input_mismatch_does_not_wait():
    """Mirrors TestMiddlewareInputMismatchDoesNotWait (middleware_test.go, item 32)."""
    h = AgentHarness()
    first = h.start(command="echo a", run=False)
    other = h.start(command="echo b", run=False)
    assert h.code(other) == "input_mismatch" and h.answer(first) is None
    h.run_handlers()
    assert h.status(first) == 200


def test_waiter_context_ends():
    """Mirrors TestMiddlewareWaiterContextEnds (middleware_test.go, item 33): a waiter whose client leaves gets
    nothing written; the run and later requests are unaffected."""
    h = AgentHarness()
    first = h.start(run=False)
    waiter = h.start(run=False)
    h.gone(waiter)
    h.run_handlers()
    assert h.answer(waiter) is None and h.status(first) == 200
    assert h.answer(h.start()).body == h.answer(first).body


def test_handler_panics():
    """Mirrors TestMiddlewareHandlerPanics (middleware_test.go, item 34), the record's
    part: the handler runs once and panics; a waiter and a later request get the recorded
    500 {"message":"The tool call handler failed."} with the run-age header."""
    h = AgentHarness()
    h.start(run=False)
    waiter = h.start(run=False)
    h.run_handlers(panic=True)
    later = h.start()
    for rid in (waiter, later):
        assert h.status(rid) == 500 and h.json(rid) == {"message": "The tool call handler failed."}
        assert h.run_age(rid) is not None
    assert h.handler_runs == 1 and h.starts() == 0


def test_handler_panics_reaches_caller():
    """Mirrors TestMiddlewareHandlerPanics (middleware_test.go, item 34), the caller's part:
    the panic continues up the creating request's stack, so in the agent the recover
    middleware (httpmw.Recover, section 2.5) answers it: 500 "An internal server error
    occurred." with no run-age header, not the recorded answer."""
    h = AgentHarness()
    first = h.start(run=False)
    h.run_handlers(panic=True)
    assert h.status(first) == 500 and h.run_age(first) is None
    assert h.json(first)["message"] == "An internal server error occurred."


def test_dropped_pending_record_wakes_waiters():
    """Mirrors TestMiddlewareDroppedPendingRecordWakesWaiters (middleware_test.go, item 35)."""
    h = AgentHarness()
    first = h.start(1, "call", run=False)
    waiter = h.start(1, "call", run=False)
    newer = h.start(2, "call", run=False)
    assert not h.current(1, "call")
    h.run_handlers()
    assert h.json(first)["id"] == h.json(waiter)["id"] == tool_call_uuid(CHAT, 1, "call")
    assert h.json(newer)["id"] == tool_call_uuid(CHAT, 2, "call")
    assert h.current(2, "call") and h.code(h.start(1, "call")) == "stale_tool_call"


# ---------------------------------------------------------------------------
# 5.2 cancel_test.go
# ---------------------------------------------------------------------------


def test_cancel_never_received():
    """Mirrors TestCancelHandler/NeverReceived (cancel_test.go, item 36): two cancels answer started=false,
    record a marker (Current), and a later start is refused with tool_call_canceled."""
    h = AgentHarness()
    for _ in range(2):
        rid = h.cancel(threshold_ms=1_000)
        assert h.status(rid) == 200 and h.cancel_value(rid) == {"started": False}
        assert h.run_age(rid) is None
    assert h.current()
    assert h.code(h.start()) == "tool_call_canceled" and h.starts() == 0


def test_cancel_started_with_process(counting, stopper):
    """Mirrors TestCancelHandler/StartedWithProcess (cancel_test.go, item 37): run (1,"call")
    with the counting handler, 700 ms later cancel with threshold 1500 and a stopper that
    finds a process: 200, run-age "700", {Started, StatusCode 201 (the handler's status),
    ContentType text/plain, Body "ran 1", Process = the stopper's state}; the stopper is
    called exactly once with (UUID, 1500 ms)."""
    counting()
    fake = stopper()
    h = AgentHarness()
    h.start()
    h.advance(700)
    rid = h.cancel(threshold_ms=1_500)
    assert h.status(rid) == 200 and h.run_age(rid) == "700"
    assert h.cancel_value(rid) == {
        "started": True, "status_code": 201, "content_type": TEXT_PLAIN, "body": b"ran 1", "process": FAKE_PROCESS,
    }
    assert fake.calls == [(tool_call_uuid(CHAT, 1, "call"), 1_500)]


def test_cancel_started_with_real_process():
    """Mirrors TestCancelHandler/StartedWithProcess (cancel_test.go, item 37) over the real start handler
    and stopper: the recorded 200 round-trips and the process is killed (700 < 1500 ms)."""
    h = AgentHarness()
    first = h.start(command="sleep 300")
    h.advance(700)
    rid = h.cancel(threshold_ms=1_500)
    value = h.cancel_value(rid)
    assert h.run_age(rid) == "700" and value["status_code"] == 200 and value["body"] == h.answer(first).body
    assert value["process"]["canceled"] is True and value["process"]["run_age_ms"] == 700


def test_cancel_started_without_process(counting, stopper):
    """Mirrors TestCancelHandler/StartedWithoutProcess (cancel_test.go, item 38): the stopper
    finds no process (the model has no nil stopper; "not found" is its twin) -> Started
    true, the recorded body "ran 1", Process absent."""
    counting()
    fake = stopper(process=None)
    h = AgentHarness()
    h.start()
    value = h.cancel_value(h.cancel(threshold_ms=1_000))
    assert value == {"started": True, "status_code": 201, "content_type": TEXT_PLAIN, "body": b"ran 1"}
    assert len(fake.calls) == 1


def test_cancel_started_without_process_real():
    """Mirrors TestCancelHandler/StartedWithoutProcess (cancel_test.go, item 38) over the real handlers: a
    failed start has no process."""
    h = AgentHarness()
    h.start(body=json_body({"command": "true", "workdir": "/missing"}))
    value = h.cancel_value(h.cancel(threshold_ms=1_000))
    assert value["started"] is True and value["status_code"] == 500 and "process" not in value


def test_cancel_negative_threshold_never_stops(counting, stopper):
    """Mirrors TestCancelHandler/NegativeThresholdNeverStops (cancel_test.go, item 39): the
    body's threshold -5 reaches the stopper as 0 (``stopThreshold`` clamps to [0, max]).
    This is the test that kills the "no threshold clamp" mutant: the real stopper never
    stops at a negative threshold either, so only the value it is called with shows it."""
    counting()
    fake = stopper()
    h = AgentHarness()
    h.start()
    h.cancel(threshold_ms=-5)
    assert fake.calls == [(tool_call_uuid(CHAT, 1, "call"), 0)]


def test_cancel_negative_threshold_leaves_real_process():
    """Mirrors TestCancelHandler/NegativeThresholdNeverStops (cancel_test.go, item 39) over the real
    stopper: the process keeps running."""
    h = AgentHarness()
    h.start(command="sleep 300")
    h.advance(1)
    value = h.cancel_value(h.cancel(threshold_ms=-5))
    assert value["process"]["running"] is True and value["process"]["canceled"] is False


def test_cancel_threshold_saturates(counting, stopper):
    """Beside TestCancelHandler/NegativeThresholdNeverStops (cancel_test.go, item 39): ``stopThreshold``'s upper clamp (section 3 step 8): a threshold past the largest
    Duration in ms reaches the stopper as 9 223 372 036 854 ms."""
    counting()
    fake = stopper()
    h = AgentHarness()
    h.start()
    h.cancel(threshold_ms=2**62)
    assert fake.calls == [(tool_call_uuid(CHAT, 1, "call"), MAX_MS)]


def test_cancel_threshold_clamped_to_max():
    """Mirrors stopThreshold's upper clamp (section 3 step 8): a huge threshold saturates
    at MAX_MS and still stops a young process."""
    h = AgentHarness()
    h.start(command="sleep 300")
    value = h.cancel_value(h.cancel(threshold_ms=2**62))
    assert value["process"]["canceled"] is True


def test_cancel_stopper_error(stopper):
    """Mirrors TestCancelHandler/StopperError (cancel_test.go, item 40): the fake stopper
    returns an error -> 500 "Failed to stop the tool call's process." with the error as
    detail and no run-age header; the stopper was called once. (test_agent_edges.py checks
    the real stopper failing to kill a process.)"""
    fake = stopper(error="boom")
    h = AgentHarness()
    h.start(command="sleep 300")
    rid = h.cancel(threshold_ms=STOP_ANY)
    assert h.status(rid) == 500 and h.run_age(rid) is None
    assert h.json(rid) == {"message": "Failed to stop the tool call's process.", "detail": "boom"}
    assert fake.calls == [(tool_call_uuid(CHAT, 1, "call"), STOP_ANY)]


def test_cancel_stale_message():
    """Mirrors TestCancelHandler/StaleMessage (cancel_test.go, item 41)."""
    h = AgentHarness()
    h.start(2, "other")
    assert h.code(h.cancel(1, "call")) == "stale_tool_call"


def test_cancel_agent_started_after_tool_call():
    """Mirrors TestCancelHandler/AgentStartedAfterToolCall (cancel_test.go, item 42): no marker created."""
    h = AgentHarness(uptime_ms=10 * S)
    assert h.code(h.cancel(age_ms=60 * S)) == "agent_started_after_tool_call"
    assert not h.current()


def test_cancel_newer_message_drops_older_records():
    """Mirrors TestCancelHandler/NewerMessageDropsOlderRecords (cancel_test.go, item 43)."""
    h = AgentHarness()
    h.start(1, "call")
    assert h.status(h.cancel(2, "call")) == 200
    assert not h.current(1, "call") and h.code(h.start(1, "call")) == "stale_tool_call"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(path_id="33333333-3333-4333-8333-333333333333"),  # 44 WrongID
        dict(path_id=tool_call_uuid(OTHER_CHAT, 1, "call")),  # 45 OtherChatID
        dict(chat=None),  # 46 WithoutChat
        dict(m=None, path_id=tool_call_uuid(CHAT, 1, "call")),  # 47 WithoutToolCallHeaders
        dict(m=None, headers=(("Coder-Tool-Call-Message-Id", "1"), ("Coder-Tool-Call-Id", "call"), ("Coder-Tool-Call-Age-Ms", "x"))),  # 48
        dict(body=b"{"),  # 49 MalformedBody
    ],
    ids=["WrongID", "OtherChatID", "WithoutChat", "WithoutToolCallHeaders", "MalformedHeaders", "MalformedBody"],
)
def test_cancel_bad_request(kwargs):
    """Mirrors TestCancelHandlerBadRequest/<id> (cancel_test.go, items 44-49): 400 before the store is
    touched; a later start still runs."""
    h = AgentHarness()
    assert h.status(h.cancel(**kwargs)) == 400
    assert h.status(h.start()) == 200 and h.starts() == 1


def test_cancel_waits_for_pending_run():
    """Mirrors TestCancelHandlerWaitsForPendingRun (cancel_test.go, item 50): the cancel is answered and the
    stopper called only after the run publishes."""
    h = AgentHarness()
    start = h.start(command="sleep 300", run=False)
    rid = h.cancel(threshold_ms=10 * MIN, run=False)
    assert h.answer(rid) is None and h.answer(start) is None
    h.run_handlers()
    value = h.cancel_value(rid)
    assert value["started"] is True and value["process"]["canceled"] is True
    assert h.status(start) == 200


def test_cancel_request_context_ends():
    """Mirrors TestCancelHandlerRequestContextEnds (cancel_test.go, item 51): a cancel whose client left
    while the run is pending writes nothing and never calls the stopper."""
    h = AgentHarness()
    h.start(command="sleep 300", run=False)
    rid = h.cancel(threshold_ms=10 * MIN, run=False)
    h.gone(rid)
    h.run_handlers()
    assert h.answer(rid) is None
    assert h.process(tool_call_uuid(CHAT, 1, "call")).running


# ---------------------------------------------------------------------------
# 5.3 store_internal_test.go
# ---------------------------------------------------------------------------


def test_negative_age_counts_as_zero():
    """Mirrors TestNegativeAgeCountsAsZero (store_internal_test.go, item 52): uptime 1 s, age -1 h -> refused for
    both the start and the cancel lookup (1 s - 2 s <= 0)."""
    h = AgentHarness(uptime_ms=1 * S)
    assert agent.lookup(h.state, Key(CHAT, 1, "call"), -HOUR_MS, h.now_ms)[0] == "not_provable"


# ---------------------------------------------------------------------------
# 5.4 agentproc/toolcall_test.go
# ---------------------------------------------------------------------------


def test_start_process_tool_call_new():
    """Mirrors TestStartProcessToolCall/New (agentproc/toolcall_test.go, item 53)."""
    h = AgentHarness()
    rid = h.start(command="echo run")
    assert h.json(rid) == {"id": tool_call_uuid(CHAT, 1, "call"), "started": True} and h.starts() == 1


def test_start_process_tool_call_repeated_same_input():
    """Mirrors TestStartProcessToolCall/RepeatedSameInput (agentproc/toolcall_test.go, item 54): the earlier start has
    exited; the repeat replays and runs nothing."""
    h = AgentHarness()
    first = h.start(command="echo run")
    h.advance(10)
    assert h.answer(h.start(command="echo run")).body == h.answer(first).body and h.starts() == 1


def test_start_process_tool_call_input_mismatch():
    """Mirrors TestStartProcessToolCall/InputMismatch (agentproc/toolcall_test.go, item 55): Background differs."""
    h = AgentHarness()
    h.start(command="echo run", background=True)
    assert h.code(h.start(command="echo run")) == "input_mismatch" and h.starts() == 1


def test_start_process_tool_call_stale():
    """Mirrors TestStartProcessToolCall/StaleMessage (agentproc/toolcall_test.go, item 56):
    an earlier START of (2,"other") makes (1,"call") stale; the run log (executions of
    ``echo run``) stays empty."""
    h = AgentHarness()
    assert h.status(h.start(2, "other", command="true")) == 200
    assert h.code(h.start(1, "call", command="echo run")) == "stale_tool_call"
    assert [t.get("command") for t in h.truths if t.kind == "process_started"] == ["true"]


def test_start_process_tool_call_agent_started_after():
    """Mirrors TestStartProcessToolCall/AgentStartedAfterToolCall (agentproc/toolcall_test.go, item 57)."""
    h = AgentHarness(uptime_ms=10 * S)
    assert h.code(h.start(age_ms=60 * S)) == "agent_started_after_tool_call" and h.starts() == 0


def test_start_process_tool_call_canceled_before_start():
    """Mirrors TestStartProcessToolCall/CanceledBeforeStart (agentproc/toolcall_test.go, item 58), US10."""
    h = AgentHarness()
    assert h.cancel_value(h.cancel())["started"] is False
    assert h.code(h.start()) == "tool_call_canceled" and h.starts() == 0


def test_start_process_tool_call_concurrent():
    """Mirrors TestStartProcessToolCallConcurrent (agentproc/toolcall_test.go, item 59): 8 identical starts, one run."""
    h = AgentHarness()
    rids = [h.start(command="echo run", run=False) for _ in range(8)]
    h.run_handlers()
    assert {h.json(r)["id"] for r in rids} == {tool_call_uuid(CHAT, 1, "call")} and h.starts() == 1


def test_start_process_tool_call_start_error():
    """Mirrors TestStartProcessToolCallStartError (agentproc/toolcall_test.go, item 60): a missing workdir gives 500,
    replayed identically; a cancel reports Started, StatusCode 500, no process."""
    h = AgentHarness()
    body = json_body({"command": "true", "workdir": "/missing"})
    a, b = h.start(body=body), h.start(body=body)
    assert h.status(a) == h.status(b) == 500 and h.answer(a).body == h.answer(b).body
    value = h.cancel_value(h.cancel(threshold_ms=10 * MIN))
    assert value["started"] is True and value["status_code"] == 500 and "process" not in value


def test_start_process_without_tool_call_unchanged():
    """Mirrors TestStartProcessWithoutToolCallUnchanged (agentproc/toolcall_test.go, item 61)."""
    h = AgentHarness()
    a = h.request("POST", agent.START_PATH, body=json_body({"command": "true"}))
    b = h.request("POST", agent.START_PATH, body=json_body({"command": "true"}))
    assert h.run_age(a) is None and h.json(a)["id"] != h.json(b)["id"]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(chat=None),
        dict(m=None, headers=(("Coder-Tool-Call-Message-Id", "1"),)),
        dict(m=None, headers=(("Coder-Tool-Call-Message-Id", "1"), ("Coder-Tool-Call-Id", "call"), ("Coder-Tool-Call-Age-Ms", "-1"))),
    ],
    ids=["WithoutChat", "PartialHeaders", "MalformedAge"],
)
def test_start_process_tool_call_bad_request(kwargs):
    """Mirrors TestStartProcessToolCallBadRequest/<id> (agentproc/toolcall_test.go, item 62)."""
    h = AgentHarness()
    assert h.status(h.start(**kwargs)) == 400
    assert h.status(h.start()) == 200


STOP_ANY = 10 * MIN


def test_cancel_tool_call_process_running():
    """Mirrors TestCancelToolCallProcess/Running (agentproc/toolcall_test.go, item 63): killed with partial output,
    exit code -1, run age 2000; the output route shows the same exit code."""
    h = AgentHarness()
    first = h.start(command="echo before; sleep 300")
    pid = h.json(first)["id"]
    h.advance(2 * S)
    value = h.cancel_value(h.cancel(threshold_ms=STOP_ANY))
    assert value["started"] is True and value["status_code"] == 200 and pid.encode() in value["body"]
    assert value["process"] == {"running": False, "canceled": True, "output": "before\n", "exit_code": -1, "run_age_ms": 2000}
    assert h.json(h.output(pid))["exit_code"] == -1


def test_cancel_tool_call_process_repeated():
    """Mirrors TestCancelToolCallProcess/RepeatedCancel (agentproc/toolcall_test.go, item 64): Canceled is sticky and
    the answers are equal."""
    h = AgentHarness()
    h.start(command="sleep 300")
    a, b = h.cancel(threshold_ms=STOP_ANY), h.cancel(threshold_ms=STOP_ANY)
    assert h.cancel_value(a) == h.cancel_value(b) and h.cancel_value(b)["process"]["canceled"]


def test_cancel_tool_call_process_exited():
    """Mirrors TestCancelToolCallProcess/Exited (agentproc/toolcall_test.go, item 65)."""
    h = AgentHarness()
    h.start(command="echo done; exit 3")
    h.advance(1)
    proc = h.cancel_value(h.cancel(threshold_ms=STOP_ANY))["process"]
    assert (proc["canceled"], proc["output"], proc["exit_code"]) == (False, "done\n", 3)


def test_cancel_aborted_request_still_kills():
    """Mirrors TestCancelToolCallProcess/AbortedRequestStillKills (agentproc/toolcall_test.go,
    item 66): a cancel whose context has already ended still kills, because the record is
    published and the handler goes on to the stopper; a retried cancel reports Canceled.
    The ended context is the client leaving in the same instant (the model's requests carry
    no context): the kill must be among the arrival step's own effects, so no leave can
    come before it. Contrast: item 51, where the run is still pending, stops nothing."""
    h = AgentHarness()
    pid = h.json(h.start(command="sleep 300"))["id"]
    h.advance(S)
    rid = h.cancel(threshold_ms=STOP_ANY)
    h.gone(rid)
    killed = [e for e in h.steps[rid] if isinstance(e, Truth) and e.kind == "process_killed"]
    assert [(t.get("pid"), t.get("by")) for t in killed] == [(pid, "cancel")]
    assert h.process(pid).exit_code is not None and not h.process(pid).running
    retry = h.cancel_value(h.cancel(threshold_ms=STOP_ANY))["process"]
    assert retry["canceled"] is True and retry["running"] is False


def test_signal_kill_is_not_canceled():
    """Mirrors TestCancelToolCallProcess/SignalKillIsNotCanceled (agentproc/toolcall_test.go, item 67)."""
    h = AgentHarness()
    pid = h.json(h.start(command="sleep 300"))["id"]
    assert h.status(h.signal(pid)) == 200
    proc = h.cancel_value(h.cancel(threshold_ms=STOP_ANY))["process"]
    assert proc["running"] is False and proc["canceled"] is False


def test_cancel_tool_call_process_never_received():
    """Mirrors TestCancelToolCallProcess/NeverReceived (agentproc/toolcall_test.go, item 68)."""
    h = AgentHarness()
    assert [h.cancel_value(h.cancel(threshold_ms=STOP_ANY)) for _ in range(2)] == [{"started": False}] * 2


def test_cancel_tool_call_process_agent_started_after():
    """Mirrors TestCancelToolCallProcess/AgentStartedAfterToolCall (agentproc/toolcall_test.go, item 69)."""
    h = AgentHarness(uptime_ms=10 * S)
    assert h.code(h.cancel(threshold_ms=STOP_ANY, age_ms=60 * S)) == "agent_started_after_tool_call"


def test_cancel_tool_call_process_stale():
    """Mirrors TestCancelToolCallProcess/StaleMessage (agentproc/toolcall_test.go, item 70)."""
    h = AgentHarness()
    h.start(2, "other")
    assert h.code(h.cancel(1, "call", threshold_ms=STOP_ANY)) == "stale_tool_call"


def test_cancel_tool_call_process_other_chat():
    """Mirrors TestCancelToolCallProcess/OtherChat (agentproc/toolcall_test.go, item 71), A5/US9."""
    h = AgentHarness()
    pid = h.json(h.start(command="sleep 300", chat=CHAT))["id"]
    assert h.status(h.cancel(chat=OTHER_CHAT, path_id=pid, threshold_ms=STOP_ANY)) == 400
    assert h.cancel_value(h.cancel(chat=OTHER_CHAT, threshold_ms=STOP_ANY)) == {"started": False}
    assert h.process(pid).running
    assert h.status(h.output(pid, chat=OTHER_CHAT)) == 404 and h.status(h.signal(pid, chat=OTHER_CHAT)) == 404


@pytest.mark.parametrize(
    "run_age_ms,threshold_ms,running,canceled",
    [(4 * S, 5 * S, False, True), (5 * S, 5 * S, True, False), (6 * S, 5 * S, True, False), (0, 0, True, False)],
    ids=["BelowThresholdKills", "AtThresholdLeavesRunning", "AboveThresholdLeavesRunning", "ZeroNeverStops"],
)
def test_cancel_run_age_rule(run_age_ms, threshold_ms, running, canceled):
    """Mirrors TestCancelToolCallProcessRunAgeRule/<id> (agentproc/toolcall_test.go, items 72-75)."""
    h = AgentHarness()
    pid = h.json(h.start(command="sleep 300"))["id"]
    h.advance(run_age_ms)
    proc = h.cancel_value(h.cancel(threshold_ms=threshold_ms))["process"]
    assert (proc["running"], proc["canceled"], proc["run_age_ms"]) == (running, canceled, run_age_ms)
    assert h.json(h.output(pid))["running"] is running


def test_tool_call_run_age():
    """Mirrors TestToolCallRunAge (agentproc/toolcall_test.go, item 76)."""
    h = AgentHarness()
    first = h.start(command="true")
    assert h.run_age(first) == "0"
    h.advance(1_500)
    again = h.start(command="true")
    assert h.run_age(again) == "1500" and h.answer(again).body == h.answer(first).body
    assert h.cancel_value(h.cancel(threshold_ms=0))["process"]["run_age_ms"] == 1_500


def test_tool_call_process_reaping():
    """Mirrors TestToolCallProcessReaping (agentproc/toolcall_test.go, item 77): an exited tool call process is kept
    while its record is current; a plain one goes after 5 minutes; a newer message frees it."""
    h = AgentHarness()
    tool_pid = h.json(h.start(1, "call", command="true"))["id"]
    plain_pid = h.json(h.request("POST", agent.START_PATH, body=json_body({"command": "true"})))["id"]
    h.advance(6 * MIN)
    assert h.list() == [tool_pid]
    new_pid = h.json(h.start(2, "call", command="sleep 1"))["id"]
    assert h.list() == [new_pid]
    assert plain_pid not in h.state.processes


def test_reaping_is_strictly_after_five_minutes():
    """Mirrors TestToolCallProcessReaping (agentproc/toolcall_test.go, item 77), its rule at the boundary (section 4.4: removed once MORE than 5 min have passed
    since exit): a plain exited process is still listed at exactly 5 min and gone 1 ms
    later; the same for a tool call process whose record a newer message dropped. Kills the
    "reap at >=" mutant."""
    h = AgentHarness()
    plain = h.json(h.request("POST", agent.START_PATH, body=json_body({"command": "true"})))["id"]
    tool = h.json(h.start(1, "call", command="true"))["id"]
    h.advance(0)
    assert h.process(plain).exited_at_ms == h.process(tool).exited_at_ms == h.now_ms
    h.start(2, "call", command="sleep 600")  # message 1's record is no longer current
    h.advance(5 * MIN)
    assert {plain, tool} <= set(h.list())
    h.advance(1)
    assert not {plain, tool} & set(h.list())


@pytest.mark.parametrize("inclusive", [False, True], ids=["RevC", "StopRuleInclusive"])
def test_zero_threshold_never_stops_under_every_stop_rule(inclusive):
    """Mirrors TestCancelToolCallProcessRunAgeRule/ZeroNeverStops (agentproc/toolcall_test.go, item 75), its rule
    ("Threshold 0 never stops anything", section 4.2)
    at run age 0, under Rev C's strict rule and under the planted ``StopRuleInclusive``
    override of ``AgentRules.stop_below`` (kill at run age <= threshold).

    Why the ``threshold_ms > 0`` guard in ``stop_tool_call_process`` exists, and when it is
    equivalent: under Rev C the kill needs ``run_age < threshold``; the threshold is
    clamped to [0, max] before the stopper and the run age is never negative (a process's
    start instant is on the agent's own monotone clock), so with threshold 0 the
    comparison alone is already false and the guard changes nothing (the RevC row passes
    with or without it). It is not redundant in the model as a whole: with the inclusive
    override, ``0 <= 0`` would kill a process at run age 0 on a threshold-0 cancel (chatd's
    cancel for file tools and for a foreground command with no time left), and only the
    guard keeps "0 never stops". The StopRuleInclusive row kills the "drop the guard"
    mutant."""
    rules = agent.planted.StopRuleInclusive() if inclusive else agent.AgentRules()
    h = AgentHarness(config=agent.AgentConfig(rules=rules))
    pid = h.json(h.start(command="sleep 300"))["id"]
    proc = h.cancel_value(h.cancel(threshold_ms=0))["process"]
    assert (proc["running"], proc["canceled"], proc["run_age_ms"]) == (True, False, 0)
    assert h.process(pid).running


def test_cancel_waits_for_pending_start():
    """Mirrors TestCancelToolCallWaitsForPendingStart (agentproc/toolcall_test.go, item 78): a cancel during the pending
    start waits, then kills the new process."""
    h = AgentHarness()
    start = h.start(command="sleep 300", run=False)
    rid = h.cancel(threshold_ms=STOP_ANY, run=False)
    h.run_handlers()
    assert h.status(start) == 200
    value = h.cancel_value(rid)
    assert value["started"] is True and value["process"]["canceled"] is True


def test_close_kills_tool_call_process():
    """Mirrors TestCloseKillsToolCallProcess (agentproc/toolcall_test.go, item 79): API
    Close kills the running process: it ends (Running false) with an exit code, and it is
    a shutdown kill, not a cancel (Canceled false; Rev D asserts it). The model's shutdown
    forgets its processes, so the process's end is read from the ground truth and from
    time: its own exit never comes (no ``process_exited`` with exit code 0 later)."""
    h = AgentHarness()
    pid = h.json(h.start(command="sleep 300"))["id"]
    h.shutdown()
    killed = [t for t in h.truths if t.kind == "process_killed"]
    assert [(t.get("pid"), t.get("by")) for t in killed] == [(pid, "shutdown")]
    assert f"exit:{pid}" not in h.timers
    h.advance(10 * MIN)
    assert not [t for t in h.truths if t.kind == "process_exited"]
    assert h.state.processes == agent.EMPTY and h.state.chats == agent.EMPTY


def test_repeated_start_notifies_once():
    """Mirrors TestRepeatedStartNotifiesGitOnce (agentproc/toolcall_test.go, item 80): only
    the real run has side effects (its start, then its exit, which is when Go notifies the
    git path store; before them the arrival of the request whose handler runs); the replayed
    start's step has no ground-truth effect at all."""
    h = AgentHarness()
    h.start(command="true")
    h.advance(10)
    assert [t.kind for t in h.truths] == ["request_received", "process_started", "process_exited"]
    replay = h.start(command="true")
    assert h.status(replay) == 200
    assert not [e for e in h.steps[replay] if isinstance(e, Truth)]
    h.advance(10)
    assert [t.kind for t in h.truths] == ["request_received", "process_started", "process_exited"]


# ---------------------------------------------------------------------------
# 5.5 agentfiles tool-call test
# ---------------------------------------------------------------------------

EDIT_BODY = json_body({"files": [{"path": "/a.txt", "edits": [{"search": "one", "replace": "two"}]}]})


@pytest.mark.parametrize("tool", ["edit", "write"])
@pytest.mark.parametrize("tool_call", [True, False])
def test_file_tool_call_runs_once(tool, tool_call):
    """Mirrors TestFileToolCallRunsOnce/{EditFiles,WriteFile}/ToolCall={true,false}
    (agentfiles tool-call test, items 81-84): with tool call headers a repeat replays and
    leaves the file alone, and a cancel answers the recorded response with no process;
    without them it applies again."""
    h = AgentHarness(files=FMap({"/a.txt": "one\n"}))

    def send():
        kw = dict(m=1, call="call") if tool_call else {}
        if tool == "edit":
            return h.request("POST", agent.EDIT_PATH, body=EDIT_BODY, **kw)
        return h.request("POST", agent.WRITE_PATH, query="path=/a.txt", body=b"two\n", **kw)

    first = send()
    assert h.status(first) == 200 and h.state.files["/a.txt"] == "two\n"
    h.state = agent.replace(h.state, files=FMap({"/a.txt": "one\n"}))
    again = send()
    assert h.status(again) == 200
    if tool_call:
        assert h.answer(again).body == h.answer(first).body and h.run_age(again) == "0"
        assert h.state.files["/a.txt"] == "one\n" and h.edits() == 1
        value = h.cancel_value(h.cancel(threshold_ms=0))
        assert value["started"] is True and value["status_code"] == 200 and "process" not in value
        assert value["body"] == h.answer(first).body and h.state.files["/a.txt"] == "one\n"
    else:
        assert h.state.files["/a.txt"] == "two\n" and h.edits() == 2 and h.run_age(again) is None


# ---------------------------------------------------------------------------
# Behaviour the reference states outside the listed tests
# ---------------------------------------------------------------------------


def test_agent_restart_loses_records_and_processes():
    """Section 4.5: a restart loses every record and process; a retry of a call committed
    before the restart gets agent_started_after_tool_call; a call committed more than 2 s
    after the new start runs."""
    h = AgentHarness()
    h.start(command="sleep 300")
    h._absorb(agent.restart(h.state, h.now_ms))
    h.advance(30 * S)
    assert h.code(h.start(command="sleep 300", age_ms=60 * S)) == "agent_started_after_tool_call"
    assert h.status(h.start(2, "later", age_ms=27 * S)) == 200
    assert h.state.incarnation == 2 and h.starts() == 2


def test_first_two_seconds_refuse_every_unknown_call():
    """Section 2.3 consequence: during the first 2 s after agent start every call without a
    record is refused, even at age 0."""
    h = AgentHarness(uptime_ms=2 * S)
    assert h.code(h.start(age_ms=0)) == "agent_started_after_tool_call"
    h.advance(1)
    assert h.status(h.start(age_ms=0)) == 200


def test_output_wait_is_capped_at_five_minutes():
    """Section 4.1 / maxWaitDuration: a blocking read answers at exit or after 5 minutes."""
    h = AgentHarness()
    pid = h.json(h.start(command="sleep 600"))["id"]
    rid = h.output(pid, wait=True)
    assert h.answer(rid) is None
    h.advance(5 * MIN)
    assert h.json(rid)["running"] is True
    rid2 = h.output(pid, wait=True)
    h.advance(5 * MIN)
    assert h.json(rid2) == {"running": False, "exit_code": 0, "output": ""}


def test_shutdown_breaks_open_requests():
    """A7: a request waiting on the agent when it shuts down gets a transport error."""
    h = AgentHarness()
    h.start(run=False)
    waiter = h.start(run=False)
    h.shutdown()
    assert type(h.answer(waiter)).__name__ == "TransportError"


# ---------------------------------------------------------------------------
# The case table: every case of docs/contract.md A5 (1..148) and its port
# ---------------------------------------------------------------------------

_C = "test_agent_conformance.py::"
_S = "test_agent_sdk.py::"
_I = "test_identity.py::"

_DECISION_IDS = [c[0] for c in DECISIONS]
_FROM_HEADERS = {
    92: "ok[92-none-present]", 93: "ok[93-all-valid]", 94: "ok[94-age-at-max]",
    95: "error[95-age-above-max]", 96: "error[96-message-id-twice]", 97: "error[97-id-twice]",
    98: "error[98-age-twice]", 99: "error[99-message-id-missing]", 100: "error[100-id-missing]",
    101: "error[101-age-missing]", 102: "error[102-message-id-0]", 103: "error[103-message-id-neg]",
    104: "error[104-message-id-abc]", 105: "error[105-message-id-empty]", 106: "error[106-id-empty]",
    107: "error[107-id-bad-escape]", 108: "error[108-age-negative]", 109: "error[109-age-fractional]",
    110: "error[110-age-empty]", 111: "error[111-age-maxint64]",
}
_READ_AS_GO = {
    125: "125-409-no-code", 126: "126-409-unknown-code", 127: "127-409-empty-object", 128: "128-409-empty-body",
    129: "129-409-invalid-json", 130: "130-409-text-plain", 131: "131-404-known-code", 132: "132-404-text-plain",
    133: "133-400-json", 134: "134-500-json",
}

CASES: dict[int, str | tuple[str, ...]] = {
    # 5.1 middleware_test.go
    **{n: _C + f"test_middleware_decisions[{_DECISION_IDS[i]}]" for i, n in enumerate([1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])},
    3: _C + "test_record_returns_recorded_failure",
    **{n: _C + f"test_middleware_input_mismatch[{c[0]}]" for n, c in zip(range(14, 19), INPUT_MISMATCH_CASES)},
    19: _C + "test_middleware_without_tool_call_headers",
    20: _C + "test_middleware_bad_request[WithoutChat]",
    21: _C + "test_middleware_bad_request[PartialHeaders]",
    22: _C + "test_middleware_bad_request[MalformedAge]",
    23: (_C + "test_middleware_tool_call_context", _C + "test_middleware_tool_call_context_real_handler"),
    24: _C + "test_middleware_records_response",
    25: _C + "test_middleware_run_age",
    26: _C + "test_newer_message_drops_older_records",
    27: _C + "test_newer_message_refused_keeps_records",
    28: _C + "test_chats_are_independent",
    29: _C + "test_done_context_no_record_runs",
    30: _C + "test_done_context_published_response_wins",
    31: _C + "test_concurrent_runs_once",
    32: _C + "test_input_mismatch_does_not_wait",
    33: _C + "test_waiter_context_ends",
    34: (_C + "test_handler_panics", _C + "test_handler_panics_reaches_caller"),
    35: _C + "test_dropped_pending_record_wakes_waiters",
    # 5.2 cancel_test.go
    36: _C + "test_cancel_never_received",
    37: (_C + "test_cancel_started_with_process", _C + "test_cancel_started_with_real_process"),
    38: (_C + "test_cancel_started_without_process", _C + "test_cancel_started_without_process_real"),
    39: (_C + "test_cancel_negative_threshold_never_stops", _C + "test_cancel_negative_threshold_leaves_real_process"),
    40: _C + "test_cancel_stopper_error",
    41: _C + "test_cancel_stale_message",
    42: _C + "test_cancel_agent_started_after_tool_call",
    43: _C + "test_cancel_newer_message_drops_older_records",
    44: _C + "test_cancel_bad_request[WrongID]",
    45: _C + "test_cancel_bad_request[OtherChatID]",
    46: _C + "test_cancel_bad_request[WithoutChat]",
    47: _C + "test_cancel_bad_request[WithoutToolCallHeaders]",
    48: _C + "test_cancel_bad_request[MalformedHeaders]",
    49: _C + "test_cancel_bad_request[MalformedBody]",
    50: _C + "test_cancel_waits_for_pending_run",
    51: _C + "test_cancel_request_context_ends",
    # 5.3 store_internal_test.go
    52: _C + "test_negative_age_counts_as_zero",
    # 5.4 agentproc/toolcall_test.go
    53: _C + "test_start_process_tool_call_new",
    54: _C + "test_start_process_tool_call_repeated_same_input",
    55: _C + "test_start_process_tool_call_input_mismatch",
    56: _C + "test_start_process_tool_call_stale",
    57: _C + "test_start_process_tool_call_agent_started_after",
    58: _C + "test_start_process_tool_call_canceled_before_start",
    59: _C + "test_start_process_tool_call_concurrent",
    60: _C + "test_start_process_tool_call_start_error",
    61: _C + "test_start_process_without_tool_call_unchanged",
    62: tuple(_C + f"test_start_process_tool_call_bad_request[{i}]" for i in ("WithoutChat", "PartialHeaders", "MalformedAge")),
    63: _C + "test_cancel_tool_call_process_running",
    64: _C + "test_cancel_tool_call_process_repeated",
    65: _C + "test_cancel_tool_call_process_exited",
    66: _C + "test_cancel_aborted_request_still_kills",
    67: _C + "test_signal_kill_is_not_canceled",
    68: _C + "test_cancel_tool_call_process_never_received",
    69: _C + "test_cancel_tool_call_process_agent_started_after",
    70: _C + "test_cancel_tool_call_process_stale",
    71: _C + "test_cancel_tool_call_process_other_chat",
    72: _C + "test_cancel_run_age_rule[BelowThresholdKills]",
    73: _C + "test_cancel_run_age_rule[AtThresholdLeavesRunning]",
    74: _C + "test_cancel_run_age_rule[AboveThresholdLeavesRunning]",
    75: (_C + "test_cancel_run_age_rule[ZeroNeverStops]",
         _C + "test_zero_threshold_never_stops_under_every_stop_rule[StopRuleInclusive]"),
    76: _C + "test_tool_call_run_age",
    77: (_C + "test_tool_call_process_reaping", _C + "test_reaping_is_strictly_after_five_minutes"),
    78: _C + "test_cancel_waits_for_pending_start",
    79: _C + "test_close_kills_tool_call_process",
    80: _C + "test_repeated_start_notifies_once",
    # 5.5 agentfiles
    81: _C + "test_file_tool_call_runs_once[True-edit]",
    82: _C + "test_file_tool_call_runs_once[False-edit]",
    83: _C + "test_file_tool_call_runs_once[True-write]",
    84: _C + "test_file_tool_call_runs_once[False-write]",
    # 5.6 toolcall_test.go
    **{n: _I + f"test_tool_call_headers_round_trip[{i}]" for n, i in zip(range(85, 92), (
        "85-plain-id", "86-slash", "87-percent", "88-space", "89-non-ascii", "90-sub-ms-age-floors",
        "91-negative-age-sends-zero"))},
    **{n: _I + f"test_tool_call_from_headers_{rest}" for n, rest in _FROM_HEADERS.items()},
    112: _I + "test_tool_call_uuid_namespace",
    113: _I + "test_tool_call_uuid_vector",
    **{n: _I + f"test_tool_call_uuid_each_input_changes[{i}]" for n, i in zip(range(114, 118), (
        "114-other-chat", "115-other-message", "116-other-provider-id", "117-escaped-provider-id"))},
    118: (_S + "test_tool_call_context_reaches_the_handler", _I + "test_tool_call_context"),
    119: _I + "test_tool_call_error_message[119-message-only]",
    120: _I + "test_tool_call_error_message[120-detail-and-validations]",
    # 5.7 agentconn_internal_test.go
    121: (_I + "test_read_tool_call_error_coded[121-stale]", _S + "test_agent_failure_answers_read_as_go"),
    122: _I + "test_read_tool_call_error_coded[122-agent-started]",
    123: _I + "test_read_tool_call_error_coded[123-input-mismatch]",
    124: _I + "test_read_tool_call_error_coded[124-canceled]",
    **{n: _S + f"test_read_tool_call_error_as_read_body_as_error[{i}]" for n, i in _READ_AS_GO.items()},
    135: _S + "test_read_tool_call_error_body_read_failure",
    136: _S + "test_do_with_tool_call_age_includes_connect_time",
    137: _S + "test_do_with_tool_call_dial_error",
    138: _S + "test_do_with_tool_call_unused_connection_closed",
    **{n: _I + f"test_run_age_from_header[{i}]" for n, i in zip(range(139, 148), (
        "139-absent", "140-zero", "141-2500", "142-max", "143-above-max", "144-negative", "145-not-a-number",
        "146-empty", "147-two-values"))},
    # 5.8 agentconn_test.go
    148: _S + "test_agent_conn_tool_call_requests",
}


def _collected_nodes() -> set[str]:
    """The node IDs pytest collects from the three modules the table names, collected in a
    separate process so the answer does not depend on which tests this run selected."""
    import pathlib
    import subprocess
    import sys

    here = pathlib.Path(__file__).resolve().parent
    files = sorted({node.split("::")[0] for value in CASES.values()
                    for node in ((value,) if isinstance(value, str) else value)})
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
         *[str(here / f) for f in files]],
        cwd=here.parent, capture_output=True, text=True, check=True,
    ).stdout
    return {line.strip().removeprefix("tests/") for line in out.splitlines() if "::" in line}


GO_FILE_FOR_CASE = [
    # (last case number of the range, the Go test file its ports name)
    (35, "middleware_test.go"), (51, "cancel_test.go"), (52, "store_internal_test.go"),
    (80, "toolcall_test.go"), (84, "agentfiles"), (120, "toolcall_test.go"),
    (147, "agentconn_internal_test.go"), (148, "agentconn_test.go"),
]


def _go_file(number: int) -> str:
    return next(name for last, name in GO_FILE_FOR_CASE if number <= last)


def _numbers_named(doc: str, node: str) -> set[int]:
    """The case numbers a test names: "item N", "items A-B, C", a leading "N.", or a
    parameter ID that starts with the number."""
    import re

    found: set[int] = set()
    flat = " ".join(doc.split())
    for listed in re.findall(r"items? ((?:\d+(?:-\d+)?(?:, | and )?)+)", flat):
        for part in re.split(r", | and ", listed.strip(", ")):
            low, _, high = part.partition("-")
            found.update(range(int(low), int(high or low) + 1))
    found.update(int(n) for n in re.findall(r"^\s*(\d+)\. Mirrors", doc, re.M))
    found.update(int(n) for n in re.findall(r"\[(\d+)-", node))
    return found


def test_every_go_case_is_ported():
    """The table holds every case 1..148 of docs/contract.md A5; each names tests
    that exist (collected by pytest in a fresh process), and each named test says which Go
    test it ports: its docstring names a Go test (``Mirrors Test...``) and the Go file, and
    the docstring or the parameter ID names the case number."""
    import importlib

    assert sorted(CASES) == list(range(1, 149))
    nodes = _collected_nodes()
    for number, value in CASES.items():
        for node in (value,) if isinstance(value, str) else value:
            assert node in nodes, f"case {number}: {node} is not a collected test"
            module_file, name = node.split("::")
            function = getattr(importlib.import_module(module_file.removesuffix(".py")), name.split("[")[0])
            doc = function.__doc__ or ""
            assert "Mirrors Test" in doc, f"case {number}: {node} does not name its Go test"
            assert _go_file(number) in doc, f"case {number}: {node} does not name {_go_file(number)}"
            assert number in _numbers_named(doc, name), f"case {number}: {node} does not name case {number}"
