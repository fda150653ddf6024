"""The agent's edges as Go has them (issue 10): handler panics, slow handlers, stopper
errors, the signal route, chat isolation, body decoding and the cancel answer's shape.

Each test names the Go test (docs/contract.md A5 case number and name), the Go
source it follows, or the design line; each fails with the behaviour removed. The Go
sources read are cited by path in coder/coder: agent/agenttoolcall/middleware.go and
cancel.go (Rev C), agent/agentproc/api.go (Rev C), agent/agentproc/headtail.go,
coderd/httpapi/httpapi.go (Read, InternalServerError) and coderd/httpmw/recover.go.
"""

from __future__ import annotations

import json

import pytest

from agent_harness import CHAT, OTHER_CHAT, AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.gocompat import decode as gojson
from toolcall_sim.model.core import FMap, json_body
from toolcall_sim.model.identity import RUN_AGE_MS_HEADER, tool_call_uuid

S = 1_000
MIN = 60 * S
STOP_ANY = 10 * MIN
UUID = tool_call_uuid(CHAT, 1, "call")
INTERNAL = {"message": "An internal server error occurred."}
HANDLER_FAILED = {"message": "The tool call handler failed."}


def _harness(handler_ms: int = 0, scripts=None, rules: agent.AgentRules | None = None, **kw) -> AgentHarness:
    rules = rules or agent.AgentRules()
    if handler_ms:
        rules = agent.replace(rules, handler_ms=handler_ms)
    return AgentHarness(config=agent.AgentConfig(rules=rules, scripts=FMap(scripts or {})), **kw)


def _headers(h: AgentHarness, rid: str) -> dict:
    return dict(h.answer(rid).headers)


def _panic_after_effects(h: AgentHarness):
    for name in sorted(n for n in h.timers if n.startswith("handler:")):
        del h.timers[name]
        h._absorb(agent.on_handler_done(h.state, name.split(":", 1)[1], h.now_ms, panic=True, after_effects=True))


# ---------------------------------------------------------------------------
# 1. Handler panic (docs/contract.md A2.5)
# ---------------------------------------------------------------------------


def test_panic_creating_request_gets_recovery_500_waiters_get_recorded_500():
    """#34 TestMiddlewareHandlerPanics, docs/contract.md A2.5: the panic continues up the
    creating request's stack to httpmw.Recover, which writes httpapi.InternalServerError
    (500 "An internal server error occurred.", no run-age header); the waiter and a later
    request get the recorded 500 "The tool call handler failed." with the run-age header."""
    h = AgentHarness()
    first = h.start(command="sleep 300", run=False)
    waiter = h.start(command="sleep 300", run=False)
    h.now_ms += 250  # the handler blocks 250 ms, then panics
    h.run_handlers(panic=True)
    h.now_ms += 50
    later = h.start(command="sleep 300")
    assert (h.status(first), h.json(first)) == (500, INTERNAL)
    assert RUN_AGE_MS_HEADER not in _headers(h, first)
    assert (h.status(waiter), h.json(waiter), h.run_age(waiter)) == (500, HANDLER_FAILED, "250")
    assert (h.status(later), h.json(later), h.run_age(later)) == (500, HANDLER_FAILED, "300")
    assert h.starts() == 0


def test_panic_creating_request_gone_writes_nothing():
    """httpmw.Recover writes to the creating request only; a creator whose client left
    (A2: the run still happens) gets nothing, and the record still holds the 500."""
    h = AgentHarness()
    first = h.start(run=False)
    h.gone(first)
    h.run_handlers(panic=True)
    assert h.answer(first) is None
    assert h.json(h.start()) == HANDLER_FAILED


def test_panic_after_spawn_process_runs_and_record_holds_500():
    """docs/contract.md A2.5 with the panic after ``manager.start`` (middleware.go
    ``record.run`` publishes panicResponse whatever the handler did): the process exists and
    runs under its background context with the tool call UUID as ID, the creator gets the
    recovery 500, a replay gets the recorded 500, and a cancel reports status 500 together
    with the process, which the stop rule kills."""
    h = AgentHarness()
    first = h.start(command="sleep 300", run=False)
    _panic_after_effects(h)
    assert h.starts() == 1 and h.process(UUID).running
    assert (h.status(first), h.json(first)) == (500, INTERNAL)
    assert (h.status(h.start(command="sleep 300")), h.starts()) == (500, 1)
    value = h.cancel_value(h.cancel(threshold_ms=STOP_ANY))
    assert value["status_code"] == 500 and json.loads(value["body"]) == HANDLER_FAILED
    assert value["process"]["canceled"] is True and not h.process(UUID).running


