"""docs/contract.md C7, all 41 Go test groups: the map, and the groups that needed
the task layer to port them fully.

``GO_GROUPS`` maps every group (1-41) to its Go test names and to the pytest tests that
port it (``module::function``); ``test_every_go_group_is_ported`` keeps the map complete
and every named test real. Groups 1-24 and the per-call halves of 25-35 live in
tests/test_chattool.py (no replica needed); the task, fence and retry-wrapper halves live
in tests/test_chatd.py and here. The tests here drive the same in-test world as
tests/test_chatd.py (its ``World`` and scripted ``FakeAgent``): every handler is the real
pure model (model/chatd/, model/chattool/), only the agent is scripted.

What the model leaves out on purpose, and how a group is still tested (``ABSTRACTED``):
- the message part buffer (groups 28, 41): the buffer's parts never become committed
  results or partial messages here; the tool-call behaviour around them is tested (the
  cancel answer is the only committed result; a call that was only streamed never runs);
- billing (group 29): the batch usage record is not modelled; the parallel cancels and
  every call's result are;
- LLM retries (group 38): ``recordGenerationRetry`` does not exist; the same owner fence
  on the stale attempt's next write (its commit, or its retry's first read) is tested;
- panics (group 39 PanicsRetry): pure handlers cannot panic; the retry wrapper's rule
  that any failure other than an expected exit retries is driven with a synthetic one;

Group 3's serial order is tested by marking an agent tool serial (``ChatdRules.serial_tools``,
tests/test_chatd_today.py): Go marks only box_run and find_tools serial, and those never
contact the agent, so the default serial list changes nothing an agent sees.
"""

from __future__ import annotations

import ast
import base64
import json
import pathlib
from dataclasses import replace
from functools import partial

import pytest

from toolcall_sim.model import chatd, chatd_db, chattool
from toolcall_sim.model.core import Note, Response, Send, SetTimer, json_body
from toolcall_sim.model.identity import parse_tool_call_headers

from test_chatd import (
    BG, CHAT, EDIT, FG_2H, FG_20M, MIN, WRITE, execute, new_world, start_turn, uuid_of,
)

TESTS = pathlib.Path(__file__).resolve().parent

