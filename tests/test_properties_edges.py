"""Each property's branches and bounds, on tiny hand-written traces (issue 35: the
mutation run's survivors of model/properties/checks.py and evidence.py).

tests/test_properties.py shows each property can hold and fail; this file pins where it
changes its mind: the comparison at a deadline (a process that reached its timeout has
timed out), which records count (a kill by a cancel, not by a signal; an effect before
the commit, not after), and what a violation says. Every expectation is the property's
definition (its docstring, docs/contract.md), never the code's text.

Every check is run twice, on the trace as the world wrote it and as read back from JSON
(``judge``): a trace saved to a file and checked again must be judged alike, so no check
may compare the strings it reads (a result kind, a tool name from a scenario's TOML) by
identity.
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

import test_properties as tp
from test_properties import CHAT, MSG, OTHER, U, UB, down, edited, exited, killed, note, r, result, sent, start, unknown
from toolcall_sim.model import chatd, chattool, system
from toolcall_sim.model import properties as props
from toolcall_sim.model.core import FMap
from toolcall_sim.model.identity import tool_call_uuid
from toolcall_sim.model.world_config import ClockSpec

FG, BG = tp.FG, tp.BG  # execute "make" (10 s timeout, U) and background "serve" (UB)
WR = chattool.ToolCall("toolu_03", "write_file", '{"path":"/notes.txt","content":"hi"}')
UW = tool_call_uuid(CHAT, MSG, "toolu_03")
TIMEOUT_MS = 10_000  # FG's timeout argument
# chatd's reference timing (model/timing.py): the interrupt's bounds
TASK_MS = 30_000 + 60_000  # dial timeout + agent answer timeout
SYNC_MS, ACQUIRE_MS = 15_000, 30_000  # the runner's sync interval, the worker's acquisition poll
WHOLE_MS = TASK_MS + ACQUIRE_MS


def _decoded(value):
    """``value`` as read back from its JSON file: every string a new object."""
    return json.loads(json.dumps(value))


def world(*tool_calls, clocks=None, chats=None):
    """A final state whose chat (``CHAT``) committed one assistant message with these
    calls (FG and BG by default), their fields decoded from JSON as a scenario's TOML
    gives them: a tool name is not the model's own literal. Its ``twin`` has the same
    calls with the model's own (interned) strings."""
    config = system.WorldConfig(chatd_rules=chatd.CONTRACT, clocks=FMap(clocks or {}))

    def final(strings):
        calls = tuple(chattool.ToolCall(*strings([c.provider_id, c.tool, c.args_json])) for c in tool_calls or (FG, BG))
        msg = SimpleNamespace(role="assistant", id=MSG, tool_calls=calls)
        chats_ = {chat_id: SimpleNamespace(status="waiting", messages=(msg,)) for chat_id in (chats or (CHAT,))}
        return SimpleNamespace(config=config, db=SimpleNamespace(chats=chats_))
    decoded = final(_decoded)
    decoded.twin = final(lambda values: [sys.intern(v) for v in values])  # the model's own literals
    return decoded


def judge(name: str, trace: list[dict], final=None) -> list:
    """Property ``name``'s violations of ``trace`` with the model's own strings, the same
    as of the trace and the calls read back from JSON."""
    final = world() if final is None else final
    check = next(p for p in props.PROPERTIES if p.name == name).check
    found = check(props.Evidence(trace, getattr(final, "twin", final)))
    again = check(props.Evidence(_decoded(trace), final))
    assert again == found, (found, again)
    return found


def write(t_ms, uuid=UW, inc=1):
    return r(t_ms, "agent", "truth", truth="edit_applied", uuid=uuid, path="/notes.txt", tool="write_file",
             cause_chat=CHAT, incarnation=inc, cause=f"replica-1-w1/t3/a1/c0:r{t_ms}")


def wresult(t_ms, kind):
    return result(t_ms, kind, uuid=UW, provider="toolu_03")


# ---------------------------------------------------------------------------
# at_most_once, one_result
# ---------------------------------------------------------------------------


def test_at_most_once_counts_edits_and_starts_across_incarnations():
    """US1: a second applied edit of one call is a violation at the second edit, as is a
    second process started by a new agent incarnation; one of each is not."""
    (v,) = judge("at_most_once", [write(100), write(700)], world(WR))
    assert (v.at_ms, v.evidence, v.detail) == (700, (0, 1), "2 edits applied for toolu_03")
    assert judge("at_most_once", [write(100), start(200)], world(FG, WR)) == []
    (v,) = judge("at_most_once", [start(100), down(200), start(300, inc=2)])
    assert (v.at_ms, v.evidence, v.detail) == (300, (0, 2), "2 process starts for toolu_01")


def test_one_result_is_reported_at_the_second_commit():
    """The second committed result is the moment the property broke."""
    (v,) = judge("one_result", [result(1_000, "completed"), result(2_000, "unknown"), result(3_000, "failed")])
    assert (v.at_ms, v.evidence) == (2_000, (0, 1, 2))
    assert v.detail == "3 committed results for toolu_01 (completed, unknown, failed)"


def test_copies_sharing_a_provider_id_have_one_result_each():
    """Calls of one message sharing a provider ID share the UUID, and each copy gets its
    own result (docs/contract.md C3.7): one per copy holds, two for one copy fails."""
    twin = chattool.ToolCall("toolu_01", "execute", '{"command":"make","timeout":"10s"}')
    final = world(FG, twin)
    first, second = (dict(result(1_000, "completed"), copy=0), dict(result(1_000, "completed"), copy=1))
    assert judge("one_result", [first, second], final) == []
    (v,) = judge("one_result", [first, second, dict(result(2_000, "unknown"), copy=1)], final)
    assert v.evidence == (1, 2)


# ---------------------------------------------------------------------------
# truthful_result (US5): one test per result kind
# ---------------------------------------------------------------------------


def test_not_run_and_not_applied_are_lies_once_any_effect_happened():
    assert judge("truthful_result", [result(1_000, "not_run")]) == []
    (v,) = judge("truthful_result", [result(1_000, "not_run"), start(2_000)])  # ran afterwards
    assert v.evidence == (1, 0)
    assert judge("truthful_result", [wresult(1_000, "not_applied")], world(WR)) == []
    assert judge("truthful_result", [write(500), wresult(1_000, "not_applied")], world(WR)) != []


@pytest.mark.parametrize("by,after,truthful", [
    ("cancel", False, True),  # the cancel killed it: canceled is the truth
    ("cancel", True, False),  # the kill came after the commit
    ("signal", False, False),  # a signal killed it, not a cancel
    ("shutdown", False, False),  # an agent restart killed it
])
def test_canceled_needs_a_kill_by_a_cancel_before_the_commit(by, after, truthful):
    kill = killed(3_000 if after else 1_000, by=by)
    trace = [start(0), kill, result(2_000, "canceled")] if not after else [start(0), result(2_000, "canceled"), kill]
    found = judge("truthful_result", trace)
    assert (found == []) == truthful, found
    if not truthful:
        assert found[0].detail == "toolu_01: canceled but no cancel killed its process"


@pytest.mark.parametrize("ending,code,truthful", [
    (exited(1_000, code=3), 3, True),
    (exited(1_000, code=3), 0, False),  # the process exited with 3
    (exited(1_000, code=3), None, True),  # no code to compare: an exit is enough
    (killed(1_000, by="signal"), -1, True),  # a killed process's exit code is -1 (Go's signal death)
    (killed(1_000, by="signal"), 0, False),
    (exited(3_000, code=0), 0, False),  # it exited only after the commit
])
def test_completed_needs_an_exit_before_the_commit_with_its_code(ending, code, truthful):
    trace = sorted([start(0), ending, result(2_000, "completed", code=code)], key=lambda x: x["t_ms"])
    found = judge("truthful_result", trace)
    assert (found == []) == truthful, found


def test_completed_detail_names_the_exit_codes():
    (v,) = judge("truthful_result", [start(0), killed(500, by="signal"), result(2_000, "completed", code=0)])
    assert v.detail == "toolu_01: completed with exit code 0 but the process exited with [-1]"
    assert v.evidence == (1, 2)
    (v,) = judge("truthful_result", [start(0), result(2_000, "completed", code=0)])
    assert v.detail == "toolu_01: completed but no process of it had exited"


