"""toolcall-sim: deterministic simulation and model checking of the CODAGT-757 tool call
contract between chatd and the workspace agent."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from .scenario import ScenarioError, load, parse_duration

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit status 2, like bad scenario input
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="toolcall-sim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a scenario file")
    run.add_argument("scenario")
    run.add_argument("--variant")
    run.add_argument("--seed", type=int)
    run.add_argument("--until")
    run.add_argument("--json", action="store_true")
    run.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines")
    run.add_argument("--check-determinism", action="store_true",
                     help="run twice in separate processes and compare the traces")
    sub.add_parser("list", help="list scenarios, variants, fault kinds and properties")
    sub.add_parser("incident", help="replay the CODAGT-757 incident under today and under the contract")
    exp = sub.add_parser("explore", help="exhaustive breadth-first search of a small world")
    exp.add_argument("--variant", default="contract")
    from model import worlds
    exp.add_argument("--world", choices=worlds.names(), default="default",
                     help="the small world to explore (model/worlds.py): "
                     + "; ".join(f"{w.name}: {w.summary}" for w in worlds.WORLDS))
    exp.add_argument("--second", choices=("background", "edit"), default="background",
                     help="the second parallel tool call of the default world")
    exp.add_argument("--max-in-flight", default="0s",
                     help="how long a message may stay in flight, in real units (default 0s: any order, no "
                          "delay; 1s still stays below the 2s age margin, 5s goes past it)")
    exp.add_argument("--max-states", type=int, default=200_000)
    exp.add_argument("--horizon", default="30s", help="explore no further than this (real units)")
    for budget in ("agent-restarts", "ownership-changes", "interrupts", "lost-responses", "task-retries"):
        exp.add_argument(f"--{budget}", type=int, default=1)
    exp.add_argument("--out", default="reports/out/explore", help="folder for counterexample files")
    exp.add_argument("--graph", metavar="FILE", help="write the state graph (GraphML, or DOT for .dot)")
    exp.add_argument("--stop-at-first", action="store_true",
                     help="stop at the first violation (like TLC) instead of finding every property's shortest one")
    exp.add_argument("--property", dest="stop_properties", action="append", default=[], metavar="NAME",
                     help="stop once this property (repeatable: each of them) has a counterexample; "
                          "the others found by then are reported too")
    exp.add_argument("--json", action="store_true")
    rep = sub.add_parser("replay", help="replay a counterexample or a recorded trace through the model")
    rep.add_argument("file")
    rep.add_argument("--json", action="store_true")
    from . import stateful, swarm
    swarm.add_arguments(sub.add_parser("swarm", help="swarm testing: random worlds, each with its own fault mix"))
    stateful.add_arguments(sub.add_parser("search", help="random search with shrinking (hypothesis) of the default world"))
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list(sys.stdout)
        if args.command == "incident":
            return _incident(sys.stdout)
        if args.command == "explore":
            return _explore(args, sys.stdout)
        if args.command == "replay":
            return _replay(args, sys.stdout)
        if args.command == "run":
            return _run(args, sys.stdout)
        if args.command == "swarm":
            return swarm.main(args, sys.stdout)
        if args.command == "search":
            return stateful.main(args, sys.stdout)
    except ScenarioError as err:
        print(f"toolcall-sim: {err}", file=sys.stderr)
        return 2
    return 2


def _resolve(path: str) -> str:
    p = Path(path)
    if not p.exists() and (SCENARIO_DIR / path).exists():
        return str(SCENARIO_DIR / path)
    if not p.exists() and (SCENARIO_DIR / f"{path}.toml").exists():
        return str(SCENARIO_DIR / f"{path}.toml")
    return path


def _run(args, out) -> int:
    from .report import story
    from .run import run_scenario

    scenario = load(_resolve(args.scenario))
    until_ms = parse_duration(args.until, "--until") if args.until else None
    if args.check_determinism:
        return _check_determinism(args, out)
    result = run_scenario(scenario, args.variant, args.seed, until_ms)
    if args.trace:
        Path(args.trace).write_bytes(result.trace_bytes)
    if args.json:
        out.write(json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        out.write(story(result))
    return 1 if result.expectation_failures() else 0


def _check_determinism(args, out) -> int:
    """Run the same scenario and seed in two fresh processes with different hash seeds and
    name the first trace record where they part."""
    import tempfile

    traces = []
    with tempfile.TemporaryDirectory() as tmp:
        for hashseed in ("1", "2"):
            trace_path = Path(tmp) / f"trace-{hashseed}.jsonl"
            cmd = [sys.executable, "-m", "sim", "run", _resolve(args.scenario), "--trace", str(trace_path), "--json"]
            for flag in ("variant", "seed", "until"):
                value = getattr(args, flag)
                if value is not None:
                    cmd += [f"--{flag}", str(value)]
            env = dict(os.environ, PYTHONHASHSEED=hashseed)
            proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
            if proc.returncode == 2:
                out.write(proc.stderr.decode())
                return 2
            traces.append(trace_path.read_text().splitlines())
    a, b = traces
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            out.write(f"traces part at record {i}:\n  run 1: {x}\n  run 2: {y}\n")
            return 1
    if len(a) != len(b):
        out.write(f"traces part at record {min(len(a), len(b))}: one run has {len(a)} records, the other {len(b)}\n")
        return 1
    import hashlib

    digest = hashlib.sha256(("\n".join(a) + "\n").encode()).hexdigest()
    out.write(f"deterministic: {len(a)} records, identical in two processes (PYTHONHASHSEED=1, 2), sha256 {digest}\n")
    return 0


def _explore(args, out) -> int:
    import time

    from model import explore as ex
    from model import mutants, worlds

    from . import counterexample as cx

    scale = ex.Bounds().scale
    try:
        max_in_flight_ms = parse_duration(args.max_in_flight, "--max-in-flight") // scale
        horizon_ms = parse_duration(args.horizon, "--horizon") // scale
        config = worlds.build(args.world, args.variant, args.second)
    except mutants.UnknownVariant as err:
        raise ScenarioError(f"--variant: {err}") from None
    bounds = ex.Bounds(max_in_flight_ms=max_in_flight_ms, horizon_ms=horizon_ms,
                       agent_restarts=args.agent_restarts, ownership_changes=args.ownership_changes,
                       interrupts=args.interrupts, lost_responses=args.lost_responses, task_retries=args.task_retries)
    # Wall-clock time is read here only to report speed; it never enters a run.
    started = time.perf_counter()
    stop_on = _stop_rule(args.stop_at_first, args.stop_properties)
    result = ex.explore(config, bounds, max_states=args.max_states, keep_edges=bool(args.graph), stop_on=stop_on,
                        on_progress=None if args.json else _progress(out))
    elapsed_s = max(time.perf_counter() - started, 1e-9)
    world = cx.explore_world(args.world, args.variant, bounds, args.second)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    violations = []
    for v in sorted(result.violations, key=lambda v: (v.property, v.residual_risk or "")):
        name = v.property + (f"-{v.residual_risk}" if v.residual_risk else "")
        where = "" if args.world == "default" else f"{args.world}-"
        path = Path(args.out) / f"{where}{args.variant.replace('+', '_')}-{name}.json"
        cx.save_actions(path, world, v.property, v.residual_risk, v.path, "explore", v.detail)
        violations.append({"property": v.property, "residual_risk": v.residual_risk, "counterexample": str(path),
                           "steps": len(v.path), "detail": v.detail, "actions": [a.label() for a in v.path]})
    if args.graph:
        _write_graph(result.edges, args.graph)
    doc = {"world": args.world, "variant": args.variant, "states": result.states, "transitions": result.transitions,
           "depth": result.depth, "states_per_s": round(result.states / elapsed_s), "exhausted": result.exhausted,
           "violations": violations, "bounds": world["bounds"]}
    if args.json:
        out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        in_world = "" if args.world == "default" else f" in {args.world}"
        out.write(f"explore {args.variant}{in_world}: {result.states} unique states, {result.transitions} transitions, "
                  f"depth {result.depth}, {doc['states_per_s']} states/s\n")
        out.write(f"  max in flight {args.max_in_flight}, horizon {args.horizon}, budgets: "
                  + ", ".join(f"{b} {getattr(bounds, b)}" for b in ex.BUDGETS) + "\n")
        if not violations:
            out.write("  exhausted, no violation\n" if result.exhausted else
                      f"  NOT exhausted (stopped at {args.max_states} states), no violation so far\n")
        for v in violations:
            tag = f"residual risk {v['residual_risk']}" if v["residual_risk"] else "VIOLATION"
            out.write(f"  {tag}: {v['property']} in {v['steps']} steps: {v['detail']}\n")
            for i, label in enumerate(v["actions"], 1):
                out.write(f"    {i:3}. {label}\n")
            out.write(f"    counterexample: {v['counterexample']} (toolcall-sim replay {v['counterexample']})\n")
        if violations and not result.exhausted:
            why = f"at --max-states {args.max_states}" if result.states > args.max_states else "as asked"
            out.write(f"  search stopped {why} at {result.states} states, not exhausted\n")
        elif violations:
            new = sum(1 for v in violations if v["residual_risk"] is None)
            out.write(f"  exhausted: {new} new finding(s), {len(violations) - new} residual risk(s)\n")
    return 1 if any(v["residual_risk"] is None for v in violations) else 0


def _stop_rule(at_first: bool, wanted: list[str]):
    """When the search may stop early. Breadth-first order makes every counterexample
    found so far a shortest one, so stopping loses none of them."""
    from model import properties as props

    unknown = [p for p in wanted if p not in {q.name for q in props.PROPERTIES}]
    if unknown:
        raise ScenarioError(f"--property: unknown property {unknown[0]!r} (toolcall-sim list shows them)")
    if at_first:
        return lambda found: True
    if not wanted:
        return None
    seen: set[str] = set()

    def every_wanted_found(found) -> bool:
        if found.property in wanted:
            seen.add(found.property)
        return seen == set(wanted)
    return every_wanted_found


def _progress(out):
    """A line every 50,000 states on a terminal (long searches should show they move)."""
    shown = [0]

    def show(states: int) -> None:
        if states - shown[0] >= 50_000 and getattr(out, "isatty", lambda: False)():
            shown[0] = states
            out.write(f"  ... {states} states\n")
            out.flush()
    return show


def _write_graph(edges, path: str) -> None:
    import networkx as nx

    graph = nx.DiGraph()
    for a, b, label in edges:
        graph.add_edge(a[:12], b[:12], label=label)
    if path.endswith(".dot"):
        lines = ["digraph explore {"]
        for a, b, data in graph.edges(data=True):
            lines.append(f'  "{a}" -> "{b}" [label={json.dumps(data["label"])}];')
        lines.append("}")
        Path(path).write_text("\n".join(lines) + "\n")
    else:
        nx.write_graphml(graph, path)


def _replay(args, out) -> int:
    from . import counterexample as cx

    try:
        r = cx.replay(args.file)
    except cx.BadInput as err:
        print(f"toolcall-sim: {err}", file=sys.stderr)
        return 2
    if args.json:
        out.write(json.dumps(r.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        if r.mismatch:
            out.write(f"replay stopped fitting at {r.mismatch}\n")
        what = r.property + (f" (residual risk {r.residual_risk})" if r.residual_risk else "") if r.property else "no property"
        out.write(f"{'REPRODUCED' if r.reproduced else 'not reproduced'}: {what}; "
                  f"{r.applied}/{r.steps} actions applied\n")
        same = "same" if r.expected_sha256 == r.trace_sha256 else f"differs from {r.expected_sha256}"
        out.write(f"trace sha256 {r.trace_sha256} ({same})\n")
    return 1 if r.reproduced else 0


def _incident(out) -> int:
    """The README's main job: the incident under both variants, then past the timeout."""
    from .report import story
    from .run import run_scenario

    status = 0
    for name in ("codagt757_incident", "codagt757_incident_past_timeout"):
        scenario = load(_resolve(name))
        for variant in ("today", "contract"):
            result = run_scenario(scenario, variant)
            out.write(story(result) + "\n")
            status |= 1 if result.expectation_failures() else 0
    return status


