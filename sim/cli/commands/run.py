"""``toolcall-sim run SCENARIO``: run one scenario file in the simpy world and judge it.

Theory of operation
-------------------
The scenario (a file, or a shipped scenario's name) runs under its own variant and seed
unless ``--variant``/``--seed`` say otherwise; the exit code is 1 when an expectation of
the scenario is not met (a violation it does not expect is such an expectation), else 0.
``--trace`` writes the trace as JSON lines, which ``replay`` reads back.

``--check-determinism`` runs the same scenario and seed in two fresh processes with
different hash seeds (PYTHONHASHSEED=1, 2), then in this one, and names the first trace
record where any two part: the project's rule that the same seed gives a byte-identical
trace in any process, checked from the command line.

``--report DIR`` writes this run's report page as ``toolcall-sim check`` writes a suite's
(sim/ci/check.py Rule 6, sim/cli/commands/check.py Rule 4): its timeline, the sequence diagram
when an expectation is not met, every finding's counterexample and picture; chats are
labelled by the scenario's names. The exit code stays the run's.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolcall_sim.reports import run as report
from toolcall_sim.reports.json_text import json_text

from toolcall_sim.io.output import check_out_file, write_atomic
from toolcall_sim.cli.commands.check import add_report_flag, check_report_dir, write_one_run
from toolcall_sim.world.inputs import (SCENARIO_DIR, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_OK, EXIT_VIOLATION, check_duration, check_seeds,
                     check_variant, load_scenario, resolve_scenario)

NAME = "run"
HELP = "run a scenario file"


def add_arguments(parser) -> None:
    parser.add_argument("scenario", help="a scenario file, or a shipped scenario's name (toolcall-sim list)")
    parser.add_argument("--variant",
                        help="variant to run under, e.g. today or contract+no-age-margin (default: the file's "
                             "variant; its [expect.<variant>] is checked)")
    parser.add_argument("--seed", type=int,
                        help="the run's seed, 0 to 2**63-1 (default: the file's seed; the same seed gives the "
                             "same trace)")
    parser.add_argument("--until",
                        help="end the run at this simulated time, e.g. 90s or 1h30m, at most 168h (default: "
                             "the file's until); it must come after every timed fault")
    parser.add_argument("--json", action="store_true", help="print the run as one JSON object")
    parser.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines (its folder must exist)")
    parser.add_argument("--check-determinism", action="store_true",
                        help="run twice in separate processes and compare the traces; with --trace or --json "
                             "the checked run's trace and JSON are written too")
    add_report_flag(parser)


def main(args, out) -> int:
    from toolcall_sim.world.run import run_scenario

    check_variant(args.variant)
    if args.trace is not None:
        check_out_file(args.trace, "--trace")
    report_dir = check_report_dir(args.report) if args.report is not None else None
    scenario = load_scenario(resolve_scenario(args.scenario))
    check_seeds(args.seed)
    # Above 0: a run of no time shows nothing; at most what a scenario's ``until`` may be.
    until_ms = None if args.until is None else check_duration(args.until, "--until", above_zero=True)
    determinism = None
    if args.check_determinism:
        status, message, digest = check_determinism(args)
        if status != EXIT_OK:
            out.write(message)
            return status
        determinism = (message, digest)
    started = time.perf_counter()  # junit.xml's time of the --report (no other output reads it)
    result = run_scenario(scenario, args.variant, args.seed, until_ms)
    seconds = time.perf_counter() - started
    if determinism is not None and result.trace_sha256 != determinism[1]:
        out.write(report.traces_part_here(result.trace_sha256, determinism[1]))
        return EXIT_VIOLATION
    if args.trace:
        write_atomic(args.trace, result.trace_bytes)
    code = EXIT_VIOLATION if result.expectation_failures() else EXIT_OK
    if report_dir is not None:
        write_one_run(one_run_report(args, scenario, result, code, seconds), report_dir)
    if args.json:
        out.write(json_text(report.run_json(result, deterministic=determinism is not None)))
    else:
        out.write(report.story(result))
        if determinism is not None:
            out.write(determinism[0])
        if report_dir is not None:
            out.write(report.report_written(report_dir))
    return code


def one_run_report(args, scenario, result, code: int, seconds: float):
    """This run as one-run report data (sim/ci/check.py Rule 6): the suite's scenario job
    output of it, with the command that reproduces it as it ran."""
    from toolcall_sim.ci import check
    from toolcall_sim.ci.one_run import one_run
    from toolcall_sim.ci.suite import ScenarioRun

    path = resolve_scenario(args.scenario)
    try:
        shipped = Path(path).resolve().parent == SCENARIO_DIR.resolve()
    except (OSError, ValueError):
        shipped = False
    shown = Path(path).stem if shipped else args.scenario
    run = ScenarioRun(scenario.name, path, shown, result.variant, False)
    default = f"toolcall-sim run {shown} --variant {result.variant}"
    actual = default + "".join(f" --{flag} {getattr(args, flag)}" for flag in ("seed", "until")
                               if getattr(args, flag) is not None)
    return one_run("run", f"{scenario.name} under {result.variant}", scenario.name,
                   check.scenario_output(run, scenario, result), code, reproduce=(default, actual),
                   seconds=seconds)


def check_determinism(args) -> tuple[int, str, str | None]:
    """Run the same scenario and seed in two fresh processes with different hash seeds and
    name the first trace record where they part: (exit status, message, trace sha256)."""
    traces = []
    with tempfile.TemporaryDirectory() as tmp:
        for hashseed in ("1", "2"):
            trace_path = Path(tmp) / f"trace-{hashseed}.jsonl"
            cmd = [sys.executable, "-m", "toolcall_sim", "run", resolve_scenario(args.scenario), "--trace", str(trace_path),
                   "--json"]
            for flag in ("variant", "seed", "until"):
                value = getattr(args, flag)
                if value is not None:
                    cmd += [f"--{flag}", str(value)]
            env = dict(os.environ, PYTHONHASHSEED=hashseed)
            proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
            if proc.returncode not in (EXIT_OK, EXIT_VIOLATION) or not trace_path.exists():
                err = proc.stderr.decode(errors="replace").strip().splitlines()
                # A checked run's bad input is this run's bad input; anything else is the harness's.
                return (proc.returncode if proc.returncode in (EXIT_BAD_INPUT, EXIT_HARNESS) else EXIT_HARNESS,
                        report.checked_run_failed(err[-1] if err else str(proc.returncode)), None)
            traces.append(trace_path.read_text().splitlines())
    a, b = traces
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return EXIT_VIOLATION, report.traces_part_at(i, x, y), None
    if len(a) != len(b):
        return EXIT_VIOLATION, report.traces_part_in_length(len(a), len(b)), None
    digest = hashlib.sha256(("\n".join(a) + "\n").encode()).hexdigest()
    return EXIT_OK, report.determinism_ok(len(a), digest), digest
