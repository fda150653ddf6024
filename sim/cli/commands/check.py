"""``toolcall-sim check [SUITE]``: run a suite and write the invariant report for CI.

Theory of operation
-------------------
Every flag and the suite file are checked before anything runs (bad input: one line,
exit 2). sim/ci/check.py runs the suite (``--quick``: the part the suite marks quick) on
``--workers`` processes and judges it against the baseline; the ``reports`` package
renders what it hands back: ``summary.md`` (toolcall_sim.reports.check_markdown), ``index.html`` with
the pictures (toolcall_sim.reports.check_html, toolcall_sim.reports.figures), ``junit.xml`` (toolcall_sim.reports.junit),
``report.json`` and ``counterexamples/*.json`` (sim/drivers/counterexample.py ``save``).

Rule 1. The report is written whole or not at all: into a temporary folder beside
        ``--out``, which replaces ``--out`` by renames at the end. An interrupted run
        leaves the old report as it was (and at worst a ``.<name>.tmp-*`` folder).
        Only a folder of ours (it holds ``toolcall_sim.io.output.MARKER``, which every report holds)
        or an empty one is replaced; one holding the user's files is refused before the
        suite runs (sim/io/output.py Rule 6), as is an unwritable place (Rule 3).
Rule 2. The baseline (``--baseline``, default ``reports/baseline.json`` under the current
        directory) lists accepted findings. A missing default file is an empty baseline,
        said in one line on stderr (``check_markdown.no_baseline``: run from another
        folder, every accepted finding would otherwise fail the run as new with no word
        why); the exit code stays the verdict's. A missing file named by the flag is bad
        input, unless ``--update-baseline`` is to create it. ``--update-baseline``
        accepts every finding of this run (so none is new), drops what is fixed, keeps
        entries of runs this suite did not run, and rewrites the file, making its
        missing folders (a fresh repository has no ``reports/`` yet; sim/io/output.py
        Rule 3 checks the way there before the suite runs).
Rule 3. Exit 0 when nothing is new (sim/ci/check.py Rule 3), 1 otherwise, 2 on bad input,
        130 on Ctrl-C or SIGTERM (75 when a --cluster had no worker for the grace time): the old report stays, and stdout gets the summary so
        far (the jobs finished, the findings and failed scenarios they gave). While the jobs run, ``toolcall_sim.io.progress`` draws
        the jobs done on stderr: a bar on a terminal, nothing in a log, nothing with
        ``--quiet`` (``TOOLCALL_SIM_PROGRESS=lines``: a line per job).
Rule 4. ``run``, ``explore`` and ``replay`` take ``--report DIR`` (``add_report_flag``)
        and write one run's report with the same ``write_report`` (sim/ci/check.py Rule 6):
        the page with its pictures, ``summary.md``, ``report.json``, ``figures/``,
        ``counterexamples/``, and ``junit.xml`` for ``run`` and ``explore`` alone
        (``JUNIT_COMMANDS``: test cases of a replay or of ``compare --report`` would only
        repeat its exit code). ``DIR`` is checked before anything
        runs (``check_report_dir``): a file, a folder below a file, a place where no
        folder can be made, or a folder that is not ours and not empty is one line,
        exit 2. The command's exit code is its own.
Rule 5. ``--coder PATH`` adds the drift table (``toolcall-sim drift``, sim/drift/): the
        checkout and the manifest are checked and the Go files compared before the suite
        runs (bad input: exit 2, nothing run); the counts and the rules whose Go code
        changed go into ``report.json`` (``drift``), ``summary.md`` (``## Go drift``) and
        the closing lines. It is informational: the exit code stays the suite's verdict
        (``toolcall-sim drift`` is the command whose exit code is drift's).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from toolcall_sim.reports import check_markdown, junit
from toolcall_sim.reports.json_text import json_text

from toolcall_sim.backends.dask_cluster import add_cluster_flag, cluster_of
from toolcall_sim.io.output import (DEFAULT_OUT, OutputError, check_out_file, check_replaceable_dir, new_report_dir, replace_dir,
                      write_atomic)
from toolcall_sim.io.progress import Progress, add_quiet_flag
from toolcall_sim.io.interrupt import Interrupted
from toolcall_sim.world.inputs import EXIT_OK, EXIT_VIOLATION, MAX_WORKERS, BadFlag, check_range

NAME = "check"
HELP = "run a check suite and write the invariant report (summary.md, index.html, junit.xml, report.json)"
DEFAULT_BASELINE = Path("reports") / "baseline.json"  # relative: under the current directory


def add_arguments(parser) -> None:
    parser.add_argument("suite", nargs="?", default=None,
                        help="a suite file, or the name of a shipped suite (default: ci, scenarios/suites/ci.toml)")
    parser.add_argument("--out", metavar="DIR",
                        help="the report folder (default ./reports/out/check/<suite name>, under the current "
                             "directory); replaced whole at the end, so it must be new, empty or an earlier report")
    parser.add_argument("--baseline", metavar="FILE",
                        help=f"accepted findings (default ./{DEFAULT_BASELINE}; missing: none accepted)")
    parser.add_argument("--update-baseline", action="store_true",
                        help="accept every finding of this run and rewrite the baseline file")
    parser.add_argument("--workers", type=int, default=1,
                        help=f"processes to run the suite's jobs with (1..{MAX_WORKERS}, default 1); the report is "
                             "the same for any")
    parser.add_argument("--quick", action="store_true",
                        help="run only the part of the suite marked quick; the report says what that part ran")
    parser.add_argument("--coder", metavar="PATH",
                        help="also show which modelled rules the Go code of this coder/coder checkout changed (the "
                             "table of toolcall-sim drift, in summary.md and on stdout; informational: the verdict "
                             "is the suite's)")
    add_cluster_flag(parser, "the suite's jobs")
    add_quiet_flag(parser)


def resolve_suite(name: str | None) -> str:
    """A suite argument: a file, or a shipped suite's name (with or without ``.toml``)."""
    from toolcall_sim.ci.suite import DEFAULT_SUITE, SUITE_DIR

    if name is None:
        return str(DEFAULT_SUITE)
    p = Path(name)
    try:
        if not p.exists():
            for candidate in (SUITE_DIR / name, SUITE_DIR / f"{name}.toml"):
                if candidate.is_file():
                    return str(candidate)
    except (ValueError, OSError):
        pass  # a path the file system cannot look up: load() says why
    return name


