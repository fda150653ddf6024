"""Conformance tests for model/chattool/: chatd's execute, edit_files and write_file layer.

Each test ports one item of docs/contract.md C7 (its name starts with ``test_NN``)
and its docstring names the Go test it mirrors. The machine is driven with hand-built
agent answers (``core.Response`` / ``core.TransportError``) and a tiny clock that fires
the timers the machine arms, so no agent model is involved.

Items left out, and why:
- 25 (partly), 29 (partly), 31 (partly): the task-level parts (exactly one dial and one
  release, batch-usage billing, errTaskExpectedExit and the chat staying "interrupting")
  belong to the task layer (tests/test_chatd.py). The per-call parts observable here
  (mappings, parallel cancels, abort sending nothing) are tested.
- 28 (CancelIgnoresEpisodeBuffer): the message part buffer is the task layer's.
- 33 (ResultsTruncatedLikeLiveResults): truncation to the model's context budget is done by
  the task layer when it commits; this layer only applies execute's own 32 KB cap.
- 36-41 (ownership fences, abandon, retry wrapper, FinishInterruption partials): task and
  database layer.
- 17 "TaskEnded": the Go tool returns a legacy text when its context ends; here the task
  calls ``abort`` and no result exists at all (nothing is committed either way).
"""

from __future__ import annotations

import base64
import json

import pytest

from toolcall_sim.model import chattool as ct
from toolcall_sim.model.core import CancelTimer, Note, Response, Send, SetTimer, TransportError, json_body
from toolcall_sim.model.identity import (
    AGE_MS_HEADER,
    AGENT_STARTED_AFTER_TOOL_CALL,
    CHAT_ID_HEADER,
    INPUT_MISMATCH,
    MESSAGE_ID_HEADER,
    RUN_AGE_MS_HEADER,
    STALE_TOOL_CALL,
    TOOL_CALL_CANCELED,
    TOOL_CALL_ID_HEADER,
    header_values,
    tool_call_error,
    tool_call_uuid,
)

CHAT = "11111111-1111-4111-8111-111111111111"
MSG = 42
SRC = "replica-1"
MIN = 60_000
HOUR = 3_600_000

FOREGROUND_2H = {"command": "make test", "timeout": "2h"}
BACKGROUND = {"command": "make dev", "run_in_background": True}


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def make_identity(provider_id: str = "call_1", age_ms: int = 30_000, read_at_ms: int = 0) -> ct.Identity:
    return ct.Identity(CHAT, MSG, provider_id, ct.ToolCallAge(age_ms, read_at_ms))


def execute(args: dict | str, provider_id: str = "call_1") -> ct.ToolCall:
    return ct.ToolCall(provider_id, "execute", args if isinstance(args, str) else json.dumps(args))


def edit(provider_id: str = "call_e", path: str = "/a.txt") -> ct.ToolCall:
    return ct.ToolCall(provider_id, "edit_files",
                       json.dumps({"files": [{"path": path, "edits": [{"search": "a", "replace": "b"}]}]}))


def write(provider_id: str = "call_w", path: str = "/a.txt") -> ct.ToolCall:
    return ct.ToolCall(provider_id, "write_file", json.dumps({"path": path, "content": "hello"}))


class Clock:
    """Absorbs a call's effects: remembers what was sent and which timers are armed, and
    fires the earliest armed timer on request."""

    def __init__(self, step, now_ms: int = 0):
        self.now_ms = now_ms
        self.sent = []
        self.timers: dict[str, int] = {}
        self.notes: list[Note] = []
        self.effects: list = []
        self.cs = None
        self.absorb(step)

    def absorb(self, step):
        self.cs, effects = step
        self.effects = list(effects)
        for eff in effects:
            if isinstance(eff, Send):
                assert eff.dst == "agent"
                self.sent.append(eff.request)
            elif isinstance(eff, SetTimer):
                self.timers[eff.name] = self.now_ms + eff.after_ms
            elif isinstance(eff, CancelTimer):
                self.timers.pop(eff.name, None)
            elif isinstance(eff, Note):
                self.notes.append(eff)
        return self

    @property
    def last(self):
        return self.sent[-1]

    @property
    def result(self) -> ct.Result | None:
        return self.cs.result

    def answer(self, resp, at_ms: int | None = None):
        if at_ms is not None:
            self.now_ms = at_ms
        return self.absorb(ct.on_answer(self.cs, resp, self.now_ms))

    def timer(self, kind: str) -> tuple[str, int]:
        found = [(n, t) for n, t in sorted(self.timers.items()) if n.split(":")[-1].rstrip("0123456789") == kind]
        assert len(found) == 1, (kind, self.timers)
        return found[0]

    def fire_next(self):
        name, at = min(self.timers.items(), key=lambda kv: (kv[1], kv[0]))
        del self.timers[name]
        self.now_ms = at
        return self.absorb(ct.on_timer(self.cs, name, self.now_ms))

    def marks(self, kind: str) -> list[Note]:
        return [n for n in self.notes if n.kind == kind]


def content(result: ct.Result) -> dict:
    return json.loads(result.content)


def start_answer(req, pid: str, run_age_ms: int | None = 0) -> Response:
    headers = () if run_age_ms is None else ((RUN_AGE_MS_HEADER, str(run_age_ms)),)
    return Response(req.req_id, 200, "application/json", json_body({"id": pid, "started": True}), headers)


def output_answer(req, running: bool, exit_code: int | None = None, output: str = "") -> Response:
    return Response(req.req_id, 200, "application/json",
                    json_body({"running": running, "exit_code": exit_code, "output": output}))


def refusal(req, code: str) -> Response:
    return Response(req.req_id, 409, "application/json", tool_call_error(code).body())


def cancel_answer(req, started: bool, status_code: int = 0, content_type: str = "", body: bytes = b"",
                  process: dict | None = None, run_age_ms: int | None = None) -> Response:
    value: dict = {"started": started}
    if started:
        value.update(status_code=status_code, content_type=content_type,
                     body=base64.b64encode(body).decode("ascii"))
        if process is not None:
            value["process"] = process
    headers = () if run_age_ms is None else ((RUN_AGE_MS_HEADER, str(run_age_ms)),)
    return Response(req.req_id, 200, "application/json", json_body(value), headers)


def begin(call, identity: ct.Identity | None = None, now_ms: int = 0, send_identity: bool = True,
          prefix: str = "replica-1/g1/c1") -> Clock:
    return Clock(ct.begin_call(call, identity, SRC, prefix, CHAT, now_ms, send_identity), now_ms)


def cancel(call, identity: ct.Identity, now_ms: int = 0, prefix: str = "replica-1/i1/c1") -> Clock:
    plan = ct.interrupted_call(call)
    assert plan is not None
    return Clock(ct.begin_cancel(call, plan, identity, SRC, prefix, CHAT, now_ms), now_ms)


def has_tool_call_headers(req) -> bool:
    return any(header_values(req.headers, h) for h in (MESSAGE_ID_HEADER, TOOL_CALL_ID_HEADER, AGE_MS_HEADER))


# ---------------------------------------------------------------------------
# Durations (Go's ParseDuration / Duration.String, used in every text)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, ms", [
    ("10s", 10_000), ("15m", 900_000), ("10h", 36_000_000), ("1h30m", 5_400_000), ("250ms", 250),
    ("1.5s", 1_500), ("0", 0), ("-1m", -60_000), ("+2s", 2_000), ("1500us", 1), ("2h0m0s", 7_200_000),
    (".5s", 500), ("1.s", 1_000),
])
def test_parse_duration_go_style(text, ms):
    """time.ParseDuration: units ns..h, fractions, signs, sums; result in whole ms."""
    assert ct.parse_duration_ms(text) == ms


@pytest.mark.parametrize("text, message", [
    ("soon", 'time: invalid duration "soon"'),
    ("", 'time: invalid duration ""'),
    ("10", 'time: missing unit in duration "10"'),
    ("3d", 'time: unknown unit "d" in duration "3d"'),
    (".s", 'time: invalid duration ".s"'),
])
def test_parse_duration_rejects_like_go(text, message):
    """time.ParseDuration errors carry Go's message."""
    with pytest.raises(ct.DurationError, match=message.replace(".", r"\.")):
        ct.parse_duration_ms(text)


@pytest.mark.parametrize("ms, text", [
    (600_000, "10m0s"), (60_000, "1m0s"), (2_000, "2s"), (1_500, "1.5s"), (12_000, "12s"), (0, "0s"),
    (7_200_000, "2h0m0s"), (250, "250ms"), (60_500, "1m0.5s"), (-2_000, "-2s"),
])
def test_format_duration_go_style(ms, text):
    """Duration.String for whole milliseconds."""
    assert ct.format_duration_ms(ms) == text


# ---------------------------------------------------------------------------
# Items 1-4: identity and age
# ---------------------------------------------------------------------------


def test_01_tool_call_age():
    """TestToolCallAge: AtRead, AddsElapsed, CommittedAfterReadIsZero,
    CommittedAfterReadCatchesUp, and the zero value."""
    age = ct.ToolCallAge.from_db(db_now_ms=100_000, committed_at_ms=97_000, read_at_ms=5)
    assert age.now(5) == 3_000
    assert age.now(2_005) == 5_000
    later = ct.ToolCallAge.from_db(db_now_ms=100_000, committed_at_ms=102_000, read_at_ms=5)
    assert later.now(5) == 0
    assert later.now(5_005) == 3_000
    assert ct.ToolCallAge().now(123_456) == 0
    assert ct.Identity(CHAT, MSG, "x").age.now(99) == 0


def test_02_identity_agent_requests_measure_age_per_request():
    """TestToolCallIdentityAgentRequests: UUID = ToolCallUUID(chat, 42, id), and each
    request measures the age again (+3 s of clock gives +3 s in the header)."""
    identity = make_identity("call_x", age_ms=30_000, read_at_ms=0)
    assert identity.uuid == tool_call_uuid(CHAT, 42, "call_x")
    first = begin(execute({"command": "true"}, "call_x"), identity, now_ms=0).last
    second = begin(execute({"command": "true"}, "call_x"), identity, now_ms=3_000).last
    assert header_values(first.headers, AGE_MS_HEADER) == ["30000"]
    assert header_values(second.headers, AGE_MS_HEADER) == ["33000"]
    canceled = cancel(execute({"command": "true"}, "call_x"), identity, now_ms=6_000).last
    assert header_values(canceled.headers, AGE_MS_HEADER) == ["36000"]


def test_03_parallel_and_serial_calls_each_carry_their_own_identity():
    """chatloop TestExecuteLocalToolsToolCallIdentity: 2 parallel calls and 1 serial call
    each see their own {chat, msg 42, id, age 1 min}; no ChatID means no identity."""
    age = ct.ToolCallAge(MIN, 0)
    seen = []
    for i, provider_id in enumerate(("call_a", "call_b", "call_serial")):
        identity = ct.Identity(CHAT, MSG, provider_id, age)
        req = begin(execute({"command": "true"}, provider_id), identity, prefix=f"r1/g1/c{i}").last
        seen.append((header_values(req.headers, MESSAGE_ID_HEADER), header_values(req.headers, TOOL_CALL_ID_HEADER),
                     header_values(req.headers, AGE_MS_HEADER), header_values(req.headers, CHAT_ID_HEADER)))
    assert seen == [(["42"], [p], ["60000"], [CHAT]) for p in ("call_a", "call_b", "call_serial")]
    no_identity = begin(execute({"command": "true"}), None).last
    assert not has_tool_call_headers(no_identity)


def test_04_backdated_message_age_from_database_clock():
    """TestExecuteLocalTools_ToolCallIdentity: the assistant message backdated 1 h gives an
    age of at least 1 h from the DB clock; +5 s of mock clock gives +5 s."""
    db_now_ms = 1_000_000_000
    age = ct.ToolCallAge.from_db(db_now_ms, db_now_ms - HOUR, read_at_ms=777)
    identity = ct.Identity(CHAT, 4242, "call_1", age)
    first = begin(execute({"command": "true"}), identity, now_ms=777).last
    later = begin(execute({"command": "true"}), identity, now_ms=5_777).last
    assert header_values(first.headers, MESSAGE_ID_HEADER) == ["4242"]
    assert int(header_values(first.headers, AGE_MS_HEADER)[0]) >= HOUR
    assert int(header_values(later.headers, AGE_MS_HEADER)[0]) - int(header_values(first.headers, AGE_MS_HEADER)[0]) == 5_000


# ---------------------------------------------------------------------------
# Items 5-6: a task retry sends the same request and attaches
# ---------------------------------------------------------------------------


def test_05_execute_task_retry_attaches_to_the_first_process():
    """TestExecuteLocalTools_ExecuteTaskRetry: attempt 1 ends during the wait (C4: only
    CancelTimer); attempt 2 sends the same start with a larger age, the agent replays
    with RunAge 7 s, and one PASS result has wall >= 7000 ms."""
    call = execute({"command": "make test", "timeout": "10m"})
    first = begin(call, make_identity(age_ms=30_000, read_at_ms=0), prefix="r1/g1/c1")
    uuid = make_identity().uuid
    first.answer(start_answer(first.last, uuid, 0), at_ms=100)
    assert first.last.path.endswith("/output")
    stop = ct.abort(first.cs)
    assert stop and all(isinstance(e, CancelTimer) for e in stop)

    # Attempt 2 re-reads the DB clock: the same message, a larger age.
    second = begin(call, make_identity(age_ms=37_100, read_at_ms=7_100), now_ms=7_100, prefix="r1/g2/c1")
    start1, start2 = first.sent[0], second.last
    assert (start2.method, start2.path, start2.body) == (start1.method, start1.path, start1.body)
    for h in (MESSAGE_ID_HEADER, TOOL_CALL_ID_HEADER):
        assert header_values(start2.headers, h) == header_values(start1.headers, h)
    assert int(header_values(start2.headers, AGE_MS_HEADER)[0]) >= int(header_values(start1.headers, AGE_MS_HEADER)[0]) + 7_000
    second.answer(start_answer(start2, uuid, 7_000), at_ms=7_150)
    second.answer(output_answer(second.last, False, 0, "PASS"), at_ms=8_000)
    assert second.result.kind == "completed"
    assert content(second.result)["output"] == "PASS"
    assert second.result.wall_duration_ms >= 7_000


