"""Rule coverage (issue 35): which declared probes (model/probes.py) the drivers reach.

Theory of operation
-------------------
Every model handler that takes a numbered rule's branch returns a ``Probe`` effect; the
interpreter counts it beside the step (``Step.probes``), never in the trace. This module
runs the chosen drivers and adds their probes up, per driver and variant:

- ``scenarios``: every shipped scenario under ``today`` and ``contract``; the witness of a
  probe is the scenario with the fewest trace records that reaches it (ties: by name).
- ``swarm``: seeds ``first_seed ..`` under each variant through ``iter_outcomes`` (the
  seed's outcome carries its probe counts, so the counts are the same for any
  ``workers``); the witness is the lowest seed.
- ``explore``: one small world (model/worlds.py) under each variant, searched with the
  transition and expansion memos off (``_CountingContext``): every transition the search
  lists is applied for real, so the count is "probes per listed transition", the same on
  every run whatever a memo would have saved. The states found are the same as with the
  memos (they only save time); the search is slower, which is a coverage run's price.

``coverage_table`` turns the counts into rows; ``unreached`` is the probes no driver
reached and model/probes.py ``UNREACHABLE`` does not list: ``toolcall-sim coverage``
exits 1 while there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolcall_sim.model import probes as declared

VARIANTS = ("today", "contract")
DRIVERS = ("scenarios", "swarm", "explore")


@dataclass
class Coverage:
    """Counts: driver -> variant -> probe ID -> hits; witnesses: (driver, probe ID) ->
    (rank, witness text), the smallest rank kept."""

    hits: dict = field(default_factory=dict)
    witnesses: dict = field(default_factory=dict)
    ran: list = field(default_factory=list)  # (driver, what) in the order run

    def add(self, driver: str, variant: str, counts, rank=None, witness: str | None = None) -> None:
        table = self.hits.setdefault(driver, {}).setdefault(variant, {})
        for pid, n in counts:
            table[pid] = table.get(pid, 0) + n
            if witness is not None:
                old = self.witnesses.get((driver, pid))
                if old is None or rank < old[0]:
                    self.witnesses[(driver, pid)] = (rank, f"{witness} ({variant})")


def run_scenarios(cov: Coverage, scenario_dir=None) -> None:
    from toolcall_sim.world.inputs import SCENARIO_DIR
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import load

    paths = sorted((scenario_dir or SCENARIO_DIR).glob("*.toml"))
    for path in paths:
        scenario = load(path)
        for variant in VARIANTS:
            result = run_scenario(scenario, variant)
            records = len(result.world.trace)
            cov.add("scenarios", variant, sorted(result.world.probes.items()), (records, path.stem),
                    f"{path.stem} [{records} records]")
    cov.ran.append(("scenarios", f"{len(paths)} shipped scenarios x {len(VARIANTS)} variants"))


def run_swarm(cov: Coverage, seeds: int, first_seed: int = 1, workers: int = 1) -> None:
    from toolcall_sim.drivers.swarm import iter_outcomes

    for variant in VARIANTS:
        for outcome in iter_outcomes(first_seed, seeds, variant, workers):
            cov.add("swarm", variant, outcome["probes"], outcome["seed"], f"seed {outcome['seed']}")
    cov.ran.append(("swarm", f"seeds {first_seed}..{first_seed + seeds - 1} x {len(VARIANTS)} variants"))


def run_explore(cov: Coverage, world: str, max_states: int = 200_000) -> None:
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    for variant in VARIANTS:
        counter = _counting_search(worlds.build(world, variant), ex.Bounds(), max_states)
        counter.run()
        result = counter.finish()
        cov.add("explore", variant, sorted(counter.ctx.probe_counts.items()), 0, f"world {world}")
        cov.ran.append(("explore", f"world {world} under {variant}: {result.states} states"))


def _counting_search(config, bounds, max_states: int):
    """An explorer search whose context applies every step for real and counts its probes."""
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import system as msys
    from toolcall_sim.model.explore_context import Context

    class _CountingContext(Context):
        def __init__(self):
            super().__init__(False)
            self.probe_counts: dict[str, int] = {}

        def _memo_key(self, s, action):  # no transition memo: every step is applied
            return None, frozenset()

        def apply(self, s, action):
            self.misses += 1
            st = msys.apply(s, action)
            counts = self.probe_counts
            for pid in st.probes:
                counts[pid] = counts.get(pid, 0) + 1
            return st.system, self.ghost_of(st.records)

    class _Cold:  # ``Search``'s ``warm_from``: this context, and no expansion memo
        ctx = _CountingContext()
        expansions = expansions_old = None
        steps: dict = {}
        steps_old: dict = {}

    return ex.Search(config, bounds, max_states, warm_from=_Cold)


def coverage_table(cov: Coverage) -> dict:
    """The report as plain values: per declared probe, its rule, branch, hits per
    driver and variant, witnesses and, if listed, why it is unreachable."""
    rows = []
    for pid, (rule, branch) in declared.PROBES.items():
        hits = {d: {v: cov.hits[d][v].get(pid, 0) for v in cov.hits[d]} for d in DRIVERS if d in cov.hits}
        reached = any(n for per in hits.values() for n in per.values())
        rows.append({
            "probe": pid, "rule": rule, "branch": branch, "hits": hits, "reached": reached,
            "witness": {d: cov.witnesses[(d, pid)][1] for d in DRIVERS if (d, pid) in cov.witnesses},
            "unreachable": declared.UNREACHABLE.get(pid),
        })
    unknown = sorted({pid for per in cov.hits.values() for counts in per.values() for pid in counts}
                     - set(declared.PROBES))
    unreached = [r["probe"] for r in rows if not r["reached"] and r["unreachable"] is None]
    return {"drivers": [{"driver": d, "ran": what} for d, what in cov.ran], "probes": rows,
            "reached": sum(r["reached"] for r in rows), "declared": len(rows),
            "unreached": unreached, "undeclared_hits": unknown}
