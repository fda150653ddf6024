"""The tool batch after its dial (model/chatd/batch.py) and the replica's names
(model/chatd/state.py), each as the contract states it:

- a dial is a connection only when answered 200; the answers that say where the workspace
  is (no agent 404, deleted 410, no workspace 424) give each call the result C5.6 states,
  every other answer is an unreachable agent, and each says so in its probes (C4.2 step 1
  in generation, C3.2 on interrupt);
- a later attempt of a task begins its calls again and says whether it carries the
  identity (C4.4); a first attempt or an interrupt is no such retry;
- serial calls wait for each other, never the parallel ones (C1.3 step 3), and a serial call
  begun later carries what the design planned for it like the others;
- names route back to their own task only (rule 7 of model/chatd), and a replica's IDs read
  as the reports document them (worker, runner, task).

The worlds are tests/test_chatd.py's; ``ProbeWorld`` also keeps each step's probes.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest

from toolcall_sim.model import chatd, chattool as ct
from toolcall_sim.model.chatd.designs import IncarnationTokens
from toolcall_sim.model.chatd.state import Attempt, ReplicaState, Runner, Task, _call_index, _find_task
from toolcall_sim.model.core import EMPTY, Response
from toolcall_sim.model.identity import AGENT_INCARNATION_HEADER, parse_tool_call_headers

from test_chatd import CHAT, FG_2H, FG_20M, MIN, World, execute, start_turn, uuid_of
from test_chatd_retry_edges import FENCE, RUNNER, WORKER, _probes

WRITE = ct.ToolCall("toolu_w", ct.WRITE_FILE, '{"path":"/a.txt","content":"x"}')


class ProbeWorld(World):
    """tests/test_chatd.py's world that also keeps the probe IDs of every step, in order."""

    def _log(self, step, node, before):
        self.__dict__.setdefault("probes", []).extend(step.probes)
        super()._log(step, node, before)


def probe_world(turns, rules="contract") -> ProbeWorld:
    w = ProbeWorld(rules)
    w.user(partial(chatd.db_new_chat), CHAT, turns, 2_000)
    return w


def _tool_results(w: World) -> list:
    return [m.result for m in w.chat().messages if m.role == "tool"]


# ---------------------------------------------------------------------------
# The dial's answer (C4.2 step 1, C5.6)
# ---------------------------------------------------------------------------

# status -> the dial error it proves (C5.6), None: the agent could not be reached
WORKSPACE_STATES = {404: ct.DIAL_NO_AGENT, 410: ct.DIAL_DELETED, 424: ct.DIAL_NO_WORKSPACE}


@pytest.mark.parametrize("status, tool, kind, workspace_probe, row_probe", [
    # a stopped workspace has no agent: no process survives it, but the disk does (C5.6)
    (404, "execute", "failed", "C5.6.no-agent-execute", "C5.2.failed"),
    (404, "write_file", "unknown", "C5.6.no-agent-file", "C5.4.unknown"),
    # no workspace, or a deleted one: nothing can have survived, the plain error
    (410, "execute", "failed", "C5.6.deleted", "C5.2.failed"),
    (410, "write_file", "failed", "C5.6.deleted", "C5.4.failed"),
    (424, "execute", "failed", "C5.6.no-workspace", "C5.2.failed"),
    (424, "write_file", "failed", "C5.6.no-workspace", "C5.4.failed"),
])
def test_a_dial_answer_that_names_the_workspace_state_gives_its_result(status, tool, kind, workspace_probe,
                                                                        row_probe):
    """C5.6: no agent (404), a deleted workspace (410) and no workspace (424) end each call
    of the batch without a request, with the result that state allows (C4.2 step 1)."""
    w = probe_world([(FG_20M if tool == "execute" else WRITE,)])
    w.dial = status
    start_turn(w)
    (res,) = _tool_results(w)
    assert res.kind == kind
    assert ct.DIAL_ERROR_TEXTS[WORKSPACE_STATES[status]] in res.content
    assert w.starts() == [] and w.requests("/write-file") == []
    assert [p for p in w.probes if p[:4] in ("C4.2", "C5.6", "C5.2", "C5.4")] == \
        ["C4.2.dial-failed", workspace_probe, row_probe]


