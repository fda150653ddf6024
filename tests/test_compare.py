"""``toolcall-sim compare``: bad input is one line and exit 2, ``--json`` has the shape
reports and CI read, ``--report DIR`` writes the Markdown table, and the output does not
depend on the worker count (issue 16)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from check_memo import ABOVE_MARGIN_GROUP, each_exploration_once

from toolcall_sim.cli.main import main

SMALL = ["--designs", "contract,first-attempt-only", "--worlds", "above-margin", "--seeds", "3"]
# The above-margin world exhausted under each design once per worker process, shared with
# tests/test_check_sections.py and tests/test_designs.py (tests/check_memo.py): what is
# tested here is the command's output, not the explorer (tests/test_explore*.py).
XDIST_GROUP = ABOVE_MARGIN_GROUP


@pytest.mark.parametrize("argv, words", [
    (["--designs", "contract,nope"], "unknown variant 'nope'"),
    (["--designs", ""], "comma-separated"),
    (["--designs", "contract,contract"], "named twice"),
    (["--worlds", "middle"], "unknown world 'middle'"),
    (["--seeds", "0"], "--seeds: must be at least 1"),
    (["--workers", "0"], "--workers: must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, tmp_path):
    code = main(["compare", *argv, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_out_that_is_a_file_is_bad_input(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["compare", *SMALL, "--report", str(blocker)]) == 2
    assert "is a file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    """SMALL compared in one process, with --report: (JSON, out folder, report folder).
    One run for the tests below, which read it (each run costs seconds of explorer)."""
    root = tmp_path_factory.mktemp("compare")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), pytest.MonkeyPatch.context() as patch:  # capsys is per test
        each_exploration_once(patch)
        code = main(["compare", *SMALL, "--json", "--out", str(root / "out"), "--report", str(root / "rep")])
    assert code == 0
    return json.loads(buffer.getvalue()), root / "out", root / "rep"


def test_json_shape_and_the_designs_verdicts(one_worker):
    doc, _, rep = one_worker
    assert doc["designs"] == ["contract", "first-attempt-only"]
    assert doc["seeds"] == 3 and [w["name"] for w in doc["worlds"]] == ["above-margin"]
    assert "unknown_only_when_unknowable" in doc["properties"] and "retry_gets_recorded_start" not in doc["properties"]
    contract, first = doc["rows"]
    assert set(contract["matrix"]) == set(doc["properties"])
    assert set(contract["costs"]) == {
        "durable_writes_per_call", "records_held_max", "records_held_long_run", "long_run_calls",
        "starts_per_execute", "unknown_share", "interrupt_latency_median_s", "interrupt_latency_p99_s",
        "interrupts", "requests_per_call"}
    assert contract["matrix"]["at_most_once"] == {"verdict": "residual_risk", "known": [],
                                                  "risks": ["age_check_best_effort"]}
    assert all(c["verdict"] != "violated" for c in contract["matrix"].values())
    # Only the scenario suite shows first-attempt-only's flaw outside the explorer's
    # default world: the first attempt never reached the agent.
    assert first["matrix"]["unknown_only_when_unknowable"]["verdict"] == "violated"
    assert "design_first_attempt_never_reached" in first["scenarios"]["violated"]
    table = (rep / "compare.md").read_text()
    assert table.startswith("# Comparing designs") and "| at_most_once | residual risk age_check_best_effort |" in table


def test_deterministic_for_any_worker_count(one_worker, capsys, monkeypatch):
    """Two workers print what one printed (--report only writes the table: it does not
    change the JSON, so the one-worker run above, with it, is the reference). The
    two-worker run compares one design, the contract: a design's row depends on that
    design alone, and the workers run each design's swarm seeds the same way (the
    second design doubled this test's time and tested the same code)."""
    one, out, _ = one_worker
    # The explorer runs in this process whatever --workers says: its result is the
    # fixture's (tests/check_memo.py); the workers run the swarm seeds.
    each_exploration_once(monkeypatch)
    code = main(["compare", "--designs", "contract", *SMALL[2:], "--json", "--out", str(out), "--workers", "2"])
    two = json.loads(capsys.readouterr().out)
    assert code == 0
    assert two["rows"] == [row for row in one["rows"] if row["design"] == "contract"]
    assert {k: v for k, v in two.items() if k not in ("rows", "designs")} == {
        k: v for k, v in one.items() if k not in ("rows", "designs")}


def test_compare_report_writes_the_check_page(one_worker):
    """``toolcall-sim compare --report DIR``: the same page as check's section (no
    judgment: the command's exit code is its own), and the Markdown table beside it.
    (Moved here from tests/test_check_sections.py to read the module's one run.)"""
    _, _, rep = one_worker
    r = json.loads((rep / "report.json").read_text())
    assert r["one_run"]["command"] == "compare" and not r["compare"]["judged"] and r["verdict"]["ok"]
    assert all(cell["as_expected"] is None for row in r["compare"]["rows"] for cell in row["matrix"].values())
    assert '<table class="heat">' in (rep / "index.html").read_text()
    assert all((rep / row["sequence"]).is_file() for row in r["compare"]["rows"])
    assert (rep / "compare.md").read_text().startswith("# Comparing designs")
    assert not (rep / "junit.xml").exists()
    assert str(rep.parent) not in json.dumps(r)


def test_cost_columns_in_the_long_run():
    """The memory column grows with the tool calls for remember-all only; the ledger pays
    a durable write per start and the incarnation token one per tool call, the others
    none; every design starts each command once when nothing goes wrong."""
    from toolcall_sim.ci import compare

    runs = {d: compare.long_run(d, 12) for d in compare.DEFAULT_DESIGNS}
    assert {d: r["records_at_end"] for d, r in runs.items()} == {
        "today": 0, "contract": 1, "ledger": 0, "fresh-start": 1, "remember-all": 12, "first-attempt-only": 1,
        "incarnation-token": 1}
    assert {d: r["durable_writes"] for d, r in runs.items()} == {
        "today": 0, "contract": 0, "ledger": 12, "fresh-start": 0, "remember-all": 0, "first-attempt-only": 0,
        "incarnation-token": 12}
    assert all(r["starts"] == 12 and r["tool_calls"] == 12 and not r["findings"] for r in runs.values())
