"""``toolcall-sim explore``: exhaustive breadth-first search of a small world.

Theory of operation
-------------------
Every flag is checked before the search (a bad one costs a millisecond, not minutes);
real durations are scaled to the explorer's clock (``toolcall_sim.model.explore.Bounds.scale``). The
search (``toolcall_sim.model.explore.explore``) runs with Ctrl-C recorded, not raised, so an
interrupted search still reports what it found. Each violation's shortest path is saved
as a counterexample file that ``replay`` reads, and beside it as a scenario file that
``run`` replays step by step (sim/world/scenario_replay.py); ``toolcall_sim.reports.explore`` renders the summary and
the JSON shape. Exit code: 1 when a new finding (a violation that is not a named residual
risk) was found, 130 when interrupted, else 0. While it searches, ``toolcall_sim.io.progress`` draws
the states counted against ``--max-states`` on stderr: a bar on a terminal, nothing in a
log, nothing with ``--quiet``.

Breadth-first order makes every counterexample found so far a shortest one, so the
stopping rules (``--stop-at-first``, ``--property``) lose none of them.

Every integer flag is checked against its range first (sim/world/inputs.py: at least
1 state, 0..100 of each fault budget, 1..256 workers, durations up to 168h). The summary
and the JSON's ``workers`` name the processes that really searched
(``Result.processes``): a search that ends within this process's head start forks none.

Without ``--world`` the command runs the tour (``toolcall_sim.drivers.explore_tour``: every small world in
rounds of growing state caps, few fault kinds first), so a user need not know which
world fits which race; ``--world NAME`` explores that one world as before. The tour
sets each stage's time in flight and world, so ``--max-in-flight``, ``--second`` and
``--graph`` need ``--world``, and so does ``--report`` (it draws one search).

``--report DIR`` writes the search's report page as ``toolcall-sim check`` writes a
suite's (sim/ci/check.py Rule 6): the states-per-depth chart with where each violation was
found, and each counterexample's sequence diagram with the records that prove it (in
real time: an explorer ms stands for ``Bounds.scale`` ms). The exit code stays the
search's, an interrupted one's too (its report holds what it found).
"""

from __future__ import annotations

import time

from toolcall_sim.reports import explore as report
from toolcall_sim.reports.json_text import json_text

from toolcall_sim.io.output import check_out_dir, check_out_file, default_out_dir, sigint_flag
from toolcall_sim.io.progress import Progress, add_quiet_flag
from toolcall_sim.cli.commands.check import add_report_flag, check_report_dir, write_one_run
from toolcall_sim.cli.explore_search import (
    PROGRESS_STATES, check_sizes, reduction_flag, reductions, save_counterexamples, save_one, search, stop_rule,
    write_graph)
from toolcall_sim.world.inputs import (EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION, MAX_FAULT_BUDGET, MAX_STATES, MAX_WORKERS, BadFlag,
                     check_duration, check_variant)

NAME = "explore"
HELP = "exhaustive breadth-first search of a small world"


