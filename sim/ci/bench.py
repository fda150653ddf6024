"""The measuring instrument of issue 14: ``toolcall-sim bench``.

Theory of operation
-------------------
Speed on a shared machine is not a number but a ratio: the same interpreter, on the same
busy cores, in the same minute, runs our code and a plain baseline of the same shape, and
the figure that means something is how far apart they are. So every row below is
measured together with its baseline in this process and reported as (measured, baseline,
ratio, goals met), one row per line of issue 14's table:

1. ``explorer_default``: ``toolcall_sim.model.explore.explore`` over the default small world (as
   ``toolcall-sim explore`` runs it: each search the only one of a fresh process, with
   1 worker and with 2): distinct states per second. Baseline: a plain
   Python breadth-first search with a dict of visited states over a small counter system
   (``counter_bfs``), the same loop shape without the model. Beside it, not judged, the
   ceiling: the same search run again over the first one's memos, every expansion found
   in memory (``Search(warm_from=...)``), so the time left is the search's own work per
   state; the gap between the two is the model's steps and their listing.
2. ``explorer_1s``: the same world with messages up to 1 s in flight (1 small ms), the
   widest world: seconds to exhaust it and bytes per state. The full bench exhausts it,
   --quick explores a prefix of 20,000 states. Memory is the growth of the peak resident
   set of a freshly spawned process that runs only this search, over the states: what
   the search really costs, allocator overhead included. ``tracemalloc`` was tried and
   left: it slowed this allocation-heavy search about 8x (20,000 states in 51 s instead
   of about 7 s), so it could not time the same run. Time is measured with 1 worker and
   with 2 (the goal's), bytes with 1 (forked workers would share and double-count pages),
   and the time goal is judged only when exhausted. A prefix's bytes per state are
   several times the whole space's (4.6 KB for 20,000 states against 0.88 KB for all
   329,000 on 2026-12-02): a state in the frontier is a whole ``Node``, an expanded one
   only its key and parent link.
3. ``planted_bugs``: every planted bug in its world (``BUG_WORLDS``, the worlds of
   tests/test_explore_bugs.py) with every budget at 1 and messages 1 small ms in flight:
   seconds until its property's first counterexample.
4. ``incident``: the 9 h ``codagt757_incident`` scenario under its variant, only
   ``Simulation.run`` (building the world and judging the trace are left out): seconds
   and model steps, each idle loop firing of an ``Idle`` batch counted as the step it is
   in the stepwise world (sim/world/simulation.py). Baseline: a raw simpy loop of as many timeouts
   as there were steps.
5. ``swarm``: ``toolcall_sim.drivers.swarm.run_seed`` over seeds 1..N in a fresh spawned process (whole
   simulations per second on one core; the fastest of ``SWARM_REPEATS`` passes,
   alternating with the baseline's in the same process, which keeps its fastest too), then ``run_swarm`` with 2 workers against 1 over the same
   seeds, each in a fresh spawned process, pool start-up included; as many seeds as take
   ``SWARM_WORKERS_TARGET_S`` on one core, so cheap seeds do not leave start-up as all
   that is timed, the fastest of ``SWARM_WORKERS_REPEATS`` alternate runs. Baseline: a toy control-plane simulation in simpy
   (``toy_control_plane``).
6. ``reduction`` (issue 36): what the search's reductions save. Every small world of
   model/worlds.py with three replicas (what symmetry folds is the third), every budget
   at 1, at 0 s and 1 s in flight: the unreduced search (``Bounds(symmetry=False,
   partial_order=False)``), symmetry alone, and both reductions (the default), each the
   only search of a fresh process with 1 worker: states, seconds, bytes per state
   (explorer_1s's method, of the same run), and the ratios of states when both
   exhausted (sim/ci/bench_reach.py ``SIDES``). A search is stopped by a wall-clock cap
   (``on_progress``: a stop rule, never a judgement) and is then reported at the cap.
7. ``largest_world`` (issue 36): how far exhaustive search reaches towards the issue's
   goal world (model/worlds.py ``goal``: three replicas, three parallel calls and a
   second message, every budget at 1, 1 s in flight). A ladder (``LADDER``) of that
   world with fewer calls or less time in flight, smallest first, then one rung beyond
   the goal (a second ownership change), each rung alone in a
   fresh process with 1 worker (so its bytes per state are measured in the same run) and
   stopped after ``ladder_cap_s`` (10 minutes in the full bench); the ladder stops at the
   first rung that does not exhaust. Reported: the largest rung exhausted and the states
   the next reached at its cap. The small sizes cap both rows by states instead (the
   same searches exhaust on any machine), so the test suite's figures do not depend on
   the machine's speed.

Wall-clock time is read here and in the bench's two other modules (sim/ci/bench_reach.py,
sim/ci/bench_process.py: ``time.perf_counter``); nothing it reads enters a run, so every run stays deterministic. The figures go to ``reports/bench.py``
as plain values; a test checks each figure is present, positive and has its baseline and
ratio, never a threshold on time (issue 14's rules).
"""