def main(args, out) -> int:
    from toolcall_sim.ci import check
    from toolcall_sim.drivers import counterexample as cx
    from toolcall_sim.ci import suite as suites
    from toolcall_sim.io.output import sigint_deferred

    check_range(args.workers, "--workers", 1, MAX_WORKERS)
    suite = suites.load(resolve_suite(args.suite))
    part = suite.part(args.quick)
    if part.empty:
        raise BadFlag(f"--quick: {suite.path} marks nothing quick (quick = true on an entry, or planted.quick_drivers)")
    out_dir = check_replaceable_dir(args.out if args.out is not None else DEFAULT_OUT / "check" / suite.name, "--out")
    baseline_path = args.baseline
    if args.update_baseline:  # before it is read: a FIFO or device there is refused unopened
        # A fresh repository has no reports/ yet: its folders are made when it is written.
        check_out_file(baseline_path if baseline_path is not None else str(DEFAULT_BASELINE), "--baseline",
                       make_folders=True)
    if baseline_path is None:
        baseline_path = str(DEFAULT_BASELINE)
        entries = check.load_baseline(baseline_path) if DEFAULT_BASELINE.is_file() else []
        if not DEFAULT_BASELINE.is_file() and not args.update_baseline:
            sys.stderr.write(check_markdown.no_baseline(DEFAULT_BASELINE))
    elif not Path(baseline_path).exists() and args.update_baseline:
        entries = []
    else:
        entries = check.load_baseline(baseline_path)
    drift = None
    if args.coder is not None:  # Rule 5: before the suite runs, so a bad checkout costs nothing
        from toolcall_sim.cli.commands.drift import run_drift
        from toolcall_sim.reports.drift import drift_summary

        drift = drift_summary(run_drift(args.coder)[0])
    jobs = len(check._jobs(part))
    bar = Progress.for_command(args, f"check {suite.name}" + (" (quick)" if args.quick else ""), jobs, unit="jobs",
                               line=check_markdown.progress_line)
    if bar.mode != "off":  # a terminal (or TOOLCALL_SIM_PROGRESS asks): where the report goes
        sys.stderr.write(check_markdown.first_line(suite.name, args.quick, jobs, out_dir))
        sys.stderr.flush()
    try:
        with cluster_of(args.cluster, args.workers, "check") as cluster, bar as progress:
            result = check.run_check(suite, quick=args.quick, workers=args.workers, baseline=entries,
                                     baseline_file=str(baseline_path) if entries or args.update_baseline else None,
                                     update_baseline=args.update_baseline, on_progress=progress, cluster=cluster)
            progress.finish()
    except Interrupted as stop:
        # Rule 3: the summary so far (what the finished jobs found), and the old report
        # left as it was (Rule 1: a report is written whole or not at all).
        outputs, total = stop.partial
        findings = [f for o in outputs for f in o.get("findings", ()) if f.get("class") == "finding"]
        failed = [o["run"].scenario for o in outputs if o["kind"] == "scenario" and o["failures"]]
        out.write(check_markdown.interrupted(len(outputs), total, findings, failed, out_dir, stop.why))
        return stop.exit_code
    if drift is not None:
        result.report["drift"] = drift
    with sigint_deferred():
        write_report(result, out_dir, cx, args.workers)
        if args.update_baseline:
            write_atomic(baseline_path, json_text(result.baseline))
    out.write(check_markdown.closing(result.report, out_dir, str(baseline_path) if args.update_baseline else None))
    return EXIT_OK if result.exit_code == 0 else EXIT_VIOLATION