def test_panic_without_tool_call_headers_records_nothing():
    """docs/contract.md A2.4 step 1 (no headers: the handler runs every time) with 2.5: a
    panicking start without tool call headers gets the recovery 500 and records nothing,
    so the next start runs. Before, such starts ran in the request step and a handler_panic
    fault for them was accepted and ignored."""
    h = AgentHarness()
    first = h.start(m=None, run=False)
    h.run_handlers(panic=True)
    assert (h.status(first), h.json(first), h.starts()) == (500, INTERNAL, 0)
    assert h.status(h.start(m=None)) == 200 and h.starts() == 1


# ---------------------------------------------------------------------------
# 2. A slow handler applies to every start; the process starts at the record's instant
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rules,m",
    [(agent.AgentRules(), None), (agent.OLD_AGENT, None), (agent.OLD_AGENT, 1), (agent.AgentRules(), 1)],
    ids=["no-headers", "old-agent", "old-agent-ignores-headers", "tool-call"],
)
def test_slow_handler_applies_to_every_start(rules, m):
    """handler_ms (world.handler_time) is how long the start handler runs before it answers,
    whoever calls it: today's chatd (no headers), an old agent (US8), or a tool call. The
    answer comes handler_ms after arrival and the process exists only then."""
    h = _harness(handler_ms=100 * S, rules=rules)
    rid = h.start(m=m, command="sleep 300", run=False)
    h.advance(100 * S - 1)
    assert h.answer(rid) is None and h.starts() == 0
    h.advance(1)
    assert h.status(rid) == 200 and h.starts() == 1


def test_process_run_age_equals_header_run_age_after_slow_spawn():
    """Design glossary "run age" (docs/contract.md): a process started for the tool call
    takes the record's instant as its start time, so for execute the run age is the process
    age; docs/contract.md A4.3 [inferred] has them equal. With a 100 s spawn the start's run-age
    header, the cancel's header and the process's run_age_ms all count from the arrival."""
    h = _harness(handler_ms=100 * S)
    rid = h.start(command="sleep 300", run=False)
    h.advance(100 * S)
    assert h.run_age(rid) == "100000"
    h.advance(5 * S)
    cancel = h.cancel(threshold_ms=0)
    assert h.cancel_value(cancel)["process"]["run_age_ms"] == int(h.run_age(cancel)) == 105 * S


def test_slow_spawn_counts_toward_the_stop_rule():
    """docs/contract.md A4.2 stop rule against the process's run age, which includes the slow
    spawn: a cancel 10 s after a 100 s spawn with a 60 s threshold leaves it running (run
    age 110 s), where counting from the spawn (10 s) would kill it."""
    h = _harness(handler_ms=100 * S)
    h.start(command="sleep 300", run=False)
    h.advance(110 * S)
    proc = h.cancel_value(h.cancel(threshold_ms=60 * S))["process"]
    assert (proc["running"], proc["run_age_ms"]) == (True, 110 * S)


# ---------------------------------------------------------------------------
# 3. Stopper error on cancel (docs/contract.md A5.2 #40)
# ---------------------------------------------------------------------------


def _unkillable() -> dict:
    return {"sleep 300": agent.Script(runs_for_ms=300 * S, kill_fails=True)}


def test_cancel_stopper_error_is_500_without_run_age():
    """#40 TestCancelHandler/StopperError (cancel.go): a stopper error while the request is
    live -> 500 "Failed to stop the tool call's process." with Go's error as detail and no
    run-age header (Go sets it only after the stopper succeeded); the process runs on and is
    not marked canceled (docs/contract.md A4.2: canceled only when the kill happened)."""
    h = _harness(scripts=_unkillable())
    h.start(command="sleep 300")
    rid = h.cancel(threshold_ms=STOP_ANY)
    assert h.status(rid) == 500
    assert h.json(rid)["message"] == "Failed to stop the tool call's process." and h.json(rid)["detail"]
    assert RUN_AGE_MS_HEADER not in _headers(h, rid)
    assert h.process(UUID).running and not h.process(UUID).canceled


