"""The simulated world's clocks and faults: each node reads its own clock, only durations
cross nodes, and a database outage is survived by the retry wrapper."""

from __future__ import annotations

import gc
import pathlib
import weakref
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_sim.model import system as msys
from toolcall_sim.model.core import FMap
from toolcall_sim.world.run import build, run_scenario
from toolcall_sim.world.scenario import load
from toolcall_sim.world.simulation import Simulation
from toolcall_sim.world.stories import draw_scenario
from toolcall_sim.world.scenario import from_dict

ROOT = pathlib.Path(__file__).resolve().parent.parent / "scenarios"


def _run_with_clocks(clocks: FMap):
    sc = load(ROOT / "smoke_retry.toml")
    config, options = build(sc, "contract")
    world = Simulation(replace(config, clocks=clocks), sc.seed, options)
    world.run(sc.until_ms)
    return world


def test_each_record_carries_its_nodes_clock_reading():
    """An agent clock 1 h ahead and drifting shows in the agent's records only."""
    world = _run_with_clocks(FMap({"agent": msys.ClockSpec(offset_ms=3_600_000, drift_ppm=500)}))
    agent_recs = [r for r in world.trace if r.get("node") == "agent" and "clock_ms" in r]
    replica_recs = [r for r in world.trace if r.get("node") == "replica-1" and "clock_ms" in r]
    assert agent_recs and all(r["clock_ms"] >= r["t_ms"] + 3_600_000 for r in agent_recs)
    assert replica_recs and all(r["clock_ms"] == r["t_ms"] for r in replica_recs)


def test_only_durations_cross_nodes():
    """A6: shifting every node's clock by a different offset changes no decision: the
    same processes start and the same results are committed."""
    plain = _run_with_clocks(FMap())
    shifted = _run_with_clocks(FMap({
        "agent": msys.ClockSpec(offset_ms=7_000_000),
        "db": msys.ClockSpec(offset_ms=-50_000),
        "replica-1": msys.ClockSpec(offset_ms=123_456),
        "replica-2": msys.ClockSpec(offset_ms=-9_999),
    }))

    def decisions(world):
        return [(r["t_ms"], r.get("truth"), r.get("result_kind")) for r in world.trace if r.get("kind") == "truth"]

    assert decisions(plain) == decisions(shifted)


def test_clock_step_is_applied_at_its_time():
    """A step jumps the node's reading from its time on."""
    spec = msys.ClockSpec(steps=((1_000, 5_000),))
    assert spec.read(999) == 999 and spec.read(1_000) == 6_000


def test_database_outage_is_survived_at_most_once():
    """A database outage at the commit makes the attempt fail and retry; under the
    contract the retry attaches to the same process and commits once."""
    result = run_scenario(load(ROOT / "db_outage_during_batch.toml"), "contract")
    assert result.expectation_failures() == []
    assert any(r.get("kind") == "db_down" for r in result.world.trace)


def test_action_records_written_directly_are_the_generic_ones():
    """The world writes the records of its frequent actions (deliver, timer, idle) by
    hand: each is the record ``label`` and ``action_to_json`` make, key for key and in
    the same key order."""
    from toolcall_sim.model.system import Deliver, Drop, Fault, Fire, Idle
    from toolcall_sim.world.simulation import _action_fields

    sc = load(ROOT / "smoke_retry.toml")
    config, options = build(sc, "contract")
    world = Simulation(config, sc.seed, options)
    seen = set()
    for action in (Deliver(5, 3, "start toolu_01 replica-1 -> agent"), Fire(7, "replica-1", "acquire"), Idle(9, 4),
                   Drop(11, 4, "x"), Fault(13, "db_outage", (("for_ms", 5),))):
        world.trace.clear()
        world._record_step(action, msys.Step(None))
        generic = {"kind": "action", "t_ms": action.at_ms, "label": action.label(), **_action_fields(action)}
        assert world.trace == [generic] and list(world.trace[0]) == list(generic), type(action).__name__
        seen.add(world.trace[0]["action"])
    assert seen == {"deliver", "timer", "idle", "lose", "fault"}


