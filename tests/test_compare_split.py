"""The design comparison draws each design's own flaw, apart from what it inherits from
today's chatd (issue 37; sim/ci/compare.py "The flaw and the inherited").

Two small exhausted worlds: the default world with one agent restart and one ownership
change (where each rejected design's flaw shows, as tests/test_designs.py pins) and the
comparison's above-margin world (where the ledger's shortest violation is one it
inherits, shorter than its flaw). Explorations are budgeted by states; the above-margin
ones are shared with the modules of its xdist group (tests/check_memo.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import tomllib

import pytest
from check_memo import ABOVE_MARGIN_GROUP, each_exploration_once

from toolcall_sim.ci import compare
from toolcall_sim.ci import suite as suites
from toolcall_sim.ci.check_jobs import _jobs, job_compare_explore
from toolcall_sim.cli.main import main
from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.model import designs
from toolcall_sim.model import explore as ex
from toolcall_sim.reports import compare as report

XDIST_GROUP = ABOVE_MARGIN_GROUP
ABOVE = compare.world_named("above-margin")
RESTART_AND_MOVE = compare.CompareWorld(
    "restart-and-move", "default",
    ex.Bounds(agent_restarts=1, ownership_changes=1, interrupts=0, lost_responses=0, task_retries=0), 20_000,
    "default world, one agent restart and one ownership change")
WORLDS = (RESTART_AND_MOVE, ABOVE)
VARIANTS = ("today", "contract", *(d.name for d in designs.DESIGNS))


@pytest.fixture(scope="module")
def explored(tmp_path_factory) -> dict[str, list[dict]]:
    """Every variant on both worlds, its counterexamples saved (variant -> explorer results)."""
    out = tmp_path_factory.mktemp("split")
    with pytest.MonkeyPatch.context() as patch:
        each_exploration_once(patch)
        return {v: [compare.explore_design(v, cw, out) for cw in WORLDS] for v in VARIANTS}


def _split(name: str, explored: dict) -> dict:
    ref = compare.reference_of(name)
    return compare.split(name, explored[name], compare.verdicts(explored[name], [], []),
                         None if ref is None else explored[ref])


def _new(results: list[dict]) -> set[tuple[str, str]]:
    return {(w["world"], v["property"]) for w in results for v in w["violations"] if v["residual_risk"] is None}


@pytest.mark.parametrize("design", [d for d in designs.DESIGNS if d.flaw], ids=lambda d: d.name)
def test_each_flaw_counterexample_violates_the_named_property(design, explored):
    """The counterexample under the flaw's heading is the shortest new finding of the
    design's named property, and its file replays to a violation of that property."""
    flaw = _split(design.name, explored)["flaw"]
    assert (flaw["name"], flaw["property"]) == (design.flaw_name, design.flaw)
    x = flaw["counterexample"]
    assert x["property"] == design.flaw
    lengths = [v["steps"] for w in explored[design.name] for v in w["violations"]
               if v["property"] == design.flaw and v["residual_risk"] is None]
    assert x["steps"] == min(lengths)
    replayed = cx.replay(x["file"])
    assert replayed.reproduced and (replayed.property, replayed.residual_risk) == (design.flaw, None)
    assert design.flaw in {v.property for v in replayed.violations}


def test_inherited_are_exactly_the_new_findings_today_shows_in_the_same_world(explored):
    """A design on today's chatd inherits each new finding (other than its flaw) that
    today has in the same world; its own are the rest. A design on the contract's chatd
    inherits nothing, and every new finding is its flaw or its own."""
    today = _new(explored["today"])
    for name in VARIANTS:
        s = _split(name, explored)
        design = compare.design_of(name)
        flaw = design.flaw if design is not None else ""
        rest = {(w, p) for w, p in _new(explored[name]) if p != flaw}
        inherited = {(x["world"], x["property"]) for x in s["inherited"]}
        own = {(x["world"], x["property"]) for x in s["own"]}
        if design is not None and design.base == "today":
            assert s["inherited_from"] == "today" and inherited == rest & today and own == rest - today
        else:
            assert s["inherited_from"] is None and inherited == set() and own == rest
    # The figures the issue is about: the ledger's flaw (12 steps) is drawn although a
    # violation it inherits from today is shorter (truthful_result, 9 steps above the margin).
    ledger = _split("ledger", explored)
    assert ledger["flaw"]["counterexample"]["steps"] == 12
    assert [(x["world"], x["property"], x["steps"]) for x in ledger["inherited"]] == [
        ("restart-and-move", "retry_changes_nothing", 12), ("above-margin", "retry_changes_nothing", 12),
        ("above-margin", "truthful_result", 9)]
    assert ledger["own"] == []
    fresh = _split("fresh-start", explored)
    assert fresh["flaw"]["counterexample"]["steps"] == 13 and fresh["inherited"] == []
    assert {(x["world"], x["property"]) for x in fresh["own"]} == {
        ("restart-and-move", "retry_changes_nothing"), ("above-margin", "retry_changes_nothing")}


