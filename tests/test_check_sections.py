"""``toolcall-sim check``'s design comparison and detection table (issues 16 and 19 in
the CI report): the suite sections, the judgment, and the four outputs.

A tiny suite written here (two designs on the above-margin world with one swarm seed,
one planted bug through the explorer, the search and the swarm with small budgets) runs in a few
seconds; ``test_default_suite_has_both_sections`` reads the default suite and does not
run it (its compare section is checked by the CI run itself, against the verdicts
tests/test_designs.py and tests/test_compare.py pin). Budgets are counted in states and
seeds, never in seconds.
"""

from __future__ import annotations

import json
import re
import textwrap
import tomllib

import junitparser
import pytest
from check_memo import ABOVE_MARGIN_GROUP, each_exploration_once, each_job_once
from page_links import assert_navigable

from toolcall_sim.ci import bugs, compare
from toolcall_sim.ci import suite as suites
from toolcall_sim.cli.main import main

SECTIONS = """
name = "sections"

[compare]
designs = ["contract", "first-attempt-only"]
worlds = ["above-margin"]
seeds = 1
quick = true

# interrupt_stops_foreground: the known finding kill_failed_reported_interrupted of
# scenarios/finding_interrupt_kill_fails.toml, as in the default suite.
[compare.expect.contract]
known_finding = ["truthful_result", "interrupt_stops_foreground"]
residual_risk = ["at_most_once", "retry_changes_nothing",
                 "canceled_before_received_never_runs", "unknown_only_when_unknowable"]

[compare.expect.first-attempt-only]
violated = ["unknown_only_when_unknowable"]
known_finding = ["truthful_result", "interrupt_stops_foreground"]
residual_risk = ["at_most_once", "retry_changes_nothing",
                 "canceled_before_received_never_runs"]

[detection]
drivers = ["explore", "search", "swarm"]
quick_drivers = ["swarm"]
bugs = ["interrupt-without-cancel"]
budgets = { explore = 500, search = 10, swarm = 3 }
"""


def _check(*args: str) -> int:
    return main(["check", *args])


# The jobs of the tiny suite's one-worker run (tests/check_memo.py): the run that
# expects another verdict of the contract judges the contract's same two jobs.
_JOBS: dict = {}
# The one-worker run's explorations of the above-margin world are kept for
# tests/test_compare.py and tests/test_designs.py, in the same worker (tests/conftest.py).
XDIST_GROUP = ABOVE_MARGIN_GROUP


@pytest.fixture(scope="module")
def sections(tmp_path_factory):
    """The tiny suite run with one worker and with two: (folder, first report, second).
    The one-worker run keeps its jobs' outputs for later tests; the two-worker run
    computes its own (in its pool), so the two reports are two computations."""
    root = tmp_path_factory.mktemp("sections")
    (root / "s.toml").write_text(SECTIONS)
    base = str(root / "none.json")
    for out, workers in (("one", "1"), ("two", "2")):
        with pytest.MonkeyPatch.context() as patch:
            each_job_once(patch, _JOBS)
            if workers == "1":  # the pool's run explores in its workers, not from the cache
                each_exploration_once(patch)
            assert _check(str(root / "s.toml"), "--out", str(root / out), "--baseline", base, "--update-baseline",
                          "--workers", workers) == 0
    assert _JOBS  # the one-worker run filled the memo
    return root


def _report(folder) -> dict:
    return json.loads((folder / "report.json").read_text())


