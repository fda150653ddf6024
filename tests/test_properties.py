"""Every property on tiny hand-written traces: one where it holds and at least one where
it fails. A checker that cannot fire is caught here, by the suite, not by a reviewer.

Each trace is a few records of the shapes the world writes (model/system.py): ``truth``
records of the agent and of chatd's commits, ``note`` records, ``fault`` records. The
final state is a stub with what the properties read of it: chatd's timing and the
committed assistant messages of each chat.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from toolcall_sim.model import chatd, chattool, system
from toolcall_sim.model import properties as props
from toolcall_sim.model.identity import tool_call_uuid

CHAT = "11111111-1111-4111-8111-111111111111"
OTHER = "22222222-2222-4222-8222-222222222222"
MSG = 2
FG = chattool.ToolCall("toolu_01", "execute", '{"command":"make","timeout":"10s"}')
BG = chattool.ToolCall("toolu_02", "execute", '{"command":"serve","run_in_background":true}')
U = tool_call_uuid(CHAT, MSG, "toolu_01")
UB = tool_call_uuid(CHAT, MSG, "toolu_02")


def final(status: str = "waiting"):
    msg = SimpleNamespace(role="assistant", id=MSG, tool_calls=(FG, BG))
    chat = SimpleNamespace(status=status, messages=(msg,))
    return SimpleNamespace(config=system.WorldConfig(chatd_rules=chatd.CONTRACT), db=SimpleNamespace(chats={CHAT: chat}))


def r(t_ms: int, node: str, kind: str, **fields) -> dict:
    return {"t_ms": t_ms, "node": node, "clock_ms": t_ms, "kind": kind, **fields}


def start(t_ms, uuid=U, pid="p1", cause="replica-1-w1/t3/a1/c0:r1", inc=1, chat=CHAT, command="make"):
    return r(t_ms, "agent", "truth", truth="process_started", uuid=uuid, pid=pid, incarnation=inc, cause=cause,
             chat_id=chat, command=command)


def exited(t_ms, pid="p1", code=0, inc=1):
    return r(t_ms, "agent", "truth", truth="process_exited", pid=pid, incarnation=inc, exit_code=code)


def killed(t_ms, pid="p1", by="cancel", chat=CHAT, inc=1):
    return r(t_ms, "agent", "truth", truth="process_killed", pid=pid, incarnation=inc, by=by, cause_chat=chat)


def result(t_ms, kind, uuid=U, provider="toolu_01", replica="replica-1", task="generation", gen=1, code=None):
    return r(t_ms, replica, "truth", truth="result_committed", uuid=uuid, provider_id=provider, chat_id=CHAT,
             result_kind=kind, replica=replica, task=task, generation_attempt=gen, exit_code=code)


def note(t_ms, node, name, **fields):
    return r(t_ms, node, "note", note=name, **fields)


def unknown(t_ms, reason, uuid=U, provider="toolu_01"):
    return dict(result(t_ms, "unknown", uuid=uuid, provider=provider), reason=reason)


def sent(t_ms, route="start", tool_call="toolu_01"):
    return r(t_ms, "replica-1", "send", req=f"replica-1-w1/t3/a1/c0:r{t_ms}", route=route, tool_call=tool_call,
             dst="agent")


def down(t_ms, inc=1):
    return r(t_ms, "agent", "agent_down", why="restart", incarnation=inc)


def edited(t_ms, chat=CHAT):
    """A message edit that discarded the branch holding message ``MSG`` (chatd_db rule 9)."""
    return note(t_ms, "db", "message_edited", chat_id=chat, edited_message_id=MSG - 1, replacement_message_id=MSG + 1)


def resolved():
    """Both calls of the message have one committed result (the liveness properties)."""
    return [result(9_000, "background_started", uuid=UB, provider="toolu_02")]


# property -> (a trace where it holds, [traces where it fails])
CASES = {
    "at_most_once": (
        [start(100), exited(5_000)],
        [[start(100), start(200, pid="p2")]],
    ),
    "one_result": (
        [result(1_000, "completed")],
        [[result(1_000, "completed"), result(2_000, "unknown")]],
    ),
    "truthful_result": (
        [start(100), exited(5_000, code=0), result(6_000, "completed", code=0)],
        [[start(100), result(1_000, "not_run")],
         [start(100), exited(5_000, code=2), result(6_000, "completed", code=0)],
         [start(100), result(6_000, "canceled")]],
    ),
    "retry_changes_nothing": (
        [start(100), start(200, pid="p2")],  # twice, but from one attempt: at_most_once's business
        [[start(100), start(200, pid="p2", cause="replica-1-w1/t3/a2/c0:r1")]],
    ),
    "interrupt_stops_foreground": (
        [start(0), killed(4_000), result(5_000, "canceled", task="interrupt")],
        [[start(0), result(5_000, "interrupted_generic", task="interrupt")]],
    ),
    "background_survives": (
        [start(0), killed(4_000)],  # a foreground process below its 10 s timeout
        [[start(0), killed(20_000)],  # past its timeout
         [start(0, uuid=UB, command="serve"), killed(1_000)]],  # a background process
    ),
    "chat_isolation": (
        [start(0), killed(1_000, chat=CHAT)],
        [[start(0), killed(1_000, chat=OTHER)]],
    ),
    "canceled_before_received_never_runs": (
        # (a process the call started before an edit discarded it runs on: Q4)
        [start(0), note(1_000, "agent", "cancel_never_received", uuid=U), edited(1_500)],
        [[note(1_000, "agent", "cancel_never_received", uuid=U), start(2_000)],
         [result(1_000, "not_run", task="interrupt"), start(2_000)],
         [edited(1_000), start(2_000)]],  # a message edit discarded its branch, then it ran
    ),
    "unknown_only_when_unknowable": (
        # a start sent before the agent went down may have run there; an unreachable agent
        [sent(100), down(200), unknown(1_000, "agent_restarted"),
         unknown(2_000, "unreachable", uuid=UB, provider="toolu_02")],
        [[unknown(1_000, "not_found")],  # the agent answered "no such process" (first-attempt-only)
         [down(50), sent(100), unknown(1_000, "agent_restarted")],  # only the new agent got a request
         [sent(100, tool_call="toolu_02"), down(200), unknown(1_000, "agent_restarted")],  # another call's
         [sent(100, route="output"), down(200), unknown(1_000, "not_found")]],  # a read cannot act
    ),
    "fenced_commits": (
        [note(0, "replica-1", "acquired", chat_id=CHAT, worker_id="replica-1-w1"),
         note(1, "replica-1", "task_started", chat_id=CHAT, task="replica-1-w1/t2"),
         note(2, "replica-1", "batch_started", task="replica-1-w1/t2", generation_attempt=1),
         result(3_000, "completed", gen=1)],
        [[note(0, "replica-1", "acquired", chat_id=CHAT, worker_id="replica-1-w1"),
          note(10, "replica-2", "acquired", chat_id=CHAT, worker_id="replica-2-w1"),
          result(3_000, "completed", replica="replica-1")],
         # a replaced attempt: replica-1's attempt 1 commits after its attempt 2 began
         [note(0, "replica-1", "acquired", chat_id=CHAT, worker_id="replica-1-w1"),
          note(1, "replica-1", "task_started", chat_id=CHAT, task="replica-1-w1/t2"),
          note(2, "replica-1", "batch_started", task="replica-1-w1/t2", generation_attempt=1),
          note(900, "replica-1", "batch_started", task="replica-1-w1/t2", generation_attempt=2),
          result(3_000, "completed", gen=1)]],
    ),
    "one_result_eventually": (
        [result(1_000, "completed")] + resolved(),
        [resolved()],
    ),
    "interrupt_finishes": (
        [note(0, "db", "interrupt_requested", chat_id=CHAT), note(10_000, "replica-1", "interruption_finished", chat_id=CHAT)],
        [[note(0, "db", "interrupt_requested", chat_id=CHAT), note(200_000, "replica-1", "interruption_finished", chat_id=CHAT)],
         [note(0, "db", "interrupt_requested", chat_id=CHAT), note(200_000, "replica-1", "task_started", chat_id=CHAT, task="x")]],
    ),
    # sometimes-properties: "holds" is reached (no finding), "fails" is never reached
    "completes_after_ownership_change": (
        [r(0, "world", "fault", fault="ownership_change"), result(1_000, "completed")],
        [[result(1_000, "completed"), r(2_000, "world", "fault", fault="ownership_change")]],
    ),
    "retry_gets_recorded_start": (
        [note(0, "agent", "replayed", uuid=U)],
        [[start(0)]],
    ),
    "cancel_kills_foreground": (
        [start(0), killed(1_000)],
        [[start(0), killed(1_000, by="shutdown")]],
    ),
    "cancel_first_refuses_start": (
        [note(0, "agent", "refused", code="tool_call_canceled")],
        [[note(0, "agent", "refused", code="agent_started_after_tool_call")]],
    ),
}


def test_every_property_has_cases():
    assert set(CASES) == {p.name for p in props.PROPERTIES}


@pytest.mark.parametrize("prop", props.PROPERTIES, ids=lambda p: p.name)
def test_property_holds_and_fails(prop):
    """The property finds nothing in its holding trace and something in each failing one."""
    holds, fails = CASES[prop.name]
    assert prop.check(props.Evidence(holds, final())) == []
    for trace in fails:
        assert prop.check(props.Evidence(trace, final())) != [], trace


def test_violations_name_the_property_call_and_evidence():
    """A finding names its property, the tool call and the records that prove it."""
    (v,) = props.PROPERTIES[0].check(props.Evidence(CASES["at_most_once"][1][0], final()))
    assert (v.property, v.provider_id, v.uuid, v.evidence, v.at_ms) == ("at_most_once", "toolu_01", U, (0, 1), 200)


def test_eventually_waits_for_quiescence():
    """one_result_eventually is not judged while a chat is still runnable."""
    report = props.evaluate(resolved(), final(status="running"))
    assert "one_result_eventually" not in {v.property for v in report.violations}
    report = props.evaluate(resolved(), final())
    assert "one_result_eventually" in {v.property for v in report.violations}


def test_a_call_an_edit_discarded_is_owed_no_result():
    """one_result_eventually holds for calls whose branch a message edit discarded (Q4:
    nothing answers them); another chat's edit discards nothing here."""
    check = next(p for p in props.PROPERTIES if p.name == "one_result_eventually").check
    assert check(props.Evidence([edited(500)], final())) == []
    assert len(check(props.Evidence([edited(500, chat=OTHER)], final()))) == 2


