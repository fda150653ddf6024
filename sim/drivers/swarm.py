"""Swarm testing: many small random worlds, each with its own mix of fault kinds.

Theory of operation
-------------------
Random testing with every fault kind always on tends to test the *average* of the fault
kinds: a world that restarts the agent every few minutes never lets a 20-minute command
reach its second attempt, and a world full of partitions rarely shows what one delayed
start request does to an interrupt. Swarm testing (Groce et al., "Swarm Testing", ISSTA
2012; TigerBeetle's VOPR does the same) instead turns each fault kind on or off per run,
so some runs are quiet except for one kind of trouble and others pile several together.

One swarm seed S is one run. The parts live beside this module:

1. sim/world/stories.py draws it: ``draw_scenario(S)`` is a scenario dict (world, workload,
   the race stories it tells, a fault mix, how long to run) from the seed's own
   generator, validated by ``toolcall_sim.world.scenario.from_dict``, so a swarm world *is* a scenario
   file: ``toolcall_sim.world.scenario_toml.to_toml`` writes it out and ``toolcall-sim run`` runs it.
2. ``run_seed`` (here) reads it with ``toolcall_sim.world.scenario_drawn.from_drawn`` (the ``Scenario``
   ``from_dict`` gives, without checking again what the drawing made valid) and runs it
   with ``toolcall_sim.world.run.run_scenario`` under the variant. A
   violation with ``residual_risk`` None is a new finding (a *failure*); documented
   residual risks and known findings (``toolcall_sim.model.properties.KNOWN_FINDINGS``: the slow-spawn
   ``timed_out`` of scenarios/finding_slow_spawn_timed_out.toml) are counted by name,
   each in its own tally, and are not failures. Every class is sampled: no story steers
   clear of one. A run that raises is a failure of the pseudo property ``exception``:
   the model must not crash on any world the scenario format can describe.
3. sim/drivers/minimize.py minimizes a failure: greedy delta debugging over one-step
   simplifications of the scenario dict, keeping each step after which the *same*
   property still fails as a new finding, until a pass keeps none (1-minimal). Each
   candidate is a full deterministic re-run with the same root seed, so the minimized
   scenario fails on its own; steps only ever remove, so the schedule never grows.
4. ``run_swarm`` (here) runs seeds ``first_seed .. first_seed + seeds - 1`` through
   sim/backends/__init__.py ``map_seeds``: in this process, in ``workers`` local processes, or
   on a Dask cluster (``--cluster tcp://host:8786``), in chunks of consecutive seeds,
   folded back in seed order; each seed's outcome depends only on the seed and the
   variant, so the report does not depend on the backend or the number of workers.
   reports/swarm.py writes what a user reads; ``toolcall_sim.io.progress`` shows the seeds done on
   stderr as they finish (a bar on a terminal, nothing in a log or with ``--quiet``) and
   the line that names a failing seed's files as soon as they are written.

Rule 1. No global ``random``, no wall clock, no iteration over sets or hash order (the
        drawing's Rule 1 in sim/world/stories.py), and no state carried from one seed to the
        next: a worker runs many seeds, and a forked one starts from the parent's memory.
Rule 2. The TOML written for a failure parses back to the identical dict (checked before
        the file is written: ``toolcall_sim.world.scenario_toml.exact_toml``).
Rule 3. A seed reports at most one failure: the earliest new finding (by simulated time,
        then property name); the seed's other failing properties are listed with it.
        Minimizing one property per seed keeps the cost of a failing seed bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from toolcall_sim.model.properties import KNOWN_FINDINGS
from toolcall_sim.reports.swarm import describe_fault, format_report

from toolcall_sim.backends import map_seeds
# Re-exported: sim/ci/bench.py, sim/cli/commands/check.py and tests/test_swarm.py read them as swarm's.
from toolcall_sim.backends.local import _pool_context  # noqa: F401
from toolcall_sim.backends.task import MAX_CHUNK_SEEDS, chunks  # noqa: F401
from toolcall_sim.drivers.minimize import minimize_scenario, size
from toolcall_sim.io.output import default_out_dir
from toolcall_sim.world.scenario import ScenarioError, from_dict
from toolcall_sim.world.scenario_drawn import from_drawn
from toolcall_sim.world.scenario_toml import exact_toml, to_toml
from toolcall_sim.world.stories import FAULT_KINDS, MAX_FAULTS, STORIES, draw_scenario

# Re-exported: callers and tests reach the parts through ``toolcall_sim.drivers.swarm``.
__all__ = [
    "FAULT_KINDS", "MAX_FAULTS", "STORIES", "draw_scenario", "to_toml", "size", "minimize", "describe_fault",
    "format_report", "Verdict", "judge", "run_seed", "iter_outcomes", "summarize", "run_swarm", "write_failure",
    "write_counterexample",
]

MAX_MINIMIZE_RUNS = 150  # bound on the re-runs one failing seed may cost
DEFAULT_OUT_DIR = default_out_dir("swarm")  # relative: under the current directory, never in the package
PROGRESS_EVERY = 25  # seeds between progress lines on stderr (TOOLCALL_SIM_PROGRESS=lines)
EXCEPTION = "exception"  # pseudo property: the run raised

_H = 3_600_000


# ---------------------------------------------------------------------------
# Running and judging one scenario dict
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What one run of a scenario dict found, as plain values."""

    findings: tuple[tuple[int, str, str], ...]  # new findings: (at_ms, property, detail), sorted
    residual_risks: tuple[str, ...]  # names, one per occurrence, sorted
    unknown_results: int
    results: int
    sim_ms: int
    # Rule coverage (model/probes.py): (probe ID, hits) of the run, sorted by ID.
    probes: tuple[tuple[str, int], ...] = ()

    @property
    def properties(self) -> frozenset[str]:
        return frozenset(p for _, p, _ in self.findings)

    def first(self, prop: str | None = None) -> tuple[int, str, str] | None:
        return next((f for f in self.findings if prop is None or f[1] == prop), None)


