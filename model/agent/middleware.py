"""The tool call middleware and handler runs: what wraps start, edit and write
(docs/contract.md A2.2 to A2.5, middleware.go; rules 1 to 4 of the package docstring).

Theory of operation
-------------------
A request with tool call headers is decided against the store (store.py ``lookup``):
refused (stale, not provable, canceled marker, input mismatch: a refusal changes
nothing), replayed (a recorded answer), waiting (a pending run), or proven new. A call
proven new gets its record first (``AgentRules.record_when_proven_new``, A1) and then a
handler run as its own step: timer ``handler:<run>`` after ``handler_ms``, so requests,
cancels and faults can land while it is pending and wait on it. Requests without tool
call headers (and every request to an old agent) run the same way with no record. When
the run publishes (``on_handler_done``) the record is filled in
(``AgentRules.record_when_published``) and every waiter is answered: replays with the
recorded answer and the run-age header, cancels by the cancel handler. A panic records
the handler-failed 500 and the creating request gets httpmw.Recover's 500 (section 2.5).
The handler itself is looked up in this module when called (``middleware._run_handler``),
where the Go-shaped tests install their counting handler.
"""

from __future__ import annotations

from ..core import REMOVED, Reply, Request, Response, SetTimer, note, probe, replace, truth
from ..identity import INPUT_MISMATCH, TOOL_CALL_CANCELED, HeaderError, Key, parse_tool_call_headers
from .cancel import _answer_cancel
from .files import _edit_files, _write_file
from .processes import _start_process
from .state import AgentState, Effects, Record, Recorded, Run, Waiter
from .store import REFUSAL_FOR_VERDICT, dropped_by_newer, dropped_pending, input_hash, lookup
from .wire import (
    MSG_INTERNAL,
    MSG_INVALID_HEADERS,
    MSG_NO_CHAT,
    PANIC_RECORDED,
    _json_response,
    _message,
    _recorded_reply,
    _refused,
    chat_of,
)


def _middleware(state: AgentState, req: Request, kind: str, now_ms: int) -> tuple[AgentState, Effects]:
    try:
        headers = parse_tool_call_headers(req.headers)
    except HeaderError as err:
        return state, [probe("A2.4.bad-headers"), _message(req, 400, MSG_INVALID_HEADERS, str(err))]
    if headers is None:
        # Not a tool call request: the handler runs as today, every time, no record.
        state, effects = _begin_run(state, req, kind, None, now_ms)
        return state, [probe("A2.4.no-headers"), *effects]
    chat_id = chat_of(req)
    if chat_id is None:
        return state, [probe("A2.4.no-chat"), _message(req, 400, MSG_NO_CHAT)]
    key = Key(chat_id, headers.message_id, headers.tool_call_id)
    digest = input_hash(req)
    verdict, record = lookup(state, key, headers.age_ms, now_ms, req)
    if verdict in REFUSAL_FOR_VERDICT:
        seen = probe("A2.2.stale") if verdict == "stale" else probe("A2.3.not-provable")
        return state, [seen, *_refused(req, REFUSAL_FOR_VERDICT[verdict], key)]
    if verdict == "found":
        assert record is not None
        if record.canceled:
            return state, [probe("A2.4.found-canceled"), *_refused(req, TOOL_CALL_CANCELED, key)]
        if record.input_hash != digest:
            return state, [probe("A2.4.input-mismatch"), *_refused(req, INPUT_MISMATCH, key)]
        if record.recorded is not None:
            # A2.5: a later request of a run that panicked replays its recorded 500.
            panicked = [probe("A2.5.later-recorded-500")] if record.recorded == PANIC_RECORDED else []
            return state, [
                *panicked,
                probe("A2.4.replay-recorded"),
                _recorded_reply(req, record.recorded, now_ms, record.created_at_ms),
                note("replayed", uuid=key.uuid),
            ]
        waiter = Waiter(req, "replay", record.run_id, key)
        return replace(state, waiters=state.waiters.set(req.req_id, waiter)), [probe("A2.4.wait-pending"), note("waiting", uuid=key.uuid)]
    # Proven new: record first (A1), then run the handler as its own step.
    record = Record(digest, False, now_ms, req.req_id, None)
    before = state
    state = state.config.rules.record_when_proven_new(state, key, record)
    state, effects = _begin_run(state, req, kind, key, now_ms)
    dropped = [probe("A2.7.drop-pending")] if dropped_pending(before, state, key.chat_id) else []
    return state, effects + [*dropped, probe("A2.3.proven-new"), note("run_pending", uuid=key.uuid, route=kind)]


