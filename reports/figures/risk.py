"""The risk sweep's pictures: a residual risk's rate against the world parameter the sweep
varies, with exact intervals that stay readable over decades.

Theory of operation
-------------------
A risk sweep (sim/ci/sweep.py ``summarize``) hands over plain rows: per grid point and
design variant, each rate with its count and exact 95% interval (Clopper-Pearson, for
every point whatever its count), and the denominators it was counted over. Two pictures
are drawn from them:

- ``double_runs_svg``: the margin question. The x axis is what the sweep varies of a
  request's in-flight delay: the 99th percentile of the one-way message latency
  (``latency_p99``, the lognormal's tail; the axis label says so), on a log scale. A
  vertical line marks the contract's age margin (``CONTRACT_AGE_MARGIN_MS``, read from
  the model's ``AgentRules``, not written here), and a dotted one every other margin the
  sweep uses. Two panels share the y axis: double runs per million *execute* calls (only
  an execute call can start a second process) and edits applied twice per million *file*
  calls (edit_files, write_file); each panel's title gives its denominators.
- ``unknown_share_svg``: the unknown-result share against the agent restart rate.

Each line is one design variant (a colour) at one value of the other axes (a line style
and a marker shape: the 2 s and 5 s margins). A point with events is a filled mark with
its interval as a whisker, shaded (alpha, so overlapping bands stay visible) between
neighbours that both saw events; a point with no event has no rate to draw on a log axis:
it is a hollow down-pointing triangle at its upper bound, and the line breaks there
rather than join upper bounds to rates (a band from the floor to every zero count's
bound filled the lower half of the picture with grey). Series are moved sideways by a few
percent on the log x axis, so today's lines (the same at every margin) and equal bounds
of two designs stay visible. The y axis is logarithmic when the values span two decades
or more (then reaching the 1-per-million line too), linear from 0 otherwise. The legend
says the interval method, the marker rules and the reference lines; a footnote says what
the interval does not (calls of one seed share its faults).

Rule 1. Same report, same bytes: drawn inside ``_style.context()``, saved by
        ``_style.to_svg`` with a salt from the picture's data; series and styles in the
        report's row order, which is the grid's.
Rule 2. Only what the report holds is drawn: a row without a denominator (rate ``None``)
        is left out, and a picture whose x axis the sweep does not vary is not asked for
        (reports/sweep.py says so in the Markdown).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from toolcall_sim.model.agent.rules import AgentRules

from . import _style
from .charts import PALETTE

DELAY_AXIS = "latency_p99"  # the in-flight delay's tail (ms in the rows' point_value)
MARGIN_AXIS = "age_margin"
RESTART_AXIS = "agent_restarts_per_hour"
CONTRACT_AGE_MARGIN_MS = AgentRules().age_margin_ms  # the contract's (Rev C's) margin
TARGET_PER_MILLION = 1.0  # the design's question: one double run per million calls
BAND_ALPHA = 0.13
LOG_SPAN = 100.0  # a log y axis from two decades of spread on
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "D", "^")  # a rate's mark per value of the other axes (a lone dot has no line style)
DODGE = 1.045  # each series' sideways step, a factor on the log x axis
FOOTNOTE = ("Intervals treat calls as independent; the calls of one seed share its restarts and delays, so bands "
            "are too narrow where events cluster (more seeds narrow them honestly). Series are moved sideways a "
            "little so that equal values stay visible.")
INTERVAL_NOTE = "95% exact interval\n(Clopper-Pearson, at every point)"
DELAY_LABEL = "in-flight delay tail: p99 of the one-way message latency (latency_p99), s"


@dataclass(frozen=True)
class Panel:
    key: str  # the row's estimate
    denominator: str  # the row's count it is per
    title: str
    ylabel: str
    unit: str  # what the denominator counts


DOUBLE_RUN_PANELS = (
    Panel("double_runs_per_million_executes", "executes", "double runs: execute calls that started twice",
          "events per million calls of the kind", "execute calls"),
    Panel("edits_twice_per_million_file_calls", "file_calls", "edits applied twice: edit_files, write_file",
          "events per million calls of the kind", "file calls"),
)
UNKNOWN_PANEL = Panel("unknown_share_percent", "results", "unknown results", "unknown results (% of committed results)",
                      "committed results")


@dataclass(frozen=True)
class Point:
    x: float
    rate: float
    lo: float
    hi: float
    count: int


def _x_of(row: dict, x_axis: str) -> float:
    x = row["point_value"][x_axis]
    return x / 1000 if x_axis in (DELAY_AXIS, MARGIN_AXIS) else float(x)  # durations: ms -> s


def _series(report: dict, x_axis: str, key: str) -> dict[tuple[str, str], list[Point]]:
    """(variant, the other axes' values) -> points in the order of x, rows in grid order."""
    others = [a for a in report["axes"] if a != x_axis]
    out: dict[tuple[str, str], list[Point]] = {}
    for row in report["rows"]:
        est = row.get(key)
        if est is None or est["rate"] is None:
            continue
        rest = ", ".join(f"{a} {row['point'][a]}" for a in others)
        out.setdefault((row["variant"], rest), []).append(
            Point(_x_of(row, x_axis), est["rate"], est["ci95"][0], est["ci95"][1], est["count"]))
    return {label: sorted(points, key=lambda p: p.x) for label, points in out.items()}


def _log_range(values: list[float]) -> tuple[float, float] | None:
    """Whole decades around the positive values (a value on a decade gets the decade below,
    so a reference line there is not drawn on the frame), or None when they span under two
    decades."""
    positive = [v for v in values if v > 0]
    if not positive or max(positive) / min(positive) < LOG_SPAN:
        return None
    return 10.0 ** math.floor(math.log10(min(positive) * 0.99)), 10.0 ** math.ceil(math.log10(max(positive)))


def _margins_ms(report: dict) -> list[int]:
    """The age margins the sweep's worlds use (swept, fixed, or the contract's default)."""
    if MARGIN_AXIS in report["axes"]:
        return sorted({int(r["point_value"][MARGIN_AXIS]) for r in report["rows"]})
    fixed = report.get("fixed_value", {})
    return [int(fixed[MARGIN_AXIS])] if MARGIN_AXIS in fixed else [CONTRACT_AGE_MARGIN_MS]


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"


def _draw(report: dict, x_axis: str, xlabel: str, panels: tuple[Panel, ...], title: str,
          margins_ms: list[int], target: float | None):
    """The figure: one axes per panel, sharing y; returns (figure, what identifies it)."""
    variants = list(report["variants"])
    colour = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}
    per_panel = [_series(report, x_axis, p.key) for p in panels]
    labels = list(dict.fromkeys(label for series in per_panel for label in series))
    rests = list(dict.fromkeys(rest for _, rest in labels))
    style = {rest: (LINE_STYLES[i % len(LINE_STYLES)], MARKERS[i % len(MARKERS)]) for i, rest in enumerate(rests)}
    points = [pt for series in per_panel for pts in series.values() for pt in pts]
    xs = sorted({pt.x for pt in points})
    marks_ms = sorted(set(margins_ms) | {CONTRACT_AGE_MARGIN_MS}) if margins_ms else []
    ys = [v for pt in points for v in ((pt.rate, pt.lo) if pt.count else ()) + (pt.hi,)]
    # log or linear by the data alone; a log axis then reaches the reference line too
    y_log = _log_range(ys) and _log_range(ys + ([target] if target is not None else []))
    x_all = xs + [m / 1000 for m in marks_ms]
    x_log = bool(x_all) and min(x_all) > 0 and max(x_all) / min(x_all) >= 10
    # Lines that share an x would hide each other's marks (today's lines are the same at
    # every margin; the no-event bounds of two designs are equal): each series is moved
    # sideways by a few percent of a log decade, the same at every x.
    dodge = {label: DODGE ** (i - (len(labels) - 1) / 2) if x_log else 1.0 for i, label in enumerate(labels)}
    legend_w, panel_w, height = 3.4, 3.9, 4.6
    width = legend_w + panel_w * len(panels) + 0.3
    fig = _style.new_figure(width, height)
    axes = []
    for n, panel in enumerate(panels):
        ax = fig.add_axes(((0.75 + n * panel_w) / width, 1.2 / height, (panel_w - 0.9) / width, (height - 2.0) / height),
                          sharey=axes[0] if axes else None)
        axes.append(ax)
        for (variant, rest), pts in per_panel[n].items():
            c, (ls, marker) = colour.get(variant, _style.INK), style[rest]
            gid = f"{panel.key}-{variant}-{rest}".replace(" ", "_").replace(",", "")
            px = [p.x * dodge[(variant, rest)] for p in pts]
            seen = [bool(p.count) for p in pts]
            # the band joins neighbouring points that both saw events; a lone one has its whisker
            ax.fill_between(px, [p.lo for p in pts], [p.hi for p in pts], where=seen, color=c, alpha=BAND_ALPHA,
                            lw=0, zorder=1, gid=f"band-{gid}")
            ax.vlines([x for x, s in zip(px, seen) if s], [p.lo for p in pts if p.count],
                      [p.hi for p in pts if p.count], color=c, lw=0.9, alpha=0.7, zorder=2, gid=f"interval-{gid}")
            ax.plot(px, [p.rate if p.count else math.nan for p in pts], color=c, ls=ls, lw=1.3, marker=marker,
                    ms=3.8, zorder=3, gid=f"rate-{gid}")
            if not all(seen):
                ax.plot([x for x, s in zip(px, seen) if not s], [p.hi for p in pts if not p.count], ls="none",
                        marker="v", ms=5.5, mfc="white", mec=c, mew=1.1, zorder=4, gid=f"upper-bound-{gid}")
        if target is not None:
            ax.axhline(target, color=_style.GREY, ls="--", lw=0.9, zorder=2, gid="target")
        for m in marks_ms:
            contract = m == CONTRACT_AGE_MARGIN_MS
            ax.axvline(m / 1000, color=_style.EVIDENCE if contract else _style.GREY, ls="-" if contract else ":",
                       lw=1.4 if contract else 1.1, zorder=2, gid=f"age-margin-{m}ms")
            used = m in margins_ms
            note = ("the contract's" if contract else "") + (
                "" if not used else (", swept" if contract else "swept") if MARGIN_AXIS in report["axes"]
                else (", this sweep's" if contract else "this sweep's"))
            ax.text(m / 1000, 0.985, f" age margin {_seconds(m)} ({note}) ", transform=ax.get_xaxis_transform(),
                    rotation=90, ha="right", va="top", fontsize=6, color=_style.EVIDENCE if contract else _style.GREY,
                    gid=f"age-margin-label-{m}ms")
        if x_log:
            ax.set_xscale("log")
            ax.set_xlim(min(x_all) / 1.5, max(x_all) * 1.5)
        if x_all:
            ax.set_xticks(sorted(set(x_all)))
            ax.set_xticklabels([f"{x:g}" for x in sorted(set(x_all))])
            ax.minorticks_off()
        if y_log:
            ax.set_yscale("log")
            ax.set_ylim(*y_log)
        else:
            ax.set_ylim(0, max(ys + [1e-9]) * 1.12)
        denominators = [r[panel.denominator] for r in report["rows"]]
        span = "0" if not denominators else (f"{min(denominators):,}" if min(denominators) == max(denominators)
                                             else f"{min(denominators):,}-{max(denominators):,}")
        ax.set_title(f"{panel.title}\n(n = {span} {panel.unit} a point)", fontsize=7.5)
        if n == 0:
            ax.set_ylabel(panel.ylabel)
        ax.grid(True, which="major", color=_style.LIGHT, lw=0.5, zorder=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    left, right = 0.75 / width, (0.75 + (len(panels) - 1) * panel_w + panel_w - 0.9) / width
    fig.text((left + right) / 2, 0.72 / height, f"{xlabel}, log scale" if x_log else xlabel, ha="center",
             va="center", gid="x-label")
    handles = [Line2D([], [], color=colour.get(v, _style.INK), ls=style[rest][0], marker=style[rest][1], ms=3.8,
                      label=", ".join(filter(None, (v, rest)))) for v, rest in labels]
    handles += [Patch(facecolor=_style.GREY, alpha=0.35, lw=0, label=f"shade, whisker: {INTERVAL_NOTE}"),
                Line2D([], [], color=_style.INK, ls="none", marker="o", ms=3.8, label="filled: the rate (1 event or more)"),
                Line2D([], [], color=_style.INK, ls="none", marker="v", ms=5.5, mfc="white",
                       label="hollow: no event, 95% upper bound only")]
    if target is not None:
        handles.append(Line2D([], [], color=_style.GREY, ls="--", lw=0.9, label=f"{target:g} per million"))
    if marks_ms:
        handles.append(Line2D([], [], color=_style.EVIDENCE, lw=1.4,
                              label=f"the contract's age margin, {_seconds(CONTRACT_AGE_MARGIN_MS)}"))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=((width - legend_w) / width, 1 - 0.75 / height),
               frameon=False, fontsize=6.3, title="lines, marks, intervals", title_fontsize=6.8, alignment="left")
    fig.text(0.1 / width, 1 - 0.25 / height, title, fontsize=9.5, fontweight="bold", va="center")
    fig.text(0.1 / width, 0.08 / height, "\n".join(textwrap.wrap(FOOTNOTE, int(width * 21))), fontsize=5.8,
             color=_style.GREY, va="bottom")
    identity = [x_axis, [p.key for p in panels], title, margins_ms,
                {f"{v}|{r}": [[p.x, p.rate, p.lo, p.hi, p.count] for p in pts]
                 for series in per_panel for (v, r), pts in series.items()}]
    return fig, identity


def double_runs_figure(report: dict):
    """The margin question's figure (a matplotlib Figure, for a test to inspect)."""
    return _draw(report, DELAY_AXIS, DELAY_LABEL, DOUBLE_RUN_PANELS,
                 f"{report['sweep']}: double runs and edits applied twice vs the in-flight delay's tail",
                 _margins_ms(report), TARGET_PER_MILLION)


def double_runs_svg(report: dict) -> str:
    with _style.context():
        fig, identity = double_runs_figure(report)
        return _style.to_svg(fig, "sweep-double-runs", *identity)


def unknown_share_figure(report: dict):
    return _draw(report, RESTART_AXIS, "agent restarts per hour", (UNKNOWN_PANEL,),
                 f"{report['sweep']}: unknown share vs restart rate", [], None)


def unknown_share_svg(report: dict) -> str:
    with _style.context():
        fig, identity = unknown_share_figure(report)
        return _style.to_svg(fig, "sweep-unknown-share", *identity)