def test_no_flaw_a_cost_and_a_flaw_found_elsewhere():
    """Today and the contract name no flaw; remember-all and incarnation-token name a
    cost; a flaw the explorer did not find says what did (the matrix cell)."""
    empty = [{"world": "w", "states": 1, "exhausted": True, "violations": []}]
    assert compare.split("contract", empty, {})["flaw"] is None
    assert compare.split("today", empty, {})["flaw"] is None
    cost = compare.split("remember-all", empty, {})["flaw"]
    assert cost == {"name": "records that grow with every tool call", "property": None, "counterexample": None,
                    "where": None}
    cell = {"unknown_only_when_unknowable": {"verdict": "violated", "where": "scenario design_x"}}
    flaw = compare.split("first-attempt-only", empty, cell)["flaw"]
    assert flaw["counterexample"] is None and flaw["where"] == "scenario design_x"
    with pytest.raises(ValueError, match="today"):
        compare.split("ledger", empty, {})


def test_references_are_today_with_the_same_planted_bugs():
    assert compare.reference_of("ledger") == "today"
    assert compare.reference_of("ledger+no-age-margin") == "today+no-age-margin"
    assert [compare.reference_of(n) for n in ("today", "contract", "fresh-start", "no-age-margin")] == [None] * 4
    assert compare.references(["ledger", "fresh-start"]) == ["today"]
    assert compare.references(["today", "ledger"]) == []


LEDGER_SUITE = """
name = "ledger-alone"
[compare]
designs = ["ledger"]
worlds = ["above-margin"]
seeds = 1
[compare.expect.ledger]
violated = ["at_most_once", "retry_changes_nothing", "truthful_result", "interrupt_stops_foreground",
            "canceled_before_received_never_runs"]
"""


def test_check_explores_today_for_a_ledger_compared_without_it(tmp_path, monkeypatch):
    """``toolcall-sim check``: today gets an explorer job of its own (no row, no runs), and
    the ledger's row says what it inherits from it."""
    suite = suites.from_dict(tomllib.loads(LEDGER_SUITE), "<s>")
    assert [args for fn, args in _jobs(suite) if fn is job_compare_explore] == [
        ("ledger", "above-margin"), ("today", "above-margin")]
    (tmp_path / "s.toml").write_text(LEDGER_SUITE)
    each_exploration_once(monkeypatch)
    assert main(["check", str(tmp_path / "s.toml"), "--out", str(tmp_path / "rep"), "--baseline",
                 str(tmp_path / "none.json"), "--update-baseline"]) == 0
    (row,) = json.loads((tmp_path / "rep" / "report.json").read_text())["compare"]["rows"]
    assert row["split"]["inherited_from"] == "today"
    assert [x["property"] for x in row["split"]["inherited"]] == ["retry_changes_nothing", "truthful_result"]
    assert row["counterexample"]["role"] == "flaw"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """``compare --json --report`` of the ledger and fresh-start above the margin (today
    explored as the ledger's reference only): (JSON, report folder)."""
    root = tmp_path_factory.mktemp("rendered")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), pytest.MonkeyPatch.context() as patch:
        each_exploration_once(patch)
        code = main(["compare", "--designs", "ledger,fresh-start", "--worlds", "above-margin", "--seeds", "1",
                     "--json", "--out", str(root / "out"), "--report", str(root / "rep")])
    assert code == 0
    return json.loads(buffer.getvalue()), root / "rep"


def test_json_text_markdown_and_page_carry_the_split(rendered):
    doc, rep = rendered
    assert doc["designs"] == ["ledger", "fresh-start"]  # today is a reference, not a row
    ledger, fresh = doc["rows"]
    assert ledger["split"]["flaw"]["counterexample"]["property"] == "at_most_once"
    assert [x["property"] for x in ledger["split"]["inherited"]] == ["retry_changes_nothing", "truthful_result"]
    assert fresh["split"]["inherited_from"] is None
    text = report.text(doc)
    assert "each design's flaw, apart from what it inherits from today" in text
    assert "  ledger: its flaw, the ledger's lost record (at_most_once): 12 steps in above-margin" in text
    assert "    inherited from today (today has a new finding of the same property in the same world):" in text
    assert "  fresh-start: its flaw, the fresh start after a restart (at_most_once): 13 steps" in text
    assert "    its own new findings besides the flaw:\n      retry_changes_nothing: 13 steps" in text
    table = (rep / "compare.md").read_text()
    assert "## Each design's flaw, apart from what it inherits from today" in table
    assert "- `ledger`: its flaw, the ledger's lost record (`at_most_once`): 12 steps" in table
    r = json.loads((rep / "report.json").read_text())
    row = r["compare"]["rows"][0]
    assert row["counterexample"]["role"] == "flaw" and row["counterexample"]["property"] == "at_most_once"
    for x in row["split"]["inherited"]:  # each inherited one saved in the report, with its command
        assert (rep / x["file"]).is_file() and x["reproduce"] == [f"toolcall-sim replay {x['file']}"]
    summary = (rep / "summary.md").read_text()
    assert "  - inherited from today (today has a new finding" in summary
    page = (rep / "index.html").read_text()
    assert ("<h3><code>ledger</code>: its flaw, the ledger&#x27;s lost record (at_most_once): 12 steps in "
            "above-margin</h3>") in page
    assert "<h4>Inherited from today (today has a new finding" in page
    assert page.count('alt="sequence diagram: ledger at_most_once"') == 1