@pytest.mark.parametrize("ends_at,commit_at,truthful", [
    (None, TIMEOUT_MS, True),  # still running when its 10 s deadline came: timed out
    (None, TIMEOUT_MS - 1, False),  # committed a millisecond before the deadline
    (TIMEOUT_MS, TIMEOUT_MS + 500, True),  # killed at its deadline
    (TIMEOUT_MS - 1, TIMEOUT_MS + 500, False),  # ended a millisecond short of it
    (TIMEOUT_MS + 900, TIMEOUT_MS + 500, True),  # killed after the commit: running at it, past the deadline
    (TIMEOUT_MS - 400, TIMEOUT_MS - 500, False),  # killed after a commit made before the deadline
    (TIMEOUT_MS + 2_000, TIMEOUT_MS + 2_500, True),  # killed past its deadline, then the commit
    (TIMEOUT_MS + 2_000, 5_000, False),  # at the commit it had run 5 s: its later life does not count
])
@pytest.mark.parametrize("started_at", [0, 5_000])
def test_timed_out_needs_a_process_alive_at_its_deadline(ends_at, commit_at, truthful, started_at):
    """(Every time shifted when the process started at 5 s.)"""
    if started_at:
        ends_at = None if ends_at is None else ends_at + started_at
        commit_at += started_at
    trace = [start(started_at), result(commit_at, "timed_out")]
    if ends_at is not None:
        trace.append(killed(ends_at, by="timeout"))
    found = judge("truthful_result", sorted(trace, key=lambda x: x["t_ms"]))
    assert (found == []) == truthful, found


def test_timed_out_reads_the_agents_clock():
    """The run age is the agent's: a process whose agent clock says it ran 10 s timed out,
    whatever the true times (A6: only durations cross nodes)."""
    begun = dict(start(0), clock_ms=50_000)
    assert judge("truthful_result", [begun, dict(killed(9_000), clock_ms=60_000), result(9_500, "timed_out")]) == []
    assert judge("truthful_result", [begun, dict(killed(11_000), clock_ms=59_000), result(12_000, "timed_out")])
    assert judge("truthful_result", [result(12_000, "timed_out")])  # no process at all


@pytest.mark.parametrize("records,truthful", [
    ([killed(1_000, by="shutdown")], False),  # killed by the restart, never exited: unknown, not failed
    ([killed(1_000, by="shutdown"), start(1_200, pid="p2", inc=2), exited(1_500, pid="p2", inc=2, code=1)], True),
    ([killed(3_000, by="shutdown")], True),  # the restart came after the commit
    # the retry's process exited only after the commit
    ([killed(1_000, by="shutdown"), start(2_500, pid="p2", inc=2), exited(3_000, pid="p2", inc=2, code=1)], False),
    ([killed(1_000, by="signal")], True),  # a signal ended it: a failure to report
    ([killed(1_000, by="cancel")], True),
])
def test_failed_execute_without_exit_code_after_a_restart_is_a_lie(records, truthful):
    """Issue 34: a failed execute result with exit code -1 whose process only an agent
    shutdown killed claims a failure whose outcome is unknown."""
    trace = sorted([start(0), *records, result(2_000, "failed", code=-1)], key=lambda x: x["t_ms"])
    found = judge("truthful_result", trace, world(FG))
    assert (found == []) == truthful, found
    if not truthful:
        assert found[0].evidence == (1, 2)


@pytest.mark.parametrize("kind,code", [("failed", None), ("failed", 1), ("unknown", -1), ("interrupted_generic", -1)])
def test_only_a_failed_result_without_exit_code_is_judged_by_the_restart(kind, code):
    """A start error (no exit code) runs no process; unknown and the generic interrupted
    result claim nothing about the outcome: none is judged by the shutdown's kill."""
    trace = [start(0), killed(1_000, by="shutdown"), result(2_000, kind, code=code)]
    assert judge("truthful_result", trace, world(FG)) == []


@pytest.mark.parametrize("records,truthful", [
    ([write(100), wresult(1_000, "applied")], True),
    ([wresult(1_000, "applied")], False),
    ([wresult(1_000, "applied"), write(1_500)], False),  # applied only after the commit
    ([write(1_500), wresult(1_000, "failed")], True),  # failed, and nothing was on the disk then
])
def test_applied_needs_an_edit_before_the_commit(records, truthful):
    found = judge("truthful_result", sorted(records, key=lambda x: x["t_ms"]), world(WR))
    assert (found == []) == truthful, found


@pytest.mark.parametrize("records,truthful", [
    ([start(0, uuid=UB, command="serve"), result(500, "background_started", uuid=UB, provider="toolu_02")], True),
    ([result(500, "background_started", uuid=UB, provider="toolu_02")], False),
    ([result(500, "background_started", uuid=UB, provider="toolu_02"), start(900, uuid=UB, command="serve")], False),
])
def test_background_started_needs_a_start_before_the_commit(records, truthful):
    found = judge("truthful_result", records)
    assert (found == []) == truthful, found


# ---------------------------------------------------------------------------
# retry_changes_nothing (US4)
# ---------------------------------------------------------------------------


def _attempt(t_ms, n, pid):
    return start(t_ms, pid=pid, cause=f"replica-1-w1/t3/a{n}/c0:r{t_ms}")


def test_retry_changes_nothing_names_every_later_attempt():
    (v,) = judge("retry_changes_nothing", [_attempt(100, 1, "p1"), _attempt(200, 2, "p2")])
    assert v.detail == "toolu_01: side effect again from replica-1-w1/t3/a2 after replica-1-w1/t3/a1"
    assert (v.at_ms, v.evidence) == (200, (0, 1))
    trace = [_attempt(100, 1, "p1"), _attempt(150, 1, "p3"), _attempt(200, 2, "p2"), _attempt(300, 3, "p4")]
    (v,) = judge("retry_changes_nothing", trace)
    assert v.detail == ("toolu_01: side effect again from replica-1-w1/t3/a2 and 1 more attempt(s) "
                        "after replica-1-w1/t3/a1")
    assert v.evidence == (0, 2, 3)  # the first attempt's second start is at_most_once's business
    assert v.at_ms == 200  # when the first later attempt acted


# ---------------------------------------------------------------------------
# interrupt_stops_foreground (US2), background_survives (US6), chat_isolation (US9)
# ---------------------------------------------------------------------------


def test_interrupt_results_are_each_judged_after_an_unknown():
    """An unknown interrupt result is allowed; a later interrupt result of the call that
    leaves the process running is still judged."""
    trace = [start(0), unknown(1_000, "unreachable"), result(2_000, "interrupted_generic", task="interrupt")]
    (v,) = judge("interrupt_stops_foreground", [dict(trace[0]), dict(trace[1], task="interrupt"), trace[2]])
    assert v.evidence == (0, 2) and "run age 2000 ms (< 10000 ms)" in v.detail


@pytest.mark.parametrize("records,found", [
    ([start(0), result(TIMEOUT_MS - 1, "interrupted_generic", task="interrupt")], True),
    ([start(0), result(TIMEOUT_MS, "interrupted_generic", task="interrupt")], False),  # at its timeout: left alone
    ([start(0), killed(2_000), result(2_000, "canceled", task="interrupt")], False),  # dead at the commit
    ([start(0), result(2_000, "interrupted_generic")], False),  # a generation commit is no interrupt's
    ([result(2_000, "interrupted_generic", task="interrupt"), start(3_000)], False),  # started after
    ([start(0, uuid=UB, command="serve"),
      result(2_000, "interrupted_generic", uuid=UB, provider="toolu_02", task="interrupt")], False),  # background
])
def test_interrupt_stops_foreground_below_its_timeout_only(records, found):
    assert bool(judge("interrupt_stops_foreground", records)) == found


@pytest.mark.parametrize("records,found", [
    ([start(0), killed(TIMEOUT_MS - 1)], False),
    ([start(0), killed(TIMEOUT_MS)], True),  # its timeout reached: past it, chatd leaves it running
    ([start(0), killed(20_000, by="signal")], False),  # a signal is no cancel
    ([start(0, uuid=UB, command="serve"), killed(1_000, by="shutdown")], False),
    # a background process an agent restart killed, then its retry's process a cancel killed
    ([start(0, uuid=UB, command="serve"), killed(1_000, by="shutdown"),
      start(2_000, uuid=UB, command="serve", pid="p2", inc=2), killed(3_000, pid="p2", inc=2)], True),
])
def test_background_survives_judges_every_cancel_kill(records, found):
    assert bool(judge("background_survives", records)) == found


def test_chat_isolation_judges_every_kill_after_a_restart():
    trace = [start(0), killed(1_000, by="shutdown", chat=OTHER), start(2_000, pid="p2", inc=2),
             killed(3_000, pid="p2", inc=2, chat=OTHER)]
    (v,) = judge("chat_isolation", trace)
    assert (v.uuid, v.evidence, v.at_ms) == (U, (2, 3), 3_000)
    assert v.detail == f"chat {OTHER} killed a process of chat {CHAT}"
    no_chat = dict(killed(1_000), cause_chat=None)
    assert judge("chat_isolation", [start(0), no_chat]) == []  # a kill no request asked for


# ---------------------------------------------------------------------------
# canceled_before_received_never_runs (US10), unknown_only_when_unknowable
# ---------------------------------------------------------------------------


def _received(t_ms, cause):
    return r(t_ms, "agent", "truth", truth="request_received", cause=cause)