def add_arguments(parser) -> None:
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import vocabulary, worlds
    from toolcall_sim.world.explore_scenario import FAULT_MODES

    parser.add_argument("scenario", nargs="?", default=None, metavar="SCENARIO.toml",
                        help="a scenario file to explore exhaustively (sim/world/explore_scenario.py: its world on "
                             "the explorer's clock, its faults as budgets, its expectations checked); instead of "
                             "--world")
    parser.add_argument("--variant", default=None,
                        help="variant to explore, e.g. today or contract+no-age-margin (default contract; with a "
                             "scenario, the scenario's own variant)")
    parser.add_argument("--faults", choices=FAULT_MODES, default=None,
                        help="with a scenario: each fault it names may strike at any point (anywhere, the default) "
                             "or only at its trigger (at-trigger: while a window the state shows holds: from its time "
                             "on, while its message is in flight, while its process runs, once its result or "
                             "message is committed; a trigger with no such window is refused)")
    parser.add_argument("--world", choices=worlds.names(), default=None,
                        help="the one small world to explore (model/worlds.py): "
                        + "; ".join(f"{w.name}: {w.summary}" for w in worlds.WORLDS)
                        + ". Without it: the tour of every world, few faults first (sim/drivers/explore_tour.py)")
    parser.add_argument("--second", choices=vocabulary.REPLAY_SECONDS, default=None,
                        help="with --world default: the second parallel tool call (default background)")
    parser.add_argument("--max-in-flight", default=None,
                        help="with --world: how long a message may stay in flight, in real units (default 0s: "
                             "any order, no delay; 1s still stays below the 2s age margin, 5s goes past it); "
                             "the tour tries 0s and 1s")
    parser.add_argument("--max-states", type=int, default=None,
                        help=f"stop after this many states (1..{MAX_STATES}; default 200000 with --world and "
                             "for the tour)")
    parser.add_argument("--horizon", default=None,
                        help="explore no further than this (real units, above 0, at most 168h; default 30s, with a "
                             "scenario its until)")
    for budget in ex.BUDGETS:  # (each flag's dest is the budget's own name, as main reads it)
        parser.add_argument(f"--{budget.replace('_', '-')}", type=int, default=None,
                            help=f"0..{MAX_FAULT_BUDGET} (default 1; with a scenario, how often it names the fault)")
    parser.add_argument("--out", default=default_out_dir("explore"), metavar="DIR",
                        help="folder for counterexample files, each with its scenario file (.toml) that run replays "
                             "(default ./reports/out/explore, under the current directory)")
    parser.add_argument("--graph", metavar="FILE",
                        help="write the state graph (GraphML, or DOT for .dot); its folder must exist")
    parser.add_argument("--stop-at-first", action="store_true",
                        help="stop at the first violation (like TLC) instead of finding every property's shortest "
                             "one")
    parser.add_argument("--property", dest="stop_properties", action="append", default=[], metavar="NAME",
                        help="stop once this property (repeatable: each of them) has a counterexample; "
                             "the others found by then are reported too")
    parser.add_argument("--workers", type=int, default=1,
                        help=f"processes to search with (1..{MAX_WORKERS}, default 1); the result is the same for "
                             "any number, only the speed differs (sim/drivers/explore_parallel.py); a search that ends "
                             "before the workers would start runs in this one process, and says so")
    which = parser.add_mutually_exclusive_group()
    # (no default: argparse takes a value equal to the default as not given, so
    # ``--reduction all --no-reduction`` would pass as if --reduction were absent)
    which.add_argument("--reduction", choices=tuple(ex.REDUCTIONS),
                       help="which reductions the search takes (docs/pages/explanation/reduction.md): all "
                            "(default: symmetry of replicas and partial-order reduction), symmetry (the faster "
                            "where messages wait in flight: the partial order's proofs cost about the states "
                            "they save), or none (every state: a check of the reduced searches); each finds "
                            "the same violations")
    which.add_argument("--no-reduction", dest="reduction", action="store_const", const="none",
                       help="the same as --reduction none: every untouched replica acts, not only the first "
                            "of those alike, and every order of independent steps is taken")
    parser.add_argument("--json", action="store_true", help="print the verdicts and counterexamples as one JSON object")
    add_quiet_flag(parser)
    add_report_flag(parser)