@pytest.mark.parametrize("status", [101, 199, 409, 411, 423, 425, 500, "transport"])
@pytest.mark.parametrize("call", [FG_20M, WRITE], ids=["execute", "write_file"])
def test_any_other_dial_answer_is_an_unreachable_agent(status, call):
    """Only a 200 is a connection, and only 404, 410 and 424 say where the workspace is:
    any other answer (a neighbouring status too) leaves an earlier attempt's effect
    possible, so each call's outcome is unknown (C4.2 step 1, C5.2, C5.4), no workspace
    state is claimed, and nothing is sent."""
    w = probe_world([(call,)])
    w.dial = status
    start_turn(w)
    (res,) = _tool_results(w)
    assert res.kind == "unknown"
    assert not any(ct.DIAL_ERROR_TEXTS[state] in res.content for state in WORKSPACE_STATES.values())
    assert w.starts() == [] and w.requests("/write-file") == []
    row = "C5.2.unknown" if call.tool == "execute" else "C5.4.unknown"
    assert [p for p in w.probes if p[:4] in ("C4.2", "C5.6", "C5.2", "C5.4")] == ["C4.2.dial-failed", row]


def test_an_interrupts_failed_dial_is_probed_as_the_interrupts():
    """C3.2: the interrupt's own dial fails (no workspace): its cancels are never sent, the
    call gets the generic result (C5.3: no process outlives a missing workspace), and the
    probes say the interrupt's dial failed, not a generation's."""
    w = probe_world([(FG_2H,)])
    start_turn(w)
    w.dial = 424
    mark = len(w.probes)
    w.user(chatd.db_interrupt, CHAT)
    assert w.cancels() == []
    (res,) = _tool_results(w)
    assert res.kind == "interrupted_generic"
    got = w.probes[mark:]
    assert "C3.2.dial-failed" in got and "C5.6.no-workspace" in got
    assert "C4.2.dial-failed" not in got


# ---------------------------------------------------------------------------
# A later attempt begins the calls again (C4.4)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rules, retry_probe", [("contract", "C4.4.retry-same-identity"),
                                                ("today", "C4.4.retry-without-identity")])
def test_only_a_later_attempt_is_probed_as_a_retry(rules, retry_probe):
    """C4.4: the first attempt's calls are no retry; the attempt the 15-minute timeout
    retries begins them again, with the same identity under the contract and none today."""
    w = probe_world([(FG_20M,)], rules)
    start_turn(w)
    assert not [p for p in w.probes if p.startswith("C4.4")]
    w.advance(15 * MIN + 1_000)
    assert [p for p in w.probes if p.startswith("C4.4")] == [retry_probe]
    assert len(w.starts()) == 2


def _dialed(action: str, number: int) -> list[str]:
    """The probes of an attempt's successful dial: attempt ``number`` of a generation
    batch or of an interrupt, one foreground execute call, the identity sent."""
    key = f"{WORKER}/t1/a{number}"
    targets = chatd.CONTRACT.cancels_for((FG_2H,)) if action == "interrupt" else ((FG_2H, None),)
    att = Attempt(key, number, action, "dial", number, 2, targets, (None,), (None,), ct.ToolCallAge(0, 0))
    task = Task(f"{WORKER}/t1", action if action == "interrupt" else "generation", CHAT, FENCE, attempts=number,
                attempt=att)
    rep = ReplicaState("replica-1", WORKER, runners=EMPTY.set(CHAT, Runner(CHAT, RUNNER, task=task)))
    _, _, effects = chatd.replica_on_answer(rep, chatd.db_empty(), Response(f"{key}/dial", 200), 10, 10)
    return _probes(effects)


def test_an_interrupt_attempt_is_no_task_retry_of_the_calls():
    """C4.4 is about a generation task's later attempt: an interrupt retried after a failed
    commit sends its cancels again, which is no retry of the calls (C3.2)."""
    assert "C4.4.retry-same-identity" in _dialed("execute_local_tools", 2)
    assert not [p for p in _dialed("interrupt", 2) if p.startswith("C4.4")]
    assert not [p for p in _dialed("execute_local_tools", 1) if p.startswith("C4.4")]


# ---------------------------------------------------------------------------
# Serial calls (C1.3 step 3)
# ---------------------------------------------------------------------------