@pytest.mark.parametrize("make_call, want", [(edit, '{"files":["/a.txt"],"ok":true}'), (write, '{"ok":true}')])
def test_06_file_tool_task_retry_gets_the_recorded_answer(make_call, want):
    """TestExecuteLocalTools_FileToolTaskRetry: attempt 1 ends mid-request after the agent
    applied the change; attempt 2 sends the same request (same identity, larger age) and
    the replayed answer becomes the committed, non-error result."""
    call = make_call()
    first = begin(call, make_identity(call.provider_id, 10_000), prefix="r1/g1/c1")
    assert all(isinstance(e, CancelTimer) for e in ct.abort(first.cs))
    second = begin(call, make_identity(call.provider_id, 10_000), now_ms=5_000, prefix="r1/g2/c1")
    a, b = first.last, second.last
    assert (a.path, a.query, a.body) == (b.path, b.query, b.body)
    assert int(header_values(b.headers, AGE_MS_HEADER)[0]) > int(header_values(a.headers, AGE_MS_HEADER)[0])
    body = json_body({"files": ["/a.txt"], "ok": True}) if call.tool == "edit_files" else json_body({"ok": True})
    second.answer(Response(b.req_id, 200, "application/json", body, ((RUN_AGE_MS_HEADER, "5000"),)), at_ms=5_010)
    assert second.result == ct.Result("applied", False, want)


# ---------------------------------------------------------------------------
# Items 7-14: foreground execute on a new agent, attaching, snapshots, old agents
# ---------------------------------------------------------------------------


def test_07_started_new_agent_exits_zero():
    """TestExecuteToolCall/Started: a new agent; the process exits 0 and the wall time is
    this attempt's wait. Output reads carry no tool call headers."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    start = run.last
    assert (start.method, start.path) == ("POST", "/api/v0/processes/start")
    assert json.loads(start.body) == {"background": False, "command": "make test"}
    run.answer(start_answer(start, identity.uuid, 0), at_ms=50)
    read = run.last
    assert (read.method, read.path, read.query) == ("GET", f"/api/v0/processes/{identity.uuid}/output", "wait=true")
    assert not has_tool_call_headers(read) and header_values(read.headers, CHAT_ID_HEADER) == [CHAT]
    assert run.timer("deadline") == (run.timer("deadline")[0], 50 + 10 * MIN)
    run.answer(output_answer(read, False, 0, "ok"), at_ms=1_050)
    assert run.result.kind == "completed" and run.result.exit_code == 0
    assert content(run.result) == {"success": True, "output": "ok", "exit_code": 0, "wall_duration_ms": 1_000}
    assert run.timers == {}


def test_08_attach_waits_for_remaining_timeout():
    """TestExecuteToolCall/AttachWaitsForRemainingTimeout: RunAge 4 min, timeout 10 min:
    the wait deadline is 6 min; the result is exit 2 FAIL with wall >= 4 min."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 4 * MIN), at_ms=100)
    name, at = run.timer("deadline")
    assert at - 100 == 6 * MIN
    assert run.marks("chattool_attach")[0].get("remaining_ms") == 6 * MIN
    run.answer(output_answer(run.last, False, 2, "FAIL"), at_ms=2_100)
    r = run.result
    assert (r.kind, r.exit_code) == ("completed", 2)
    body = content(r)
    assert body["success"] is False and body["output"] == "FAIL" and "background_process_id" not in body
    assert 4 * MIN <= r.wall_duration_ms < 4 * MIN + 10_000


def test_09_attach_waits_again_after_agent_wait_cap():
    """TestExecuteToolCall/AttachWaitsAgainAfterAgentWaitCap: the first blocking read
    returns "running" at the agent's 5-min cap; the loop reads again and gets "done"."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 4 * MIN))
    first_read = run.last
    deadline = run.timer("deadline")
    run.answer(output_answer(first_read, True, None, "partial"), at_ms=ct.AGENT_OUTPUT_WAIT_CAP_MS)
    second_read = run.last
    assert second_read.req_id != first_read.req_id and second_read.query == "wait=true"
    assert run.timer("deadline") == deadline  # the same deadline, not a new one
    assert run.result is None and run.marks("chattool_wait_again")
    # A duplicate of the old answer is stale and changes nothing.
    assert ct.on_answer(run.cs, output_answer(first_read, False, 0, "x"), run.now_ms) == (run.cs, ())
    run.answer(output_answer(second_read, False, 0, "done"), at_ms=ct.AGENT_OUTPUT_WAIT_CAP_MS + 1_000)
    assert run.result.kind == "completed" and content(run.result)["output"] == "done"


@pytest.mark.parametrize("run_age_header", ["-60000", None, "abc"])
def test_10_attach_negative_age_waits_full_timeout(run_age_header):
    """TestExecuteToolCall/AttachNegativeAgeWaitsTimeout: a run age of -1 min (or an
    unreadable one) counts as 0, so the wait is the full 10 min."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    headers = () if run_age_header is None else ((RUN_AGE_MS_HEADER, run_age_header),)
    run.answer(Response(run.last.req_id, 200, "application/json",
                        json_body({"id": identity.uuid, "started": True}), headers), at_ms=10)
    assert run.timer("deadline")[1] == 10 + 10 * MIN
    run.answer(output_answer(run.last, False, 0, "ok"), at_ms=20)
    assert run.result.kind == "completed" and run.result.wall_duration_ms >= 0


def test_11_attach_no_timeout_left_running():
    """TestExecuteToolCall/AttachNoTimeoutLeftRunning: RunAge 10 min = timeout. One
    snapshot (no wait) shows running: timed out after 10m0s with background_process_id."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 10 * MIN), at_ms=100)
    snap = run.last
    assert (snap.method, snap.query) == ("GET", "") and len(run.sent) == 2
    assert run.timer("snapshot")[1] == 100 + ct.SNAPSHOT_TIMEOUT_MS
    run.answer(output_answer(snap, True, None, "partial"), at_ms=200)
    r = run.result
    assert (r.kind, r.exit_code, r.process_id) == ("timed_out", -1, identity.uuid)
    body = content(r)
    assert body["error"] == "command timed out after 10m0s" and body["output"] == "partial"
    assert body["background_process_id"] == identity.uuid and body["success"] is False
    assert r.wall_duration_ms >= 10 * MIN


def test_12_attach_past_timeout_exited():
    """TestExecuteToolCall/AttachPastTimeoutExited: RunAge 12 min; the snapshot shows exit
    code 3: the real result, no error, no background ID."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 12 * MIN))
    run.answer(output_answer(run.last, False, 3, "exited"))
    body = content(run.result)
    assert run.result.kind == "completed" and run.result.exit_code == 3
    assert body["output"] == "exited" and "error" not in body and "background_process_id" not in body


@pytest.mark.parametrize("how", ["transport", "no_answer_in_30s", "http_404"])
def test_13_attach_no_timeout_left_snapshot_fails_is_unknown(how):
    """TestExecuteToolCall/AttachNoTimeoutLeftSnapshotFails: the result is unknown "not
    received within 10m0s", never "timed out" (C6, Q9c)."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 10 * MIN))
    if how == "transport":
        run.answer(TransportError(run.last.req_id, "connection reset"))
    elif how == "http_404":
        run.answer(Response(run.last.req_id, 404, "application/json", json_body({"message": "not found"})))
    else:
        run.fire_next()
    r = run.result
    assert (r.kind, r.reason, r.exit_code, r.process_id) == ("unknown", "not_received", -1, identity.uuid)
    body = content(r)
    assert body["error"].startswith("outcome unknown: the command's result was not received within 10m0s (")
    assert identity.uuid in body["error"] and "timed out" not in body["error"]
    assert body["background_process_id"] == identity.uuid
    if how == "transport":
        assert "connection reset" in body["error"]


def test_13b_wait_deadline_cuts_the_read_then_snapshot():
    """waitForProcess: the wait deadline ends the blocking read; the snapshot decides, and
    an answer to the abandoned read is stale."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 0))
    read = run.last
    run.fire_next()  # the wait deadline at 10 min
    assert run.now_ms == 10 * MIN and run.last.query == "" and run.marks("chattool_snapshot")[0].get("timed_out")
    assert ct.on_answer(run.cs, output_answer(read, False, 0, "late"), run.now_ms)[1] == ()
    run.answer(output_answer(run.last, True, None, "still"))
    assert run.result.kind == "timed_out"


def test_13c_read_fails_before_deadline():
    """waitForProcess: a read that fails before the deadline, with the process still
    running, is "get process output: ... (process still running ...)" (not a timeout)."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 0))
    run.answer(TransportError(run.last.req_id, "connection reset by peer"), at_ms=1_000)
    assert run.marks("chattool_snapshot")[0].get("timed_out") is False
    run.answer(output_answer(run.last, True, None, "so far"), at_ms=1_100)
    r = run.result
    assert r.kind == "failed" and r.process_id == identity.uuid
    error = content(r)["error"]
    assert error.startswith("get process output: ") and "connection reset by peer" in error
    assert error.endswith("(process still running, use process_output to check later)")


def test_14_old_agent_legacy_full_wait_from_local_start():
    """TestExecuteToolCall/OldAgent: a start answer with another ID means an old agent: the
    legacy full 10-min wait from this attempt's start, and wall counts from the local
    start, not the run age."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity, now_ms=1_000)
    deadline = run.timer("deadline")
    assert deadline[1] == 1_000 + 10 * MIN
    run.answer(start_answer(run.last, "proc-1-7", 4 * MIN), at_ms=1_200)
    assert run.last.path == "/api/v0/processes/proc-1-7/output" and run.last.query == "wait=true"
    assert run.timer("deadline") == deadline and run.marks("chattool_legacy_wait")
    run.answer(output_answer(run.last, False, 0, "ok"), at_ms=3_000)
    assert run.result.kind == "completed" and run.result.wall_duration_ms == 2_000


def test_14b_old_agent_still_running_at_deadline():
    """OldAgent past its deadline: timed out with the agent's own process ID."""
    run = begin(execute({"command": "sleep 999", "timeout": "10s"}), make_identity())
    run.answer(start_answer(run.last, "proc-1-7", None), at_ms=100)
    run.fire_next()
    assert run.now_ms == 10_000
    run.answer(output_answer(run.last, True, None, ""), at_ms=10_050)
    r = run.result
    assert r.kind == "timed_out" and r.process_id == "proc-1-7" and r.wall_duration_ms == 10_050
    assert content(r)["background_process_id"] == "proc-1-7"


def test_14c_no_identity_is_legacy_throughout():
    """TestExecuteToolCall/NoIdentity: no tool call headers, legacy wait, legacy texts."""
    run = begin(execute({"command": "make test", "timeout": "10m"}), None)
    assert not has_tool_call_headers(run.last)
    run.answer(start_answer(run.last, "proc-1-1", None))
    run.answer(output_answer(run.last, False, 0, "ok"), at_ms=5)
    assert run.result.kind == "completed"
    bg = begin(execute(BACKGROUND), None)
    bg.answer(TransportError(bg.last.req_id, "connection reset by peer"))
    assert bg.result.kind == "failed" and "outcome unknown" not in content(bg.result)["error"]