def test_cancel_stopper_not_asked_to_kill_does_not_fail():
    """docs/contract.md A4.2: a process at or above the threshold is left alone, so an
    unkillable process does not make such a cancel fail (threshold 0 never stops)."""
    h = _harness(scripts=_unkillable())
    h.start(command="sleep 300")
    rid = h.cancel(threshold_ms=0)
    assert h.status(rid) == 200 and h.cancel_value(rid)["process"]["running"] is True


def test_signal_kill_failure_is_500():
    """agent/agentproc/api.go handleSignalProcess: a manager.signal error other than not
    found / not running -> 500 "Failed to signal process." with the error as detail."""
    h = _harness(scripts=_unkillable())
    h.start(command="sleep 300")
    rid = h.signal(UUID)
    assert h.status(rid) == 500 and h.json(rid) == {"message": "Failed to signal process.", "detail": "kill process: operation not permitted"}
    assert h.process(UUID).running


# ---------------------------------------------------------------------------
# 4. The signal route (agent/agentproc/api.go handleSignalProcess)
# ---------------------------------------------------------------------------


def _signal(h: AgentHarness, pid: str, body: bytes, chat=CHAT) -> str:
    return h.request("POST", f"/api/v0/processes/{pid}/signal", body=body, chat=chat)


@pytest.mark.parametrize(
    "body,status,message",
    [
        (json_body({"signal": "hup"}), 400, 'Unsupported signal "hup". Use "kill" or "terminate".'),
        (json_body({"signal": "KILL"}), 400, 'Unsupported signal "KILL". Use "kill" or "terminate".'),
        (json_body({}), 400, "Signal is required."),
        (b"null", 400, "Signal is required."),
        (b"{", 400, "Request body must be valid JSON."),
        (json_body({"signal": 9}), 400, "Request body must be valid JSON."),
    ],
    ids=["unknown", "case-matters-for-values", "missing", "null", "not-json", "wrong-type"],
)
def test_signal_bad_requests(body, status, message):
    """handleSignalProcess: body not JSON 400, empty signal 400 "Signal is required.",
    anything but kill/terminate 400 with the %q-quoted name; the process keeps running."""
    h = AgentHarness()
    h.start(command="sleep 300")
    rid = _signal(h, UUID, body)
    assert (h.status(rid), h.json(rid)["message"]) == (status, message)
    assert h.process(UUID).running


@pytest.mark.parametrize("name,signal", [("kill", "SIGKILL"), ("terminate", "SIGTERM")])
def test_signal_sends_kill_or_term(name, signal):
    """manager.signal: "kill" sends SIGKILL, "terminate" SIGTERM to the process group; 200
    "Signal "x" sent to process "id"."; the process dies with -1 (a signal death) and is not
    canceled (#67 SignalKillIsNotCanceled)."""
    h = AgentHarness()
    h.start(command="sleep 300")
    rid = _signal(h, UUID, json_body({"signal": name}))
    assert h.status(rid) == 200 and h.json(rid) == {"message": f'Signal "{name}" sent to process "{UUID}".'}
    killed = [t for t in h.truths if t.kind == "process_killed"]
    assert len(killed) == 1 and killed[0].get("signal", "SIGKILL") == signal
    proc = h.process(UUID)
    assert (proc.running, proc.exit_code, proc.canceled) == (False, -1, False)


def test_signal_exited_process_is_409_not_running():
    """manager.signal returns errProcessNotRunning -> 409 "Process "id" is not running."."""
    h = AgentHarness()
    h.start(command="true")
    h.advance(1)
    rid = _signal(h, UUID, json_body({"signal": "kill"}))
    assert (h.status(rid), h.json(rid)) == (409, {"message": f'Process "{UUID}" is not running.'})