def test_a_request_that_arrived_before_the_cancel_is_no_violation():
    """The design's proof is about arrival: a start that reached the agent before the
    cancel recorded the call as never received, and whose process started after, is no
    violation; one that arrived after is, with its arrival as evidence."""
    cause = "replica-1-w1/t3/a1/c0:r1"
    mark = note(1_000, "agent", "cancel_never_received", uuid=U)
    assert judge("canceled_before_received_never_runs", [_received(500, cause), mark, start(2_000, cause=cause)]) == []
    (v,) = judge("canceled_before_received_never_runs", [mark, _received(1_500, cause), start(2_000, cause=cause)])
    assert (v.evidence, v.at_ms) == ((0, 1, 2), 2_000)
    assert v.detail == "toolu_01 ran after a cancel recorded it as never received"


def test_canceled_before_received_reads_the_arrivals_it_declares():
    """The monitor re-checks a property only on the records it declares (``reads``): an
    arrival decides this verdict, so it is declared."""
    cause = "replica-1-w1/t3/a1/c0:r1"
    trace = [_received(500, cause), note(1_000, "agent", "cancel_never_received", uuid=U), start(2_000, cause=cause)]
    prop = next(p for p in props.PROPERTIES if p.name == "canceled_before_received_never_runs")
    assert prop.check(props.Evidence(trace, world())) != prop.check(props.Evidence(trace[1:], world()))
    assert set(props.record_tags(trace[0])) & prop.reads


@pytest.mark.parametrize("marks,why", [
    ([note(1_000, "agent", "cancel_never_received", uuid=U), result(1_500, "not_run", task="interrupt")],
     "a cancel recorded it as never received"),
    ([result(1_000, "not_run", task="interrupt"), note(1_500, "agent", "cancel_never_received", uuid=U)],
     "the interrupt committed its result"),
    ([edited(1_000), result(1_500, "not_run", task="interrupt")], "a message edit discarded its branch"),
])
def test_canceled_before_received_names_the_first_mark(marks, why):
    (v,) = judge("canceled_before_received_never_runs", [*marks, start(2_000)])
    assert v.detail == f"toolu_01 ran after {why}" and v.evidence == (0, 2)


def test_an_agent_down_after_the_unknown_does_not_explain_it():
    """Only an agent that went down before the commit can have lost the call's request."""
    found = judge("unknown_only_when_unknowable", [sent(100), unknown(1_000, "agent_restarted"), down(2_000)])
    assert [v.evidence for v in found] == [(1,)]
    # the request sent before the last of several downs counts
    assert judge("unknown_only_when_unknowable", [sent(100), down(200), down(300), unknown(1_000, "not_found")]) == []


def test_unknown_only_when_unknowable_says_whether_the_call_ran():
    (v,) = judge("unknown_only_when_unknowable", [start(0), unknown(1_000, "not_found")])
    assert v.detail.endswith("; it ran 1 time(s)")
    (v,) = judge("unknown_only_when_unknowable", [write(0), unknown(1_000, "not_found", uuid=UW, provider="toolu_03")],
                 world(WR))
    assert v.detail.endswith("; it ran 1 time(s)")
    e1 = _uuid(CHAT, "toolu_e1")
    trace = [_change(0, "/a.go", CHAT, e1), unknown(1_000, "not_found", uuid=e1, provider="toolu_e1")]
    (v,) = judge("unknown_only_when_unknowable", trace, world(*SHARED))
    assert v.detail.endswith("; it ran 1 time(s)")


# ---------------------------------------------------------------------------
# fenced_commits (C7, chatd 2.4)
# ---------------------------------------------------------------------------


def _acquired(t_ms, replica):
    return note(t_ms, replica, "acquired", chat_id=CHAT, worker_id=f"{replica}-w1")


def _task(t_ms, replica, task="replica-1-w1/t2"):
    return note(t_ms, replica, "task_started", chat_id=CHAT, task=task)


def _batch(t_ms, replica, attempt, task="replica-1-w1/t2"):
    return note(t_ms, replica, "batch_started", task=task, generation_attempt=attempt)


def test_the_owner_is_the_one_at_the_commit():
    """A commit is judged against the chat's owner at that time: a later acquisition by
    another replica does not make an earlier commit fenced."""
    trace = [result(1_000, "completed", replica="replica-2"), _acquired(2_000, "replica-1")]
    assert judge("fenced_commits", trace) == []
    (v,) = judge("fenced_commits", [_acquired(0, "replica-1"), result(1_000, "completed", replica="replica-2")])
    assert v.detail == "replica-2 committed a result for a chat owned by replica-1-w1" and v.evidence == (1,)


def test_a_replaced_attempt_names_the_newest_attempt():
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 1), _batch(5, "replica-2", 2, task="replica-1-w1/t2"),
             _batch(9, "replica-3", 3, task="replica-1-w1/t2"), result(3_000, "completed", gen=1)]
    (v,) = judge("fenced_commits", trace)
    assert v.detail == "replica-1's generation attempt 1 committed after replica-3 began attempt 3 of the chat"
    assert v.evidence == (1, 3, 4)


def test_only_generation_commits_and_known_tasks_are_attempt_fenced():
    """An interrupt commits outside the generation attempts (generation_attempt 0); a
    batch note of a task whose start the trace does not hold is no attempt of the chat."""
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 1), _batch(9, "replica-1", 2),
             result(3_000, "canceled", gen=1, task="interrupt")]
    assert judge("fenced_commits", trace) == []
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 1), _batch(9, "replica-1", 2, task="replica-9-w1/t7"),
             result(3_000, "completed", gen=1)]
    assert judge("fenced_commits", trace) == []


# ---------------------------------------------------------------------------
# interrupt_finishes (US7): the notice bound, the task bound, the fault window
# ---------------------------------------------------------------------------


def _asked(t_ms, chat=CHAT):
    return note(t_ms, "db", "interrupt_requested", chat_id=chat)


def _itask(t_ms, node="replica-1", chat=CHAT, clock_ms=None):
    rec = note(t_ms, node, "task_started", chat_id=chat, task=f"{node}-w1/t9", result_kind="interrupt")
    return rec if clock_ms is None else dict(rec, clock_ms=clock_ms)


def _finished(t_ms, node="replica-1", chat=CHAT, clock_ms=None):
    rec = note(t_ms, node, "interruption_finished", chat_id=chat)
    return rec if clock_ms is None else dict(rec, clock_ms=clock_ms)


def _tick(t_ms):
    return r(t_ms, "world", "tick")


def _fault(t_ms, fault):
    return r(t_ms, "world", "fault", fault=fault)


def test_the_interrupt_bounds_are_the_reference_timing():
    assert props.interrupt_bound_ms(system.WorldConfig().chatd_rules.timing) == TASK_MS


@pytest.mark.parametrize("end_ms,found", [(WHOLE_MS, False), (WHOLE_MS + 1, True)])
def test_an_interrupt_without_a_task_has_the_whole_bound(end_ms, found):
    """No interrupt task seen: the interrupt must end within the notice bound (at most
    the acquisition poll) plus the task's bound."""
    assert bool(judge("interrupt_finishes", [_asked(0), _finished(end_ms)])) == found
    (v,) = judge("interrupt_finishes", [_asked(0), _tick(WHOLE_MS + 1)]) or [None]
    assert v is not None and "not started" in v.detail


@pytest.mark.parametrize("fault_ms,fault,judged", [
    (1_000_000 - WHOLE_MS - 1, "replica_crash", True),  # long before: the interrupt is on its own
    (1_000_000 - WHOLE_MS, "replica_crash", False),  # within a whole bound before the request
    (1_000_000 + 200_000, "db_outage", False),  # at the end of the window
    (1_000_000 + 200_001, "ownership_change", True),  # after it
    (1_000_500, "agent_restart", True),  # not a fault of chatd itself
])
def test_a_chatd_fault_in_the_window_exempts_the_interrupt(fault_ms, fault, judged):
    """A fault of chatd itself from a whole bound before the request to the interrupt's
    end only delays it; any other fault, or one outside that window, does not."""
    trace = sorted([_asked(1_000_000), _finished(1_200_000), _fault(fault_ms, fault)], key=lambda x: x["t_ms"])
    assert bool(judge("interrupt_finishes", trace)) == judged


@pytest.mark.parametrize("notice_ms,found", [(SYNC_MS, False), (SYNC_MS + 1, True)])
def test_an_owned_chats_interrupt_is_noticed_within_the_sync_interval(notice_ms, found):
    trace = [_acquired(0, "replica-1"), _asked(1_000), _itask(1_000 + notice_ms), _finished(1_000 + notice_ms + 100)]
    got = judge("interrupt_finishes", trace)
    assert bool(got) == found
    if found:
        assert got[0].detail.endswith(f"(bound: the runner's sync interval, {SYNC_MS} ms)")


