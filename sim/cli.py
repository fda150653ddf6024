"""toolcall-sim: deterministic simulation and model checking of the CODAGT-757 tool call
contract between chatd and the workspace agent.

Exit codes mean one thing each:
  0    nothing violated, every expectation met (replay: the violation no longer reproduces)
  1    a property was violated or an expectation was not met (replay: it reproduces)
  2    bad input: a malformed file, flag or value, reported in one line on stderr
  3    replay only: the actions stopped fitting the model at a step (the code changed),
       so the replay says nothing about the violation
  70   a harness error: one line on stderr; run again with --debug for the traceback
  130  interrupted (Ctrl-C): the summary so far is printed, finished files are kept

Outputs (counterexamples, minimized scenarios) go under ./reports/out/<command> in the
current directory unless --out says otherwise; never into the installed package.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from .output import OutputError, check_out_dir, check_out_file, default_out_dir, write_atomic
from .scenario import ScenarioError, load, parse_duration

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_HARNESS, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit status 2, like bad scenario input
        self.exit(2, f"{self.prog}: {message}\n")


class BadFlag(Exception):
    """One line: a flag's value that cannot mean anything (bad input, exit 2)."""


def _debug_flag(parser) -> None:
    # On every subcommand too, so ``toolcall-sim run x --debug`` works; SUPPRESS keeps a
    # subcommand's default from overwriting ``toolcall-sim --debug run x``.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on a harness error, print the Python traceback instead of one line")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="toolcall-sim", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", default=False,
                        help="on a harness error, print the Python traceback instead of one line")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a scenario file")
    run.add_argument("scenario")
    run.add_argument("--variant")
    run.add_argument("--seed", type=int)
    run.add_argument("--until")
    run.add_argument("--json", action="store_true")
    run.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines (its folder must exist)")
    run.add_argument("--check-determinism", action="store_true",
                     help="run twice in separate processes and compare the traces; with --trace or --json "
                          "the checked run's trace and JSON are written too")
    _debug_flag(run)
    _debug_flag(sub.add_parser("list", help="list scenarios, variants, fault kinds and properties"))
    _debug_flag(sub.add_parser("incident", help="replay the CODAGT-757 incident under today and under the contract"))
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
    exp.add_argument("--max-states", type=int, default=200_000, help="stop after this many states (at least 1)")
    exp.add_argument("--horizon", default="30s", help="explore no further than this (real units, above 0)")
    for budget in ("agent-restarts", "ownership-changes", "interrupts", "lost-responses", "task-retries"):
        exp.add_argument(f"--{budget}", type=int, default=1, help="at least 0 (default 1)")
    exp.add_argument("--out", default=default_out_dir("explore"), metavar="DIR",
                     help="folder for counterexample files (default ./reports/out/explore, under the current "
                          "directory)")
    exp.add_argument("--graph", metavar="FILE",
                     help="write the state graph (GraphML, or DOT for .dot); its folder must exist")
    exp.add_argument("--stop-at-first", action="store_true",
                     help="stop at the first violation (like TLC) instead of finding every property's shortest one")
    exp.add_argument("--property", dest="stop_properties", action="append", default=[], metavar="NAME",
                     help="stop once this property (repeatable: each of them) has a counterexample; "
                          "the others found by then are reported too")
    exp.add_argument("--json", action="store_true")
    _debug_flag(exp)
    rep = sub.add_parser("replay", help="replay a counterexample or a recorded trace through the model "
                                         "(exit 1 reproduced, 0 no longer reproduces, 3 no longer fits)")
    rep.add_argument("file")
    rep.add_argument("--scenario", metavar="FILE",
                     help="the scenario of a recorded trace, when it is not found by name and content next to "
                          "the trace, in the current folder or among the shipped scenarios")
    rep.add_argument("--json", action="store_true")
    _debug_flag(rep)
    from . import stateful, swarm
    sw = sub.add_parser("swarm", help="swarm testing: random worlds, each with its own fault mix")
    swarm.add_arguments(sw)
    _debug_flag(sw)
    se = sub.add_parser("search", help="random search with shrinking (hypothesis) of the default world")
    stateful.add_arguments(se)
    _debug_flag(se)
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except (ScenarioError, OutputError, BadFlag) as err:
        print(f"toolcall-sim: {_one_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("toolcall-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - the one place a harness error becomes an exit code
        if args.debug:
            raise
        print(f"toolcall-sim: harness error: {type(err).__name__}: {_one_line(err)} "
              "(run again with --debug for the traceback)", file=sys.stderr)
        return EXIT_HARNESS


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _dispatch(args) -> int:
    from . import stateful, swarm

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
    return EXIT_BAD_INPUT


def check_variant(variant: str | None, flag: str = "--variant") -> None:
    """A variant flag that was given must name one (``--variant ""`` is not a default)."""
    from model import planted_bugs

    if variant is None:
        return
    if not variant.strip():
        raise BadFlag(f"{flag}: empty; name a variant (toolcall-sim list shows them)")
    try:
        planted_bugs.resolve(variant)
    except planted_bugs.UnknownVariant as err:
        raise BadFlag(f"{flag}: {err}") from None


def load_scenario(path: str):
    """``sim.scenario.load`` with every unreadable file as bad input, one line."""
    try:
        return load(path)
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {err.start}): a scenario file is UTF-8 TOML") from None
    except ValueError as err:  # e.g. a NUL byte in the path
        raise ScenarioError(f"{path}: cannot read: {err}") from None


