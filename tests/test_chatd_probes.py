"""The chatd side's rule coverage probes (issue 35): small hand-built steps of the tool
layer (model/chattool/), the database (model/chatd_db.py) and the task layer
(model/chatd/) emit the probe of the branch they take, and only it. The shipped scenarios
reach most of them (``toolcall-sim coverage --scenarios``); the branches no world takes
(model/probes.py ``UNREACHABLE``: an undecodable answer, a JSON error without a message,
an archived chat) are checked here."""

from __future__ import annotations

import json

import pytest

from toolcall_sim.model import chatd, chattool as ct, probes
from toolcall_sim.model.chatd import interrupt as chatd_interrupt
from toolcall_sim.model.chatd import tasks
from toolcall_sim.model.chattool import results
from toolcall_sim.model.core import FMap, Probe, Response, Send, SetTimer, TransportError, json_body
from toolcall_sim.model.identity import RUN_AGE_MS_HEADER, STALE_TOOL_CALL, tool_call_error

CHAT = "11111111-1111-4111-8111-111111111111"
MSG = 42
MIN = 60_000


def probes_of(effects) -> list[str]:
    return [e.rule for e in effects if isinstance(e, Probe)]


def identity(provider_id: str = "call_1", age_ms: int = 0) -> ct.Identity:
    return ct.Identity(CHAT, MSG, provider_id, ct.ToolCallAge(age_ms, 0))


def execute(args: dict, provider_id: str = "call_1") -> ct.ToolCall:
    return ct.ToolCall(provider_id, "execute", json.dumps(args))


def write(provider_id: str = "call_w") -> ct.ToolCall:
    return ct.ToolCall(provider_id, "write_file", json.dumps({"path": "/a.txt", "content": "x"}))


def begin(call: ct.ToolCall, ident: ct.Identity | None = None, send_identity: bool = True):
    cs, effects = ct.begin_call(call, ident, "replica-1", "p", CHAT, 0, send_identity)
    return cs, effects, next(e.request for e in effects if isinstance(e, Send))


# -- the tool layer: execute (C4.2, C4.3, C4.6), the classifier (C5.1), rows (C5.2) ----

def test_a_start_says_whether_it_carried_the_headers():
    assert "C4.2.start-with-headers" in probes_of(begin(execute({"command": "ls"}), identity())[1])
    assert "C4.2.start-without-headers" in probes_of(begin(execute({"command": "ls"}), None)[1])
    # A chatd that knows the identity but sends no headers (a mixed rollout) sends none.
    assert "C4.2.start-without-headers" in probes_of(begin(execute({"command": "ls"}), identity(), False)[1])


def test_the_start_answer_picks_the_deadline_branch():
    ident = identity()
    call = execute({"command": "make", "timeout": "1m"})
    # A new agent whose run is younger than the timeout: wait the rest (C4.3).
    cs, _, req = begin(call, ident)
    answer = Response(req.req_id, 200, "application/json", json_body({"id": ident.uuid}),
                      ((RUN_AGE_MS_HEADER, "20000"),))
    assert probes_of(ct.on_answer(cs, answer, 10)[1]) == ["C4.3.budget-left"]
    # Its run already as old as the timeout: one snapshot at once.
    cs, _, req = begin(call, ident)
    answer = Response(req.req_id, 200, "application/json", json_body({"id": ident.uuid}),
                      ((RUN_AGE_MS_HEADER, str(MIN)),))
    assert probes_of(ct.on_answer(cs, answer, 10)[1]) == ["C4.3.budget-spent"]
    # Another process ID: an old agent, the legacy wait (C4.6).
    cs, _, req = begin(call, ident)
    answer = Response(req.req_id, 200, "application/json", json_body({"id": "proc-1"}))
    assert probes_of(ct.on_answer(cs, answer, 10)[1]) == ["C4.6.legacy-wait"]
    # A background start is answered with its result (C4.2) and that row of C5.2.
    cs, _, req = begin(execute({"command": "dev", "run_in_background": True}), ident)
    answer = Response(req.req_id, 200, "application/json", json_body({"id": ident.uuid}))
    assert probes_of(ct.on_answer(cs, answer, 10)[1]) == ["C4.2.background-answered", "C5.2.background-started"]



