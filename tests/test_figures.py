"""The pictures (reports/figures): each is well-formed SVG that names what it draws, marks
lost messages and the records that prove a violation, keeps the 9-hour incident within
its height budget by folding, and is the same bytes in any process.

Traces come from the real drivers: a scenario run (``toolcall_sim.world.run.run_scenario``), a planted
bug's run with its violation's evidence, an explorer counterexample rebuilt by
``toolcall_sim.drivers.counterexample.explore_trace``, and the incident under the contract and today."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings, strategies as st

from toolcall_sim.model import explore as ex
from toolcall_sim.model import properties as props
from toolcall_sim.model import worlds
from toolcall_sim.reports import figures
from toolcall_sim.reports.figures import __main__ as cli
from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.world.build import chat_uuid
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def scenario_run(name: str, variant: str | None = None):
    return run_scenario(load(ROOT / "scenarios" / f"{name}.toml"), variant=variant)


@pytest.fixture(scope="module")
def lost_answer():
    return scenario_run("lost_start_answer")


@pytest.fixture(scope="module")
def isolation_bug():
    return scenario_run("us09_chat_isolation", "contract+pid-from-command")


@pytest.fixture(scope="module")
def explored():
    """Today's double start in the default world, as the explorer finds it."""
    config = worlds.default("today")
    bounds = ex.Bounds(agent_restarts=0, ownership_changes=1, interrupts=0, lost_responses=0, task_retries=0)
    result = ex.explore(config, bounds, stop_on=lambda f: f.property == "at_most_once")
    found = next(v for v in result.violations if v.property == "at_most_once")
    trace, final = cx.explore_trace(config, found.path)
    (violation,) = [v for v in props.evaluate(trace, final, ("always",)).violations if v.property == "at_most_once"]
    return trace, violation


@pytest.fixture(scope="module")
def incident():
    return scenario_run("codagt757_incident")


@pytest.fixture(scope="module")
def incident_today():
    return scenario_run("codagt757_incident", "today")


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    return root


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(SVG + "text")]


def ids(root: ET.Element) -> set[str]:
    return {e.get("id") for e in root.iter() if e.get("id")}


def height_in(root: ET.Element) -> float:
    return float(root.get("height").removesuffix("pt")) / 72


def test_sequence_of_a_scenario_names_lanes_calls_results_and_the_lost_answer(lost_answer):
    trace = lost_answer.world.trace
    root = parse(figures.sequence_svg(trace, title="lost-start-answer"))
    words = texts(root)
    for lane in ("world / user", "database", "replica-1", "replica-2", "agent"):
        assert lane in words
    assert "start toolu_01" in words and "toolu_01: unknown" in words
    assert "process 1 started: toolu_01" in words and "process 1 exit 0" in words
    (lost,) = [i for i, r in enumerate(trace) if r["kind"] == "lost"]
    assert f"lost-{lost}" in ids(root)
    assert any("\u2717 lost" in w for w in words)
    assert any(w.endswith("idle") for w in words)  # the minute of waiting is folded
    assert not any(i.startswith("evidence-") for i in ids(root))  # nothing to highlight


def test_sequence_highlights_a_planted_bugs_evidence(isolation_bug):
    """pid-from-command: chat-a's cancel kills chat-b's process; the evidence records are
    drawn in red with their ids, and marks name their chat (two chats)."""
    trace = isolation_bug.world.trace
    (v,) = [v for v in isolation_bug.violations if v.property == "chat_isolation"]
    names = {chat_uuid(n): n for n in ("chat-a", "chat-b")}
    root = parse(figures.sequence_svg(trace, title="us09", highlight=v.evidence, chat_names=names))
    assert {f"evidence-{i}" for i in v.evidence} <= ids(root)
    assert {f"mark-{i}" for i in v.evidence} <= ids(root)
    words = texts(root)
    assert words.count("evidence") == len(v.evidence) + 1  # and the legend
    assert "process 2 killed (cancel)" in words
    assert "process 2 started: toolu_01b [chat-b]" in words
    assert "fault interrupt chat=chat-a" not in words and any(w.startswith("interrupt chat=chat-a") for w in words)