@pytest.mark.parametrize("acquired,found", [
    (_acquired(5_000, "replica-1"), False),  # acquired after the request: the acquisition poll's bound
    (_acquired(0, "replica-1"), True),  # owned at the request: the sync interval's
    (_acquired(5_000, "replica-2"), True),  # another replica's acquisition is not this runner's
    (dict(_acquired(5_000, "replica-1"), chat_id=OTHER), True),  # another chat's
])
def test_an_unowned_chats_interrupt_has_the_acquisition_bound(acquired, found):
    trace = sorted([_asked(1_000), acquired, _itask(21_000), _finished(22_000)], key=lambda x: x["t_ms"])
    assert bool(judge("interrupt_finishes", trace)) == found


@pytest.mark.parametrize("end_ms,found", [(50_000 + TASK_MS, False), (50_000 + TASK_MS + 1, True)])
def test_an_unfinished_interrupt_task_has_the_task_bound(end_ms, found):
    trace = [_asked(45_000), _itask(50_000), _tick(end_ms)]
    got = judge("interrupt_finishes", trace)
    assert bool(got) == found
    if found:
        assert "had not finished" in got[0].detail


@pytest.mark.parametrize("took_ms,found", [(TASK_MS, False), (TASK_MS + 1, True)])
def test_a_finished_interrupt_task_has_the_task_bound(took_ms, found):
    trace = [_asked(45_000), _itask(50_000), _finished(50_000 + took_ms)]
    got = judge("interrupt_finishes", trace)
    assert bool(got) == found
    if found:
        assert got[0].detail == (f"the interrupt task of chat {CHAT} took {TASK_MS + 1} ms on replica-1's clock "
                                 f"(bound: dial + agent answer timeout, {TASK_MS} ms)")


@pytest.mark.parametrize("starter,finisher", [("replica-2", "replica-1"), ("replica-1", "replica-2")])
def test_the_task_is_timed_on_its_own_replicas_clock(starter, finisher):
    """A task started on one replica (its clock 50 s ahead) and finished on the other is
    timed on the starter's clock: the finish's true time read there."""
    final = world(clocks={starter: ClockSpec(offset_ms=50_000)})
    trace = [_asked(0), _itask(1_000, starter, clock_ms=51_000), _finished(100_000, finisher)]
    (v,) = judge("interrupt_finishes", trace, final)
    assert f"took {100_000 - 1_000} ms on {starter}'s clock" in v.detail
    trace[-1] = _finished(80_000, finisher)
    assert judge("interrupt_finishes", trace, final) == []


def test_an_interrupt_task_belongs_to_its_chat_and_comes_after_the_request():
    final = world(chats=(CHAT, OTHER))
    trace = [_asked(0), _asked(0, chat=OTHER), _itask(1_000, chat=OTHER), _itask(20_000), _tick(30_000)]
    (v,) = judge("interrupt_finishes", trace, final)
    assert f"the interrupt of chat {CHAT} was noticed 20000 ms" in v.detail
    trace = [_asked(0), _asked(0, chat=OTHER), _itask(1_000), _itask(20_000, chat=OTHER), _tick(30_000)]
    (v,) = judge("interrupt_finishes", trace, final)
    assert f"the interrupt of chat {OTHER} was noticed 20000 ms" in v.detail
    # an earlier interrupt's task is not this one's: none started, the whole bound passed
    trace = [_itask(0), _asked(1_000), _tick(1_000 + WHOLE_MS + 1)]
    (v,) = judge("interrupt_finishes", trace)
    assert "no interrupt task started" in v.detail


# ---------------------------------------------------------------------------
# the rest of the checks' branches, and reachability
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("trace,flagged", tp.FAILED_WRITE_CASES)
def test_a_failed_write_is_judged_by_its_disk(trace, flagged):
    """tests/test_properties.py's cases (issue 34, C5.6), read back from JSON too."""
    assert bool(judge("truthful_result", trace, world(WR))) == flagged


def test_an_interrupt_is_judged_on_every_process_of_the_call():
    """A process the restart killed before the interrupt does not excuse its retry's
    process, still running below its timeout when the interrupt committed."""
    trace = [start(0), killed(500, by="shutdown"), start(1_000, pid="p2", inc=2),
             result(3_000, "interrupted_generic", task="interrupt")]
    (v,) = judge("interrupt_stops_foreground", trace)
    assert v.evidence == (2, 3) and "run age 2000 ms" in v.detail


def test_background_survives_judges_the_executes_after_a_file_call():
    """A file call before them in the message leaves the execute calls judged."""
    trace = [start(0, uuid=UB, command="serve"), killed(1_000)]
    (v,) = judge("background_survives", trace, world(WR, BG))
    assert v.detail == "toolu_02: a cancel killed a background process"


@pytest.mark.parametrize("name,reached,unreached", [
    ("retry_gets_recorded_start", [note(0, "agent", "replayed", uuid=U)], [note(0, "agent", "refused", uuid=U)]),
    ("cancel_first_refuses_start", [note(0, "agent", "refused", code="tool_call_canceled")],
     [note(0, "agent", "replayed", code="tool_call_canceled")]),
    ("cancel_kills_foreground", [start(0), killed(1_000)], [start(0), killed(1_000, by="signal")]),
    ("completes_after_ownership_change", [_fault(0, "replica_crash"), wresult(1_000, "applied")],
     [_fault(0, "agent_restart"), result(1_000, "completed")]),
])
def test_sometimes_properties_are_reached_by_their_own_marks(name, reached, unreached):
    final = world(FG, BG, WR)
    assert judge(name, reached, final) == []
    (v,) = judge(name, unreached, final)
    assert v.detail == "never reached"


# ---------------------------------------------------------------------------
# the evidence index (model/properties/evidence.py)
# ---------------------------------------------------------------------------


def _msg(msg_id, role, *calls):
    return SimpleNamespace(role=role, id=msg_id, tool_calls=calls)


def _call(provider_id, tool, args_json):
    """A tool call as a scenario's TOML gives it: its strings decoded, not the model's literals."""
    return chattool.ToolCall(*_decoded([provider_id, tool, args_json]))


def test_committed_calls_read_every_assistant_call_with_chatds_argument_rules():
    """Every call of every assistant message, the soft-deleted ones among them in message
    order, read as chatd reads them: background from the flag or a trailing "&", the
    timeout argument or chatd's own default (here 7 s), and arguments chatd cannot read
    give the defaults; copies sharing a provider ID are numbered."""
    from dataclasses import replace

    rules = replace(chatd.CONTRACT, timing=replace(chatd.CONTRACT.timing, execute_default_timeout_ms=7_000))
    calls = [
        _call("toolu_a", "execute", '{"command":"make test","timeout":"20s"}'),
        _call("toolu_b", "execute", '{"command":"serve &"}'),
        _call("toolu_c", "execute", '{"command":"x","timeout":"soon"}'),  # not a Go duration
        _call("toolu_d", "execute", '[1]'),  # not an object
        # a file call's arguments are no execute's, whatever fields the model added
        _call("toolu_e", "edit_files", '{"files":[{"path":"/a.go","edits":[]}],"timeout":"20s"}'),
        _call("toolu_a", "execute", '{"command":"make test","timeout":"20s"}'),  # a copy
    ]
    later = _call("toolu_f", "write_file", '{"path":"/b.txt","content":"","run_in_background":true}')
    deleted = _call("toolu_g", "execute", '{"command":"ls","run_in_background":true}')
    stray = _call("toolu_h", "execute", '{"command":"rm"}')  # on a user message: no assistant's call
    user, assistant = _decoded(["user", "assistant"])
    chat = SimpleNamespace(status="waiting", messages=(_msg(1, user, stray), _msg(2, assistant, *calls),
                                                       _msg(5, assistant, later)),
                           deleted_messages=(_msg(3, assistant, deleted), _msg(4, user)))
    final = SimpleNamespace(config=system.WorldConfig(chatd_rules=rules), db=SimpleNamespace(chats={CHAT: chat}))
    got = [(c.message_id, c.provider_id, c.tool, c.command, c.path, c.background, c.timeout_ms, c.copy)
           for c in props.committed_calls(final)]
    assert got == [
        (2, "toolu_a", "execute", "make test", "", False, 20_000, 0),
        (2, "toolu_b", "execute", "serve", "", True, 7_000, 0),
        (2, "toolu_c", "execute", "x", "", False, 7_000, 0),
        (2, "toolu_d", "execute", "", "", False, 7_000, 0),
        (2, "toolu_e", "edit_files", "", "/a.go", False, 7_000, 0),
        (2, "toolu_a", "execute", "make test", "", False, 20_000, 1),
        (3, "toolu_g", "execute", "ls", "", True, 7_000, 0),
        (5, "toolu_f", "write_file", "", "/b.txt", False, 7_000, 0),
    ]
    assert {c.uuid for c in props.committed_calls(final) if c.provider_id == "toolu_a"} == \
        {tool_call_uuid(CHAT, 2, "toolu_a")}
    assert [c.chat_id for c in props.committed_calls(final)] == [CHAT] * 8