def test_signal_unknown_process_is_404_after_body_checks():
    """handleSignalProcess: the body is checked before the process is looked up, so an
    unknown process with a bad signal is 400 and with a good one 404 "Process "id" not
    found."."""
    h = AgentHarness()
    assert h.status(_signal(h, "nope", json_body({"signal": "hup"}))) == 400
    rid = _signal(h, "nope", json_body({"signal": "kill"}))
    assert (h.status(rid), h.json(rid)) == (404, {"message": 'Process "nope" not found.'})


def test_signal_other_chat_is_404_before_body_checks():
    """A5/US9, handleSignalProcess: isolation is checked first, so another chat's process
    is 404 even with a body that would be a 400."""
    h = AgentHarness()
    h.start(command="sleep 300")
    assert h.status(_signal(h, UUID, b"{", chat=OTHER_CHAT)) == 404
    assert h.status(_signal(h, UUID, json_body({"signal": "kill"}), chat=OTHER_CHAT)) == 404
    assert h.process(UUID).running


# ---------------------------------------------------------------------------
# 5. Chat isolation exactly as Go (agent/agentproc/api.go, process.go list)
# ---------------------------------------------------------------------------


def test_output_isolation_refuses_only_a_different_nonempty_chat():
    """handleProcessOutput: 404 only when the request has a chat and the process has a
    different, non-empty one. A request without a chat reads any process; a process started
    without a chat is readable from any chat."""
    h = AgentHarness()
    h.start(command="sleep 300")
    plain = h.json(h.start(m=None, chat=None, command="sleep 300"))["id"]
    assert h.status(h.output(UUID, chat=OTHER_CHAT)) == 404
    assert h.json(h.output(UUID, chat=OTHER_CHAT)) == {"message": f'Process "{UUID}" not found.'}
    assert h.status(h.output(UUID, chat=None)) == 200
    assert h.status(h.output(plain, chat=OTHER_CHAT)) == 200


def test_signal_isolation_refuses_only_a_different_nonempty_chat():
    """handleSignalProcess: the same rule as output; a chat-less process can be signaled
    from any chat, and a request without a chat can signal any process."""
    h = AgentHarness()
    h.start(command="sleep 300")
    plain = h.json(h.start(m=None, chat=None, command="sleep 300"))["id"]
    assert h.status(h.signal(plain, chat=OTHER_CHAT)) == 200
    assert h.status(h.signal(UUID, chat=None)) == 200


def test_list_with_chat_sees_its_own_without_chat_sees_all():
    """manager.list(chatID): a chat sees only its own processes (not chat-less ones, unlike
    output and signal); a request without a chat sees every process."""
    h = AgentHarness()
    h.start(command="sleep 300")
    other = h.json(h.start(chat=OTHER_CHAT, command="sleep 300"))["id"]
    plain = h.json(h.start(m=None, chat=None, command="sleep 300"))["id"]
    assert h.list(chat=CHAT) == [UUID]
    assert h.list(chat=OTHER_CHAT) == [other]
    assert sorted(h.list(chat=None)) == sorted([UUID, other, plain])


# ---------------------------------------------------------------------------
# 6. Body decoding as Go's httpapi.Read / json.Decoder.Decode
# ---------------------------------------------------------------------------

KILLED, LEFT, BAD = "killed", "left", 400