# group -> (Go test names, pytest tests that port it as "module::function")
GO_GROUPS: dict[int, tuple[str, tuple[str, ...]]] = {
    1: ("TestToolCallAge", ("test_chattool::test_01_tool_call_age",)),
    2: ("TestToolCallIdentityAgentRequests",
        ("test_chattool::test_02_identity_agent_requests_measure_age_per_request",)),
    3: ("chatloop TestExecuteLocalToolsToolCallIdentity",
        ("test_chattool::test_03_parallel_and_serial_calls_each_carry_their_own_identity",
         "test_chatd_groups::test_g03_parallel_calls_each_carry_their_own_identity",
         "test_chatd_today::test_serial_tools_run_one_after_another_in_a_batch",
         "test_chatd_today::test_non_serial_calls_do_not_wait_for_serial_ones")),
    4: ("TestExecuteLocalTools_ToolCallIdentity",
        ("test_chattool::test_04_backdated_message_age_from_database_clock",)),
    5: ("TestExecuteLocalTools_ExecuteTaskRetry",
        ("test_chattool::test_05_execute_task_retry_attaches_to_the_first_process",
         "test_chatd::test_contract_task_retry_replays_start_and_waits_only_the_rest")),
    6: ("TestExecuteLocalTools_FileToolTaskRetry",
        ("test_chattool::test_06_file_tool_task_retry_gets_the_recorded_answer",)),
    7: ("TestExecuteToolCall/Started", ("test_chattool::test_07_started_new_agent_exits_zero",)),
    8: ("TestExecuteToolCall/AttachWaitsForRemainingTimeout",
        ("test_chattool::test_08_attach_waits_for_remaining_timeout",)),
    9: ("TestExecuteToolCall/AttachWaitsAgainAfterAgentWaitCap",
        ("test_chattool::test_09_attach_waits_again_after_agent_wait_cap",)),
    10: ("TestExecuteToolCall/AttachNegativeAgeWaitsTimeout",
         ("test_chattool::test_10_attach_negative_age_waits_full_timeout",)),
    11: ("TestExecuteToolCall/AttachNoTimeoutLeftRunning",
         ("test_chattool::test_11_attach_no_timeout_left_running",)),
    12: ("TestExecuteToolCall/AttachPastTimeoutExited", ("test_chattool::test_12_attach_past_timeout_exited",)),
    13: ("TestExecuteToolCall/AttachNoTimeoutLeftSnapshotFails",
         ("test_chattool::test_13_attach_no_timeout_left_snapshot_fails_is_unknown",
          "test_chattool::test_13b_wait_deadline_cuts_the_read_then_snapshot",
          "test_chattool::test_13c_read_fails_before_deadline")),
    14: ("TestExecuteToolCall/OldAgent",
         ("test_chattool::test_14_old_agent_legacy_full_wait_from_local_start",
          "test_chattool::test_14b_old_agent_still_running_at_deadline",
          "test_chattool::test_14c_no_identity_is_legacy_throughout",
          "test_chattool::test_14d_headers_withheld_means_legacy_wait")),
    15: ("TestExecuteToolCall/{AgentStartedAfterToolCall(+Background), InputMismatch, Unreachable(+Background), "
         "UnreadableResponse, AgentErrorResponse, StaleToolCall, ToolCallCanceled, Background}",
         ("test_chattool::test_15_start_error_mapping", "test_chattool::test_15_background_start",
          "test_chattool::test_15_trailing_ampersand_means_background")),
    16: ("TestExecuteToolCallNoConnection",
         ("test_chattool::test_16_execute_no_connection",
          "test_chatd::test_dial_failure_in_generation_commits_unknown_with_identity")),
    17: ("TestExecuteToolCallAgentAnswerTimeout",
         ("test_chattool::test_17_agent_answer_timeout_is_unknown_no_answer",
          "test_chattool::test_17_no_identity_no_answer_keeps_legacy_text",
          "test_chattool::test_17_task_ended_sends_nothing_and_commits_nothing",
          "test_chattool::test_17_short_timeout_ends_the_start_first",
          "test_chattool::test_17_timeout_equal_to_answer_timeout_is_unreachable",
          "test_chattool::test_17_expired_timeout_sends_nothing")),
    18: ("TestInterruptExecute",
         ("test_chattool::test_18_interrupt_execute_answers", "test_chattool::test_18_interrupt_execute_errors",
          "test_chatd_groups::test_g18_recorded_start_failure_text_per_5_3")),
    19: ("TestInterruptExecuteInvalidTimeout", ("test_chattool::test_19_invalid_timeout_sends_no_request",)),
    20: ("TestInterruptExecuteUnreachable", ("test_chattool::test_20_interrupt_execute_unreachable",)),
    21: ("TestInterruptExecuteBeforeStart",
         ("test_chattool::test_21_cancel_before_start_then_late_start_is_refused",)),
    22: ("TestInterruptedCall",
         ("test_chattool::test_22_interrupted_call_stop_ages",
          "test_chattool::test_22_not_run_and_file_answers_exact_json")),
    23: ("TestInterruptedCallUnreachable", ("test_chattool::test_23_interrupted_call_unreachable",)),
    24: ("TestInterruptedCallSameCancel", ("test_chattool::test_24_same_cancel",)),
    25: ("TestInterruptTask_ExecuteResults",
         ("test_chattool::test_25_interrupt_task_execute_results_per_call",
          "test_chatd::test_interrupt_task_execute_results")),
    26: ("TestInterruptTask_ExecuteCallsWithoutCancel",
         ("test_chattool::test_26_calls_without_cancel_mean_no_dial",
          "test_chatd::test_interrupt_task_execute_calls_without_cancel")),
    27: ("TestInterruptTask_DuplicateIDsCancelOnce",
         ("test_chattool::test_27_duplicate_ids_cancel_once",
          "test_chatd::test_interrupt_task_duplicate_ids_cancel_once")),
    28: ("TestInterruptTask_CancelIgnoresEpisodeBuffer",
         ("test_chatd::test_interrupt_task_cancel_answer_is_the_only_result",
          "test_chatd_groups::test_g28_cancel_ignores_episode_buffer")),
    29: ("TestInterruptTask_CancelsExecuteCallsInParallel",
         ("test_chattool::test_29_cancels_are_in_flight_in_parallel",
          "test_chatd::test_contract_interrupt_cancels_with_stop_ages_and_commits_cancel_results",
          "test_chatd_groups::test_g29_cancels_execute_calls_in_parallel")),
    30: ("TestInterruptTask_CancelBoundYieldsUnknown",
         ("test_chattool::test_30_cancel_bound_yields_unknown",
          "test_chatd::test_interrupt_task_cancel_bound_yields_unknown")),
    31: ("TestInterruptTask_ParentCanceledDuringCancelCommitsNothing",
         ("test_chattool::test_31_task_end_mid_cancel_commits_nothing",
          "test_chatd::test_interrupt_task_parent_canceled_during_cancel_commits_nothing")),
    32: ("TestInterruptTask_FileToolCallResults",
         ("test_chattool::test_32_file_tool_interrupt_results", "test_chatd_groups::test_g32_file_tool_call_results")),
    33: ("TestInterruptTask_ResultsTruncatedLikeLiveResults (+ chatloop TestToolResultByteBudget, "
         "TestTruncateToolResultText)",
         ("test_chatd_groups::test_g33_tool_result_byte_budget",
          "test_chatd_groups::test_g33_truncate_tool_result_text",
          "test_chatd_groups::test_g33_cut_results_are_stored_like_chatd_stores_them",
          "test_chatd_groups::test_g33_interrupt_results_truncated_like_live_results",
          "test_chatd_groups::test_g33_live_results_are_cut_to_the_same_budget",
          "test_chatd_groups::test_g33_unknown_window_gets_the_default_budget")),
    34: ("TestInterruptTask_CancelsFileAndExecuteCallsTogether",
         ("test_chattool::test_34_file_and_execute_calls_together",
          "test_chatd_groups::test_g34_cancels_file_and_execute_calls_together")),
    35: ("TestInterruptTask_FileToolCallsWithoutCancel",
         ("test_chattool::test_35_duplicate_ids_across_tools_get_generic",
          "test_chatd_groups::test_g35_file_tool_calls_without_cancel")),
    36: ("TestInterruptTask_StaleFenceExits", ("test_chatd::test_interrupt_task_stale_fence_exits",)),
    37: ("TestAbandonTask_OwnershipMismatchRequestsCleanup / TestAbandonTask_StaleStatusFenceExits "
         "(+ TestAbandonTask_AbandonOnly)",
         ("test_chatd::test_abandon_task_ownership_mismatch_requests_cleanup",
          "test_chatd::test_abandon_task_stale_status_fence_exits",
          "test_chatd::test_abandon_after_turn_clears_owner")),
    38: ("TestGenerationTask_RecordRetryStateStaleFenceExits",
         ("test_chatd::test_generation_stale_runner_write_after_reacquire_exits",
          "test_chatd_groups::test_g38_stale_attempt_write_after_reacquire_exits")),
    39: ("TestRetryWrapper_ExpectedExitsDoNotRetry, _UnexpectedErrorsRetry, _PanicsRetry, "
         "_ContextCancellationDoesNotRetryOrLog",
         ("test_chatd::test_stale_owner_commit_is_fenced_and_not_retried",
          "test_chatd::test_retry_wrapper_db_errors_retry_with_backoff",
          "test_chatd_groups::test_g39_retry_wrapper_panics_retry",
          "test_chatd::test_retry_wrapper_context_cancellation_does_not_retry")),
    40: ("TestRetryWrapper_TaskTimeoutDBQueryCancellationRetries",
         ("test_chatd::test_retry_wrapper_timed_out_attempt_is_retried_with_new_generation_attempt",
          "test_chatd_groups::test_g40_task_timeout_db_query_cancellation_retries")),
    41: ("TestInterruptTask_FinishInterruptionOnly, _MissingEpisodePersistsNilPartials, "
         "_BufferedPartsBecomePartialMessages",
         ("test_chatd::test_interrupt_task_finish_interruption_only",
          "test_chatd_groups::test_g41_finish_interruption_only",
          "test_chatd_groups::test_g41_finish_interruption_only_after_a_resolved_batch",
          "test_chatd_groups::test_g41_missing_episode_persists_nil_partials",
          "test_chatd_groups::test_g41_buffered_parts_become_partial_messages")),
}