def test_14d_headers_withheld_means_legacy_wait():
    """send_identity=False (an identity but no headers): the agent picks its own ID, so the
    legacy wait runs; this is how the pre-fix duplicate start is reproduced."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity, send_identity=False)
    assert not has_tool_call_headers(run.last)
    run.answer(start_answer(run.last, "proc-2-1", None))
    assert run.cs.legacy and run.last.path == "/api/v0/processes/proc-2-1/output"


# ---------------------------------------------------------------------------
# Item 15: start errors (section 5.2)
# ---------------------------------------------------------------------------

START_500 = json_body({"message": "Failed to start process.", "detail": "no such directory"})


@pytest.mark.parametrize("name, args, make_answer, kind, reason, wants, pid", [
    ("AgentStartedAfterToolCall", {"command": "make test"},
     lambda r: refusal(r, AGENT_STARTED_AFTER_TOOL_CALL), "unknown", "agent_restarted",
     ["workspace agent restarted after this tool call", "may have run", "Check the workspace state"], False),
    ("AgentStartedAfterToolCallBackground", BACKGROUND,
     lambda r: refusal(r, AGENT_STARTED_AFTER_TOOL_CALL), "unknown", "agent_restarted",
     ["workspace agent restarted after this tool call", "may have run"], False),
    ("InputMismatch", {"command": "make test"}, lambda r: refusal(r, INPUT_MISMATCH), "failed", None,
     ["start process: this request changed nothing because a process for this tool call (process ID",
      "already exists with a different input", "tool call error input_mismatch"], True),
    ("Unreachable", {"command": "make test"}, lambda r: TransportError(r.req_id, "connection reset by peer"),
     "unknown", "unreachable",
     ["outcome unknown", "could not be reached", "connection reset by peer", "may have started", "process_output"], True),
    ("UnreachableBackground", BACKGROUND, lambda r: TransportError(r.req_id, "connection reset by peer"),
     "unknown", "unreachable", ["outcome unknown", "could not be reached"], True),
    ("UnreadableResponse", {"command": "make test"}, lambda r: Response(r.req_id, 200, "application/json", b""),
     "unknown", "unreadable", ["outcome unknown", "could not be read", "unexpected EOF", "may have started"], True),
    ("UnreadableMissingID", {"command": "make test"},
     lambda r: Response(r.req_id, 200, "application/json", b'{"started":true}'),
     "unknown", "unreadable", ["could not be read"], True),
    ("AgentErrorResponse", {"command": "make test"},
     lambda r: Response(r.req_id, 500, "application/json", START_500), "failed", None,
     ["start process: unexpected status code 500: Failed to start process.\n\tError: no such directory"], False),
    ("AgentErrorResponse404", BACKGROUND,
     lambda r: Response(r.req_id, 404, "text/plain", b"404 page not found"), "failed", None,
     ["start background process: unexpected status code 404"], False),
    ("StaleToolCall", {"command": "make test"}, lambda r: refusal(r, STALE_TOOL_CALL), "failed", None,
     ["start process: tool call error stale_tool_call"], False),
    ("ToolCallCanceled", {"command": "make test"}, lambda r: refusal(r, TOOL_CALL_CANCELED), "failed", None,
     ["start process: tool call error tool_call_canceled"], False),
])
def test_15_start_error_mapping(name, args, make_answer, kind, reason, wants, pid):
    """TestExecuteToolCall/{AgentStartedAfterToolCall(+Background), InputMismatch,
    Unreachable(+Background), UnreadableResponse, AgentErrorResponse, StaleToolCall,
    ToolCallCanceled}: the section 5.2 rows. Start errors are ExecuteResult JSON stored as
    non-error results."""
    identity = make_identity()
    run = begin(execute(args), identity)
    run.answer(make_answer(run.last), at_ms=10)
    r = run.result
    assert (r.kind, r.reason, r.is_error) == (kind, reason, False)
    body = content(r)
    assert body["success"] is False and "backgrounded" not in body and "background_process_id" not in body
    for want in wants:
        assert want in body["error"], (want, body["error"])
    assert (identity.uuid in body["error"]) == pid
    assert (r.process_id == identity.uuid) == pid
    assert run.timers == {}


def test_15_background_start():
    """TestExecuteToolCall/Background: success, backgrounded, background_process_id = the
    answer's ID (the UUID on a new agent), also on a replay with a run age."""
    identity = make_identity()
    run = begin(execute(BACKGROUND), identity)
    assert json.loads(run.last.body) == {"background": True, "command": "make dev"}
    assert [n for n, _ in run.timers.items()] == [run.timer("answer")[0]]
    run.answer(start_answer(run.last, identity.uuid, 4 * MIN))
    assert run.result == ct.Result(
        "background_started", False,
        f'{{"success":true,"exit_code":0,"wall_duration_ms":0,"background_process_id":"{identity.uuid}","backgrounded":true}}',
        process_id=identity.uuid)


@pytest.mark.parametrize("command, background, sent", [
    ("make dev &", True, "make dev"), ("a && b", False, "a && b"), ("a |& b", False, "a |& b"),
    ("  npm start &  ", True, "npm start"), ("make test", False, "make test"),
])
def test_15_trailing_ampersand_means_background(command, background, sent):
    """RunsInBackground / trailingAmpersandCommand: a single trailing "&" (not "&&" or
    "|&") runs in the background and is stripped from the command."""
    run = begin(execute({"command": command}), make_identity())
    assert json.loads(run.last.body) == {"background": background, "command": sent}


# ---------------------------------------------------------------------------
# Items 16-17: no connection, agent answer timeout
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("identity, kind, dial, expect_unknown", [
    ("id", "refused", "Identity", True),
    (None, "refused", "NoIdentity", False),
    ("id", ct.DIAL_NO_AGENT, "IdentityNoAgent", False),
    ("id", ct.DIAL_NO_WORKSPACE, "IdentityNoWorkspace", False),
    ("id", ct.DIAL_DELETED, "IdentityWorkspaceDeleted", False),
])
def test_16_execute_no_connection(identity, kind, dial, expect_unknown):
    """TestExecuteToolCallNoConnection: a dial error with an identity gives "an earlier
    attempt may have started the command" with the UUID; no agent, no workspace or a
    deleted workspace (processes do not outlive the agent) give the plain error."""
    ident_ = make_identity() if identity else None
    r = ct.dial_failed_result(execute({"command": "make test"}), ident_, kind)
    assert r.is_error
    if expect_unknown:
        assert (r.kind, r.reason, r.process_id) == ("unknown", "unreachable", ident_.uuid)
        assert "could not be reached" in r.content and ct.dial_error_text(kind) in r.content
        assert "earlier attempt may have started the command" in r.content and "process_output" in r.content
        assert ident_.uuid in r.content
    else:
        assert r.kind == "failed" and r.content == ct.dial_error_text(kind)


@pytest.mark.parametrize("args", [{"command": "make test", "timeout": "20m"}, BACKGROUND])
def test_17_agent_answer_timeout_is_unknown_no_answer(args):
    """TestExecuteToolCallAgentAnswerTimeout/{Foreground,Background}: a start never
    answered ends after 1 min: "outcome unknown: the workspace agent did not answer within
    1m0s, so ..." with the UUID."""
    identity = make_identity()
    run = begin(execute(args), identity)
    run.fire_next()
    assert run.now_ms == ct.AGENT_ANSWER_TIMEOUT_MS
    r = run.result
    assert (r.kind, r.reason, r.process_id) == ("unknown", "no_answer", identity.uuid)
    body = content(r)
    assert body["error"].startswith("outcome unknown: the workspace agent did not answer within 1m0s, so ")
    assert "may have started" in body["error"] and identity.uuid in body["error"]
    assert "backgrounded" not in body and run.timers == {}
    late = start_answer(run.sent[0], identity.uuid)
    assert ct.on_answer(run.cs, late, run.now_ms) == (run.cs, ())


def test_17_no_identity_no_answer_keeps_legacy_text():
    """TestExecuteToolCallAgentAnswerTimeout/NoIdentity: "start background process: ...
    did not answer within 1m0s", no "outcome unknown"."""
    run = begin(execute(BACKGROUND), None)
    run.fire_next()
    error = content(run.result)["error"]
    assert run.result.kind == "failed"
    assert error.startswith("start background process: ") and "did not answer within 1m0s" in error
    assert "outcome unknown" not in error


def test_17_task_ended_sends_nothing_and_commits_nothing():
    """TestExecuteToolCallAgentAnswerTimeout/TaskEnded (C4): the attempt ends while the start
    waits: only CancelTimer effects, and no result."""
    run = begin(execute(BACKGROUND), make_identity())
    effects = ct.abort(run.cs)
    assert effects and all(isinstance(e, CancelTimer) for e in effects)
    assert {e.name for e in effects} == set(run.timers) and run.result is None