from __future__ import annotations

import os
import platform
import time
from collections import deque
from dataclasses import asdict, dataclass

# The process a measurement runs in, and issue 36's rows, are modules of their own;
# their names are re-exported here, where the rows and tests look them up.
from toolcall_sim.ci.bench_process import WHOLE_SPACE, _ratio, _rss_bytes, _run_and_send, _seconds, in_fresh_process  # noqa: F401
from toolcall_sim.ci.bench_reach import (  # noqa: F401
    GOAL_RUNG, LADDER, MEMORY_METHOD, REDUCTIONS, SIDES, THREE_REPLICAS, Rung, largest_world, reduction)

# bug -> the small world where the explorer finds it (tests/test_explore_bugs.py WHERE,
# which also names the fewest budgets; the bench spends every budget at 1, as the issue's
# row does). tests/test_bench.py checks the two agree.
BUG_WORLDS = {
    "run-before-record": "default",
    "no-age-margin": "two-messages",
    "cancel-without-marker": "default",
    "cancel-without-marker-truth": "default",
    "interrupt-without-cancel": "default",
    "interrupt-drops-not-run": "default",
    "stop-rule-inclusive": "default",
    "background-stopped-on-interrupt": "default",
    "records-lost-on-new-message": "default",
    "pid-from-command": "two-chats",
    "commit-without-owner-fence": "late-pubsub",
    "commit-without-fences": "late-pubsub",
    "commit-without-attempt-fence": "default",
    "interrupt-answers-resolved-calls": "two-messages",
    "no-agent-answer-timeout": "two-messages",
}

# Issue 14's goals (the "goal" column), as numbers the rows are judged against.
GOAL_STATES_PER_S = 25_000
GOAL_BFS_RATIO = 0.3
GOAL_WIDE_SECONDS = 60
GOAL_BYTES_PER_STATE = 1024
GOAL_BUG_SECONDS = 5
GOAL_INCIDENT_SECONDS = 0.05
GOAL_SWARM_PER_CORE = 300
GOAL_SWARM_SPEEDUP = 1.8

INCIDENT = "codagt757_incident"
SWARM_VARIANT = "contract"


@dataclass(frozen=True)
class Sizes:
    """How much each row measures. ``None`` for a prefix means the whole space."""

    mode: str
    bfs_side: int  # the counter system has bfs_side**3 states
    default_max_states: int | None
    wide_max_states: int | None
    bugs: tuple[str, ...] | None  # None: every planted bug
    swarm_seeds: int
    # The reduction row (issue 36): which small worlds (None: every one) at which times
    # in flight (small ms), each search stopped at a number of states (None: none) or
    # after a wall-clock cap in seconds, whichever comes first.
    reduction_worlds: tuple[str, ...] | None = None
    reduction_in_flight_ms: tuple[int, ...] = (0, 1)
    reduction_max_states: int | None = None
    reduction_cap_s: float = 300.0
    # The largest_world row: its ladder's rungs are stopped the same two ways.
    ladder_max_states: int | None = None
    ladder_cap_s: float = 600.0


FULL = Sizes("full", 58, None, None, None, 200)
# The bugs of --quick are three the explorer finds within a few thousand states today.
QUICK = Sizes("quick", 30, 5_000, 20_000, ("run-before-record", "cancel-without-marker", "interrupt-without-cancel"), 40,
              ("two-messages",), (0, 1), 20_000, 600.0, 10_000, 600.0)
