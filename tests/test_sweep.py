"""Risk sweeps (issue 17): every key of a sweep file is live or refused in one line, the
counters fire when the thing they count happens, the intervals are exact (Clopper-Pearson)
and each risk is also counted per call of its own kind, and the report is the same bytes
on every backend."""

from __future__ import annotations

import json
import math
import textwrap

import pytest

from toolcall_sim.ci import intervals, sweep
from toolcall_sim.cli.main import main
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict

TINY = """
name = "tiny"
summary = "a tiny sweep for the tests"
variants = ["contract", "today"]
seeds = 3
[workload]
chats = 2
turns = 3
tool_calls = [2, 3]
until = "3h"
[fixed]
agent_restarts_per_hour = 4.0
long_commands = 1.0
[axes]
latency_p99 = ["100ms", "3s"]
"""


def _tiny(tmp_path, text: str | None = None):
    path = tmp_path / "tiny.toml"
    body = text if text is not None else TINY
    path.write_text(textwrap.dedent(body))
    return path


# -- exact (Clopper-Pearson) intervals ---------------------------------------------


@pytest.mark.parametrize("k,n,lo,hi", [
    (0, 10, 0.0, 0.30850),  # 1 - 0.025^(1/10)
    (1, 10, 0.0025286, 0.44502),
    (5, 10, 0.18709, 0.81291),
    (10, 10, 0.69150, 1.0),
    (0, 1_000_000, 0.0, 3.6889e-06),  # about the rule of three, 3/n
    (1, 1_000_000, 2.5318e-08, 5.5716e-06),
])
def test_clopper_pearson_known_values(k, n, lo, hi):
    got = intervals.clopper_pearson(k, n)
    assert got[0] == pytest.approx(lo, rel=1e-4, abs=1e-12) and got[1] == pytest.approx(hi, rel=1e-4)


# (successes, trials) -> SciPy 1.17.1's exact bounds, printed by
# ``scipy.stats.beta.ppf(0.025, k, n - k + 1)`` and ``beta.ppf(0.975, k + 1, n - k)``:
# written here, so the comparison runs where SciPy is not installed (it is no
# dependency) and does not import it where it is (0.6 s). (binomtest's "exact" interval
# is the same to 2e-7: a root finder's tolerance.)
SCIPY_EXACT = {
    (0, 7): (0.0, 0.40961639722500337),
    (1, 10): (0.0025285785444617848, 0.4450161170281954),
    (3, 40): (0.01574217985104153, 0.20386474873289895),
    (17, 1000): (0.009933512592716534, 0.027079496864851366),
    (999, 1000): (0.9944410757201734, 0.9999746825125088),
    (1, 35042): (7.224986826735722e-07, 0.000158988641091744),
    (2, 35057): (6.909087953646873e-06, 0.000206068668894581),
    (3281, 35054): (0.09056882678215517, 0.0966955930410263),
    (0, 19664): (0.0, 0.00018757798347294682),
    (1, 1_000_000): (2.5317807663794178e-08, 5.571630655166939e-06),
}


def test_clopper_pearson_agrees_with_scipy():
    for (k, n), interval in SCIPY_EXACT.items():
        assert intervals.clopper_pearson(k, n) == pytest.approx(interval, rel=1e-9, abs=1e-15), (k, n)


def test_one_event_in_a_sweep_cell_is_bounded_exactly():
    """Issue 37's figure: the committed age_margin report put one double run in 35,042
    tool calls at [5.0, 162] per million (Wilson); the exact lower bound is 0.72 per
    million, seven times lower, and the upper 159. Per execute call (about 19,700 of them
    in that cell) the same event is [1.3, 283] per million."""
    lo, hi = (x * 1e6 for x in intervals.clopper_pearson(1, 35_042))
    assert round(lo, 2) == 0.72 and round(hi) == 159
    lo, hi = (x * 1e6 for x in intervals.clopper_pearson(1, 19_700))
    assert round(lo, 1) == 1.3 and round(hi) == 283


def test_clopper_pearson_covers_at_least_95_percent():
    """Exact means conservative: for every n and true rate the interval holds the rate in
    at least 95% of samples (summed over the binomial distribution, no sampling)."""
    for n in (1, 5, 20, 60):
        bounds = [intervals.clopper_pearson(k, n) for k in range(n + 1)]
        for p in (0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.77, 0.99):
            cover = sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k)
                        for k, (lo, hi) in enumerate(bounds) if lo <= p <= hi)
            assert cover >= 0.95 - 1e-12, (n, p, cover)