def test_17_short_timeout_ends_the_start_first():
    """TestExecuteToolCallAgentAnswerTimeout/ExecuteTimeoutFirst: with timeout 50ms the
    execute timeout ends the start first: unknown "could not be reached", not "did not
    answer" (section 8 item 3)."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "50ms"}), identity)
    assert [run.timer("deadline")[1]] == list(run.timers.values())
    run.fire_next()
    assert run.now_ms == 50
    r = run.result
    assert (r.kind, r.reason) == ("unknown", "unreachable")
    error = content(r)["error"]
    assert "could not be reached" in error and "context deadline exceeded" in error
    assert "did not answer" not in error and identity.uuid in error


def test_17_timeout_equal_to_answer_timeout_is_unreachable():
    """A 1-minute execute timeout ties with the agent answer timeout; the execute timeout
    wins (Rule 3), so the result is deterministic."""
    run = begin(execute({"command": "make test", "timeout": "1m"}), make_identity())
    run.fire_next()
    assert run.result.reason == "unreachable"


def test_17_expired_timeout_sends_nothing():
    """A zero or negative timeout is an expired command context: no start is sent."""
    run = begin(execute({"command": "make test", "timeout": "-1s"}), make_identity())
    assert run.sent == [] and run.result.reason == "unreachable"


# ---------------------------------------------------------------------------
# Items 18-24: interrupt cancel per call
# ---------------------------------------------------------------------------

START_FAILED_JSON = b'{"message":"Failed to start process.","detail":"fork failed"}'


@pytest.mark.parametrize("name, args, stop, answer, kind, reason, wants, fields", [
    ("ForegroundNotStarted", FOREGROUND_2H, 2 * HOUR, dict(started=False), "not_run", None,
     ["not run: the command was canceled before the workspace agent received it."], {"exit_code": 0}),
    ("BackgroundNotStarted", BACKGROUND, 0, dict(started=False), "not_run", None,
     ["not run: the command was canceled before the workspace agent received it."], {}),
    ("ForegroundCanceled", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, process={"running": False, "canceled": True, "output": "partial",
                                                  "exit_code": 137, "run_age_ms": 12_000}),
     "canceled", None, ["canceled by the user after 12s."],
     {"output": "partial", "exit_code": 137, "wall_duration_ms": 12_000}),
    ("ForegroundCanceledWithoutExitCode", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, process={"running": False, "canceled": True, "output": "partial",
                                                  "exit_code": None, "run_age_ms": 1_500}),
     "canceled", None, ["canceled by the user after 1.5s."], {"exit_code": -1, "wall_duration_ms": 1_500}),
    ("ForegroundExited", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, process={"running": False, "output": "PASS", "exit_code": 0,
                                                  "run_age_ms": 3_000}),
     "completed", None, [], {"success": True, "output": "PASS", "wall_duration_ms": 3_000}),
    ("ForegroundExitedWithFailure", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, process={"running": False, "output": "FAIL", "exit_code": 2,
                                                  "run_age_ms": 3_000}),
     "completed", None, [], {"success": False, "exit_code": 2}),
    ("ForegroundLeftRunning", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, process={"running": True, "output": "still going", "exit_code": None,
                                                  "run_age_ms": 3 * HOUR}),
     "timed_out", None, ["command timed out after 2h0m0s"],
     {"exit_code": -1, "wall_duration_ms": 3 * HOUR, "background_process_id": "UUID"}),
    ("ForegroundDefaultTimeout", {"command": "make test"}, 10_000, dict(started=False), "not_run", None,
     ["not run"], {}),
    ("BackgroundRunning", BACKGROUND, 0,
     dict(started=True, status_code=200, process={"running": True, "run_age_ms": 60_000}),
     "background_started", None, [], {"success": True, "backgrounded": True, "background_process_id": "UUID"}),
    ("TrailingAmpersandBackgroundRunning", {"command": "make dev &"}, 0,
     dict(started=True, status_code=200, process={"running": True, "run_age_ms": 60_000}),
     "background_started", None, [], {"backgrounded": True}),
    ("BackgroundExited", BACKGROUND, 0,
     dict(started=True, status_code=200, process={"running": False, "exit_code": 0, "run_age_ms": 60_000}),
     "background_started", None, [], {"backgrounded": True, "background_process_id": "UUID"}),
    ("ForegroundStartFailed", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=500, content_type="application/json", body=START_FAILED_JSON),
     "failed", None, ["start process: Failed to start process.: fork failed"], {"error": "EXACT"}),
    ("BackgroundStartFailed", BACKGROUND, 0, dict(started=True, status_code=500, body=b"not json"),
     "failed", None, ["start background process: Internal Server Error"], {"error": "EXACT"}),
    # Issue 34's untested rows. A start the agent recorded with a 400 answer: the command
    # "&" is promoted to the background and sent empty after its "&" is stripped (Go
    # checks for an empty command before the strip), the agent answers 400 "Command is
    # required." and records it; the cancel reads it back as the recorded start's error
    # (the ">= 400" row: with "> 400" it would be a started call without a process).
    ("EmptyAfterAmpersandStartRecorded400", {"command": "&"}, 0,
     dict(started=True, status_code=400, content_type="application/json", body=b'{"message":"Command is required."}'),
     "failed", None, ["start background process: Command is required."], {"error": "EXACT"}),
    # An exited process without an exit code: Go's completedResult reads a missing code as 0.
    ("ForegroundExitedWithoutExitCode", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, process={"running": False, "output": "done", "run_age_ms": 3_000}),
     "completed", None, [], {"success": True, "exit_code": 0, "output": "done", "wall_duration_ms": 3_000}),
    ("BackgroundStartedWithoutProcess", BACKGROUND, 0,
     dict(started=True, status_code=200, content_type="application/json", body=b'{"started":true}'),
     "background_started", None, [], {"background_process_id": "UUID"}),
    ("ForegroundStartedWithoutProcess", FOREGROUND_2H, 2 * HOUR,
     dict(started=True, status_code=200, content_type="application/json", body=b'{"started":true}'),
     "unknown", "no_process",
     ["outcome unknown: the workspace agent reported no process for this tool call", "the command may still be running",
      "UUID"], {}),
])
def test_18_interrupt_execute_answers(name, args, stop, answer, kind, reason, wants, fields):
    """TestInterruptExecute: the stop age sent, and every cancel answer mapped per the
    section 5.3 table (non-error ExecuteResult JSON). A recorded start failure is the
    whole text 5.3 gives, "start process: <message>: <detail>", and the status text
    ("Internal Server Error") for a body that is not JSON: never the live SDK error's
    "unexpected status code" wording."""
    identity = make_identity()
    call = execute(args)
    run = cancel(call, identity)
    req = run.last
    assert (req.method, req.path) == ("POST", f"/api/v0/tool-calls/{identity.uuid}/cancel")
    assert json.loads(req.body) == {"stop_if_run_age_below_ms": stop}
    assert header_values(req.headers, MESSAGE_ID_HEADER) == ["42"]
    assert header_values(req.headers, TOOL_CALL_ID_HEADER) == [identity.tool_call_id]
    run.answer(cancel_answer(req, **answer), at_ms=20)
    r = run.result
    assert (r.kind, r.reason, r.is_error) == (kind, reason, False), r
    body = content(r)
    for want in wants:
        assert want.replace("UUID", identity.uuid) in body["error"], (want, body)
    if not wants:
        assert "error" not in body
    for key, value in fields.items():
        if value == "EXACT":  # the whole text, as docs/contract.md C5.3 gives it
            assert body[key] == wants[0], (key, body)
            continue
        assert body[key] == (identity.uuid if value == "UUID" else value), (key, body)
    assert run.timers == {}


@pytest.mark.parametrize("name, args, make_answer, kind, reason, wants", [
    ("AgentStartedAfterToolCall", FOREGROUND_2H, lambda r: refusal(r, AGENT_STARTED_AFTER_TOOL_CALL),
     "unknown", "agent_restarted", ["outcome unknown: the workspace agent restarted after this tool call",
                                    "Check the workspace state"]),
    ("OldAgentWithoutCancelRoute", FOREGROUND_2H,
     lambda r: Response(r.req_id, 404, "text/plain", b"404 page not found"), "interrupted_generic", None, []),
    ("StaleToolCall", FOREGROUND_2H, lambda r: refusal(r, STALE_TOOL_CALL), "interrupted_generic", None, []),
    ("ToolCallCanceled", BACKGROUND, lambda r: refusal(r, TOOL_CALL_CANCELED), "interrupted_generic", None, []),
    ("OtherHTTPError", FOREGROUND_2H, lambda r: Response(r.req_id, 500, "application/json", b'{"message":"x"}'),
     "interrupted_generic", None, []),
    ("ForegroundUnreachable", FOREGROUND_2H, lambda r: TransportError(r.req_id, "connection reset by peer"),
     "unknown", "unreachable", ["outcome unknown: the workspace agent could not be reached",
                                "the command may still be running", "UUID"]),
    ("BackgroundUnreachable", BACKGROUND, lambda r: TransportError(r.req_id, "connection reset by peer"),
     "unknown", "unreachable", ["outcome unknown: the workspace agent could not be reached",
                                "the command may be running in the background", "UUID"]),
    ("Unreadable", FOREGROUND_2H, lambda r: Response(r.req_id, 200, "application/json", b"{"),
     "unknown", "unreadable", ["outcome unknown: the workspace agent's answer could not be read", "UUID"]),
    ("UnreadableBody", FOREGROUND_2H,
     lambda r: Response(r.req_id, 200, "application/json", b'{"started":true,"body":"%%%"}'),
     "unknown", "unreadable", ["could not be read"]),
])
def test_18_interrupt_execute_errors(name, args, make_answer, kind, reason, wants):
    """TestInterruptExecute: restarted -> unknown (restart wording); 404 / stale /
    canceled / other HTTP errors -> generic; unreachable or unreadable -> unknown with
    the UUID."""
    identity = make_identity()
    run = cancel(execute(args), identity)
    run.answer(make_answer(run.last))
    r = run.result
    assert (r.kind, r.reason) == (kind, reason)
    if kind == "interrupted_generic":
        assert r == ct.generic_result()
        assert r.content == '{"error":"tool call was interrupted before it produced a result"}' and r.is_error
        return
    error = content(r)["error"]
    for want in wants:
        assert want.replace("UUID", identity.uuid) in error
    assert (r.process_id is None) == (reason == "agent_restarted")


def test_19_invalid_timeout_sends_no_request():
    """TestInterruptExecuteInvalidTimeout: timeout "soon": no cancel (the tool would never
    have started a process), so the generic result stays; generation reports the
    invalid timeout without sending anything."""
    call = execute({"command": "make test", "timeout": "soon"})
    assert ct.interrupted_call(call) is None and ct.select_cancels([call]) == ()
    run = begin(call, make_identity())
    assert run.sent == [] and run.timers == {}
    assert run.result == ct.Result("failed", True, 'invalid timeout "soon": time: invalid duration "soon"')


@pytest.mark.parametrize("args, kind, effect", [
    ({"command": "make test"}, ct.DIAL_NO_WORKSPACE, None),
    ({"command": "make test"}, ct.DIAL_DELETED, None),
    ({"command": "make dev &"}, ct.DIAL_NO_AGENT, None),
    ({"command": "make test"}, "dial failed", "the command may still be running"),
    ({"command": "make dev &"}, "dial failed", "the command may be running in the background"),
])
def test_20_interrupt_execute_unreachable(args, kind, effect):
    """TestInterruptExecuteUnreachable: no workspace, deleted, no agent -> generic; any
    other dial failure -> unknown naming the UUID."""
    identity = make_identity()
    call = execute(args)
    r = ct.unreachable_result(call, ct.interrupted_call(call), identity, kind)
    if effect is None:
        assert r == ct.generic_result()
        return
    error = content(r)["error"]
    assert (r.kind, r.reason, r.process_id, r.is_error) == ("unknown", "unreachable", identity.uuid, False)
    assert "outcome unknown: the workspace agent could not be reached (dial workspace agent: dial failed)" in error
    assert effect in error and identity.uuid in error


@pytest.mark.parametrize("args", [{"command": "make test"}, BACKGROUND])
def test_21_cancel_before_start_then_late_start_is_refused(args):
    """TestInterruptExecuteBeforeStart (US10): the cancel and a later start of the same
    call carry the same identity; the agent answers the cancel "not started" and refuses
    the lagging start with tool_call_canceled: not run, and no process."""
    identity = make_identity()
    call = execute(args)
    interrupt = cancel(call, identity)
    interrupt.answer(cancel_answer(interrupt.last, started=False))
    assert interrupt.result.kind == "not_run"
    late = begin(call, identity, now_ms=5, prefix="replica-1/g1/c1")
    for h in (MESSAGE_ID_HEADER, TOOL_CALL_ID_HEADER):
        assert header_values(late.last.headers, h) == header_values(interrupt.last.headers, h)
    late.answer(refusal(late.last, TOOL_CALL_CANCELED))
    assert late.result.kind == "failed" and late.result.process_id is None
    assert "tool_call_canceled" in content(late.result)["error"]


@pytest.mark.parametrize("call, plan", [
    (execute(FOREGROUND_2H), ct.InterruptPlan("execute", 2 * HOUR, False)),
    (execute(BACKGROUND), ct.InterruptPlan("execute", 0, True)),
    (execute({"command": "make dev &"}), ct.InterruptPlan("execute", 0, True)),
    (execute({"command": "make test"}), ct.InterruptPlan("execute", 10_000, False)),
    (edit(), ct.InterruptPlan("edit_files", 0, False)),
    (write(), ct.InterruptPlan("write_file", 0, False)),
    (ct.ToolCall("c", "wait_agent", "{}"), None),
    (ct.ToolCall("c", "read_file", '{"path":"/a"}'), None),
    (execute("{not json"), None),
    (execute({"command": "x", "timeout": 10}), None),
    (execute({"command": "x", "timeout": "soon"}), None),
])
def test_22_interrupted_call_stop_ages(call, plan):
    """TestInterruptedCall: which tools get a cancel and with what stop age."""
    assert ct.interrupted_call(call) == plan


def test_22_not_run_and_file_answers_exact_json():
    """TestInterruptedCall: the "not run" JSON is exact; file answers become
    {"files":[],"ok":true} / {"ok":true}."""
    identity = make_identity()
    run = cancel(execute({"command": "make test"}), identity)
    run.answer(cancel_answer(run.last, started=False))
    assert run.result.content == ('{"success":false,"exit_code":0,"wall_duration_ms":0,'
                                  '"error":"not run: the command was canceled before the workspace agent received it."}')
    e = cancel(edit(), make_identity("call_e"))
    e.answer(cancel_answer(e.last, True, 200, "application/json", b'{"files":[],"ok":true}'))
    assert e.result == ct.Result("applied", False, '{"files":[],"ok":true}')
    w = cancel(write(), make_identity("call_w"))
    w.answer(cancel_answer(w.last, True, 200, "application/json", b'{"ok":true}'))
    assert w.result == ct.Result("applied", False, '{"ok":true}')
    assert json.loads(e.sent[0].body) == {"stop_if_run_age_below_ms": 0}


@pytest.mark.parametrize("call, kind, expect", [
    (execute({"command": "make test"}), ct.DIAL_NO_AGENT, "generic"),
    (execute({"command": "make test"}), "timeout", "unknown"),
    (edit(), ct.DIAL_NO_AGENT, "unknown"),
    (edit(), ct.DIAL_NO_WORKSPACE, "generic"),
    (write(), ct.DIAL_DELETED, "generic"),
    (write(), "refused", "unknown"),
])
def test_23_interrupted_call_unreachable(call, kind, expect):
    """TestInterruptedCallUnreachable: execute with no agent -> generic; a dial deadline ->
    unknown; edit_files with no agent -> unknown mentioning start_workspace (the disk
    survives); write_file with a deleted workspace -> generic."""
    identity = make_identity(call.provider_id)
    r = ct.unreachable_result(call, ct.interrupted_call(call), identity, kind)
    if expect == "generic":
        assert r == ct.generic_result()
        return
    assert (r.kind, r.reason) == ("unknown", "unreachable")
    if call.tool != "execute":
        assert r.is_error and "may have been applied" in r.content
        assert f"Check the file before changing it again (tool call {identity.uuid})." in r.content
    if kind == ct.DIAL_NO_AGENT:
        assert "start_workspace" in r.content


def test_24_same_cancel():
    """TestInterruptedCallSameCancel: only the same tool with the same stop age and
    background flag can share a cancel."""
    fg = ct.interrupted_call(execute(FOREGROUND_2H))
    assert ct.same_cancel(fg, ct.interrupted_call(execute({"command": "other", "timeout": "120m"})))
    assert not ct.same_cancel(fg, ct.interrupted_call(execute({"command": "make test"})))
    assert not ct.same_cancel(ct.InterruptPlan("execute", 0, False), ct.InterruptPlan("execute", 0, True))
    assert not ct.same_cancel(ct.interrupted_call(edit()), ct.interrupted_call(write()))
    assert ct.same_cancel(ct.interrupted_call(edit()), ct.interrupted_call(edit("x", "/b")))


# ---------------------------------------------------------------------------
# Items 25-35 (the parts observable per call)
# ---------------------------------------------------------------------------


def test_25_interrupt_task_execute_results_per_call():
    """TestInterruptTask_ExecuteResults (per-call part): foreground canceled; background
    running; old agent 404 -> generic; no connection -> unknown with the UUID; no agent
    -> generic. The single dial and release are the task layer's."""
    identity = make_identity()
    fg = cancel(execute(FOREGROUND_2H), identity)
    fg.answer(cancel_answer(fg.last, True, 200, process={"canceled": True, "run_age_ms": 2_000, "exit_code": None}))
    assert fg.result.kind == "canceled"
    bg_id = make_identity("call_bg")
    bg = cancel(execute(BACKGROUND, "call_bg"), bg_id)
    bg.answer(cancel_answer(bg.last, True, 200, process={"running": True, "run_age_ms": 2_000}))
    assert bg.result.kind == "background_started" and bg.result.process_id == bg_id.uuid
    old = cancel(execute(FOREGROUND_2H), identity)
    old.answer(Response(old.last.req_id, 404, "text/plain", b"404 page not found"))
    assert old.result.kind == "interrupted_generic"
    call = execute(FOREGROUND_2H)
    assert ct.unreachable_result(call, ct.interrupted_call(call), identity, "refused").process_id == identity.uuid
    assert ct.unreachable_result(call, ct.interrupted_call(call), identity, ct.DIAL_NO_AGENT).kind == "interrupted_generic"


@pytest.mark.parametrize("calls", [
    [execute("{")],
    [execute({"command": "make test", "timeout": "soon"})],
    [ct.ToolCall("call_1", "wait_agent", "{}")],
    [execute({"command": "make test"}, "dup"), execute({"command": "make test", "timeout": "2h"}, "dup")],
    [execute({"command": "make test"}, "dup"), execute({"command": "make test &"}, "dup")],
])
def test_26_calls_without_cancel_mean_no_dial(calls):
    """TestInterruptTask_ExecuteCallsWithoutCancel: unparsable arguments, an invalid
    timeout, another tool, or a duplicate ID with different stops: nothing to cancel,
    so the task dials nothing and every call keeps the generic result."""
    assert ct.select_cancels(calls) == ()


def test_27_duplicate_ids_cancel_once():
    """TestInterruptTask_DuplicateIDsCancelOnce: two foreground calls with the same ID get
    one cancel, and both get the same "canceled by the user after 2s." result."""
    a = execute({"command": "make test"}, "dup")
    b = execute({"command": "make test", "timeout": "10s"}, "dup")
    picks = ct.select_cancels([a, b])
    assert picks == (ct.CancelPick("dup", a, ct.InterruptPlan("execute", 10_000, False)),)
    identity = make_identity("dup")
    run = Clock(ct.begin_cancel(picks[0].call, picks[0].plan, identity, SRC, "r1/i1/c1", CHAT, 0))
    assert len(run.sent) == 1
    run.answer(cancel_answer(run.last, True, 200, process={"canceled": True, "output": "", "run_age_ms": 2_000}))
    assert content(run.result)["error"] == "canceled by the user after 2s."


