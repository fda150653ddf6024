"""``toolcall-sim explore SCENARIO.toml``: every interleaving of a scenario's world.

Theory of operation
-------------------
sim/world/explore_scenario.py builds the world (or refuses, one line, exit 2); this module
checks the flags the way ``explore --world`` does, runs the same search, saves each
violation's shortest path as a counterexample whose world embeds the scenario (so
``toolcall-sim replay FILE`` rebuilds it from the file alone) and as a scenario with the
path's steps that ``toolcall-sim run`` replays (sim/world/scenario_replay.py; a file with
``[replay]`` is itself refused here: it is one path, not a world), and checks the scenario's
``[expect.<variant>]`` against the whole search:

- ``violations`` and ``residual_risks``: the properties violated anywhere in the search
  (always-properties in every state, eventually-properties in terminal states), split as
  ``run`` splits them (a known finding is a violation; a residual risk is named). Once the
  search is exhausted they must equal the expectation; before that, a property found that
  the expectation does not name is already a mismatch, one it names but not found yet is
  "not decided" (the cap stopped the search).
- every other key describes one timed run (a tool call's counts and results, crafted
  requests' answers, records at the end, how fast an interrupt finished, which faults
  fired, the seeds, the sometimes-properties it reached): listed as not checked.

``--report DIR`` writes the one-run report page as ``explore --world`` does, with the
counterexamples' world the scenario's and the command that repeats this search.

Exit code: 2 on a refusal, 130 when interrupted, 1 on an expectation mismatch or (with no
expectation for the variant, or one that does not say ``violations``) a new finding, else 0.
Durations on the command line (``--max-in-flight``, ``--horizon``) are real and go onto
the scenario's clock with its ratio.
"""

from __future__ import annotations

import tomllib

from toolcall_sim.io.output import check_out_dir, check_out_file
from toolcall_sim.reports import explore as report
from toolcall_sim.reports.json_text import json_text
from toolcall_sim.world.inputs import (EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION, BadFlag, check_duration, check_variant,
                                      resolve_scenario)

# Expectation keys that describe one timed run (Expectation's fields) and the file's words for them.
TIMED_KEYS = (("tool_calls", "<tool call> rows"), ("sometimes", "sometimes"),
              ("interrupt_finished_within_ms", "interrupt_finished_within"), ("requests", "requests"),
              ("faults_never_fired", "faults_never_fired"), ("records_at_end", "records_at_end"))


