"""``toolcall-sim check`` (issue 15): the suite file, the baseline, and the four outputs.

A tiny suite written here (two scenarios, one small explorer world under the contract
and today, three swarm seeds, one planted bug by every driver) runs in a few seconds;
only ``test_default_suite_loads_and_covers_every_planted_bug`` reads the default suite,
and it does not run it. The outputs are parsed as their readers parse them: JUnit with
``junitparser``, the page as HTML (every picture present and embedded, no network), the
Markdown table by its shape, ``report.json`` by its schema.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import junitparser
import pytest
from check_memo import each_job_once
from page_links import assert_navigable

from toolcall_sim.model import planted_bugs
from toolcall_sim.ci import check
from toolcall_sim.ci import suite as suites
from toolcall_sim.cli.main import main
from toolcall_sim.reports import page_nav as nav

TINY = """
name = "tiny"
summary = "a suite small enough for a test"

[[scenarios]]
files = ["us02_interrupt_stops_foreground", "rr_delayed_retry_across_restart"]
quick = true

[[explore]]
world = "two-messages"
variants = ["contract", "today"]

[[swarm]]
variants = ["contract"]
seeds = 3

[planted]
bugs = ["interrupt-answers-resolved-calls"]
drivers = ["scenario", "explore", "swarm"]
quick_drivers = ["scenario"]

[planted.bug.interrupt-answers-resolved-calls]
explore = { world = "two-messages", interrupts = 1 }
swarm = { first_seed = 24, seeds = 10 }
"""
# What the tiny suite finds under today in the two-messages world (accepted once the
# baseline is written): the explorer's shortest counterexamples. (Its find of
# canceled_before_received_never_runs was an edit received before the interrupt and
# applied after: judged by arrival since issue 34, it is none.) truthful_result since
# issue 34: an edit that a takeover's old attempt applied while the new owner's request
# met an agent restart, which today reports with the plain "failed" error.
TODAY_FINDINGS = {"at_most_once", "retry_changes_nothing", "truthful_result"}


def _check(*args: str) -> int:
    return main(["check", *args])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny suite run twice against the baseline its first run wrote: (folder, the
    first report folder, the second)."""
    root = tmp_path_factory.mktemp("check")
    (root / "tiny.toml").write_text(TINY)
    base = str(root / "baseline.json")
    # The second run takes the first's pictures (the same 11 drawing tasks: a picture is a
    # pure function of its task) and its jobs' outputs (tests/check_memo.py), and the
    # third computes and draws its own, so the tests that compare the second and third
    # reports still compare two computations and two drawings: one pass of each less.
    with pytest.MonkeyPatch.context() as patch:
        _draw_each_task_once(patch)
        each_job_once(patch, _JOBS)
        assert _check(str(root / "tiny.toml"), "--out", str(root / "first"), "--baseline", base,
                      "--update-baseline") == 0
        assert _check(str(root / "tiny.toml"), "--out", str(root / "second"), "--baseline", base) == 0
    assert _check(str(root / "tiny.toml"), "--out", str(root / "third"), "--baseline", base) == 0
    return root


# The tiny suite's job outputs, computed by the fixture's first run (tests/check_memo.py):
# the baseline test's three runs judge the same jobs against other baselines.
_JOBS: dict = {}


def _draw_each_task_once(monkeypatch) -> None:
    """While ``monkeypatch`` holds, toolcall_sim.reports.check_html draws each distinct picture task
    once and hands the same SVG to every later run that asks for it."""
    from toolcall_sim.reports import check_html

    drawn: dict[str, str] = {}
    draw = check_html._draw

    def once(task):
        key = repr(task)
        if key not in drawn:
            drawn[key] = draw(task)
        return drawn[key]
    monkeypatch.setattr(check_html, "_draw", once)


# -- the suite file ------------------------------------------------------------------


def test_default_suite_loads_and_covers_every_planted_bug():
    """The shipped suite is valid, sweeps every planted bug with all three drivers in the
    worlds and seed windows the planted-bug tests pin, and has a quick part."""
    import test_explore_bugs
    import test_swarm

    suite = suites.load(suites.DEFAULT_SUITE)
    assert suite.name == "ci" and suite.planted is not None
    assert set(suite.planted.drivers) == set(suites.DRIVERS)
    assert [b.name for b in suite.planted.bugs] == [m.name for m in planted_bugs.PLANTED_BUGS]
    for bug in suite.planted.bugs:
        world, budgets = test_explore_bugs.WHERE[bug.name]
        assert (bug.explore_world, dict(bug.explore_budgets)) == (world, {**test_explore_bugs.NONE, **budgets})
        assert (bug.swarm_first_seed, bug.swarm_seeds) == test_swarm.WINDOWS[bug.name]
    assert suite.planted.max_in_flight_ms == 1 and suite.planted.max_states == test_explore_bugs.MAX_STATES
    quick = suite.part(True)
    assert quick.scenarios and quick.explore and quick.swarm and not quick.empty
    assert len(quick.explore) < len(suite.explore) and len(quick.swarm) < len(suite.swarm)
    # Every shipped scenario, under each variant it expects something of.
    assert {(r.scenario, r.variant) for r in suite.scenarios} >= {(r.scenario, "contract") for r in suite.scenarios}


