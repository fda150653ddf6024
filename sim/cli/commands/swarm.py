"""``toolcall-sim swarm``: swarm testing, random worlds each with its own fault mix.

Theory of operation
-------------------
The command line of the swarm: its flags, their checks (before anything runs), the
progress line, and the files each failing seed leaves (its minimized scenario and its
counterexample, written together as soon as the seed is done). The swarm itself (how a
seed draws a world, runs and is judged, and how seeds are folded) is ``toolcall_sim.drivers.swarm``'s,
below the command line (issue 33: imports one way); the text is rendered in
``toolcall_sim.reports.swarm``.
"""

from __future__ import annotations

from pathlib import Path

from toolcall_sim.reports.swarm import (format_failure_written, format_header, format_interrupted, format_json, format_progress,
                           format_report)

from toolcall_sim.backends.dask_cluster import check_cluster_flags, connect
from toolcall_sim.io.interrupt import exit_code_of, why_of
from toolcall_sim.io.output import check_out_dir, sigint_deferred
from toolcall_sim.io.progress import Progress, add_quiet_flag
from toolcall_sim.drivers.swarm import DEFAULT_OUT_DIR, PROGRESS_EVERY, iter_outcomes, summarize, write_failure
from toolcall_sim.world.inputs import MAX_SEEDS, MAX_WORKERS, check_range, check_seeds, check_variant

NAME = "swarm"
HELP = "swarm testing: random worlds, each with its own fault mix"


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=int, required=True, help=f"how many seeds to run (1..{MAX_SEEDS})")
    parser.add_argument("--first-seed", type=int, default=1,
                        help="the first seed (default 1; every seed run lies in 0..2**63-1)")
    parser.add_argument("--workers", type=int, default=1, help=f"worker processes (1..{MAX_WORKERS}, default 1)")
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="run the seeds on a Dask scheduler, e.g. tcp://host:8786 (same report as local)")
    parser.add_argument("--variant", default="contract", help="variant, e.g. contract+no-age-margin")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet_flag(parser)
    parser.add_argument("--out", default=DEFAULT_OUT_DIR, metavar="DIR",
                        help=f"where minimized failing scenarios and their counterexamples are written (default "
                             f"./{DEFAULT_OUT_DIR}, under the current directory)")


def main(args, out) -> int:
    """``toolcall-sim swarm``: 0 no new finding, 1 some, 2 bad input (ScenarioError, a
    malformed or unreachable ``--cluster``), 70 a seed that failed on every try (named:
    sim/backends/task.py ``SeedFailed``), 75 no worker left on the cluster (sim/backends/dask_cluster.py
    ``NoWorkers``), 130 interrupted. Each failing seed's scenario and counterexample are written as soon as
    the seed is done, together (a Ctrl-C waits for the pair), so an interrupted swarm
    keeps every finished one; the summary covers the seeds finished before it."""
    check_range(args.seeds, "swarm: --seeds", 1, MAX_SEEDS)
    check_range(args.workers, "swarm: --workers", 1, MAX_WORKERS)
    check_seeds(args.first_seed, args.seeds, "swarm: --first-seed")
    check_variant(args.variant, "swarm: --variant")
    if args.cluster is not None:
        check_cluster_flags(args.cluster, args.workers, "swarm")
    out_dir = check_out_dir(args.out)
    # Connected before the header: an unreachable scheduler is one line and no output.
    cluster = None if args.cluster is None else connect(args.cluster, "swarm: --cluster", args.workers)
    try:
        return _run(args, out, out_dir, cluster)
    finally:
        if cluster is not None:
            cluster.close()


def _run(args, out, out_dir: Path, cluster) -> int:
    last = args.first_seed + args.seeds - 1
    failures = 0  # read by the progress line below when it is drawn
    progress = Progress.for_command(args, f"swarm {args.variant}", args.seeds, unit="seeds", every=PROGRESS_EVERY,
                                    line=lambda done, total, _what: format_progress(done, total, failures))
    if not args.json:
        out.write(format_header(args.variant, args.first_seed, last, out_dir))
        out.flush()
    outcomes: list[dict] = []
    interrupted = None  # the KeyboardInterrupt (Ctrl-C, NoWorkers) that stopped the seeds
    with progress:
        try:
            workers = 1 if cluster is not None else args.workers
            for outcome in iter_outcomes(args.first_seed, args.seeds, args.variant, workers, cluster):
                outcomes.append(outcome)
                if outcome["failure"] is not None:
                    failures += 1
                    with sigint_deferred():
                        _write_failure_files(outcome["failure"], args.variant, out_dir)
                    progress.note(format_failure_written(outcome["failure"]))
                progress(len(outcomes), args.seeds, f"{failures} failure(s)")
        except KeyboardInterrupt as stop:
            interrupted = stop
    report = summarize(outcomes, args.first_seed, args.variant)
    report["out"] = str(out_dir)
    report["interrupted"] = interrupted is not None
    if args.json:
        out.write(format_json(report))
    else:
        if interrupted:
            out.write(format_interrupted(len(outcomes), args.seeds, why_of(interrupted)))
        out.write(format_report(report, header=False))
    if interrupted is not None:
        return exit_code_of(interrupted)
    return 1 if report["failures"] else 0


def _write_failure_files(failure: dict, variant: str, out_dir: Path) -> None:
    failure["reproduce"] = [f"toolcall-sim swarm --seeds 1 --first-seed {failure['seed']} --variant {variant}"]
    path = write_failure(failure, variant, out_dir)
    failure["file"] = _shown(path)
    failure["reproduce"].append(f"toolcall-sim run {failure['file']} --variant {variant}")
    failure["counterexample"] = _shown(path.with_suffix(".json"))
    failure["reproduce"].append(f"toolcall-sim replay {failure['counterexample']}")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)