# Groups whose Go test checks a mechanism the model leaves out on purpose (module docstring).
ABSTRACTED = {28: "message part buffer", 29: "billing", 38: "LLM retries",
              39: "panics", 41: "message part buffer"}


def _defined_tests(module: str) -> dict[str, str]:
    """test function name -> docstring, for one test module of this folder."""
    tree = ast.parse((TESTS / f"{module}.py").read_text())
    return {node.name: ast.get_docstring(node) or "" for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_go_group_is_ported():
    """The map covers groups 1..41, each with its Go test name and at least one pytest test;
    every named test exists and names its group (``test_NN`` / ``test_gNN`` or ``[7.NN]``
    in its docstring), and at least one test per group names a Go test in its docstring;
    every abstraction names a mapped group."""
    assert sorted(GO_GROUPS) == list(range(1, 42))
    defined: dict[str, dict[str, str]] = {}
    for group, (go_name, tests) in GO_GROUPS.items():
        assert go_name.strip() and tests, group
        docs = []
        for ref in tests:
            module, name = ref.split("::")
            if module not in defined:  # (setdefault would parse the module again for every reference)
                defined[module] = _defined_tests(module)
            names = defined[module]
            assert name in names, f"group {group}: {ref} does not exist"
            doc = names[name]
            tags = {f"[7.{group}]", f"/7.{group}]", f"[7.{group}/", f"/7.{group}/"}
            assert (name.startswith((f"test_{group:02d}", f"test_g{group:02d}"))
                    or any(tag in doc for tag in tags)), f"group {group}: {ref} does not name its group"
            docs.append(doc)
        assert any("Test" in doc for doc in docs), f"group {group}: no test names the Go test"
    assert set(ABSTRACTED) <= set(GO_GROUPS)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def edit(pid: str) -> chattool.ToolCall:
    args = {"files": [{"path": "/a.txt", "edits": [{"old_text": "a", "new_text": "b"}]}]}
    return chattool.ToolCall(pid, "edit_files", json.dumps(args))


def write(pid: str) -> chattool.ToolCall:
    return chattool.ToolCall(pid, "write_file", json.dumps({"path": "/a.txt", "content": "b"}))


def results_of(w, provider_id: str) -> list[chattool.Result]:
    return [m.result for m in w.chat().messages if m.role == "tool" and m.provider_id == provider_id]


def single_result(w, provider_id: str) -> chattool.Result:
    """``singleToolResult``: the one committed result of the call."""
    (res,) = results_of(w, provider_id)
    return res


def execute_result(res: chattool.Result) -> dict:
    """``requireExecuteResult``: a non-error result holding ExecuteResult JSON."""
    assert not res.is_error, res
    return json.loads(res.content)


def is_generic(res: chattool.Result) -> bool:
    """``requireGenericInterruptResult``."""
    return res.is_error and json.loads(res.content) == {"error": chattool.GENERIC_INTERRUPTED_TEXT}


def interrupt(w) -> int:
    """Interrupt the chat; the log mark before it (for counting dials)."""
    m = w.mark()
    w.user(chatd.db_interrupt, CHAT)
    return m


# ---------------------------------------------------------------------------
# Group 3: each call of a batch carries its own identity
# ---------------------------------------------------------------------------


def test_g03_parallel_calls_each_carry_their_own_identity():
    """chatloop TestExecuteLocalToolsToolCallIdentity/EachCallSeesItsOwnIdentity (task
    level): the calls of one batch run at once (both starts in flight before either is
    answered), each with {chat, the assistant message, its own provider ID, the age of
    the batch's one DB clock read}; a tool without agent contact (read_file) runs beside
    them. /NoChatIDNoIdentity: a chatd that sends no identity (today) sends no headers.
    Serial order is not observable here (module docstring)."""
    a, b = execute("call-1", "make a", "1h"), execute("call-2", "make b", "1h")
    probe = chattool.ToolCall("call-3", "read_file", '{"path":"/a"}')
    for rules in ("contract", "today"):
        w = new_world([(a, b, probe)], rules=rules)
        w.agent.hold_starts = True
        w.dial = None  # the dial is answered 20 s late: the age read once grows by 20 s
        start_turn(w)
        (_, node, dial), = w.requests(method="DIAL")
        w.advance(20_000)
        w.deliver([(node, Response(dial.req_id, 200))])
        starts = w.starts()
        assert len(starts) == 2 and len(w.agent.held) == 2 and not w.committed()
        assert len({t for t, _, _ in starts}) == 1
        headers = [parse_tool_call_headers(r.headers) for _, _, r in starts]
        if rules == "today":
            assert headers == [None, None]
            continue
        msg = chatd_db.last_assistant(w.chat())
        assert [(h.message_id, h.tool_call_id) for h in headers] == [(msg.id, "call-1"), (msg.id, "call-2")]
        assert headers[0].age_ms == headers[1].age_ms == w.db_now() - msg.created_at_ms == 20_000
        assert {r.path for _, _, r in starts} == {"/api/v0/processes/start"}


# ---------------------------------------------------------------------------
# Group 18: the recorded start failure's text (5.3)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("background, content_type, body, want", [
    (False, "application/json", b'{"message":"Failed to start process.","detail":"fork failed"}',
     "start process: Failed to start process.: fork failed"),
    (True, "", b"not json", "start background process: Internal Server Error"),
], ids=["ForegroundStartFailed", "BackgroundStartFailed"])
def test_g18_recorded_start_failure_text_per_5_3(background, content_type, body, want):
    """TestInterruptExecute/{ForegroundStartFailed, BackgroundStartFailed} in the newer
    interrupt.go that docs/contract.md C5.3 quotes: the cancel answers "started, no
    process, recorded 500"; the result is the non-error ExecuteResult whose error is
    ``start process: <message>: <detail>`` (``start background process: ...``), and a
    body that is not JSON gives the status text. (The older fork test, 05b172cb, wants
    the live start error's codersdk text, which is what the model says today.)"""
    call = execute("call_1", "make dev" if background else "make test", None if background else "2h", background)
    plan = chattool.interrupted_call(call)
    identity = chattool.Identity(CHAT, 42, "call_1", chattool.ToolCallAge(MIN, 0))
    cs, effects = chattool.begin_cancel(call, plan, identity, "replica-1", "replica-1/i1/c1", CHAT, 0)
    (req,) = [e.request for e in effects if isinstance(e, Send)]
    recorded = {"started": True, "status_code": 500, "content_type": content_type,
                "body": base64.b64encode(body).decode()}
    cs, _ = chattool.on_answer(cs, Response(req.req_id, 200, "application/json", json_body(recorded)), 10)
    assert cs.result.kind == "failed" and not cs.result.is_error
    assert json.loads(cs.result.content)["error"] == want