def test_a_tool_name_read_at_run_time_takes_the_row_of_its_table():
    """The tool name comes from the chat's messages (a scenario's TOML), not from a literal
    in the code: a name built at run time takes the same row of C5.2, C5.3 and C5.4."""
    ident = identity()
    tool = "".join(["exe", "cute"])
    cs, _, req = begin(ct.ToolCall("call_1", tool, json.dumps({"command": "dev", "run_in_background": True})), ident)
    answer = Response(req.req_id, 200, "application/json", json_body({"id": ident.uuid}))
    assert "C5.2.background-started" in probes_of(ct.on_answer(cs, answer, 10)[1])
    call = ct.ToolCall("call_1", tool, json.dumps({"command": "make", "timeout": "10m"}))
    cs, req = _cancel(call, ct.interrupted_call(call))
    answer = Response(req.req_id, 200, "application/json", json_body({"started": False}))
    assert probes_of(ct.on_answer(cs, answer, 5)[1]) == ["C5.3.not-run"]
    edit_args = {"files": [{"path": "/a.txt", "edits": [{"search": "a", "replace": "b"}]}]}
    for name, args in (("".join(["edit", "_files"]), edit_args),
                       ("".join(["write", "_file"]), {"path": "/a.txt", "content": "x"})):
        cs, effects = ct.begin_call(ct.ToolCall("call_f", name, json.dumps(args)), identity("call_f"), "replica-1", "p",
                                    CHAT, 0)
        timer = next(e.name for e in effects if isinstance(e, SetTimer))
        assert probes_of(ct.on_timer(cs, timer, MIN)[1])[-1] == "C5.4.unknown", name

def test_each_class_of_a_failed_start_is_probed_with_its_result_row():
    ident = identity()
    call = execute({"command": "make", "timeout": "1h"})

    def failed(answer_for):
        cs, _, req = begin(call, ident)
        return probes_of(ct.on_answer(cs, answer_for(req), 10)[1])

    # A 2xx answer without the field chatd needs: Unreadable (no world sends one).
    assert failed(lambda r: Response(r.req_id, 200, "application/json", b"{}")) == \
        ["C5.1.unreadable", "C5.2.unknown"]
    # A coded 409: Refused (a stale refusal has no mapping: the legacy failed text).
    assert failed(lambda r: Response(r.req_id, 409, "application/json", tool_call_error(STALE_TOOL_CALL).body())) \
        == ["C5.1.refused", "C5.2.failed"]
    # An HTTP error answer with a JSON message, and the SDK's texts for the others (C5.5).
    assert failed(lambda r: Response(r.req_id, 500, "application/json", json_body({"message": "boom"}))) == \
        ["C5.5.json-message", "C5.1.response", "C5.2.failed"]
    assert failed(lambda r: Response(r.req_id, 500, "application/json", json_body({"detail": "x"}))) == \
        ["C5.5.json-without-message", "C5.1.response", "C5.2.failed"]
    assert failed(lambda r: Response(r.req_id, 404, "text/plain", b"404 page not found")) == \
        ["C5.5.not-json", "C5.1.response", "C5.2.failed"]
    # A media type that sorts before JSON's, or none at all (a proxy's bare 502), is not JSON either.
    for media_type in ("", "application/gzip"):
        assert failed(lambda r: Response(r.req_id, 502, media_type, b"bad gateway")) == \
            ["C5.5.not-json", "C5.1.response", "C5.2.failed"], media_type
    # A transport failure: Unreachable, an unknown outcome with the UUID to check.
    assert failed(lambda r: TransportError(r.req_id, "connection refused")) == ["C5.1.unreachable", "C5.2.unknown"]


