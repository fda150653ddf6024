"""chatd's variants without ``if``: the planted-bug knobs of ``ChatdRules`` are read only by
its hooks (model/chatd/rules.py), each hook's default is the contract, and each bug is one
deviation in one hook. Also: the package keeps every name the rest of the repository
uses, and the status list is checked against the runner's task table.

The tests build their own chats and calls (no fake world), so they do not depend on the
in-test world of tests/test_chatd.py.
"""

from __future__ import annotations

import ast
import json
import pathlib
from dataclasses import fields, replace

import pytest

from toolcall_sim.model import chatd, chatd_db, chattool, planted_bugs
from toolcall_sim.model.core import FMap
from toolcall_sim.model.identity import MAX_MS

CHAT = "6f1c0b9e-2d4a-4c1e-9a57-0b8e2f6d3c11"
MODEL = pathlib.Path(chatd.__file__).resolve().parent.parent

# The planted-bug knobs: every field of ChatdRules that no real variant sets differently.
# ``bookkeeping`` is a design variant's (model/designs.py), read only through its own hooks.
REAL_DIFFERENCES = {"name", "send_identity", "interrupt_cancels", "tool_layer", "serial_tools", "timing",
                    "bookkeeping"}
BUG_KNOBS = {f.name for f in fields(chatd.ChatdRules)} - REAL_DIFFERENCES


def _call(pid: str, command: str, background: bool = False) -> chattool.ToolCall:
    args: dict = {"command": command, "timeout": "20m"}
    if background:
        args["run_in_background"] = True
    return chattool.ToolCall(pid, "execute", json.dumps(args))


def _chat_with_calls(calls, answered=()) -> chatd.Chat:
    """A chat whose last assistant message holds ``calls``; ``answered`` provider IDs
    already have a tool result after it."""
    msgs = [chatd.Message(1, "user", 0, text="go"), chatd.Message(2, "assistant", 1, tool_calls=tuple(calls))]
    msgs += [chatd.Message(3 + i, "tool", 2, provider_id=p, result=chattool.generic_result())
             for i, p in enumerate(answered)]
    return chatd.Chat(CHAT, chatd.INTERRUPTING, messages=tuple(msgs))


def test_bug_knobs_are_read_only_by_the_rules_hooks():
    """No module of chatd but rules.py reads a planted-bug knob (``rules.owner_fence`` and
    the like): the code that follows the contract never branches on a bug."""
    assert BUG_KNOBS == {"history_fence", "attempt_fence", "owner_fence", "attempt_timeout_stops_calls",
                         "interrupt_rereads_unresolved", "interrupt_commits_not_run",
                         "interrupt_spares_background"}
    sources = sorted((MODEL / "chatd").glob("*.py")) + [MODEL / "chatd_db.py"]
    readers = []
    for path in sources:
        if path.name == "rules.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in BUG_KNOBS:
                readers.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert readers == []


def test_every_chatd_planted_bug_changes_only_bug_knobs_or_interrupt_cancels():
    """A chatd planted bug is a set of hook knobs (``interrupt-without-cancel`` turns off
    the one real-variant switch, today's interrupt inside the contract)."""
    for bug in planted_bugs.PLANTED_BUGS:
        for knob, _ in bug.chatd:
            assert knob in BUG_KNOBS | {"interrupt_cancels"}, (bug.name, knob)


def test_contract_hooks_are_the_contract():
    """The hooks' defaults: the full fence table, chattool's cancel plans, no batch outlives
    its timeout, and the interrupt answers exactly the unresolved calls."""
    rules = chatd.CONTRACT
    for op, rule in chatd_db.FENCES.items():
        assert rules.fence_checks(op) == rule
    calls = (_call("toolu_fg", "sleep 1200"), _call("toolu_bg", "serve", background=True))
    picks = chattool.select_cancels(calls, rules.timing)
    assert rules.cancels_for(calls) == tuple((p.call, p.plan) for p in picks)
    assert chatd.TODAY.cancels_for(calls) == ()  # today's interrupt sends no cancel (3.3)
    att = chatd.Attempt("k", 1, "execute_local_tools", "calls")
    assert rules.batch_left_running(att, timed_out=True) is None
    chat = _chat_with_calls(calls, answered=("toolu_fg",))
    msg, unresolved = rules.interrupt_answers(chat, FMap())
    assert (msg.id, unresolved) == (2, calls[1:])


def test_each_bug_is_one_deviation_of_its_hook():
    """Each planted-bug knob changes what its hook answers, and only there."""
    contract = chatd.CONTRACT
    no_fences = replace(contract, owner_fence=False, history_fence=False, attempt_fence=False)
    assert no_fences.fence_checks("commit_step") == chatd_db.FenceRule(False, True, False, False)

    bg = _call("toolu_bg", "serve", background=True)
    (pick,) = chattool.select_cancels((bg,), contract.timing)
    assert contract.cancel_plan(pick.plan) == pick.plan
    stop_all = replace(contract, interrupt_spares_background=False)
    assert stop_all.cancel_plan(pick.plan).stop_run_age_ms == MAX_MS

    goes_on = replace(contract, attempt_timeout_stops_calls=False)
    batch = chatd.Attempt("k", 1, "execute_local_tools", "calls")
    assert goes_on.batch_left_running(batch, timed_out=True) is batch
    assert goes_on.batch_left_running(batch, timed_out=False) is None
    assert goes_on.batch_left_running(replace(batch, action="interrupt"), timed_out=True) is None

    calls = (_call("toolu_a", "a"), _call("toolu_b", "b"))
    chat = _chat_with_calls(calls, answered=("toolu_a",))
    again = replace(contract, interrupt_rereads_unresolved=False)
    assert again.interrupt_answers(chat, FMap())[1] == calls
    drops = replace(contract, interrupt_commits_not_run=False)
    for kind in ("not_run", "not_applied"):
        by_provider = FMap({"toolu_b": chattool.Result(kind, False, "{}")})
        assert drops.interrupt_answers(chat, by_provider)[1] == ()
        assert contract.interrupt_answers(chat, by_provider)[1] == calls[1:]
    canceled = FMap({"toolu_b": chattool.Result("canceled", False, "{}")})
    assert drops.interrupt_answers(chat, canceled)[1] == calls[1:]


def test_task_for_status_covers_every_status():
    """Runner rule 2: every chat status has an entry (a task, or None: not modelled), and
    the runnable statuses are statuses."""
    assert set(chatd.TASK_FOR_STATUS) == set(chatd_db.STATUSES)
    assert set(chatd_db.RUNNABLE) <= set(chatd_db.STATUSES)


@pytest.mark.parametrize("name", [
    "ChatdRules", "CONTRACT", "TODAY", "VARIANTS", "ReplicaState", "Runner", "Task", "Attempt", "Chat", "Db",
    "TaskFence", "check_fence", "db_empty", "db_new_chat", "db_send_user_message", "db_interrupt", "db_archive",
    "db_set_up", "replica_boot", "replica_crash", "replica_pause_heartbeats", "replica_on_timer",
    "replica_on_answer", "replica_on_publish", "awaits", "finish_generation_turn", "fit_to_context",
    "DEFAULT_GEN_TIME_MS", "SYNC_PREFIX", "TIMER_ACQUIRE", "TIMER_HEARTBEAT", "RUNNABLE", "RUNNING", "WAITING",
    "INTERRUPTING", "CHANNEL_OWNERSHIP", "OK", "DB_DOWN", "DONE", "EXIT", "RETRY", "PENDING", "_end_task",
])
def test_package_keeps_the_names_the_repository_uses(name):
    assert hasattr(chatd, name)