def test_betainc_known_values_and_edges():
    assert intervals.betainc(2, 3, 0.5) == pytest.approx(0.6875, rel=1e-14)  # 11/16
    assert intervals.betainc(1, 1, 0.3) == pytest.approx(0.3, rel=1e-14)  # the uniform
    assert intervals.betainc(4, 2, 0.0) == 0.0 and intervals.betainc(4, 2, 1.0) == 1.0
    assert intervals.beta_quantile(0.6875, 2, 3) == pytest.approx(0.5, rel=1e-12)


def test_clopper_pearson_of_nothing_is_everything():
    assert intervals.clopper_pearson(0, 0) == (0.0, 1.0)
    for bad in ((3, 2), (-1, 5)):
        with pytest.raises(ValueError):
            intervals.clopper_pearson(*bad)


# -- the sweep file --------------------------------------------------------------


def test_points_are_the_grid_in_file_order(tmp_path):
    spec = sweep.load(str(_tiny(tmp_path, TINY + 'age_margin = ["2s", "5s"]\n')))
    assert spec.points() == [{"latency_p99": "100ms", "age_margin": "2s"}, {"latency_p99": "100ms", "age_margin": "5s"},
                             {"latency_p99": "3s", "age_margin": "2s"}, {"latency_p99": "3s", "age_margin": "5s"}]
    assert spec.runs == 4 * 2 * 3
    assert [sweep.decode(spec, i) for i in (0, 2, 3, 6, 8)] == [(0, 0, 1), (0, 0, 3), (0, 1, 1), (1, 0, 1), (1, 0, 3)]


BASE = {
    "name": "tiny", "summary": "a tiny sweep for the tests", "variants": ["contract", "today"], "seeds": 2,
    "workload": {"chats": 2, "turns": 2, "tool_calls": [1, 2], "until": "2h"},
    "fixed": {"agent_restarts_per_hour": 4.0, "long_commands": 1.0},
    "axes": {"latency_p99": ["100ms", "3s"]},
}

# (what to change: section, key, value), the one line it must give
BAD = [
    ((None, "colour", 1), "colour: unknown key"),
    (("fixed", "latency_p99", "1s"), "fixed.latency_p99: also swept in [axes]"),
    (("fixed", "jitter", 1), "fixed.jitter: unknown parameter"),
    (("fixed", "stall_min", "2s"), "stall_min: not used: stall_probability is 0 at every point"),
    (("fixed", "agent_downtime_max", "2s"), None),  # restarts are on: live, accepted
    (("fixed", "long_commands", 1.5), "fixed.long_commands: a share must be between 0 and 1"),
    (("fixed", "age_margin", 2), "fixed.age_margin: expected a duration string"),
    (("fixed", "latency_median", "5s"), "latency_p99: 100ms is below the median 5s"),
    (("workload", "chats", 0), "workload.chats: must be at least 1"),
    (("workload", "tool_calls", [3, 1]), "workload.tool_calls: expected [min, max]"),
    (("workload", "threads", 2), "workload.threads: unknown key"),
    (("workload", "chat_start", "3h"), "workload.chat_start: must be before workload.until"),
    ((None, "variants", ["tomorrow"]), "variants[0]: unknown variant 'tomorrow'"),
    ((None, "variants", []), "variants: expected a non-empty list"),
    ((None, "variants", ["today", "today"]), "variants: a variant is named twice"),
    (("axes", "latency_p99", []), "axes.latency_p99: expected a non-empty list"),
    (("axes", "latency_p99", ["1s", "1s"]), "axes.latency_p99: a value is listed twice"),
    (("axes", "age_margin", ["2s", "soon"]), "axes.age_margin[1]: not a duration"),
    ((None, "seeds", 0), "seeds: must be at least 1"),
    ((None, "axes", {}), "axes: name at least one parameter"),
]


def _write(tmp_path, data: dict):
    from toolcall_sim.world.scenario_toml import to_toml

    path = tmp_path / "sweep.toml"
    path.write_text(to_toml(data))
    return path