def scenario_main(args, out) -> int:
    from toolcall_sim.cli.commands.check import check_report_dir, write_one_run
    from toolcall_sim.cli.explore_search import (check_sizes, reduction_of, save_counterexamples, search, stop_rule,
                                                 write_graph)
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model.properties import KNOWN_FINDINGS
    from toolcall_sim.world import explore_scenario as es
    from toolcall_sim.world.scenario import load

    if args.second is not None:
        raise BadFlag("--second: shapes only the default world; a scenario names its own tool calls")
    args.typed = args.scenario  # (what the report's command repeats: a shipped name works anywhere)
    args.scenario = resolve_scenario(args.scenario)  # a file, or a shipped scenario's name
    scenario = load(args.scenario)
    if scenario.replay is not None:
        raise BadFlag(f"{args.scenario}: [replay] tells one path of a search (toolcall-sim run replays it); explore "
                      "the scenario it came from")
    variant = args.variant or scenario.variant
    check_variant(variant)
    max_states = 200_000 if args.max_states is None else args.max_states
    budgets = {b: getattr(args, b) for b in ex.BUDGETS}
    check_sizes(_Filled(args, budgets), max_states)
    ratio = es.ratio_of(scenario)
    in_flight = None if args.max_in_flight is None else int(check_duration(args.max_in_flight, "--max-in-flight") / ratio)
    horizon = None
    if args.horizon is not None:
        horizon = es.small(check_duration(args.horizon, "--horizon", above_zero=True), ratio)
        if horizon < 1:
            raise BadFlag(f"--horizon: must be at least one small ms ({es.format_duration(int(ratio))} here), "
                          f"got {args.horizon}")
    if args.graph and args.workers > 1:
        raise BadFlag("--graph: the state graph is drawn by one process; use it with --workers 1")
    out_dir = check_out_dir(args.out)
    report_dir = check_report_dir(args.report) if args.report is not None else None
    if args.graph:
        check_out_file(args.graph, "--graph")
    stop_on = stop_rule(args.stop_at_first, args.stop_properties)
    built = es.build(scenario, variant, args.faults or "anywhere", in_flight, horizon, budgets,
                     reduction=reduction_of(args))
    if not args.json:
        out.write(f"explore {variant} of {scenario.name} ({args.scenario}): counterexamples go to {out_dir}\n")
        out.write("".join(f"  {line}\n" for line in built.lines))
        out.flush()
    result, was_interrupted, elapsed_s = search(args, variant, built.config, built.bounds, max_states, stop_on)
    with open(args.scenario, "rb") as f:  # (read and checked by load above: its dict is embedded)
        raw = tomllib.load(f)
    world = scenario_world(raw, scenario.name, variant, built.bounds, args.faults or "anywhere")
    violations = save_counterexamples(result, out_dir, f"{scenario.name}-", variant, world)
    if args.graph and not was_interrupted:
        write_graph(result.edges, args.graph)
    verdict = expectation_verdict(scenario.expectation(variant), result, KNOWN_FINDINGS)
    doc = report.explore_json(scenario.name, variant, result, elapsed_s, violations, world["bounds"], out_dir,
                              was_interrupted, result.processes)
    doc.update(scenario=args.scenario, ratio_ms=str(built.ratio), built=list(built.lines), expectations=verdict)
    if args.json:
        out.write(json_text(doc))
    else:
        b = built.bounds
        out.write(report.summary(doc, max_in_flight=f"{b.max_in_flight_ms} small ms",
                                 horizon=f"{b.horizon_ms} small ms",
                                 budgets={n: getattr(b, n) for n in ex.BUDGETS}, max_states=max_states,
                                 wrote_graph=bool(args.graph), known_findings=KNOWN_FINDINGS))
        out.write(verdict_text(verdict, variant))
    code = exit_code(was_interrupted, verdict, violations)
    if report_dir is not None:
        write_one_run(one_run_report(args, scenario.name, variant, built, max_states, result, world, verdict, code,
                                     elapsed_s), report_dir)
        if not args.json:
            out.write(report.report_written(report_dir))
    return code


def exit_code(was_interrupted: bool, verdict: dict, violations: list[dict]) -> int:
    if was_interrupted:
        return EXIT_INTERRUPTED
    if verdict["expected"] and verdict["checks_violations"]:
        return EXIT_VIOLATION if verdict["mismatches"] else EXIT_OK
    if verdict["mismatches"]:
        return EXIT_VIOLATION
    return EXIT_VIOLATION if any(v["residual_risk"] is None for v in violations) else EXIT_OK


