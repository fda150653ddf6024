"""The rejected designs' later attempts of an execute call (model/chattool/lookup.py):
the ledger's attach to a recorded process ID and first-attempt-only's lookup of the tool
call's process (docs/contract.md D3). tests/test_designs.py shows each design's flaw
through whole runs; these pin each step's answer, which those runs cross only in part."""

from __future__ import annotations

import pytest

from toolcall_sim.model import chattool as ct
from toolcall_sim.model.core import Response, Send, TransportError, json_body

from test_chattool import CHAT, Clock, content, execute, make_identity, output_answer

PID = "11111111-2222-4333-8444-555555555555"
FOREGROUND = {"command": "make test", "timeout": "10m"}
BACKGROUND = {"command": "make serve", "run_in_background": True}


def _state(args, now_ms: int = 0):
    identity = make_identity()
    return ct.new_call_state(execute(args), identity, "replica-1", "p", CHAT, now_ms), identity


def test_attach_reports_a_background_start_with_the_recorded_id_at_once():
    cs, _ = _state(BACKGROUND)
    cs, effects = ct.begin_attach(cs, PID, 0)
    assert cs.result is not None and content(cs.result)["background_process_id"] == PID
    assert not any(isinstance(e, Send) for e in effects)  # no start, no read


@pytest.mark.parametrize("begin", ["attach", "lookup"])
def test_a_foreground_later_attempt_waits_with_blocking_reads_from_this_attempts_start(begin):
    """The legacy wait (execute.py Rule 5): blocking reads of the process, until the
    execute timeout counted from this attempt's start; the deadline gives timed_out."""
    cs, identity = _state(FOREGROUND, now_ms=1_000)
    step = ct.begin_attach(cs, PID, 1_000) if begin == "attach" else ct.begin_lookup(cs, 1_000)
    run = Clock(step, now_ms=1_000)
    pid = PID if begin == "attach" else identity.uuid
    assert run.last.path == f"/api/v0/processes/{pid}/output" and run.last.query == "wait=true"
    assert run.cs.legacy and run.timer("deadline")[1] == 1_000 + 10 * 60_000
    run.answer(output_answer(run.last, True, None, "so far"))
    run.fire_next()  # the deadline
    run.answer(output_answer(run.last, True, None, "still"))
    assert run.result.kind == "timed_out" and run.result.process_id == pid


def test_lookup_of_a_background_call_reads_once_without_waiting_and_reports_its_start():
    cs, identity = _state(BACKGROUND)
    run = Clock(ct.begin_lookup(cs, 0))
    assert run.last.path == f"/api/v0/processes/{identity.uuid}/output" and run.last.query == ""
    run.answer(output_answer(run.last, True, None, ""))
    assert content(run.result)["background_process_id"] == identity.uuid


@pytest.mark.parametrize("answer, reason, words", [
    (lambda r: Response(r.req_id, 404, "application/json", json_body({"message": "not found"})), "not_found",
     "the workspace agent has no process for this tool call"),
    (lambda r: TransportError(r.req_id, "connection refused"), "unreachable",
     "the workspace agent could not be asked (")])
def test_a_lookup_that_finds_no_process_is_unknown_and_says_why(answer, reason, words):
    """D3's flaw: chatd cannot tell "never started" from "started and gone"; the agent
    could not be asked at all is unreachable. Unknown is not an error result."""
    cs, identity = _state(BACKGROUND)
    run = Clock(ct.begin_lookup(cs, 0))
    run.answer(answer(run.last))
    r = run.result
    assert (r.kind, r.reason, r.is_error, r.process_id) == ("unknown", reason, False, identity.uuid)
    assert words in content(r)["error"]


@pytest.mark.parametrize("args, error", [
    ("{", None), ({"command": ""}, "command is required"), ({"command": "x", "timeout": "soon"}, None)])
@pytest.mark.parametrize("begin", ["attach", "lookup"])
def test_bad_arguments_fail_a_later_attempt_as_they_fail_a_start(args, error, begin):
    cs, _ = _state(args)
    cs, _ = ct.begin_attach(cs, PID, 0) if begin == "attach" else ct.begin_lookup(cs, 0)
    first, _ = ct.begin_call(execute(args), make_identity(), "replica-1", "p", CHAT, 0)
    assert cs.result is not None and cs.result.kind == "failed" == first.result.kind
    assert cs.result.content == first.result.content
    if error is not None:
        assert error in cs.result.content