def judge(data: dict, variant: str, scenario=None) -> Verdict:
    """Run ``data`` under ``variant``. A crash of the run is a finding of ``exception``;
    a dict that is not a valid scenario raises ScenarioError (the caller's mistake).
    ``scenario``: ``data`` read already (``run_seed``'s drawn world, ``from_drawn``)."""
    from toolcall_sim.world.run import run_scenario

    if scenario is None:
        scenario = from_dict(data, f"<{data.get('name', 'swarm')}>")
    try:
        result = run_scenario(scenario, variant, verdicts_only=True)  # (no header or action records)
    except ScenarioError:
        raise
    except Exception as err:  # noqa: BLE001 - any crash of the model or world is a finding
        return Verdict(((0, EXCEPTION, f"{type(err).__name__}: {err}"),), (), 0, 0, scenario.until_ms)
    report = result.report
    findings = sorted((v.at_ms, v.property, v.detail) for v in result.violations if v.residual_risk is None)
    risks = sorted(v.residual_risk for v in list(result.violations) + list(report.informational)
                   if v.residual_risk is not None)
    return Verdict(tuple(findings), tuple(risks), report.unknown_results, report.results, result.until_ms,
                   tuple(sorted(result.world.probes.items())))


def minimize(data: dict, still_fails: Callable[[dict], bool], max_runs: int = MAX_MINIMIZE_RUNS) -> tuple[dict, int]:
    """The smallest failing scenario dict sim/drivers/minimize.py finds from ``data`` within
    ``max_runs`` checks, and the checks spent."""
    return minimize_scenario(data, still_fails, max_runs)


# ---------------------------------------------------------------------------
# One seed
# ---------------------------------------------------------------------------


def run_seed(seed: int, variant: str, minimize_failures: bool = True) -> dict:
    """Draw, run, judge and (on a failure) minimize swarm seed ``seed``. Plain JSON-able
    values only: this is what a worker process sends back."""
    from toolcall_sim.world.simulation import rare_collections

    with rare_collections():  # the whole seed, its drawing and judging too (sim/world/simulation.py)
        data = draw_scenario(seed)
        # Drawn here, so valid by construction: read without the checks a user's file
        # gets (``from_drawn``; a minimized candidate is checked by ``judge`` as before).
        verdict = judge(data, variant, from_drawn(data, f"<{data['name']}>"))
    outcome = {
        "seed": seed,
        "sim_ms": verdict.sim_ms,
        "results": verdict.results,
        "unknown_results": verdict.unknown_results,
        "residual_risks": list(verdict.residual_risks),
        "failure": None,
        # The probes the seed's run took (``toolcall-sim coverage``): plain pairs, so a
        # worker process or a Dask worker sends them back as it sends the rest.
        "probes": [list(p) for p in verdict.probes],
    }
    first = verdict.first()
    if first is None:
        return outcome
    at_ms, prop, detail = first
    minimized, runs = data, 0
    if minimize_failures:
        minimized, runs = minimize(data, lambda d: prop in judge(d, variant).properties)
    final = judge(minimized, variant).first(prop) if minimized is not data else first
    outcome["failure"] = {
        "seed": seed,
        "property": prop,
        "detail": final[2],
        "at_s": final[0] / 1000,
        "original_detail": detail,
        "other_properties": sorted(verdict.properties - {prop}),
        "faults_drawn": len(data["faults"]),
        "faults": [describe_fault(f) for f in minimized["faults"]],
        "tool_calls": size(minimized)[1],
        "minimize_runs": runs,
        "scenario": minimized,
    }
    return outcome