# ---------------------------------------------------------------------------
# Group 28: the cancel answer is the only committed result
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["execute", "edit_files", "write_file"])
def test_g28_cancel_ignores_episode_buffer(tool):
    """TestInterruptTask_CancelIgnoresEpisodeBuffer (execute, edit_files, write_file): the
    agent ran the call and answered, but the canceled generation never commits that
    answer (Go: it sits in the buffer as a "context canceled" result; here it arrives
    late). The call is still canceled and the cancel's answer is its only result: for
    execute "canceled by the user after 2s." with the partial output, for a file tool the
    recorded success. The buffer itself is not modelled."""
    call = {"execute": execute("toolu_x", "make test", "2h"), "edit_files": edit("toolu_x"),
            "write_file": write("toolu_x")}[tool]
    w = new_world([(call,)])
    w.agent.hold_starts = w.agent.hold_files = True
    start_turn(w)
    assert len(w.agent.held) == 1  # the agent ran it; its answer is not through yet
    late = w.agent.release()
    w.advance(2_000)
    m = interrupt(w)
    assert len(w.dials(after=m)) == 1 and len(w.cancels()) == 1
    res = single_result(w, "toolu_x")
    if tool == "execute":
        value = execute_result(res)
        assert value["output"] == "partial" and "canceled by the user after 2s." in value["error"]
    else:
        assert not res.is_error and json.loads(res.content)["ok"] is True
    w.deliver(late)  # the generation's own answer, after the interrupt: dropped
    assert len(w.notes("late_answer")) == 1
    assert results_of(w, "toolu_x") == [res] and w.chat().status == chatd.WAITING


# ---------------------------------------------------------------------------
# Group 29: cancels in parallel
# ---------------------------------------------------------------------------


def test_g29_cancels_execute_calls_in_parallel():
    """TestInterruptTask_CancelsExecuteCallsInParallel: both cancels are in flight at once
    (foreground stop 2 h, background stop 0), one dial; the foreground result is "canceled
    by the user after 5s." with its output, the background one backgrounded with its
    UUID, wait_agent generic. The batch usage record (5000 ms over 2 calls) is billing,
    which is not modelled."""
    first, second = execute("toolu_first", "make test", "2h"), execute("toolu_second", "make dev", background=True)
    wait = chattool.ToolCall("toolu_wait", "wait_agent", "{}")
    w = new_world([(first, second, wait)])
    start_turn(w)
    w.advance(5_000)
    w.agent.hold_cancels = True
    m = interrupt(w)
    assert len(w.dials(after=m)) == 1
    cancels = w.cancels()
    assert len(cancels) == 2 and not w.committed()  # both sent before either is answered
    stops = {parse_tool_call_headers(r.headers).tool_call_id: r.json()["stop_if_run_age_below_ms"]
             for _, _, r in cancels}
    assert stops == {"toolu_first": 2 * 60 * MIN, "toolu_second": 0}
    w.deliver(w.agent.release())
    got = execute_result(single_result(w, "toolu_first"))
    assert got["output"] == "partial" and "canceled by the user after 5s." in got["error"]
    got = execute_result(single_result(w, "toolu_second"))
    assert got["backgrounded"] is True and got["background_process_id"] == uuid_of(w, "toolu_second")
    assert is_generic(single_result(w, "toolu_wait"))
    assert len(w.dials(after=m)) == 1