def test_record_tags_name_what_a_record_is():
    for kind in ("send", "agent_down", "fault", "workspace"):
        assert props.record_tags(_decoded({"kind": kind})) == (("kind", kind),)
    assert props.record_tags(_decoded(note(0, "agent", "replayed"))) == (("kind", "note"), ("note", "replayed"))
    assert props.record_tags(note(0, "agent", "replayed")) == (("kind", "note"), ("note", "replayed"))
    assert props.record_tags(start(0)) == (("kind", "truth"), ("truth", "process_started"))
    assert props.record_tags({"kind": "note", "note": "x", "truth": "y"}) == (("kind", "note"), ("note", "x"),
                                                                              ("truth", "y"))


def test_evidence_files_effects_under_their_call():
    """Rule 3: by UUID when the agent knew it, else by (chat, command) or (chat, path),
    else a file call on that path of any chat; exits and kills by their process."""
    no_uuid = dict(start(0, command="make"), uuid=None)
    other_chat = dict(start(10, pid="p9", command="make", chat=OTHER), uuid=None)
    stray = dict(start(20, pid="p8", command="cc"), uuid=None)
    by_path = dict(write(30), uuid=None)
    any_chat = dict(write(40), uuid=None, cause_chat=OTHER)
    trace = [no_uuid, other_chat, stray, by_path, any_chat, exited(50, pid="p1", code=4),
             exited(60, pid="p1", inc=2), killed(70, pid="p9"), killed(80, pid="p1")]
    ev = props.Evidence(_decoded(trace), world(FG, BG, WR))
    assert ev.starts == {U: [0], UB: [], UW: []}
    assert ev.edits == {U: [], UB: [], UW: [3, 4]}
    assert (ev.exits[U], ev.kills[U]) == ([5], [8])  # the p1 of incarnation 2 is no process of it
    assert ev.pid_start == {"1/p1": 0, "1/p9": 1, "1/p8": 2} and ev.pid_owner == {"1/p1": U}
    assert ev.ended(ev.calls[0], 0) == 5


def test_evidence_indexes_requests_results_and_the_worlds_records():
    trace = [
        sent(0), sent(0), r(1, "agent", "truth", truth="request_received", cause="q1"),
        r(2, "agent", "truth", truth="request_received", cause="q1"), result(3, "completed"),
        result(4, "completed", uuid="elsewhere"), down(5), r(6, "agent", "agent_up", incarnation=2),
        _fault(7, "db_outage"), r(8, "world", "workspace", state="stopped"), r(9, "world", "tick"),
        note(10, "agent", "cancel_never_received", uuid=U), note(11, "agent", "cancel_never_received", uuid="x"),
        _asked(12), _finished(13),
    ]
    ev = props.Evidence(_decoded(trace), world())
    assert (ev.sends, ev.received) == ({"replica-1-w1/t3/a1/c0:r0": 0}, {"q1": 2})
    assert ev.results == {U: [4], UB: []}
    assert (ev.agent_downs, ev.agent_ups, ev.faults, ev.workspace_moves) == ([6], [7], [8], [9])
    assert ev.never_received == {U: [11], UB: []}
    assert (ev.interrupts, ev.interruption_done) == ([13], [14])
    assert ev.marks == [2, 3, 4, 5, 11, 12, 13, 14]  # notes and truths, not the tick
    assert ev.marks_by[("truth", "request_received")] == [2, 3]
    assert ev.marks_by[("note", "cancel_never_received")] == [11, 12]
    assert ev.end_ms() == 13 and props.Evidence([], world()).end_ms() == 0


def test_a_message_edit_discards_the_calls_between_its_messages():
    """chatd_db rule 9: the messages after the edited one and before its replacement,
    the first edit that discarded a call keeping it."""
    final = world()
    trace = [note(1, "db", "message_edited", chat_id=CHAT, edited_message_id=MSG, replacement_message_id=MSG + 5),
             note(2, "db", "message_edited", chat_id=CHAT, edited_message_id=MSG - 1, replacement_message_id=MSG),
             edited(3), edited(4), edited(5, chat=OTHER)]
    ev = props.Evidence(_decoded(trace), final)
    assert ev.discarded == {U: 2, UB: 2}
    assert ev.edits_of_chat == {CHAT: [0, 1, 2, 3], OTHER: [4]}


def test_results_of_a_copied_uuid_are_told_apart_by_copy():
    twin = chattool.ToolCall("toolu_01", "execute", '{"command":"make","timeout":"10s"}')
    trace = [dict(result(1, "completed"), copy=1), result(2, "completed"), dict(result(3, "failed"), copy=0)]
    ev = props.Evidence(trace, world(FG, twin))
    assert [ev.results_of(c) for c in ev.calls] == [[1, 2], [0]]
    ev = props.Evidence(trace, world(FG))  # no copies: every result of the UUID
    assert ev.results_of(ev.calls[0]) == [0, 1, 2]


@pytest.mark.parametrize("t_ms,running", [(99, False), (100, True), (499, True), (500, False)])
def test_running_at_spans_start_to_end(t_ms, running):
    ev = props.Evidence([start(100), killed(500)], world())
    assert ev.running_at(ev.calls[0], 0, t_ms) == running
    ev = props.Evidence([start(100)], world())
    assert ev.running_at(ev.calls[0], 0, 10**9)


@pytest.mark.parametrize("moves,at,disk", [
    ([], 5, True),
    (["stopped"], 5, True),  # a stop keeps the volume
    (["deleted"], 5, False),
    (["none"], 5, False),
    (["deleted", "running"], 5, True),  # the latest move counts
    (["deleted"], 0, True),  # a move after the record does not count
    (["stopped", "deleted"], 2, False),  # at a move: the state it moved to
    (["deleted", "running"], 1, False),
])
def test_disk_at_follows_the_workspaces_moves(moves, at, disk):
    trace = [r(0, "world", "tick")] + [r(1 + n, "world", "workspace", state=s) for n, s in enumerate(moves)]
    trace += [r(9, "world", "tick")] * 5
    assert props.Evidence(_decoded(trace), world()).disk_at(at) == disk


@pytest.mark.parametrize("req,attempt", [
    ("replica-1-w1/t3/a2/c0:r7", "replica-1-w1/t3/a2"),
    ("replica-1-w1/t3/a2", "replica-1-w1/t3/a2"),
    ("replica-1-w1/t3", "replica-1-w1/t3"),
    ("", ""), (None, ""),
])
def test_attempt_of_a_request(req, attempt):
    assert props.Evidence([], world()).attempt_of(req) == attempt


def test_agent_clock_reads_the_last_agent_record_before():
    """The agent's clock at a record: its last reading at or before it, advanced by the
    true time since; no reading at all: the record's true time."""
    trace = [r(0, "replica-1", "tick"), dict(start(100), clock_ms=5_100), dict(r(150, "agent", "tick")),
             r(300, "replica-1", "tick"), dict(r(400, "agent", "tick"), clock_ms=9_400)]
    del trace[2]["clock_ms"]
    trace.insert(4, {"t_ms": 350, "kind": "action", "action": "interrupt"})  # a user's action: no node
    ev = props.Evidence(_decoded(trace), world())
    assert [props.agent_clock_at(ev, i) for i in range(5)] == [0, 5_100, 5_150, 5_300, 5_350]
    trace.pop(4)
    ev = props.Evidence(_decoded(trace), world())
    assert ev.agent_age_ms(1, 4) == 4_300
    ev = props.Evidence([dict(start(100), clock_ms=700), r(400, "replica-1", "tick")], world())
    assert props.agent_clock_at(ev, 1) == 1_000  # the first record is the agent's reading


def test_a_process_ends_by_its_own_exit_or_kill():
    """A call's processes in two agent lifetimes: each ends by the record of its own
    (incarnation, pid), whichever list holds it."""
    trace = [start(0), killed(50, by="shutdown"), start(100, pid="p2", inc=2), exited(200, pid="p2", inc=2),
             start(300, pid="p1", inc=2)]
    ev = props.Evidence(trace, world())
    call = ev.calls[0]
    assert (ev.ended(call, 0), ev.ended(call, 2), ev.ended(call, 4)) == (1, 3, None)


def test_violations_name_their_call_or_none():
    ev = props.Evidence([], world())
    assert props.violation("p", None, 5, "d") == props.Violation("p", None, None, 5, "d", ())
    assert props.violation("p", ev.calls[1], 5, "d", [3]) == props.Violation("p", UB, "toolu_02", 5, "d", (3,))
    assert props.evidence.call_of(ev, UB) is ev.calls[1] and props.evidence.call_of(ev, U) is ev.calls[0]
    assert props.evidence.call_of(ev, "0") is None and props.evidence.call_of(ev, "x") is None
    v = props.Violation("p", U, "toolu_01", 1_500, "d", (1, 2), "age_check_best_effort")
    assert v.to_json() == {"property": "p", "uuid": U, "id": "toolu_01", "at_s": 1.5, "detail": "d",
                           "evidence": [1, 2], "residual_risk": "age_check_best_effort", "known_finding": False}


