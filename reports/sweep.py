"""The risk sweep as people and machines read it: ``toolcall-sim sweep``'s table, its
Markdown report, its JSON and its two pictures.

Theory of operation
-------------------
sim/ci/sweep.py runs the grid and returns plain values (``summarize``: one row per point
and variant, each rate with its count and exact 95% Clopper-Pearson interval). Everything
a user reads about them is written here: the text table (``format_table``), the Markdown
report of ``--report DIR`` (``format_markdown``, the same table in pipes with the sweep's
settings), the JSON (``format_json``), and the pictures (``write_plots``, drawn by
reports/figures/risk.py): double runs per million execute calls and edits applied twice
per million file calls against the in-flight delay's tail (the latency p99) with the
contract's age margin marked, one line per design (and per value of the other axes) with
its interval shaded; and the unknown-result share against the agent restart rate. A
picture whose axis the sweep does not vary is not drawn (the report says so). Nothing
here decides anything.

Rule 1. The same report gives the same bytes: text and JSON from sorted, rounded values;
        SVGs from matplotlib with a salt from their data, no date in the metadata and no
        random layout (reports/figures/_style.py).
"""

from __future__ import annotations

from pathlib import Path

from .json_text import json_text

PLOT_DOUBLE_RUNS = "double_runs_vs_p99.svg"
PLOT_UNKNOWN = "unknown_share_vs_restarts.svg"
REPORT_JSON = "sweep.json"
REPORT_MARKDOWN = "sweep.md"

_COLUMNS = (
    ("double runs /M", "double_runs_per_million"),
    ("edits twice /M", "edits_twice_per_million"),
    ("false unknowns /M", "false_unknowns_per_million"),
    ("unknown share %", "unknown_share_percent"),
)


def _cell(est: dict) -> str:
    """``12.3 [4.1, 30.2] (n=5)``: rate, 95% interval, count."""
    if est["rate"] is None:
        return "n/a"
    lo, hi = est["ci95"]
    return f"{_num(est['rate'])} [{_num(lo)}, {_num(hi)}] ({est['count']})"


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.1f}"
    return f"{x:.2g}"


def _table_rows(report: dict) -> tuple[list[str], list[list[str]]]:
    axes = list(report["axes"])
    head = axes + ["variant", "tool calls"] + [name for name, _ in _COLUMNS]
    rows = []
    for row in report["rows"]:
        rows.append([str(row["point"][a]) for a in axes] + [row["variant"], str(row["tool_calls"])]
                    + [_cell(row[key]) for _, key in _COLUMNS])
    return head, rows


def format_table(report: dict) -> str:
    head, rows = _table_rows(report)
    # max of a list: a sweep stopped before its first run has no rows, only the heads
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(head)]
    lines = [f"sweep {report['sweep']}: {report['runs']} runs, {report['tool_calls']} tool calls "
             f"({report['seeds']} seeds per point and variant; rate [95% {_method(report)} "
             f"interval] (count), per million tool calls)"]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    others = _others(report)
    if others:
        lines.append("other violations (property:class = count, over all points): " + ", ".join(others))
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _method(report: dict) -> str:
    """``Clopper-Pearson exact`` from the report's ``Clopper-Pearson exact, 95%``."""
    return report["interval"].split(",")[0]


def _others(report: dict) -> list[str]:
    total: dict[str, int] = {}
    for row in report["rows"]:
        for k, n in row["other_violations"].items():
            total[f"{row['variant']} {k}"] = total.get(f"{row['variant']} {k}", 0) + n
    return [f"{k} = {n}" for k, n in sorted(total.items())]


def format_markdown(report: dict, plots: list[str], skipped: list[str]) -> str:
    head, rows = _table_rows(report)
    w = report["workload"]
    out = [f"# Risk sweep `{report['sweep']}`", ""]
    if report["summary"]:
        out += [report["summary"], ""]
    out += [f"{report['runs']} runs, {report['tool_calls']} simulated tool calls: {report['seeds']} seeds per point "
            f"and variant, each {w['chats']} chats x {w['turns']} turns x {w['tool_calls'][0]}-{w['tool_calls'][1]} "
            f"tool calls over {w['until']} on {w['replicas']} replicas.",
            "",
            f"Each cell: rate per million tool calls [95% {_method(report)} interval] (count); the unknown "
            "share is the percentage of committed results that are unknown."
            + (" The double-run picture gives each risk per million calls of its own kind: double runs per "
               "execute call, edits applied twice per file call." if PLOT_DOUBLE_RUNS in plots else ""), ""]
    if report["fixed"]:
        out += ["Fixed: " + ", ".join(f"`{k} = {v}`" for k, v in report["fixed"].items()), ""]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join("---" for _ in head) + "|")
    out += ["| " + " | ".join(r) + " |" for r in rows]
    others = _others(report)
    if others:
        out += ["", "Other violations (variant property:class = count): " + ", ".join(others)]
    for plot in plots:
        out += ["", f"![{plot}]({plot})"]
    for note in skipped:
        out += ["", note]
    return "\n".join(out) + "\n"


def format_interrupted(done: int, runs: int, report_dir, why: str = "Ctrl-C") -> str:
    """Said before the table of a sweep stopped by Ctrl-C or SIGTERM: its rows are the
    runs finished (a row's seeds column says how many of its seeds)."""
    kept = "" if report_dir is None else f"; --report not written ({report_dir} is left as it was)"
    return f"interrupted ({why}) after {done} of {runs} runs: the table so far{kept}\n"


def format_json(report: dict) -> str:
    return json_text(report)


# ---------------------------------------------------------------------------
# Pictures (drawn by reports/figures/risk.py)
# ---------------------------------------------------------------------------


def write_plots(report: dict, out_dir: Path, write) -> tuple[list[str], list[str]]:
    """The pictures the sweep's axes allow, written into ``out_dir`` by ``write(path,
    bytes)`` (the command's: toolcall_sim.io.output.write_atomic, whole or not at all); returns their
    file names and a note for each picture not drawn."""
    from .figures import risk  # here, not above: matplotlib only when a report is written
    from .figures.risk import DELAY_AXIS as P99_AXIS, RESTART_AXIS

    written, skipped = [], []
    if P99_AXIS in report["axes"]:
        write(out_dir / PLOT_DOUBLE_RUNS, risk.double_runs_svg(report).encode("utf-8"))
        written.append(PLOT_DOUBLE_RUNS)
    else:
        skipped.append(f"No picture of double runs against the latency p99: the sweep does not vary `{P99_AXIS}`.")
    if RESTART_AXIS in report["axes"]:
        write(out_dir / PLOT_UNKNOWN, risk.unknown_share_svg(report).encode("utf-8"))
        written.append(PLOT_UNKNOWN)
    else:
        skipped.append(f"No picture of the unknown share against the restart rate: the sweep does not vary "
                       f"`{RESTART_AXIS}`.")
    return written, skipped


def format_written(out_dir: Path, files: list[str]) -> str:
    return f"report: {', '.join(str(out_dir / f) for f in files)}\n"
