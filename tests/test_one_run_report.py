"""One run's report page (issue 15: "``toolcall-sim run``, ``explore`` and ``replay`` take
``--report DIR`` and write the same page for one run or one counterexample"), the check
command's progress, its word about a missing baseline, and the pictures' chat names.

Each command is run with and without ``--report``: the exit code and what it prints
before the report line are the same; the folder holds the files ``check`` writes
(``junit.xml`` for run and explore), every picture the page names is embedded in it, and
a counterexample's sequence diagram highlights exactly the records that prove its
violation (their ``evidence-<index>`` groups, tests/test_figures.py's reading). The page is
rendered by the check writers (``toolcall_sim.reports.check_html.page``): tested by the shape of what
they write, not by a second copy of them.
"""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import browser
import junitparser
import pytest

from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.io import progress as pg
from toolcall_sim.cli.main import main
from toolcall_sim.world.build import chat_uuid

SVG = "{http://www.w3.org/2000/svg}"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.imgs.append(dict(attrs))


def _svgs_in_page(folder: Path) -> list[str]:
    page = _Page()
    page.feed((folder / "index.html").read_text())
    assert page.imgs and all(i["src"].startswith("data:image/svg+xml;base64,") for i in page.imgs)
    return [base64.b64decode(i["src"].split(",", 1)[1]).decode() for i in page.imgs]


def _pictures(doc: dict) -> list[str]:
    """Every picture file the report names."""
    out = [f["sequence"] for f in doc["findings"] if f["sequence"]]
    for x in doc["scenarios"]:
        out += [x["timeline"], *([x["sequence"]] if x["sequence"] else [])]
    out += [e["depth_chart"] for e in doc["explore"]]
    if "replay" in doc:
        out += [doc["replay"][k] for k in ("timeline", "sequence") if doc["replay"][k]]
    return out


def _check_folder(folder: Path, junit: bool = True) -> dict:
    """The report folder holds what check writes, each picture on disk and in the page."""
    names = {"index.html", "summary.md", "report.json", "figures", "counterexamples", *(["junit.xml"] if junit else []),
             ".toolcall-sim-report"}  # the marker that makes the folder ours to replace (sim/io/output.py Rule 6)
    assert {p.name for p in folder.iterdir()} == names
    doc = json.loads((folder / "report.json").read_text())
    pictures = _pictures(doc)
    assert pictures and sorted(pictures) == sorted(f"figures/{p.name}" for p in (folder / "figures").iterdir())
    embedded = _svgs_in_page(folder)
    assert sorted(embedded) == sorted((folder / p).read_text() for p in pictures)
    if junit:
        junitparser.JUnitXml.fromfile(str(folder / "junit.xml"))
    assert (folder / "summary.md").read_text().startswith(f"# toolcall-sim {doc['one_run']['command']}: ")
    return doc


def _texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iter(SVG + "text")]


def _ids(svg: str) -> set[str]:
    return {e.get("id") for e in ET.fromstring(svg).iter() if e.get("id")}


def _evidence(svg: str) -> set[int]:
    return {int(i.split("-")[1]) for i in _ids(svg) if re.fullmatch(r"evidence-\d+", i)}


def _without_report_line(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("report: "))


# ---------------------------------------------------------------------------
# run --report
# ---------------------------------------------------------------------------