def test_sequence_of_an_explorer_counterexample(explored):
    trace, violation = explored
    root = parse(figures.sequence_svg(trace, title="explore today", highlight=violation.evidence,
                                      time_unit_ms=ex.Bounds().scale))
    assert {f"evidence-{i}" for i in violation.evidence} <= ids(root)
    words = texts(root)
    assert "start toolu_fg" in words and "agent" in words
    assert any(w.startswith("takeover") for w in words)
    assert "10s" in words  # the explorer's 10 ms are 10 s of real time
    # Its clocks are exact: scaled with true time, they show no skew (not "clock -9.99s..0ms").
    assert not [i for i in ids(root) if i.startswith("skew-")]
    assert not [w for w in words if w.startswith("clock ")]


@pytest.mark.parametrize("time_unit_ms, header", [(1, "clock -3ms"), (1000, "clock -3s")])
def test_a_skewed_clock_is_named_in_real_ms(time_unit_ms, header):
    """A lane whose clock runs 3 units behind true time says so in its header, in real
    ms whatever a trace ms stands for; a lane on true time has no header."""
    trace = [{"t_ms": 0, "node": "agent", "clock_ms": -3, "kind": "note", "text": "boot"},
             {"t_ms": 10, "node": "agent", "clock_ms": 7, "kind": "note", "text": "later"},
             {"t_ms": 10, "node": "replica-1", "clock_ms": 10, "kind": "note", "text": "on time"}]
    root = parse(figures.sequence_svg(trace, time_unit_ms=time_unit_ms))
    assert [i for i in ids(root) if i.startswith("skew-")] == ["skew-agent"]
    assert header in texts(root)


def test_the_incident_folds_its_cycles_and_stays_bounded(incident):
    svg = figures.sequence_svg(incident.world.trace, title="incident")
    root = parse(svg)
    assert height_in(root) <= 40
    assert len(svg.encode()) < 1_000_000
    folds = [w for w in texts(root) if re.search(r"\u00d7 \d+ identical cycles of 15m", w)]
    assert len(folds) == 1, folds
    assert any(re.fullmatch(r"4m 59\.\ds idle|5m idle", w) for w in texts(root))


def test_the_incident_under_today_counts_the_evidence_it_folds(incident_today):
    trace = incident_today.world.trace
    (v,) = [v for v in incident_today.violations if v.property == "at_most_once"]
    assert len(v.evidence) == 36
    root = parse(figures.sequence_svg(trace, title="incident today", highlight=v.evidence))
    assert height_in(root) <= 40
    drawn = {i for i in v.evidence if f"evidence-{i}" in ids(root)}
    (folded,) = [w for w in texts(root) if w.endswith(" evidence")]
    assert len(drawn) + int(folded.split()[0]) == 36
    assert any("process starts inside" in w for w in texts(root))


def test_a_long_trace_without_repeats_is_elided_not_grown():
    """Rows that neither repeat nor idle are cut in the middle once past the budget."""
    for gap_ms in (1, 60_000):  # rows close together, or each after an idle gap
        trace = [{"kind": "note", "node": "replica-1", "note": f"step_{n}", "t_ms": n * gap_ms} for n in range(900)]
        root = parse(figures.sequence_svg(trace, highlight=[450, 451, 899]))
        assert height_in(root) <= 40
        assert any(re.fullmatch(r"\u22ef \d+ records not drawn \(.*\)", w) for w in texts(root))
        assert {"evidence-450", "evidence-451", "evidence-899"} <= ids(root)
    short = parse(figures.sequence_svg(trace[:30]))
    assert not any("not drawn" in w or "identical cycles" in w for w in texts(short))