def draw(report: dict, traces: dict, workers: int) -> dict[str, str]:
    """``toolcall_sim.reports.check_html.figures_of`` on a pool of ``workers`` processes (forked where
    safe, as the suite's jobs are: sim/drivers/swarm.py ``_pool_context``); the pictures come
    back in order, so they are the same bytes for any ``workers``."""
    from concurrent.futures import ProcessPoolExecutor

    from toolcall_sim.reports import check_html  # matplotlib: imported by the commands that draw, not by every command

    from toolcall_sim.backends.local import parent_pid
    from toolcall_sim.ci.check import _worker_init
    from toolcall_sim.drivers.swarm import _pool_context

    if workers <= 1:
        return check_html.figures_of(report, traces)
    context = _pool_context()
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init,
                             initargs=(parent_pid(context),)) as pool:
        return check_html.figures_of(report, traces, lambda fn, tasks: pool.map(fn, tasks, chunksize=4))


def add_report_flag(parser) -> None:
    """``--report DIR`` of ``run``, ``explore`` and ``replay`` (Rule 4)."""
    parser.add_argument("--report", metavar="DIR",
                        help="also write the report page of this run (index.html with its pictures, summary.md, "
                             "report.json, figures/), as toolcall-sim check writes it; DIR is replaced whole, so it must be "
                             "new, empty or an earlier report")


def check_report_dir(path: str, flag: str = "--report") -> Path:
    """Rule 4: ``path`` can become the report folder, found before the run starts: not a
    file nor below one, a place where a folder can be made, and absent, empty or one of
    ours (sim/io/output.py Rules 3 and 6: a folder of the user's files is never replaced)."""
    return check_replaceable_dir(path, flag)


# Rule 4: the one-run reports that are test runs, with a junit.xml (a scenario's
# expectations, an explorer search's properties); a replay's or a comparison's test
# cases would only repeat its exit code.
JUNIT_COMMANDS = ("run", "explore")


def write_one_run(result, out_dir: Path) -> None:
    """Rule 4: one run's report, written as a suite's is (Ctrl-C waits for the rename);
    ``junit.xml`` only for the commands that are test runs (``JUNIT_COMMANDS``)."""
    from toolcall_sim.drivers import counterexample as cx
    from toolcall_sim.io.output import sigint_deferred

    junit_xml = result.report["one_run"]["command"] in JUNIT_COMMANDS
    with sigint_deferred():
        write_report(result, out_dir, cx, 1, junit_xml=junit_xml)


def write_report(result, out_dir: Path, cx, workers: int = 1, junit_xml: bool = True) -> None:
    """Rule 1: every file into a temporary folder beside ``out_dir``, then renamed over it.
    The pictures are drawn by ``workers`` processes (matplotlib costs a fraction of a
    second a picture, and a suite has one per scenario run)."""
    from toolcall_sim.reports import check_html  # matplotlib (see ``draw``)

    out_dir = Path(out_dir)
    tmp = new_report_dir(out_dir)
    try:
        report = result.report
        pictures = draw(report, result.traces, workers)
        (tmp / "counterexamples").mkdir()
        (tmp / "figures").mkdir()
        for c in result.counterexamples:
            cx.save(tmp / c.file, c.world, c.property, c.residual_risk, c.actions, c.trace_sha256, c.driver, c.detail)
        for name, svg in sorted(pictures.items()):
            (tmp / name).write_text(svg, encoding="utf-8")
        (tmp / "report.json").write_text(json_text(report), encoding="utf-8")
        (tmp / "summary.md").write_text(check_markdown.summary(report), encoding="utf-8")
        if junit_xml:
            (tmp / "junit.xml").write_text(junit.junit(report, result.seconds), encoding="utf-8")
        (tmp / "index.html").write_text(check_html.page(report, pictures), encoding="utf-8")
        replace_dir(tmp, out_dir)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, OSError):  # a full disk, a folder that vanished: the user's path (exit 2)
            raise OutputError(f"{out_dir}: cannot write the report: {err.strerror or err}") from None
        raise
