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

``coverage_table`` turns the counts into rows:

Rule A. A probe is unreached under a variant when its branch exists there
        (model/probes.py ``variants_of``: today's chatd sends no tool call headers, so the
        agent's record and cancel rules exist under the contract only), that variant ran,
        and no driver hit it. ``unreached`` is the probes unreached somewhere that
        ``UNREACHABLE`` does not list: ``toolcall-sim coverage`` exits 1 while there is
        one, and so does a suite of ``toolcall-sim check`` that requires coverage.
Rule B. A rule (a docs/contract.md heading) is reached under a variant when one of its
        probes is; headings with no branch (``NOT_A_BRANCH``) are only counted, and those
        with a branch but no probe yet (``NOT_YET_PROBED``) are listed as gaps.
Rule C. A user story's proof (``STORY_PROOFS``) is witnessed when every probe it names
        was reached (tests/test_probes.py: it names declared probes only).
Rule D. A swarm gap is a probe a shipped scenario reaches under a variant and the swarm,
        run under that variant, does not; ``SWARM_GAPS`` says why the swarm's stories
        cannot. A gap it does not explain is reported as such (``--strict-swarm`` fails on it).

``add_check_outputs`` builds the counts from ``toolcall-sim check``'s own job outputs
(sim/ci/check.py), so check's section counts the runs check made, nothing more.
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
    # (driver, variant, probe ID) -> (rank, witness text): the swarm gaps name the
    # scenario that reaches the probe under the gap's own variant
    variant_witnesses: dict = field(default_factory=dict)
    ran: list = field(default_factory=list)  # (driver, what) in the order run

    def add(self, driver: str, variant: str, counts, rank=None, witness: str | None = None) -> None:
        table = self.hits.setdefault(driver, {}).setdefault(variant, {})
        for pid, n in counts:
            table[pid] = table.get(pid, 0) + n
            if witness is not None and n:
                _keep(self.witnesses, (driver, pid), rank, f"{witness} ({variant})")
                _keep(self.variant_witnesses, (driver, variant, pid), rank, witness)


def _keep(witnesses: dict, key: tuple, rank, text: str) -> None:
    """The witness of the smallest rank under ``key`` (the first of equal ranks)."""
    old = witnesses.get(key)
    if old is None or rank < old[0]:
        witnesses[key] = (rank, text)


def run_scenarios(cov: Coverage, scenario_dir=None, names=None) -> None:
    """Every shipped scenario (or those of ``scenario_dir``; ``names``: only these stems,
    for a quick test) under both variants."""
    from toolcall_sim.world.inputs import SCENARIO_DIR
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import load

    paths = sorted((scenario_dir or SCENARIO_DIR).glob("*.toml"))
    if names is not None:
        paths = [p for p in paths if p.stem in names]
    for path in paths:
        scenario = load(path)
        for variant in VARIANTS:
            result = run_scenario(scenario, variant)
            add_scenario(cov, path.stem, variant, len(result.world.trace), result.world.probes)
    what = "shipped scenarios" if names is None and scenario_dir is None else "scenarios"
    cov.ran.append(("scenarios", f"{len(paths)} {what} x {len(VARIANTS)} variants"))


def add_scenario(cov: Coverage, name: str, variant: str, records: int, probes: dict) -> None:
    """One scenario run's probes; its witness rank is its trace's length, then its name."""
    cov.add("scenarios", variant, sorted(probes.items()), (records, name), f"{name} [{records} records]")


def add_check_outputs(cov: Coverage, outputs: list[dict]) -> None:
    """The counts of ``toolcall-sim check``'s own runs (its scenario, explorer and swarm
    jobs' outputs, in job order, under today and the contract; a run under a design or
    a planted bug, and the other jobs, count nothing here), each driver's ``ran`` line in
    the order of the drivers."""
    scenarios: dict[str, set] = {}
    swarm: dict[str, list] = {}
    explored: list[str] = []
    for out in outputs:
        kind = out["kind"]
        if "run" in out and getattr(out["run"], "variant", None) not in VARIANTS:
            continue  # a design's or a planted bug's chatd: PROBES' variants are today and the contract
        if kind == "scenario" and "probes" in out:
            run = out["run"]
            add_scenario(cov, run.scenario, run.variant, len(out["trace"]), dict(out["probes"]))
            scenarios.setdefault(run.variant, set()).add(run.scenario)
        elif kind == "swarm":
            run = out["run"]
            for o in out["outcomes"]:
                cov.add("swarm", run.variant, o["probes"], o["seed"], f"seed {o['seed']}")
                swarm.setdefault(run.variant, []).append(o["seed"])
        elif kind == "explore" and "probes" in out:
            run = out["run"]
            cov.add("explore", run.variant, out["probes"], (out["states"], run.name), f"explore {run.name}")
            explored.append(f"{run.name} under {run.variant}: {out['states']} states")
    for v, names in scenarios.items():
        cov.ran.append(("scenarios", f"{len(names)} scenarios under {v}"))
    for v, seeds in swarm.items():
        cov.ran.append(("swarm", f"{len(seeds)} seeds under {v}"))
    cov.ran += [("explore", what) for what in explored]


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
        cov.add("explore", variant, sorted(counter.ctx.probe_counts.items()), (result.states, world),
                f"world {world}")
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
    """The report as plain values (Rules A-D in the module's docstring):

    - ``probes``: per declared probe, its rule, branch, the variants where it exists,
      hits per driver and variant, witnesses, the variants where it exists and no driver
      reached it (``unreached_in``) and, if listed, why it is unreachable;
    - ``unreached``: the probes with an ``unreached_in`` that ``UNREACHABLE`` does not
      list (what fails ``coverage`` and ``check``), ``unreached_listed``: those it lists;
    - ``rules``: per rule heading with a branch (probed, or no probe yet) its status,
      probes and the variants it exists in and was not reached in; ``stories``: per user
      story with a proof, whether its witness probes were reached;
      ``not_a_branch``: how many headings have no branch; ``no_probe_yet``: the gaps;
    - ``swarm_gaps``: (probe, variant) a scenario reaches and the swarm does not, with
      ``SWARM_GAPS``' reason or None (only when both drivers ran); ``scenario_gaps``:
      (probe, variant) another driver reaches and no shipped scenario does.
    """
    ran_variants = [v for v in VARIANTS if any(v in per for per in cov.hits.values())]
    ran_variants += sorted({v for per in cov.hits.values() for v in per} - set(ran_variants))
    rows = []
    for pid, (rule, branch) in declared.PROBES.items():
        hits = {d: {v: cov.hits[d][v].get(pid, 0) for v in cov.hits[d]} for d in DRIVERS if d in cov.hits}
        reached = any(n for per in hits.values() for n in per.values())
        exists = declared.variants_of(pid)
        missing = [v for v in ran_variants if v in exists and not any(per.get(v, 0) for per in hits.values())]
        rows.append({
            "probe": pid, "rule": rule, "branch": branch, "variants": list(exists), "hits": hits,
            "reached": reached, "unreached_in": missing,
            "witness": {d: cov.witnesses[(d, pid)][1] for d in DRIVERS if (d, pid) in cov.witnesses},
            "unreachable": declared.UNREACHABLE.get(pid),
        })
    unknown = sorted({pid for per in cov.hits.values() for counts in per.values() for pid in counts}
                     - set(declared.PROBES))
    unreached = [r["probe"] for r in rows if r["unreached_in"] and r["unreachable"] is None]
    listed = [r["probe"] for r in rows if r["unreached_in"] and r["unreachable"] is not None]
    return {"drivers": [{"driver": d, "ran": what} for d, what in cov.ran], "variants": ran_variants,
            "probes": rows, "reached": sum(r["reached"] for r in rows), "declared": len(rows),
            "unreached": unreached, "unreached_listed": listed, "undeclared_hits": unknown,
            "rules": _rule_rows(rows, ran_variants), "stories": _story_rows(rows),
            "not_a_branch": len(declared.NOT_A_BRANCH), "no_probe_yet": sorted(declared.NOT_YET_PROBED),
            "swarm_gaps": _swarm_gaps(rows, cov), "scenario_gaps": _scenario_gaps(rows, cov)}


def _rule_rows(rows: list[dict], ran_variants: list[str]) -> list[dict]:
    """Per rule with probes: its hits per driver and variant (its probes' sum) and the
    variants where it exists (any of its probes does) and none of its probes was hit."""
    by_rule: dict[str, list[dict]] = {}
    for r in rows:
        by_rule.setdefault(r["rule"], []).append(r)
    out = []
    for rule, mine in by_rule.items():
        exists = [v for v in VARIANTS if any(v in r["variants"] for r in mine)]
        hits: dict = {}
        for r in mine:
            for d, per in r["hits"].items():
                for v, n in per.items():
                    hits.setdefault(d, {}).setdefault(v, 0)
                    hits[d][v] += n
        missing = [v for v in ran_variants if v in exists
                   and not any(per.get(v, 0) for per in hits.values())]
        out.append({"rule": rule, "status": "probed", "probes": [r["probe"] for r in mine],
                    "variants": exists, "hits": hits, "unreached_in": missing,
                    "reached_probes": sum(r["reached"] for r in mine)})
    for rule in declared.NOT_YET_PROBED:
        out.append({"rule": rule, "status": "no probe yet", "probes": [], "variants": [], "hits": {},
                    "unreached_in": [], "reached_probes": 0})
    return out


def _story_rows(rows: list[dict]) -> list[dict]:
    """Per user story with a proof clause: its witness probes, which of them no driver
    reached, and whether the proof is witnessed."""
    reached = {r["probe"]: r["reached"] for r in rows}
    out = []
    for story, probes in declared.STORY_PROOFS.items():
        missing = [p for p in probes if not reached[p]]
        out.append({"story": story, "probes": list(probes), "unreached": missing, "witnessed": not missing})
    return out


def _scenario_gaps(rows: list[dict], cov: Coverage) -> list[dict]:
    """(probe, variant) another driver reaches and no scenario run under that variant
    does: the issue asks every branch of a shipped scenario, so each is a scenario to
    write (reported, never failing)."""
    if "scenarios" not in cov.hits:
        return []
    gaps = []
    for r in rows:
        for v in r["variants"]:
            others = [d for d in r["hits"] if d != "scenarios" and r["hits"][d].get(v, 0)]
            if v in cov.hits["scenarios"] and others and not r["hits"]["scenarios"].get(v, 0):
                gaps.append({"probe": r["probe"], "variant": v, "reached_by": others})
    return gaps


def _swarm_gaps(rows: list[dict], cov: Coverage) -> list[dict]:
    """(probe, variant) a scenario reaches and the swarm, run under that variant, does not."""
    if "scenarios" not in cov.hits or "swarm" not in cov.hits:
        return []
    gaps = []
    for r in rows:
        for v in r["variants"]:
            if v in cov.hits["swarm"] and r["hits"]["scenarios"].get(v, 0) and not r["hits"]["swarm"].get(v, 0):
                gaps.append({"probe": r["probe"], "variant": v,
                             "scenario": cov.variant_witnesses[("scenarios", v, r["probe"])][1],
                             "reason": declared.SWARM_GAPS.get(r["probe"])})
    return gaps