def test_timeline_rows_attempts_processes_and_results(lost_answer, isolation_bug, incident_today):
    trace = lost_answer.world.trace
    root = parse(figures.timeline_svg(trace, title="lost"))
    words = texts(root)
    assert any(w.endswith("toolu_01") for w in words) and "unknown" in words and "exit 0" in words
    assert {f"result-{i}" for i, r in enumerate(trace) if r.get("truth") == "result_committed"} <= ids(root)
    assert {f"process-{i}" for i, r in enumerate(trace) if r.get("truth") == "process_started"} <= ids(root)
    trace = isolation_bug.world.trace
    names = {chat_uuid(n): n for n in ("chat-a", "chat-b")}
    root = parse(figures.timeline_svg(trace, chat_names=names))
    words = texts(root)
    assert "chat-a  toolu_01" in words and "chat-b  toolu_01b" in words
    assert "killed (cancel)" in words and "canceled" in words and "cancel" in words
    assert any(i.startswith("cancel-") for i in ids(root))
    root = parse(figures.timeline_svg(incident_today.world.trace))
    assert "36 processes" in texts(root)
    assert sum(1 for i in ids(root) if i.startswith("attempt-")) == 36


def test_timeline_of_an_instant_trace_is_in_trace_order(explored):
    trace, _ = explored
    root = parse(figures.timeline_svg(trace))
    assert any(w.startswith("records in trace order") for w in texts(root))


def test_depth_chart_names_each_violation_at_its_depth():
    root = parse(figures.depth_svg([1, 3, 9, 20, 11, 2], [("at_most_once", 4), ("truthful_result", 4),
                                                          ("chat_isolation", 2)], title="explore"))
    assert {"violation-depth-4", "violation-depth-2", "depth-0", "depth-5"} <= ids(root)
    words = texts(root)
    assert " at_most_once, truthful_result (depth 4) " in words and "46 states, depth 5, 3 violation(s)" in words
    for empty in (figures.depth_svg([]), figures.depth_svg([], [("p", 3)])):
        parse(empty)
    with pytest.raises(ValueError, match=r"states_per_depth\[1\]"):
        figures.depth_svg([1, -2])
    with pytest.raises(ValueError, match=r"violations\[0\]"):
        figures.depth_svg([1], [("x",)])


def test_swarm_chart_counts_kinds_and_unknown_share():
    root = parse(figures.swarm_svg({"today": {"at_most_once": 12}, "contract": {"age_check_best_effort": 3}},
                                   {"today": 0.0, "contract": 0.125}, title="swarm"))
    assert {"kind-at_most_once-today", "kind-age_check_best_effort-contract", "unknown-share-contract"} <= ids(root)
    words = texts(root)
    assert "12.5%" in words and "0.0%" in words and "12" in words
    assert "none" in texts(parse(figures.swarm_svg({"contract": {}}, {})))
    parse(figures.swarm_svg({}))
    with pytest.raises(ValueError, match="unknown_share"):
        figures.swarm_svg({}, {"today": 1.5})
    with pytest.raises(ValueError, match="per_variant"):
        figures.swarm_svg({"today": {"x": "3"}})


PRINT_HASHES = """
import hashlib, json, sys
from toolcall_sim.reports import figures
trace = [json.loads(l) for l in open(sys.argv[1])]
svgs = [figures.sequence_svg(trace, title="t", highlight=[5, 9]), figures.timeline_svg(trace, title="t"),
        figures.depth_svg([1, 2, 3], [("p", 1)]), figures.swarm_svg({"b": {"k": 1, "j": 2}, "a": {}}, {"a": 0.5})]
print(" ".join(hashlib.sha256(s.encode()).hexdigest() for s in svgs))
"""