def test_the_first_copy_stands_for_its_uuid():
    """Calls sharing a provider ID are one tool call per UUID: the properties judged per
    UUID (its process starts) report it once, by its first copy."""
    twin = chattool.ToolCall("toolu_01", "execute", '{"command":"make","timeout":"10s"}')
    ev = props.Evidence([], world(FG, BG, twin))
    assert [(c.provider_id, c.copy) for c in ev.firsts] == [("toolu_01", 0), ("toolu_02", 0)]
    assert ev.copied == {U}
    assert len(judge("at_most_once", [start(100), start(200, pid="p2")], world(FG, twin))) == 1


SHARED = [_call("toolu_x", "execute", '{"command":"make"}'),
          _call("toolu_e1", "edit_files", '{"files":[{"path":"/a.go","edits":[]}]}'),
          _call("toolu_w", "write_file", '{"path":"/c.txt","content":""}'),
          _call("toolu_e2", "edit_files", '{"files":[{"path":"/b.go","edits":[]},{"path":"/d.go","edits":[]}]}')]


def _uuid(chat, provider_id):
    return tool_call_uuid(chat, MSG, provider_id)


def _change(t_ms, path, chat=None, uuid=None):
    return r(t_ms, "agent", "truth", truth="edit_applied", uuid=uuid, path=path, cause_chat=chat)


@pytest.mark.parametrize("record,owner", [
    # the agent knew the UUID: every file of a two-file edit is its call's
    (_change(0, "/d.go", CHAT, _uuid(CHAT, "toolu_e2")), (CHAT, "toolu_e2")),
    # by (chat, path): each chat's own call on the path
    (_change(0, "/b.go", OTHER), (OTHER, "toolu_e2")),
    (_change(0, "/c.txt", OTHER), (OTHER, "toolu_w")),
    (_change(0, "/a.go", CHAT), (CHAT, "toolu_e1")),
    # no chat: the first file call on that path, of any chat (CHAT's come first)
    (_change(0, "/b.go"), (CHAT, "toolu_e2")),
    (_change(0, "/c.txt"), (CHAT, "toolu_w")),
    (_change(0, "/a.go"), (CHAT, "toolu_e1")),
    # no file call has that path: an execute call (whose path is "") is never one
    (_change(0, ""), None),
    (_change(0, "", CHAT), None),
    (_change(0, "/z.go", CHAT), None),
])
def test_an_applied_edit_is_filed_under_its_file_call(record, owner):
    """Rule 3 for file changes: by UUID, else by (chat, path), else by path alone."""
    ev = props.Evidence(_decoded([record]), world(*SHARED, chats=(CHAT, OTHER)))
    filed = [(c.chat_id, c.provider_id) for c in ev.calls if ev.edits[c.uuid]]
    assert filed == ([owner] if owner else [])


@pytest.mark.parametrize("command,owner", [("make", "toolu_x"), ("", None), ("cc", None)])
def test_a_process_without_uuid_is_filed_under_its_execute_call(command, owner):
    """Rule 3 for processes: by (chat, command), and only ever under an execute call."""
    rec = dict(start(0, command=command, chat=OTHER), uuid=None)
    ev = props.Evidence(_decoded([rec]), world(*SHARED, chats=(CHAT, OTHER)))
    filed = [(c.chat_id, c.provider_id) for c in ev.calls if ev.starts[c.uuid]]
    assert filed == ([(OTHER, owner)] if owner else [])


@pytest.mark.parametrize("low,high,discarded", [
    (MSG - 1, MSG + 1, True),
    (MSG, MSG + 5, False),  # MSG is the edited message itself: only the ones after it are discarded
    (MSG + 1, MSG + 5, False),  # an edit of a later message
    (MSG - 5, MSG, False),
    (MSG - 5, MSG - 1, False),  # an edit whose branch ended before
])
def test_a_message_edit_discards_only_the_messages_strictly_between(low, high, discarded):
    edit = note(1, "db", "message_edited", chat_id=CHAT, edited_message_id=low, replacement_message_id=high)
    ev = props.Evidence(_decoded([edit]), world(chats=(CHAT, OTHER)))
    assert {c.chat_id for c in ev.calls if c.uuid in ev.discarded} == ({CHAT} if discarded else set())


