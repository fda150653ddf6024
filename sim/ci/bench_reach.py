"""Issue 36's rows of ``toolcall-sim bench`` (rows 6 and 7 of sim/ci/bench.py's theory of
operation): what reduction saves per small world with three replicas (``reduction``),
and the largest world the search exhausts within its cap (``largest_world``). Each
search runs alone in a fresh process (sim/ci/bench_process.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from toolcall_sim.ci.bench_process import WHOLE_SPACE, _ratio, _rss_bytes, _seconds, in_fresh_process
from toolcall_sim.model.explore_actions import REDUCTIONS as CHOICES


THREE_REPLICAS = ("replica-1", "replica-2", "replica-3")
# The reductions ``Bounds`` switches (``explore --reduction none``, ``symmetry``, ``all``:
# model/explore_actions.py ``REDUCTIONS``); the row runs each world without them, with
# symmetry alone, and with both.
REDUCTIONS = ("symmetry (model/explore_symmetry.py)", "partial-order reduction (model/explore_por.py)")
SIDES = {"unreduced": CHOICES["none"], "symmetry": CHOICES["symmetry"], "reduced": CHOICES["all"]}  # (symmetry, partial order)
MEMORY_METHOD = "growth of a fresh process's peak resident set (1 process)"


def _search_in_own_process(world: tuple, max_in_flight_ms: int, reductions: tuple, max_states: int,
                           cap_s: float, ownership_changes: int = 1) -> dict:
    """Module level: a spawned process imports it by name. One search of ``world`` (a
    small world's name with three replicas, or ``("goal", calls)``), every budget at 1
    but ``ownership_changes``, with ``reductions`` (symmetry, partial order: ``SIDES``),
    alone in this fresh process with 1 worker, stopped after ``cap_s`` seconds of wall
    clock (a stop rule, as Ctrl-C stops ``explore``: ``on_progress``). Time and memory are
    of the same run (``_wide_in_own_process``'s method)."""
    import dataclasses

    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    if world[0] == "goal":
        config = worlds.goal("contract", world[1])
    else:
        config = dataclasses.replace(worlds.build(world[0], "contract"), replicas=THREE_REPLICAS)
    symmetry, partial_order = reductions
    bounds = ex.Bounds(max_in_flight_ms=max_in_flight_ms, symmetry=symmetry, partial_order=partial_order,
                       ownership_changes=ownership_changes)
    before = _rss_bytes()
    cpu_started = time.process_time()
    started = time.perf_counter()
    deadline = started + cap_s
    result = ex.explore(config, bounds, max_states, on_progress=lambda _: time.perf_counter() > deadline)
    seconds = _seconds(started)
    # On a shared machine the wall clock is also the others' load: the process's own CPU
    # time beside it says how much of the cap the search had (the cap stays wall clock).
    return {"states": result.states, "exhausted": result.exhausted, "seconds": round(seconds, 3),
            "cpu_seconds": round(max(time.process_time() - cpu_started, 1e-9), 3),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "bytes_per_state": round(max(_rss_bytes() - before, 1) / result.states, 1),
            "at_cap": not result.exhausted}


def reduction(sizes: Sizes, bfs_rate: float) -> dict:
    """Every small world with three replicas (a third is what symmetry folds), every
    budget at 1, at each time in flight: the unreduced search (``Bounds(symmetry=False,
    partial_order=False)``), symmetry alone, and both reductions (the default), each alone
    in a fresh process. A ratio is states without over states with, given only when both
    searches exhausted (two prefixes cut by a clock say nothing about the spaces):
    ``states_ratio`` both reductions', ``partial_order_ratio`` the second's over symmetry
    alone."""
    from toolcall_sim.model import worlds

    names = sizes.reduction_worlds or tuple(worlds.small_names())
    max_states = sizes.reduction_max_states or WHOLE_SPACE
    searches = []
    for name in names:
        for ms in sizes.reduction_in_flight_ms:
            runs = {side: in_fresh_process(_search_in_own_process, (name,), ms, reductions, max_states,
                                           sizes.reduction_cap_s) for side, reductions in SIDES.items()}
            unreduced, symmetric, reduced = runs["unreduced"], runs["symmetry"], runs["reduced"]
            both = unreduced["exhausted"] and reduced["exhausted"]
            por = symmetric["exhausted"] and reduced["exhausted"]
            searches.append({"world": name, "max_in_flight_ms": ms, **runs,
                             "states_ratio": _ratio(unreduced["states"], reduced["states"]) if both else None,
                             "seconds_ratio": _ratio(unreduced["seconds"], reduced["seconds"]) if both else None,
                             "partial_order_ratio": _ratio(symmetric["states"], reduced["states"]) if por else None})
    exhausted = [r for r in searches if r["states_ratio"] is not None]
    states_reduced = sum(r["reduced"]["states"] for r in exhausted)
    seconds_reduced = sum(r["reduced"]["seconds"] for r in exhausted)
    rate = states_reduced / seconds_reduced if seconds_reduced else 0.0
    return {
        "name": "reduction",
        "replicas": len(THREE_REPLICAS),
        "budgets": 1,
        "reductions": list(REDUCTIONS),
        "cap_s": sizes.reduction_cap_s,
        "max_states": sizes.reduction_max_states,
        "memory_method": MEMORY_METHOD + ", of the same run as the seconds",
        "searches": searches,
        "exhausted_pairs": len(exhausted),
        # Over the pairs both searches exhausted: every state the unreduced searches
        # visited per state the reduced ones did.
        "states_ratio": _ratio(sum(r["unreduced"]["states"] for r in exhausted), states_reduced) if exhausted else None,
        "states_per_s": round(rate, 1),
        "baseline_states_per_s": round(bfs_rate, 1),
        "ratio": _ratio(rate, bfs_rate),
        # Issue 36 sets no number for the ratio: the row reports it.
        "goals": [{"goal": "reduced and unreduced searches of every small world exhausted",
                   "met": len(exhausted) == len(searches) if sizes.reduction_worlds is None else None}],
    }


@dataclass(frozen=True)
class Rung:
    """One world of the largest_world ladder: the goal world with its first ``calls``
    tool calls (model/worlds.py ``goal``), messages up to ``max_in_flight_ms`` in flight,
    every budget at 1 (1 agent restart, 1 ownership change, 1 interrupt, 1 lost response,
    1 task retry) but ``ownership_changes``."""

    calls: int
    max_in_flight_ms: int
    ownership_changes: int = 1

    def describe(self) -> str:
        which = ("a foreground execute", "a background execute", "an edit")[:self.calls]
        budgets = ("every budget at 1" if self.ownership_changes == 1 else
                   f"{self.ownership_changes} ownership changes, every other budget at 1")
        return f"3 replicas, one chat: {', '.join(which)}, then text; {budgets}; {self.max_in_flight_ms} s in flight"


# Smallest first, as measured (one call at 1 s in flight is 55,368 states, two at 0 s
# 38,557); each rung adds a call or the second in flight, up to the goal
# (``GOAL_RUNG``, 2,189,640 states on 2026-12-06). The goal exhausted, one rung beyond it
# says how far past it the search reaches: a second ownership change, so a third replica
# can take over while the second's attempt is still in flight (issue 36's race of three).
GOAL_RUNG = Rung(3, 1)
LADDER = (Rung(1, 0), Rung(2, 0), Rung(1, 1), Rung(3, 0), Rung(2, 1), GOAL_RUNG, Rung(3, 1, ownership_changes=2))


def largest_world(sizes: Sizes, bfs_rate: float) -> dict:
    """The ladder of ``LADDER``, each rung alone in a fresh process with 1 worker (its
    bytes per state from the same run), stopped after ``ladder_cap_s`` of wall clock; the
    ladder stops at the first rung that does not exhaust. Reports the largest rung
    exhausted and the states the next one reached at the cap."""
    max_states = sizes.ladder_max_states or WHOLE_SPACE
    load_1m = round(os.getloadavg()[0], 2)
    rungs = []
    for rung in LADDER:
        m = in_fresh_process(_search_in_own_process, ("goal", rung.calls), rung.max_in_flight_ms, SIDES["reduced"], max_states,
                             sizes.ladder_cap_s, rung.ownership_changes)
        rungs.append({"rung": rung.describe(), "calls": rung.calls, "max_in_flight_ms": rung.max_in_flight_ms,
                      "ownership_changes": rung.ownership_changes, **m})
        if not m["exhausted"]:
            break
    done = [r for r in rungs if r["exhausted"]]
    largest = done[-1] if done else None
    stopped = rungs[-1] if not rungs[-1]["exhausted"] else None
    return {
        "name": "largest_world",
        "world": "goal",
        "cap_s": sizes.ladder_cap_s,
        "max_states": sizes.ladder_max_states,
        "workers": 1,
        "load_average_1m": load_1m,
        "memory_method": MEMORY_METHOD + ", of the same run as the seconds",
        "rungs": rungs,
        "largest": largest,
        "not_exhausted": stopped,
        "goal": GOAL_RUNG.describe(),
        "goal_exhausted": any(r["exhausted"] and r["rung"] == GOAL_RUNG.describe() for r in rungs),
        "states_per_s": round(largest["states"] / largest["seconds"], 1) if largest else 0.0,
        "baseline_states_per_s": round(bfs_rate, 1),
        "ratio": _ratio(largest["states"] / largest["seconds"], bfs_rate) if largest else 0.0,
        "goals": [{"goal": f"the goal world exhausted within {sizes.ladder_cap_s:g} s",
                   "met": any(r["exhausted"] and r["rung"] == GOAL_RUNG.describe() for r in rungs)
                   if sizes.ladder_max_states is None else None}],
    }
