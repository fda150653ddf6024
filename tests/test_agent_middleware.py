"""The tool call middleware's decision (docs/contract.md A2.2 to A2.5) at edges the
mutation run of model/agent/middleware.py (issue 35) found no test pinning: which rule a
refusal counts for rule coverage, a panic's waiters whose request IDs sort before the
creating request's, and input equality after the input hash memo has turned over."""

from __future__ import annotations

from agent_harness import AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.core import Probe, Request


def _probes(h: AgentHarness, req_id: str) -> set[str]:
    return {e.rule for e in h.steps[req_id] if isinstance(e, Probe)}


def test_a_stale_and_a_not_provable_refusal_count_their_own_rules():
    """Rule coverage (model/probes.py): a stale refusal reaches A2.2's branch, a
    not-provable one A2.3's, never the other's."""
    h = AgentHarness()
    h.start(2, "call")
    stale = h.start(1, "call")
    late = h.start(3, "call", age_ms=10 * 3_600_000)
    assert (h.code(stale), h.code(late)) == ("stale_tool_call", "agent_started_after_tool_call")
    assert "A2.2.stale" in _probes(h, stale) and "A2.3.not-provable" not in _probes(h, stale)
    assert "A2.3.not-provable" in _probes(h, late) and "A2.2.stale" not in _probes(h, late)


def test_panic_waiters_get_the_recorded_answer_whatever_their_request_ids():
    """A2.5: only the creating request gets httpmw.Recover's 500; every waiter gets the
    recorded 500 with the run-age header, also one whose request ID sorts before the
    creator's (r10 before r9 as text)."""
    h = AgentHarness()
    h.counter = 8
    first = h.start(run=False)
    waiter = h.start(run=False)
    assert (first, waiter) == ("r9", "r10")
    h.run_handlers(panic=True)
    assert h.json(first)["message"] == "An internal server error occurred." and h.run_age(first) is None
    assert h.json(waiter) == {"message": "The tool call handler failed."} and h.run_age(waiter) is not None


def test_a_retry_after_many_other_inputs_is_the_same_input():
    """A2.6: the input hash is a value; a retry of the same request replays also after
    more distinct inputs than the hash memo keeps have passed since the record."""
    h = AgentHarness()
    first = h.start(1, "call", command="echo hi")
    for i in range(1100):
        agent.input_hash(Request(f"x{i}", "chatd", "POST", "/other", "", (), str(i).encode()))
    again = h.start(1, "call", command="echo hi")
    assert h.status(again) == 200 and h.answer(again).body == h.answer(first).body and h.starts() == 1
