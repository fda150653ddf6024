"""``toolcall-sim sweep SWEEP.toml``: residual risks per million tool calls over a grid.

Theory of operation
-------------------
The sweep file (or a shipped sweep's name, scenarios/sweeps/) is read and checked before
any work (sim/ci/sweep.py ``load``: every key live, one line and exit 2 otherwise), and so
are the flags; ``--cluster`` connects before any output (an unreachable scheduler is one
line, exit 2: sim/backends/dask_cluster.py). The runs go through sim/backends/__init__.py ``map_seeds``, so
``--workers K`` and ``--cluster ADDRESS`` give the same report byte for byte. The table
goes to stdout (``--json``: the JSON instead); ``--report DIR`` also writes
``sweep.md``, ``sweep.json`` and the pictures (reports/sweep.py). Progress goes to
stderr (sim/io/progress.py: a bar on a terminal, nothing in a log or with ``--quiet``),
counting runs as they finish on any worker. Exit 0 when the sweep ran (a sweep
measures; it does not judge), 2 bad input, 70 a run that failed on every try (named),
130 interrupted (Ctrl-C or SIGTERM): the table of the runs finished so far, no ``--report``;
75 the same when the cluster had no worker for the grace time (sim/backends/dask_cluster.py).
"""

from __future__ import annotations

import sys

from toolcall_sim.reports import sweep as report

from toolcall_sim.ci import sweep
from toolcall_sim.backends.dask_cluster import check_cluster_flags, connect
from toolcall_sim.io.output import check_out_dir, write_atomic
from toolcall_sim.io.progress import Progress, add_quiet_flag
from toolcall_sim.io.interrupt import exit_code_of, why_of
from toolcall_sim.world.inputs import EXIT_OK, MAX_SEEDS, MAX_WORKERS, check_range

NAME = "sweep"
HELP = "risk sweep: residual risks per million tool calls over a grid of world parameters"
PROGRESS_STEPS = 50  # lines per sweep in the ``lines`` display (sim/io/progress.py): a log hears from
# a 16,800-run sweep every 336 runs (seconds), not every 1,680 (minutes on two busy cores)


def add_arguments(parser) -> None:
    parser.add_argument("sweep", metavar="SWEEP.toml", help="a sweep file, or a shipped sweep's name (age_margin)")
    parser.add_argument("--workers", type=int, default=1, help=f"worker processes (1..{MAX_WORKERS}, default 1)")
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="run on a Dask scheduler, e.g. tcp://host:8786 (same report as local)")
    parser.add_argument("--seeds", type=int, default=None, help=f"seeds per point and variant (1..{MAX_SEEDS}; default: the file's)")
    parser.add_argument("--report", default=None, metavar="DIR",
                        help="also write DIR/sweep.md, DIR/sweep.json and the pictures (SVG)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_quiet_flag(parser)


def main(args, out) -> int:
    check_range(args.workers, "sweep: --workers", 1, MAX_WORKERS)
    check_range(args.seeds, "sweep: --seeds", 1, MAX_SEEDS)
    if args.cluster is not None:
        check_cluster_flags(args.cluster, args.workers, "sweep")
    spec = sweep.load(sweep.resolve_path(args.sweep))
    if args.seeds is not None:
        spec = spec.with_seeds(args.seeds)
    out_dir = None if args.report is None else check_out_dir(args.report, "sweep: --report")
    cluster = None if args.cluster is None else connect(args.cluster, "sweep: --cluster", args.workers)
    # Runs are counted as they finish anywhere (local workers or the cluster's), not in
    # the order they are folded: the bar shows the cluster's progress.
    progress = Progress.for_command(args, f"sweep {spec.name}", spec.runs, unit="runs",
                                    every=max(1, spec.runs // PROGRESS_STEPS))
    counts: list[dict] = []
    interrupted = None  # the KeyboardInterrupt (Ctrl-C, NoWorkers) that stopped the runs
    try:
        with progress:
            for count in sweep.iter_counts(spec, 1 if cluster is not None else args.workers, cluster,
                                           lambda done, total: progress(done, total)):
                counts.append(count)
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM or no workers: the table of the runs finished so far
        interrupted = stop
    finally:
        if cluster is not None:
            cluster.close()
    result = sweep.summarize(spec, counts)
    if interrupted is not None:
        # The rows so far, each with the seeds it ran; no --report (a report of part of a
        # sweep would read as the whole one, and would replace an earlier whole one).
        result["interrupted"] = True
        if not args.json:
            out.write(report.format_interrupted(len(counts), spec.runs, out_dir, why_of(interrupted)))
        out.write(report.format_json(result) if args.json else report.format_table(result))
        return exit_code_of(interrupted)
    if out_dir is not None:
        plots, skipped = report.write_plots(result, out_dir, write_atomic)
        write_atomic(out_dir / report.REPORT_JSON, report.format_json(result))
        write_atomic(out_dir / report.REPORT_MARKDOWN, report.format_markdown(result, plots, skipped))
        sys.stderr.write(report.format_written(out_dir, [report.REPORT_MARKDOWN, report.REPORT_JSON, *plots]))
    out.write(report.format_json(result) if args.json else report.format_table(result))
    return EXIT_OK