@pytest.mark.slow
def test_same_bytes_in_process_and_under_another_hash_seed(lost_answer, tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lost_answer.world.trace))
    # One child under a hash seed other than this process's (a child costs a second of
    # matplotlib): two hash seeds, two processes, one set of bytes.
    seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "1"
    out = subprocess.run([sys.executable, "-c", PRINT_HASHES, str(path)], capture_output=True, text=True,
                         cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
    runs = {out.stdout.strip()}
    trace = [json.loads(line) for line in path.read_text().splitlines()]
    here = [figures.sequence_svg(trace, title="t", highlight=[5, 9]), figures.timeline_svg(trace, title="t"),
            figures.depth_svg([1, 2, 3], [("p", 1)]), figures.swarm_svg({"a": {}, "b": {"j": 2, "k": 1}}, {"a": 0.5})]
    assert here[0] == figures.sequence_svg(trace, title="t", highlight=[9, 5])
    assert runs == {" ".join(hashlib.sha256(s.encode()).hexdigest() for s in here)}
    assert "<dc:date>" not in here[0] and "Matplotlib v" not in here[0]


def test_command_line_draws_a_trace_and_refuses_bad_input(lost_answer, tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lost_answer.world.trace))
    assert cli.main([str(path), str(tmp_path / "s.svg"), "--highlight", "3"]) == 0
    assert "evidence-3" in ids(parse((tmp_path / "s.svg").read_text()))
    assert cli.main([str(path), str(tmp_path / "t.svg"), "--timeline"]) == 0
    parse((tmp_path / "t.svg").read_text())
    (tmp_path / "bad.jsonl").write_text('{"kind": "header"}\n[1]\n')
    (tmp_path / "cx.json").write_text('{\n "format": "toolcall-sim/counterexample/1"\n}\n')
    for argv in ([str(tmp_path / "missing"), str(tmp_path / "o.svg")],
                 [str(tmp_path / "bad.jsonl"), str(tmp_path / "o.svg")],
                 [str(tmp_path / "cx.json"), str(tmp_path / "o.svg")],
                 [str(path), str(tmp_path / "no" / "o.svg")],
                 [str(path), str(tmp_path / "o.svg"), "--highlight", "99999"],
                 [str(path), str(tmp_path / "o.svg"), "--highlight", "x"],
                 [str(path)], [str(path), str(tmp_path / "o.svg"), "--bogus"]):
        capsys.readouterr()
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "o.svg").exists()


RECORD = st.dictionaries(
    st.sampled_from(["kind", "node", "dst", "seq", "t_ms", "clock_ms", "route", "tool_call", "truth", "note", "pid",
                     "req", "what", "fault", "between", "incarnation", "result_kind", "chat_id", "cause", "name"]),
    st.one_of(st.none(), st.integers(-5, 50), st.text(max_size=6), st.lists(st.text(max_size=3), max_size=3),
              st.sampled_from(["send", "reply", "deliver", "lost", "truth", "note", "fault", "agent_up", "agent_down",
                               "process_started", "process_killed", "result_committed", "agent", "replica-1", "db",
                               "partition", "start", "acquired"])),
    max_size=8)


@settings(max_examples=15, deadline=None)
@given(st.lists(RECORD, max_size=25), st.lists(st.integers(-3, 30), max_size=4))
def test_any_records_draw_without_a_traceback(trace, marked):
    """Hand-written or damaged traces draw (whatever they say) instead of raising.
    15 examples (two pictures each, about 50 ms a picture; it was 40, the suite's
    slowest drawing test): hypothesis tries the empty and smallest traces first and a
    new random draw on every run of the suite, so the runs add up to the larger sample."""
    parse(figures.sequence_svg(trace, highlight=marked))
    parse(figures.timeline_svg(trace))


@pytest.mark.parametrize("ms, text", [(0, "0ms"), (950, "950ms"), (2143, "2.143s"), (62_098, "1m 2.1s"),
                                      (599_999, "10m"), (898_000, "14m 58s"), (3_599_600, "1h"),
                                      (30_600_000, "8h 30m"), (-7_200_000, "-2h")])
def test_durations_read_as_people_say_them(ms, text):
    from toolcall_sim.reports.figures._style import duration

    assert duration(ms) == text