def one_run_report(args, name: str, variant: str, built, max_states: int, result, world: dict, verdict: dict,
                   code: int, seconds: float):
    """This search as one-run report data (sim/ci/check.py Rule 6), as ``explore --world``
    writes its own: the bounds in real units (the scenario's ratio), the counterexamples'
    world the scenario's, and the command that reproduces it as it ran."""
    from toolcall_sim.ci import check
    from toolcall_sim.ci.one_run import one_run
    from toolcall_sim.ci.suite import ExploreRun
    from toolcall_sim.cli.explore_search import reduction_flag
    from toolcall_sim.model import explore as ex
    from toolcall_sim.world.scenario import format_duration

    b = built.bounds
    budgets = tuple((n, getattr(b, n)) for n in ex.BUDGETS)
    run = ExploreRun(name, name, variant, "background", format_duration(int(b.max_in_flight_ms * built.ratio)),
                     format_duration(int(b.horizon_ms * built.ratio)), b.max_in_flight_ms, b.horizon_ms, max_states,
                     budgets, False)
    # The command the fold writes for a named world, and the one that repeats this search.
    default = run.command()
    actual = (f"toolcall-sim explore {args.typed} --variant {variant} --max-states {max_states}"
              + "".join(f" --{n.replace('_', '-')} {getattr(args, n)}" for n in ex.BUDGETS if getattr(args, n) is not None)
              + (f" --faults {args.faults}" if args.faults else "")
              + (f" --max-in-flight {args.max_in_flight}" if args.max_in_flight is not None else "")
              + (f" --horizon {args.horizon}" if args.horizon is not None else "")
              + reduction_flag(args)
              + (" --stop-at-first" if args.stop_at_first else "") + "".join(f" --property {p}" for p in args.stop_properties))
    reasons = None
    if code == EXIT_INTERRUPTED:
        reasons = [f"interrupted at {result.states} states: the report holds what was found by then"]
    elif verdict["mismatches"]:
        reasons = [f"expectation of {variant} not met: {m}" for m in verdict["mismatches"]]
    return one_run("explore", f"{name} explored under {variant}", name,
                   check.explore_output(run, result, world=world), code, reasons, reproduce=(default, actual),
                   seconds=seconds)


class _Filled:
    """The flags as ``check_sizes`` reads them, each budget not given counted as 0 (a
    budget the scenario sets is at most its fault count, far below the cap)."""

    def __init__(self, args, budgets: dict):
        self.workers = args.workers
        for b, n in budgets.items():
            setattr(self, b, 0 if n is None else n)


def scenario_world(raw: dict, name: str, variant: str, bounds, faults: str) -> dict:
    """The world spec a counterexample records (sim/drivers/counterexample.py): the
    scenario itself, so ``replay`` rebuilds the same world from the file alone."""
    return {"kind": "explore-scenario", "name": name, "scenario": raw, "variant": variant, "faults": faults,
            "bounds": {k: getattr(bounds, k) for k in bounds.__dataclass_fields__}}


def expectation_verdict(exp, result, known_findings) -> dict:
    """The scenario's expectation for the variant against the whole search (this module's
    docstring): what was found, what differs, what is not decided, what is not checked."""
    found = sorted({v.property for v in result.violations if v.residual_risk is None or v.residual_risk in known_findings})
    risks = sorted({v.residual_risk for v in result.violations
                    if v.residual_risk is not None and v.residual_risk not in known_findings})
    out = {"expected": exp is not None, "checks_violations": exp is not None and exp.violations is not None,
           "violations": found, "residual_risks": risks, "mismatches": [], "undecided": [], "not_checked": []}
    if exp is None:
        return out
    for key, got in (("violations", found), ("residual_risks", risks)):
        wanted = getattr(exp, key)
        if wanted is None:
            continue
        extra = sorted(set(got) - set(wanted))
        missing = sorted(set(wanted) - set(got))
        if extra:
            out["mismatches"].append(f"{key}: found {', '.join(extra)}, which the expectation does not name")
        if missing:
            (out["mismatches"] if result.exhausted else out["undecided"]).append(
                f"{key}: {', '.join(missing)} expected, "
                + ("never reached in the exhausted search" if result.exhausted else "not found before the search stopped"))
    out["not_checked"] = [word for field, word in TIMED_KEYS if getattr(exp, field)]
    if exp.seeds != "any":
        out["not_checked"].append("seeds")
    return out


def verdict_text(verdict: dict, variant: str) -> str:
    if not verdict["expected"]:
        return f"  expectations: the scenario has none for {variant}\n"
    lines = [f"  expectations of {variant}: " + ("MISMATCH" if verdict["mismatches"] else
                                                 "not decided" if verdict["undecided"] else "met")]
    lines += [f"    mismatch: {m}" for m in verdict["mismatches"]]
    lines += [f"    not decided: {m}" for m in verdict["undecided"]]
    if verdict["not_checked"]:
        lines.append(f"    not checked by explore: {', '.join(verdict['not_checked'])} (they describe the timed run)")
    return "".join(line + "\n" for line in lines)