# ---------------------------------------------------------------------------
# Group 32: file tool interrupt results at the task level
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["edit_files", "write_file"])
@pytest.mark.parametrize("case, dial", [("Applied", 200), ("NoConnection", "transport"), ("WorkspaceHasNoAgent", 404)])
def test_g32_file_tool_call_results(tool, case, dial):
    """TestInterruptTask_FileToolCallResults/{edit_files,write_file}/{Applied, NoConnection,
    WorkspaceHasNoAgent}: every unresolved file call gets a cancel that stops nothing, and
    its result comes from the answer; a failed dial gives unknown "may have been applied"
    (with no agent too: a stopped workspace keeps its disk, and the text says
    start_workspace)."""
    call = edit("toolu_f") if tool == "edit_files" else write("toolu_f")
    w = new_world([(call,)])
    w.agent.hold_files = True
    start_turn(w)
    w.dial = dial
    m = interrupt(w)
    assert len(w.dials(after=m)) == 1
    res = single_result(w, "toolu_f")
    if case == "Applied":
        want = {"ok": True, "files": [{"path": "/a.txt", "diff": "-a\n+b"}]} if tool == "edit_files" else {"ok": True}
        assert not res.is_error and json.loads(res.content) == want
        assert [r.json()["stop_if_run_age_below_ms"] for _, _, r in w.cancels()] == [0]
        return
    assert res.is_error and w.cancels() == []
    wants = ["outcome unknown", "could not be reached", "may have been applied"]
    wants.append(chattool.dial_error_text("refused") if case == "NoConnection" else "start_workspace")
    for want in wants:
        assert want in res.content