def _resolve(path: str) -> str:
    """A scenario argument: a file, or the name of a shipped scenario (with or without
    ``.toml``)."""
    try:
        p = Path(path)
        if not p.exists() and (SCENARIO_DIR / path).exists():
            return str(SCENARIO_DIR / path)
        if not p.exists() and (SCENARIO_DIR / f"{path}.toml").exists():
            return str(SCENARIO_DIR / f"{path}.toml")
    except (ValueError, OSError):
        pass  # a path the file system cannot even look up: load() says why
    return path


def _run(args, out) -> int:
    from .report import story
    from .run import run_scenario

    check_variant(args.variant)
    if args.trace is not None:
        check_out_file(args.trace, "--trace")
    scenario = load_scenario(_resolve(args.scenario))
    until_ms = parse_duration(args.until, "--until") if args.until else None
    determinism = None
    if args.check_determinism:
        status, message, records = _check_determinism(args)
        if status != 0:
            out.write(message)
            return status
        determinism = (message, records)
    result = run_scenario(scenario, args.variant, args.seed, until_ms)
    if determinism is not None and result.trace_sha256 != determinism[1]:
        out.write(f"traces part: this process gives sha256 {result.trace_sha256}, the two checked processes "
                  f"{determinism[1]}\n")
        return 1
    if args.trace:
        write_atomic(args.trace, result.trace_bytes)
    if args.json:
        doc = result.to_json()
        if determinism is not None:
            doc["deterministic"] = True
        out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        out.write(story(result))
        if determinism is not None:
            out.write(determinism[0])
    return 1 if result.expectation_failures() else 0


def _check_determinism(args) -> tuple[int, str, str | None]:
    """Run the same scenario and seed in two fresh processes with different hash seeds and
    name the first trace record where they part: (exit status, message, trace sha256)."""
    import hashlib
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
            if proc.returncode not in (0, 1) or not trace_path.exists():
                err = proc.stderr.decode(errors="replace").strip().splitlines()
                return (proc.returncode if proc.returncode in (2, 70) else 70,
                        f"check-determinism: a checked run failed: {err[-1] if err else proc.returncode}\n", None)
            traces.append(trace_path.read_text().splitlines())
    a, b = traces
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return 1, f"traces part at record {i}:\n  run 1: {x}\n  run 2: {y}\n", None
    if len(a) != len(b):
        return 1, (f"traces part at record {min(len(a), len(b))}: one run has {len(a)} records, "
                   f"the other {len(b)}\n"), None
    digest = hashlib.sha256(("\n".join(a) + "\n").encode()).hexdigest()
    return 0, (f"deterministic: {len(a)} records, identical in two processes (PYTHONHASHSEED=1, 2) and this one, "
               f"sha256 {digest}\n"), digest