def test_an_edit_ends_an_interruption():
    """interrupt_finishes: an edit while interrupting is the interrupt's end (I -> R0)."""
    check = next(p for p in props.PROPERTIES if p.name == "interrupt_finishes").check
    asked = note(0, "db", "interrupt_requested", chat_id=CHAT)
    task = note(10, "replica-1", "task_started", chat_id=CHAT, task="x", result_kind="interrupt")
    assert check(props.Evidence([asked, task, edited(5_000), r(200_000, "world", "tick")], final())) == []
    assert check(props.Evidence([asked, task, edited(5_000, chat=OTHER), r(200_000, "world", "tick")], final()))


def test_fenced_commits_names_the_replaced_attempt():
    fenced = next(p for p in props.PROPERTIES if p.name == "fenced_commits")
    (v,) = fenced.check(props.Evidence(CASES["fenced_commits"][1][1], final()))
    assert "generation attempt 1 committed after replica-1 began attempt 2" in v.detail
    assert v.evidence == (2, 3, 4)


def test_commit_without_attempt_fence_is_caught_by_fenced_commits_alone():
    """The planted bug makes a replaced attempt commit: fenced_commits, and no other
    property, reports it. With the attempt fence kept, the same goings-on of the
    timed-out attempt are refused at its commit (fenced:attempt), and nothing is found."""
    import pathlib
    from dataclasses import replace

    from toolcall_sim.model import planted_bugs
    from toolcall_sim.world.run import build, run_scenario
    from toolcall_sim.world.scenario import load
    from toolcall_sim.world.simulation import Simulation

    scenario = load(pathlib.Path(__file__).resolve().parent.parent / "scenarios" / "bug_stale_attempt_commit.toml")
    bug = run_scenario(scenario, "contract+commit-without-attempt-fence")
    assert {v.property for v in bug.violations} == {"fenced_commits"}
    config, options = build(scenario, "contract")
    config = replace(config, chatd_rules=replace(config.chatd_rules, attempt_timeout_stops_calls=False))
    world = Simulation(config, scenario.seed, options)
    world.run(scenario.until_ms)
    outcomes = [r.get("outcome") for r in world.trace if r.get("note") == "timed_out_attempt_committed"]
    assert outcomes == ["exit:fenced:attempt"]
    assert props.evaluate(world.trace, world.system).violations == []
    assert "fenced_commits" == planted_bugs.by_name()["commit-without-attempt-fence"].caught_by