# For the test suite: every row and figure, each as small as still measures something.
# Its caps are states, not seconds, so the same searches exhaust on any machine: the
# smallest world at 0 s in flight (5,029 states unreduced, 2,641 reduced), and the
# ladder's first rung (5,013 states) but not its second.
TINY = Sizes("tiny", 12, 300, 2_000, ("interrupt-without-cancel",), 2,
             ("two-messages",), (0,), 20_000, 600.0, 6_000, 600.0)


# ---------------------------------------------------------------------------
# Baselines
# ---------------------------------------------------------------------------


def counter_bfs(side: int) -> tuple[int, float]:
    """A plain breadth-first search with hashing: three counters in ``0..side-1``; each
    may go up by one, or pass one unit to another (9 actions, about the explorer's
    branching). Visited states are a dict to their parent, as the explorer keeps them.
    Returns (states, seconds)."""
    started = time.perf_counter()
    root = (0, 0, 0)
    parent = {root: None}
    frontier = deque([root])
    top = side - 1
    while frontier:
        s = frontier.popleft()
        children = []
        for i in range(3):
            if s[i] < top:
                children.append(s[:i] + (s[i] + 1,) + s[i + 1:])
            for j in range(3):
                if i != j and s[i] > 0 and s[j] < top:
                    c = list(s)
                    c[i] -= 1
                    c[j] += 1
                    children.append(tuple(c))
        for c in children:
            if c not in parent:
                parent[c] = s
                frontier.append(c)
    return len(parent), _seconds(started)


def raw_simpy(events: int) -> float:
    """A raw simpy loop: one process, ``events`` timeouts of 1 ms. Returns seconds."""
    import simpy

    env = simpy.Environment()

    def loop():
        for _ in range(events):
            yield env.timeout(1)
    env.process(loop())
    started = time.perf_counter()
    env.run()
    return _seconds(started)


def toy_control_plane(seed: int) -> int:
    """A toy control-plane simulation in simpy, the swarm's baseline, shaped like a swarm
    world with none of the model: for one simulated hour two replicas run chatd's three
    periodic loops at their real intervals (heartbeat 9 s, runner sync 15 s, acquisition
    poll 30 s: model/timing.py), and a chat sends three tool calls to an agent over a link
    of 2-40 ms; each runs 1-20 s, answers back, and the replica with the freshest
    heartbeat commits it. Returns the number of commits (so the work cannot be skipped)."""
    import random

    import simpy

    env = simpy.Environment()
    rng = random.Random(seed)
    commits = []
    seen = [[0, 0, 0], [0, 0, 0]]  # per replica: heartbeats, syncs, polls

    def loop(replica: int, which: int, interval_ms: int):
        while True:
            yield env.timeout(interval_ms)
            seen[replica][which] = env.now

    def call(n: int):
        yield env.timeout(rng.randint(2, 40))  # request on the wire
        yield env.timeout(rng.randint(1_000, 20_000))  # the command runs
        yield env.timeout(rng.randint(2, 40))  # answer on the wire
        commits.append((n, env.now, max(range(2), key=lambda r: seen[r][0])))

    for replica in range(2):
        for which, interval_ms in enumerate((9_000, 15_000, 30_000)):
            env.process(loop(replica, which, interval_ms))
    for n in range(3):
        env.process(call(n))
    env.run(until=3_600_000)
    return len(commits)


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------


WORKERS = (1, 2)  # the explorer rows run with each (the same search: sim/drivers/explore_parallel.py)


def _explore(world: str, max_in_flight_ms: int, max_states: int, stop_on=None, variant: str = "contract",
             workers: int = 1):
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    from toolcall_sim.drivers.explore_parallel import explore as explore_parallel

    config = worlds.build(world, variant)
    bounds = ex.Bounds(max_in_flight_ms=max_in_flight_ms)
    started = time.perf_counter()
    result = explore_parallel(config, bounds, max_states=max_states, stop_on=stop_on, workers=workers)
    return result, _seconds(started)