def test_run_report_of_a_passing_run_has_its_timeline_and_sequence(tmp_path, capsys):
    assert main(["run", "us02_interrupt_stops_foreground"]) == 0
    plain = capsys.readouterr().out
    assert main(["run", "us02_interrupt_stops_foreground", "--report", str(tmp_path / "r")]) == 0
    said = capsys.readouterr().out
    assert _without_report_line(said) == plain and f"report: {tmp_path / 'r'}/index.html" in said
    doc = _check_folder(tmp_path / "r")
    assert doc["verdict"] == {"ok": True, "exit_code": 0, "reasons": []}
    (x,) = doc["scenarios"]
    assert x["ok"] and x["sequence"] and x["reproduce"] == [
        "toolcall-sim run us02_interrupt_stops_foreground --variant contract"]
    assert doc["one_run"] == {"command": "run", "title": "us02-interrupt-stops-foreground under contract"}
    assert "**PASS**: every expectation of the scenario met." in (tmp_path / "r" / "summary.md").read_text()
    (case,) = [c for s in junitparser.JUnitXml.fromfile(str(tmp_path / "r" / "junit.xml")) for c in s]
    assert case.result == [] and case.time > 0  # the run's wall time (junit.xml alone has it)
    assert "seconds" not in json.dumps(doc)
    # The timeline names the scenario's chat, not its UUID.
    timeline = (tmp_path / "r" / x["timeline"]).read_text()
    assert any(w.startswith("chat-1") for w in _texts(timeline))
    assert not any(chat_uuid("chat-1")[:8] in w for w in _texts(timeline))


def test_run_report_of_a_planted_bug_names_its_findings_with_evidence(tmp_path, capsys):
    variant = "contract+pid-from-command"
    argv = ["run", "us09_chat_isolation", "--variant", variant, "--seed", "109"]
    assert main(argv) == 1
    plain = capsys.readouterr().out
    assert main([*argv, "--report", str(tmp_path / "r")]) == 1  # the exit code is the run's
    assert _without_report_line(capsys.readouterr().out) == plain
    doc = _check_folder(tmp_path / "r")
    assert doc["verdict"]["exit_code"] == 1 and "expectation not met" in doc["verdict"]["reasons"][0]
    assert {f["property"] for f in doc["findings"]} >= {"chat_isolation"}
    (f,) = [f for f in doc["findings"] if f["property"] == "chat_isolation"]
    assert f["reproduce"][0] == f"toolcall-sim run us09_chat_isolation --variant {variant} --seed 109"
    # Its sequence diagram highlights the records that prove it, as the replayed copy finds them.
    r = cx.replay(tmp_path / "r" / f["counterexample"])
    assert r.outcome == "reproduced" and r.property == "chat_isolation"
    (v,) = [v for v in r.violations if v.property == "chat_isolation"]
    svg = (tmp_path / "r" / f["sequence"]).read_text()
    assert _evidence(svg) == set(v.evidence) and v.evidence
    assert "chat-a" in " ".join(_texts(svg)) and chat_uuid("chat-a")[:8] not in " ".join(_texts(svg))
    (case,) = [c for s in junitparser.JUnitXml.fromfile(str(tmp_path / "r" / "junit.xml")) for c in s]
    assert case.result and case.result[0].type == "ExpectationNotMet"
    html = (tmp_path / "r" / "index.html").read_text()
    assert "FAIL (exit 1)" in html and "FOUND" in html and "chat_isolation" in html


def test_run_report_is_the_same_bytes_twice(tmp_path, capsys):
    """Every file but junit.xml's wall times (reports/junit.py)."""
    for name in ("a", "b"):
        assert main(["run", "lost_start_answer", "--report", str(tmp_path / name)]) == 0
    capsys.readouterr()
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and Path("junit.xml") in files
    for p in files:
        a, b = (tmp_path / "a" / p).read_bytes(), (tmp_path / "b" / p).read_bytes()
        if p.name == "junit.xml":
            a, b = (re.sub(rb' time="[0-9.]+"', b' time="0"', x) for x in (a, b))
        assert a == b, p


# ---------------------------------------------------------------------------
# explore --report, replay --report
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """today's default world searched until at_most_once is found, with its report."""
    root = tmp_path_factory.mktemp("explore")
    argv = ["explore", "--world", "default", "--variant", "today", "--property", "at_most_once", "--out", str(root / "cx")]
    assert main([*argv, "--report", str(root / "r")]) == 1
    return root