def test_29_cancels_are_in_flight_in_parallel():
    """TestInterruptTask_CancelsExecuteCallsInParallel (per-call part): both cancels are
    sent before either is answered (foreground stop 2 h, background stop 0); wait_agent
    gets no cancel; request IDs and timers stay under each call's prefix."""
    calls = [execute(FOREGROUND_2H, "fg"), execute(BACKGROUND, "bg"), ct.ToolCall("w", "wait_agent", "{}")]
    picks = ct.select_cancels(calls)
    assert [p.provider_id for p in picks] == ["fg", "bg"]
    runs = [Clock(ct.begin_cancel(p.call, p.plan, make_identity(p.provider_id), SRC, f"r1/i1/{p.provider_id}", CHAT, 0))
            for p in picks]
    assert [json.loads(r.last.body)["stop_if_run_age_below_ms"] for r in runs] == [2 * HOUR, 0]
    for r, p in zip(runs, picks):
        assert r.last.req_id.startswith(f"r1/i1/{p.provider_id}:") and ct.owns(r.cs, r.last.req_id)
        assert all(name.startswith(f"r1/i1/{p.provider_id}:") for name in r.timers)
    # An answer for the other call is not ours.
    assert ct.on_answer(runs[0].cs, cancel_answer(runs[1].last, False), 0) == (runs[0].cs, ())


def test_30_cancel_bound_yields_unknown():
    """TestInterruptTask_CancelBoundYieldsUnknown / TestInterruptExecuteNoAnswer: a cancel
    never answered ends after 1 min: unknown "did not answer within 1m0s" with the UUID;
    no resend."""
    identity = make_identity()
    run = cancel(execute({"command": "make test"}), identity)
    run.fire_next()
    assert run.now_ms == ct.AGENT_ANSWER_TIMEOUT_MS and len(run.sent) == 1
    r = run.result
    assert (r.kind, r.reason) == ("unknown", "no_answer")
    error = content(r)["error"]
    assert error.startswith("outcome unknown: " + ct.NO_ANSWER_REASON)
    assert "the command may still be running" in error and identity.uuid in error


def test_31_task_end_mid_cancel_commits_nothing():
    """TestInterruptTask_ParentCanceledDuringCancelCommitsNothing (per-call part): the
    attempt ends mid-cancel: only CancelTimer, no result, nothing more sent."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    effects = ct.abort(run.cs)
    assert effects and all(isinstance(e, CancelTimer) for e in effects) and run.result is None


@pytest.mark.parametrize("call", [edit(), write()])
def test_32_file_tool_interrupt_results(call):
    """TestInterruptTask_FileToolCallResults: applied -> the tool's success; no connection
    or no agent -> unknown "may have been applied"; a recorded error -> the tool's error
    text; restart -> unknown; not started -> not applied."""
    identity = make_identity(call.provider_id)
    change = "edit" if call.tool == "edit_files" else "write"
    ok_body = b'{"files":["/a.txt"],"ok":true}' if change == "edit" else b'{"ok":true}'
    applied = cancel(call, identity)
    applied.answer(cancel_answer(applied.last, True, 200, "application/json", ok_body))
    assert applied.result.kind == "applied" and not applied.result.is_error
    for dial in ("refused", ct.DIAL_NO_AGENT):
        r = ct.unreachable_result(call, ct.interrupted_call(call), identity, dial)
        assert r.kind == "unknown" and f"the {change} may have been applied" in r.content
    recorded = cancel(call, identity)
    recorded.answer(cancel_answer(recorded.last, True, 404, "application/json",
                                  b'{"message":"open /a.txt: file does not exist"}'))
    assert recorded.result == ct.Result("failed", True, "unexpected status code 404: open /a.txt: file does not exist")
    restarted = cancel(call, identity)
    restarted.answer(refusal(restarted.last, AGENT_STARTED_AFTER_TOOL_CALL))
    assert restarted.result.reason == "agent_restarted"
    assert f"the {change} may have been applied before the restart" in restarted.result.content
    never = cancel(call, identity)
    never.answer(cancel_answer(never.last, False))
    assert never.result == ct.Result(
        "not_applied", True, f"not applied: the {change} was canceled before the workspace agent received it.")
    timeout = cancel(call, identity)
    timeout.fire_next()
    assert (timeout.result.kind, timeout.result.reason) == ("unknown", "no_answer")
    stale = cancel(call, identity)
    stale.answer(refusal(stale.last, STALE_TOOL_CALL))
    assert stale.result == ct.generic_result()


def test_34_file_and_execute_calls_together():
    """TestInterruptTask_CancelsFileAndExecuteCallsTogether: execute is canceled, the edit
    gives "not applied", the write gives {"ok":true}."""
    calls = [execute(FOREGROUND_2H, "x"), edit("e"), write("w")]
    picks = ct.select_cancels(calls)
    assert [p.plan.tool for p in picks] == ["execute", "edit_files", "write_file"]
    runs = {p.provider_id: Clock(ct.begin_cancel(p.call, p.plan, make_identity(p.provider_id), SRC,
                                                 f"r1/i1/{p.provider_id}", CHAT, 0)) for p in picks}
    runs["x"].answer(cancel_answer(runs["x"].last, True, 200, process={"canceled": True, "run_age_ms": 5_000}))
    runs["e"].answer(cancel_answer(runs["e"].last, False))
    runs["w"].answer(cancel_answer(runs["w"].last, True, 200, "application/json", b'{"ok":true}'))
    assert [runs[k].result.kind for k in "xew"] == ["canceled", "not_applied", "applied"]
    assert runs["w"].result.content == '{"ok":true}'


def test_35_duplicate_ids_across_tools_get_generic():
    """TestInterruptTask_FileToolCallsWithoutCancel: a provider ID shared by an edit and a
    write (or a file tool and execute) gets no cancel, so no dial."""
    assert ct.select_cancels([edit("dup"), write("dup")]) == ()
    assert ct.select_cancels([edit("dup"), execute({"command": "x &"}, "dup")]) == ()
    assert ct.select_cancels([edit("dup"), ct.ToolCall("dup", "wait_agent", "{}")]) == ()


# ---------------------------------------------------------------------------
# File tools in generation (section 5.4, fileRequestErrorResult / fileToolConnErrorResult)
# ---------------------------------------------------------------------------


def test_file_tool_requests_carry_identity_and_answer_timeout():
    """The edit and write requests carry the tool call headers, have the route shapes of the
    agent API, and wait at most 1 min."""
    e = begin(edit(), make_identity("call_e"))
    assert (e.last.method, e.last.path) == ("POST", "/api/v0/edit-files")
    assert json.loads(e.last.body) == {"files": [{"path": "/a.txt", "edits": [{"search": "a", "replace": "b"}]}]}
    w = begin(write(), make_identity("call_w"))
    assert (w.last.path, w.last.query, w.last.body) == ("/api/v0/write-file", "path=%2Fa.txt", b"hello")
    for run in (e, w):
        assert has_tool_call_headers(run.last) and run.timer("answer")[1] == ct.AGENT_ANSWER_TIMEOUT_MS


@pytest.mark.parametrize("tool, make_answer, kind, reason, wants", [
    ("edit_files", lambda r: Response(r.req_id, 404, "application/json",
                                       b'{"message":"open /a.txt: no such file or directory"}'),
     "failed", None, ["unexpected status code 404: open /a.txt: no such file or directory"]),
    ("edit_files", lambda r: TransportError(r.req_id, "connection reset by peer"), "unknown", "unreachable",
     ["outcome unknown: the workspace agent could not be reached", "so the edit may have been applied.",
      "Check the file before changing it again (tool call UUID)."]),
    ("write_file", lambda r: Response(r.req_id, 200, "application/json", b"{"), "applied", None, []),
    ("edit_files", lambda r: Response(r.req_id, 200, "application/json", b"{"), "unknown", "unreadable",
     ["could not be read"]),
    ("write_file", lambda r: refusal(r, AGENT_STARTED_AFTER_TOOL_CALL), "unknown", "agent_restarted",
     ["the write may have been applied before the restart"]),
    ("edit_files", lambda r: refusal(r, INPUT_MISMATCH), "failed", None,
     ["edit files: this request changed nothing because an edit for this tool call already exists with a different input"]),
    ("write_file", lambda r: refusal(r, INPUT_MISMATCH), "failed", None,
     ["write file: this request changed nothing because a write for this tool call already exists"]),
    ("edit_files", lambda r: refusal(r, STALE_TOOL_CALL), "failed", None,
     ["edit files: tool call error stale_tool_call"]),
    ("write_file", lambda r: refusal(r, TOOL_CALL_CANCELED), "failed", None,
     ["write file: tool call error tool_call_canceled"]),
])
def test_file_tool_generation_mapping(tool, make_answer, kind, reason, wants):
    """filetoolcall_test.go / section 5.4 (generation): recorded HTTP errors keep the
    tool's text; transport, unreadable, no answer and restart give unknown; input
    mismatch and stale refusals keep the tool's wording."""
    call = edit() if tool == "edit_files" else write()
    identity = make_identity(call.provider_id)
    run = begin(call, identity)
    run.answer(make_answer(run.last))
    r = run.result
    assert (r.kind, r.reason) == (kind, reason), r
    for want in wants:
        assert want.replace("UUID", identity.uuid) in r.content, (want, r.content)
    assert r.is_error == (kind != "applied")


def test_file_tool_generation_no_answer_and_dial():
    """The 1-minute bound gives unknown no_answer; a dial failure gives "an earlier attempt
    may have applied the edit" (no agent included: the disk survives), while no workspace
    or a deleted workspace give the plain error."""
    identity = make_identity("call_e")
    run = begin(edit(), identity)
    run.fire_next()
    assert (run.result.kind, run.result.reason) == ("unknown", "no_answer")
    for dial, kind in ((ct.DIAL_NO_AGENT, "unknown"), ("timeout", "unknown"), (ct.DIAL_DELETED, "failed"),
                       (ct.DIAL_NO_WORKSPACE, "failed")):
        r = ct.dial_failed_result(edit(), identity, dial)
        assert r.kind == kind
        if kind == "unknown":
            assert "an earlier attempt may have applied the edit" in r.content
    assert "start_workspace" in ct.dial_failed_result(edit(), identity, ct.DIAL_NO_AGENT).content
    assert ct.dial_failed_result(edit(), None, "timeout").kind == "failed"


@pytest.mark.parametrize("args_json, message", [
    ('{"files":[]}', "files is required"),
    ('{"files":[{"path":" ","edits":[{}]}]}', "files[0].path is required"),
    ('{"files":[{"path":"/a","edits":[]}]}', "files[0].edits must contain at least one edit"),
])
def test_edit_files_invalid_args_send_nothing(args_json, message):
    """edit_files validates before contacting the agent."""
    run = begin(ct.ToolCall("c", "edit_files", args_json), make_identity("c"))
    assert run.sent == [] and run.result.kind == "failed" and message in run.result.content


# ---------------------------------------------------------------------------
# Classifier, texts, other tools, determinism, purity
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("failure, cls", [
    (ct.NoAnswer("Post", "http://agent/x"), ct.ErrorClass.NO_ANSWER),
    (Response("r", 409, "application/json", tool_call_error(STALE_TOOL_CALL).body()), ct.ErrorClass.REFUSED),
    (Response("r", 409, "application/json", b'{"code":"other"}'), ct.ErrorClass.RESPONSE),
    (Response("r", 404, "text/plain", b"404 page not found"), ct.ErrorClass.RESPONSE),
    (Response("r", 500, "application/json", b"{}"), ct.ErrorClass.RESPONSE),
    (TransportError("r", "connection refused"), ct.ErrorClass.UNREACHABLE),
    (ct.Deadline("Post", "http://agent/x"), ct.ErrorClass.UNREACHABLE),
    (ct.Undecodable("decode response: unexpected EOF"), ct.ErrorClass.UNREADABLE),
])
def test_classifier_table(failure, cls):
    """ClassifyAgentError (section 5.1): NoAnswer, Refused(code), Response (404 included),
    Unreachable, Unreadable, in that order."""
    assert ct.classify(failure).cls is cls


def test_unknown_outcome_text():
    """UnknownOutcome: "outcome unknown: <reason>, so <effect>. <check>"."""
    assert ct.unknown_outcome("r", "e", "C.") == "outcome unknown: r, so e. C."
    assert ct.NO_ANSWER_REASON == "the workspace agent did not answer within 1m0s"


def test_other_tools_run_at_least_once_without_agent_contact():
    """Tools without tool call headers (wait_agent, read_file, MCP ...) complete at once."""
    run = begin(ct.ToolCall("c", "read_file", '{"path":"/a"}'), make_identity("c"))
    assert run.sent == [] and run.result == ct.Result("completed", False, "{}")


def test_stale_timers_and_answers_are_ignored():
    """Rule 2: a timer name that is not armed, or an answer to another request, changes
    nothing."""
    identity = make_identity()
    run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
    assert ct.on_timer(run.cs, "replica-1/g1/c1:answer999", 5) == (run.cs, ())
    assert ct.on_answer(run.cs, Response("other:1", 200), 5) == (run.cs, ())
    done = begin(ct.ToolCall("c", "read_file", "{}"), identity)
    assert ct.on_timer(done.cs, "x", 1) == (done.cs, ())


def test_same_inputs_same_states():
    """Determinism: the same sequence of inputs gives equal (hashable) states and effects."""

    def drive():
        identity = make_identity()
        step = ct.begin_call(execute({"command": "make test", "timeout": "10m"}), identity, SRC, "p", CHAT, 0)
        cs, effects = step
        req = next(e.request for e in effects if isinstance(e, Send))
        cs, effects2 = ct.on_answer(cs, start_answer(req, identity.uuid, 1_000), 10)
        return cs, effects + effects2

    a, b = drive(), drive()
    assert a == b and hash(a[0]) == hash(b[0])