def test_unknown_only_when_unknowable_classifies_the_contracts_false_unknown():
    """An agent_started_after_tool_call unknown for a call no gone agent can have received
    is the contract's documented false unknown (design section 7), reported once (not
    again as informational); a lookup's not_found is a new finding."""
    report = props.evaluate([down(50), sent(100), unknown(1_000, "agent_restarted")] + resolved(), final())
    (v,) = [v for v in report.violations if v.property == "unknown_only_when_unknowable"]
    assert v.residual_risk == "false_unknown_after_agent_start"
    assert report.informational == []
    report = props.evaluate([unknown(1_000, "not_found")] + resolved(), final())
    (v,) = [v for v in report.violations if v.property == "unknown_only_when_unknowable"]
    assert v.residual_risk is None and "it never ran" in v.detail


@pytest.mark.parametrize("cls", [props.CallInfo, props.Violation])
def test_the_evidence_records_init_is_the_dataclass_one(cls):
    """``CallInfo`` and ``Violation`` write their ``__init__`` out (model/properties/
    evidence.py): it takes the fields in order with their defaults and fills every one,
    so a field added without its parameter fails here; they stay frozen and
    ``dataclasses.replace`` still works (``classify``)."""
    import dataclasses
    import inspect

    fields = dataclasses.fields(cls)
    signature = inspect.signature(cls.__init__).parameters
    assert list(signature)[1:] == [f.name for f in fields]
    assert all(signature[f.name].default == (inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
               for f in fields)
    values = [f"v{i}" for i in range(len(fields))]
    record = cls(*values)
    assert record.__dict__ == dict(zip([f.name for f in fields], values)) and record == cls(*values)
    assert dataclasses.replace(record, uuid="other").uuid == "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.uuid = "other"


WR = chattool.ToolCall("toolu_03", "write_file", '{"path":"/notes.txt","content":"hi"}')
UW = tool_call_uuid(CHAT, MSG, "toolu_03")


def write_final():
    msg = SimpleNamespace(role="assistant", id=MSG, tool_calls=(WR,))
    chat = SimpleNamespace(status="waiting", messages=(msg,))
    return SimpleNamespace(config=system.WorldConfig(chatd_rules=chatd.CONTRACT), db=SimpleNamespace(chats={CHAT: chat}))


def _workspace(t_ms, state, was="running"):
    return r(t_ms, "world", "workspace", state=state, was=was)


def _failed_write(*moves, applied=True):
    """A write applied at 0.1 s (or not), the workspace's moves, and a failed result at 1 s."""
    edit = [r(100, "agent", "truth", truth="edit_applied", uuid=UW, path="/notes.txt", tool="write_file",
              cause_chat=CHAT)] if applied else []
    return sorted([*edit, *moves, result(1_000, "failed", uuid=UW, provider="toolu_03")], key=lambda x: x["t_ms"])


# (trace, whether truthful_result flags it), for a chat whose message holds one write
# (``write_final``); tests/test_monitor.py samples them too.
FAILED_WRITE_CASES = [
    (_failed_write(), True),  # the write is on the running workspace's disk
    (_failed_write(_workspace(500, "stopped")), True),  # a stopped workspace keeps its disk (C5.6)
    (_failed_write(_workspace(500, "deleted")), False),  # a deleted one does not: the plain error is true
    (_failed_write(_workspace(500, "stopped"), _workspace(600, "deleted", "stopped")), False),
    (_failed_write(_workspace(2_000, "deleted")), True),  # deleted only after the commit
    (_failed_write(_workspace(500, "stopped"), applied=False), False),  # nothing changed: true on any disk
]


@pytest.mark.parametrize("trace,flagged", FAILED_WRITE_CASES)
def test_truthful_result_flags_a_failed_file_result_whose_change_is_on_the_disk(trace, flagged):
    """Issue 34 (US3, docs/contract.md C5.6): a ``failed`` edit or write result whose
    change was applied and is still on the workspace's disk says the change did not
    happen; today commits it when a retry meets a stopped workspace. After the workspace
    (and its disk) was deleted, the plain error is true."""
    truthful = next(p for p in props.PROPERTIES if p.name == "truthful_result").check
    found = truthful(props.Evidence(trace, write_final()))
    assert bool(found) == flagged, found