def test_the_answer_timer_is_probed_per_request_kind():
    cs, effects, _ = begin(execute({"command": "dev", "run_in_background": True}), identity())
    timer = next(e.name for e in effects if isinstance(e, SetTimer))
    assert probes_of(ct.on_timer(cs, timer, MIN)[1]) == ["C4.5.start", "C5.1.no-answer", "C5.2.unknown"]
    cs, effects, _ = begin(write(), identity("call_w"))
    timer = next(e.name for e in effects if isinstance(e, SetTimer))
    assert probes_of(ct.on_timer(cs, timer, MIN)[1]) == ["C4.5.file", "C5.1.no-answer", "C5.4.unknown"]


def test_the_wait_deadline_and_a_capped_read():
    ident = identity()
    cs, _, req = begin(execute({"command": "make", "timeout": "10m"}), ident)
    cs, effects = ct.on_answer(cs, Response(req.req_id, 200, "application/json", json_body({"id": ident.uuid}),
                                            ((RUN_AGE_MS_HEADER, "0"),)), 0)
    read = next(e.request for e in effects if isinstance(e, Send))
    # The agent capped the read and time is left: read again (C4.3).
    capped = Response(read.req_id, 200, "application/json", json_body({"running": True}))
    cs, effects = ct.on_answer(cs, capped, 5 * MIN)
    assert probes_of(effects) == ["C4.3.read-again"]
    # The wait deadline fires: one snapshot.
    assert probes_of(ct.on_timer(cs, cs.deadline_timer, 10 * MIN)[1]) == ["C4.3.deadline-fired"]


# -- the interrupt's cancels (C3.2, C3.7, C4.6, C5.3, C5.4) ------------------------------

def _cancel(call, plan):
    cs, effects = ct.begin_cancel(call, plan, identity(call.provider_id), "replica-1", "p", CHAT, 0)
    return cs, next(e.request for e in effects if isinstance(e, Send))


def test_cancel_answers_are_probed_by_their_row():
    call = execute({"command": "make", "timeout": "10m"})
    plan = ct.interrupted_call(call)
    cs, req = _cancel(call, plan)
    answer = Response(req.req_id, 200, "application/json", json_body({"started": False}))
    assert probes_of(ct.on_answer(cs, answer, 5)[1]) == ["C5.3.not-run"]
    cs, req = _cancel(call, plan)
    # An old agent has no cancel route: its 404 keeps the generic result (C4.6).
    answer = Response(req.req_id, 404, "text/plain", b"404 page not found")
    assert probes_of(ct.on_answer(cs, answer, 5)[1]) == \
        ["C5.5.not-json", "C5.1.response", "C4.6.cancel-http-error", "C5.3.generic"]
    wcall = write()
    cs, req = _cancel(wcall, ct.interrupted_call(wcall))
    answer = Response(req.req_id, 200, "application/json", json_body({"started": False}))
    assert probes_of(ct.on_answer(cs, answer, 5)[1]) == ["C5.4.not-applied"]


@pytest.mark.parametrize("tool", ["execute", "write_file"])
def test_only_an_http_error_answer_to_a_cancel_is_probed_as_one(tool):
    """C4.6: a cancel that got an HTTP error answer (an old agent's 404) keeps the generic
    result and says so; a cancel refused as stale (409) keeps it too, but that is the
    agent's refusal, not an HTTP error, and is not probed as one. Both tool families."""
    call = execute({"command": "make", "timeout": "10m"}) if tool == "execute" else write()
    plan = ct.interrupted_call(call)
    cs, req = _cancel(call, plan)
    got = probes_of(ct.on_answer(cs, Response(req.req_id, 404, "text/plain", b"404 page not found"), 5)[1])
    assert "C4.6.cancel-http-error" in got
    cs, req = _cancel(call, plan)
    refused = Response(req.req_id, 409, "application/json", tool_call_error(STALE_TOOL_CALL).body())
    cs, effects = ct.on_answer(cs, refused, 5)
    assert "C4.6.cancel-http-error" not in probes_of(effects) and cs.result is not None