def _default_in_own_process(max_states: int, workers: int) -> tuple[int, bool, float]:
    """Module level: a spawned process imports it by name. The default world's search,
    as ``toolcall-sim explore --workers N`` runs it: the only search of a fresh process.
    (In one process, a parallel search after another search ran 6-8% slower, measured:
    1.21 s the first time, 1.27-1.31 s the next three; its forked worker writes to pages
    of a heap that an earlier search has spread out.)"""
    import toolcall_sim.model.explore  # noqa: F401 - the imports are not the search's time
    import toolcall_sim.model.worlds  # noqa: F401
    import toolcall_sim.drivers.explore_parallel  # noqa: F401

    result, seconds = _explore("default", 0, max_states, workers=workers)
    return result.states, result.exhausted, seconds


def _ceiling_in_own_process(max_states: int) -> tuple[int, float]:
    """Module level: a spawned process imports it by name. The default world's search
    once with its expansion memo never dropping a generation, untimed, then the same
    search again from that one's context and memos (``Search(warm_from=...)``), timed:
    every expansion, step and verdict is found in memory, so what is left is the search's
    own work per state (keys, ghosts, numbering, the frontier), the most this design can
    do in this interpreter with the model's steps free. Returns (states, seconds)."""
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    class Unbounded(ex.Search):
        EXPANSIONS_LIMIT = WHOLE_SPACE

    config, bounds = worlds.build("default", "contract"), ex.Bounds(max_in_flight_ms=0)
    with ex.without_cycle_collection():
        first = Unbounded(config, bounds, max_states)
        first.run()
        again = Unbounded(config, bounds, max_states, warm_from=first)
        started = time.perf_counter()
        again.run()
        seconds = _seconds(started)
        states, expected = again.finish().states, first.finish().states
    if states != expected:
        raise RuntimeError(f"the warm search found {states} states, the first {expected}")
    return states, seconds


def explorer_default(sizes: Sizes, bfs_rate: float) -> dict:
    """The default world with 1 process and with 2, each search in a fresh spawned
    process; the faster decides the goal (both are the same search, state for state).
    Beside them, not judged: the ceiling, the same search with every expansion found in
    memory (``_ceiling_in_own_process``), which says how much of the time is the model's."""
    max_states = sizes.default_max_states or WHOLE_SPACE
    runs = {}
    for workers in WORKERS:
        runs[workers] = in_fresh_process(_default_in_own_process, max_states, workers)
    ceiling_states, ceiling_seconds = in_fresh_process(_ceiling_in_own_process, max_states)
    ceiling_rate = ceiling_states / ceiling_seconds
    best = min(runs, key=lambda w: runs[w][2])
    states, exhausted, seconds = runs[best]
    rate = states / seconds
    ratio = _ratio(rate, bfs_rate)
    return {
        "name": "explorer_default",
        "states": states,
        "exhausted": exhausted,
        "max_states": sizes.default_max_states,
        "seconds": round(seconds, 3),
        "states_per_s": round(rate, 1),
        "workers": best,
        "by_workers": [{"workers": w, "seconds": round(runs[w][2], 3), "states_per_s": round(runs[w][0] / runs[w][2], 1)}
                       for w in WORKERS],
        "baseline_states_per_s": round(bfs_rate, 1),
        "ratio": ratio,
        "ceiling_seconds": round(ceiling_seconds, 3),
        "ceiling_states_per_s": round(ceiling_rate, 1),
        "ceiling_ratio": _ratio(ceiling_rate, bfs_rate),
        "goals": [
            {"goal": f">= {GOAL_STATES_PER_S:,} distinct states/s", "met": rate >= GOAL_STATES_PER_S},
            {"goal": f">= {GOAL_BFS_RATIO}x of the plain BFS", "met": ratio >= GOAL_BFS_RATIO},
        ],
    }


def _wide_in_own_process(max_states: int, workers: int = 1) -> dict:
    """Module level: a spawned process imports it by name. Memory is the growth of this
    fresh process's peak resident set over the search (with 1 worker: the forked workers
    of a parallel search would share and double-count pages)."""
    import toolcall_sim.model.explore  # noqa: F401 - the imports are not the search's memory
    import toolcall_sim.model.worlds  # noqa: F401
    import toolcall_sim.drivers.explore_parallel  # noqa: F401

    before = _rss_bytes()
    result, seconds = _explore("default", 1, max_states, workers=workers)
    return {"states": result.states, "exhausted": result.exhausted, "seconds": seconds,
            "bytes": max(_rss_bytes() - before, 1),
            "memory_method": "growth of a fresh process's peak resident set"}