def _explore(args, out) -> int:
    import time

    from model import explore as ex
    from model import worlds

    from . import counterexample as cx
    from .output import sigint_flag

    # Every flag is checked before the search: a bad one costs a millisecond, not minutes.
    check_variant(args.variant)
    if args.max_states < 1:
        raise BadFlag(f"--max-states: must be at least 1, got {args.max_states}")
    for budget in ex.BUDGETS:
        if getattr(args, budget) < 0:
            raise BadFlag(f"--{budget.replace('_', '-')}: must not be negative, got {getattr(args, budget)}")
    scale = ex.Bounds().scale
    max_in_flight_ms = parse_duration(args.max_in_flight, "--max-in-flight") // scale
    horizon_ms = parse_duration(args.horizon, "--horizon") // scale
    if horizon_ms < 1:
        raise BadFlag(f"--horizon: must be above 0 (at least {scale} ms on the explorer's clock), got {args.horizon}")
    out_dir = check_out_dir(args.out)
    if args.graph:
        check_out_file(args.graph, "--graph")
    stop_on = _stop_rule(args.stop_at_first, args.stop_properties)
    config = worlds.build(args.world, args.variant, args.second)
    bounds = ex.Bounds(max_in_flight_ms=max_in_flight_ms, horizon_ms=horizon_ms,
                       agent_restarts=args.agent_restarts, ownership_changes=args.ownership_changes,
                       interrupts=args.interrupts, lost_responses=args.lost_responses, task_retries=args.task_retries)
    if not args.json:
        in_world = "" if args.world == "default" else f" in {args.world}"
        out.write(f"explore {args.variant}{in_world}: counterexamples go to {out_dir}\n")
        out.flush()
    # Wall-clock time is read here only to report speed; it never enters a run.
    started = time.perf_counter()
    with sigint_flag() as interrupted:
        show = _progress(out)

        def progress(states: int) -> bool:
            show(states)
            return interrupted()
        result = ex.explore(config, bounds, max_states=args.max_states, keep_edges=bool(args.graph), stop_on=stop_on,
                            on_progress=progress)
        was_interrupted = interrupted()
    elapsed_s = max(time.perf_counter() - started, 1e-9)
    world = cx.explore_world(args.world, args.variant, bounds, args.second)
    violations = []
    for v in sorted(result.violations, key=lambda v: (v.property, v.residual_risk or "")):
        name = v.property + (f"-{v.residual_risk}" if v.residual_risk else "")
        where = "" if args.world == "default" else f"{args.world}-"
        path = out_dir / f"{where}{args.variant.replace('+', '_')}-{name}.json"
        cx.save_actions(path, world, v.property, v.residual_risk, v.path, "explore", v.detail)
        violations.append({"property": v.property, "residual_risk": v.residual_risk, "counterexample": str(path),
                           "steps": len(v.path), "detail": v.detail, "actions": [a.label() for a in v.path]})
    if args.graph and not was_interrupted:
        _write_graph(result.edges, args.graph)
    doc = {"world": args.world, "variant": args.variant, "states": result.states, "transitions": result.transitions,
           "depth": result.depth, "states_per_s": round(result.states / elapsed_s), "exhausted": result.exhausted,
           "violations": violations, "bounds": world["bounds"], "out": str(out_dir), "interrupted": was_interrupted}
    if args.json:
        out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        if was_interrupted:
            out.write(f"  interrupted (Ctrl-C) at {result.states} states: the summary so far"
                      + (", no state graph written" if args.graph else "") + "\n")
        out.write(f"  {result.states} unique states, {result.transitions} transitions, "
                  f"depth {result.depth}, {doc['states_per_s']} states/s\n")
        out.write(f"  max in flight {args.max_in_flight}, horizon {args.horizon}, budgets: "
                  + ", ".join(f"{b} {getattr(bounds, b)}" for b in ex.BUDGETS) + "\n")
        if not violations:
            out.write("  exhausted, no violation\n" if result.exhausted else
                      "  NOT exhausted (interrupted), no violation so far\n" if was_interrupted else
                      f"  NOT exhausted (stopped at {args.max_states} states), no violation so far\n")
        for v in violations:
            risk = v["residual_risk"]
            tag = ("known finding " if risk in _known_findings() else "residual risk ") + risk if risk else "VIOLATION"
            out.write(f"  {tag}: {v['property']} in {v['steps']} steps: {v['detail']}\n")
            for i, label in enumerate(v["actions"], 1):
                out.write(f"    {i:3}. {label}\n")
            out.write(f"    counterexample: {v['counterexample']} (toolcall-sim replay {v['counterexample']})\n")
        if violations and not result.exhausted:
            why = ("on Ctrl-C" if was_interrupted else
                   f"at --max-states {args.max_states}" if result.states > args.max_states else "as asked")
            out.write(f"  search stopped {why} at {result.states} states, not exhausted\n")
        elif violations:
            new = sum(1 for v in violations if v["residual_risk"] is None)
            out.write(f"  exhausted: {new} new finding(s), {len(violations) - new} residual risk(s)\n")
    if was_interrupted:
        return EXIT_INTERRUPTED
    return 1 if any(v["residual_risk"] is None for v in violations) else 0