def test_the_selection_probes_each_call_and_each_shared_provider_id():
    fg = execute({"command": "make", "timeout": "10m"}, "a")
    bg = execute({"command": "dev", "run_in_background": True}, "b")
    other = ct.ToolCall("c", "read_file", "{}")
    copy1 = execute({"command": "x", "timeout": "1m"}, "d")
    copy2 = execute({"command": "x", "timeout": "2m"}, "d")  # another stop age: no cancel for "d"
    same1, same2 = execute({"command": "y"}, "e"), execute({"command": "y"}, "e")
    calls = (fg, bg, other, copy1, copy2, same1, same2)
    targets = chatd.CONTRACT.cancels_for(calls)
    got = probes_of(chatd_interrupt._selection_probes(True, calls, targets))
    assert got == ["C3.2.cancel-foreground", "C3.2.cancel-background", "C3.2.no-cancel", "C3.2.no-cancel",
                   "C3.2.no-cancel", "C3.2.cancel-foreground", "C3.2.cancel-foreground",
                   "C3.7.no-cancel", "C3.7.one-cancel"]
    # today selects nothing: no probe of a selection it never makes.
    assert chatd_interrupt._selection_probes(False, calls, ()) == []


# -- the database (C2.2, C3.1, C3.3, C3.6) ---------------------------------------------

def _chat(status_after_first_message: bool = True):
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [[]], 1_000, 0)
    if status_after_first_message:
        db, _ = chatd.db_send_user_message(db, CHAT, "go", 0)
    return db


def test_interrupt_requested_or_refused():
    db = _chat()
    db, effects = chatd.db_interrupt(db, CHAT, 1)
    assert probes_of(effects)[0] == "C3.1.requested"
    # The chat is interrupting now: a second interrupt is refused.
    assert probes_of(chatd.db_interrupt(db, CHAT, 2)[1]) == ["C3.1.refused-not-running"]


def test_an_unowned_runnable_chat_hints_ownership():
    _, effects = chatd.db_send_user_message(_chat(False), CHAT, "go", 0)
    assert probes_of(effects) == ["C2.2.hint-unowned"]


def test_edit_branches():
    assert probes_of(chatd.db_edit_message(_chat(False), CHAT, 1)[1]) == ["C3.6.refused-no-message"]
    db, _ = chatd.db_archive(_chat(), CHAT, 1)
    assert probes_of(chatd.db_edit_message(db, CHAT, 2)[1]) == ["C3.6.refused-archived"]
    db = _chat()
    assert "C3.6.discards-no-calls" in probes_of(chatd.db_edit_message(db, CHAT, 1)[1])
    db, _ = chatd.db_interrupt(db, CHAT, 1)
    assert probes_of(chatd.db_edit_message(db, CHAT, 2)[1])[:2] == ["C3.6.ends-interruption",
                                                                   "C3.6.discards-no-calls"]


def test_what_an_interrupt_commits_per_call():
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [[]], 1_000, 0)
    db, _ = chatd.db_send_user_message(db, CHAT, "go", 0)
    chat = db.chats.get(CHAT)
    calls = (execute({"command": "a"}, "a"), execute({"command": "b"}, "b"))
    db, _ = chatd.tx_commit_assistant(db, chat, calls, 1)
    chat = db.chats.get(CHAT)
    answered = {"a": ct.Result("canceled", False, "{}")}
    _, effects = chatd.tx_finish_interruption(db, chat, FMap(answered.items()), ct.generic_result(), 2, "r", 1)
    assert probes_of(effects)[:2] == ["C3.3.cancel-result", "C3.3.generic"]
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [[]], 1_000, 0)
    _, effects = chatd.tx_finish_interruption(db, db.chats.get(CHAT), FMap(), ct.generic_result(), 2, "r", 1)
    assert probes_of(effects)[0] == "C3.3.nothing-open"


# -- the tables: every row's probe is declared, every branch of C2.4 has one -----------