BAD_SUITES = [
    ("unknown top key", 'name = "x"\ncolour = 1\n[[swarm]]\nvariants = ["contract"]\nseeds = 1\n', "colour: unknown key"),
    ("no name", '[[swarm]]\nvariants = ["contract"]\nseeds = 1\n', "name: missing"),
    ("name with a slash", 'name = "a/b"\n[[swarm]]\nvariants = ["contract"]\nseeds = 1\n', "name: a suite name is a folder"),
    ("runs nothing", 'name = "x"\n', "the suite runs nothing"),
    ("unknown scenario key", 'name = "x"\n[[scenarios]]\nfiles = ["*"]\nseed = 1\n', "scenarios[0].seed: unknown key"),
    ("no such scenario", 'name = "x"\n[[scenarios]]\nfiles = ["nope"]\n', "scenarios[0].files[0]: no such scenario 'nope'"),
    ("unknown variant", 'name = "x"\n[[scenarios]]\nfiles = ["*"]\nvariants = ["tomorrow"]\n',
     "scenarios[0].variants[0]: unknown variant 'tomorrow'"),
    ("unknown planted bug in a variant", 'name = "x"\n[[swarm]]\nvariants = ["contract+nope"]\nseeds = 1\n',
     "swarm[0].variants[0]: unknown planted bug 'nope'"),
    ("quick not a boolean", 'name = "x"\n[[scenarios]]\nfiles = ["*"]\nquick = "yes"\n',
     "scenarios[0].quick: expected true or false"),
    ("unknown world", 'name = "x"\n[[explore]]\nworld = "moon"\nvariants = ["contract"]\n',
     "explore[0].world: unknown world 'moon'"),
    ("second of another world", 'name = "x"\n[[explore]]\nworld = "two-chats"\nsecond = "edit"\nvariants = ["contract"]\n',
     "explore[0].second: only the default world"),
    ("negative budget", 'name = "x"\n[[explore]]\nworld = "default"\nvariants = ["contract"]\ninterrupts = -1\n',
     "explore[0].interrupts: must be at least 0"),
    ("bad duration", 'name = "x"\n[[explore]]\nworld = "default"\nvariants = ["contract"]\nmax_in_flight = "soon"\n',
     "explore[0].max_in_flight: not a duration"),
    ("horizon below a tick", 'name = "x"\n[[explore]]\nworld = "default"\nvariants = ["contract"]\nhorizon = "10ms"\n',
     "explore[0].horizon: must be at least 1s"),
    ("two entries, one name", 'name = "x"\n[[explore]]\nworld = "default"\nvariants = ["contract"]\n'
                              '[[explore]]\nworld = "default"\nvariants = ["today"]\n', "explore[1].name: 'default' names"),
    ("zero seeds", 'name = "x"\n[[swarm]]\nvariants = ["contract"]\nseeds = 0\n', "swarm[0].seeds: must be at least 1"),
    ("overlapping seeds", 'name = "x"\n[[swarm]]\nvariants = ["contract"]\nseeds = 10\n'
                          '[[swarm]]\nvariants = ["contract"]\nfirst_seed = 5\nseeds = 10\n', "swarm[1].seeds: seeds 5..14"),
    ("unknown driver", 'name = "x"\n[planted]\ndrivers = ["fuzz"]\n', "planted.drivers[0]: unknown driver 'fuzz'"),
    ("quick driver not swept", 'name = "x"\n[planted]\ndrivers = ["scenario"]\nquick_drivers = ["swarm"]\n',
     "planted.quick_drivers[0]: 'swarm' is not one of planted.drivers"),
    ("unknown bug", 'name = "x"\n[planted]\nbugs = ["nope"]\ndrivers = ["scenario"]\n', "planted.bugs[0]: unknown planted bug"),
    ("explore without a world per bug", 'name = "x"\n[planted]\nbugs = ["no-age-margin"]\ndrivers = ["explore"]\n',
     "planted.bug.no-age-margin.explore: missing"),
    ("a bug's table for a driver not run",
     'name = "x"\n[planted]\nbugs = ["no-age-margin"]\ndrivers = ["scenario"]\n'
     '[planted.bug.no-age-margin]\nswarm = { seeds = 1 }\n', "planted.bug.no-age-margin.swarm: the sweep runs no swarm"),
    ("a bug's table for a bug not swept",
     'name = "x"\n[planted]\nbugs = ["no-age-margin"]\ndrivers = ["scenario"]\n[planted.bug.run-before-record]\n',
     "planted.bug.run-before-record: unknown key"),
    ("explorer bound without the explorer", 'name = "x"\n[planted]\ndrivers = ["scenario"]\nmax_states = 5\n',
     "planted.max_states: the sweep runs no explorer"),
    ("unknown key of a bug's world", 'name = "x"\n[planted]\nbugs = ["no-age-margin"]\ndrivers = ["explore"]\n'
                                     '[planted.bug.no-age-margin]\nexplore = { world = "default", restarts = 1 }\n',
     "planted.bug.no-age-margin.explore.restarts: unknown key"),
    ("not TOML", 'name = \n', "not TOML"),
]