def explorer_1s(sizes: Sizes, bfs_rate: float) -> dict:
    """Time with 2 workers (the goal's), memory per state from a 1-process run of the
    same search, each in a fresh spawned process."""
    runs = {}
    for workers in WORKERS:
        runs[workers] = in_fresh_process(_wide_in_own_process, sizes.wide_max_states or WHOLE_SPACE, workers)
    m = runs[max(WORKERS)]
    rate = m["states"] / m["seconds"]
    per_state = runs[1]["bytes"] / runs[1]["states"]
    return {
        "name": "explorer_1s",
        "states": m["states"],
        "exhausted": m["exhausted"],
        "max_states": sizes.wide_max_states,
        "seconds": round(m["seconds"], 3),
        "states_per_s": round(rate, 1),
        "bytes_per_state": round(per_state, 1),
        "memory_method": runs[1]["memory_method"] + " (1 process)",
        "workers": max(WORKERS),
        "seconds_1_worker": round(runs[1]["seconds"], 3),
        "baseline_states_per_s": round(bfs_rate, 1),
        "ratio": _ratio(rate, bfs_rate),
        "goals": [
            # A prefix says nothing about the time to exhaust the whole space.
            {"goal": f"exhausted in <= {GOAL_WIDE_SECONDS} s with --workers 2",
             "met": (m["exhausted"] and m["seconds"] <= GOAL_WIDE_SECONDS) if sizes.wide_max_states is None else None},
            {"goal": f"<= {GOAL_BYTES_PER_STATE} bytes per state", "met": per_state <= GOAL_BYTES_PER_STATE},
        ],
    }


def planted_bugs(sizes: Sizes, bfs_rate: float) -> dict:
    from toolcall_sim.model import planted_bugs as pb

    names = sizes.bugs or tuple(m.name for m in pb.PLANTED_BUGS)
    caught_by = {m.name: m.caught_by for m in pb.PLANTED_BUGS}
    bugs = []
    for name in names:
        prop = caught_by[name]
        runs = {}
        for workers in WORKERS:
            runs[workers] = _explore(BUG_WORLDS[name], 1, WHOLE_SPACE, stop_on=lambda f, p=prop: f.property == p,
                                     variant=f"contract+{name}", workers=workers)
        best = min(runs, key=lambda w: runs[w][1])
        result, seconds = runs[best]
        found = any(v.property == prop and v.residual_risk is None for v in result.violations)
        bugs.append({"bug": name, "world": BUG_WORLDS[name], "property": prop, "found": found,
                     "seconds": round(seconds, 3), "states": result.states, "workers": best,
                     "seconds_by_workers": [round(runs[w][1], 3) for w in WORKERS]})
    total_s = sum(b["seconds"] for b in bugs)
    rate = sum(b["states"] for b in bugs) / max(total_s, 1e-9)
    slowest = max(b["seconds"] for b in bugs)
    return {
        "name": "planted_bugs",
        "bugs": bugs,
        "every_bug": sizes.bugs is None,
        "slowest_seconds": slowest,
        "states_per_s": round(rate, 1),
        "baseline_states_per_s": round(bfs_rate, 1),
        "ratio": _ratio(rate, bfs_rate),
        # A few bugs can show the goal missed, never met: "each" means all of them.
        "goals": [{"goal": f"each found in <= {GOAL_BUG_SECONDS} s",
                   "met": False if not all(b["found"] and b["seconds"] <= GOAL_BUG_SECONDS for b in bugs)
                   else True if sizes.bugs is None else None}],
    }


INCIDENT_REPEATS = 5