@pytest.mark.parametrize("change,reason", BAD, ids=[f"{c[1]}-{i}" for i, (c, _) in enumerate(BAD)])
def test_a_wrong_sweep_file_is_one_line_exit_2(change, reason, tmp_path, capsys):
    import copy

    data = copy.deepcopy(BASE)
    section, key, value = change
    (data if section is None else data[section])[key] = value
    spec_or_error = None
    try:
        spec_or_error = sweep.from_data(data, "sweep.toml")
    except sweep.ScenarioError as err:
        spec_or_error = err
    if reason is None:
        assert isinstance(spec_or_error, sweep.Sweep)
        return
    assert main(["sweep", str(_write(tmp_path, data)), "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and reason in err, err


@pytest.mark.parametrize("argv,reason", [
    (["--workers", "0"], "sweep: --workers: must be at least 1"),
    (["--seeds", "0"], "sweep: --seeds: must be at least 1"),
    (["--cluster", "localhost"], "sweep: --cluster: not a Dask scheduler address"),
    (["--cluster", "tcp://127.0.0.1:9", "--workers", "2"], "sweep: --workers: not used with --cluster"),
])
def test_bad_flags_are_one_line_exit_2(argv, reason, tmp_path, capsys):
    assert main(["sweep", str(_tiny(tmp_path)), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err, err


def test_missing_file_is_one_line_exit_2(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.toml")]) == 2
    assert "no such sweep file" in capsys.readouterr().err


# -- every parameter is live ---------------------------------------------------------

# A value that differs from the default, and the setting it needs to act on.
LIVE = {
    "latency_median": ("50ms", {}),
    "latency_p99": ("3s", {}),
    "stall_probability": (0.5, {}),
    "stall_min": ("200ms", {"stall_probability": 0.5, "stall_max": "5s"}),
    "stall_max": ("9s", {"stall_probability": 0.5}),
    "agent_restarts_per_hour": (6.0, {}),
    "agent_downtime_max": ("1m", {"agent_restarts_per_hour": 6.0}),
    "ownership_changes_per_hour": (6.0, {}),
    "interrupts_per_hour": (6.0, {}),
    "long_commands": (1.0, {}),
    "age_margin": ("10s", {"agent_restarts_per_hour": 6.0}),
    "loss": (0.05, {}),
}


def test_live_table_names_every_parameter():
    assert set(LIVE) == set(sweep.PARAMS)


@pytest.mark.parametrize("name", sorted(sweep.PARAMS))
def test_every_parameter_changes_the_run(name):
    value, setting = LIVE[name]

    def trace_hash(fixed: dict) -> str:
        spec = sweep.from_data({"name": "live", "variants": ["contract"], "seeds": 1,
                                "workload": {"chats": 2, "turns": 3, "until": "3h"},
                                "fixed": fixed, "axes": {"interrupts_per_hour" if name != "interrupts_per_hour"
                                                         else "loss": [0.25 if name != "interrupts_per_hour" else 0.0]}})
        return run_scenario(from_dict(sweep.scenario_of(spec, spec.points()[0], 3)), "contract").trace_sha256

    assert trace_hash({**setting, name: value}) != trace_hash(setting)


# -- counting --------------------------------------------------------------------


def test_counters_fire_on_double_runs_and_stay_quiet_under_the_contract(tmp_path):
    """Today's chatd re-runs a command that outlives its attempt and re-applies an edit on
    a retry (CODAGT-757): with every foreground command long, today's double runs and
    edits applied twice are counted and the contract's are 0; the contract's price, false
    unknowns after the agent restarts (4 an hour here), is counted too."""
    spec = sweep.load(str(_tiny(tmp_path)))
    report = sweep.run_sweep(spec)
    today = [r for r in report["rows"] if r["variant"] == "today"]
    contract = [r for r in report["rows"] if r["variant"] == "contract"]

    def total(rows, key):
        return sum(r[key]["count"] for r in rows)

    assert total(today, "double_runs_per_million") > 0 and total(today, "edits_twice_per_million") > 0
    assert total(contract, "double_runs_per_million") == 0 and total(contract, "edits_twice_per_million") == 0
    assert total(contract, "false_unknowns_per_million") > 0
    assert total(contract, "unknown_share_percent") >= total(contract, "false_unknowns_per_million")
    assert all(r["tool_calls"] > 0 and r["seeds"] == 3 for r in report["rows"])
    row = today[0]
    k, n = row["double_runs_per_million"]["count"], row["tool_calls"]
    assert row["double_runs_per_million"]["rate"] == round(k / n * 1e6, 4)
    for row in report["rows"]:  # per call of the kind: the same events over the kind's calls
        assert row["executes"] + row["file_calls"] == row["tool_calls"]
        for key, per_kind, calls in (("double_runs_per_million", "double_runs_per_million_executes", "executes"),
                                     ("edits_twice_per_million", "edits_twice_per_million_file_calls",
                                      "file_calls")):
            k = row[key]["count"]
            assert row[per_kind]["count"] == k and row[per_kind]["rate"] == round(k / row[calls] * 1e6, 4)
            lo, hi = intervals.clopper_pearson(k, row[calls])
            assert row[per_kind]["ci95"] == [round(lo * 1e6, 4), round(hi * 1e6, 4)]


def test_per_kind_denominators_are_the_runs_calls(tmp_path):
    """The denominators are counted from the runs: in this tiny world every drawn tool
    call commits, so a run's execute calls and file calls are its scenario's."""
    spec = sweep.load(str(_tiny(tmp_path)))
    for index in (0, 4, 11):
        counts = sweep.run_item(index, spec)
        p, _, seed = sweep.decode(spec, index)
        tools = [tc.tool for turn in from_dict(sweep.scenario_of(spec, spec.points()[p], seed)).turns
                 for tc in turn.tool_calls]
        assert counts["tool_calls"] == len(tools)
        assert counts["executes"] == tools.count("execute")
        assert counts["file_calls"] == tools.count("edit_files") + tools.count("write_file")


# -- the same report on every backend --------------------------------------------------


@pytest.mark.xdist_group("dask")  # with tests/test_cluster.py's Dask tests, in one worker
def test_same_json_on_one_process_two_workers_and_a_cluster(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    path = _tiny(tmp_path)
    assert main(["sweep", str(path), "--json"]) == 0
    one = capsys.readouterr().out
    assert main(["sweep", str(path), "--json", "--workers", "2"]) == 0
    assert capsys.readouterr().out == one
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert main(["sweep", str(path), "--json", "--cluster", cluster.scheduler_address]) == 0
    assert capsys.readouterr().out == one
    report = json.loads(one)
    assert report["runs"] == 12 and report["interval"] == "Clopper-Pearson exact, 95%"


def test_report_dir_has_markdown_json_and_deterministic_pictures(tmp_path, capsys):
    path = _tiny(tmp_path, TINY.replace(
        "[fixed]\nagent_restarts_per_hour = 4.0\n", "[fixed]\n").replace(
        'latency_p99 = ["100ms", "3s"]', 'latency_p99 = ["100ms", "3s"]\nagent_restarts_per_hour = [1.0, 4.0]'))
    out1, out2 = tmp_path / "r1", tmp_path / "r2"
    assert main(["sweep", str(path), "--seeds", "1", "--report", str(out1)]) == 0
    table = capsys.readouterr().out
    assert main(["sweep", str(path), "--seeds", "1", "--report", str(out2)]) == 0
    names = sorted(p.name for p in out1.iterdir())
    assert names == ["double_runs_vs_p99.svg", "sweep.json", "sweep.md", "unknown_share_vs_restarts.svg"]
    for name in names:
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name
    md = (out1 / "sweep.md").read_text()
    assert "| latency_p99 | agent_restarts_per_hour | variant |" in md and "![double_runs_vs_p99.svg]" in md
    assert "latency_p99  agent_restarts_per_hour  variant" in table


def test_a_sweep_without_the_axes_says_which_pictures_are_missing(tmp_path, capsys):
    path = _tiny(tmp_path, TINY.replace("long_commands = 1.0\n", "").replace(
        'latency_p99 = ["100ms", "3s"]', "long_commands = [1.0]"))
    assert main(["sweep", str(path), "--seeds", "1", "--report", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "sweep.md").read_text()
    assert "does not vary `latency_p99`" in md and "does not vary `agent_restarts_per_hour`" in md
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["sweep.json", "sweep.md"]


# -- the shipped sweep -------------------------------------------------------------------


def test_shipped_age_margin_sweep_loads_and_is_a_million_tool_calls():
    spec = sweep.load(sweep.resolve_path("age_margin"))
    assert dict(spec.axes)["age_margin"] == ("2s", "5s")
    assert "latency_p99" in dict(spec.axes)
    # 800 seeds made 996,840 tool calls in 16,000 runs (62.3 a run): 60 a run is safe.
    assert spec.runs * 60 >= 1_000_000


def test_the_docs_list_every_sweep_parameter_as_the_code_declares_it():
    """The docs' parameter table (reference/sweep-parameters.md, generated when the site is
    built) is ``sweep.PARAMS``, row for row, and the page that writes a sweep links it."""
    from pathlib import Path

    from toolcall_sim.cli import docs_reference

    page = docs_reference.pages()["reference/sweep-parameters.md"]
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{p.name}` | {p.type} | `{p.default}` | {p.meaning} |" for p in sweep.PARAMS.values()]
    howto = (Path(__file__).resolve().parent.parent / "docs" / "pages" / "how-to" / "risk-sweeps.md")
    assert "../reference/sweep-parameters.md" in howto.read_text(encoding="utf-8")