def test_report_json_carries_the_matrix_the_costs_and_the_detection_table(sections):
    r = _report(sections / "one")
    c = r["compare"]
    assert c["designs"] == ["contract", "first-attempt-only"] and c["judged"] and c["unexpected"] == 0
    assert [w["name"] for w in c["worlds"]] == ["above-margin"] and c["seeds"] == 1
    contract, first = c["rows"]
    assert set(contract["matrix"]) == set(c["properties"]) and set(contract["costs"]) >= {
        "durable_writes_per_call", "records_held_max", "records_held_long_run", "requests_per_call"}
    assert first["matrix"]["unknown_only_when_unknowable"]["verdict"] == "violated"
    assert first["matrix"]["unknown_only_when_unknowable"]["expected"] == "violated"
    assert contract["matrix"]["one_result"] == {**contract["matrix"]["one_result"], "verdict": "holds_exhaustively",
                                                "expected": "holds", "as_expected": True}
    # Each design's shortest counterexample is in the report folder, and replays.
    for row in c["rows"]:
        x = row["counterexample"]
        assert x["file"].startswith("counterexamples/compare-") and (sections / "one" / x["file"]).is_file()
        assert (sections / "one" / row["sequence"]).is_file()
    d = r["detection"]
    assert d["drivers"] == ["explore", "search", "swarm"]
    assert d["budgets"] == {"explore": 500, "search": 10, "swarm": 3}
    assert [(x["driver"], x["bug"], x["found"]) for x in d["rows"]] == [
        ("explore", "interrupt-without-cancel", True), ("explore", "contract", False),
        ("search", "interrupt-without-cancel", True), ("search", "contract", False),
        ("swarm", "interrupt-without-cancel", True), ("swarm", "contract", False)]
    assert d["summary"]["explore"] == {"found": 1, "bugs": 1, "missed": [], "contract_clean": True}
    text = json.dumps(r)
    assert "seconds" not in text and "/tmp" not in text  # no clock, no path outside the report
    assert r["counts"]["detection_found"] == {"explore": "1/1", "search": "1/1", "swarm": "1/1"}
    assert r["counts"]["compare_unexpected"] == 0


