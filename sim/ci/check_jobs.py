"""``toolcall-sim check``'s jobs: what each entry of a suite runs, and the pool or
cluster that runs them (sim/ci/check.py Rules 1, 2, 4 and 5; the fold is sim/ci/check.py's).

Theory of operation
-------------------
A suite becomes a list of jobs (``_jobs``): module-level functions with plain arguments,
so a forked worker, a spawned one or a Dask worker can run any of them, each returning
plain values (an "output": its runs, findings with their identities, traces for the
pictures). ``run_jobs`` runs them in this process, on ``workers`` processes or on a Dask
cluster and hands the outputs back in job order, which is what makes the report the same
bytes for any of them. The identity of a finding (``fingerprint``, ``finding_id``) lives
here because the jobs give it; sim/ci/check.py folds the outputs and judges them.
Each job's wall time is measured where it runs (``_timed``) and taken out of its output
before the fold (``job_seconds``): it goes to junit.xml only, never into report.json.
"""

from __future__ import annotations

import hashlib
import re
import time
import tomllib
from pathlib import Path
from typing import Callable

from toolcall_sim.model import planted_bugs
from toolcall_sim.model import properties as props

from toolcall_sim.ci import suite as suites

SWARM_CHUNK_SEEDS = 25  # seeds per swarm job: small enough to share between workers


# ---------------------------------------------------------------------------
# Identity
# ---------------------------------------------------------------------------


_SEQ = re.compile(r"#\d+ ?")