def incident() -> dict:
    from toolcall_sim.world.inputs import load_scenario, resolve_scenario
    from toolcall_sim.world.run import build, scenario_digest
    from toolcall_sim.world.simulation import Simulation

    scenario = load_scenario(resolve_scenario(INCIDENT))
    config, options = build(scenario, scenario.variant)
    header = {"scenario": scenario.name, "scenario_sha256": scenario_digest(scenario), "variant": scenario.variant,
              "seed": scenario.seed, "until_ms": scenario.until_ms}
    # A run of some 50 ms is one scheduler hiccup away from another figure: both the run
    # and its baseline are timed INCIDENT_REPEATS times, alternately, and each keeps its
    # fastest (as timeit does). Every run is the same run (a fresh world, the same seed).
    seconds = baseline_s = float("inf")
    for _ in range(INCIDENT_REPEATS):
        world = Simulation(config, scenario.seed, options, header)
        started = time.perf_counter()
        world.run(scenario.until_ms)
        seconds = min(seconds, _seconds(started))
        # An Idle action is that many loop firings, each a step of the stepwise world.
        steps = sum(getattr(action, "fires", 1) for action in world.actions)
        baseline_s = min(baseline_s, raw_simpy(steps))
    return {
        "name": "incident",
        "scenario": INCIDENT,
        "variant": scenario.variant,
        "simulated_hours": scenario.until_ms / 3_600_000,
        "seconds": round(seconds, 4),
        "repeats": INCIDENT_REPEATS,
        "steps": steps,
        "steps_per_s": round(steps / seconds, 1),
        "baseline_seconds": round(baseline_s, 4),
        "baseline_events_per_s": round(steps / baseline_s, 1),
        "ratio": _ratio(baseline_s, seconds),
        "goals": [{"goal": f"<= {GOAL_INCIDENT_SECONDS} s", "met": seconds <= GOAL_INCIDENT_SECONDS}],
    }


# The per-core rate and its toy baseline: the fastest of this many passes over the same
# seeds (as timeit does), the two alternating, so a job that passes on the shared machine
# slows neither figure, and a process's first pass pays what a long swarm pays once.
SWARM_REPEATS = {"full": 3, "quick": 1, "tiny": 1}
# The --workers measurement runs as many seeds as take this long on one core (from the
# per-core rate just measured; at least ``swarm_seeds``): with cheap seeds a fixed count
# would time mostly worker start-up. Only the full bench judges the goal.
SWARM_WORKERS_TARGET_S = {"full": 5.0, "quick": 1.0, "tiny": 0.0}
SWARM_WORKERS_MAX_SEEDS = 50_000
# On a shared machine another job can take a core for part of a run: the full bench runs
# 1 and 2 workers alternately this many times and keeps each one's fastest (as timeit
# does), the same rule for both, so a passing job slows neither figure.
SWARM_WORKERS_REPEATS = {"full": 3, "quick": 1, "tiny": 1}


def _swarm_in_own_process(seeds: int, workers: int) -> dict:
    """Module level: a spawned process imports it by name. One whole ``run_swarm`` in a
    fresh process, its pool's start-up included: both runs start from the same cold
    process, so neither inherits what the other (or the per-core run) left in memory."""
    from toolcall_sim.world import run  # noqa: F401 - this process's imports are neither run's time
    from toolcall_sim.drivers import swarm as sw

    started = time.perf_counter()
    sw.run_swarm(1, seeds, SWARM_VARIANT, workers=workers)
    seconds = _seconds(started)
    method = sw._pool_context().get_start_method() if workers > 1 else "none"
    return {"seconds": seconds, "start_method": method}


def _per_core_in_own_process(seeds: int, toys: int, repeats: int) -> tuple[float, float]:
    """Module level: a spawned process imports it by name. The per-core rate and its
    baseline in a fresh process, as ``toolcall-sim swarm`` runs (the explorer rows' rule:
    the bench's own process has explored hundreds of thousands of states by then, and its
    heap is not a swarm's). The same seeds each time, the swarm and the toy alternately,
    each one's fastest kept (``SWARM_REPEATS``): the first pass also pays the process's
    one-time costs (imports finished, caches filled), which a long swarm pays once."""
    from toolcall_sim.drivers import swarm as sw

    one_core_s = toy_s = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for seed in range(1, seeds + 1):
            sw.run_seed(seed, SWARM_VARIANT, minimize_failures=False)
        one_core_s = min(one_core_s, _seconds(started))
        started = time.perf_counter()
        for seed in range(toys):
            toy_control_plane(seed)
        toy_s = min(toy_s, _seconds(started))
    return one_core_s, toy_s


def _swarm_workers(seeds: int, workers: int) -> dict:
    return in_fresh_process(_swarm_in_own_process, seeds, workers)


