"""Idle periodic firings batched (``WorldOptions.idle = "batched"``, model/idle.py) tell the
same story as firing each one (``"stepwise"``): every shipped scenario, swarm seeds under
the contract and under planted bugs give the same outcome, the same property verdicts, the
same final system and the same trace once the steps that only idle firings make are
filtered out (``toolcall_sim.world.simulation.without_idle_steps``, which says what it drops and why), and
the batched run's actions replay its trace exactly through ``system.apply``."""

from __future__ import annotations

import dataclasses
import pathlib
import tomllib

import pytest

from toolcall_sim.model import idle
from toolcall_sim.model import system as msys
from toolcall_sim.world import run as simrun
from toolcall_sim.world.replay import replay_actions, trace_lines
from toolcall_sim.world.scenario import from_dict, load
from toolcall_sim.world.stories import draw_scenario
from toolcall_sim.world.simulation import IDLE_BATCHED, IDLE_STEPWISE, WorldOptions, without_idle_steps

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))


def _run(scenario, variant: str, mode: str):
    return simrun.run_scenario(scenario, variant, idle=mode)


def _verdicts(result):
    """What a run found, without the trace positions of its evidence (which move by the
    records the batched run leaves out)."""
    report = result.report
    found = [(v.property, v.uuid, v.provider_id, v.at_ms, v.detail, v.residual_risk)
             for v in list(result.violations) + list(report.informational)]
    return found, report.unknown_results, report.results


def _assert_same_story(scenario, variant: str) -> tuple[int, int]:
    batched = _run(scenario, variant, IDLE_BATCHED)
    stepwise = _run(scenario, variant, IDLE_STEPWISE)
    replicas = batched.world.system.config.replicas
    assert without_idle_steps(batched.world.trace, replicas) == without_idle_steps(stepwise.world.trace, replicas)
    assert batched.world.system == stepwise.world.system
    assert _verdicts(batched) == _verdicts(stepwise)
    assert batched.expectation_failures() == stepwise.expectation_failures()
    replay = replay_actions(batched.world.system.config, batched.world.actions, header=batched.world.trace[0])
    assert replay.mismatch is None
    assert trace_lines(replay.trace) == batched.world.trace_lines()
    return len(stepwise.world.actions), len(batched.world.actions)


# The 9 h and 11 h incidents cost seconds stepwise: they run with the slow tests.
@pytest.mark.parametrize("variant", ["today", "contract"])
@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem.startswith("codagt757") else p
                                  for p in SCENARIOS], ids=lambda p: p.stem)
def test_scenario_batched_equals_stepwise(path, variant):
    _assert_same_story(load(path), variant)


def test_batching_skips_most_steps():
    """Guards against a batched mode that batches nothing (and so proves nothing)."""
    stepwise_steps, batched_steps = _assert_same_story(load(ROOT / "scenarios" / "us01_ownership_change.toml"), "contract")
    assert batched_steps * 3 < stepwise_steps


@pytest.mark.slow
@pytest.mark.parametrize("variant,seeds", [("contract", range(1, 31)),
                                           ("contract+cancel-without-marker", range(1, 11)),
                                           ("contract+stop-rule-inclusive", range(12, 22)),
                                           ("contract+no-agent-answer-timeout", range(40, 50))])
def test_swarm_seeds_batched_equal_stepwise(variant, seeds):
    """Swarm worlds: random latencies, losses and every fault kind (pauses, crashes,
    database outages, clock steps) around the periodic loops.

    30 contract seeds, not the 200 this ran before (10 s of the suite): the 30 draw
    every fault kind that seeds 1-200 draw (asserted below, so a change of the drawing
    that left a kind out of them fails here rather than thinning the test)."""
    if variant == "contract":
        def kinds(seed_range):
            return {f["kind"] for s in seed_range for f in draw_scenario(s).get("faults", [])}
        assert kinds(seeds) == kinds(range(1, 201))
    for seed in seeds:
        data = draw_scenario(seed)
        _assert_same_story(from_dict(data, f"<swarm {seed}>"), variant)


# Clocks around the loops: the database clock decides when a heartbeat row is stale (the
# offset-only shortcut of model/idle.py and its stepwise check for drift and steps), a
# replica's drift its loops' periods in true time. A forward step of the database clock
# makes every row stale at once (a takeover); a backward one makes rows look younger.
CLOCKS = [
    {"db": {"offset": "-3m"}},
    {"db": {"drift_ppm": 900}},
    {"db": {"steps": [{"at": "7m", "by": "45s"}]}},
    {"db": {"offset": "1h", "steps": [{"at": "6m", "by": "20s", "back": True}, {"at": "9m", "by": "50s"}]}},  # (before until: 10m)
    {"replica-1": {"drift_ppm": -700}, "replica-2": {"offset": "-15m", "drift_ppm": 500}, "db": {"drift_ppm": -400}},
]


@pytest.mark.parametrize("clocks", CLOCKS, ids=lambda c: "+".join(sorted(c)) + str(len(str(c))))
@pytest.mark.parametrize("name", ["us01_ownership_change", "us06_background_survives", "db_outage_during_batch"])
def test_clocks_around_the_loops_batched_equal_stepwise(name, clocks):
    data = tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text())
    data["clocks"] = clocks
    for variant in ("today", "contract"):
        _assert_same_story(from_dict(data, f"<{name} with clocks>"), variant)


def _world(name: str = "us01_ownership_change"):
    return _run(load(ROOT / "scenarios" / f"{name}.toml"), "contract", IDLE_BATCHED).world


