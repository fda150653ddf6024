"""``python -m toolcall_sim.reports.figures TRACE.jsonl OUT.svg [--timeline] [--highlight I,J] [--title T]``:
draw one recorded trace so a person can look at it.

Theory of operation
-------------------
The trace is the file ``toolcall-sim run --trace`` writes: one JSON object per line.
The sequence diagram is drawn by default, the per-tool-call timeline with
``--timeline``; ``--highlight`` names trace indexes (0-based lines of the file) to draw as
evidence, as a violation's ``evidence`` lists them in ``run --json``. A counterexample
file holds actions, not a trace: this module runs nothing (reports render, never drive),
so it says so and stops. Bad input (a missing or unreadable file, a line that is not a
JSON object, a folder that does not exist, a bad flag) is one line on stderr and exit
2; success writes the SVG and exits 0.
"""

from __future__ import annotations

import argparse
import json
import stat
import sys
from pathlib import Path

from . import sequence_svg, timeline_svg

EXIT_OK, EXIT_BAD_INPUT = 0, 2


class _BadInput(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise _BadInput(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m toolcall_sim.reports.figures", description="draw a recorded trace as SVG")
    p.add_argument("trace", help="a trace file (JSON lines, as toolcall-sim run --trace writes)")
    p.add_argument("out", help="the SVG file to write (its folder must exist)")
    p.add_argument("--timeline", action="store_true", help="the per-tool-call timeline instead of the sequence diagram")
    p.add_argument("--highlight", default="", help="trace indexes to highlight as evidence, comma-separated")
    p.add_argument("--title", default=None, help="the figure's title (default: the trace file's name)")
    return p


def load_trace(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _BadInput(f"{path}: cannot read: {getattr(err, 'strerror', None) or err}") from None
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            if n == 1 and text.lstrip().startswith("{") and '"format"' in text[:2000]:
                raise _BadInput(f"{path}: a counterexample holds actions, not a trace: replay it with toolcall-sim "
                                "and draw the trace it writes") from None
            raise _BadInput(f"{path}:{n}: not a JSON line") from None
        if not isinstance(rec, dict):
            raise _BadInput(f"{path}:{n}: a trace record must be an object, got {type(rec).__name__}")
        records.append(rec)
    if not records:
        raise _BadInput(f"{path}: no trace records")
    return records


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        trace = load_trace(Path(args.trace))
        try:
            marked = [int(x) for x in args.highlight.split(",") if x.strip()]
        except ValueError:
            raise _BadInput(f"--highlight: expected trace indexes like 3,17, got {args.highlight!r}") from None
        bad = [i for i in marked if not 0 <= i < len(trace)]
        if bad:
            raise _BadInput(f"--highlight: index {bad[0]} is not in the trace (0..{len(trace) - 1})")
        out = Path(args.out)
        if not out.parent.is_dir():
            raise _BadInput(f"{out}: folder {out.parent} does not exist")
        existed = out.exists()
        # Only a regular file or a new name (a symlink is followed to its file): a device
        # node, a FIFO or a folder is refused, as sim/io/output.py Rule 4 refuses them.
        if existed and not stat.S_ISREG(out.stat().st_mode):
            raise _BadInput(f"{out}: not a regular file; the picture is written only to a regular file or a new name")
        title = args.title if args.title is not None else Path(args.trace).name
        svg = timeline_svg(trace, title=title) if args.timeline else sequence_svg(trace, title=title, highlight=marked)
        try:
            out.write_text(svg, encoding="utf-8")  # open()'s mode: 0o666 & ~umask
        except OSError as err:
            if not existed:  # a full disk: no partial picture left
                out.unlink(missing_ok=True)
            raise _BadInput(f"{out}: cannot write: {err.strerror or err}") from None
    except _BadInput as err:
        sys.stderr.write(f"error: {err}\n")
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
