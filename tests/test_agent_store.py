"""The record store's lookup and record updates (docs/contract.md A2.1, A2.2, A2.7) at
edges the mutation run of model/agent/store.py (issue 35) found no test pinning: message
IDs compared by value (a Coder message ID is a database bigint, far beyond the integers
Python keeps one object of), and an older message's run publishing while a newer
message holds a call under the same provider ID."""

from __future__ import annotations

from agent_harness import CHAT, AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.identity import Key, tool_call_uuid

BIG = 4_000_000_001  # a message ID as the database hands them out


def _publish(h: AgentHarness, req_id: str) -> None:
    """Publish one pending run (the harness's run_handlers publishes them all)."""
    del h.timers[f"handler:{req_id}"]
    h._absorb(agent.on_handler_done(h.state, req_id, h.now_ms))


def test_a_retry_with_a_large_message_id_replays_the_recorded_answer():
    """A2.2, A2.8: the retry's message ID is parsed from its own header, an equal number;
    the record is found and replayed, the handler does not run again."""
    h = AgentHarness()
    first = h.start(BIG, "call")
    again = h.start(BIG, "call")
    assert h.starts() == 1 and h.answer(again).body == h.answer(first).body
    assert h.json(again)["id"] == tool_call_uuid(CHAT, BIG, "call")


def test_a_waiter_with_a_large_message_id_gets_the_published_answer():
    """A2.4: a concurrent request waits on the pending record and gets its answer once the
    run publishes (the publish finds the record by an equal, separately parsed ID)."""
    h = AgentHarness()
    first = h.start(BIG, "call", run=False)
    waiter = h.start(BIG, "call", run=False)
    h.run_handlers()
    assert h.starts() == 1 and h.answer(waiter).body == h.answer(first).body
    later = h.start(BIG, "call")
    assert h.starts() == 1 and h.answer(later).body == h.answer(first).body


def test_current_compares_message_ids_by_value():
    """Store.Current: a key equal to the record's, built from another equal number, is
    current; the same provider ID in another message, older or newer, is not (A2.1: the
    records are the latest message's only)."""
    h = AgentHarness()
    h.start(BIG, "call")
    assert agent.current(h.state, Key(CHAT, int(str(BIG)), "call"))
    assert not agent.current(h.state, Key(CHAT, BIG - 1, "call"))
    assert not agent.current(h.state, Key(CHAT, BIG + 1, "call"))


def test_older_run_publishing_leaves_the_newer_messages_record_of_the_same_id():
    """A2.7: message 1's run is pending when message 2 brings a call with the same provider
    ID. Message 1's run completes into its own record only (its waiters hear it); message
    2's pending record is untouched, so a retry of message 2's call waits for message 2's
    run instead of replaying message 1's answer."""
    h = AgentHarness()
    old = h.start(1, "call", run=False)
    new = h.start(2, "call", run=False)
    _publish(h, old)
    assert h.json(old)["id"] == tool_call_uuid(CHAT, 1, "call")
    retry = h.start(2, "call", run=False)
    assert h.answer(retry) is None  # waiting on message 2's run
    _publish(h, new)
    assert h.json(retry)["id"] == h.json(new)["id"] == tool_call_uuid(CHAT, 2, "call")


def test_the_second_call_of_a_large_message_id_records_its_answer():
    """A2.4: a message's second call publishes into its own record (found by an equal
    message ID, parsed from its own header, not the first call's), so its retry replays."""
    h = AgentHarness()
    h.start(BIG, "first")
    second = h.start(BIG, "second", command="echo 2")
    again = h.start(BIG, "second", command="echo 2")
    assert h.starts() == 2 and h.answer(again).body == h.answer(second).body