def _begin_run(state: AgentState, req: Request, kind: str, key: Key | None, now_ms: int) -> tuple[AgentState, Effects]:
    """Rule 2: the handler runs as its own step, ``handler_ms`` after the request arrived.
    Every handler run takes this path, with a tool call (``key``) or without one (no
    headers, or an old agent), because a slow spawn is slow for every start."""
    run_id = req.req_id
    state = replace(
        state,
        runs=state.runs.set(run_id, Run(key, kind, req, now_ms)),
        waiters=state.waiters.set(req.req_id, Waiter(req, "replay", run_id, key)),
    )
    # Ground truth: the request reached the agent and its handler will run. The design
    # judges a cancel against this instant, not the handler's effect (US10's proof: "a
    # request that arrives after the interrupt gets tool_call_canceled"), so the checkers
    # read it (canceled_before_received_never_runs), and ``agent_step`` adds its cause.
    return state, [SetTimer(f"handler:{run_id}", state.config.rules.handler_ms), truth("request_received", route=kind)]


def _recovered_reply(req: Request) -> Reply:
    """httpmw.Recover, outermost in the agent: the panic left the creating request's stack,
    so that request gets ``httpapi.InternalServerError`` and no run-age header."""
    return _json_response(req, 500, {"message": MSG_INTERNAL})


def on_handler_done(
    state: AgentState, run_id: str, now_ms: int, panic: bool = False, after_effects: bool = False
) -> tuple[AgentState, Effects]:
    """The pending run executes its handler and publishes its recorded response; every
    request waiting on the run is answered (a dropped record still wakes its waiters).

    ``panic`` (section 2.5, middleware.go ``record.run``): the record gets
    ``PANIC_RECORDED`` and the panic goes on up the creating request's stack to
    httpmw.Recover, so the creating request gets the recovery 500 (no run-age header) while
    waiters and later requests get the recorded 500 with the run-age header.
    ``after_effects``: the handler panicked after its side effects, e.g. after
    ``manager.start`` spawned the process (while writing the answer). The process exists,
    keeps running under its background context and is addressable by the tool call UUID;
    only the answer is lost, so the record holds the 500 and a cancel reports
    ``status_code`` 500 together with the process, which the stop rule may kill."""
    run = state.runs.get(run_id)
    if run is None:
        return state, []
    # The run leaves the table in the state's last copy below, with the waiters it answers
    # (no handler, record or cancel answer reads the runs): one copy instead of two.
    effects: Effects = []
    uuid_ = run.key.uuid if run.key is not None else None
    if panic and not after_effects:
        recorded = PANIC_RECORDED
    else:
        # The handler's clock reading is the run's start (the request's arrival): a process
        # it spawns takes that instant as its start time (rule 6).
        state, recorded, effects = _run_handler(state, run.kind, run.request, run.key, run.created_at_ms)
    if panic:
        recorded = PANIC_RECORDED
        effects.append(probe("A2.5.after-spawn") if after_effects else probe("A2.5.before-effects"))
        effects.append(note("handler_panicked", uuid=uuid_, after_effects=after_effects))
    if run.key is None:
        # No record: only the creating request hears of this run.
        waiter = state.waiters.get(run_id)
        if waiter is None:
            return replace(state, runs=state.runs.remove(run_id)), effects
        state = replace(state, runs=state.runs.remove(run_id), waiters=state.waiters.remove(run_id))
        answer = Response(run_id, recorded.status, recorded.content_type, recorded.body)
        if panic:
            effects += [probe("A2.5.recovery-no-record"), _recovered_reply(waiter.request)]
        else:
            effects.append(Reply(waiter.request.src, answer))
        return state, effects
    if dropped_by_newer(state, run.key):
        # A2.7: a newer message dropped this run's record while it was pending; it still
        # publishes (into nothing) and wakes its waiters below.
        effects.append(probe("A2.7.publish-dropped"))
    record = Record(input_hash(run.request), False, run.created_at_ms, run_id, recorded)
    state = state.config.rules.record_when_published(state, run.key, record)
    effects.append(note("published", uuid=run.key.uuid, status=recorded.status))
    answered = [(req_id, waiter) for req_id, waiter in state.waiters.items()
                if waiter.kind in ("replay", "cancel") and waiter.target == run_id]
    # Every waiter answered here leaves at once, with the run: a cancel answer's stopper
    # reads only output waiters (processes.py), never these.
    waiters = state.waiters
    if answered:
        waiters = waiters.edited(dict.fromkeys([req_id for req_id, _ in answered], REMOVED))
    state = replace(state, runs=state.runs.remove(run_id), waiters=waiters)
    for req_id, waiter in answered:
        if waiter.kind == "replay" and panic and req_id == run_id:
            effects += [probe("A2.5.recovery-500"), _recovered_reply(waiter.request)]
        elif waiter.kind == "replay":
            if panic:
                effects.append(probe("A2.5.waiter-recorded-500"))
            effects.append(_recorded_reply(waiter.request, recorded, now_ms, run.created_at_ms))
        else:
            state, more = _answer_cancel(state, waiter.request, run.key, record, waiter.threshold_ms, now_ms)
            effects.extend(more)
    return state, effects


def _run_handler(
    state: AgentState, kind: str, req: Request, key: Key | None, started_at_ms: int
) -> tuple[AgentState, Recorded, Effects]:
    if kind == "start":
        return _start_process(state, req, key, started_at_ms)
    if kind == "edit":
        return _edit_files(state, req, key)
    return _write_file(state, req, key)
