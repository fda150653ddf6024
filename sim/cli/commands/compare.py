"""``toolcall-sim compare``: the design variants side by side, each flaw found by the
tools (issue 16).

Theory of operation
-------------------
The flags are checked first (a bad design or world name, a seed count below 1, an
output path that is a file: one line, exit 2). ``toolcall_sim.ci.compare.compare`` then runs every
design through the explorer worlds, the swarm seeds, the scenario suite and the long run
and returns plain data; reports/compare.py renders it as text or JSON (``--json``).
``--report DIR`` writes the page ``toolcall-sim check`` draws of a suite's ``[compare]``
section (sim/ci/check.py Rules 6 and 7: the heat map, the costs, each design's flaw as a
sequence diagram apart from what it inherits from today; ``index.html``, ``summary.md``, ``report.json``,
``figures/``, ``counterexamples/``) and, beside it, ``compare.md``, the Markdown table.
Counterexamples go under ``--out``. Progress (the
design being run) goes to stderr. Exit code: 0 when the contract, if compared, shows
nothing but documented residual risks and known findings (every other design's flaws are
what the comparison is for, not failures); 1 when the contract has a new finding; 130 on
Ctrl-C or SIGTERM (75 when a --cluster had no worker for the grace time), after the matrix of the designs finished so far (no ``--report``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolcall_sim.reports import compare as report

from toolcall_sim.ci import compare
from toolcall_sim.backends.dask_cluster import add_cluster_flag, cluster_of
from toolcall_sim.io.output import check_out_dir, default_out_dir, write_atomic
from toolcall_sim.cli.commands.check import check_report_dir
from toolcall_sim.io.interrupt import Interrupted
from toolcall_sim.world.inputs import EXIT_OK, EXIT_VIOLATION, MAX_SEEDS, MAX_WORKERS, BadFlag, check_range, check_seeds

NAME = "compare"
HELP = "compare the rejected designs with the contract: a design x property matrix and costs"
DEFAULT_OUT_DIR = default_out_dir("compare")


def _names(value: str, flag: str) -> list[str]:
    names = [n.strip() for n in value.split(",")]
    if not value.strip() or any(not n for n in names):
        raise BadFlag(f"{flag}: a comma-separated list of names, got {value!r}")
    return names


def add_arguments(parser) -> None:
    parser.add_argument("--designs", default=",".join(compare.DEFAULT_DESIGNS), metavar="A,B,...",
                        help="variants to compare (default: today, contract and the five design variants)")
    parser.add_argument("--worlds", default=",".join(w.name for w in compare.COMPARE_WORLDS), metavar="W,...",
                        help="explorer worlds (default: below-margin,above-margin)")
    parser.add_argument("--seeds", type=int, default=compare.DEFAULT_SEEDS,
                        help=f"swarm seeds per design (1..{MAX_SEEDS}, default {compare.DEFAULT_SEEDS})")
    parser.add_argument("--first-seed", type=int, default=1,
                        help="first swarm seed (default 1; every seed run lies in 0..2**63-1)")
    parser.add_argument("--workers", type=int, default=1,
                        help=f"processes for the swarm seeds (1..{MAX_WORKERS}, default 1)")
    add_cluster_flag(parser, "the swarm seeds")
    parser.add_argument("--json", action="store_true", help="print the matrix and costs as one JSON object")
    parser.add_argument("--report", metavar="DIR",
                        help="also write the report page (index.html: the heat map, the costs, each design's "
                             "flaw drawn, apart from what it inherits from today; summary.md, report.json) and "
                             "DIR/compare.md, the Markdown table; DIR is replaced whole")
    parser.add_argument("--out", default=DEFAULT_OUT_DIR, metavar="DIR",
                        help=f"where counterexamples go (default {DEFAULT_OUT_DIR})")


def main(args, out) -> int:
    try:
        designs = compare.check_designs(_names(args.designs, "--designs"))
        worlds = compare.check_worlds(_names(args.worlds, "--worlds"))
    except compare.CompareError as err:
        raise BadFlag(str(err)) from None
    check_range(args.seeds, "--seeds", 1, MAX_SEEDS)
    check_seeds(args.first_seed, args.seeds, "--first-seed")
    check_range(args.workers, "--workers", 1, MAX_WORKERS)
    out_dir = check_out_dir(args.out)
    report_dir = check_report_dir(args.report) if args.report is not None else None
    try:
        with cluster_of(args.cluster, args.workers, "compare") as cluster:
            if not args.json:
                out.write(report.first_line(out_dir))
                out.flush()
            data = compare.compare(designs, worlds, args.seeds, Path(out_dir), workers=args.workers,
                                   first_seed=args.first_seed, cluster=cluster,
                                   on_design=lambda name: print(report.progress(name), file=sys.stderr, flush=True))
    except Interrupted as stop:
        # The matrix of the designs finished so far; no --report (it would read as the whole).
        partial = stop.partial
        if args.json:
            partial["interrupted"] = True
            out.write(report.json_doc(partial, str(out_dir)))
        else:
            out.write(report.interrupted(partial, len(designs), stop.why))
            if partial["rows"]:  # stopped before the first design finished: no matrix to draw
                out.write(report.text(partial))
        return stop.exit_code
    contract = next((row for row in data["rows"] if row["design"] == "contract"), None)
    broken = [p for p, c in (contract["matrix"].items() if contract is not None else ()) if c["verdict"] == "violated"]
    code = EXIT_VIOLATION if broken else EXIT_OK
    if report_dir is not None:
        write_page(data, Path(report_dir), code, [f"the contract violates {p}" for p in broken])
    out.write(report.json_doc(data, str(out_dir)) if args.json else report.text(data))
    return code


def write_page(data: dict, report_dir: Path, exit_code: int, reasons: list[str]) -> None:
    """``--report DIR``: one run's report (sim/ci/check.py Rule 6) of the comparison, each
    explorer counterexample read back from the file it was saved to, then compare.md."""
    import copy

    from toolcall_sim.ci import check
    from toolcall_sim.ci.one_run import one_run
    from toolcall_sim.drivers import counterexample as cx
    from toolcall_sim.cli.commands.check import write_one_run

    files = {}
    for row in data["rows"]:
        for w in row["explorer"]:
            for v in w["violations"]:
                if v["file"] is not None:
                    world, actions, _ = cx.load_any(v["file"])
                    files[v["file"]] = (world, actions)
    title = "designs " + ", ".join(data["designs"])
    output = check.compare_output(copy.deepcopy(data), files)
    write_one_run(one_run("compare", title, "compare", output, exit_code, reasons), report_dir)
    write_atomic(report_dir / "compare.md", report.markdown(data))
