"""The detection table: which driver finds which planted bug from its default settings.

Theory of operation
-------------------
A planted bug (model/planted_bugs.py) is a small plausible mistake in the contract; a
driver that cannot find it from the settings a user starts with is tuned, not general.
This module runs every planted bug through each driver exactly as a user would run
``toolcall-sim explore``, ``search`` or ``swarm`` with no flags (no world chosen per
bug, no pinned seed window) and records whether a new finding turned up, how much of the
driver's budget it took, how long (reported, never a budget), and how long the
counterexample is. It is the harness's own quality measure, like Hypothesis's tests
against planted bugs; ``toolcall-sim bugs`` prints it (reports/bugs.py) and the CI
command can call ``table`` for the same data.

Rule 1 (what counts). A detection is the first new finding (a violation that is not a
        named residual risk) of any property: the contract itself has none in the same
        runs (its row, ``CONTROL``, is the check), so under ``contract+<bug>`` any new
        finding is the bug's doing. The bug's own property (``caught_by``) is recorded
        beside it.
Rule 2 (budgets). Each driver's budget counts its own deterministic unit: the explorer
        states (``toolcall_sim.drivers.explore_tour``: every small world in rounds of growing caps), the
        search programs (``toolcall_sim.drivers.story_search``: drawn race stories, hypothesis seed 0,
        a fresh example database, as a first ``toolcall-sim search``), the swarm seeds per starting point. Time is measured
        with ``time.perf_counter`` and only reported: no verdict depends on it.
Rule 3 (the swarm from any first seed). The swarm runs seeds from each of ``SWARM_STARTS``
        (1, 1001, 2001) until the first failing seed, unminimized, within the budget of
        seeds per start; a bug counts as found when it is found from every start, and
        the seeds-to-first-failure of each start are kept.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from toolcall_sim.model import planted_bugs

from toolcall_sim.drivers import explore_tour
from toolcall_sim.world.stories import SEARCH_EXAMPLES

DRIVERS = ("explore", "search", "swarm")
UNITS = {"explore": "states", "search": "programs", "swarm": "seeds"}
DEFAULT_BUDGETS = {"explore": explore_tour.TOUR_STATES, "search": SEARCH_EXAMPLES, "swarm": 100}
SWARM_STARTS = (1, 1001, 2001)
SEARCH_SHRINK_RUNS = 30  # the table's shrinking: enough to show a shorter story, bounded in runs
CONTROL = "contract"  # the row that must show no new finding


@dataclass
class Detection:
    """One bug (or the control) through one driver, as plain values."""

    bug: str  # a planted bug's name, or CONTROL
    driver: str
    found: bool
    budget: int
    unit: str
    used: int  # units spent up to the first counterexample (the whole budget when none)
    seconds: float  # wall time to the first counterexample (or of the whole run): reported only
    violated: str | None = None  # the property of the first new finding
    caught_by: bool = False  # it is the bug's own property (model/planted_bugs.py)
    length: str = ""  # the counterexample's length, in the driver's terms
    where: str = ""  # where it was found: the explorer's stage, the story, the seed
    starts: list = field(default_factory=list)  # swarm: one entry per first seed (Rule 3)


def variant_of(bug: str) -> str:
    return CONTROL if bug == CONTROL else f"contract+{bug}"


def _caught_by(bug: str, prop: str | None) -> bool:
    mutant = planted_bugs.by_name().get(bug)
    return mutant is not None and prop == mutant.caught_by


def detect_explore(bug: str, budget: int = DEFAULT_BUDGETS["explore"]) -> Detection:
    """The explorer's tour (its default) until the first new finding, within ``budget``
    states."""
    from toolcall_sim.drivers.explore_tour import tour

    started = time.perf_counter()
    done = tour(variant_of(bug), max_states=budget, stop_on=lambda f: f.residual_risk is None)
    seconds = time.perf_counter() - started
    last = done.runs[-1] if done.runs else None
    new = [v for v in last.result.violations if v.residual_risk is None] if last else []
    d = Detection(bug, "explore", bool(new), budget, "states", done.states, round(seconds, 3))
    if new:
        v = min(new, key=lambda v: (len(v.path), v.property))
        d.violated, d.caught_by = v.property, _caught_by(bug, v.property)
        d.length, d.where = f"{len(v.path)} actions", last.stage.label()
    return d


def detect_search(bug: str, budget: int = DEFAULT_BUDGETS["search"]) -> Detection:
    """Hypothesis over drawn race stories (the search's default) within ``budget``
    programs; shrinking is bounded by ``SEARCH_SHRINK_RUNS`` runs and not counted."""
    import tempfile
    from pathlib import Path

    from toolcall_sim.drivers.story_search import search

    # A fresh example database, as a first `toolcall-sim search` has (hypothesis plans
    # its runs differently with a database than with none).
    with tempfile.TemporaryDirectory() as scratch:
        o = search(variant_of(bug), budget, shrink_runs=SEARCH_SHRINK_RUNS,
                   database_dir=Path(scratch) / "hypothesis-db")
    if o.interrupted:
        raise KeyboardInterrupt  # the search keeps a Ctrl-C to itself; the table stops on it
    d = Detection(bug, "search", o.found, budget, "programs", o.programs_to_failure or o.programs,
                  round(o.seconds_to_failure if o.found else o.seconds, 3))
    if o.found:
        faults, calls, turns = o.length
        d.violated, d.caught_by = o.violated, _caught_by(bug, o.violated)
        d.length = f"{faults} faults, {calls} calls (shrunk)"
        d.where = o.scenario["summary"].split("; ", 1)[1]
    return d


def detect_swarm(bug: str, budget: int = DEFAULT_BUDGETS["swarm"], starts=SWARM_STARTS) -> Detection:
    """Seeds from each first seed of ``starts`` until the first new finding, at most
    ``budget`` seeds each (Rule 3); ``used`` is the most seeds any start needed."""
    from toolcall_sim.drivers.minimize import size
    from toolcall_sim.world.stories import draw_scenario
    from toolcall_sim.drivers.swarm import run_seed

    variant = variant_of(bug)
    per_start = []
    total_s = 0.0
    for first in starts:
        started = time.perf_counter()
        hit = None
        for seed in range(first, first + budget):
            outcome = run_seed(seed, variant, minimize_failures=False)
            if outcome["failure"] is not None:
                hit = (seed, outcome["failure"])
                break
        seconds = time.perf_counter() - started
        total_s += seconds
        if hit is None:
            per_start.append({"first_seed": first, "seeds": None, "seconds": round(seconds, 2)})
        else:
            seed, failure = hit
            faults, calls, _ = size(draw_scenario(seed))
            per_start.append({"first_seed": first, "seeds": seed - first + 1, "seed": seed,
                              "property": failure["property"], "faults": faults, "calls": calls,
                              "seconds": round(seconds, 2)})
    found = all(s["seeds"] is not None for s in per_start)
    used = max((s["seeds"] or budget) for s in per_start) if per_start else 0
    d = Detection(bug, "swarm", found, budget, "seeds per start", used, round(total_s, 3), starts=per_start)
    hits = [s for s in per_start if s["seeds"] is not None]
    if hits:
        d.violated = hits[0]["property"]
        d.caught_by = _caught_by(bug, d.violated)
        d.length = f"{hits[0]['faults']} faults, {hits[0]['calls']} calls (drawn)"
        d.where = ", ".join(f"seed {s['seed']}" for s in hits)
    return d


DETECT = {"explore": detect_explore, "search": detect_search, "swarm": detect_swarm}


def bug_names() -> list[str]:
    return [m.name for m in planted_bugs.PLANTED_BUGS]


def table(drivers=DRIVERS, bugs: list[str] | None = None, budgets: dict | None = None,
          control: bool = True, on_detection=None) -> dict:
    """The detection table as plain values: every bug of ``bugs`` (default: all planted
    bugs) and, with ``control``, the plain contract, through each of ``drivers`` with
    ``budgets`` (default ``DEFAULT_BUDGETS``). ``on_detection(Detection)`` sees each
    row as it is done. The summary per driver: bugs found, of how many, and whether
    the contract stayed clean."""
    budgets = {**DEFAULT_BUDGETS, **(budgets or {})}
    bugs = bug_names() if bugs is None else list(bugs)
    rows = [b for b in bugs if b != CONTROL] + ([CONTROL] if control or CONTROL in bugs else [])
    detections = []
    for driver in drivers:
        for bug in rows:
            d = DETECT[driver](bug, budgets[driver])
            detections.append(d)
            if on_detection is not None:
                on_detection(d)
    summary = {}
    for driver in drivers:
        mine = [d for d in detections if d.driver == driver and d.bug != CONTROL]
        clean = [d for d in detections if d.driver == driver and d.bug == CONTROL]
        summary[driver] = {
            "found": sum(d.found for d in mine), "bugs": len(mine),
            "missed": [d.bug for d in mine if not d.found],
            "budget": budgets[driver], "unit": UNITS[driver],
            "contract_clean": None if not clean else not clean[0].found,
            "seconds": round(sum(d.seconds for d in mine), 1),
        }
    return {"drivers": list(drivers), "budgets": {k: budgets[k] for k in drivers},
            "swarm_starts": list(SWARM_STARTS), "detections": [asdict(d) for d in detections], "summary": summary}


def goal_met(doc: dict) -> bool:
    """Each driver finds all but at most one of the bugs it ran and the contract shows no
    new finding (issue 19's bar: 13 of 14)."""
    return all(s["bugs"] - s["found"] <= 1 and s["contract_clean"] is not False for s in doc["summary"].values())