CANCEL_BODIES = [
    ("null", b"null", LEFT),  # Decode of null into a struct: no error, threshold 0
    ("empty-object", b"{}", LEFT),
    ("exact", json_body({"stop_if_run_age_below_ms": STOP_ANY}), KILLED),
    ("upper-case-key", b'{"STOP_IF_RUN_AGE_BELOW_MS":600000}', KILLED),
    ("mixed-case-key", b'{"Stop_If_Run_Age_Below_Ms":600000}', KILLED),
    ("long-s-folds-to-s", '{"\u017ftop_if_run_age_below_ms":600000}'.encode(), KILLED),
    ("trailing-garbage", b'{"stop_if_run_age_below_ms":600000}garbage', KILLED),
    ("trailing-second-value", b'{"stop_if_run_age_below_ms":600000} {', KILLED),
    ("leading-space", b' \n\t{"stop_if_run_age_below_ms":600000}', KILLED),
    ("int64-max-clamps", b'{"stop_if_run_age_below_ms":9223372036854775807}', KILLED),
    ("minus-zero", b'{"stop_if_run_age_below_ms":-0}', LEFT),
    ("null-keeps-earlier", b'{"stop_if_run_age_below_ms":600000,"stop_if_run_age_below_ms":null}', KILLED),
    ("last-duplicate-wins", b'{"stop_if_run_age_below_ms":600000,"STOP_IF_RUN_AGE_BELOW_MS":0}', LEFT),
    ("unknown-key-ignored", b'{"x":[1,{"y":1e999}],"stop_if_run_age_below_ms":600000}', KILLED),
    ("past-int64", b'{"stop_if_run_age_below_ms":9223372036854775808}', BAD),
    ("below-int64", b'{"stop_if_run_age_below_ms":-9223372036854775809}', BAD),
    ("float", b'{"stop_if_run_age_below_ms":1.0}', BAD),
    ("exponent", b'{"stop_if_run_age_below_ms":6e5}', BAD),
    ("string", b'{"stop_if_run_age_below_ms":"600000"}', BAD),
    ("bool", b'{"stop_if_run_age_below_ms":true}', BAD),
    ("array", b"[]", BAD),
    ("number", b"5", BAD),
    ("empty", b"", BAD),
    ("spaces", b"  ", BAD),
    ("truncated", b'{"stop_if_run_age_below_ms":', BAD),
    ("nan", b'{"stop_if_run_age_below_ms":NaN}', BAD),
    ("not-utf8", b"\xff", BAD),
]


@pytest.mark.parametrize("body,outcome", [c[1:] for c in CANCEL_BODIES], ids=[c[0] for c in CANCEL_BODIES])
def test_cancel_body_decoded_as_httpapi_read(body, outcome):
    """#49 TestCancelHandlerBadRequest/MalformedBody and cancel.go's ``httpapi.Read`` into
    CancelToolCallRequest (coderd/httpapi/httpapi.go: one ``json.NewDecoder(r.Body).Decode``):
    ``null`` is threshold 0, keys match case-insensitively (Go's fold), bytes after the first
    value are never read, int64 overflow and non-integer literals are 400. A 400 touches
    nothing: the process runs on and a later start replays."""
    h = AgentHarness()
    first = h.start(command="sleep 300")
    h.advance(1)
    rid = h.cancel(body=body)
    if outcome == BAD:
        assert h.status(rid) == 400 and h.json(rid)["message"] == "Request body must be valid JSON."
        assert h.json(rid)["detail"]
        assert h.process(UUID).running and h.answer(h.start(command="sleep 300")).body == h.answer(first).body
    else:
        assert h.status(rid) == 200
        assert h.cancel_value(rid)["process"]["running"] is (outcome == LEFT)


def test_cancel_overflow_detail_is_gos_unmarshal_type_error():
    """encoding/json's UnmarshalTypeError text for a number past int64, as httpapi.Read puts
    it in the detail."""
    h = AgentHarness()
    h.start(command="sleep 300")
    rid = h.cancel(body=b'{"stop_if_run_age_below_ms":9223372036854775808}')
    assert h.json(rid)["detail"] == (
        "json: cannot unmarshal number 9223372036854775808 into Go struct field "
        "CancelToolCallRequest.stop_if_run_age_below_ms of type int64"
    )


GARBAGE = [b"", b"{", b"[]", b"5", b'"s"', b"true", b"\xff\xfe", b"[" * 3000 + b"]" * 3000, b'{"a":' * 2000]
WRONG_TYPES = {
    "start": [
        b'{"command":5}', b'{"command":["echo"]}', b'{"command":"true","background":"yes"}',
        b'{"command":"true","workdir":1}', b'{"command":"true","env":[1]}', b'{"command":"true","env":{"A":1}}',
    ],
    "edit": [
        b'{"files":5}', b'{"files":[5]}', b'{"files":[{"path":5}]}', b'{"files":{"path":"/a"}}',
        b'{"files":[{"path":"/a","edits":[{"search":1,"replace":"x"}]}]}', b'{"files":[{"path":"/a","edits":{}}]}',
    ],
    "cancel": [b'{"stop_if_run_age_below_ms":"1"}', b'{"stop_if_run_age_below_ms":{}}', b'{"stop_if_run_age_below_ms":[1]}'],
    "signal": [b'{"signal":1}', b'{"signal":["kill"]}', b'{"signal":{"name":"kill"}}'],
}