def test_a_finished_call_is_an_immutable_value():
    """Determinism: a finished call's state, its committed result included, is a value:
    equal inputs give equal states with equal hashes, and the result cannot be changed in
    place after it was committed."""

    def finish():
        identity = make_identity()
        run = begin(execute({"command": "make test", "timeout": "10m"}), identity)
        run.answer(start_answer(run.last, identity.uuid, 0))
        run.answer(output_answer(run.last, False, 0, "ok"))
        return run.cs

    a, b = finish(), finish()
    assert a.result.kind == "completed" and a == b and hash(a) == hash(b) and hash(a.result) == hash(b.result)
    with pytest.raises(AttributeError):
        a.result.kind = "failed"

def test_long_output_is_capped_at_32k():
    """truncateOutput: execute sends at most 32 KB of output to the model."""
    identity = make_identity()
    run = begin(execute({"command": "yes", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 0))
    run.answer(output_answer(run.last, False, 0, "é" * 40_000))
    assert len(content(run.result)["output"].encode()) <= ct.MAX_OUTPUT_TO_MODEL_BYTES


def test_file_dump_note():
    """detectFileDump: "cat file" gets the read_file note on its foreground result."""
    identity = make_identity()
    run = begin(execute({"command": "cat /etc/hosts"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 0))
    run.answer(output_answer(run.last, False, 0, "x"))
    assert content(run.result)["note"].startswith("Consider using read_file")


# ---------------------------------------------------------------------------
# Issue 35: what the mutation run (python -m toolcall_sim.ci.mutation) found unpinned in
# model/chattool/cancel.py. Each asserts the contract (docs/contract.md C5.3, C5.4) or the
# Go fact it cites.
# ---------------------------------------------------------------------------

# Go's net/http StatusText for the statuses an agent answers with.
GO_STATUS_TEXT = [
    (400, "Bad Request"), (401, "Unauthorized"), (403, "Forbidden"), (404, "Not Found"),
    (405, "Method Not Allowed"), (408, "Request Timeout"), (409, "Conflict"), (410, "Gone"),
    (413, "Request Entity Too Large"), (422, "Unprocessable Entity"), (424, "Failed Dependency"),
    (429, "Too Many Requests"), (500, "Internal Server Error"), (501, "Not Implemented"),
    (502, "Bad Gateway"), (503, "Service Unavailable"), (504, "Gateway Timeout"),
]


@pytest.mark.parametrize("status, text", GO_STATUS_TEXT)
def test_recorded_start_error_without_json_is_gos_status_text(status, text):
    """C5.3, "Started, Process nil, recorded StatusCode >= 400": a recorded start failure
    whose body is no JSON object reads as http.StatusText of its status."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, status, "text/plain", b"boom"))
    assert run.result.kind == "failed"
    assert content(run.result)["error"].startswith(f"start process: {text}")


def test_recorded_start_error_reads_json_only_with_a_json_content_type():
    """codersdk.ReadBodyAsError decodes the body as the SDK error only for
    application/json; a JSON-looking body of another type, or of none, gives the status text."""
    for content_type in ("text/plain; charset=utf-8", "application/xml", ""):
        run = cancel(execute(FOREGROUND_2H), make_identity())
        run.answer(cancel_answer(run.last, True, 500, content_type, START_FAILED_JSON))
        assert content(run.result)["error"].startswith("start process: Internal Server Error"), content_type


@pytest.mark.parametrize("answer", [
    dict(started=False),
    dict(started=True, status_code=200, process={"running": True, "output": "", "run_age_ms": 3 * HOUR}),
    dict(started=True, status_code=200, process={"running": False, "canceled": True, "run_age_ms": 5}),
    dict(started=True, status_code=200, process={"running": False, "exit_code": 3, "run_age_ms": 5}),
])
def test_interrupt_result_exit_code_is_the_contents(answer):
    """The committed result's exit code (read by the checkers, model/properties/checks.py)
    is the one its content reports: 0 for "not run", -1 left running or canceled without a
    code, the process's own once it exited."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, **answer))
    assert run.result.exit_code == content(run.result)["exit_code"]


def test_exited_process_without_run_age_has_zero_wall_duration():
    """A cancel answer's process without run_age_ms: Go's RunAgeMs is the zero value, so
    the result's wall duration is 0."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 200, process={"running": False, "exit_code": 0}))
    assert content(run.result)["wall_duration_ms"] == 0 and run.result.wall_duration_ms == 0


def test_execute_cancel_failed_after_agent_restart_is_no_error_result():
    """C5.3: an execute interrupt's result is a non-error result, also when the cancel
    itself is refused because the agent restarted; the outcome is unknown and names no
    process (the restarted agent has none under the UUID)."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(refusal(run.last, AGENT_STARTED_AFTER_TOOL_CALL))
    r = run.result
    assert (r.reason, r.is_error, r.process_id) == ("agent_restarted", False, None)


def test_recorded_start_error_with_a_broken_json_body_is_the_status_text():
    """codersdk.ReadBodyAsError: a JSON content type whose body does not decode falls back
    to the status text, like a body of another type."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 503, "application/json", b'{"message": '))
    assert content(run.result)["error"].startswith("start process: Service Unavailable")


@pytest.mark.parametrize("code", [-1, 1, 137])
def test_exited_process_with_a_nonzero_code_is_no_success(code):
    """C5.3, exited before the cancel: success is exit code == 0 (a negative code, as a
    signal leaves, is a failure too)."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 200, process={"running": False, "exit_code": code, "run_age_ms": 1}))
    assert content(run.result)["success"] is False and run.result.exit_code == code


def test_tool_names_read_at_run_time_map_like_literals():
    """The tool name of a call comes from the chat's messages (a scenario's TOML in the
    simulation), not from a literal in the code: the cancel answer and a failed cancel map
    the same for a name built at run time."""
    tool = "".join(["exe", "cute"])
    call = ct.ToolCall("call_1", tool, json.dumps(FOREGROUND_2H))
    run = cancel(call, make_identity())
    run.answer(cancel_answer(run.last, True, 200, process={"running": False, "exit_code": 0, "run_age_ms": 1}))
    assert run.result.kind == "completed"
    restarted = cancel(ct.ToolCall("call_1", tool, json.dumps(FOREGROUND_2H)), make_identity())
    restarted.answer(refusal(restarted.last, AGENT_STARTED_AFTER_TOOL_CALL))
    assert (restarted.result.reason, restarted.result.is_error) == ("agent_restarted", False)
    left = cancel(ct.ToolCall("call_1", tool, json.dumps(FOREGROUND_2H)), make_identity())
    left.answer(cancel_answer(left.last, True, 200, process={"running": True, "run_age_ms": 3 * HOUR}))
    assert content(left.result)["error"] == "command timed out after 2h0m0s"
    wtool = "".join(["write", "_file"])
    w = cancel(ct.ToolCall("call_w", wtool, json.dumps({"path": "/a.txt", "content": "x"})), make_identity("call_w"))
    w.answer(cancel_answer(w.last, True, 200, "application/json", b'{"ok":true}'))
    assert w.result == ct.Result("applied", False, '{"ok":true}')


def test_recorded_start_error_json_content_type_with_parameters():
    """codersdk.ReadBodyAsError reads the media type before its parameters:
    application/json; charset=utf-8 is JSON."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 500, "application/json; charset=utf-8", START_FAILED_JSON))
    assert content(run.result)["error"].startswith("start process: Failed to start process.: fork failed")


def test_recorded_status_below_400_is_no_start_failure():
    """C5.3: the recorded start failed only when StatusCode >= 400; 399 with no process is
    a started call without a process (foreground: unknown)."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 399, "text/plain", b"x"))
    assert (run.result.kind, run.result.reason) == ("unknown", "no_process")


def test_execute_cancel_refused_for_another_input_names_the_process():
    """An execute cancel refused with input mismatch is a failed result that still names
    the UUID as the process ID (only after an agent restart is there no process under it)."""
    identity = make_identity()
    run = cancel(execute(FOREGROUND_2H), identity)
    run.answer(refusal(run.last, INPUT_MISMATCH))
    assert (run.result.kind, run.result.process_id) == ("failed", identity.uuid)


def test_file_cancel_answer_without_status_code_reads_status_zero():
    """CancelToolCallResponse omits a zero status_code (omitempty, docs/contract.md D9):
    decoded, it is Go's zero value 0, not a 2xx, so the file tool's result is the SDK error
    for status 0."""
    w = cancel(write(), make_identity("call_w"))
    w.answer(Response(w.last.req_id, 200, "application/json", json_body({"started": True})))
    assert w.result.kind == "failed" and w.result.content.startswith("unexpected status code 0:")


def test_interrupted_call_of_another_tool_is_none_whatever_its_name():
    """NewInterruptedCall: only execute and the file tools get a cancel; another tool
    (here one that sorts before "execute") keeps the generic result, even with arguments
    that would parse as an execute's."""
    assert ct.interrupted_call(ct.ToolCall("c", "create_workspace", json.dumps({"command": "make"}))) is None


def test_select_cancels_copies_of_different_tools_get_no_cancel():
    """C3.7 (interruptedToolCalls): copies sharing a provider ID get one cancel only when
    every copy maps to the same cancel; an edit and a write under one ID differ."""
    assert ct.select_cancels([edit("dup"), write("dup")]) == ()
    assert ct.select_cancels([write("dup"), edit("dup")]) == ()


def test_select_cancels_copies_with_tool_names_read_at_run_time():
    """Copies whose tool names come from the chat's messages (equal strings, not one
    object) share their one cancel."""
    calls = [ct.ToolCall("dup", "".join(["write", "_file"]), json.dumps({"path": "/a", "content": "x"}))
             for _ in range(2)]
    assert [p.provider_id for p in ct.select_cancels(calls)] == ["dup"]


def test_select_cancels_goes_on_past_a_call_without_a_cancel():
    """A provider ID without a plan keeps the generic result; the IDs after it still get
    their cancels, in order of first appearance."""
    calls = [ct.ToolCall("r", "read_file", '{"path":"/a"}'), execute({"command": "make"}, "x"), write("w")]
    assert [p.provider_id for p in ct.select_cancels(calls)] == ["x", "w"]


def test_select_cancels_background_and_foreground_copies_get_no_cancel():
    """C3.7: a background copy and a foreground copy whose timeout is 0s (stop age 0 too)
    map to different cancels, so their provider ID gets none, in either order."""
    bg, fg = execute(BACKGROUND, "dup"), execute({"command": "make", "timeout": "0s"}, "dup")
    assert ct.select_cancels([bg, fg]) == () and ct.select_cancels([fg, bg]) == ()


@pytest.mark.parametrize("process, field", [
    ({"running": 1, "run_age_ms": 5}, "ToolCallProcess.process.running of type bool"),
    ({"running": False, "canceled": 1, "run_age_ms": 5}, "ToolCallProcess.process.canceled of type bool"),
    ({"running": False, "exit_code": "0"}, "ToolCallProcess.process.exit_code of type int"),
    ({"running": False, "exit_code": True}, "ToolCallProcess.process.exit_code of type int"),
    ({"running": False, "exit_code": 0, "output": 7}, "ToolCallProcess.process.output of type string"),
    ({"running": False, "exit_code": 0, "run_age_ms": "1"}, "ToolCallProcess.process.run_age_ms of type int64"),
])
def test_cancel_answer_with_a_field_of_the_wrong_type_is_unreadable(process, field):
    """C5.1, C5.3: chatd decodes the cancel answer with Go's encoding/json, where a JSON
    value of another type than the field's (a number for a bool, a string for an int) is an
    UnmarshalTypeError: the answer as a whole does not decode, so the outcome is unknown
    (unreadable), not the answer read with the field as false or absent."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 200, process=process))
    assert (run.result.kind, run.result.reason, run.result.is_error) == ("unknown", "unreadable", False)
    assert "json: cannot unmarshal" in content(run.result)["error"] and field in content(run.result)["error"]


@pytest.mark.parametrize("value, field", [
    ({"started": True, "status_code": "200"}, "CancelToolCallResponse.status_code of type int"),
    ({"started": True, "status_code": 200, "content_type": 1}, "CancelToolCallResponse.content_type of type string"),
    ({"started": True, "status_code": 200, "body": 1}, "CancelToolCallResponse.body of type []uint8"),
    ({"started": True, "status_code": 200, "process": [1]}, "CancelToolCallResponse.process of type"),
])
def test_cancel_answer_with_a_top_level_field_of_the_wrong_type_is_unreadable(value, field):
    """As for the process's fields: the answer's own fields of another JSON type fail the
    decode, for a file tool too (its result is the unknown outcome, not a recorded answer)."""
    for call, ident in ((execute(FOREGROUND_2H), make_identity()), (write(), make_identity("call_w"))):
        run = cancel(call, ident)
        run.answer(Response(run.last.req_id, 200, "application/json", json_body(value)))
        assert (run.result.kind, run.result.reason) == ("unknown", "unreadable")
        assert field in run.result.content


def test_cancel_answer_null_fields_are_go_zero_values():
    """Go's decoder leaves a field null in the JSON at its zero value (no error): a null
    process is no process, null running/canceled are false, a null exit code is none."""
    run = cancel(execute(FOREGROUND_2H), make_identity())
    run.answer(cancel_answer(run.last, True, 200, process={"running": None, "canceled": True, "exit_code": None,
                                                          "output": None, "run_age_ms": None}))
    assert (run.result.kind, run.result.exit_code) == ("canceled", -1)
    nothing = cancel(execute(FOREGROUND_2H), make_identity())
    nothing.answer(Response(nothing.last.req_id, 200, "application/json",
                            json_body({"started": True, "status_code": None, "content_type": None, "body": None,
                                       "process": None})))
    assert (nothing.result.kind, nothing.result.reason) == ("unknown", "no_process")


def test_a_lone_surrogate_escape_in_an_answer_reads_as_the_replacement_character():
    """Go's encoding/json reads a lone surrogate escape ("\\udc80") in a string as U+FFFD
    (a surrogate pair as its one code point), so the output a result quotes holds U+FFFD
    where the agent's answer had the escape, on the wait and in a cancel answer alike."""
    identity = make_identity()
    run = begin(execute({"command": "yes", "timeout": "10m"}), identity)
    run.answer(start_answer(run.last, identity.uuid, 0))
    run.answer(Response(run.last.req_id, 200, "application/json",
                        b'{"running":false,"exit_code":0,"output":"a\\udc80b \\ud83d\\ude00 \\ud83d"}'))
    assert content(run.result)["output"] == "a\ufffdb \U0001F600 \ufffd"
    stopped = cancel(execute(FOREGROUND_2H), identity)
    stopped.answer(cancel_answer(stopped.last, True, 200, process={"running": False, "exit_code": 0, "run_age_ms": 1,
                                                                   "output": "x\udc80"}))
    assert content(stopped.result)["output"] == "x\ufffd"


@pytest.mark.parametrize("status, kind", [(199, "failed"), (200, "applied"), (299, "applied"), (300, "failed")])
def test_recorded_file_answer_is_the_tools_success_only_when_2xx(status, kind):
    """C5.4 on interrupt: a recorded 2xx is the tool's success result, any other recorded
    status the tool's error text (the SDK's text for that status)."""
    run = cancel(write(), make_identity("call_w"))
    run.answer(cancel_answer(run.last, True, status, "application/json", b'{"ok":true}'))
    assert (run.result.kind, run.result.is_error) == (kind, kind == "failed")
    if kind == "failed":
        assert run.result.content.startswith(f"unexpected status code {status}: ")


SH_NOT_FOUND = {"message": "Failed to start process.", "detail": 'exec: "sh": executable file not found in $PATH'}
SH_GUIDANCE = ('The workspace has no POSIX shell (sh) on its PATH. Coder Agents run commands with "sh -c". '
               "On Windows, install sh via Git Bash, MSYS2, or WSL, then restart the workspace to pick up the "
               "updated PATH.")


def test_start_error_without_a_shell_gets_the_shell_guidance():
    """Go's execute tool (chattool/execute.go): a start error saying the agent found no
    ``sh`` gets a blank line and the guidance after it, on a live start failure and on a
    recorded one in a cancel answer (C5.2, C5.3)."""
    identity = make_identity()
    run = begin(execute(FOREGROUND_2H), identity)
    run.answer(Response(run.last.req_id, 500, "application/json", json_body(SH_NOT_FOUND)))
    assert content(run.result)["error"] == (
        'start process: unexpected status code 500: Failed to start process.\n\tError: exec: "sh": '
        "executable file not found in $PATH\n\n" + SH_GUIDANCE)
    stopped = cancel(execute(FOREGROUND_2H), identity)
    stopped.answer(cancel_answer(stopped.last, True, 500, "application/json", json_body(SH_NOT_FOUND)))
    assert content(stopped.result)["error"] == (
        'start process: Failed to start process.: exec: "sh": executable file not found in $PATH\n\n' + SH_GUIDANCE)


def test_unknown_outcome_texts_quote_the_error_as_go_prints_it():
    """C5.1/C5.2: an unreachable agent is quoted with Go's *url.Error text (method, URL,
    cause); an unreadable answer with the decode error alone."""
    identity = make_identity()
    run = begin(execute(FOREGROUND_2H), identity)
    run.answer(TransportError(run.last.req_id, "connection refused"))
    assert content(run.result)["error"].startswith(
        'outcome unknown: the workspace agent could not be reached (Post "http://agent/api/v0/processes/start": '
        "connection refused), so the command may have started. ")
    unreadable = begin(execute(FOREGROUND_2H), identity)
    unreadable.answer(Response(unreadable.last.req_id, 200, "application/json", b"{}"))
    assert content(unreadable.result)["error"].startswith(
        "outcome unknown: the workspace agent's answer could not be read "
        '(decode response: missing or invalid field "id"), so the command may have started. ')


# ---------------------------------------------------------------------------
# The execute wait's edges (C4.2, C4.3, C4.6, C5.2): found by the mutation run
# ---------------------------------------------------------------------------

MAKE_10M = {"command": "make", "timeout": "10m"}


def test_legacy_wait_reads_until_the_execute_timeout_from_the_attempts_start():
    """C4.6: an old agent (another process ID) is waited for until the attempt's start
    plus the timeout: a capped read before that deadline reads again (without tool call
    headers, C4.1), a read still running at the deadline or later is the timeout result."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity, now_ms=1_000)
    run.answer(start_answer(run.last, "proc-1", None), at_ms=1_100)
    for at_ms in (1_000 + 5 * MIN, 600_500):
        run.answer(output_answer(run.last, True), at_ms=at_ms)
        assert run.result is None and run.last.query == "wait=true" and not has_tool_call_headers(run.last)
    run.answer(output_answer(run.last, True, output="x"), at_ms=601_000)
    assert run.result.kind == "timed_out" and content(run.result)["wall_duration_ms"] == 600_000
    late = begin(execute(MAKE_10M), identity, now_ms=1_000)
    late.answer(start_answer(late.last, "proc-1", None), at_ms=1_100)
    late.answer(output_answer(late.last, True), at_ms=601_005)
    assert late.result.kind == "timed_out"


def test_new_agent_wait_ends_at_the_start_plus_the_timeout_less_the_run_age():
    """C4.3: a new agent's process is waited for until ``now + timeout - run_age``; its
    wall duration is the run age plus the wait."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity, now_ms=1_000)
    run.answer(start_answer(run.last, identity.uuid, 300), at_ms=1_100)
    run.answer(output_answer(run.last, True), at_ms=600_500)
    assert run.result is None and not has_tool_call_headers(run.last)
    run.answer(output_answer(run.last, True), at_ms=600_800)
    assert run.result.kind == "timed_out"
    done = begin(execute(MAKE_10M), identity, now_ms=1_000)
    done.answer(start_answer(done.last, identity.uuid, 300), at_ms=1_100)
    done.answer(output_answer(done.last, False, -1), at_ms=10_000)
    assert (done.result.kind, done.result.exit_code) == ("completed", -1)
    assert content(done.result) == {"success": False, "exit_code": -1, "wall_duration_ms": 9_200}
    no_code = begin(execute(MAKE_10M), identity)
    no_code.answer(start_answer(no_code.last, identity.uuid, 0))
    no_code.answer(Response(no_code.last.req_id, 200, "application/json", json_body({"running": False})))
    assert (no_code.result.exit_code, content(no_code.result)["success"]) == (0, True)


@pytest.mark.parametrize("run_age_ms, wait", [(MIN * 10 - 1, True), (MIN * 10, False), (MIN * 10 + 5, False)])
def test_a_run_older_than_the_timeout_is_read_once_at_once(run_age_ms, wait):
    """C4.3: with time left (even 1 ms) the wait reads blocking; with none left (the run
    as old as the timeout, or older) one snapshot is read at once."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    run.answer(start_answer(run.last, identity.uuid, run_age_ms), at_ms=10)
    assert run.last.query == ("wait=true" if wait else "")


def test_a_negative_run_age_waits_the_whole_timeout():
    """C4.3: a negative run age (clock skew) counts as 0."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    run.answer(start_answer(run.last, identity.uuid, -5_000), at_ms=10)
    assert run.timer("deadline")[1] == 10 + 10 * MIN


@pytest.mark.parametrize("timeout, sent", [("1ms", 1), ("0s", 0)])
def test_a_timeout_of_zero_is_expired_one_millisecond_is_not(timeout, sent):
    """C4.2: a zero timeout is an expired command context (no start sent, unknown
    unreachable); 1 ms is a start like any other."""
    run = begin(execute({"command": "make", "timeout": timeout}), make_identity())
    assert len(run.sent) == sent
    assert (run.result is None) == (sent == 1)


def test_an_old_agents_id_is_any_id_but_the_uuid():
    """C4.6: a process ID other than the tool call UUID, even one sorting before it, is an
    old agent: the legacy wait."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    run.answer(start_answer(run.last, "0", 0))
    assert len(run.marks("chattool_legacy_wait")) == 1 and not run.marks("chattool_attach")


def test_read_failure_at_or_past_the_deadline_then_a_running_snapshot_is_the_timeout():
    """C4.3 / Rule 5: a blocking read that fails at or past the deadline is a timed-out
    wait, so a snapshot still running is the timeout result; before it, a failure."""
    identity = make_identity()
    for at_ms, kind in ((600_010, "timed_out"), (600_020, "timed_out"), (300_000, "failed")):
        run = begin(execute(MAKE_10M), identity)
        run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
        run.answer(TransportError(run.last.req_id, "connection reset"), at_ms=at_ms)
        assert run.last.query == "" and not has_tool_call_headers(run.last)
        run.answer(output_answer(run.last, True), at_ms=at_ms + 1)
        assert run.result.kind == kind, at_ms


def test_before_the_stack_a_failed_snapshot_before_the_deadline_is_a_failure():
    """C5.2 (before CODAGT-757): only a wait that hit its deadline claims a timeout when the
    snapshot fails too; one cut earlier says to retry with process_output."""
    identity = make_identity()
    run = Clock(ct.begin_call(execute(MAKE_10M), identity, SRC, "replica-1/g1/c1", CHAT, 0, layer=ct.BEFORE_STACK), 0)
    run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    run.answer(TransportError(run.last.req_id, "connection reset"), at_ms=1_000)
    run.answer(TransportError(run.last.req_id, "connection reset"), at_ms=1_001)
    assert run.result.kind == "failed"
    assert content(run.result)["error"].endswith(f"; use process_output with ID {identity.uuid} to retry")


def test_undecodable_output_answers_are_read_failures():
    """C5.1 "anything else": an output read answered without ``running`` is unreadable, so
    a snapshot follows; an unreadable snapshot before the deadline is a failure."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    run.answer(Response(run.last.req_id, 200, "application/json", b"{}"), at_ms=1_000)
    assert run.result is None and run.last.query == ""
    run.answer(Response(run.last.req_id, 200, "application/json", b"{}"), at_ms=1_001)
    assert run.result.kind == "failed"



@pytest.mark.parametrize("body", [
    b'{"running": false, "exit_code": "0", "output": "ok"}',
    b'{"running": false, "exit_code": true, "output": "ok"}',
    b'{"running": false, "exit_code": 0.5, "output": "ok"}',
    b'{"running": false, "exit_code": 0, "output": 7}',
])
def test_output_answer_with_a_field_of_the_wrong_type_is_a_read_failure(body):
    """C5.1: Go decodes the output answer into a struct, so an ``exit_code`` that is no
    integer (or an ``output`` that is no string) fails the read, and a snapshot follows,
    as for the cancel answer's fields; the model never reads it as exit code 0."""
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    run.answer(Response(run.last.req_id, 200, "application/json", body), at_ms=1_000)
    assert run.result is None and run.last.query == ""  # the snapshot, not a result
    run.answer(output_answer(run.last, False, 3, "FAIL"), at_ms=1_001)
    assert run.result.kind == "completed" and content(run.result)["exit_code"] == 3

def test_invalid_execute_arguments_fail_without_a_request():
    run = begin(execute("not json"), make_identity())
    assert run.sent == [] and (run.result.kind, run.result.is_error) == ("failed", True)


# A tool name as a provider's JSON gives it: equal to the model's constant, never the same
# object (the model must compare tool names by value).
def _decoded(name: str) -> str:
    return json.loads(json.dumps(name))


@pytest.mark.parametrize("tool", ["write_file", "edit_files"])
def test_a_file_tools_dial_failure_names_the_file_change_never_the_command(tool):
    """C5.4 "dial error" on a generation attempt: a file tool's text names the change an
    earlier attempt may have applied and the file check, for each file tool, whichever
    side of "execute" its name sorts on."""
    identity = make_identity("call_f")
    call = write("call_f") if tool == "write_file" else edit("call_f")
    r = ct.dial_failed_result(ct.ToolCall(call.provider_id, _decoded(call.tool), call.args_json), identity, "timeout")
    assert r.kind == "unknown" and "may have applied the" in r.content
    assert "may have started the command" not in r.content and r.process_id is None


def test_dial_failures_read_a_decoded_tool_name_as_the_constant():
    """The execute branches of the dial results (C5.4) hold for a tool name decoded from
    JSON, which equals "execute" without being the model's constant."""
    identity = make_identity()
    call = ct.ToolCall("call_1", _decoded("execute"), json.dumps({"command": "make test"}))
    r = ct.dial_failed_result(call, identity, "timeout")
    assert r.kind == "unknown" and "may have started the command" in r.content and r.process_id == identity.uuid
    u = ct.unreachable_result(call, ct.interrupted_call(call), identity, "refused")
    assert u.kind == "unknown" and u.process_id == identity.uuid


# Issue 35: found unpinned by the mutation run of model/chattool/calls.py and files.py:
# a call matches its answers and timers by the value of their names (a transport hands
# back an equal string, not the object the call made), and the file tools' edges.


def _copy(text: str) -> str:
    return "".join(list(text))


def test_an_answer_is_matched_to_its_request_by_the_ids_value():
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    req = run.last
    run.answer(Response(_copy(req.req_id), 200, "application/json", json_body({"id": identity.uuid, "started": True}),
                        ((RUN_AGE_MS_HEADER, "0"),)), at_ms=10)
    assert run.last is not req and run.last.path.endswith("/output")  # accepted: the wait began
    assert run.cs.pending_req_id == run.last.req_id


def test_an_answer_to_any_other_request_is_stale_whichever_way_its_id_sorts():
    identity = make_identity()
    for other in ("a-before-all", "zzz-after-all"):
        run = begin(execute(MAKE_10M), identity)
        sent = len(run.sent)
        run.answer(start_answer(ct_request_named(run.last, other), identity.uuid, 0), at_ms=10)
        assert len(run.sent) == sent and run.result is None and run.cs.pending_req_id == run.last.req_id


def ct_request_named(req, req_id: str):
    return type(req)(req_id, *[getattr(req, f) for f in req.__dataclass_fields__ if f != "req_id"])


@pytest.mark.parametrize("slot", ["answer_timer", "deadline_timer"])
def test_a_timer_is_matched_by_its_names_value(slot):
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    if slot == "deadline_timer":
        run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    name = getattr(run.cs, slot)
    assert name is not None
    before = run.cs
    run.absorb(ct.on_timer(run.cs, _copy(name), run.timers.pop(name)))
    assert run.cs is not before and getattr(run.cs, slot) is None


def test_a_snapshot_timer_is_matched_by_its_names_value():
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    run.answer(Response(run.last.req_id, 200, "application/json", b"{}"), at_ms=1_000)  # unreadable: a snapshot
    name = run.cs.snapshot_timer
    assert name is not None
    run.absorb(ct.on_timer(run.cs, _copy(name), run.timers.pop(name)))
    assert run.cs.snapshot_timer is None and run.result is not None


def test_a_call_with_an_identity_sends_the_tool_call_headers_unless_told_not_to():
    identity = make_identity()
    default = ct.begin_call(execute({"command": "true"}), identity, SRC, "replica-1/g1/c1", CHAT, 0)
    sent = [e.request for e in default[1] if isinstance(e, Send)]
    assert sent and any(name.lower() == "coder-tool-call-id" for name, _ in sent[0].headers)


@pytest.mark.parametrize("tool", ["edit_files", "write_file"])
def test_a_file_tool_named_by_a_decoded_string_sends_and_reads_as_its_tool(tool):
    identity = make_identity("call_f")
    call = edit("call_f") if tool == "edit_files" else write("call_f")
    run = begin(ct.ToolCall(call.provider_id, _copy(call.tool), call.args_json), identity)
    assert run.last.path.endswith("/edit-files" if tool == "edit_files" else "/write-file")
    run.answer(Response(run.last.req_id, 200, "application/json", json_body({"ok": True})), at_ms=10)
    assert run.result.kind == "applied"
    assert content(run.result) == ({"files": [], "ok": True} if tool == "edit_files" else {"ok": True})


def test_file_tool_arguments_that_are_no_json_fail_without_a_request():
    run = begin(ct.ToolCall("call_f", "edit_files", "not json"), make_identity("call_f"))
    assert run.sent == [] and run.result.kind == "failed" and "invalid parameters" in run.result.content


@pytest.mark.parametrize("body", [b"\xff\xfe", b"not json"])
def test_a_recorded_edit_answer_that_is_no_json_text_fails_with_the_sdks_text(body):
    """editFilesResult on a 2xx body it cannot read (a cancel's recorded edit answer takes
    this path, C5.3): the failure quotes the SDK's error text, never a crash."""
    from toolcall_sim.model.chattool.files import _edit_success

    r = _edit_success(body, 200, "application/json")
    assert (r.kind, r.is_error) == ("failed", True) and r.content == ct.sdk_error_text(200, "application/json", body)


@pytest.mark.parametrize("tool", ["edit_files", "write_file"])
def test_a_file_tool_without_identity_prefixes_only_a_refusal_with_its_action(tool):
    """fileRequestErrorResult without tool call headers (C5.4's fallback): a refusal (a
    coded 409) reads "<action>: <error>"; an error answer and no answer read as the
    error alone."""
    from toolcall_sim.model.chattool.classifier import _FILE_TEXTS

    action = _FILE_TEXTS[tool][0]
    call = edit() if tool == "edit_files" else write()
    refused = begin(call, None)
    refused.answer(Response(refused.last.req_id, 409, "application/json",
                            json_body({"message": "no", "code": "tool_call_canceled"})), at_ms=10)
    assert refused.result.content.startswith(f"{action}: ")
    failed = begin(call, None)
    failed.answer(Response(failed.last.req_id, 500, "application/json", json_body({"message": "boom"})), at_ms=10)
    assert not failed.result.content.startswith(f"{action}: ")
    silent = begin(call, None)
    silent.fire_next()
    assert silent.result is not None and not silent.result.content.startswith(f"{action}: ")


# Issue 35: model/chattool/args.py's edges the mutation run found unpinned.


def test_an_age_read_at_commit_grows_with_the_replicas_clock_from_zero():
    assert ct.ToolCallAge(read_at_ms=1_000).now(1_500) == 500
    assert ct.ToolCallAge().now(1_500) == 0  # no clock: Go's zero value reports 0


@pytest.mark.parametrize("command, want", [
    ("make test &", ("make test", True)), ("make test&", ("make test", True)), ("  sleep 5 &  ", ("sleep 5", True)),
    ("a && b", ("a && b", False)), ("a |&", ("a |&", False)), ("make test", ("make test", False)),
])
def test_only_a_lone_trailing_ampersand_means_background(command, want):
    assert ct.strip_trailing_ampersand(command) == want


def test_a_calls_target_is_its_command_or_its_first_files_path():
    from toolcall_sim.model.chattool.args import call_target

    assert call_target(ct.ToolCall("c", "execute", json.dumps({"command": "make test &"}))) == "make test"
    two = {"files": [{"path": "/a", "edits": []}, {"path": "/b", "edits": []}]}
    assert call_target(ct.ToolCall("c", "edit_files", json.dumps(two))) == "/a"
    for files in ([], ["x"], None):
        assert call_target(ct.ToolCall("c", "edit_files", json.dumps({"files": files}))) == ""
    assert call_target(ct.ToolCall("c", "write_file", json.dumps({"path": "/w", "content": ""}))) == "/w"
    mixed = {"files": [{"path": "/a", "edits": []}, "x"]}
    assert call_target(ct.ToolCall("c", "edit_files", json.dumps(mixed))) == "/a"
    assert call_target(ct.ToolCall("c", _copy("execute"), json.dumps({"command": "ls"}))) == "ls"
    assert call_target(ct.ToolCall("c", "execute", "not json")) == ""
    assert call_target(ct.ToolCall("c", "execute", "[1]")) == ""


def test_parsed_execute_arguments_are_immutable_since_the_parse_is_shared():
    """parse_execute_args remembers its answers (the same arguments are parsed on every
    retry), so every caller holds the same object: it must not change."""
    import dataclasses

    args = ct.parse_execute_args(json.dumps({"command": "make"}))
    assert args is ct.parse_execute_args(json.dumps({"command": "make"}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        args.command = "rm -rf /"


# Issue 35: model/chattool/state.py's edges the mutation run found unpinned: one sequence
# names a call's requests and timers, re-arming ends the old timer, the result's note.


def test_a_calls_requests_and_timers_all_have_names_it_never_used_before():
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    names = [run.last.req_id, *run.timers]
    run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    names += [run.last.req_id, *run.timers]
    run.answer(Response(run.last.req_id, 200, "application/json", b"{}"), at_ms=1_000)  # a snapshot follows
    names += [run.last.req_id, *run.timers]
    distinct = set(names)
    numbers = {int(n.rsplit(":", 1)[1].lstrip("abcdefghijklmnopqrstuvwxyz_")) for n in distinct}
    assert len(distinct) >= 5 and len(numbers) == len(distinct)  # one sequence, never a number twice


def test_rearming_a_timer_ends_the_one_it_replaces():
    identity = make_identity()
    run = begin(execute(MAKE_10M), identity)
    first_answer_timer = run.cs.answer_timer
    run.answer(start_answer(run.last, identity.uuid, 0), at_ms=10)
    assert CancelTimer(first_answer_timer) in run.effects or first_answer_timer not in run.timers
    assert run.cs.answer_timer != first_answer_timer and set(run.timers) == set(run.cs.armed_timers())


def test_disarming_an_unarmed_timer_changes_nothing():
    from toolcall_sim.model.chattool.state import _disarm

    cs = begin(execute(MAKE_10M), make_identity()).cs
    assert cs.snapshot_timer is None
    assert _disarm(cs, "snapshot_timer") == (cs, [])


def test_a_results_note_carries_its_reason():
    run = begin(edit(), make_identity("call_e"))
    run.fire_next()  # no answer within the bound: unknown, no_answer
    assert [(dict(n.fields)["kind"], dict(n.fields)["reason"]) for n in run.marks("chattool_result")] == \
        [("unknown", "no_answer")]


def test_an_identity_with_an_incarnation_sends_it_and_one_without_does_not():
    from dataclasses import replace as dc_replace

    from toolcall_sim.model.identity import AGENT_INCARNATION_HEADER

    for incarnation, want in ((3, "3"), (None, None)):
        identity = dc_replace(make_identity(), incarnation=incarnation)
        run = begin(execute(MAKE_10M), identity)
        sent = dict((k.lower(), v) for k, v in run.last.headers).get(AGENT_INCARNATION_HEADER.lower())
        assert sent == want


# Timers (docs/contract.md rule 3, no timer outlives what it waits for): a step cancels
# only timers the call armed and has not cancelled yet, never a slot that holds none, and
# a finished call has none left; also when the finishing step disarmed some of them first.


class ArmedClock(Clock):
    """A ``Clock`` that checks each step's cancels against the timers armed before it."""

    def absorb(self, step):
        armed = set(self.timers)
        for eff in step[1]:
            if isinstance(eff, CancelTimer):
                assert eff.name in armed, (eff, armed)  # never None, never one already ended
                armed.discard(eff.name)
            elif isinstance(eff, SetTimer):
                armed.add(eff.name)
        super().absorb(step)
        if self.cs.result is not None:
            assert self.timers == {} and self.cs.armed_timers() == ()
        return self


def test_a_calls_steps_cancel_only_the_timers_it_armed():
    identity = make_identity()
    # foreground on a new agent: the start arms the answer timer and the deadline, the
    # start answer ends the one and re-arms the other, the output answer finishes
    fg = ArmedClock(ct.begin_call(execute(FOREGROUND_2H), identity, SRC, "replica-1/g1/c1", CHAT, 0))
    assert not any(isinstance(e, CancelTimer) for e in fg.effects)
    assert {n.split(":")[1].rstrip("0123456789") for n in fg.timers} == {"answer", "deadline"}
    fg.answer(start_answer(fg.last, identity.uuid, 0), at_ms=10)
    assert [n.split(":")[1].rstrip("0123456789") for n in fg.timers] == ["deadline"]
    fg.answer(output_answer(fg.last, False, 0, "ok"), at_ms=20)
    assert fg.result.kind == "completed"
    # background: the start answer disarms the answer timer and finishes in one step
    bg = ArmedClock(ct.begin_call(execute(BACKGROUND), identity, SRC, "replica-1/g1/c2", CHAT, 0))
    answer_timer = bg.cs.answer_timer
    bg.answer(start_answer(bg.last, identity.uuid, 0), at_ms=10)
    assert bg.result.kind == "background_started"
    assert [e for e in bg.effects if isinstance(e, CancelTimer)] == [CancelTimer(answer_timer)]
    # an interrupt's cancel: its answer disarms the answer timer and finishes
    plan = ct.interrupted_call(execute(FOREGROUND_2H))
    cx = ArmedClock(ct.begin_cancel(execute(FOREGROUND_2H), plan, identity, SRC, "replica-1/i1/c1", CHAT, 0))
    assert not any(isinstance(e, CancelTimer) for e in cx.effects)
    answer_timer = cx.cs.answer_timer
    cx.answer(cancel_answer(cx.last, False), at_ms=10)
    assert cx.result is not None
    assert [e for e in cx.effects if isinstance(e, CancelTimer)] == [CancelTimer(answer_timer)]
    # a file tool: its first step arms only the answer timer
    ed = ArmedClock(ct.begin_call(edit(), make_identity("call_e"), SRC, "replica-1/g1/c3", CHAT, 0))
    assert not any(isinstance(e, CancelTimer) for e in ed.effects)


def test_a_finish_through_a_steps_edits_cancels_exactly_the_timers_still_armed():
    from toolcall_sim.model.chattool.state import _finish

    cs = begin(execute(FOREGROUND_2H), make_identity()).cs
    answer_timer, deadline_timer = cs.answer_timer, cs.deadline_timer
    assert answer_timer is not None and deadline_timer is not None and cs.snapshot_timer is None
    # the step disarmed the answer timer already (its CancelTimer is among its effects)
    done, effects = _finish(cs, ct.Result("completed", False, "{}"), (CancelTimer(answer_timer),),
                            {"answer_timer": None})
    cancels = [e for e in effects if isinstance(e, CancelTimer)]
    assert cancels == [CancelTimer(answer_timer), CancelTimer(deadline_timer)]
    assert done.armed_timers() == () and done.result is not None


def test_arming_an_armed_slot_ends_the_timer_it_replaces():
    """No step re-arms a slot that still holds a timer today (each disarms first); the
    helper still ends the old one, so a step that did would leave no timer behind."""
    from toolcall_sim.model.chattool.state import _arm

    cs = begin(execute(FOREGROUND_2H), make_identity()).cs
    old = cs.deadline_timer
    again, effects = _arm(cs, "deadline_timer", 5_000)
    assert effects == [CancelTimer(old), SetTimer(again.deadline_timer, 5_000)] and again.deadline_timer != old