def _known_findings() -> dict:
    from model.properties import KNOWN_FINDINGS

    return KNOWN_FINDINGS


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


PROGRESS_STATES = 5_000  # states between progress lines of explore


def _progress(out):
    """A line on stderr every ``PROGRESS_STATES`` states (long searches should show they
    move; stderr keeps --json output one object)."""
    shown = [0]

    def show(states: int) -> None:
        if states - shown[0] >= PROGRESS_STATES:
            shown[0] = states
            sys.stderr.write(f"  ... {states} states\n")
            sys.stderr.flush()
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
        write_atomic(path, "\n".join(lines) + "\n")
    else:
        write_atomic(path, "".join(line + "\n" for line in nx.generate_graphml(graph)))


def _replay(args, out) -> int:
    """Exit 1 when the violation reproduces, 0 when every action applied and it no longer
    does, 3 when an action stopped fitting (the replay then says nothing about it)."""
    from . import counterexample as cx

    try:
        if args.scenario is not None:
            load_scenario(args.scenario)  # bad input before anything runs
        r = cx.replay(args.file, args.scenario)
    except cx.BadInput as err:
        raise BadFlag(_one_line(err)) from None
    if args.json:
        out.write(json.dumps(r.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        what = r.property + (f" (residual risk {r.residual_risk})" if r.residual_risk else "") if r.property else "no property"
        if r.outcome == "does_not_fit":
            out.write(f"DOES NOT FIT: the replay stopped fitting at {r.mismatch}; {r.applied}/{r.steps} actions "
                      f"applied, so it says nothing about {what} (exit 3)\n")
        else:
            out.write(f"{'REPRODUCED' if r.reproduced else 'not reproduced'}: {what}; "
                      f"{r.applied}/{r.steps} actions applied\n")
        same = "same" if r.expected_sha256 == r.trace_sha256 else f"differs from {r.expected_sha256}"
        out.write(f"trace sha256 {r.trace_sha256} ({same})\n")
    return {"reproduced": EXIT_VIOLATION, "not_reproduced": EXIT_OK, "does_not_fit": EXIT_DOES_NOT_FIT}[r.outcome]


def _incident(out) -> int:
    """The README's main job: the incident under both variants, then past the timeout."""
    from .report import story
    from .run import run_scenario

    status = 0
    for name in ("codagt757_incident", "codagt757_incident_past_timeout"):
        scenario = load_scenario(_resolve(name))
        for variant in ("today", "contract"):
            result = run_scenario(scenario, variant)
            out.write(story(result) + "\n")
            status |= 1 if result.expectation_failures() else 0
    return status


def _list(out) -> int:
    """Everything a scenario file may say, read from the one vocabulary
    (model/vocabulary.py), then what runs: variants, properties, planted bugs, risks."""
    from model import chatd, planted_bugs, vocabulary
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
    for m in planted_bugs.PLANTED_BUGS:
        out.write(f"  {m.name:36} caught by {m.caught_by} in {m.scenario}\n      {m.summary}\n")
    out.write("residual risks (reported by name, not as new findings):\n")
    for name, text in props.RESIDUAL_RISKS.items():
        out.write(f"  {name:36} {text}\n")
    return 0