def test_the_agenda_keeps_simpys_order_and_stops_before_until():
    """Entries go by (time, priority, insertion); none is scheduled before now; ``run``
    stops before anything due at ``until`` (simpy's URGENT stop entry) and then reads
    ``until`` as now."""
    world = Simulation(msys.WorldConfig(replicas=()), 1, None)
    world._queue.clear()
    fired = []

    def note(_world, name):  # an entry's callback is called with the world (``Simulation._at``)
        fired.append(name)

    for at_ms, priority, name in ((30, 2, "c"), (10, 5, "b"), (10, 1, "a"), (10, 5, "b2"), (50, 1, "late")):
        world._at(at_ms, priority, note, name)
    world.run(50)
    assert fired == ["a", "b", "b2", "c"] and world.now_ms == 50
    world._at(10, 1, note, "past")  # in the past: it happens now, after what was due now
    world.run(60)
    assert fired[-2:] == ["late", "past"] and world.now_ms == 60
    try:
        world.run(60)
    except ValueError:
        pass
    else:
        raise AssertionError("run(until) at or before now must refuse, as simpy's does")


def test_a_finished_world_is_freed_without_the_collector():
    """No agenda entry holds the world (``Simulation._at`` takes plain functions), so a
    world that still has entries due after ``until`` is freed as soon as its last
    reference goes, with the cyclic collector off: a cycle would leave its whole trace and
    every state to the collector, a few percent of a swarm seed."""
    scenario = from_dict(draw_scenario(3), "<swarm 3>")
    config, options = build(scenario, "contract")
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        world = Simulation(config, scenario.seed, options)
        world.run(scenario.until_ms)
        assert world._queue, "the run leaves entries due later: what would hold the world"
        ref = weakref.ref(world)
        del world
        assert ref() is None
    finally:
        if was_enabled:
            gc.enable()


# simpy is the reference the world's agenda is held to: the agenda replaced a simpy event
# per message and timer for speed (issue 14), and must fire in exactly the order simpy
# would, entries scheduled from inside a firing and the stop at ``until`` included.
_ENTRY = st.tuples(st.integers(0, 40), st.integers(0, 4),
                   st.lists(st.tuples(st.integers(0, 40), st.integers(0, 4)), max_size=3))


def _simpy_order(entries, until_ms) -> list:
    import simpy

    env = simpy.Environment()
    fired = []

    def at(delay_ms, priority, name, children):
        event = simpy.Event(env)
        event._ok, event._value = True, None

        def fire(_event):
            fired.append((env.now, name))
            for k, (d, p) in enumerate(children):
                at(d, p, f"{name}.{k}", ())
        event.callbacks.append(fire)
        env.schedule(event, priority, delay_ms)

    for i, (delay_ms, priority, children) in enumerate(entries):
        at(delay_ms, priority, str(i), children)
    env.run(until=until_ms)
    return fired


def _agenda_order(entries, until_ms) -> list:
    world = Simulation(msys.WorldConfig(replicas=()), 1, None)
    world._queue.clear()
    fired = []

    def fire(w, entry):
        name, children = entry
        fired.append((w.now_ms, name))
        for k, (d, p) in enumerate(children):
            w._at(w.now_ms + d, p, fire, (f"{name}.{k}", ()))

    for i, (delay_ms, priority, children) in enumerate(entries):
        world._at(delay_ms, priority, fire, (str(i), children))
    world.run(until_ms)
    return fired


@settings(max_examples=150, deadline=None)
@given(st.lists(_ENTRY, max_size=12), st.integers(1, 60))
def test_the_agenda_fires_in_simpys_order(entries, until_ms):
    assert _agenda_order(entries, until_ms) == _simpy_order(entries, until_ms)


def test_the_simpy_oracle_can_tell_orders_apart():
    """The oracle above is not blind: two entries due at the same time fire by priority,
    and one due at ``until`` does not fire at all, in simpy as in the agenda."""
    entries = [(5, 3, []), (5, 1, [(0, 0)]), (9, 1, [])]
    assert _simpy_order(entries, 9) == [(5, "1"), (5, "1.0"), (5, "0")] == _agenda_order(entries, 9)
