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
    gives them: a tool name is not the model's own literal."""
    calls = tuple(chattool.ToolCall(*_decoded([c.provider_id, c.tool, c.args_json])) for c in tool_calls or (FG, BG))
    msg = SimpleNamespace(role="assistant", id=MSG, tool_calls=calls)
    config = system.WorldConfig(chatd_rules=chatd.CONTRACT, clocks=FMap(clocks or {}))
    chats = {chat_id: SimpleNamespace(status="waiting", messages=(msg,)) for chat_id in (chats or (CHAT,))}
    return SimpleNamespace(config=config, db=SimpleNamespace(chats=chats))


def judge(name: str, trace: list[dict], final=None) -> list:
    """Property ``name``'s violations of ``trace``, the same as of the trace read back
    from JSON."""
    final = world() if final is None else final
    check = next(p for p in props.PROPERTIES if p.name == name).check
    found = check(props.Evidence(trace, final))
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
])
def test_timed_out_needs_a_process_alive_at_its_deadline(ends_at, commit_at, truthful):
    trace = [start(0), result(commit_at, "timed_out")]
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


def test_the_task_is_timed_on_its_own_replicas_clock():
    """A task started on replica-2 (its clock 50 s ahead) and finished on replica-1 is
    timed on replica-2's clock: the finish's true time read there."""
    final = world(clocks={"replica-2": ClockSpec(offset_ms=50_000)})
    trace = [_asked(0), _itask(1_000, "replica-2", clock_ms=51_000), _finished(100_000, "replica-1")]
    (v,) = judge("interrupt_finishes", trace, final)
    assert f"took {100_000 - 1_000} ms on replica-2's clock" in v.detail
    trace[-1] = _finished(80_000, "replica-1")
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