def test_a_parallel_call_after_a_waiting_serial_call_is_sent_at_once():
    """C1.3 step 3: the second serial call waits for the first, but a call not marked serial
    runs in the parallel batch even when it comes after the waiting one."""
    a, b = execute("toolu_a", "make a", "5m"), execute("toolu_b", "make b", "5m")
    w = probe_world([(a, b, WRITE)], replace(chatd.CONTRACT, serial_tools=(ct.EXECUTE,)))
    start_turn(w)
    assert [parse_tool_call_headers(r.headers).tool_call_id for _, _, r in w.starts()] == ["toolu_a"]
    assert len(w.requests("/write-file")) == 1


def test_a_serial_call_begun_later_carries_its_token():
    """The incarnation-token design (docs/contract.md D7, model/chatd/designs.py) stores a
    token per call once the dial answered, and every request for the call carries it: the
    serial call begun after the first one finished too."""
    a, b = execute("toolu_a", "make a", "5m"), execute("toolu_b", "make b", "5m")
    rules = replace(chatd.CONTRACT, serial_tools=(ct.EXECUTE,), bookkeeping=IncarnationTokens())
    w = probe_world([(a, b)], rules)
    start_turn(w)
    w.deliver(w.agent.exit(uuid_of(w, "toolu_a"), 0))
    starts = [r for _, _, r in w.starts()]
    assert [parse_tool_call_headers(r.headers).tool_call_id for r in starts] == ["toolu_a", "toolu_b"]
    tokens = [dict(r.headers).get(AGENT_INCARNATION_HEADER) for r in starts]
    assert tokens[0] is not None and tokens == [tokens[0]] * 2


# ---------------------------------------------------------------------------
# Names and IDs (rule 7)
# ---------------------------------------------------------------------------

def test_the_ids_read_as_the_reports_name_them():
    """docs/pages/how-to/read-a-report.md: ``replica-1-w1/t3/a2`` is replica 1, worker 1,
    task 3, attempt 2, and the tutorials' first turn runs task 2 (``replica-1-w1/t2/a1/gen``):
    a replica's IDs are numbered from 1 in the order it takes them, the runner of its first
    chat first, the runner's first task next."""
    w = probe_world([()])
    start_turn(w, until_batch=False)
    assert w.reps["replica-1"].worker_id == "replica-1-w1"
    (runner,) = w.reps["replica-1"].runners.values()
    assert runner.runner_id == "replica-1-w1/r1"
    assert [n.get("task") for n in w.notes("task_started")][0] == "replica-1-w1/t2"


def test_a_boot_takes_its_incarnation_or_else_the_clock():
    """A fresh worker ID per boot: the world's boot count when it gives one, else the boot
    clock reading (each boot another)."""
    assert chatd.replica_boot("replica-1", 5_000, incarnation=3)[0].worker_id == "replica-1-w3"
    assert chatd.replica_boot("replica-1", 5_000)[0].worker_id == "replica-1-w5000"
    assert chatd.replica_boot("replica-1", 5_000, incarnation=4)[0].worker_id != \
        chatd.replica_boot("replica-1", 5_000, incarnation=3)[0].worker_id


def test_a_name_routes_to_its_own_task_only():
    """Rule 7: a timer or request named after a task reaches that task; a name of a task
    this worker no longer runs (an earlier or a later number) reaches none."""
    chat2 = "7a1c0b9e-2d4a-4c1e-9a57-0b8e2f6d3c22"
    t2 = Task(f"{WORKER}/t2", "generation", CHAT, FENCE)
    t7 = Task(f"{WORKER}/t7", "generation", chat2, FENCE)
    rep = ReplicaState("replica-1", WORKER, runners=EMPTY.set(CHAT, Runner(CHAT, "r2", task=t2))
                       .set(chat2, Runner(chat2, "r7", task=t7)))
    for task in (t2, t7):
        _, found, rest = _find_task(rep, f"{task.task_id}/a1/dial")
        assert (found, rest) == (task, ["a1", "dial"])
    for stale in ("t1", "t3", "t5", "t8"):
        assert _find_task(rep, f"{WORKER}/{stale}/a1/dial") is None, stale
    assert _find_task(rep, f"{WORKER}x/t2/a1/dial") is None


@pytest.mark.parametrize("part, index", [("c0:r1", 0), ("c12:answer3", 12), ("c3", None), ("cx:r1", None),
                                         ("x3:r1", None), ("gen", None), ("dial", None), ("timeout", None)])
def test_a_call_part_names_its_call(part, index):
    """Rule 7: a call's requests and timers are named ``<attempt>/c<i>:<chattool's name>``;
    anything else names no call (a stale or foreign name, never a crash)."""
    assert _call_index(part) == index