@pytest.mark.parametrize("tool,kinds", [("execute", ct.EXECUTE_KINDS), ("edit_files", ct.FILE_KINDS),
                                        ("write_file", ct.FILE_KINDS)])
def test_every_result_row_probe_is_declared(tool, kinds):
    for on_interrupt in (False, True):
        for kind in kinds:
            row = results.result_row_probe(tool, on_interrupt, kind)
            if row is not None:
                assert row.rule in probes.PROBES
                assert probes.rule_of(row.rule) in ("C5.2", "C5.3", "C5.4")
    assert results.result_row_probe("read_file", False, "completed") is None


def test_every_fence_outcome_has_its_probe():
    from toolcall_sim.model import chatd_db
    from toolcall_sim.model.chatd.state import Task
    task = Task("w/t1", "generation", CHAT, chatd.TaskFence("w", "r", chatd.RUNNING, 1))
    for outcome, pid in [(chatd_db.FENCED_OWNER, "C2.4.fenced-owner"), (chatd_db.FENCED_STATUS, "C2.4.fenced-status"),
                         (chatd_db.FENCED_HISTORY, "C2.4.fenced-history"),
                         (chatd_db.FENCED_ATTEMPT, "C2.4.fenced-attempt"),
                         (chatd_db.FENCED_NO_CHAT, "C2.4.fenced-no-chat"), (chatd.DB_DOWN, "C2.4.db-down")]:
        _, effects = tasks._failed(outcome, "commit_step", task, None)
        assert probes_of(effects) == [pid]


# -- the scenarios written for these branches reach them -------------------------------

# scenario -> variant -> probes its run must reach (the branch each was written for).
SCENARIO_PROBES = {
    "fence_status_interrupt_during_commit": {
        "today": {"C2.4.fenced-status", "C3.3.generic"},
        "contract": {"C2.4.fenced-status", "C3.3.cancel-result", "C5.3.completed"},
    },
    "fence_history_edit_during_commit": {
        "today": {"C2.4.fenced-history", "C3.6.discards-calls", "C3.1.refused-not-running"},
        "contract": {"C2.4.fenced-history", "C3.6.discards-calls", "C3.1.refused-not-running"},
    },
    "edit_while_interrupting": {
        "today": {"C3.6.ends-interruption"},
        "contract": {"C3.6.ends-interruption", "C3.2.ended-uncommitted", "C3.5.late-answer-ignored"},
    },
    "edit_before_calls": {
        "today": {"C3.6.refused-no-message", "C3.6.discards-no-calls"},
        "contract": {"C3.6.refused-no-message", "C3.6.discards-no-calls"},
    },
    "lost_write_answer": {
        "today": {"C4.4.retry-without-identity", "C5.4.applied"},
        "contract": {"C4.5.file", "C5.1.no-answer", "C5.4.unknown"},
    },
    "interrupt_before_write_arrives": {
        "today": {"C3.2.no-dial", "C3.3.generic"},
        "contract": {"C3.2.cancel-file", "C5.4.not-applied"},
    },
    "interrupt_after_start_panicked": {
        "today": {"C5.1.response", "C3.3.generic"},
        "contract": {"C5.3.failed", "C5.3.canceled"},
    },
    "db_outage_outlives_lease": {
        "today": {"C2.1.reclaim-own", "C2.2.expire", "C2.1.db-down", "C2.2.db-down"},
        "contract": {"C2.1.reclaim-own", "C2.2.expire", "C2.1.db-down", "C2.2.db-down"},
    },
}


@pytest.mark.parametrize("name", sorted(SCENARIO_PROBES))
def test_each_scenario_reaches_the_branches_it_was_written_for(name):
    from toolcall_sim.world.inputs import SCENARIO_DIR
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import load

    scenario = load(SCENARIO_DIR / f"{name}.toml")
    for variant, wanted in SCENARIO_PROBES[name].items():
        reached = set(run_scenario(scenario, variant).world.probes)
        assert wanted <= reached, (variant, sorted(wanted - reached))