def test_the_property_rows_are_frozen():
    """Every driver shares the one table: a row cannot be changed in place."""
    import dataclasses

    prop = props.PROPERTIES[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        prop.name = "other"
    assert len({p for p in props.PROPERTIES}) == len(props.PROPERTIES)


@pytest.mark.parametrize("tool", ["browser", "web_search"])  # (sorting before and after "execute")
def test_a_tool_without_agent_contact_completes_without_a_process(tool):
    """A tool other than the three runs without the agent (model/chattool/calls.py): its
    completed result claims no process of it."""
    other = chattool.ToolCall("toolu_09", tool, "{}")
    trace = [result(100, "completed", uuid=_uuid(CHAT, "toolu_09"), provider="toolu_09")]
    assert judge("truthful_result", trace, world(other)) == []


def test_every_unknown_result_of_a_call_is_judged():
    (v,) = judge("unknown_only_when_unknowable", [result(500, "completed"), unknown(1_000, "not_found")])
    assert v.evidence == (1,)


def test_every_interrupt_is_judged():
    """An interrupt that ended in time without a task leaves the next one judged; the
    next one's task, after the first ended, is not the first's."""
    trace = [_asked(0), _finished(10_000), _asked(20_000), _itask(40_000), _finished(41_000)]
    (v,) = judge("interrupt_finishes", trace)
    assert f"the interrupt of chat {CHAT} was noticed 20000 ms" in v.detail


def test_effects_without_their_arrival_are_their_own_evidence():
    """Two starts after the cancel's mark whose arrivals the trace does not hold: the
    evidence is the mark and the starts, each once."""
    trace = [note(1_000, "agent", "cancel_never_received", uuid=U), start(2_000), start(3_000, pid="p2")]
    (v,) = judge("canceled_before_received_never_runs", trace)
    assert v.evidence == (0, 1, 2)


def test_the_owner_is_the_workers_replica():
    """A worker ID is ``<replica>-w<n>``: the replica is all before the last ``-w``."""
    trace = [note(0, "us-west-2", "acquired", chat_id=CHAT, worker_id="us-west-2-w1"),
             result(1_000, "completed", replica="us-west-2")]
    assert judge("fenced_commits", trace) == []
    trace[-1] = result(1_000, "completed", replica="us")
    assert judge("fenced_commits", trace)


def test_a_record_that_changes_a_verdict_is_one_its_property_is_rechecked_on():
    """The explorer's monitors re-check a property only when a new record has a tag it
    declares (``Property.changed_by``, else ``reads``; model/properties/monitor.py Rule
    1): growing tests/test_properties.py's cases record by record, every record that
    changes a verdict has such a tag."""
    for prop in props.PROPERTIES:
        if prop.reads is None:
            continue
        rechecked_on = prop.changed_by or prop.reads
        holds, fails = tp.CASES[prop.name]
        for trace in [holds, *fails]:
            verdicts = [prop.check(props.Evidence(trace[:n], tp.final())) for n in range(len(trace) + 1)]
            for n, rec in enumerate(trace):
                if verdicts[n + 1] != verdicts[n]:
                    assert set(props.record_tags(rec)) & rechecked_on, (prop.name, rec)


def test_an_edit_of_two_files_applied_once_is_at_most_once():
    """An edit_files call of two files leaves one edit_applied per file (model/agent/
    files.py): applied once, it changed each file once; a second application changes one
    of them again, and only that file's changes are its evidence."""
    e2 = _uuid(CHAT, "toolu_e2")
    once = [_change(0, "/b.go", CHAT, e2), _change(0, "/d.go", CHAT, e2)]
    assert judge("at_most_once", once, world(*SHARED)) == []
    (v,) = judge("at_most_once", [*once, _change(900, "/b.go", CHAT, e2)], world(*SHARED))
    assert (v.detail, v.evidence, v.at_ms) == ("2 edits applied for toolu_e2", (0, 2), 900)


@pytest.mark.parametrize("kind,disk", [("not_applied", "running"), ("failed", "stopped")])
def test_an_edit_files_result_is_judged_by_its_edits(kind, disk):
    """An edit_files call's side effects are its applied edits, as a write's are."""
    e1 = _uuid(CHAT, "toolu_e1")
    trace = [_change(0, "/a.go", CHAT, e1), r(10, "world", "workspace", state=disk),
             result(1_000, kind, uuid=e1, provider="toolu_e1")]
    (v,) = judge("truthful_result", trace, world(*SHARED))
    assert v.evidence == (0, 2)


@pytest.mark.parametrize("kind", ["unknown", "interrupted_generic"])
def test_a_file_result_that_claims_nothing_is_truthful_on_any_disk(kind):
    """Unknown and the generic interrupted result say nothing of the change: true with
    the write on the disk."""
    assert judge("truthful_result", [write(100), wresult(1_000, kind)], world(WR)) == []


def test_retry_changes_nothing_judges_edits_and_any_later_owner():
    """A file call's edits from two attempts; a start by an attempt of another replica,
    whatever the order of the two attempts' names."""
    trace = [write(100), dict(write(200), cause="replica-1-w1/t3/a2/c0:r9")]
    (v,) = judge("retry_changes_nothing", trace, world(WR))
    assert v.evidence == (0, 1)
    trace = [start(100, cause="replica-2-w1/t5/a1/c0:r1"), start(200, pid="p2", cause="replica-1-w1/t9/a1/c0:r1")]
    (v,) = judge("retry_changes_nothing", trace)
    assert v.detail == "toolu_01: side effect again from replica-1-w1/t9/a1 after replica-2-w1/t5/a1"


def test_interrupt_stops_foreground_judges_the_calls_after_a_background_one():
    trace = [start(0), result(2_000, "interrupted_generic", task="interrupt")]
    assert judge("interrupt_stops_foreground", trace, world(BG, FG))
    assert judge("interrupt_stops_foreground", trace, world(WR, FG))


def test_interrupt_stops_foreground_at_the_commit_only():
    """A process started after the commit (in its millisecond) was not left running by it;
    one past its timeout is left alone."""
    assert judge("interrupt_stops_foreground", [result(2_000, "interrupted_generic", task="interrupt"), start(2_000)]) == []
    assert judge("interrupt_stops_foreground", [start(0), result(12_000, "interrupted_generic", task="interrupt")]) == []
    assert judge("background_survives", [start(0), killed(20_000)])


def test_chat_isolation_both_ways_and_by_signal():
    """A request of either chat that kills, or signals, the other chat's process breaks
    it; a kill no request asked for is skipped, and the next one still judged; a chat's
    own kill is none."""
    final = world(chats=(CHAT, OTHER))
    assert judge("chat_isolation", [start(0), killed(1_000, chat=CHAT)], final) == []
    assert judge("chat_isolation", [start(0), killed(1_000, by="signal", chat=OTHER)], final)
    assert judge("chat_isolation", [start(0, chat=OTHER), killed(1_000, chat=CHAT)], final)
    no_chat = dict(killed(500), cause_chat=None)
    assert judge("chat_isolation", [start(0), no_chat, start(600, pid="p2"), killed(900, pid="p2", chat=OTHER)], final)


def test_canceled_before_received_judges_every_call_and_tool():
    """A call without marks leaves the next judged; a write's or an edit's change after
    its cancel mark breaks it as a start does; copies of different tools sharing a UUID
    are judged on the starts and the edits both."""
    mark = note(1_000, "agent", "cancel_never_received", uuid=UB)
    assert judge("canceled_before_received_never_runs", [mark, start(2_000, uuid=UB, command="serve")])
    assert judge("canceled_before_received_never_runs",
                 [note(1_000, "agent", "cancel_never_received", uuid=UW), write(2_000)], world(WR))
    e1 = _uuid(CHAT, "toolu_e1")
    assert judge("canceled_before_received_never_runs",
                 [note(1_000, "agent", "cancel_never_received", uuid=e1), _change(2_000, "/a.go", CHAT, e1)],
                 world(*SHARED))
    twin = _call("toolu_01", "edit_files", '{"files":[{"path":"/a.go","edits":[]}]}')
    (v,) = judge("canceled_before_received_never_runs",
                 [note(1_000, "agent", "cancel_never_received", uuid=U), _change(2_000, "/a.go", CHAT, U)],
                 world(FG, twin))
    assert v.evidence == (0, 1)


def test_canceled_before_received_names_the_first_late_effect():
    """Of two starts after the mark, the first is the violation's time, and its arrival
    (not the second's) its evidence."""
    mark = note(1_000, "agent", "cancel_never_received", uuid=U)
    trace = [mark, _received(1_500, "q1"), start(2_000, cause="q1"), start(3_000, pid="p2", cause="q2")]
    (v,) = judge("canceled_before_received_never_runs", trace)
    assert (v.at_ms, v.evidence) == (2_000, (0, 1, 2, 3))


def test_a_request_sent_between_two_agent_downs_may_have_reached_a_gone_agent():
    trace = [down(50), sent(100), down(200, inc=2), unknown(1_000, "not_found")]
    assert judge("unknown_only_when_unknowable", trace) == []


def test_unknown_only_when_unknowable_reads_only_the_calls_own_sends():
    """A send for another call (toolu_00 sorts before toolu_01) says nothing of this one;
    the violation names the unknown's reason."""
    trace = [sent(100, tool_call="toolu_00"), down(200), unknown(1_000, "not_found")]
    (v,) = judge("unknown_only_when_unknowable", trace)
    assert "unknown (not_found) although" in v.detail


def test_fenced_commits_judges_every_commit():
    """Two commits by a non-owner are two violations; an interrupt's commit, outside the
    attempt fence, leaves the next generation commit judged."""
    trace = [_acquired(0, "replica-1"), result(1_000, "completed", replica="replica-2"),
             result(2_000, "completed", replica="replica-2")]
    assert len(judge("fenced_commits", trace)) == 2
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 1), _batch(9, "replica-1", 2),
             result(3_000, "canceled", gen=1, task="interrupt"), result(3_500, "completed", gen=1)]
    (v,) = judge("fenced_commits", trace)
    assert v.evidence == (1, 2, 4)


def test_a_commit_is_fenced_by_the_attempts_begun_after_its_own_newest_batch():
    """An attempt runs several batches: a commit after its own second batch is no
    replaced attempt's; an attempt of another replica begun before it is no later one."""
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 1), _batch(5, "replica-1", 1),
             result(3_000, "completed", gen=1)]
    assert judge("fenced_commits", trace) == []
    trace = [_task(1, "replica-1"), _batch(2, "replica-2", 1), _batch(5, "replica-1", 2),
             result(3_000, "completed", gen=2)]
    assert judge("fenced_commits", trace) == []


# ---------------------------------------------------------------------------
# issue 35, checks.py's later survivors: what each check declares it reads, the
# interrupt's whole bound from a late request, the fences' own attempt
# ---------------------------------------------------------------------------


def test_each_incremental_check_reads_only_what_it_declares():
    """``Property.reads`` is what the explorer's monitors re-check a property on
    (model/properties/monitor.py Rule 1): a record the check reads but does not declare
    would leave a stale verdict (a checker that cannot fire). Over the hand-written
    traces, each check asks an evidence that notes every index it reads only for records
    of the tags it declares (tests/test_monitor.py checks the same over explored histories,
    and that every declared tag is read)."""
    from test_monitor import hand_written_samples, reads_seen

    seen = reads_seen(hand_written_samples())
    # each of these three reads results, effects and more, which a narrower set would miss
    assert seen["truthful_result"] >= {("truth", "edit_applied"), ("truth", "process_exited"),
                                       ("truth", "process_killed"), ("truth", "process_started")}
    assert seen["canceled_before_received_never_runs"] >= {("truth", "result_committed"),
                                                           ("truth", "process_started")}
    assert seen["unknown_only_when_unknowable"] >= {("truth", "process_started"), ("kind", "agent_down")}


def test_only_a_sent_request_can_have_reached_a_gone_agent():
    """A request fault's record names its route and tool call before the fault sends
    anything (model/system.py ``_fault``); skipped because the call's message was not
    committed yet, it sent nothing, so no gone agent can have received it and the unknown
    is still one chatd could have known."""
    forged = r(100, "world", "fault", fault="request", name="forged", route="start", tool_call="toolu_01")
    skipped = r(100, "world", "fault_skipped", fault="request", why="the tool call's message is not committed yet")
    (v,) = judge("unknown_only_when_unknowable", [forged, skipped, down(200), unknown(1_000, "not_found")])
    assert v.evidence == (3,)
    assert judge("unknown_only_when_unknowable", [forged, sent(100), down(200), unknown(1_000, "not_found")]) == []


@pytest.mark.parametrize("late_ms,found", [(WHOLE_MS, False), (WHOLE_MS + 1, True)])
def test_an_interrupt_without_a_task_is_timed_from_its_request(late_ms, found):
    """The whole bound runs from the user's request, not from the run's start: a request
    at 1000 s that ends within the bound holds; one bound + 1 ms later says so."""
    got = judge("interrupt_finishes", [_tick(0), _asked(1_000_000), _finished(1_000_000 + late_ms)])
    assert bool(got) == found
    if found:
        assert got[0].detail == (f"the interrupt of chat {CHAT}: no interrupt task started, finished "
                                 f"{WHOLE_MS + 1} ms later (bound {WHOLE_MS} ms)")
        assert got[0].at_ms == 1_000_000 + late_ms and got[0].evidence == (1,)