# ---------------------------------------------------------------------------
# Group 33: results cut to the model's context budget
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("limit, want", [
    (0, chattool.DEFAULT_TOOL_RESULT_BYTES), (-1, chattool.DEFAULT_TOOL_RESULT_BYTES),
    (1000, chattool.MIN_TOOL_RESULT_BYTES), (200_000, 200_000 // 3 * 3),
], ids=["Unknown", "Negative", "BelowFloor", "LargeWindow"])
def test_g33_tool_result_byte_budget(limit, want):
    """chatloop TestToolResultByteBudget: unknown -> 64 KB, tiny -> the 16 KB floor, large
    -> a third of the window at 3 bytes per token; NeverBelowFloor."""
    assert chattool.tool_result_byte_budget(limit) == want
    assert all(chattool.tool_result_byte_budget(n) >= chattool.MIN_TOOL_RESULT_BYTES for n in range(1, 200_001, 137))


def test_g33_truncate_tool_result_text():
    """chatloop TestTruncateToolResultText: UnderLimitUnchanged, ExactlyAtLimitUnchanged,
    ZeroBudgetUnchanged, PreservesHeadAndTail, MultibyteStaysValid, TinyBudgetHardCut."""
    cut = chattool.truncate_tool_result_text
    assert cut("small output", 1024) == ("small output", False)
    assert cut("a" * 1024, 1024) == ("a" * 1024, False)
    assert cut("a" * 1024, 0) == ("a" * 1024, False)
    out, truncated = cut("A" * 1000 + "MIDDLE" + "B" * 1000, 600)
    assert truncated and len(out.encode()) <= 600
    assert out.startswith("A" * 100) and out.endswith("B" * 100) and "MIDDLE" not in out and "truncated" in out
    # 600 - 256 reserved = 344: a 229-byte head, a 115-byte tail, 2006 - 344 bytes removed.
    assert out.startswith("A" * 229 + "\n\n[... Coder truncated 1662 bytes") and out.endswith("]\n\n" + "B" * 115)
    for text, budget in (("界" * 1000, 600), ("界" * 10, 10)):
        out, truncated = cut(text, budget)
        assert truncated and len(out.encode("utf-8")) <= budget
        out.encode("utf-8", errors="strict")  # valid UTF-8: no lone surrogate
        assert "\ufffd" not in out  # a rune cut in half is dropped, not replaced
    assert cut("界" * 10, 10)[0] == "界" * 3  # the hard cut: 10 bytes hold 3 whole runes


def test_g33_budget_constants_and_boundaries_are_gos():
    """tooltruncate.go's numbers, not the model's names for them (16 << 10 floor, 64 << 10
    when the window is unknown, 256 bytes reserved for the marker), and where each rule
    changes its mind: a window of 1 token is known (the floor, not the default); a budget
    of 0 or below leaves the text alone, 1 byte cuts it; at twice the reserve the cut is
    still a plain head cut, one byte more brings the marker."""
    budget, cut = chattool.tool_result_byte_budget, chattool.truncate_tool_result_text
    assert (budget(0), budget(1), budget(-5)) == (65536, 16384, 65536)
    # the thirds rule gives multiples of 3: 16383 is under the floor, 16386 is over it
    assert (budget(16385), budget(16386)) == (16384, 16386)
    assert budget(2**63 - 1) == (2**63 - 1) // 3 * 3  # Go's largest int64 window: no clamp binds on 64-bit
    assert cut("abc", -1) == ("abc", False) and cut("ab", 1) == ("a", True)
    text = "x" * 2000
    at, above = cut(text, 512)[0], cut(text, 513)[0]
    assert at == "x" * 512  # 512 = 2 x 256: a hard cut, no marker
    assert "Coder truncated" in above and len(above.encode()) <= 513


def test_g33_a_cut_that_is_still_json_is_stored_as_it_is():
    """MarshalToolResultContent wraps a cut non-error text only when it is no longer JSON:
    a long run of digits cut to its head is still a JSON number, and is stored bare."""
    digits = chattool.Result("completed", False, "7" * 20_000, exit_code=0)
    cut = chattool.fit_result_to_context(digits, 100)
    assert cut.content == "7" * 100


def test_g33_cut_results_are_stored_like_chatd_stores_them():
    """TestInterruptTask_ResultsTruncatedLikeLiveResults, the storage rule it relies on
    (chatprompt MarshalToolResultContent): a result that fits is kept as it is; a cut
    non-error result is no longer JSON and is stored as {"output": <cut text>}; an error
    result keeps its cut text; kind, exit code and process ID never change."""
    fit = chattool.fit_result_to_context
    small = chattool.Result("completed", False, '{"success":true}', exit_code=0)
    assert fit(small, 16 << 10) is small
    big = chattool.Result("completed", False, chattool.go_json({"output": "y" * 40_000}), exit_code=0, process_id="p")
    cut = fit(big, 16 << 10)
    assert replace(cut, content=big.content) == big
    inner = json.loads(cut.content)["output"]
    assert len(inner.encode()) <= 16 << 10 and inner.startswith('{"output":"yyy') and "Coder truncated" in inner
    err = chattool.Result("failed", True, "boom " * 10_000)
    cut = fit(err, 16 << 10)
    assert cut.is_error and cut.content.startswith("boom boom") and len(cut.content.encode()) <= 16 << 10


def _cut_output(res: chattool.Result, budget: int) -> str:
    """The stored result of a cut, non-error JSON result: ``{"output": <cut text>}``."""
    assert not res.is_error
    output = json.loads(res.content)["output"]
    assert len(output.encode()) <= budget and "Coder truncated" in output
    return output


@pytest.mark.parametrize("case", ["OversizedDiff", "ExecuteOutput"])
def test_g33_interrupt_results_truncated_like_live_results(case):
    """TestInterruptTask_ResultsTruncatedLikeLiveResults/{OversizedDiff, ExecuteOutput}:
    with the model's context at 1000 tokens, an interrupted edit whose recorded diff is a
    megabyte, or an execute whose 30 000-byte output came back in the cancel answer, is
    cut to the 16 KB floor, marked "Coder truncated", and stored as output text (a cut
    JSON result is no longer JSON), not as an error. The cut keeps the call's kind."""
    budget = 16 << 10
    call = edit("toolu_x") if case == "OversizedDiff" else execute("toolu_x", "make test", "2h")
    w = new_world([(call,)], context_limit_tokens=1000)
    if case == "OversizedDiff":
        w.agent.edit_diff = "+line\n" * 200_000
        w.agent.hold_files = True
    else:
        w.agent.lost = {"/output"}  # the generation's blocking read never comes back
    start_turn(w)
    if case == "ExecuteOutput":
        w.deliver(w.agent.exit(uuid_of(w, "toolu_x"), 0, "x" * 30_000))
    interrupt(w)
    res = single_result(w, "toolu_x")
    output = _cut_output(res, budget)
    if case == "OversizedDiff":
        assert res.kind == "applied" and output.startswith('{"files":[{"diff":"+line\\n+line')
    else:
        assert res.kind == "completed" and res.exit_code == 0
        assert output.endswith("x" * 1000 + '","exit_code":0,"wall_duration_ms":0}')
    assert w.chat().status == chatd.WAITING


@pytest.mark.parametrize("rules", ["today", "contract"])
def test_g33_live_results_are_cut_to_the_same_budget(rules):
    """The "live results" of TestInterruptTask_ResultsTruncatedLikeLiveResults (chatloop
    executeSingleTool): a generation batch's result is cut to the same budget before its
    commit. Not part of the contract stack, so today cuts too."""
    w = new_world([(execute("toolu_x", "make test", "1h"),)], rules=rules, context_limit_tokens=1000)
    start_turn(w)
    w.deliver(w.agent.exit(w.agent.started[0], 0, "x" * 30_000))
    res = single_result(w, "toolu_x")
    assert res.kind == "completed" and res.exit_code == 0
    _cut_output(res, 16 << 10)


def test_g33_unknown_window_gets_the_default_budget():
    """chatloop TestToolResultByteBudget/Unknown at the task level: the budget follows the
    model: with an unknown window (0) the same 30 000-byte
    output fits the 64 KB default and stays the execute JSON; the megabyte diff is cut to
    64 KB."""
    w = new_world([(execute("toolu_x", "make test", "1h"),)])
    start_turn(w)
    w.deliver(w.agent.exit(w.agent.started[0], 0, "x" * 30_000))
    assert execute_result(single_result(w, "toolu_x"))["output"] == "x" * 30_000
    w = new_world([(edit("toolu_e"),)])
    w.agent.edit_diff = "+line\n" * 200_000
    start_turn(w)
    res = single_result(w, "toolu_e")
    assert res.kind == "applied" and 16 << 10 < len(_cut_output(res, 64 << 10).encode()) <= 64 << 10


# ---------------------------------------------------------------------------
# Groups 34, 35: file and execute calls in one interrupt
# ---------------------------------------------------------------------------


def test_g34_cancels_file_and_execute_calls_together():
    """TestInterruptTask_CancelsFileAndExecuteCallsTogether: a batch with every tool that
    sends tool call headers; one dial, a cancel each. The execute is canceled ("after
    2s"); the edit never reached the agent, so its cancel is recorded first and it is
    "not applied" (an error result); the applied write gives {"ok":true}."""
    x, e, wr = execute("toolu_exec", "make test", "2h"), edit("toolu_edit"), write("toolu_write")
    w = new_world([(x, e, wr)])
    w.agent.lost = {EDIT}  # still on the wire when the cancel arrives
    w.agent.hold_files = True
    start_turn(w)
    w.advance(2_000)
    m = interrupt(w)
    assert len(w.dials(after=m)) == 1 and len(w.cancels()) == 3
    assert "canceled by the user after 2s" in execute_result(single_result(w, "toolu_exec"))["error"]
    edit_res = single_result(w, "toolu_edit")
    assert edit_res.is_error and "not applied" in edit_res.content
    write_res = single_result(w, "toolu_write")
    assert not write_res.is_error and json.loads(write_res.content) == {"ok": True}
    assert w.agent.applied == [WRITE]
    assert uuid_of(w, "toolu_edit") in w.agent.canceled_markers  # a lagging edit is refused (US10)


@pytest.mark.parametrize("calls", [
    (edit("dup"), write("dup")),
    (edit("dup"), execute("dup", "make dev", background=True)),
], ids=["DuplicateIDEditAndWrite", "DuplicateIDEditAndBackgroundExecute"])
def test_g35_file_tool_calls_without_cancel(calls):
    """TestInterruptTask_FileToolCallsWithoutCancel: file calls sharing a provider ID with
    a call of another tool share one UUID and one result: no cancel, no dial, and every
    copy keeps the generic result."""
    w = new_world([calls])
    w.dial = None  # the generation's batch hangs on its dial, so the calls stay unresolved
    start_turn(w)
    m = interrupt(w)
    assert w.dials(after=m) == [] and w.cancels() == []
    got = results_of(w, "dup")
    assert len(got) == len(calls) and all(is_generic(r) for r in got)
    assert w.chat().status == chatd.WAITING


# ---------------------------------------------------------------------------
# Group 38: a stale attempt's write after a re-acquire
# ---------------------------------------------------------------------------


def _reacquired_while_generating(rules):
    """replica-1 runs attempt 1 of a generation; another worker acquires the chat; replica-1
    hears nothing (deaf, no sync, worker loops stalled) and its attempt writes when due."""
    w = new_world([(FG_2H,)], rules=rules, gen_time_ms=10_000)
    start_turn(w, until_batch=False)
    w.advance(3_000)
    assert w.chat().generation_attempt == 1
    w.deaf.add("replica-1")
    w.timers.pop(("replica-1", chatd.SYNC_PREFIX + CHAT))
    w.pause_heartbeats("replica-1")
    w.db, _ = chatd_db.tx_acquire(w.db, w.chat(), "other-w1", "other-w1/r9", w.db_now())
    before = w.db
    w.advance(10_000)
    return w, before


def test_g38_stale_attempt_write_after_reacquire_exits():
    """TestGenerationTask_RecordRetryStateStaleFenceExits: after beginGenerationAttempt
    another worker acquires the chat; the old runner's next write for that attempt is
    rejected by the owner fence: expected exit, no retry, the chat unchanged and owned by
    the other worker. recordGenerationRetry (LLM retries) is not modelled: the write is
    the attempt's own commit. With the owner fence planted away the same write lands."""
    w, before = _reacquired_while_generating("contract")
    fenced = w.notes("fenced_out", "replica-1")
    assert [(n.get("op"), n.get("outcome")) for n in fenced] == [("commit_step", "fenced:owner")]
    assert [n.get("why") for n in w.notes("task_exit", "replica-1")] == ["exit:fenced:owner"]
    assert not w.notes("task_retry") and w.db == before
    chat = w.chat()
    assert (chat.worker_id, chat.runner_id) == ("other-w1", "other-w1/r9")
    assert chat.generation_attempt == 1 and [m.role for m in chat.messages] == ["user"]
    bug, _ = _reacquired_while_generating(replace(chatd.CONTRACT, owner_fence=False))
    assert [m.role for m in bug.chat().messages] == ["user", "assistant"]


# ---------------------------------------------------------------------------
# Groups 39, 40: retry wrapper
# ---------------------------------------------------------------------------


def test_g39_retry_wrapper_panics_retry():
    """TestRetryWrapper_PanicsRetry: a task attempt that fails unexpectedly (Go: panics) is
    retried after the backoff, and the retry runs the task again. Pure handlers cannot
    panic, so the failure is handed to the retry wrapper (``_end_task``, runTaskWithRetry's
    body) directly; the attempt's calls are dropped, the retry resends the start and the
    agent replays it."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    rep = w.reps["replica-1"]
    runner = rep.runners[CHAT]
    ga = w.chat().generation_attempt
    rep, db, eff = chatd._end_task(rep, w.db, runner, runner.task, "retry:panic", [])
    w.reps["replica-1"], w.db = rep, db
    w.absorb("replica-1", eff)
    (retry,) = [e for e in eff if isinstance(e, Note) and e.kind == "task_retry"]
    assert retry.get("why") == "panic" and retry.get("backoff_ms") == 100
    assert any(isinstance(e, SetTimer) and e.name.endswith("/backoff") and e.after_ms == 100 for e in eff)
    assert rep.runners[CHAT].task.attempt is None
    w.advance(100)
    assert len(w.starts()) == 2 and w.chat().generation_attempt == ga + 1
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    (res,) = w.committed()
    assert res.get("attempt") == 2 and res.get("kind") == "completed" and len(w.agent.started) == 1


def test_g40_task_timeout_db_query_cancellation_retries():
    """TestRetryWrapper_TaskTimeoutDBQueryCancellationRetries: the 15-minute timeout ends an
    attempt while its database query fails (Go: the query returns context.Canceled, not
    the timeout cause); the failure still counts as the timeout and is retried, never an
    expected exit. The next attempt's query fails while the database is down (retried
    too); once it is back the task resends the same start and commits once."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    t_first = w.starts()[0][0]
    w.run(t_first + 15 * MIN - 1)
    w.db = chatd.db_set_up(w.db, False)
    w.run(t_first + 15 * MIN + 150)
    assert [n.get("why") for n in w.notes("task_retry")] == ["timeout", "db_down"]
    assert not w.notes("task_exit")
    w.db = chatd.db_set_up(w.db, True)
    w.advance(1_000)
    assert len(w.starts()) == 2 and len(w.agent.started) == 1
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    (res,) = w.committed()
    assert res.get("attempt") == 3 and res.get("kind") == "completed"


