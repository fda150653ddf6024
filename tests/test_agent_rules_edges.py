"""Edges of the agent's rules object (model/agent/rules.py) that the mutation run of that
module found unpinned (issue 35): the age rule at its exact bound with a negative age, a
chat's records across a large message ID, chat isolation by value, an unscripted
command, and the rules as immutable values."""

from __future__ import annotations

import dataclasses

import pytest

from agent_harness import CHAT, AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.agent.rules import AgentRules, Script
from toolcall_sim.model.identity import Key

MARGIN_MS = AgentRules().age_margin_ms


def test_a_negative_age_counts_as_zero_at_the_rules_exact_bound():
    """A3: proven new only when ``uptime - margin > max(age, 0)``. Up exactly the margin,
    a negative age (the store's own input; the header refuses one) is no proof: 0 > 0
    fails, as for age 0; a millisecond later it is."""
    key = Key(CHAT, 1, "call")
    for age_ms in (-5, 0):
        h = AgentHarness(uptime_ms=MARGIN_MS)
        assert agent.lookup(h.state, key, age_ms, h.now_ms)[0] == "not_provable"
    h = AgentHarness(uptime_ms=MARGIN_MS + 1)
    assert agent.lookup(h.state, key, -5, h.now_ms)[0] != "not_provable"


def test_a_second_call_of_a_message_with_a_large_id_keeps_the_first_calls_record():
    """Section 2.4 step 5: a record of the chat's latest message joins its other records.
    Message IDs are database IDs (int64), far past small integers."""
    h = AgentHarness()
    first = h.json(h.start(1_000_000, "a", command="sleep 60"))["id"]
    h.start(1_000_000, "b", command="sleep 60")
    runs = h.handler_runs
    assert h.json(h.start(1_000_000, "a", command="sleep 60"))["id"] == first
    assert h.handler_runs == runs and len(h.state.processes) == 2  # replayed, not run again


def test_a_process_is_visible_to_its_own_chat_named_by_an_equal_string():
    """agentproc's chat isolation compares chat IDs by value: a request's chat header is
    parsed afresh, never the object the process was started with."""
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    same = "".join(list(CHAT))
    assert h.status(h.output(pid, chat=same)) == 200
    assert h.status(h.output(pid, chat="11111111-2222-4333-8444-555555555555")) == 404


def test_chat_isolation_holds_however_many_chats_the_agent_has_seen():
    """The chat header is parsed per request; after requests of two thousand other chats
    the process's own chat still reads its output (and only it)."""
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    for n in range(2_000):
        h.list(chat=f"{n:08x}-0000-4000-8000-000000000000")
    assert h.status(h.output(pid)) == 200


def test_a_script_names_only_what_differs_from_an_instant_silent_success():
    """Script's defaults (a world names only a run time, model/worlds.py): no run time,
    exit code 0, no output."""
    scripts = agent.EMPTY.set("make test", Script(runs_for_ms=12)).set("fail", Script(exit_code=3))
    h = AgentHarness(config=agent.AgentConfig(scripts=scripts))
    slow = h.json(h.start(None, command="make test"))["id"]
    fail = h.json(h.start(None, command="fail"))["id"]
    assert h.timers[f"exit:{fail}"] == h.now_ms  # now, never in the past (a clock refuses a negative delay)
    h.advance(0)
    assert h.json(h.output(fail)) == {"running": False, "exit_code": 3, "output": ""}
    assert h.json(h.output(slow))["running"] is True
    h.advance(12)
    assert h.json(h.output(slow)) == {"running": False, "exit_code": 0, "output": ""}


def test_a_handler_publishes_in_the_instant_its_request_arrives_unless_a_slow_spawn_is_named():
    """Rev C's handler takes no time of its own: the run's timer is set for 0 ms."""
    h = AgentHarness()
    rid = h.start(1, "call", command="sleep 60", run=False)
    assert [e.after_ms for e in h.steps[rid] if getattr(e, "name", "").startswith("handler:")] == [0]


@pytest.mark.parametrize("value", [AgentRules(), agent.OLD_AGENT, Script(), agent.AgentConfig()])
def test_the_rules_scripts_and_config_are_immutable_values(value):
    """States are shared between explored branches and render their repr once
    (core.CachedRepr), so the objects they hold never change after construction."""
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, getattr(value, field))
    assert hash(value) == hash(dataclasses.replace(value))


def test_a_shutdown_ends_only_the_output_waits_timers_and_breaks_every_waiter():
    """Rule 7: every open request breaks (a transport error); a blocking output read also
    ends its cap timer, and a request waiting on a run has none to end."""
    from toolcall_sim.model.core import CancelTimer, Reply, TransportError

    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    reader = h.output(pid, wait=True)
    pending = h.start(1, "call", command="sleep 60", run=False)  # its run not yet published
    waiting = h.start(1, "call", command="sleep 60", run=False)  # waits on that run
    canceling = h.cancel(1, "call", threshold_ms=60_000, run=False)  # so does its cancel
    assert h.answer(canceling) is None
    _, effects = agent.shutdown(h.state, h.now_ms)
    timers = sorted(e.name for e in effects if isinstance(e, CancelTimer))
    assert timers == sorted([f"exit:{pid}", f"outwait:{reader}", f"handler:{pending}"])
    broken = {e.answer.req_id for e in effects if isinstance(e, Reply) and isinstance(e.answer, TransportError)}
    assert broken == {reader, pending, waiting, canceling}