def test_idle_replay_refuses_a_batch_that_does_not_fit():
    """``apply(Idle)`` fires the batch again and checks it: a wrong count or end time is a
    ReplayMismatch, not a silent skip."""
    world = _world()
    idles = [(i, a) for i, a in enumerate(world.actions) if isinstance(a, msys.Idle)]
    assert idles
    i, action = idles[0]
    config = world.system.config
    for wrong in (msys.Idle(action.at_ms, action.fires + 1000), msys.Idle(action.at_ms + 1, action.fires),
                  msys.Idle(action.at_ms, 0)):
        replay = replay_actions(config, world.actions[:i] + [wrong])
        assert replay.mismatch is not None and replay.applied == i


def test_idle_action_json_round_trip():
    action = msys.Idle(123_000, 7)
    assert msys.action_from_json(msys.action_to_json(action)) == action
    assert "7" in action.label()


def test_a_firing_that_writes_a_record_is_not_idle():
    """A heartbeat while the database is down notes ``db_down``: the batch stops there."""
    world = _world("codagt757_incident")  # a runner still owns the chat at the end
    s = world.system
    owner = next(node for node, rep in s.replicas.items() if rep is not None and rep.runners)
    timer = s.timers[(owner, "heartbeat")]
    up = idle.advance(s, (timer.due_ms + 1, 0))
    assert up[3] is None and up[1] >= 1  # with the database up, the heartbeat is idle
    down = dataclasses.replace(s, db=dataclasses.replace(s.db, db_up=False))
    out, fires, _, blocked = idle.advance(down, (timer.due_ms + 1, 0))
    assert blocked is not None and blocked.due_ms <= timer.due_ms
    fire = msys.Fire(blocked.due_ms, blocked.node, blocked.name)
    assert any(r.get("note") == "db_down" for r in msys.apply(out, fire).records)


def test_unknown_idle_mode_is_refused():
    from toolcall_sim.world.simulation import Simulation

    with pytest.raises(ValueError):
        Simulation(msys.WorldConfig(), 1, WorldOptions(idle="sometimes"))


@pytest.mark.parametrize("clocks", [{}] + CLOCKS, ids=lambda c: "+".join(sorted(c)) + str(len(str(c))))
def test_advance_in_closed_form_equals_one_firing_at_a_time(clocks):
    """Straight at ``toolcall_sim.model.idle.advance``: from a world whose owner stopped beating (an
    ownership change), one call up to a far bound (the counted bulk, whose first stale
    poll is found by division or poll by poll), one call for that many firings (the
    listed bulk replays use) and that many calls of one firing each (every firing through
    its handler) end in the same system and stop at the same poll: the takeover."""
    data = tomllib.loads((ROOT / "scenarios" / "us01_ownership_change.toml").read_text())
    data["clocks"] = clocks
    data["world"] = {"heartbeat_stale": "3m"}  # a long quiet stretch before the takeover
    scenario = from_dict(data, "<us01 with clocks>")
    config, options = simrun.build(scenario, "contract")
    from toolcall_sim.world.simulation import Simulation

    world = Simulation(config, scenario.seed, options)
    world.run(300_001)  # just after the owner's heartbeats stop
    s = world.system
    far = (s.now_ms + 600_000, 0)
    counted, fires, last_ms, blocked = idle.advance(s, far, memo={})
    assert blocked is not None and blocked.name == "acquire", "the takeover poll ends the batch"
    assert fires > 30
    listed = idle.advance(s, None, fires)
    assert listed[0] == counted and listed[1] == fires and listed[2] == last_ms
    one = s
    for _ in range(fires):
        one, n, _, _ = idle.advance(one, None, 1)
        assert n == 1
    assert one == counted
    _, n, _, stopped = idle.advance(one, None, 1)
    assert n == 0 and stopped == blocked


def test_first_periodic_timer_from_the_batch_equals_the_scan(monkeypatch):
    """``next_periodic`` answered from ``advance``'s memo (``FIRST``: the head of the
    batch's heap, for the very system the batch returned) is the timer the scan of the
    table finds, at every ask of the world's runs."""
    original = idle.next_periodic
    answered = []

    def checked(s, memo=None):
        got = original(s, memo)
        scanned = original(s)
        assert got is scanned
        known = (memo or {}).get(idle.FIRST)
        answered.append(known is not None and known[0] is s)
        return got

    monkeypatch.setattr(idle, "next_periodic", checked)
    for seed in range(1, 31):
        simrun.run_scenario(from_dict(draw_scenario(seed), "<swarm>"), "contract", verdicts_only=True)
    assert sum(answered) > len(answered) / 2  # most asks follow a batch: the memo answers them


def test_carried_heap_gives_the_batch_the_table_gives(monkeypatch):
    """A batch that starts from the heap the last batch left and the loop timers the
    world noted since (``idle.HEAP``, ``idle.ARMED``) ends exactly as one that builds
    its heap from the timer table: the same system, firings, last time and stopping
    timer, at every batch of the world's runs; and most batches do start from a carried
    heap (crashes, restarts and re-armed loops included in these seeds)."""
    original = idle.advance
    carried = []

    def checked(s, before=None, max_fires=None, memo=None):
        fresh = {k: v for k, v in (memo or {}).items() if k not in (idle.HEAP, idle.ARMED)}
        carried.append(memo is not None and idle.HEAP in memo)
        got = original(s, before, max_fires, memo)
        built = original(s, before, max_fires, fresh)
        assert got[0] == built[0] and got[1:3] == built[1:3]
        assert (got[3] is None) == (built[3] is None)
        if got[3] is not None:
            assert got[3] == built[3]
        return got

    monkeypatch.setattr(idle, "advance", checked)
    for seed in range(1, 41):
        simrun.run_scenario(from_dict(draw_scenario(seed), "<swarm>"), "contract", verdicts_only=True)
    assert sum(carried) > len(carried) * 3 / 4
