"""The simulated world's clocks and faults: each node reads its own clock, only durations
cross nodes, and a database outage is survived by the retry wrapper."""

from __future__ import annotations

import pathlib
from dataclasses import replace

from model import system as msys
from model.core import FMap
from sim.run import build, run_scenario
from sim.scenario import load
from sim.world import Simulation

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
