"""``toolcall-sim explore``: exhaustive breadth-first search of a small world.

Theory of operation
-------------------
Every flag is checked before the search (a bad one costs a millisecond, not minutes);
real durations are scaled to the explorer's clock (``model.explore.Bounds.scale``). The
search (``model.explore.explore``) runs with Ctrl-C recorded, not raised, so an
interrupted search still reports what it found. Each violation's shortest path is saved
as a counterexample file that ``replay`` reads; ``reports.explore`` renders the summary and
the JSON shape. Exit code: 1 when a new finding (a violation that is not a named residual
risk) was found, 130 when interrupted, else 0. While it searches, ``sim.progress`` draws
the states counted against ``--max-states`` on stderr: a bar on a terminal, nothing in a
log, nothing with ``--quiet``.

Breadth-first order makes every counterexample found so far a shortest one, so the
stopping rules (``--stop-at-first``, ``--property``) lose none of them.
"""

from __future__ import annotations

import json
import time

from reports import explore as report
from reports.json_text import json_text

from ..output import check_out_dir, check_out_file, default_out_dir, sigint_flag, write_atomic
from ..progress import Progress, add_quiet_flag
from ..scenario import ScenarioError, parse_duration
from .common import EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION, BadFlag, check_variant

NAME = "explore"
HELP = "exhaustive breadth-first search of a small world"
BUDGET_FLAGS = ("agent-restarts", "ownership-changes", "interrupts", "lost-responses", "task-retries")
PROGRESS_STATES = 5_000  # states between progress lines of explore (TOOLCALL_SIM_PROGRESS=lines)


def add_arguments(parser) -> None:
    from model import worlds

    parser.add_argument("--variant", default="contract")
    parser.add_argument("--world", choices=worlds.names(), default="default",
                        help="the small world to explore (model/worlds.py): "
                        + "; ".join(f"{w.name}: {w.summary}" for w in worlds.WORLDS))
    parser.add_argument("--second", choices=("background", "edit"), default="background",
                        help="the second parallel tool call of the default world")
    parser.add_argument("--max-in-flight", default="0s",
                        help="how long a message may stay in flight, in real units (default 0s: any order, no "
                             "delay; 1s still stays below the 2s age margin, 5s goes past it)")
    parser.add_argument("--max-states", type=int, default=200_000, help="stop after this many states (at least 1)")
    parser.add_argument("--horizon", default="30s", help="explore no further than this (real units, above 0)")
    for budget in BUDGET_FLAGS:
        parser.add_argument(f"--{budget}", type=int, default=1, help="at least 0 (default 1)")
    parser.add_argument("--out", default=default_out_dir("explore"), metavar="DIR",
                        help="folder for counterexample files (default ./reports/out/explore, under the current "
                             "directory)")
    parser.add_argument("--graph", metavar="FILE",
                        help="write the state graph (GraphML, or DOT for .dot); its folder must exist")
    parser.add_argument("--stop-at-first", action="store_true",
                        help="stop at the first violation (like TLC) instead of finding every property's shortest "
                             "one")
    parser.add_argument("--property", dest="stop_properties", action="append", default=[], metavar="NAME",
                        help="stop once this property (repeatable: each of them) has a counterexample; "
                             "the others found by then are reported too")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes to search with (default 1); the result is the same for any number, only "
                             "the speed differs (sim/explore_parallel.py)")
    parser.add_argument("--json", action="store_true")
    add_quiet_flag(parser)


def main(args, out) -> int:
    from model import explore as ex
    from model import worlds
    from model.properties import KNOWN_FINDINGS

    from .. import counterexample as cx

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
    if args.workers < 1:
        raise BadFlag(f"--workers: must be at least 1, got {args.workers}")
    if args.graph and args.workers > 1:
        raise BadFlag("--graph: the state graph is drawn by one process; use it with --workers 1")
    out_dir = check_out_dir(args.out)
    if args.graph:
        check_out_file(args.graph, "--graph")
    stop_on = stop_rule(args.stop_at_first, args.stop_properties)
    config = worlds.build(args.world, args.variant, args.second)
    bounds = ex.Bounds(max_in_flight_ms=max_in_flight_ms, horizon_ms=horizon_ms,
                       agent_restarts=args.agent_restarts, ownership_changes=args.ownership_changes,
                       interrupts=args.interrupts, lost_responses=args.lost_responses, task_retries=args.task_retries)
    bar = Progress.for_command(args, f"explore {args.variant}", args.max_states, unit="states", every=PROGRESS_STATES,
                               line=lambda states, _total, _what: report.progress_line(states))
    if not args.json:
        out.write(report.first_line(args.variant, args.world, out_dir))
        out.flush()
    # Wall-clock time is read here only to report speed; it never enters a run.
    started = time.perf_counter()
    with sigint_flag() as interrupted, bar as show:

        def progress(states: int) -> bool:
            show(states)
            return interrupted()
        if args.workers > 1:
            from ..explore_parallel import explore as explore_parallel

            result = explore_parallel(config, bounds, max_states=args.max_states, stop_on=stop_on,
                                      on_progress=progress, workers=args.workers)
        else:
            result = ex.explore(config, bounds, max_states=args.max_states, keep_edges=bool(args.graph),
                                stop_on=stop_on, on_progress=progress)
        was_interrupted = interrupted()
        if not was_interrupted:
            show.finish()
    elapsed_s = max(time.perf_counter() - started, 1e-9)
    world = cx.explore_world(args.world, args.variant, bounds, args.second)
    violations = []
    for v in sorted(result.violations, key=lambda v: (v.property, v.residual_risk or "")):
        name = v.property + (f"-{v.residual_risk}" if v.residual_risk else "")
        where = "" if args.world == "default" else f"{args.world}-"
        path = out_dir / f"{where}{args.variant.replace('+', '_')}-{name}.json"
        cx.save_actions(path, world, v.property, v.residual_risk, v.path, "explore", v.detail)
        violations.append(report.violation_json(v, str(path)))
    if args.graph and not was_interrupted:
        write_graph(result.edges, args.graph)
    doc = report.explore_json(args.world, args.variant, result, elapsed_s, violations, world["bounds"], out_dir,
                              was_interrupted, args.workers)
    if args.json:
        out.write(json_text(doc))
    else:
        out.write(report.summary(doc, max_in_flight=args.max_in_flight, horizon=args.horizon,
                                 budgets={b: getattr(bounds, b) for b in ex.BUDGETS}, max_states=args.max_states,
                                 wrote_graph=bool(args.graph), known_findings=KNOWN_FINDINGS))
    if was_interrupted:
        return EXIT_INTERRUPTED
    return EXIT_VIOLATION if any(v["residual_risk"] is None for v in violations) else EXIT_OK


def stop_rule(at_first: bool, wanted: list[str]):
    """When the search may stop early (None: never before it is exhausted). Breadth-first
    order makes every counterexample found so far a shortest one, so stopping loses none."""
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


def write_graph(edges, path: str) -> None:
    """The explored state graph: DOT for a ``.dot`` file, else GraphML (for networkx)."""
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