# ---------------------------------------------------------------------------
# Group 41: FinishInterruption and partial messages
# ---------------------------------------------------------------------------


def test_g41_finish_interruption_only():
    """TestInterruptTask_FinishInterruptionOnly: SendMessage(interrupt) while the model
    generates; the interrupt has nothing to cancel (no dial), FinishInterruption promotes
    the queued message and the chat is running again with it last. The "partial answer"
    assistant message Go commits from the buffer is not modelled (no buffer)."""
    w = new_world([(FG_2H,)], gen_time_ms=10_000)
    start_turn(w, until_batch=False)
    w.advance(3_000)
    w.user(partial(chatd.db_send_user_message, interrupt=True), CHAT, "interrupt")
    assert w.dials() == [] and w.committed() == []
    chat = w.chat()
    assert chat.status == chatd.RUNNING and chat.queue == ()
    assert [(m.role, m.text) for m in chat.messages] == [("user", "go"), ("user", "interrupt")]
    assert chat.messages[-1].created_at_ms == w.db_now()  # promoted by FinishInterruption now
    assert [n.get("status") for n in w.notes("interruption_finished")] == [chatd.RUNNING]


def test_g41_finish_interruption_only_after_a_resolved_batch():
    """TestInterruptTask_FinishInterruptionOnly, with a batch already committed in the turn:
    the interrupt re-reads the unresolved calls (3.2 step 4), finds none, sends nothing
    and commits no result for the resolved call; FinishInterruption alone -> waiting."""
    first = execute("toolu_done", "make build", "1h")
    w = new_world([(first,), (FG_2H,)], gen_time_ms=10_000)
    start_turn(w, until_batch=False)
    w.advance(10_000)
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    w.advance(3_000)  # the next generation is under way
    m = interrupt(w)
    assert w.dials(after=m) == [] and w.cancels() == []
    assert [r.kind for r in results_of(w, "toolu_done")] == ["completed"]
    chat = w.chat()
    assert chat.status == chatd.WAITING and [m.role for m in chat.messages] == ["user", "assistant", "tool"]
    (done,) = w.notes("interruption_finished")
    assert done.get("results") == 0