def _route_request(h: AgentHarness, route: str, body: bytes, headers: bool) -> str:
    m = 1 if headers else None
    if route == "start":
        return h.request("POST", agent.START_PATH, body=body, m=m, call="call")
    if route == "edit":
        return h.request("POST", agent.EDIT_PATH, body=body, m=m, call="call")
    if route == "write":
        return h.request("POST", agent.WRITE_PATH, query="path=/a", body=body, m=m, call="call")
    if route == "cancel":
        return h.cancel(body=body)
    if route == "signal":
        return _signal(h, UUID, body)
    if route == "output":
        return h.request("GET", f"/api/v0/processes/{UUID}/output", body=body)
    return h.request("GET", agent.LIST_PATH, body=body)


@pytest.mark.parametrize("rules", [agent.AgentRules(), agent.OLD_AGENT], ids=["rev-c", "old-agent"])
@pytest.mark.parametrize("headers", [True, False], ids=["tool-call", "no-headers"])
@pytest.mark.parametrize("route", ["start", "edit", "write", "cancel", "signal", "output", "list"])
def test_every_route_answers_bad_bodies_without_an_exception(route, headers, rules):
    """Project rule (bad input never ends in a traceback) against Go's decoders: every route,
    with and without tool call headers and on an old agent, answers garbage and wrong-typed
    JSON with an HTTP answer; the JSON routes (start, edit-files, cancel, signal) answer 400
    "Request body must be valid JSON." (httpapi.Read, agentproc's Decode), and a start with
    a wrong-typed field starts nothing."""
    bodies = GARBAGE + [b for bs in WRONG_TYPES.values() for b in bs]
    for body in bodies:
        h = _harness(rules=rules, files=FMap({"/a": "one\n"}))
        h.start(command="sleep 300", call="other")  # a process for signal/output/list
        rid = _route_request(h, route, body, headers)
        assert h.answer(rid) is not None, (route, body)
        own = body in GARBAGE or body in WRONG_TYPES.get(route, [])
        json_route = route in ("start", "edit", "signal") or (route == "cancel" and rules.understands_tool_calls)
        if json_route and own:
            assert h.status(rid) == 400, (route, body, h.answer(rid))
            assert h.json(rid)["message"] == "Request body must be valid JSON.", (route, body)
    if route == "start":
        h = _harness(rules=rules)
        for body in WRONG_TYPES["start"]:
            h.request("POST", agent.START_PATH, body=body, m=None)
        assert h.starts() == 0


def test_start_bad_json_400_is_recorded_and_replayed():
    """docs/contract.md A2.4 ("all handler answers are recorded", 6.1 item 8): the start
    handler's 400 with Go's decode error as detail is recorded; the same body replays it
    and the handler does not run again."""
    h = AgentHarness()
    first = h.start(body=b'{"command":5}')
    again = h.start(body=b'{"command":5}')
    assert h.status(first) == h.status(again) == 400 and h.answer(again).body == h.answer(first).body
    assert h.json(first)["detail"] == (
        "json: cannot unmarshal number into Go struct field StartProcessRequest.command of type string"
    )
    assert h.run_age(again) == "0" and h.starts() == 0


def test_edit_without_files_is_400_must_specify():
    """agentfiles HandleEditFiles: no files -> 400 "must specify at least one file"."""
    h = AgentHarness()
    for body in (b"{}", b"null", b'{"files":[]}', b'{"files":null}'):
        rid = h.request("POST", agent.EDIT_PATH, body=body)
        assert (h.status(rid), h.json(rid)) == (400, {"message": "must specify at least one file"})