def fingerprint(prop: str, residual_risk: str | None, labels: list[str]) -> str:
    """Rule 2: 16 hex digits of the SHA-256 of the property, its class and the action
    labels without message sequence numbers (which only count what was sent before)."""
    text = "\n".join([prop, residual_risk or "", *(_SEQ.sub("", label) for label in labels)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def finding_id(driver: str, where: str, variant: str, prop: str, residual_risk: str | None, fp: str) -> str:
    return ":".join([driver, where, variant, prop, *([residual_risk] if residual_risk else []), fp])


def _file_stem(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p))


def _kind_of(residual_risk: str | None) -> str:
    if residual_risk is None:
        return "finding"
    return "known_finding" if residual_risk in props.KNOWN_FINDINGS else "residual_risk"


# ---------------------------------------------------------------------------
# Jobs (module level: what a worker runs; each returns plain values)
# ---------------------------------------------------------------------------


def chat_names(config) -> dict[str, str]:
    """Chat UUID -> the world's name of the chat (``chat-1``, a scenario's chat name): a
    trace names chats by UUID only, the pictures label them by name (Rule 5)."""
    return {c.chat_id: c.name for c in config.chats}


def _replayed(world: dict, actions: list, prop: str, residual_risk: str | None, config=None) -> dict:
    """Rule 4: the counterexample's trace through the pure model, its hash, the indexes
    of the records that prove the violation, and the world's chat names. ``config``: the
    world already built (a replayed file's scenario is found beside the file)."""
    from toolcall_sim.drivers.counterexample import explore_trace, world_of
    from toolcall_sim.world.replay import trace_sha256

    config = world_of(world) if config is None else config
    trace, final = explore_trace(config, actions)
    evidence: list[int] = []
    for v in props.evaluate(trace, final, ("always", "eventually")).violations:
        if v.property == prop and v.residual_risk == residual_risk:
            evidence = sorted(v.evidence)
            break
    return {"trace": trace, "trace_sha256": trace_sha256(trace), "evidence": evidence, "chats": chat_names(config)}


def _scenario_world(path: str, variant: str) -> dict:
    """The scenario itself embedded (as swarm's counterexamples do): replays anywhere."""
    return {"kind": "scenario", "scenario": tomllib.loads(Path(path).read_text(encoding="utf-8")),
            "variant": variant}


def _finding(driver: str, where: str, variant: str, v_prop: str, risk: str | None, detail: str, world: dict | None,
             actions: list, extra: dict | None = None) -> dict:
    labels = [a.label() for a in actions]
    fp = fingerprint(v_prop, risk, labels)
    out = {"driver": driver, "where": where, "variant": variant, "property": v_prop, "residual_risk": risk,
           "class": _kind_of(risk), "detail": detail, "fingerprint": fp, "steps": len(actions),
           "id": finding_id(driver, where, variant, v_prop, risk, fp), **(extra or {})}
    if world is not None:
        out["_world"], out["_actions"] = world, actions
    return out


def job_scenario(run: suites.ScenarioRun) -> dict:
    from toolcall_sim.world.inputs import load_scenario
    from toolcall_sim.world.run import run_scenario

    scenario = load_scenario(run.path)
    return scenario_output(run, scenario, run_scenario(scenario, run.variant))


def scenario_output(run: suites.ScenarioRun, scenario, result) -> dict:
    """A scenario job's output from its run (``toolcall_sim.world.run.RunResult``): what ``job_scenario``
    returns, and what ``toolcall-sim run --report`` folds (Rule 6)."""
    exp = scenario.expectation(run.variant)
    expected = set(exp.violations or ()) if exp is not None else set()
    failures = result.expectation_failures()
    seen: dict[tuple, object] = {}
    for v in list(result.violations) + list(result.report.informational):
        seen.setdefault((v.property, v.residual_risk), v)
    findings = []
    world = None
    evidence: list[int] = []
    for (prop, risk), v in sorted(seen.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        evidence += list(v.evidence)
        kind = _kind_of(risk)
        covered = kind == "residual_risk" or prop in expected
        if not covered and world is None:
            world = _scenario_world(run.path, run.variant)
        f = _finding("scenario", run.scenario, run.variant, prop, risk, v.detail, None if covered else world,
                     result.world.actions, {"expected": prop in expected})
        if not covered:
            f.update(_replayed(world, result.world.actions, prop, risk))
        findings.append(f)
    trace = [r for r in result.world.trace]
    rows = result.tool_call_rows()
    return {"kind": "scenario", "run": run, "failures": failures, "findings": findings,
            "trace_sha256": result.trace_sha256, "trace": trace, "evidence": sorted(set(evidence)),
            "chats": chat_names(result.world.system.config),
            "results": result.report.results, "unknown_results": result.report.unknown_results,
            # The headline's facts (sim/ci/headline.py): processes started by execute calls,
            # every committed result's kind and time, and how long the run simulated.
            "process_starts": sum(r["process_starts"] for r in rows if r["tool"] == "execute"),
            "committed": sorted((round(x["committed_at_s"] * 1000), x["kind"] or "result")
                                for r in rows for x in r["results"]),
            "sim_ms": result.until_ms,
            "probes": sorted(result.world.probes.items())}


def explore_bounds(run: suites.ExploreRun):
    from toolcall_sim.model import explore as ex

    return ex.Bounds(max_in_flight_ms=run.max_in_flight_ms, horizon_ms=run.horizon_ms, **dict(run.budgets))


def job_explore(run: suites.ExploreRun) -> dict:
    """``explore``'s search (the same states and findings), counting the probes of the
    steps it applies (model/explore_context.py ``probe_counts``) for check's coverage."""
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    bounds = explore_bounds(run)
    with ex.without_cycle_collection():
        search = ex.Search(worlds.build(run.world, run.variant, run.second), bounds, run.max_states)
        search.ctx.probe_counts = {}
        search.run()
        result = search.finish()
        probes = sorted(search.ctx.probe_counts.items())
        del search
    return explore_output(run, result, probes)


def explore_output(run: suites.ExploreRun, result, probes: list | None = None, world: dict | None = None) -> dict:
    """An explorer job's output from its search (``toolcall_sim.model.explore.Result``): what
    ``job_explore`` returns, and what ``toolcall-sim explore --report`` folds (Rule 6).
    ``world``: the counterexamples' world spec when it is not the named world ``run.world``
    (an explored scenario's, which embeds the scenario)."""
    from toolcall_sim.drivers.counterexample import explore_world

    if world is None:
        world = explore_world(run.world, run.variant, explore_bounds(run), run.second)
    findings = []
    for v in sorted(result.violations, key=lambda v: (v.property, v.residual_risk or "")):
        f = _finding("explore", run.name, run.variant, v.property, v.residual_risk, v.detail, world, v.path,
                     {"depth": v.depth})
        f.update(_replayed(world, v.path, v.property, v.residual_risk))
        findings.append(f)
    return {"kind": "explore", "run": run, "states": result.states, "transitions": result.transitions,
            "depth": result.depth, "exhausted": result.exhausted, "states_per_depth": list(result.states_per_depth),
            "findings": findings, **({"probes": probes} if probes is not None else {})}


def job_swarm(run: suites.SwarmRun, first_seed: int, seeds: int) -> dict:
    from toolcall_sim.drivers import swarm
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict

    outcomes = list(swarm.iter_outcomes(first_seed, seeds, run.variant, 1))
    findings = []
    for o in outcomes:
        failure = o["failure"]
        if failure is None:
            continue
        scenario = {**failure["scenario"], "variant": run.variant,
                    "summary": f"swarm seed {failure['seed']} under {run.variant}, minimized: {failure['property']}"}
        result = run_scenario(from_dict(scenario, "world.scenario"), run.variant)
        world = {"kind": "scenario", "scenario": scenario, "variant": run.variant}
        f = _finding("swarm", f"seed-{failure['seed']}", run.variant, failure["property"], None, failure["detail"],
                     world, result.world.actions, {"seed": failure["seed"],
                                                   "other_properties": failure["other_properties"]})
        f.update(_replayed(world, result.world.actions, failure["property"], None))
        findings.append(f)
        o["failure"] = {"seed": failure["seed"], "property": failure["property"]}
    return {"kind": "swarm", "run": run, "outcomes": outcomes, "findings": findings}


def job_planted(driver: str, bug: suites.PlantedBug, planted: suites.Planted) -> dict:
    mutant = planted_bugs.by_name()[bug.name]
    variant = f"contract+{bug.name}"
    caught, where, detail = False, "", ""
    if driver == "scenario":
        from toolcall_sim.world.inputs import SCENARIO_DIR, load_scenario
        from toolcall_sim.world.run import run_scenario

        result = run_scenario(load_scenario(str(SCENARIO_DIR / f"{mutant.scenario}.toml")), variant)
        hit = [v for v in result.violations if v.residual_risk is None and v.property == mutant.caught_by]
        caught, where = bool(hit), mutant.scenario
        detail = hit[0].detail if hit else ""
    elif driver == "explore":
        from toolcall_sim.model import explore as ex
        from toolcall_sim.model import worlds

        bounds = ex.Bounds(max_in_flight_ms=planted.max_in_flight_ms, **dict(bug.explore_budgets))
        result = ex.explore(worlds.build(bug.explore_world, variant), bounds, max_states=planted.max_states,
                            stop_on=lambda f: f.property == mutant.caught_by and f.residual_risk is None)
        hit = [v for v in result.violations if v.residual_risk is None and v.property == mutant.caught_by]
        caught, where = bool(hit), bug.explore_world
        detail = f"{hit[0].detail} ({len(hit[0].path)} steps)" if hit else f"{result.states} states, none caught it"
    else:
        from toolcall_sim.drivers import swarm

        where = f"seeds {bug.swarm_first_seed}..{bug.swarm_first_seed + bug.swarm_seeds - 1}"
        for seed in range(bug.swarm_first_seed, bug.swarm_first_seed + bug.swarm_seeds):
            failure = swarm.run_seed(seed, variant, minimize_failures=False)["failure"]
            if failure is not None and mutant.caught_by in {failure["property"], *failure["other_properties"]}:
                # The seed's first failure is its detail; the bug's property may be among the others.
                said = failure["detail"] if failure["property"] == mutant.caught_by else f"also {mutant.caught_by}"
                caught, detail = True, f"seed {seed}: {said}"
                break
    return {"kind": "planted", "driver": driver, "bug": bug.name, "caught_by": mutant.caught_by, "caught": caught,
            "where": where, "detail": detail}


def job_compare_explore(design: str, world: str) -> dict:
    """Rule 7: one design on one comparison world, with the counterexamples' actions."""
    from toolcall_sim.ci import compare as cmp

    return {"kind": "compare_explore", "design": design,
            "explored": cmp.explore_design(design, cmp.world_named(world), None, keep_paths=True)}


def job_compare_runs(design: str, seeds: int, first_seed: int) -> dict:
    """Rule 7: one design's sampled runs: the swarm seeds, the scenarios, the long run."""
    from toolcall_sim.ci import compare as cmp

    return {"kind": "compare_runs", "design": design, "swarm": cmp.swarm_runs(design, seeds, first_seed),
            "scenarios": cmp.scenario_runs(design), "long": cmp.long_run(design)}


def job_detection(driver: str, bug: str, budget: int) -> dict:
    """Rule 8: one row of the detection table, without its times."""
    from dataclasses import asdict

    from toolcall_sim.ci import bugs

    row = asdict(bugs.DETECT[driver](bug, budget))
    del row["seconds"]
    for start in row["starts"]:
        start.pop("seconds", None)
    return {"kind": "detection", **row}


def _jobs(suite: suites.Suite) -> list[tuple[Callable, tuple]]:
    """Every job of the suite, the long ones first (a pool finishes sooner when the
    longest job does not start last); the fold reads them back in this order."""
    jobs: list[tuple[Callable, tuple]] = []
    detection = suite.detection
    if detection is not None:  # the control rows of the explorer and the search are the longest jobs
        from toolcall_sim.ci.bugs import CONTROL

        rows = [*([CONTROL] if detection.control else []), *detection.bugs]
        budgets = dict(detection.budgets)
        jobs += [(job_detection, (d, b, budgets[d])) for d in detection.drivers if d != "swarm" for b in rows]
    if suite.compare is not None:
        from toolcall_sim.ci.compare import references

        # The references (today, for a design built on its chatd) are explored when not
        # compared: a design's split needs them (sim/ci/compare.py "The flaw and the inherited").
        jobs += [(job_compare_explore, (d, w)) for d in (*suite.compare.designs, *references(suite.compare.designs))
                 for w in suite.compare.worlds]
    jobs += [(job_explore, (r,)) for r in suite.explore]
    planted = suite.planted
    if planted is not None:
        for driver in ("explore", "swarm", "scenario"):
            if driver in planted.drivers:
                jobs += [(job_planted, (driver, bug, planted)) for bug in planted.bugs]
    for r in suite.swarm:
        for first in range(r.first_seed, r.first_seed + r.seeds, SWARM_CHUNK_SEEDS):
            jobs.append((job_swarm, (r, first, min(SWARM_CHUNK_SEEDS, r.first_seed + r.seeds - first))))
    if suite.compare is not None:
        c = suite.compare
        jobs += [(job_compare_runs, (d, c.seeds, c.first_seed)) for d in c.designs]
    if detection is not None and "swarm" in detection.drivers:
        jobs += [(job_detection, ("swarm", b, budgets["swarm"])) for b in rows]
    jobs += [(job_scenario, (r,)) for r in suite.scenarios]
    return jobs


SECONDS = "_seconds"  # a job output's wall time, taken out by ``job_seconds`` before the fold


def _timed(fn, args) -> dict:
    """Job ``fn(*args)``'s output with its wall time (``SECONDS``), measured where the job
    runs (a pool worker, a Dask worker), so a job waiting in the queue is not charged."""
    started = time.perf_counter()
    out = fn(*args)
    out[SECONDS] = time.perf_counter() - started
    return out


def job_seconds(outputs: list[dict]) -> dict[tuple, float]:
    """Each run's wall time from the jobs' ``outputs`` (removed from them, so no report but
    junit.xml can show a time: report.json and the pages stay the same bytes), keyed as
    ``toolcall_sim.reports.junit`` looks the cases up: ("scenario", scenario, variant),
    ("explore", name, variant), ("swarm", variant, first seed, seeds) summed over its
    chunks, ("planted", driver, bug), ("compare", design) summed over its jobs,
    ("detection", driver, bug). An output without a time (memoized in a test) adds 0."""
    seconds: dict[tuple, float] = {}
    for out in outputs:
        t = out.pop(SECONDS, 0.0)
        kind = out["kind"]
        if kind == "scenario":
            key = ("scenario", out["run"].scenario, out["run"].variant)
        elif kind == "explore":
            key = ("explore", out["run"].name, out["run"].variant)
        elif kind == "swarm":
            r = out["run"]
            key = ("swarm", r.variant, r.first_seed, r.seeds)
        elif kind == "planted":
            key = ("planted", out["driver"], out["bug"])
        elif kind in ("compare_explore", "compare_runs"):
            key = ("compare", out["design"])
        elif kind == "detection":
            key = ("detection", out["driver"], out["bug"])
        else:
            continue
        seconds[key] = seconds.get(key, 0.0) + t
    return seconds


def _call(fn, args):  # module level: what a pool worker runs
    return _timed(fn, args)


def _worker_init(parent_pid: int | None = None) -> None:
    """Ctrl-C and SIGTERM are the parent's, and a worker dies with it (sim/io/interrupt.py
    Rule 4): the initializer of sim/cli/commands/check.py's drawing pool (the jobs' pool is
    sim/backends/local.py ``LocalPool``, whose workers do the same)."""
    from toolcall_sim.io.interrupt import worker_signals

    worker_signals(parent_pid)


def _job_at(index: int, jobs: list):  # module level: what a Dask worker runs (job ``index``)
    fn, args = jobs[index]
    return _timed(fn, args)


def run_jobs(jobs, workers: int, on_progress: Callable[[int, int, str], None] | None = None,
             cluster=None) -> list:
    """Rule 1: the outputs of ``jobs`` in job order, computed by ``workers`` processes,
    or on a Dask ``cluster`` (sim/backends/__init__.py: the jobs go as the numbers 0..n-1 where
    a swarm sends seeds, and come back in that order, so the report is the same bytes).
    A Ctrl-C or SIGTERM raises ``toolcall_sim.io.interrupt.Interrupted`` with the outputs finished by
    then (in job order) and the count of jobs: what ``check`` prints as the summary so far."""
    from toolcall_sim.io.interrupt import Interrupted

    outputs: list = []
    try:
        return _run_jobs(jobs, workers, on_progress, cluster, outputs)
    except Interrupted:
        raise
    except KeyboardInterrupt as stop:
        raise Interrupted((list(outputs), len(jobs)), stop) from None


def _run_jobs(jobs, workers: int, on_progress, cluster, outputs: list) -> list:
    """``run_jobs``, appending each output to ``outputs`` as it is folded in."""
    total = len(jobs)
    if cluster is not None:
        from toolcall_sim.backends import map_seeds
        from toolcall_sim.backends.task import SeedFailed

        try:
            for out in map_seeds(_job_at, 0, total, (jobs,), cluster=cluster, unit="job"):
                outputs.append(out)
                if on_progress is not None:
                    on_progress(len(outputs), total, _what(out))
        except SeedFailed as err:  # the job's number stands where a seed would: name the job
            raise RuntimeError(f"check job {err.seed} ({jobs[err.seed][0].__name__}) failed on every try "
                               f"({err.tries}): {err.error}") from None
        return outputs
    if workers <= 1 or total <= 1:
        for i, (fn, args) in enumerate(jobs):
            outputs.append(_timed(fn, args))
            if on_progress is not None:
                on_progress(i + 1, total, _what(outputs[-1]))
        return outputs
    from toolcall_sim.backends.local import LocalPool

    def died(index: int) -> str:
        return f"a worker process died while running check job {index} ({jobs[index][0].__name__})"

    # sim/backends/local.py LocalPool: the parent alone handles Ctrl-C, and an early stop
    # (Ctrl-C, a job that raised) terminates the jobs under way after a grace period
    # instead of waiting for them (an explore job can run for minutes).
    with LocalPool(min(workers, total), preload=_preload) as pool:
        pool.submit_all([(_call, (fn, args)) for fn, args in jobs])
        for out in pool.results(died=died):
            outputs.append(out)
            if on_progress is not None:
                on_progress(len(outputs), total, _what(out))
    return outputs


def _preload() -> None:
    from toolcall_sim.world import run  # noqa: F401 - imported once before the fork, not in each worker


def _what(out: dict) -> str:
    kind = out["kind"]
    if kind == "planted":
        return f"planted {out['bug']} ({out['driver']})"
    if kind == "detection":
        return f"detection {out['bug']} ({out['driver']})"
    if kind == "compare_explore":
        return f"compare {out['design']} ({out['explored']['world']})"
    if kind == "compare_runs":
        return f"compare {out['design']} (swarm, scenarios, long run)"
    run = out["run"]
    if kind == "scenario":
        return f"scenario {run.scenario} ({run.variant})"
    if kind == "explore":
        return f"explore {run.name} ({run.variant})"
    return f"swarm {run.variant}"