def test_explore_report_repeats_no_reduction_and_the_stop_rule(tmp_path, capsys):
    """The command that repeats a search keeps --no-reduction and --stop-at-first (the
    page used to give the fold's command without them)."""
    argv = ["explore", "--world", "default", "--no-reduction", "--stop-at-first", "--max-states", "300", "--quiet",
            "--out", str(tmp_path / "cx"), "--report", str(tmp_path / "r")]
    assert main(argv) == 0
    (e,) = json.loads((tmp_path / "r" / "report.json").read_text())["explore"]
    assert e["reproduce"] == ["toolcall-sim explore --world default --variant contract --max-in-flight 0s "
                              "--horizon 30s --max-states 300 --agent-restarts 1 --ownership-changes 1 --interrupts 1 "
                              "--lost-responses 1 --task-retries 1 --no-reduction --stop-at-first"]


def test_explore_report_has_the_depth_chart_and_each_counterexample(explored, capsys):
    doc = _check_folder(explored / "r")
    assert doc["verdict"]["exit_code"] == 1
    (e,) = doc["explore"]
    assert e["states"] == sum(e["states_per_depth"]) and e["violations"]
    assert e["reproduce"][0].endswith(" --property at_most_once")
    for f in doc["findings"]:
        assert f["driver"] == "explore" and f["sequence"] and f["counterexample"]
        r = cx.replay(explored / "r" / f["counterexample"])
        (v,) = [v for v in r.violations if (v.property, v.residual_risk) == (f["property"], f["residual_risk"])]
        assert _evidence((explored / "r" / f["sequence"]).read_text()) == set(v.evidence)
    # The explorer's chats are named as its world names them.
    (f,) = [f for f in doc["findings"] if f["property"] == "at_most_once"]
    words = " ".join(_texts((explored / "r" / f["sequence"]).read_text()))
    assert "chat-1" in words
    xml = junitparser.JUnitXml.fromfile(str(explored / "r" / "junit.xml"))
    failed = [c for s in xml for c in s if c.result]
    assert {c.name for c in failed} == {f["property"] for f in doc["findings"] if f["residual_risk"] is None}
    assert xml.time > 0 and len({c.time for s in xml for c in s}) == 1  # the search's time, shared by its cases


def test_replay_report_highlights_the_counterexamples_evidence(explored, tmp_path, capsys):
    cx_file = explored / "cx" / "today-at_most_once.json"
    assert main(["replay", str(cx_file)]) == 1
    plain = capsys.readouterr().out
    assert main(["replay", str(cx_file), "--report", str(tmp_path / "r")]) == 1
    assert _without_report_line(capsys.readouterr().out) == plain
    doc = _check_folder(tmp_path / "r", junit=False)
    assert doc["replay"]["outcome"] == "reproduced" and doc["replay"]["sequence"] is None
    (f,) = doc["findings"]
    assert (f["driver"], f["property"], f["variant"]) == ("replay", "at_most_once", "today")
    (v,) = [v for v in cx.replay(cx_file).violations if v.property == "at_most_once"]
    assert _evidence((tmp_path / "r" / f["sequence"]).read_text()) == set(v.evidence)
    # The copy in the report replays to the same trace.
    assert cx.replay(tmp_path / "r" / f["counterexample"]).trace_sha256 == doc["replay"]["trace_sha256"]
    assert "reproduced" in (tmp_path / "r" / "summary.md").read_text()


def test_replay_report_of_a_fixed_counterexample_draws_its_trace_plain(explored, tmp_path, capsys):
    """The contract fixes today's double start: the file under the contract does not
    reproduce (exit 0), and the page still shows the trace it replayed to."""
    doc = json.loads((explored / "cx" / "today-at_most_once.json").read_text())
    doc["world"]["variant"] = "contract"
    doc.pop("trace_sha256", None)
    moved = tmp_path / "under-contract.json"
    moved.write_text(json.dumps(doc))
    code = main(["replay", str(moved), "--report", str(tmp_path / "r")])
    capsys.readouterr()
    report = _check_folder(tmp_path / "r", junit=False)
    assert report["verdict"]["exit_code"] == code and code in (0, 3)
    assert report["findings"] == [] and report["replay"]["sequence"]
    assert not _evidence((tmp_path / "r" / report["replay"]["sequence"]).read_text())