def main(args, out) -> int:
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds
    from toolcall_sim.model.properties import KNOWN_FINDINGS

    from toolcall_sim.drivers import counterexample as cx

    check_variant(args.variant)
    if args.scenario is not None:
        if args.world is not None:
            raise BadFlag("--world: explores a named world; a SCENARIO file names its own (give one of the two)")
        from toolcall_sim.cli.explore_scenario import scenario_main

        return scenario_main(args, out)
    if args.faults is not None:
        raise BadFlag("--faults: says how a scenario's faults become budgets; use it with a SCENARIO file")
    args.variant = args.variant or "contract"
    args.horizon = args.horizon or "30s"
    for budget in ex.BUDGETS:
        if getattr(args, budget) is None:
            setattr(args, budget, 1)
    if args.world is None:
        return tour_main(args, out)
    args.second = args.second or "background"
    args.max_in_flight = "0s" if args.max_in_flight is None else args.max_in_flight
    args.max_states = 200_000 if args.max_states is None else args.max_states
    if args.second != "background" and args.world != "default":
        raise BadFlag(f"--second: shapes only the default world, not {args.world}")
    check_sizes(args, args.max_states)
    scale = ex.Bounds().scale
    max_in_flight_ms = check_duration(args.max_in_flight, "--max-in-flight") // scale
    horizon_ms = horizon_of(args.horizon)
    if args.graph and args.workers > 1:
        raise BadFlag("--graph: the state graph is drawn by one process; use it with --workers 1")
    out_dir = check_out_dir(args.out)
    if args.graph:
        check_out_file(args.graph, "--graph")
    report_dir = check_report_dir(args.report) if args.report is not None else None
    stop_on = stop_rule(args.stop_at_first, args.stop_properties)
    config = worlds.build(args.world, args.variant, args.second)
    bounds = ex.Bounds(max_in_flight_ms=max_in_flight_ms, horizon_ms=horizon_ms,
                       agent_restarts=args.agent_restarts, ownership_changes=args.ownership_changes,
                       interrupts=args.interrupts, lost_responses=args.lost_responses, task_retries=args.task_retries,
                       **reductions(args))
    if not args.json:
        out.write(report.first_line(args.variant, args.world, out_dir))
        out.flush()
    result, was_interrupted, elapsed_s = search(args, args.variant, config, bounds, args.max_states, stop_on)
    world = cx.explore_world(args.world, args.variant, bounds, args.second)
    violations = save_counterexamples(result, out_dir, "" if args.world == "default" else f"{args.world}-",
                                      args.variant, world)
    if args.graph and not was_interrupted:
        write_graph(result.edges, args.graph)
    doc = report.explore_json(args.world, args.variant, result, elapsed_s, violations, world["bounds"], out_dir,
                              was_interrupted, result.processes)
    if args.json:
        out.write(json_text(doc))
    else:
        out.write(report.summary(doc, max_in_flight=args.max_in_flight, horizon=args.horizon,
                                 budgets={b: getattr(bounds, b) for b in ex.BUDGETS}, max_states=args.max_states,
                                 wrote_graph=bool(args.graph), known_findings=KNOWN_FINDINGS))
    code = EXIT_VIOLATION if any(v["residual_risk"] is None for v in violations) else EXIT_OK
    if was_interrupted:
        code = EXIT_INTERRUPTED
    if report_dir is not None:
        write_one_run(one_run_report(args, bounds, max_in_flight_ms, horizon_ms, result, code, elapsed_s),
                      report_dir)
        if not args.json:
            out.write(report.report_written(report_dir))
    return code


def one_run_report(args, bounds, max_in_flight_ms: int, horizon_ms: int, result, code: int, seconds: float):
    """This search as one-run report data (sim/ci/check.py Rule 6): the suite's explorer job
    output of it, with the command that reproduces it as it ran."""
    from toolcall_sim.model import explore as ex

    from toolcall_sim.ci import check
    from toolcall_sim.ci.one_run import one_run
    from toolcall_sim.ci.suite import ExploreRun

    run = ExploreRun(args.world, args.world, args.variant, args.second, args.max_in_flight, args.horizon,
                     max_in_flight_ms, horizon_ms, args.max_states,
                     tuple((b, getattr(bounds, b)) for b in ex.BUDGETS), False)
    default = run.command()
    actual = default + reduction_flag(args) \
        + (" --stop-at-first" if args.stop_at_first else "") + "".join(f" --property {p}" for p in args.stop_properties)
    reasons = [f"interrupted at {result.states} states: the report holds what was found by then"] \
        if code == EXIT_INTERRUPTED else None
    return one_run("explore", f"{args.world} world under {args.variant}", args.world,
                   check.explore_output(run, result), code, reasons, reproduce=(default, actual),
                   seconds=seconds)


