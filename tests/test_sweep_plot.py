"""The risk sweep's double-run picture (issue 37) answers the margin question: the
in-flight delay's tail on the x axis with the contract's age margin marked (from the
model, not a literal), double runs per execute call and edits applied twice per file call
in panels of their own, exact intervals said in the legend, zero counts drawn as upper
bounds, a log y axis when the rates span decades, and the same bytes every time.

The report is ``sweep.summarize`` over made-up counts (no run: these tests are about the
drawing), so every number the picture shows is known here."""

from __future__ import annotations

import math

import pytest

from toolcall_sim.ci import intervals, sweep
from toolcall_sim.model.agent.rules import AgentRules
from toolcall_sim.reports import sweep as sweep_report
from toolcall_sim.reports.figures import _style, risk

SPEC = {
    "name": "plot", "variants": ["contract", "today"], "seeds": 1,
    "workload": {"chats": 2, "turns": 2, "until": "2h"},
    "fixed": {"agent_restarts_per_hour": 2.0},
    "axes": {"latency_p99": ["1s", "5s", "30s"], "age_margin": ["2s", "5s"]},
}
EXECUTES, FILE_CALLS = 20_000, 15_000


def _counts(spec: sweep.Sweep, events) -> list[dict]:
    """One run per (point, variant): ``events(point, variant)`` -> (double runs, edits twice)."""
    out = []
    for index in range(spec.runs):
        p, v, _ = sweep.decode(spec, index)
        double, twice = events(spec.points()[p], spec.variants[v])
        out.append({"tool_calls": EXECUTES + FILE_CALLS, "executes": EXECUTES, "file_calls": FILE_CALLS,
                    "double_runs": double, "edits_twice": twice, "false_unknowns": 0,
                    "results": EXECUTES + FILE_CALLS, "unknown_results": 0, "sim_ms": 3_600_000, "other": {}})
    return out


def _events(point, variant):
    if variant == "today":
        return 3000, 1000  # thousands per million: decades above the contract's
    return (1, 0) if point["latency_p99"] == "30s" and point["age_margin"] == "2s" else (0, 0)


@pytest.fixture(scope="module")
def report():
    spec = sweep.from_data(SPEC, "plot.toml")
    return sweep.summarize(spec, _counts(spec, _events))


@pytest.fixture(scope="module")
def figure(report):
    with _style.context():
        fig, _ = risk.double_runs_figure(report)
        yield fig


def test_rates_are_per_call_of_the_kind(report):
    row = next(r for r in report["rows"] if r["variant"] == "today")
    assert row["double_runs_per_million_executes"]["rate"] == round(3000 / EXECUTES * 1e6, 4)
    assert row["edits_twice_per_million_file_calls"]["rate"] == round(1000 / FILE_CALLS * 1e6, 4)
    assert row["double_runs_per_million"]["rate"] == round(3000 / (EXECUTES + FILE_CALLS) * 1e6, 4)
    assert report["interval"] == "Clopper-Pearson exact, 95%"


def test_two_panels_per_kind_with_the_delay_tail_on_x(figure):
    panels = [ax for ax in figure.axes]
    assert len(panels) == 2
    assert "execute calls" in panels[0].get_title() and f"{EXECUTES:,} execute calls" in panels[0].get_title()
    assert "edit_files, write_file" in panels[1].get_title() and f"{FILE_CALLS:,} file calls" in panels[1].get_title()
    texts = [t.get_text() for t in figure.texts]
    assert any("in-flight delay" in t and "p99" in t and "latency_p99" in t and t.endswith("s, log scale")
               for t in texts), texts
    for ax in panels:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"  # 3,000/20,000 vs 1 in 20,000: decades


def test_the_contracts_margin_is_a_labelled_vertical_line_from_the_model(figure):
    margin_s = AgentRules().age_margin_ms / 1000
    assert risk.CONTRACT_AGE_MARGIN_MS == AgentRules().age_margin_ms
    for ax in figure.axes:
        line = next(ln for ln in ax.get_lines() if ln.get_gid() == f"age-margin-{AgentRules().age_margin_ms}ms")
        assert list(line.get_xdata()) == [margin_s, margin_s]  # vertical: the same x top and bottom
        labels = [t.get_text() for t in ax.texts]
        assert any(f"age margin {margin_s:g} s (the contract's" in t for t in labels), labels
        assert any("age margin 5 s (swept)" in t for t in labels), labels  # the sweep's other margin


def test_the_legend_says_the_interval_method_and_the_marks(figure):
    legend = " ".join(t.get_text() for t in figure.legends[0].get_texts())
    assert "Clopper-Pearson" in legend and "every point" in legend
    assert "no event, 95% upper bound only" in legend
    assert "the contract's age margin, 2 s" in legend
    assert "contract, age_margin 2s" in legend and "today, age_margin 5s" in legend


def test_a_zero_count_is_an_upper_bound_mark_and_an_event_a_dot_with_its_interval(figure, report):
    ax = figure.axes[0]
    upper = next(ln for ln in ax.get_lines() if ln.get_gid() == "upper-bound-double_runs_per_million_executes-"
                 "contract-age_margin_2s")
    assert upper.get_marker() == "v"
    zero_hi = intervals.clopper_pearson(0, EXECUTES)[1] * 1e6
    assert [round(y, 2) for y in upper.get_ydata()] == [round(zero_hi, 2)] * 2  # at 1 s and 5 s
    rate = next(ln for ln in ax.get_lines() if ln.get_gid() == "rate-double_runs_per_million_executes-"
                "contract-age_margin_2s")
    ys = list(rate.get_ydata())
    assert math.isnan(ys[0]) and math.isnan(ys[1]) and ys[2] == pytest.approx(1 / EXECUTES * 1e6, rel=1e-4)
    lo, hi = (x * 1e6 for x in intervals.clopper_pearson(1, EXECUTES))
    whisker = next(c for c in ax.collections if c.get_gid() == "interval-double_runs_per_million_executes-"
                   "contract-age_margin_2s")
    (x0, y0), (_, y1) = whisker.get_segments()[0]
    assert (y0, y1) == (pytest.approx(lo, rel=1e-4), pytest.approx(hi, rel=1e-4))
    assert ax.get_ylim()[0] < lo  # the lower bound (1.3 per million) is inside the frame


def test_svg_names_what_it_draws_and_is_the_same_bytes(report, tmp_path):
    svg = risk.double_runs_svg(report)
    assert svg == risk.double_runs_svg(report)
    for words in ("in-flight delay tail", "age margin 2 s (the contract", "Clopper-Pearson",
                  "no event, 95% upper bound only", "execute calls that started twice"):
        assert words in svg, words
    assert "Date" not in svg and "Matplotlib v" not in svg
    written = {}
    names, skipped = sweep_report.write_plots(report, tmp_path, lambda path, data: written.setdefault(path.name, data))
    assert names == [sweep_report.PLOT_DOUBLE_RUNS] and written[sweep_report.PLOT_DOUBLE_RUNS] == svg.encode()
    assert "does not vary `agent_restarts_per_hour`" in skipped[0]


def test_a_narrow_range_is_linear_from_zero():
    spec = sweep.from_data({**SPEC, "variants": ["today"]}, "plot.toml")
    report = sweep.summarize(spec, _counts(spec, lambda point, variant: (3000, 1000)))
    with _style.context():
        fig, _ = risk.double_runs_figure(report)
    for ax in fig.axes:
        assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