def test_g41_missing_episode_persists_nil_partials():
    """TestInterruptTask_MissingEpisodePersistsNilPartials: an interrupt run by an owner
    that never generated for the chat (no buffer episode, as after an ownership change)
    finishes the interruption with no partial messages: waiting, one message, no dial."""
    w = new_world([(FG_2H,)], replicas=("replica-1", "replica-2"), gen_time_ms=120_000)
    start_turn(w, until_batch=False)
    w.pause_heartbeats("replica-1")
    w.advance(70_000)
    assert w.chat().worker_id == w.reps["replica-2"].worker_id
    w.user(chatd.db_interrupt, CHAT)
    chat = w.chat()
    assert chat.status == chatd.WAITING and [m.role for m in chat.messages] == ["user"]
    assert w.dials() == [] and w.committed() == []
    (done,) = w.notes("interruption_finished", "replica-2")
    assert done.get("results") == 0


def test_g41_buffered_parts_become_partial_messages():
    """TestInterruptTask_BufferedPartsBecomePartialMessages (tool-call half): a call the
    model streamed but that was never committed is never run: no request for it reaches
    the agent, before or after the interrupt, and no tool result is committed. Go commits
    the streamed call as a partial assistant message with a generic error result; partial
    messages come from the buffer, which is not modelled."""
    w = new_world([(FG_2H, BG)], gen_time_ms=10_000)
    start_turn(w, until_batch=False)
    w.advance(5_000)
    interrupt(w)
    w.advance(60_000)
    assert w.requests() == [] and w.agent.started == []
    chat = w.chat()
    assert chat.status == chatd.WAITING and [m.role for m in chat.messages] == ["user"]
