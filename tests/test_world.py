"""The simulated world's clocks and faults: each node reads its own clock, only durations
cross nodes, and a database outage is survived by the retry wrapper."""

from __future__ import annotations

import gc
import pathlib
import weakref
from dataclasses import replace

from model import system as msys
from model.core import FMap
from sim.run import build, run_scenario
from sim.scenario import load
from sim.world import Simulation
from sim.stories import draw_scenario
from sim.scenario import from_dict

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
    from model.system import Deliver, Drop, Fault, Fire, Idle
    from sim.world import _action_fields

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