def test_another_chats_interruption_finished_does_not_end_this_one():
    """An interrupt ends with its own chat's interruption_finished note: another chat's,
    whichever way its ID sorts, leaves it open."""
    final = world(chats=(CHAT, OTHER))
    for mine, theirs in ((CHAT, OTHER), (OTHER, CHAT)):
        trace = [_asked(0, chat=mine), _asked(0, chat=theirs), _finished(1_000, chat=theirs), _tick(WHOLE_MS + 1)]
        (v,) = judge("interrupt_finishes", trace, final)
        assert v.detail.startswith(f"the interrupt of chat {mine}: no interrupt task started, not started")


def test_an_acquisition_after_the_tasks_start_does_not_make_the_chat_unowned():
    """Whether the runner came after the request is read from its acquisitions before
    the task started: a later re-acquisition by the same replica leaves the chat owned
    at the request, so the sync interval bounds the notice."""
    late = 1_000 + SYNC_MS + 1
    trace = [_acquired(0, "replica-1"), _asked(1_000), _itask(late), _acquired(late + 1, "replica-1"),
             _finished(late + 100)]
    (v,) = judge("interrupt_finishes", trace)
    assert v.detail.endswith(f"(bound: the runner's sync interval, {SYNC_MS} ms)")


def test_another_replicas_acquisition_does_not_make_the_starter_unowned():
    """Only the starting replica's own acquisition after the request gives it the
    acquisition poll's bound; another replica's, whichever way its name sorts, does not."""
    for acquirer, starter in (("replica-1", "replica-2"), ("replica-2", "replica-1")):
        trace = [_asked(1_000), _acquired(5_000, acquirer), _itask(21_000, node=starter),
                 _finished(22_000, node=starter)]
        (v,) = judge("interrupt_finishes", trace)
        assert v.detail.endswith(f"(bound: the runner's sync interval, {SYNC_MS} ms)"), (acquirer, starter)


def test_interrupt_finishes_is_judged_before_the_run_quiesces():
    """It has its own time bound (``needs_quiescence=False``): a run still going, whose
    interrupt is long overdue, reports it; ``one_result_eventually`` waits."""
    trace = [_asked(0), _tick(WHOLE_MS + 1)]
    running = tp.final("running")
    assert not props.quiesced(running)
    found = props.violations_of(trace, running, ("always", "eventually"))
    assert [v.property for v in found] == ["interrupt_finishes"]


def test_a_commit_is_fenced_by_its_own_attempts_begin_only():
    """The own attempt is the replica's begin of the commit's generation attempt; a
    commit of an attempt whose begin the trace does not hold (a generate-assistant
    attempt emits none) is not judged by an older attempt's begin."""
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 1), _batch(5, "replica-2", 2),
             result(3_000, "completed", gen=3)]
    assert judge("fenced_commits", trace) == []


def test_a_long_chats_generation_attempts_are_compared_by_value():
    """Attempt numbers past the small integers Python shares, read back from JSON, are
    the same attempt (``judge`` checks the decoded trace against the literal one)."""
    trace = [_task(1, "replica-1"), _batch(2, "replica-1", 300), _batch(5, "replica-2", 301),
             result(3_000, "completed", gen=300)]
    (v,) = judge("fenced_commits", trace)
    assert v.detail == "replica-1's generation attempt 300 committed after replica-2 began attempt 301 of the chat"


def test_completes_after_the_first_ownership_change():
    """A completion after the first of several moves reached the path, however many
    moves came after it."""
    trace = [_fault(0, "replica_crash"), result(1_000, "completed"), _fault(2_000, "ownership_change")]
    assert judge("completes_after_ownership_change", trace) == []


def test_a_takeover_is_an_ownership_change():
    """A takeover (the explorer's ownership change, a scenario's ``takeover`` fault) moves
    the chat at once: a completion after it reached the path, as after any ownership
    change. Before, the check knew only ``ownership_change`` and ``replica_crash``, so a
    takeover's completion was reported unreached."""
    assert judge("completes_after_ownership_change", [_fault(0, "takeover"), result(1_000, "completed")]) == []


def test_only_truth_records_are_filed_under_a_call():
    """``Evidence.marks`` holds every note, every record of kind truth and any other
    record with a ``truth`` field, each once; ``marks_by`` files a note with a truth
    field under both of its kinds (``record_tags``). Only records of kind truth are
    ground truth filed under a call: a note or another record that carries a truth
    field (a probe's answer quoting one), or a truth of a kind no property reads, starts
    no process and commits no result."""
    trace = [note(0, "agent", "replayed", truth="process_started", uuid=U, pid="p1", incarnation=1),
             r(1, "agent", "truth", uuid=U),  # a truth record without its field: a mark, nothing more
             r(2, "world", "probe_answer", truth="process_started", uuid=U, pid="p2", incarnation=1),
             start(3, pid="p3"),
             r(4, "agent", "truth", truth="process_signaled", uuid=U, pid="p3", incarnation=1),
             r(5, "world", "tick")]
    ev = props.Evidence(_decoded(trace), world())
    assert ev.marks == [0, 1, 2, 3, 4]
    assert ev.marks_by == {("note", "replayed"): [0], ("truth", "process_started"): [0, 2, 3],
                           ("truth", "process_signaled"): [4]}
    assert ev.starts == {U: [3], UB: []}
    assert ev.results == ev.exits == ev.kills == {U: [], UB: []}
    assert ev.pid_start == {"1/p3": 3} and ev.pid_owner == {"1/p3": U}


def test_another_chats_acquisition_does_not_make_the_chat_unowned():
    """The runner's own acquisition of this chat after the request gives the acquisition
    poll's bound; its acquisition of another chat, whichever way that ID sorts, does not."""
    final = world(chats=(CHAT, OTHER))
    for mine, theirs in ((CHAT, OTHER), (OTHER, CHAT)):
        trace = [_asked(1_000, chat=mine), dict(_acquired(5_000, "replica-1"), chat_id=theirs),
                 _itask(21_000, chat=mine), _finished(22_000, chat=mine)]
        (v,) = judge("interrupt_finishes", trace, final)
        assert v.detail.endswith(f"(bound: the runner's sync interval, {SYNC_MS} ms)"), mine


def test_an_agent_restart_alone_rechecks_no_property():
    """``Property.changed_by`` (monitor.py Rule 1): unknown_only_when_unknowable reads the
    agent's restarts, but finds each violation at an unknown result from the restarts
    before it, so a restart alone re-checks nothing; a new result or side effect does."""
    from toolcall_sim.model.properties import monitor

    assert monitor.recheck(props.record_tags(down(0))) == ()
    unknown_only = [p.name for p in monitor.INCREMENTAL].index("unknown_only_when_unknowable")
    for rec in (unknown(0, "not_found"), start(0), write(0)):
        assert unknown_only in monitor.recheck(props.record_tags(rec)), rec


def test_a_replaced_attempt_is_told_by_its_own_replica():
    """The commit's own attempt is its replica's begin of that generation attempt: another
    replica's later begin of the same number, whichever way its name sorts, replaced it."""
    for mine, theirs in (("replica-1", "replica-2"), ("replica-2", "replica-1")):
        trace = [_task(1, "replica-1"), _batch(2, mine, 1), _batch(5, theirs, 1),
                 result(3_000, "completed", gen=1, replica=mine)]
        (v,) = judge("fenced_commits", trace)
        assert v.detail == f"{mine}'s generation attempt 1 committed after {theirs} began attempt 1 of the chat"


def test_a_refusal_by_chatds_database_is_no_refused_start():
    """cancel_first_refuses_start is the agent's refusal of a start with
    tool_call_canceled; chatd's database notes its own refusals under the same name (an
    action and a reason, no code: chatd_db.py), which are not that, and neither is the
    agent's refusal with another code."""
    db_refusal = note(0, "db", "refused", action="interrupt", chat_id=CHAT, reason="not running")
    other_code = note(1, "agent", "refused", code="input_mismatch", uuid=U)
    agents = note(2, "agent", "refused", code="tool_call_canceled", uuid=U)
    (v,) = judge("cancel_first_refuses_start", [db_refusal, other_code])
    assert v.detail == "never reached"
    assert judge("cancel_first_refuses_start", [db_refusal, other_code, agents]) == []


def test_an_exempted_interrupt_leaves_the_later_ones_judged():
    """A chatd fault exempts the interrupts whose window it falls in, not the ones after:
    a later interrupt that never finishes is still reported."""
    trace = [_fault(0, "replica_crash"), _asked(1_000), _finished(2_000), _asked(1_000_000),
             _tick(1_000_000 + WHOLE_MS + 1)]
    (v,) = judge("interrupt_finishes", trace)
    assert v.evidence == (3,) and "not started" in v.detail
