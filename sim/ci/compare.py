"""Compare designs: each design variant through the explorer, the swarm and the scenario
suite, as one matrix of verdicts per property and a table of measured costs (issue 16).

Theory of operation
-------------------
The CODAGT-757 design argues in prose (docs/contract.md D3, D7) why the contract beats
its alternatives; model/designs.py makes each alternative a variant over the same model,
and this driver lets the tools make the argument. For every design it runs, in this order:

1. the explorer on the comparison worlds (``COMPARE_WORLDS``): ``below-margin`` is the
   issue's default world (messages reordered, never delayed: below the 2 s age margin),
   ``above-margin`` the cheapest world where the margin matters (one edit, messages up to
   5 s in flight, one agent restart and one ownership change), where the contract has
   its age-check residual risk. Each violated property's shortest counterexample is
   saved in the replay format (``<out>/<design>-<world>-<property>.json``);
2. the swarm's worlds (sim/world/stories.py) for ``seeds`` seeds, each judged like a swarm seed
   (no minimizing: the explorer gives the short counterexamples);
3. the scenario suite: every shipped scenario file that runs the current agent (an old
   agent's scenarios check US8, "as today", the same under every design);
4. a long run for the memory column: one chat making ``LONG_RUN_CALLS`` tool calls in as
   many messages.

The matrix cell of a (design, property) pair is, first match wins: ``violated`` (a new
finding: the explorer's shortest counterexample, else the first swarm seed, else the
first scenario), ``known finding``, ``residual risk`` (a documented one, by name),
``holds exhaustively`` (in the explorer worlds that were exhausted), or ``holds`` in the
sampled runs. Costs are measured in the swarm runs (the same runs the verdicts come from)
and the long run: durable writes per tool call (model/chatd/designs.py
``durable_write`` notes), agent records held (the most any swarm run ended with, and at
the end of the long run), process starts per execute call, the share of unknown
results, interrupt latency (from the user's interrupt to its commit, median and p99, in
simulated seconds), and requests to the agent per tool call (dials left out).

The flaw and the inherited
--------------------------
A design's row also says which of its violations is the flaw its design section names,
and which it only inherits from today's chatd (``split``), so a report draws the flaw
(the ledger's lost record, the fresh start after a restart), not merely the shortest
violation (for the ledger that is today's interrupt without a cancel, in 8 steps). Only
the explorer's new findings (no residual risk) are split: its worlds are exhausted, so
"the same world shows it" has one answer; a violation only the swarm or a scenario finds
stays in the matrix.

- The flaw is model/designs.py's ``Design.flaw`` of the design the variant runs (the
  name before any ``+bug``): its counterexample is the shortest new finding of that
  property over the comparison worlds (the first world on a tie), whoever else shows
  the property too (today runs a command twice as well; the ledger's section is about
  why its record does not stop that). When the explorer does not find it, ``where``
  says what did (the matrix cell: a swarm seed, a scenario) or None. Today, the
  contract and a planted bug have no flaw; a design whose flaw is a cost (remember-all,
  incarnation-token) names it with no property.
- Inherited from today: a design built on today's chatd (``Design.base`` "today")
  inherits a new finding of a property other than its flaw when ``today`` (with the same
  planted bugs, ``reference_of``) has a new finding of the same property in the same
  comparison world. Nothing else is inherited: a design built on the contract's chatd
  inherits nothing from today, whatever today shows.
- Its own: every other new finding (today's own row puts all of its findings here).

Each inherited and own entry is one (world, property): its shortest counterexample there
(steps, detail, file). The reference is explored on the same worlds even when it is not
compared itself (``references``; ``toolcall-sim check`` adds its explorer jobs).

Rule 1. Deterministic: no wall clock enters the data; seeds run in ``workers`` processes
        (sim/backends/__init__.py ``map_seeds``) in chunks and are put back in seed order, so the result is
        the same for any worker count. The caller may time the whole (it is not data).
Rule 2. The data is plain JSON values (``--json``); reports/compare.py renders it.
Rule 3. A Ctrl-C or SIGTERM ends ``compare`` with ``toolcall_sim.io.interrupt.Interrupted`` holding
        the data of the designs finished by then (their counterexample files are
        written already), so the command prints the matrix so far.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from toolcall_sim.scenarios import SHIPPED_DIR
from toolcall_sim.model import designs as model_designs
from toolcall_sim.model import explore as ex
from toolcall_sim.model import properties as props
from toolcall_sim.model import worlds
from toolcall_sim.model.agent.designs import records_held

from toolcall_sim.drivers import counterexample as cx

DEFAULT_DESIGNS = ("today", "contract") + tuple(d.name for d in model_designs.DESIGNS)
DEFAULT_SEEDS = 200
LONG_RUN_CALLS = 40
SCENARIO_DIR = SHIPPED_DIR
# The properties of the matrix: safety and liveness (the ``sometimes`` ones are no verdicts).
MATRIX_KINDS = ("always", "eventually")


@dataclass(frozen=True)
class CompareWorld:
    name: str
    world: str  # model/worlds.py name
    bounds: ex.Bounds
    max_states: int
    summary: str


COMPARE_WORLDS: tuple[CompareWorld, ...] = (
    CompareWorld("below-margin", "default", ex.Bounds(), 150_000,
                 "default world, no message delay; one agent restart, ownership change, interrupt, lost response, task retry"),
    CompareWorld("above-margin", "two-messages",
                 ex.Bounds(max_in_flight_ms=5, agent_restarts=1, ownership_changes=1, interrupts=0, lost_responses=0,
                           task_retries=0), 60_000,
                 "one edit, messages up to 5 s in flight (past the 2 s margin); one agent restart and ownership change"),
)


class CompareError(ValueError):
    """Bad input to compare (an unknown design or world): exit 2."""


def check_designs(names: list[str]) -> list[str]:
    from toolcall_sim.model import planted_bugs

    for name in names:
        try:
            planted_bugs.resolve(name)
        except planted_bugs.UnknownVariant as err:
            raise CompareError(f"--designs: {err}") from None
    if len(set(names)) != len(names):
        raise CompareError("--designs: a design is named twice")
    return names


def check_worlds(names: list[str]) -> list[CompareWorld]:
    known = {w.name: w for w in COMPARE_WORLDS}
    out = []
    for name in names:
        if name not in known:
            raise CompareError(f"--worlds: unknown world {name!r} (known: {', '.join(known)})")
        out.append(known[name])
    if len(set(names)) != len(names):
        raise CompareError("--worlds: a world is named twice")
    return out


# ---------------------------------------------------------------------------
# 1. The explorer
# ---------------------------------------------------------------------------


def world_named(name: str) -> CompareWorld:
    return next(w for w in COMPARE_WORLDS if w.name == name)


def explore_design(design: str, cw: CompareWorld, out_dir: pathlib.Path | None, keep_paths: bool = False) -> dict:
    """The explorer on one comparison world: states, whether exhausted, and each violated
    property's shortest counterexample (saved under ``out_dir`` when given). With
    ``keep_paths`` each violation also carries ``_world`` (its replay spec) and
    ``_actions`` (the counterexample), for ``toolcall-sim check``'s pictures; they are
    not data (the caller pops them)."""
    config = worlds.build(cw.world, design)
    result = ex.explore(config, cw.bounds, max_states=cw.max_states)
    spec = cx.explore_world(cw.world, design, cw.bounds)
    found = []
    for v in sorted(result.violations, key=lambda v: (v.property, v.residual_risk or "")):
        path = None
        if out_dir is not None:
            name = v.property + (f"-{v.residual_risk}" if v.residual_risk else "")
            path = out_dir / f"{design.replace('+', '_')}-{cw.name}-{name}.json"
            cx.save_actions(path, spec, v.property, v.residual_risk, v.path, "compare", v.detail)
        found.append({"property": v.property, "residual_risk": v.residual_risk, "steps": len(v.path),
                      "detail": v.detail, "file": str(path) if path is not None else None,
                      **({"_world": spec, "_actions": list(v.path)} if keep_paths else {})})
    return {"world": cw.name, "states": result.states, "exhausted": result.exhausted, "violations": found}


# ---------------------------------------------------------------------------
# 2-4. Simulated runs and their costs
# ---------------------------------------------------------------------------


def _measure(result) -> dict:
    """What one simulated run found and cost, as plain values."""
    trace = result.world.trace
    final = result.world.system
    report = result.report
    calls = props.committed_calls(final)
    executes = sum(1 for c in calls if c.tool == "execute")
    starts = durable = requests = 0
    asked: dict[str, int] = {}
    latencies = []
    for rec in trace:
        kind = rec.get("kind")
        if kind == "truth" and rec.get("truth") == "process_started":
            starts += 1
        elif kind == "note":
            name = rec.get("note")
            if name == "durable_write":
                durable += 1
            elif name == "interrupt_requested":
                asked[rec.get("chat_id")] = rec["t_ms"]
            elif name == "interruption_finished" and rec.get("chat_id") in asked:
                latencies.append(rec["t_ms"] - asked.pop(rec.get("chat_id")))
        elif kind == "send" and rec.get("dst") == "agent" and rec.get("route") != "dial":
            requests += 1
    return {
        "findings": sorted({v.property for v in result.violations if v.residual_risk is None}),
        "known": sorted({(v.property, v.residual_risk) for v in result.violations
                         if v.residual_risk is not None and props.is_known_finding(v)}),
        "risks": sorted({(v.property, v.residual_risk) for v in result.violations
                         if v.residual_risk is not None and not props.is_known_finding(v)}),
        "tool_calls": len(calls), "executes": executes, "starts": starts, "durable_writes": durable,
        "requests": requests, "records_at_end": records_held(final.agent),
        "unknown": report.unknown_results, "results": report.results, "interrupt_ms": latencies,
    }


def run_seed(args: tuple[str, int]) -> dict:
    """One swarm world under a design (sim/drivers/swarm.py's drawing and judging, no minimizing)."""
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict
    from toolcall_sim.world.stories import draw_scenario

    design, seed = args
    data = draw_scenario(seed)
    measured = _measure(run_scenario(from_dict(data, f"<swarm-{seed}>"), design))
    return {"seed": seed, **measured}


def _seed_run(seed: int, design: str) -> dict:  # module level: what a Dask worker runs
    return run_seed((design, seed))


def swarm_runs(design: str, seeds: int, first_seed: int = 1, workers: int = 1, cluster=None) -> list[dict]:
    """Seeds ``first_seed ..`` under ``design``, in seed order whatever ``workers`` is, or
    on a Dask ``cluster`` (sim/backends/__init__.py), in the same order."""
    all_seeds = list(range(first_seed, first_seed + seeds))
    if cluster is not None:
        from toolcall_sim.backends import map_seeds

        return list(map_seeds(_seed_run, first_seed, seeds, (design,), cluster=cluster))
    if workers <= 1 or seeds < 2:
        return [run_seed((design, s)) for s in all_seeds]
    from toolcall_sim.backends import map_seeds

    # sim/backends/local.py's pool (workers ignore Ctrl-C, an early stop always ends),
    # in seed order as on one process.
    return list(map_seeds(_seed_run, first_seed, seeds, (design,), workers=workers))


def scenario_files() -> list[pathlib.Path]:
    """The scenario suite of the comparison: every shipped scenario that runs the current
    agent (the old agent's scenarios check US8, which no design changes)."""
    from toolcall_sim.world.scenario import load

    return [p for p in sorted(SCENARIO_DIR.glob("*.toml")) if load(p).world_value("agent", "rev-c") == "rev-c"]


def scenario_runs(design: str) -> list[dict]:
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import load

    out = []
    for path in scenario_files():
        result = run_scenario(load(path), design)
        out.append({"scenario": path.stem, **_measure(result)})
    return out


def long_run(design: str, calls: int = LONG_RUN_CALLS) -> dict:
    """One chat making ``calls`` tool calls in as many messages: what the agent holds at
    the end (the memory column)."""
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict

    data = {
        "name": "compare-long-run",
        "summary": f"One chat makes {calls} tool calls, one per message.",
        "seed": 1,
        "until": f"{calls * 5 + 60}s",
        "turns": [{"chat": "chat-1", "tool_calls": [
            {"id": f"toolu_{i:03d}", "tool": "execute", "command": f"step {i}", "runs_for": "1s"}]}
            for i in range(1, calls + 1)],
    }
    return {"calls": calls, **_measure(run_scenario(from_dict(data, "<compare-long-run>"), design))}


# ---------------------------------------------------------------------------
# The flaw and the inherited (the module docstring's section)
# ---------------------------------------------------------------------------

INHERITED_FROM = "today"  # the chatd variant whose violations a design built on it inherits


def design_of(name: str) -> model_designs.Design | None:
    """The rejected design the variant ``name`` runs (``ledger``, ``ledger+no-age-margin``),
    or None (today, the contract, a planted bug alone)."""
    return model_designs.by_name().get(name.partition("+")[0])


def reference_of(name: str) -> str | None:
    """The variant whose violations ``name`` may inherit: today with the same planted
    bugs, for a design built on today's chatd; None for every other variant."""
    design = design_of(name)
    if design is None or design.base != INHERITED_FROM:
        return None
    _, plus, bugs = name.partition("+")
    return INHERITED_FROM + plus + bugs


def references(names) -> list[str]:
    """The reference variants ``names`` need and do not compare themselves, in order."""
    out: list[str] = []
    for name in names:
        ref = reference_of(name)
        if ref is not None and ref not in names and ref not in out:
            out.append(ref)
    return out


def _entry(world: str, v: dict) -> dict:
    return {"property": v["property"], "world": world, "steps": v["steps"], "detail": v["detail"], "file": v["file"]}


def split(name: str, explored: list[dict], matrix: dict, reference: list[dict] | None = None) -> dict:
    """The design's flaw, what it inherits from today, and its own other new findings
    (the module docstring's definitions). ``reference``: ``reference_of(name)``'s
    explorer results on the same worlds (required when it has one)."""
    design = design_of(name)
    ref = reference_of(name)
    if ref is not None and reference is None:
        raise ValueError(f"{name}: the explorer results of {ref} are needed to split its violations")
    flaw_prop = design.flaw if design is not None else ""
    shown = {(w["world"], v["property"]) for w in reference or () for v in w["violations"]
             if v["residual_risk"] is None}
    new = [(w["world"], v) for w in explored for v in w["violations"] if v["residual_risk"] is None]
    flaw = None
    if design is not None:
        found = [(v["steps"], i) for i, (_, v) in enumerate(new) if flaw_prop and v["property"] == flaw_prop]
        cell = matrix.get(flaw_prop) if flaw_prop else None
        flaw = {"name": design.flaw_name, "property": flaw_prop or None,
                "counterexample": _entry(*new[min(found)[1]]) if found else None,
                "where": cell["where"] if cell is not None and cell["verdict"] == "violated" else None}
    rest = [(world, v) for world, v in new if v["property"] != flaw_prop]
    return {"flaw": flaw, "inherited_from": ref,
            "inherited": [_entry(world, v) for world, v in rest if (world, v["property"]) in shown],
            "own": [_entry(world, v) for world, v in rest if (world, v["property"]) not in shown]}


def drawn(row: dict) -> tuple[str, dict, str] | None:
    """The explorer violation a report draws for ``row`` (one with its actions kept):
    (world, violation, "flaw") for the design's flaw when the explorer found it, else
    (world, violation, "shortest"): the shortest, a new finding before a residual risk."""
    flaw = row["split"]["flaw"]
    x = flaw["counterexample"] if flaw is not None else None
    found = [(v["residual_risk"] is not None, v["steps"], i, v["property"], v["residual_risk"] or "", w["world"], v)
             for i, w in enumerate(row["explorer"]) for v in w["violations"] if "_actions" in v]
    for *_, world, v in found:
        if x is not None and (world, v["property"], v["residual_risk"]) == (x["world"], x["property"], None):
            return world, v, "flaw"
    if not found:
        return None
    *_, world, v = min(found, key=lambda t: t[:5])
    return world, v, "shortest"


# ---------------------------------------------------------------------------
# The matrix and the costs
# ---------------------------------------------------------------------------


def _percentile(values: list[int], q: float) -> float | None:
    """The nearest-rank percentile ``q`` (0-100) of ``values``, in seconds."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1] / 1000


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def costs(runs: list[dict], long: dict) -> dict:
    tool_calls = sum(r["tool_calls"] for r in runs)
    executes = sum(r["executes"] for r in runs)
    latencies = [ms for r in runs for ms in r["interrupt_ms"]]
    return {
        "durable_writes_per_call": _ratio(sum(r["durable_writes"] for r in runs), tool_calls),
        "records_held_max": max((r["records_at_end"] for r in runs), default=0),
        "records_held_long_run": long["records_at_end"],
        "long_run_calls": long["calls"],
        "starts_per_execute": _ratio(sum(r["starts"] for r in runs), executes),
        "unknown_share": _ratio(sum(r["unknown"] for r in runs), sum(r["results"] for r in runs)),
        "interrupt_latency_median_s": _percentile(latencies, 50),
        "interrupt_latency_p99_s": _percentile(latencies, 99),
        "interrupts": len(latencies),
        "requests_per_call": _ratio(sum(r["requests"] for r in runs), tool_calls),
    }


def verdicts(explored: list[dict], swarm: list[dict], scenarios: list[dict]) -> dict:
    """The matrix row of one design: property -> cell (the module docstring's order)."""
    row = {}
    sampled = len(swarm) + len(scenarios)
    for prop in [p.name for p in props.PROPERTIES if p.kind in MATRIX_KINDS]:
        found = [(v["steps"], w["world"], v) for w in explored for v in w["violations"] if v["property"] == prop]
        new = sorted(((s, world, v) for s, world, v in found if v["residual_risk"] is None), key=lambda t: t[0])
        seed = next((r["seed"] for r in swarm if prop in r["findings"]), None)
        scen = next((r["scenario"] for r in scenarios if prop in r["findings"]), None)
        named = sorted({v["residual_risk"] for _, _, v in found if v["residual_risk"] is not None}
                       | {risk for r in swarm + scenarios for p, risk in r["known"] + r["risks"] if p == prop})
        known = [n for n in named if n in props.KNOWN_FINDINGS]
        risks = [n for n in named if n not in props.KNOWN_FINDINGS]
        if new:
            steps, world, v = new[0]
            cell = {"verdict": "violated", "where": f"explorer {world}", "steps": steps, "file": v["file"],
                    "detail": v["detail"]}
        elif seed is not None:
            cell = {"verdict": "violated", "where": f"swarm seed {seed}"}
        elif scen is not None:
            cell = {"verdict": "violated", "where": f"scenario {scen}"}
        elif known:
            cell = {"verdict": "known_finding", "known": known, "risks": risks}
        elif risks:
            cell = {"verdict": "residual_risk", "known": [], "risks": risks}
        elif any(w["exhausted"] for w in explored):
            cell = {"verdict": "holds_exhaustively", "where": [w["world"] for w in explored if w["exhausted"]],
                    "runs": sampled}
        else:
            cell = {"verdict": "holds", "runs": sampled}
        row[prop] = cell
    return row


def compare(design_names: list[str], compare_worlds: list[CompareWorld], seeds: int, out_dir: pathlib.Path | None,
            workers: int = 1, first_seed: int = 1, on_design=None, cluster=None) -> dict:
    """The whole comparison as plain data (Rule 2). ``on_design(name)`` is told when a
    design begins (progress for a terminal; never part of the data)."""
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    explored: dict[str, list[dict]] = {}  # variant -> its explorer results: a reference is explored once

    def explored_by(name: str) -> list[dict]:
        if name not in explored:
            explored[name] = [explore_design(name, cw, out_dir) for cw in compare_worlds]
        return explored[name]

    try:
        for name in design_names:
            if on_design is not None:
                on_design(name)
            ref = reference_of(name)
            rows.append(row(name, explored_by(name), swarm_runs(name, seeds, first_seed, workers, cluster),
                            scenario_runs(name), long_run(name), None if ref is None else explored_by(ref)))
    except KeyboardInterrupt as stop:
        # Ctrl-C, SIGTERM or no workers: the designs finished so far, as the same data (Rule 3).
        from toolcall_sim.io.interrupt import Interrupted

        raise Interrupted(data(rows, compare_worlds, seeds, first_seed), stop) from None
    return data(rows, compare_worlds, seeds, first_seed)


def row(name: str, explored: list[dict], swarm: list[dict], scenarios: list[dict], long: dict,
        reference: list[dict] | None = None) -> dict:
    """One design's row of the data from its runs (``toolcall-sim check`` runs the same
    parts as separate jobs and builds the row here too). ``reference``: the explorer
    results of ``reference_of(name)`` on the same worlds, when it has one."""
    matrix = verdicts(explored, swarm, scenarios)
    return {
        "design": name,
        "explorer": explored,
        "swarm": {"runs": len(swarm), "failures": sum(1 for r in swarm if r["findings"])},
        "scenarios": {"runs": len(scenarios), "violated": sorted({r["scenario"] for r in scenarios if r["findings"]})},
        "matrix": matrix,
        "split": split(name, explored, matrix, reference),
        "costs": costs(swarm, long),
    }


def data(rows: list[dict], compare_worlds: list[CompareWorld], seeds: int, first_seed: int) -> dict:
    """The whole comparison's data from its rows (Rule 2)."""
    return {
        "designs": [r["design"] for r in rows],
        "properties": [p.name for p in props.PROPERTIES if p.kind in MATRIX_KINDS],
        "worlds": [{"name": cw.name, "world": cw.world, "summary": cw.summary, "max_states": cw.max_states,
                    "bounds": {k: getattr(cw.bounds, k) for k in cw.bounds.__dataclass_fields__}}
                   for cw in compare_worlds],
        "seeds": seeds, "first_seed": first_seed, "long_run_calls": LONG_RUN_CALLS,
        "rows": rows,
    }