# ---------------------------------------------------------------------------
# Many seeds
# ---------------------------------------------------------------------------


def _preload() -> None:
    from toolcall_sim.world import run  # noqa: F401 - what judge imports, imported once before a fork, not in each worker


def iter_outcomes(first_seed: int, seeds: int, variant: str, workers: int = 1, cluster=None, on_progress=None):
    """The outcomes of seeds ``first_seed .. first_seed + seeds - 1``, in seed order, one
    at a time (so a caller that stops early keeps every finished one), from this
    process, ``workers`` local processes or the Dask ``cluster`` (sim/backends/__init__.py): the
    outcomes are the same for any backend and any ``workers``."""
    yield from map_seeds(run_seed, first_seed, seeds, (variant,), workers=workers, cluster=cluster,
                         on_progress=on_progress, preload=_preload)


def summarize(outcomes: list[dict], first_seed: int, variant: str) -> dict:
    """The report of finished outcomes (all of them, or those before a Ctrl-C)."""
    risks: dict[str, int] = {}
    known: dict[str, int] = {}
    for o in outcomes:
        for name in o["residual_risks"]:
            tally = known if name in KNOWN_FINDINGS else risks
            tally[name] = tally.get(name, 0) + 1
    results = sum(o["results"] for o in outcomes)
    unknown = sum(o["unknown_results"] for o in outcomes)
    return {
        "variant": variant,
        "first_seed": first_seed,
        "seeds_run": len(outcomes),
        "failures": [o["failure"] for o in outcomes if o["failure"] is not None],
        "residual_risks": dict(sorted(risks.items())),
        "known_findings": dict(sorted(known.items())),
        "sim_hours": round(sum(o["sim_ms"] for o in outcomes) / _H, 3),
        "results": results,
        "unknown_results": unknown,
        "unknown_rate": round(unknown / results, 4) if results else 0.0,
    }


def run_swarm(first_seed: int, seeds: int, variant: str, workers: int = 1, cluster=None) -> dict:
    """The report of seeds ``first_seed .. first_seed + seeds - 1``: outcomes ordered by
    seed, so it is the same for any ``workers`` and backend."""
    return summarize(list(iter_outcomes(first_seed, seeds, variant, workers, cluster)), first_seed, variant)


# ---------------------------------------------------------------------------
# Failure files
# ---------------------------------------------------------------------------


def failure_text(failure: dict, variant: str) -> str:
    """A failure's minimized scenario; the file runs under ``variant`` by default and has
    no expectations, so ``toolcall-sim run`` exits 1 while the bug reproduces."""
    data = {**failure["scenario"], "variant": variant,
            "summary": f"swarm seed {failure['seed']} under {variant}, minimized: {failure['property']}"}
    return exact_toml(data)  # Rule 2: the file must be the scenario, exactly


def write_failure(failure: dict, variant: str, out_dir: Path) -> Path:
    """Write a failure's minimized scenario and, next to it as ``.json``, its counterexample
    in the one replay format (the minimized world's run, as labelled actions, which
    ``toolcall-sim replay`` runs through the pure model with no simpy): both files or
    neither (sim/io/output.py Rule 1; a full disk once left the scenario alone)."""
    from toolcall_sim.drivers import counterexample as cx

    path = out_dir / f"swarm-{failure['seed']}-{variant}.toml"
    return cx.write_pair(path, failure_text(failure, variant), variant, failure["property"], "swarm",
                         failure["detail"])[0]


def write_counterexample(failure: dict, variant: str, scenario_path: Path) -> Path:
    """The counterexample of the scenario file ``scenario_path`` (as ``write_failure``
    wrote it), written again with it; returns the ``.json``."""
    from toolcall_sim.drivers import counterexample as cx

    text = Path(scenario_path).read_text(encoding="utf-8")
    return cx.write_pair(Path(scenario_path), text, variant, failure["property"], "swarm", failure["detail"])[1]


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------