def test_edit_and_write_answers():
    """docs/interfaces.md, agentfiles: an edit answers 200 with the edited paths and ok, its
    search/replace in the file; a write answers 200 ok with the body as the file; an edit of
    a missing file is 404 with os.Open's error on the agent's disk, "open P: no such file or
    directory" (Go: os.ErrNotExist is 404), and a write without a path 400 (Go's query
    parser: path is required). tests/test_agent_file_edits.py has the edit's other answers."""
    h = AgentHarness(files=FMap({"/a": "one\n"}))
    body = json_body({"files": [{"path": "/a", "edits": [{"search": "one", "replace": "two"}]}]})
    rid = h.request("POST", agent.EDIT_PATH, body=body)
    assert (h.status(rid), h.json(rid), h.state.files["/a"]) == (200, {"files": ["/a"], "ok": True}, "two\n")
    rid = h.request("POST", agent.WRITE_PATH, query="path=/b", body=b"new\n")
    assert (h.status(rid), h.json(rid), h.state.files["/b"]) == (200, {"ok": True}, "new\n")
    edit = [{"search": "one", "replace": "two"}]
    rid = h.request("POST", agent.EDIT_PATH, body=json_body({"files": [{"path": "/nope", "edits": edit}]}))
    assert (h.status(rid), h.json(rid)) == (404, {"message": "open /nope: no such file or directory"})
    rid = h.request("POST", agent.WRITE_PATH, body=b"x")
    assert h.status(rid) == 400 and "/" not in h.state.files


def test_gojson_reads_one_value_and_folds_keys():
    """gojson.decode against encoding/json's documented behaviour: Decode reads one value;
    keys fold case (foldName maps U+017F to S); the last duplicate wins; strings keep
    invalid UTF-8 as U+FFFD; NaN is not JSON."""
    target = gojson.Struct("x.T", (("name", gojson.STRING), ("n", gojson.INT64)))
    assert gojson.decode(b'{"NAME":"a"} trailing', target) == {"name": "a", "n": 0}
    assert gojson.decode('{"nAme":"a","\u017f":1}'.encode(), target)["name"] == "a"
    assert gojson.decode(b'{"name":"a","Name":"b"}', target)["name"] == "b"
    assert gojson.decode(b'{"name":"\xff"}', target)["name"] == "\ufffd"
    assert gojson.decode(b'{"name":"\\ud800"}', target)["name"] == "\ufffd"
    with pytest.raises(gojson.GoJSONError, match="^invalid character 'N'"):
        gojson.decode(b'{"n":NaN}', target)
    with pytest.raises(gojson.GoJSONError, match="^EOF$"):
        gojson.decode(b" ", target)
    with pytest.raises(gojson.GoJSONError, match="^unexpected EOF$"):
        gojson.decode(b'{"n":', target)


def test_go_quote_is_strconv_quote():
    """The %q of Go's messages (strconv.Quote)."""
    assert gojson.go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert gojson.go_quote("\n\x01\x7f") == '"\\n\\x01\\x7f"'
    assert gojson.go_quote("\u00a0é") == '"\\u00a0é"'


# ---------------------------------------------------------------------------
# 7. The cancel answer's process shape (design section 9 PR 1, docs/contract.md A3)
# ---------------------------------------------------------------------------


def test_cancel_process_running_omits_exit_code_and_empty_output():
    """ToolCallProcess tags (docs/contract.md, PR 1): ``running``, ``canceled`` and
    ``run_age_ms`` always; ``output``, ``truncated`` and ``exit_code`` omitempty, so a
    running process with no output has exactly the three keys."""
    h = AgentHarness()
    h.start(command="sleep 300")
    proc = h.cancel_value(h.cancel(threshold_ms=0))["process"]
    assert proc == {"running": True, "canceled": False, "run_age_ms": 0}


def test_cancel_process_exit_code_zero_is_kept():
    """``ExitCode *int`` with omitempty drops only nil: an exit code of 0 is present."""
    h = AgentHarness()
    h.start(command="echo done")
    h.advance(1)
    proc = h.cancel_value(h.cancel(threshold_ms=0))["process"]
    assert proc == {"running": False, "canceled": False, "output": "done\n", "exit_code": 0, "run_age_ms": 1}