def horizon_of(text: str) -> int:
    """``--horizon`` on the explorer's clock: above 0 there, at most ``MAX_UNTIL_MS``."""
    from toolcall_sim.model import explore as ex

    scale = ex.Bounds().scale
    horizon_ms = check_duration(text, "--horizon") // scale
    if horizon_ms < 1:
        raise BadFlag(f"--horizon: must be above 0 (at least {scale} ms on the explorer's clock), got {text}")
    return horizon_ms


def tour_main(args, out) -> int:
    """``explore`` without ``--world``: the tour of every small world (sim/drivers/explore_tour.py).
    Each property's first counterexample (the one of the earliest stage: fewest faults,
    smallest world) is saved and reported; exit codes as for one world."""
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model.properties import KNOWN_FINDINGS

    from toolcall_sim.drivers import counterexample as cx
    from toolcall_sim.drivers import explore_tour

    # --report draws one search (its depth chart, its counterexamples at their depths); a
    # tour is many searches, so it is refused rather than drawn for one stage only.
    for flag, value in (("--max-in-flight", args.max_in_flight), ("--second", args.second),
                        ("--graph", args.graph), ("--report", args.report)):
        if value is not None:
            why = "draws one world's search" if flag == "--report" else "the tour sets each stage's world and time in flight"
            raise BadFlag(f"{flag}: {why}; use it with --world NAME")
    max_states = explore_tour.TOUR_STATES if args.max_states is None else args.max_states
    check_sizes(args, max_states)
    horizon_ms = horizon_of(args.horizon)
    out_dir = check_out_dir(args.out)
    stop_on = stop_rule(args.stop_at_first, args.stop_properties)
    budgets = ex.Bounds(horizon_ms=horizon_ms, **reductions(args),
                        **{b: getattr(args, b) for b in ex.BUDGETS})
    if not any(getattr(budgets, b) for b in ex.BUDGETS):
        raise BadFlag("the tour needs at least one fault budget above 0 (or explore one world with --world)")
    if not args.json:
        out.write(report.tour_first_line(args.variant, len(explore_tour.stages(budgets)), max_states, out_dir))
        out.flush()
    bar = Progress.for_command(args, f"explore {args.variant} (tour)", max_states, unit="states",
                               every=PROGRESS_STATES, line=lambda states, _total, _what: report.progress_line(states))
    started = time.perf_counter()  # reported only, never enters a run
    with sigint_flag() as interrupted, bar as show:

        def progress(states: int) -> bool:
            show(states)
            return interrupted()
        done = explore_tour.tour(args.variant, budgets, max_states, stop_on=stop_on, on_progress=progress,
                                 workers=args.workers)
        was_interrupted = interrupted()
        if not was_interrupted:
            show.finish()
    elapsed_s = max(time.perf_counter() - started, 1e-9)
    violations, seen = [], set()
    for run in done.runs:
        for v in sorted(run.result.violations, key=lambda v: (v.property, v.residual_risk or "")):
            name = v.property + (f"-{v.residual_risk}" if v.residual_risk else "")
            if name in seen:
                continue
            seen.add(name)
            world = cx.explore_world(run.stage.world, args.variant, run.bounds)
            path = out_dir / f"{run.stage.world}-{args.variant.replace('+', '_')}-{name}.json"
            violations.append({**save_one(path, world, v), "stage": run.stage.label(), "bounds": world["bounds"]})
    doc = report.tour_json(args.variant, done, elapsed_s, violations, out_dir, was_interrupted, max_states)
    out.write(json_text(doc) if args.json else report.tour_summary(doc, KNOWN_FINDINGS))
    if was_interrupted:
        return EXIT_INTERRUPTED
    return EXIT_VIOLATION if any(v["residual_risk"] is None for v in violations) else EXIT_OK