@pytest.mark.parametrize("source,reason", [(s, r) for _, s, r in BAD_SUITES], ids=[n for n, _, _ in BAD_SUITES])
def test_bad_suite_is_one_line_exit_2(source, reason, tmp_path, capsys):
    """Every key of the suite vocabulary is live: a value the run would not use is one
    line naming the file, the field and the reason, exit 2, no traceback."""
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(source))
    assert _check(str(path), "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and reason in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args,reason", [
    (["--workers", "0"], "--workers: must be at least 1"),
    (["--quick"], "--quick:"),
    (["--baseline", "{tmp}/missing.json"], "missing.json: cannot read"),
    (["--baseline", "{tmp}/bad.json"], "schema: expected 'toolcall-sim/baseline/1'"),
    (["--out", "{tmp}/bad.json"], "is a file, not a folder"),
])
def test_bad_flags_are_one_line_exit_2(args, reason, tmp_path, capsys):
    (tmp_path / "s.toml").write_text('name = "s"\n[[scenarios]]\nfiles = ["smoke_retry"]\n')
    (tmp_path / "bad.json").write_text('{"schema": "other"}')
    assert _check(str(tmp_path / "s.toml"), *[a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err, err


def test_missing_suite_is_bad_input(tmp_path, capsys):
    assert _check(str(tmp_path / "none.toml")) == 2
    assert "none.toml: cannot read" in capsys.readouterr().err


# -- the outputs -------------------------------------------------------------------


def test_report_json_schema(tiny):
    doc = json.loads((tiny / "second" / "report.json").read_text())
    assert doc["schema"] == check.SCHEMA
    assert doc["verdict"] == {"ok": True, "exit_code": 0, "reasons": []}
    assert doc["suite"] == {"name": "tiny", "summary": "a suite small enough for a test", "file": "tiny.toml",
                            "quick": False}
    assert set(doc["table"]) == set(doc["variants"]) == {"contract", "today"}
    assert all(set(row) == set(doc["properties"]) for row in doc["table"].values())
    assert {doc["table"]["today"][p] for p in TODAY_FINDINGS} == {"violated"}
    assert doc["table"]["contract"]["at_most_once"] == "residual risk"  # rr_delayed_retry_across_restart
    assert doc["table"]["contract"]["chat_isolation"] == "holds exhaustively"
    accepted = [f for f in doc["findings"] if f["status"] == "accepted"]
    assert {f["property"] for f in accepted} == TODAY_FINDINGS
    assert all(f["driver"] == "explore" and f["variant"] == "today" and f["counterexample"] for f in accepted)
    assert doc["counts"]["findings"]["new"] == 0 and doc["counts"]["planted_caught"] == {
        "scenario": "1/1", "explore": "1/1", "swarm": "1/1"}
    assert [len(s["failures"]) for s in doc["swarm"]] == [0]
    (explore_today,) = [e for e in doc["explore"] if e["variant"] == "today"]
    assert explore_today["exhausted"] and sum(explore_today["states_per_depth"]) == explore_today["states"]
    assert all(v["depth"] is not None for v in explore_today["violations"])
    # No clock, no absolute path: nothing that differs between two runs or two machines.
    text = (tiny / "second" / "report.json").read_text()
    assert str(tiny) not in text and "time" not in json.dumps(sorted(doc))


def test_two_runs_write_identical_report_and_pictures(tiny):
    a, b = tiny / "second", tiny / "third"
    assert (a / "report.json").read_bytes() == (b / "report.json").read_bytes()
    svgs = sorted(p.name for p in (a / "figures").glob("*.svg"))
    assert svgs and svgs == sorted(p.name for p in (b / "figures").glob("*.svg"))
    assert all((a / "figures" / n).read_bytes() == (b / "figures" / n).read_bytes() for n in svgs)
    for name in ("summary.md", "index.html"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    # junit.xml carries each case's wall time and nothing else that differs (reports/junit.py)
    assert _timeless(a / "junit.xml") == _timeless(b / "junit.xml")


_TIME = re.compile(r' time="[0-9.]+"')


def _timeless(path: Path) -> str:
    """junit.xml with every time attribute 0: what must be the same bytes run to run."""
    return _TIME.sub(' time="0"', path.read_text(encoding="utf-8"))


def test_counterexamples_replay(tiny, monkeypatch):
    """Each counterexample is in the replay format and reproduces, from the report folder,
    with the command the report prints."""
    doc = json.loads((tiny / "second" / "report.json").read_text())
    monkeypatch.chdir(tiny / "second")
    for f in doc["findings"]:
        if f["counterexample"]:
            assert f"toolcall-sim replay {f['counterexample']}" in f["reproduce"]
            assert main(["replay", f["counterexample"]]) == 1


def test_junit_parses_with_the_structure_ci_tools_expect(tiny):
    xml = junitparser.JUnitXml.fromfile(str(tiny / "second" / "junit.xml"))
    suites_by_name = {s.name: s for s in xml}
    assert list(suites_by_name) == ["scenarios", "explore", "swarm", "planted", "coverage"]
    doc = json.loads((tiny / "second" / "report.json").read_text())
    n_props = len(doc["properties"])
    assert suites_by_name["scenarios"].tests == 4  # 2 scenarios x (today, contract)
    assert suites_by_name["explore"].tests == 2 * n_props
    assert suites_by_name["swarm"].tests == n_props
    assert suites_by_name["planted"].tests == 3
    # one case per declared probe; the tiny suite does not require coverage: none fails
    assert suites_by_name["coverage"].tests == doc["coverage"]["declared"] and not doc["coverage"]["required"]
    for s in xml:
        assert s.failures == 0 and s.errors == 0 and s.skipped == 0
        for case in s:
            assert case.classname and case.name and case.result == []
        # a suite's time is its cases' (to the millisecond each)
        assert s.time == pytest.approx(sum(case.time for case in s), abs=1e-6)
    assert xml.tests == sum(s.tests for s in xml)


def test_junit_times_are_the_runs_wall_times(tiny):
    """The third run computed its own jobs: each scenario, explorer run, swarm window and
    planted bug took measurable time, and the cases of one explorer run share it."""
    xml = junitparser.JUnitXml.fromfile(str(tiny / "third" / "junit.xml"))
    by = {s.name: s for s in xml}
    for name in ("scenarios", "explore", "swarm", "planted"):
        assert by[name].time > 0 and all(case.time > 0 for case in by[name]), name
    assert by["coverage"].time == 0  # counted from the other runs, which have the time
    explore = [c for c in by["explore"] if c.classname == "explore.two-messages.today"]
    assert len({c.time for c in explore}) == 1  # one search checks every property at once
    assert xml.time == pytest.approx(sum(s.time for s in xml), abs=1e-6) and xml.time > 0
    # and no time anywhere else in the report
    doc = json.loads((tiny / "third" / "report.json").read_text())
    assert "seconds" not in json.dumps(doc) and "_seconds" not in (tiny / "third" / "summary.md").read_text()


def test_a_failure_message_names_every_finding_of_its_case(tiny):
    """A scenario case with two unmet expectations and two new findings, and a swarm
    property case with two new findings: each message names all of them, not the first."""
    from toolcall_sim.reports import junit

    doc = json.loads((tiny / "second" / "report.json").read_text())
    x = doc["scenarios"][0]
    x["failures"] = ["toolu_01: process_starts 2, expected 1", "violations: at_most_once not expected"]
    template = dict(doc["findings"][0], status="new", counterexample=None, reproduce=["toolcall-sim run X"])
    mine = [dict(template, driver="scenario", where=x["scenario"], variant=x["variant"], property=p, detail=d)
            for p, d in (("at_most_once", "2 process starts for toolu_01"), ("truthful_result", "toolu_02: lied"))]
    w = doc["swarm"][0]
    swarmed = [dict(template, driver="swarm", where=f"seed-{seed}", seed=seed, variant=w["variant"],
                    property="at_most_once", detail=f"seed {seed} started twice")
               for seed in (w["first_seed"], w["first_seed"] + 1)]
    doc["findings"] = mine + swarmed
    xml = junitparser.JUnitXml.fromstring(junit.junit(doc))
    failures = {(c.classname, c.name): c.result[0] for s in xml for c in s if c.result}
    scenario = failures[(f"scenarios.{x['scenario']}", x["variant"])]
    for said in (*x["failures"], "2 process starts for toolu_01", "truthful_result", "toolu_02: lied"):
        assert said in scenario.message, said
    last = w["first_seed"] + w["seeds"] - 1
    swarm = failures[(f"swarm.{w['variant']}.seeds-{w['first_seed']}-{last}", "at_most_once")]
    assert swarm.message.startswith("2 new findings of at_most_once")
    assert all(f"seed {f['seed']} started twice" in swarm.message for f in swarmed)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.tags, self.urls = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        for key in ("src", "href"):
            if a.get(key):
                self.urls.append(a[key])


def test_html_is_self_contained_with_every_picture(tiny):
    html = (tiny / "second" / "index.html").read_text()
    page = _Page()
    page.feed(html)
    doc = json.loads((tiny / "second" / "report.json").read_text())
    pictures = ([f["sequence"] for f in doc["findings"] if f["sequence"]] + [s["timeline"] for s in doc["scenarios"]]
                + [e["depth_chart"] for e in doc["explore"]] + ["figures/swarm.svg"])
    assert len(page.imgs) == len(pictures)
    assert all(img["src"].startswith("data:image/svg+xml;base64,") and img.get("alt") for img in page.imgs)
    assert all(u.startswith(("data:", "#")) for u in page.urls), "a URL outside the page"
    # one script, inline: it opens a folded finding a link names (reports/page_nav.py Rule 2)
    assert page.tags.count("script") == 1 and nav.OPENER_SCRIPT in html and "src=" not in nav.OPENER_SCRIPT
    assert "link" not in page.tags and "<style>" in html
    assert_navigable(html, doc)  # every link has its id; every part and finding is linked
    assert not re.search(r"https?://", html)
    for name in pictures:
        assert (tiny / "second" / name).read_text().lstrip().startswith("<")


def _md_tables(text: str) -> list[list[str]]:
    tables, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def test_markdown_table_shape(tiny):
    text = (tiny / "second" / "summary.md").read_text()
    doc = json.loads(text and (tiny / "second" / "report.json").read_text())
    tables = _md_tables(text)
    counts_table, props_table = tables[:2]  # the answer first: each scenario run's counts
    assert counts_table[0].startswith("| scenario | variant |") and len(counts_table) == 2 + len(doc["scenarios"])
    assert props_table[0] == "| property | `contract` | `today` |"
    assert re.fullmatch(r"\|(---\|)+", props_table[1])
    assert len(props_table) == 2 + len(doc["properties"])
    for table in tables:
        cols = {len(re.findall(r"(?<!\\)\|", row)) for row in table}
        assert len(cols) == 1, table
    assert "**PASS**" in text and "Nothing new." in text


# -- the baseline --------------------------------------------------------------------


def _run(root: Path, name: str, baseline: Path, *extra: str) -> tuple[int, dict]:
    code = _check(str(root / "tiny.toml"), "--out", str(root / name), "--baseline", str(baseline), *extra)
    return code, json.loads((root / name / "report.json").read_text())


def test_baseline_new_accepted_fixed_and_update(tiny, tmp_path, monkeypatch):
    """An entry removed from the baseline comes back as new (exit 1); one the run does
    not see again is fixed (exit 0); --update-baseline rewrites the file to what was
    seen, after which nothing is new."""
    # The three runs below draw the same pictures and run the same jobs as the fixture's:
    # each picture is drawn once and each job's output is the fixture's (the pictures and
    # the jobs are other tests' subject; the baseline is judged in the fold, on each run).
    _draw_each_task_once(monkeypatch)
    each_job_once(monkeypatch, _JOBS)
    shutil.copy(tiny / "tiny.toml", tmp_path / "tiny.toml")
    doc = json.loads((tiny / "baseline.json").read_text())
    assert {e["property"] for e in doc["accepted"]} == TODAY_FINDINGS
    dropped = doc["accepted"].pop(0)
    ghost = dict(doc["accepted"][0], fingerprint="0" * 16)
    doc["accepted"].append(ghost)
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps(doc))

    code, report = _run(tmp_path, "out", base)
    assert code == 1
    (new,) = [f for f in report["findings"] if f["status"] == "new"]
    assert (new["property"], new["fingerprint"]) == (dropped["property"], dropped["fingerprint"])
    assert report["verdict"]["reasons"] == [f"new finding: {new['property']} under today (explore two-messages): "
                                            f"{new['detail']}"]
    assert [e["fingerprint"] for e in report["baseline"]["fixed"]] == ["0" * 16]
    junit = junitparser.JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    failed = [(c.classname, c.name, c.result[0].type) for s in junit for c in s if c.result]
    assert failed == [("explore.two-messages.today", new["property"], "NewFinding")]
    assert "## Fixed" in (tmp_path / "out" / "summary.md").read_text()

    # An entry of a run this suite does not run is neither fixed nor dropped.
    other = dict(ghost, where="late-pubsub")
    doc["accepted"].append(other)
    base.write_text(json.dumps(doc))
    code, report = _run(tmp_path, "out", base, "--update-baseline")
    assert code == 0 and report["baseline"]["not_run"] == 1
    rewritten = json.loads(base.read_text())["accepted"]
    assert {(e["where"], e["property"], e["fingerprint"]) for e in rewritten} == (
        {("two-messages", e["property"], e["fingerprint"]) for e in json.loads((tiny / "baseline.json").read_text())["accepted"]}
        | {("late-pubsub", other["property"], other["fingerprint"])})
    code, report = _run(tmp_path, "out", base)
    assert code == 0 and report["counts"]["findings"]["new"] == 0 and report["baseline"]["fixed"] == []


def test_fingerprint_ignores_message_numbers_only():
    a = check.fingerprint("at_most_once", None, ["deliver #13 start toolu_fg replica-1 -> agent", "fault agent_restart"])
    b = check.fingerprint("at_most_once", None, ["deliver #27 start toolu_fg replica-1 -> agent", "fault agent_restart"])
    assert a == b and len(a) == 16
    assert a != check.fingerprint("at_most_once", "age_check_best_effort", ["deliver #13 start toolu_fg replica-1 -> agent",
                                                                             "fault agent_restart"])
    assert a != check.fingerprint("at_most_once", None, ["fault agent_restart", "deliver #13 start toolu_fg replica-1 -> agent"])
    assert a != check.fingerprint("one_result", None, ["deliver #13 start toolu_fg replica-1 -> agent", "fault agent_restart"])


# -- failing runs ----------------------------------------------------------------------


PLANTED_VARIANT = """
name = "with-bug"
[[scenarios]]
files = ["us02_interrupt_stops_foreground"]
variants = ["contract+interrupt-without-cancel"]
[[explore]]
world = "default"
variants = ["contract+interrupt-without-cancel"]
agent_restarts = 0
ownership_changes = 0
lost_responses = 0
task_retries = 0
"""


def test_planted_bug_variant_fails_and_is_named_with_its_picture(tmp_path, capsys, monkeypatch):
    """A planted bug's variant added to a suite: exit 1, and the JUnit failure, the
    Markdown and the HTML name it, the HTML with its sequence diagram. The second run
    judges the first run's jobs and pictures (tests/check_memo.py): what is tested is
    that an accepted finding still fails the run, which the fold and writers decide."""
    _draw_each_task_once(monkeypatch)
    each_job_once(monkeypatch, {})
    (tmp_path / "s.toml").write_text(PLANTED_VARIANT)
    # Accepting its findings does not help: the scenario's expectation still fails.
    assert _check(str(tmp_path / "s.toml"), "--out", str(tmp_path / "accepted"), "--baseline",
                  str(tmp_path / "b.json"), "--update-baseline") == 1
    assert _check(str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")) == 1
    out = tmp_path / "out"
    variant, prop = "contract+interrupt-without-cancel", "interrupt_stops_foreground"
    doc = json.loads((out / "report.json").read_text())
    new = [f for f in doc["findings"] if f["status"] == "new" and f["property"] == prop]
    assert {f["driver"] for f in new} == {"scenario", "explore"} and all(f["variant"] == variant for f in new)

    junit = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    failures = {(s.name, c.classname, c.name): c.result[0] for s in junit for c in s if c.result}
    scenario_failure = failures[("scenarios", "scenarios.us02-interrupt-stops-foreground", variant)]
    assert scenario_failure.type == "ExpectationNotMet" and prop in scenario_failure.text
    assert "toolcall-sim run us02_interrupt_stops_foreground --variant " + variant in scenario_failure.text
    explore_failure = failures[("explore", f"explore.default.{variant}", prop)]
    assert explore_failure.type == "NewFinding" and "toolcall-sim replay counterexamples/" in explore_failure.text

    md = (out / "summary.md").read_text()
    assert "**FAIL** (exit 1)" in md and f"**NEW** `{prop}` under `{variant}`" in md

    page = _Page()
    html = (out / "index.html").read_text()
    page.feed(html)
    for f in new:
        section = html.split(f'<details class="fold" id="{f["id"]}" open>', 1)[1].split("</details>", 1)[0]
        assert variant in section and 'alt="sequence diagram: ' + prop in section
        assert (out / f["sequence"]).exists()
    assert f"scenario us02-interrupt-stops-foreground under {variant}: expectation not met" in capsys.readouterr().out


def test_planted_bug_no_longer_caught_fails(tmp_path):
    """A driver that misses a planted bug fails the run: pid-from-command needs a second
    chat, which the default world does not have."""
    (tmp_path / "s.toml").write_text(textwrap.dedent("""
        name = "miss"
        [planted]
        bugs = ["pid-from-command"]
        drivers = ["explore"]
        max_states = 300
        [planted.bug.pid-from-command]
        explore = { world = "default", interrupts = 1 }
    """))
    assert _check(str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")) == 1
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert doc["planted"]["score"] == {"explore": {"caught": 0, "swept": 1}}
    assert doc["verdict"]["reasons"] == ["planted bug pid-from-command is no longer caught by explore (default)"]
    junit = junitparser.JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    (case,) = [c for s in junit for c in s]
    assert (case.classname, case.name, case.result[0].type) == ("planted.explore", "pid-from-command", "PlantedBugMissed")
    assert "| `pid-from-command` | `chat_isolation` | **missed** |" in (tmp_path / "out" / "summary.md").read_text()


# -- the driver ----------------------------------------------------------------------


def test_workers_do_not_change_the_report(tiny):
    """Rule 1: jobs folded in job order; progress reported once per job, in order."""
    suite = suites.load(tiny / "tiny.toml")
    seen = []
    one = check.run_check(suite, quick=True, workers=1, on_progress=lambda d, t, w: seen.append((d, t)))
    two = check.run_check(suite, quick=True, workers=2)
    assert json.dumps(one.report, sort_keys=True) == json.dumps(two.report, sort_keys=True)
    total = len(check._jobs(suite.part(True)))
    assert seen == [(i, total) for i in range(1, total + 1)]


def test_interrupted_write_keeps_the_old_report(tiny, tmp_path, monkeypatch):
    """An error while writing leaves the old report whole and no temporary folder (the
    jobs are the fixture's: tests/check_memo.py)."""
    from toolcall_sim.reports import junit as junit_writer

    each_job_once(monkeypatch, _JOBS)

    out = tmp_path / "out"
    shutil.copytree(tiny / "second", out)
    before = (out / "report.json").read_bytes()

    def boom(report, seconds=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(junit_writer, "junit", boom)
    assert _check(str(tiny / "tiny.toml"), "--quick", "--out", str(out)) == 130
    assert (out / "report.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_pictures_are_the_same_drawn_by_a_pool(tiny):
    """The command draws the pictures on ``--workers`` processes; they come back in order
    and are the same bytes as drawn in this process."""
    from toolcall_sim.cli.commands import check as command

    suite = suites.load(tiny / "tiny.toml")
    with pytest.MonkeyPatch.context() as patch:  # the jobs are the fixture's: the pictures are the subject
        each_job_once(patch, _JOBS)
        result = check.run_check(suite, quick=True)
    assert command.draw(result.report, result.traces, 2) == command.draw(result.report, result.traces, 1)


def test_explorer_depths_are_the_same_with_workers():
    """The depth chart's data (model/explore.py): states per breadth-first depth and the
    depth each violation was found at, the same for the parallel driver."""
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds
    from toolcall_sim.drivers import explore_parallel as xp

    config = worlds.build("two-messages", "today")
    one = ex.explore(config, ex.Bounds())
    two = xp.explore(config, ex.Bounds(), workers=2, head_start=2)
    assert one.exhausted and sum(one.states_per_depth) == one.states and len(one.states_per_depth) == one.depth + 1
    assert two.states_per_depth == one.states_per_depth
    assert [(v.property, v.depth) for v in two.violations] == [(v.property, v.depth) for v in one.violations]
    assert all(1 <= v.depth <= one.depth and v.depth <= len(v.path) for v in one.violations)


def test_suite_by_name_and_bad_files_it_names(tmp_path, capsys):
    """A shipped suite is named without its folder; a scenario file the suite names that
    is not a valid scenario, or a suite that is not UTF-8, is one line and exit 2."""
    from toolcall_sim.cli.commands.check import resolve_suite

    assert resolve_suite("ci") == resolve_suite("ci.toml") == str(suites.DEFAULT_SUITE)
    assert resolve_suite(None) == str(suites.DEFAULT_SUITE)
    (tmp_path / "broken.toml").write_text('name = "broken"\nuntil = "0s"\n')
    (tmp_path / "s.toml").write_text('name = "s"\n[[scenarios]]\nfiles = ["broken.toml"]\n')
    assert _check(str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "s.toml: scenarios[0].files: " in err and "broken.toml: turns: missing" in err
    (tmp_path / "latin.toml").write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    assert _check(str(tmp_path / "latin.toml")) == 2
    assert "not UTF-8" in capsys.readouterr().err


# -- every key of the suite vocabulary is live ---------------------------------------------

VOCAB_BASE = {
    "name": "base",
    "scenarios": [{"files": ["smoke_retry"]}],
    "explore": [{"world": "default", "variants": ["contract"]}],
    "swarm": [{"variants": ["contract"], "seeds": 2}],
    "planted": {"bugs": ["no-age-margin"], "drivers": ["scenario", "explore", "swarm"],
                "bug": {"no-age-margin": {"explore": {"world": "two-messages"}, "swarm": {"seeds": 1}}}},
    "compare": {"designs": ["contract"], "worlds": ["above-margin"], "seeds": 2, "expect": {"contract": {}}},
    "detection": {"drivers": ["swarm"], "bugs": ["no-age-margin"]},
    "coverage": {"require": False},
}


def _set(*path, value):
    def edit(d):
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value
    return edit


def _drop(*path):
    def edit(d):
        for key in path[:-1]:
            d = d[key]
        del d[path[-1]]
    return edit


def _bugs_two(d):
    d["planted"]["bugs"].append("run-before-record")
    d["planted"]["bug"]["run-before-record"] = {"explore": {"world": "default"}, "swarm": {"seeds": 1}}


def _no_swarm_driver(d):
    d["planted"]["drivers"].remove("swarm")
    del d["planted"]["bug"]["no-age-margin"]["swarm"]


def _designs_two(d):
    d["compare"]["designs"].append("today")
    d["compare"]["expect"]["today"] = {}


NM = ("planted", "bug", "no-age-margin")
# (table, key) -> an edit of VOCAB_BASE that sets the key to something else.
VOCAB_EDITS = {
    ("", "name"): _set("name", value="other"),
    ("", "summary"): _set("summary", value="what it is for"),
    ("", "scenarios"): _drop("scenarios"),
    ("", "explore"): _drop("explore"),
    ("", "swarm"): _drop("swarm"),
    ("", "planted"): _drop("planted"),
    ("", "coverage"): _set("coverage", value={"require": True}),
    ("coverage", "require"): _set("coverage", "require", value=True),
    ("scenarios", "files"): _set("scenarios", 0, "files", value=["us02_interrupt_stops_foreground"]),
    ("scenarios", "variants"): _set("scenarios", 0, "variants", value=["contract"]),
    ("scenarios", "quick"): _set("scenarios", 0, "quick", value=True),
    ("explore", "name"): _set("explore", 0, "name", value="mine"),
    ("explore", "world"): _set("explore", 0, "world", value="two-messages"),
    ("explore", "variants"): _set("explore", 0, "variants", value=["today"]),
    ("explore", "second"): _set("explore", 0, "second", value="edit"),
    ("explore", "max_in_flight"): _set("explore", 0, "max_in_flight", value="1s"),
    ("explore", "horizon"): _set("explore", 0, "horizon", value="20s"),
    ("explore", "max_states"): _set("explore", 0, "max_states", value=5),
    **{("explore", b): _set("explore", 0, b, value=0) for b in suites.BUDGETS},
    ("explore", "quick"): _set("explore", 0, "quick", value=True),
    ("swarm", "variants"): _set("swarm", 0, "variants", value=["today"]),
    ("swarm", "first_seed"): _set("swarm", 0, "first_seed", value=5),
    ("swarm", "seeds"): _set("swarm", 0, "seeds", value=3),
    ("swarm", "quick"): _set("swarm", 0, "quick", value=True),
    ("planted", "bugs"): _bugs_two,
    ("planted", "drivers"): _no_swarm_driver,
    ("planted", "quick_drivers"): _set("planted", "quick_drivers", value=["scenario"]),
    ("planted", "max_in_flight"): _set("planted", "max_in_flight", value="2s"),
    ("planted", "max_states"): _set("planted", "max_states", value=7),
    ("planted", "bug"): _set(*NM, "explore", "world", value="default"),
    ("bug", "explore"): _set(*NM, "explore", value={"world": "two-chats"}),
    ("bug", "swarm"): _set(*NM, "swarm", value={"seeds": 2}),
    ("bug.explore", "world"): _set(*NM, "explore", "world", value="late-pubsub"),
    **{("bug.explore", b): _set(*NM, "explore", b, value=1) for b in suites.BUDGETS},
    ("bug.swarm", "first_seed"): _set(*NM, "swarm", "first_seed", value=9),
    ("bug.swarm", "seeds"): _set(*NM, "swarm", "seeds", value=4),
    ("", "compare"): _drop("compare"),
    ("", "detection"): _drop("detection"),
    ("compare", "designs"): _designs_two,
    ("compare", "worlds"): _set("compare", "worlds", value=["below-margin"]),
    ("compare", "seeds"): _set("compare", "seeds", value=3),
    ("compare", "first_seed"): _set("compare", "first_seed", value=5),
    ("compare", "quick"): _set("compare", "quick", value=True),
    ("compare", "expect"): _set("compare", "expect", "contract", value={"violated": ["at_most_once"]}),
    **{("compare.expect", v): _set("compare", "expect", "contract", v, value=["one_result"])
       for v in suites.VERDICTS},
    ("detection", "drivers"): _set("detection", "drivers", value=["swarm", "explore"]),
    ("detection", "quick_drivers"): _set("detection", "quick_drivers", value=["swarm"]),
    ("detection", "bugs"): _set("detection", "bugs", value=["run-before-record"]),
    ("detection", "budgets"): _set("detection", "budgets", value={"swarm": 3}),
    ("detection", "control"): _set("detection", "control", value=False),
}


def test_the_walk_covers_every_key_of_the_suite_vocabulary():
    tables = {"": suites.TOP_KEYS, "scenarios": suites.SCENARIO_KEYS, "explore": suites.EXPLORE_KEYS,
              "swarm": suites.SWARM_KEYS, "planted": suites.PLANTED_KEYS, "bug": suites.BUG_KEYS,
              "bug.explore": suites.BUG_EXPLORE_KEYS, "bug.swarm": suites.BUG_SWARM_KEYS,
              "compare": suites.COMPARE_KEYS, "compare.expect": suites.VERDICTS, "detection": suites.DETECTION_KEYS,
              "coverage": suites.COVERAGE_KEYS}
    assert set(VOCAB_EDITS) == {(t, k) for t, keys in tables.items() for k in keys}


@pytest.mark.parametrize("where", list(VOCAB_EDITS), ids=lambda w: ".".join(x for x in w if x))
def test_every_suite_key_is_accepted_and_changes_what_runs(where):
    """Each key, set to another valid value, is accepted and changes the jobs the suite
    runs, whole or quick (or, for the name and the summary, the report's header; for a
    design's expected verdicts, how the fold judges the matrix; for coverage, whether
    an unreached probe fails the run)."""
    import copy

    changed = copy.deepcopy(VOCAB_BASE)
    VOCAB_EDITS[where](changed)

    def runs(data):
        s = suites.from_dict(copy.deepcopy(data), "<vocab>")
        return (s.name, s.summary, check._jobs(s), check._jobs(s.part(True)) if not s.part(True).empty else None,
                s.compare.expect if s.compare is not None else None, s.require_coverage,
                s.part(True).require_coverage)
    assert runs(changed) != runs(VOCAB_BASE)


def test_the_test_caches_hand_back_what_the_real_calls_give(monkeypatch):
    """tests/check_memo.py, which the fixtures above and tests/test_check_sections.py,
    test_compare.py and test_designs.py rely on: a cached exploration or job is a copy of
    the real one's output, one per distinct world, bounds and bound (or job), computed
    once; a search with a stop rule is never served from the cache."""
    import functools

    from check_memo import each_exploration_once

    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds
    from toolcall_sim.ci import check_jobs

    real_explore = ex.explore
    real = {d: real_explore(worlds.build("two-messages", d), ex.Bounds(), max_states=300) for d in ("contract", "today")}
    memo: dict = {}
    calls = []
    @functools.wraps(real_explore)  # the same signature, which the cache reads
    def counted(*a, **k):
        calls.append(a)
        return real_explore(*a, **k)
    monkeypatch.setattr(ex, "explore", counted)
    each_exploration_once(monkeypatch, memo)
    for _ in range(2):
        for d in ("contract", "today"):
            got = ex.explore(worlds.build("two-messages", d), ex.Bounds(), max_states=300)
            assert got is not real[d] and (got.states, got.violations) == (real[d].states, real[d].violations)
    assert len(memo) == len(calls) == 2
    ex.explore(worlds.build("two-messages", "today"), ex.Bounds(), max_states=300, stop_on=lambda f: True)
    assert len(calls) == 3  # a stop rule: the real search
    jobs: dict = {}
    each_job_once(monkeypatch, jobs)
    job = [(check_jobs.job_detection, ("swarm", "interrupt-without-cancel", 2))]
    first, again = check.run_jobs(job, 1), check.run_jobs(job, 1)
    real_out = check_jobs.run_jobs(job, 1)
    assert real_out[0].pop(check_jobs.SECONDS) > 0  # the real job's wall time; a memoized one has none
    assert first == again == real_out and first[0] is not again[0] and len(jobs) == 1


def test_a_known_finding_is_named_as_one_in_every_renderer():
    """check gives a known finding the residual risks' status (it never fails a run, as in
    the swarm) and names it a known finding in summary.md's and index.html's label and in
    JUnit's note; a residual risk keeps its own words."""
    from toolcall_sim.reports import check_markdown, junit

    known = {"status": "residual_risk", "class": "known_finding", "property": "truthful_result",
             "residual_risk": "read_failure_after_restart_is_failed", "detail": "toolu_01: failed"}
    risk = {**known, "class": "residual_risk", "residual_risk": "age_check_best_effort"}
    assert check_markdown.status_label({}, known) == "known finding"
    assert check_markdown.status_label({}, risk) == "residual risk"
    assert junit._note(known) == ("truthful_result: known finding read_failure_after_restart_is_failed: "
                                  "toolu_01: failed")
    assert junit._note(risk).startswith("truthful_result: residual risk age_check_best_effort: ")


def test_a_huge_summary_is_trimmed_under_githubs_limit_with_a_pointer(tiny):
    """summary.md of a report with many findings (each with a long detail) stays under
    GitHub's 1 MiB step-summary limit, in UTF-8 bytes, keeps the headline and the
    properties table first, says it was trimmed and points to the whole report; the
    same report gives the same bytes. A report that fits is not trimmed."""
    from toolcall_sim.reports import check_markdown

    doc = json.loads((tiny / "second" / "report.json").read_text())
    assert "Trimmed" not in check_markdown.summary(doc)
    template = dict(doc["findings"][0], status="new", counterexample=None)
    doc["findings"] = [dict(template, where=f"seed-{i}", detail=f"toolu_{i:05d}: started twice — é " + "x" * 300,
                            reproduce=[f"toolcall-sim replay counterexamples/seed-{i}.json"]) for i in range(20_000)]
    doc["findings"].insert(0, dict(template, where="huge", detail="y" * 3_000_000))  # one line over 1 MiB
    doc["verdict"] = {"ok": False, "exit_code": 1,
                      "reasons": [f"new finding: {f['property']} ({f['where']})" for f in doc["findings"]]}
    text = check_markdown.summary(doc)
    raw = text.encode("utf-8")
    assert len(raw) < 1_048_576 and len(raw) <= check_markdown.SUMMARY_LIMIT_BYTES
    assert text == check_markdown.summary(doc)  # deterministic
    lines = text.splitlines()
    assert lines[0] == "# toolcall-sim check: tiny" and "**FAIL** (exit 1):" in lines
    assert text.index("## Properties by variant") < text.index("## New against the baseline")
    assert "more (`report.json`: verdict.reasons)" in text  # the reasons list is cut to a few
    assert "(cut: report.json has it whole)" in text and "counterexamples/seed-5.json" in text  # cut, then on
    assert "**Trimmed**" in lines[-2] and "index.html" in lines[-1] and "report.json" in lines[-1]
    assert text.count("<details>") == text.count("</details>")


def test_quick_says_what_its_part_ran(tiny, tmp_path, monkeypatch):
    """Under --quick the suite's summary describes more than ran: the summary and the
    page say first what the quick part ran (counted from the report), then the whole."""
    _draw_each_task_once(monkeypatch)
    each_job_once(monkeypatch, _JOBS)
    assert _check(str(tiny / "tiny.toml"), "--quick", "--out", str(tmp_path / "q"), "--baseline",
                  str(tiny / "baseline.json")) == 0
    said = ("Quick part (--quick) of the suite; it ran 4 scenario run(s) of 2 scenario file(s); 1 planted bug(s) "
            "by scenario. The whole suite: a suite small enough for a test")
    md = (tmp_path / "q" / "summary.md").read_text()
    assert said in md.splitlines() and "explorer on" not in md.split("**PASS**")[0]
    assert f"<p>{said}</p>" in (tmp_path / "q" / "index.html").read_text()
    full = (tiny / "second" / "summary.md").read_text().splitlines()
    assert "a suite small enough for a test" in full  # the whole suite: its own words