def test_the_same_report_for_one_and_two_workers(sections):
    one, two = sections / "one", sections / "two"
    for name in ("report.json", "summary.md", "index.html"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    # junit.xml differs in its wall times alone (reports/junit.py)
    timeless = [re.sub(r' time="[0-9.]+"', ' time="0"', (d / "junit.xml").read_text()) for d in (one, two)]
    assert timeless[0] == timeless[1]
    assert sorted(p.name for p in (one / "figures").iterdir()) == sorted(p.name for p in (two / "figures").iterdir())


def test_counterexample_of_the_comparison_replays(sections):
    from toolcall_sim.drivers import counterexample as cx

    row = _report(sections / "one")["compare"]["rows"][1]
    replayed = cx.replay(sections / "one" / row["counterexample"]["file"])
    assert replayed.reproduced and replayed.trace_sha256 == replayed.expected_sha256


def test_summary_md_has_both_tables(sections):
    md = (sections / "one" / "summary.md").read_text()
    assert "## Design comparison" in md and "| property | `contract` | `first-attempt-only` |" in md
    # first-attempt-only's flaw is expected: the cell says by whom, not only "violated"
    assert ("| `unknown_only_when_unknowable` | residual risk false_unknown_after_agent_start | expected "
            "(compare.expect.first-attempt-only): **violated**") in md
    assert "| design | durable writes/call |" in md
    assert "## Detection table" in md and "| bug | explore | search | swarm |" in md
    assert "| `interrupt-without-cancel` | found: " in md and "| found | 1/1 | 1/1 | 1/1 |" in md
    assert "## Properties by variant" not in md  # the suite checks no variant of its own


def test_index_html_has_the_heat_map_costs_and_each_designs_sequence_diagram(sections):
    page = (sections / "one" / "index.html").read_text()
    heat = page[page.index('<table class="heat">'):]
    heat = heat[:heat.index("</table>")]
    # An expected flaw has its own colour, never the failure's, and says who expects it.
    assert 'class="expected-violation"' in heat and 'class="violated' not in heat and 'class="residual-risk"' in heat
    assert ">expected (compare.expect.first-attempt-only): violated" in heat
    assert 'class="holds-exhaustively"' in page and ' unexpected"' not in page
    assert "<h3>Costs</h3>" in page and "background: rgb(255," in page  # a colour scale per cost column
    assert page.count('alt="sequence diagram: contract ') == 1
    assert page.count('alt="sequence diagram: first-attempt-only ') == 1
    assert "Detection table" in page and "src=\"http" not in page
    # the table of contents links to the comparison, to each design's counterexample and
    # to the detection table (tests/page_links.py: every link has its id)
    report = _report(sections / "one")
    links = assert_navigable(page, report).toc_hrefs
    drawn = [r["design"] for r in report["compare"]["rows"] if r["counterexample"] is not None]
    assert drawn and {"compare", "detection", *(f"compare-{d}" for d in drawn)} <= set(links)


def test_junit_has_a_case_per_design_and_property_and_per_bug_and_driver(sections):
    xml = junitparser.JUnitXml.fromfile(str(sections / "one" / "junit.xml"))
    suites_by_name = {s.name: s for s in xml}
    cases = list(suites_by_name["compare"])
    assert len(cases) == 2 * len(_report(sections / "one")["compare"]["properties"])
    assert all(c.is_passed for c in cases)
    assert {(c.classname, c.name) for c in suites_by_name["detection"]} == {
        ("detection.explore", "interrupt-without-cancel"), ("detection.explore", "contract"),
        ("detection.search", "interrupt-without-cancel"), ("detection.search", "contract"),
        ("detection.swarm", "interrupt-without-cancel"), ("detection.swarm", "contract")}


def test_quick_runs_what_the_sections_say():
    data = tomllib.loads(SECTIONS)
    s = suites.from_dict(data, "<s>")
    quick = s.part(True)
    assert quick.compare == s.compare
    assert quick.detection.drivers == ("swarm",) and quick.detection.budgets == (("swarm", 3),)
    slow = suites.from_dict({**data, "compare": {**data["compare"], "quick": False}}, "<s>")
    assert slow.part(True).compare is None


def test_a_verdict_other_than_expected_fails_the_run(sections, tmp_path, capsys, monkeypatch):
    """The contract expected to hold at-most-once in the above-margin world (it has its
    age-check residual risk there): exit 1, the reason names the design and property,
    and the JUnit case fails as a changed verdict; the other cells pass. The contract's
    two jobs are the fixture's (the verdict is judged in the fold, which runs here)."""
    each_job_once(monkeypatch, _JOBS)
    suite = textwrap.dedent("""
        name = "wrong"
        [compare]
        designs = ["contract"]
        worlds = ["above-margin"]
        seeds = 1
        [compare.expect.contract]
        known_finding = ["truthful_result", "interrupt_stops_foreground"]
        residual_risk = ["retry_changes_nothing",
                         "canceled_before_received_never_runs", "unknown_only_when_unknowable"]
    """)
    (tmp_path / "w.toml").write_text(suite)
    assert _check(str(tmp_path / "w.toml"), "--out", str(tmp_path / "out"), "--baseline",
                  str(tmp_path / "none.json"), "--update-baseline") == 1
    r = _report(tmp_path / "out")
    assert r["verdict"]["reasons"] == ["design contract: at_most_once is residual risk, expected holds "
                                       "(the suite's compare.expect.contract)"]
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    (cmp,) = [s for s in xml if s.name == "compare"]
    failed = [c for c in cmp if not c.is_passed]
    assert [(c.classname, c.name) for c in failed] == [("compare.contract", "at_most_once")]
    assert failed[0].result[0].type == "VerdictChanged"
    assert "UNEXPECTED" in (tmp_path / "out" / "summary.md").read_text()
    assert 'class="residual-risk unexpected"' in (tmp_path / "out" / "index.html").read_text()


def test_a_planted_bug_not_detected_fails_the_run(tmp_path):
    """no-agent-answer-timeout needs an interrupt, a lost answer and a task retry at once:
    the explorer's tour does not reach it within 500 states (it takes tens of
    thousands), so the bug is "no longer caught": exit 1, a failing JUnit case."""
    (tmp_path / "d.toml").write_text(textwrap.dedent("""
        name = "missed"
        [detection]
        drivers = ["explore"]
        bugs = ["no-agent-answer-timeout"]
        budgets = { explore = 500 }
        control = false
    """))
    assert _check(str(tmp_path / "d.toml"), "--out", str(tmp_path / "out"), "--baseline",
                  str(tmp_path / "none.json"), "--update-baseline") == 1
    r = _report(tmp_path / "out")
    assert r["verdict"]["reasons"] == ["planted bug no-agent-answer-timeout is no longer caught by explore from its "
                                       "default settings (within 500 states)"]
    assert r["detection"]["summary"]["explore"] == {"found": 0, "bugs": 1, "missed": ["no-agent-answer-timeout"],
                                                    "contract_clean": None}
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    (det,) = [s for s in xml if s.name == "detection"]
    (case,) = list(det)
    assert not case.is_passed and case.result[0].type == "PlantedBugMissed"
    assert "**NOT FOUND** in 500 states" in (tmp_path / "out" / "summary.md").read_text()


BAD = [
    ("unknown compare key", '[compare]\ndesign = ["contract"]\n', "compare.design: unknown key"),
    ("unknown design", '[compare]\ndesigns = ["tomorrow"]\n[compare.expect.tomorrow]\n',
     "compare.designs[0]: unknown variant 'tomorrow'"),
    ("unknown world", '[compare]\ndesigns = ["contract"]\nworlds = ["moon"]\n[compare.expect.contract]\n',
     "compare.worlds[0]: unknown comparison world 'moon'"),
    ("zero seeds", '[compare]\ndesigns = ["contract"]\nseeds = 0\n[compare.expect.contract]\n',
     "compare.seeds: must be at least 1"),
    ("quick not a boolean", '[compare]\ndesigns = ["contract"]\nquick = 1\n[compare.expect.contract]\n',
     "compare.quick: expected true or false"),
    ("no expectations", '[compare]\ndesigns = ["contract"]\n', "compare.expect: missing"),
    ("a design without expectations", '[compare]\ndesigns = ["contract", "today"]\n[compare.expect.contract]\n',
     "compare.expect.today: missing"),
    ("expectations of a design not compared", '[compare]\ndesigns = ["contract"]\n[compare.expect.contract]\n'
                                              '[compare.expect.today]\n', "compare.expect.today: unknown key"),
    ("unknown verdict", '[compare]\ndesigns = ["contract"]\n[compare.expect.contract]\nbroken = ["one_result"]\n',
     "compare.expect.contract.broken: unknown key"),
    ("unknown property", '[compare]\ndesigns = ["contract"]\n[compare.expect.contract]\nviolated = ["speed"]\n',
     "compare.expect.contract.violated[0]: unknown property 'speed'"),
    ("a property expected twice", '[compare]\ndesigns = ["contract"]\n[compare.expect.contract]\n'
                                  'violated = ["one_result"]\nresidual_risk = ["one_result"]\n',
     "compare.expect.contract.residual_risk[0]: 'one_result' is also expected violated"),
    ("unknown detection key", '[detection]\ndrivers = ["swarm"]\nbudget = 3\n', "detection.budget: unknown key"),
    ("no drivers", '[detection]\nbugs = ["*"]\n', "detection.drivers: missing"),
    ("unknown driver", '[detection]\ndrivers = ["fuzz"]\n', "detection.drivers[0]: unknown driver 'fuzz'"),
    ("quick driver not measured", '[detection]\ndrivers = ["swarm"]\nquick_drivers = ["search"]\n',
     "detection.quick_drivers[0]: 'search' is not one of detection.drivers"),
    ("unknown bug", '[detection]\ndrivers = ["swarm"]\nbugs = ["nope"]\n', "detection.bugs[0]: unknown planted bug"),
    ("budget of a driver not measured", '[detection]\ndrivers = ["swarm"]\nbudgets = { explore = 5 }\n',
     "detection.budgets.explore: explore is not measured"),
    ("budget of no driver", '[detection]\ndrivers = ["swarm"]\nbudgets = { fuzz = 5 }\n',
     "detection.budgets.fuzz: unknown key"),
    ("zero budget", '[detection]\ndrivers = ["swarm"]\nbudgets = { swarm = 0 }\n',
     "detection.budgets.swarm: must be at least 1"),
    ("control not a boolean", '[detection]\ndrivers = ["swarm"]\ncontrol = "yes"\n',
     "detection.control: expected true or false"),
]


@pytest.mark.parametrize("source,reason", [(s, r) for _, s, r in BAD], ids=[n for n, _, _ in BAD])
def test_bad_keys_are_one_line_exit_2(source, reason, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n' + source)
    assert _check(str(path), "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and reason in err, err
    assert not (tmp_path / "out").exists()


def test_default_suite_has_both_sections():
    """The shipped suite compares every design with an expectation each, and measures
    every planted bug through every driver with the defaults `toolcall-sim bugs` uses;
    --quick runs the detection table's swarm (the comparison costs more than a minute
    of CPU, too much for --quick)."""
    suite = suites.load(suites.DEFAULT_SUITE)
    c, d = suite.compare, suite.detection
    assert c.designs == compare.DEFAULT_DESIGNS and c.seeds == compare.DEFAULT_SEEDS
    assert c.worlds == tuple(w.name for w in compare.COMPARE_WORLDS)
    assert c.expected("incarnation-token", "at_most_once") == "holds_exhaustively"
    assert c.expected("contract", "at_most_once") == "residual_risk"
    assert c.expected("today", "at_most_once") == "violated"
    assert c.expected("first-attempt-only", "unknown_only_when_unknowable") == "violated"
    assert c.expected("remember-all", "at_most_once") == "residual_risk"
    assert d.drivers == bugs.DRIVERS and list(d.bugs) == bugs.bug_names() and d.control
    assert dict(d.budgets) == bugs.DEFAULT_BUDGETS
    quick = suite.part(True)
    assert quick.compare is None and quick.detection.drivers == ("swarm",)