# ---------------------------------------------------------------------------
# Bad --report folders: one line, exit 2, before anything runs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["run", "us02_interrupt_stops_foreground"],
                                     ["explore", "--world", "default", "--max-states", "5"],
                                     ["replay", "NOFILE.json"]])
@pytest.mark.parametrize("where", ["file", "below-file", "proc"])
def test_a_bad_report_folder_is_one_line_exit_2(command, where, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    target = {"file": tmp_path / "a-file", "below-file": tmp_path / "a-file" / "r",
              "proc": Path("/proc/toolcall-sim-report")}[where]
    if where == "proc" and not Path("/proc/self").exists():
        pytest.skip("no /proc here: no folder that even root cannot write to")
    extra = ["--out", str(tmp_path / "o")] if command[0] == "explore" else []
    assert main([*command, *extra, "--report", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--report" in err
    assert not (tmp_path / "o").exists()  # found before the search ran


def test_the_tour_refuses_report_in_one_line(tmp_path, capsys):
    """explore without --world runs many searches (sim/drivers/explore_tour.py); --report draws
    one, so the tour refuses it instead of ignoring it."""
    assert main(["explore", "--out", str(tmp_path / "o"), "--report", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--report" in err and "--world" in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()


# ---------------------------------------------------------------------------
# check: progress, and a missing default baseline said in one line
# ---------------------------------------------------------------------------

TINY = """
name = "tiny"
[[scenarios]]
files = ["us09_chat_isolation", "us02_interrupt_stops_foreground"]
variants = ["contract"]
"""


def _check(tmp_path: Path, name: str, capsys, *extra: str) -> tuple[int, dict, str]:
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY)
    code = main(["check", str(suite), "--out", str(tmp_path / name), "--baseline", str(tmp_path / "none.json"),
                 "--update-baseline", *extra])
    err = capsys.readouterr().err
    files = {str(p.relative_to(tmp_path / name)): p.read_bytes() for p in sorted((tmp_path / name).rglob("*"))
             if p.is_file()}
    # junit.xml's wall times are the one thing that differs run to run (reports/junit.py)
    files["junit.xml"] = re.sub(rb' time="[0-9.]+"', b' time="0"', files["junit.xml"])
    return code, files, err


def test_check_with_the_bar_writes_what_it_does_without(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(pg.ENV, "off")
    code_off, files_off, err_off = _check(tmp_path, "off", capsys)
    monkeypatch.setenv(pg.ENV, "bar")
    code_bar, files_bar, err_bar = _check(tmp_path, "bar", capsys)
    assert (code_bar, files_bar) == (code_off, files_off) and code_off == 0 and "report.json" in files_off
    assert err_off == ""  # not a terminal: nothing extra
    plain = ANSI.sub("", err_bar).replace("\r", "\n")
    assert "2/2 jobs" in plain and "check tiny" in plain  # the bar reached its end
    monkeypatch.setenv(pg.ENV, "lines")
    _, _, err_lines = _check(tmp_path, "lines", capsys)
    assert err_lines.splitlines() == [f"check tiny: 2 jobs; the report goes to {tmp_path / 'lines'}",
                                      "  ... 1/2 scenario us09-chat-isolation (contract)"]
    _, _, err_quiet = _check(tmp_path, "quiet", capsys, "--quiet")
    assert err_quiet == ""  # --quiet beats the variable


def test_check_says_when_the_default_baseline_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(pg.ENV, "off")
    (tmp_path / "tiny.toml").write_text(TINY)
    assert main(["check", "tiny.toml", "--out", "o"]) == 0  # nothing found: nothing new, exit unchanged
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no baseline at reports/baseline.json" in err and "--baseline" in err
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "baseline.json").write_text(json.dumps({"schema": "toolcall-sim/baseline/1",
                                                                    "accepted": []}))
    assert main(["check", "tiny.toml", "--out", "o"]) == 0
    assert capsys.readouterr().err == ""


def test_check_labels_chats_by_the_scenarios_names(tmp_path, capsys):
    code, files, _ = _check(tmp_path, "r", capsys, "--quiet")
    assert code == 0
    doc = json.loads(files["report.json"])
    (x,) = [x for x in doc["scenarios"] if x["scenario"] == "us09-chat-isolation"]
    words = _texts(files[x["timeline"]].decode())
    assert "chat-a  toolu_01" in words and "chat-b  toolu_01b" in words
    assert not any(chat_uuid("chat-a")[:8] in w for w in words)


# ---------------------------------------------------------------------------
# The real pages in a browser (tests/browser.py): drawn, pictures included
# ---------------------------------------------------------------------------

TALL = (1280, 4000)  # tall enough to reach the first sequence diagram below the table
EVIDENCE_BG = (255, 227, 234)  # reports/figures/_style.py EVIDENCE_BG: the band behind a violation's records


def _drawn(page: Path):
    browser.require_browser()
    picture = browser.measure(browser.screenshot(page, window=TALL))
    assert not picture.blank, picture
    return picture


@pytest.mark.xdist_group(browser.XDIST_GROUP)  # one browser for the suite's screenshots
def test_the_check_page_is_drawn_with_its_sequence_diagram(tmp_path, capsys):
    """check on a tiny suite whose scenario fails under a planted bug: the page a browser
    draws is not blank, and the failed scenario's sequence diagram (an embedded SVG) is
    drawn with its evidence band."""
    suite = tmp_path / "tiny.toml"
    suite.write_text('name = "tiny"\n[[scenarios]]\nfiles = ["us09_chat_isolation"]\n'
                     'variants = ["contract+pid-from-command"]\n')
    (tmp_path / "b.json").write_text('{"schema": "toolcall-sim/baseline/1", "accepted": []}')
    assert main(["check", str(suite), "--out", str(tmp_path / "r"), "--baseline", str(tmp_path / "b.json"),
                 "--quiet"]) == 1
    capsys.readouterr()
    picture = _drawn(tmp_path / "r" / "index.html")
    assert picture.has_colour(EVIDENCE_BG, 1_000)


@pytest.mark.xdist_group(browser.XDIST_GROUP)  # one browser for the suite's screenshots
def test_a_report_page_is_drawn_with_its_evidence(tmp_path, capsys):
    assert main(["run", "us09_chat_isolation", "--variant", "contract+pid-from-command",
                 "--report", str(tmp_path / "r")]) == 1
    capsys.readouterr()
    picture = _drawn(tmp_path / "r" / "index.html")
    assert picture.has_colour(EVIDENCE_BG, 1_000)


def test_replay_report_of_a_recorded_trace_has_a_finding_per_violation(tmp_path, capsys):
    """A trace names no property: every violation it replays to gets its picture."""
    variant = "contract+pid-from-command"
    assert main(["run", "us09_chat_isolation", "--variant", variant, "--trace", str(tmp_path / "t.jsonl")]) == 1
    assert main(["replay", str(tmp_path / "t.jsonl"), "--report", str(tmp_path / "r")]) == 1
    capsys.readouterr()
    doc = _check_folder(tmp_path / "r", junit=False)
    assert {f["property"] for f in doc["findings"]} == {"chat_isolation", "interrupt_stops_foreground",
                                                        "truthful_result"}
    assert all(_evidence((tmp_path / "r" / f["sequence"]).read_text()) for f in doc["findings"])