def test_cancel_process_reports_head_tail_truncation():
    """``Truncated`` (agent/agentproc/headtail.go): past 16 KiB the output is the 16 KiB head
    and 16 KiB tail joined by "... [omitted N bytes] ...", with original, retained and
    omitted byte counts and strategy head_tail, on the output route and in a cancel."""
    line = "x" * 99 + "\n"
    script = agent.Script(runs_for_ms=300 * S, output_at_start=line * 400)  # 40 000 bytes
    h = _harness(scripts={"build": script})
    h.start(command="build")
    proc = h.cancel_value(h.cancel(threshold_ms=0))["process"]
    omitted = 40_000 - 2 * 16_384
    marker = f"\n\n... [omitted {omitted} bytes] ...\n\n"
    assert proc["truncated"] == {
        "original_bytes": 40_000, "retained_bytes": 2 * 16_384 + len(marker), "omitted_bytes": omitted,
        "strategy": "head_tail",
    }
    assert marker in proc["output"] and len(proc["output"]) == 2 * 16_384 + len(marker)
    out = h.json(h.output(UUID))
    assert out["truncated"] == proc["truncated"] and out["output"] == proc["output"]


def test_head_tail_cuts_long_lines_without_truncation_info():
    """headtail.go truncateLines: output that fits the head comes back whole except lines
    over 2048 bytes, cut to 2032 bytes plus " ... [truncated]", and with no truncation info."""
    output, info = agent.head_tail_output("a" * 3000 + "\nshort\n")
    assert info is None and output == "a" * 2032 + " ... [truncated]\nshort\n"
    assert agent.head_tail_output("") == ("", None)


def test_cancel_answer_omits_empty_recorded_fields():
    """CancelToolCallResponse tags: ``status_code``, ``content_type`` and ``body`` are
    omitempty, so a recorded response with no Content-Type and an empty body (a handler
    that writes nothing: 200, empty) has only ``started`` and ``status_code``."""
    h = AgentHarness()
    key = agent.Key(CHAT, 1, "call")
    record = agent.Record("", False, h.now_ms, "r0", agent.Recorded(200, "", b""))
    h.state = agent._insert(h.state, key, record)
    assert h.cancel_value(h.cancel(threshold_ms=0)) == {"started": True, "status_code": 200}


# ---------------------------------------------------------------------------
# The handler_panic fault in scenarios (with or without tool call headers, after_spawn)
# ---------------------------------------------------------------------------

PANIC_SCENARIO = """
name = "panic"
summary = "a start whose handler panics"
seed = 3
until = "5m"

[[turns]]
chat = "chat-1"
tool_calls = [ {{ id = "toolu_01", tool = "execute", command = "make image", runs_for = "1h", timeout = "2h" }} ]

[[faults]]
kind = "handler_panic"
message = {{ route = "start", tool_call = "toolu_01" }}
{extra}
"""


@pytest.mark.parametrize(
    "variant,extra,starts,running",
    [
        ("today", "", 0, 0),
        ("contract", "", 0, 0),
        ("today", "after_spawn = true", 1, 1),
        ("contract", "after_spawn = true", 1, 1),
    ],
    ids=["today-before-spawn", "contract-before-spawn", "today-after-spawn", "contract-after-spawn"],
)
def test_handler_panic_fault_reaches_every_start(tmp_path, variant, extra, starts, running):
    """docs/contract.md A2.5 through the world: a handler_panic fault panics the start's run
    under today too (no tool call headers), where it used to be accepted and ignored (the
    start ran as if nothing happened); ``after_spawn = true`` panics after the process was
    spawned, which keeps running while chatd is answered 500."""
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import load

    path = tmp_path / "panic.toml"
    path.write_text(PANIC_SCENARIO.format(extra=extra))
    (row,) = run_scenario(load(path), variant).tool_call_rows()
    assert (row["process_starts"], row["processes_running_at_end"]) == (starts, running)


def test_handler_panic_after_spawn_must_be_a_boolean(tmp_path):
    """Bad input is a one-line scenario error, never accepted and ignored."""
    from toolcall_sim.world.scenario import ScenarioError, load

    path = tmp_path / "panic.toml"
    path.write_text(PANIC_SCENARIO.format(extra='after_spawn = "yes"'))
    with pytest.raises(ScenarioError, match="after_spawn"):
        load(path)