def _list(out) -> int:
    """Everything a scenario file may say, read from the one vocabulary
    (model/vocabulary.py), then what runs: variants, properties, planted bugs, risks."""
    from model import chatd, mutants, vocabulary
    from model import properties as props

    out.write("scenarios:\n")
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        try:
            sc = load(path)
            out.write(f"  {path.stem:32} {sc.summary}\n")
        except ScenarioError as err:
            out.write(f"  {path.stem:32} (invalid: {err})\n")
    out.write("variants:\n")
    for name in sorted(chatd.VARIANTS):
        out.write(f"  {name}\n")
    out.write("[world] keys:\n")
    for key in vocabulary.WORLD_KEYS.values():
        out.write(f"  {key.name:22} {key.type:9} default {key.default:9} {key.meaning}\n")
    out.write("fault kinds (fields; * required):\n")
    for f in vocabulary.FAULTS.values():
        fields = ", ".join([f"{n}*" for n in f.required] + list(f.optional))
        out.write(f"  {f.name:18} {f.shape:9} {fields}\n")
    out.write("trigger events (when = { event, route, tool_call, nth }):\n")
    for e in vocabulary.TRIGGER_EVENTS.values():
        out.write(f"  {e.name:18} {e.meaning}\n")
    out.write("routes: " + ", ".join(vocabulary.ROUTES) + "\n")
    out.write("tools: " + ", ".join(vocabulary.TOOLS) + "\n")
    out.write("result kinds: " + ", ".join(vocabulary.RESULT_KINDS) + "\n")
    out.write("expectations: per tool call " + ", ".join(vocabulary.EXPECT_CALL_KEYS)
              + " (result = { " + ", ".join(vocabulary.EXPECT_RESULT_FIELDS) + " }); per variant "
              + ", ".join(vocabulary.EXPECT_TOP_KEYS) + "\n")
    out.write("properties:\n")
    for p in props.PROPERTIES:
        out.write(f"  {p.name:36} {p.kind:10} {p.story:14} {p.statement}\n")
    out.write("planted bugs (use as --variant contract+<bug>):\n")
    for m in mutants.MUTANTS:
        out.write(f"  {m.name:36} caught by {m.caught_by} in {m.scenario}\n      {m.summary}\n")
    out.write("residual risks (reported by name, not as new findings):\n")
    for name, text in props.RESIDUAL_RISKS.items():
        out.write(f"  {name:36} {text}\n")
    return 0
