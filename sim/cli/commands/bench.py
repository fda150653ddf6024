"""``toolcall-sim bench``: issue 14's table, each row measured with its baseline.

Theory of operation
-------------------
The measurements are ``toolcall_sim.ci.bench``'s (one function per row of the issue's table, each
baseline run in the same process); the text and JSON are ``toolcall_sim.reports.bench``'s. This
module only picks how much to measure (the full bench, ``--quick`` or the test suite's
``--tiny``) and which rows (``--rows``, all by default), prints a progress line on stderr as each row starts (the full bench takes
minutes), and returns 0: a benchmark judges no model, so a goal not met is reported,
never an exit code.
"""

from __future__ import annotations

import argparse
import sys

from toolcall_sim.reports import bench as report
from toolcall_sim.reports.json_text import json_text

from toolcall_sim.world.inputs import EXIT_OK, BadFlag

NAME = "bench"
HELP = "measure issue 14's table: explorer, planted bugs, incident, swarm, each against a baseline"


def add_arguments(parser) -> None:
    parser.description = report.DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="prefixes instead of whole spaces, three planted bugs, 40 swarm seeds, the smallest "
                           "world's reduction (10-30 s); without it the bench exhausts the 1 s world, runs every "
                           "bug (1.5-3 minutes) and issue 36's rows (up to 5 minutes a search, 10 a ladder rung)")
    size.add_argument("--tiny", action="store_true",
                      help="the smallest bench that still reports every figure (seconds; for the test suite)")
    parser.add_argument("--rows", default=None, metavar="ROW,...",
                        help="measure only these rows (default: all): " + ", ".join(_row_names()))
    parser.add_argument("--json", action="store_true", help="print the table as one JSON object")


def _row_names() -> tuple[str, ...]:
    from toolcall_sim.ci import bench

    return bench.ROWS


def _rows(value: str | None) -> tuple[str, ...]:
    if value is None:
        return _row_names()
    wanted = tuple(r.strip() for r in value.split(",") if r.strip())
    unknown = [r for r in wanted if r not in _row_names()]
    if unknown or not wanted:
        named = ", ".join(unknown) if unknown else repr(value)
        raise BadFlag(f"--rows: unknown row {named} (known: {', '.join(_row_names())})")
    return wanted


def main(args, out) -> int:
    from toolcall_sim.ci import bench

    sizes = bench.TINY if args.tiny else bench.QUICK if args.quick else bench.FULL
    rows = _rows(args.rows)

    def progress(row: str) -> None:
        sys.stderr.write(report.progress_line(row))
        sys.stderr.flush()
    doc = bench.run(sizes, on_row=progress, rows_wanted=rows)
    out.write(json_text(doc) if args.json else report.text(doc))
    return EXIT_OK