def swarm(sizes: Sizes) -> dict:
    from toolcall_sim.drivers import swarm as sw

    seeds = sizes.swarm_seeds
    toys = max(seeds * 2, 20)
    one_core_s, toy_s = in_fresh_process(_per_core_in_own_process, seeds, toys, SWARM_REPEATS[sizes.mode])
    rate = seeds / one_core_s
    toy_rate = toys / toy_s
    # Whole swarms, worker start-up included: what `toolcall-sim swarm --workers` costs.
    # The same seeds for both, each run in its own fresh process.
    workers_seeds = min(max(seeds, round(rate * SWARM_WORKERS_TARGET_S[sizes.mode])), SWARM_WORKERS_MAX_SEEDS)
    # The goal is for idle cores: the load just before says whether they were.
    load_1m = round(os.getloadavg()[0], 2)
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(SWARM_WORKERS_REPEATS[sizes.mode]):
        for workers in (1, 2):
            runs[workers].append(_swarm_workers(workers_seeds, workers))
    workers1, workers2 = (min(runs[w], key=lambda r: r["seconds"]) for w in (1, 2))
    speedup = workers1["seconds"] / workers2["seconds"]
    return {
        "name": "swarm",
        "variant": SWARM_VARIANT,
        "seeds": seeds,
        "seconds": round(one_core_s, 3),
        "repeats": SWARM_REPEATS[sizes.mode],
        "per_core_per_s": round(rate, 2),
        "baseline_toy_per_s": round(toy_rate, 1),
        "baseline_toy_runs": toys,
        "ratio": _ratio(rate, toy_rate),
        "workers_seeds": workers_seeds,
        "workers_repeats": SWARM_WORKERS_REPEATS[sizes.mode],
        "workers_start_method": workers2["start_method"],
        "workers_load_average_1m": load_1m,
        # Four significant digits: a whole swarm of a few seeds can take well under 0.1 s,
        # where three decimals would move the ratio of the printed figures by over 1%.
        "workers1_seconds": float(f"{workers1['seconds']:.4g}"),
        "workers2_seconds": float(f"{workers2['seconds']:.4g}"),
        "speedup_2_workers": float(f"{speedup:.4g}"),
        "goals": [
            {"goal": f">= {GOAL_SWARM_PER_CORE} simulations/s per core", "met": rate >= GOAL_SWARM_PER_CORE},
            # A short run times mostly start-up: the full bench's few seconds decide.
            {"goal": f"--workers 2 >= {GOAL_SWARM_SPEEDUP}x on idle cores",
             "met": speedup >= GOAL_SWARM_SPEEDUP if sizes.mode == "full" else None},
        ],
    }


ROWS = ("explorer_default", "explorer_1s", "planted_bugs", "incident", "swarm", "reduction", "largest_world")


def run(sizes: Sizes, on_row=None, rows_wanted: tuple[str, ...] = ROWS) -> dict:
    """Every row (or those of ``rows_wanted``, in ``ROWS`` order), each with its baseline
    measured in this run. ``on_row(name)`` is called before each row starts (the command
    prints progress)."""
    def starting(name):
        if on_row is not None:
            on_row(name)

    # Read before the first row: issue 36's rows take minutes, and the load at the end
    # is not what the text calls the load at the start.
    load_1m = round(os.getloadavg()[0], 2)
    starting("baseline")
    bfs_states, bfs_s = counter_bfs(sizes.bfs_side)
    bfs_rate = bfs_states / bfs_s
    measure = {
        "explorer_default": lambda: explorer_default(sizes, bfs_rate),
        "explorer_1s": lambda: explorer_1s(sizes, bfs_rate),
        "planted_bugs": lambda: planted_bugs(sizes, bfs_rate),
        "incident": incident,
        "swarm": lambda: swarm(sizes),
        "reduction": lambda: reduction(sizes, bfs_rate),
        "largest_world": lambda: largest_world(sizes, bfs_rate),
    }
    rows = []
    for name in ROWS:
        if name in rows_wanted:
            starting(name)
            rows.append(measure[name]())
    return {
        "mode": sizes.mode,
        "sizes": asdict(sizes),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "load_average_1m": load_1m},
        "baseline_bfs": {"states": bfs_states, "seconds": round(bfs_s, 4), "states_per_s": round(bfs_rate, 1)},
        "rows": rows,
    }
