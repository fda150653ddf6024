"""``toolcall-sim check``'s rule coverage section (issue 35): a probe no run reaches fails
a suite that requires coverage and is named in the reasons, the Markdown, the JSON and
JUnit; a probe listed as unreachable does not fail; the section is the same bytes for
the same runs. One scenario under both variants keeps it fast."""

from __future__ import annotations

import json

import pytest

from toolcall_sim.ci import check
from toolcall_sim.ci import suite as suites
from toolcall_sim.model import probes
from toolcall_sim.reports import check_markdown
from toolcall_sim.reports.json_text import json_text

SUITE = """
name = "covtiny"
[[scenarios]]
files = ["us10_interrupt_before_start_arrives"]
variants = ["today", "contract"]
[coverage]
require = {require}
"""


def _suite(tmp_path, require: bool = True) -> suites.Suite:
    path = tmp_path / "covtiny.toml"
    path.write_text(SUITE.format(require="true" if require else "false"))
    return suites.load(path)


@pytest.fixture
def listed(monkeypatch, tmp_path):
    """Every probe the one-scenario suite leaves unreached listed as unreachable (a reason
    the test gives), so only what a test plants can fail the run."""
    first = check.run_check(_suite(tmp_path))
    for pid in first.report["coverage"]["unreached"]:
        monkeypatch.setitem(probes.UNREACHABLE, pid, "this test's suite runs one scenario")
    return first


def test_listed_unreachable_probes_do_not_fail_check(listed, tmp_path):
    assert listed.exit_code == 1 and any(r.startswith("rule coverage:") for r in listed.report["verdict"]["reasons"])
    result = check.run_check(_suite(tmp_path))
    cov = result.report["coverage"]
    assert result.exit_code == 0 and cov["unreached"] == [] and cov["unreached_listed"]
    assert cov["required"] and result.report["counts"]["probes_unreached"] == 0
    text = check_markdown.summary(result.report)
    assert "## Rule coverage" in text and "this test's suite runs one scenario" in text


def test_a_planted_probe_fails_check_and_is_named_in_markdown_json_and_junit(listed, monkeypatch, tmp_path):
    from toolcall_sim.reports.junit import junit

    monkeypatch.setitem(probes.PROBES, "A3.planted", ("A3", "a branch no run takes"))
    result = check.run_check(_suite(tmp_path))
    report = result.report
    assert result.exit_code == 1
    assert report["coverage"]["unreached"] == ["A3.planted"]
    (reason,) = [r for r in report["verdict"]["reasons"] if r.startswith("rule coverage:")]
    assert "A3.planted (contract)" in reason
    text = check_markdown.summary(report)
    assert "**FAIL** (exit 1)" in text and "| `A3.planted` | A3: a branch no run takes | contract |" in text
    doc = json.loads(json_text(report))
    assert doc["coverage"]["unreached"] == ["A3.planted"] and doc["verdict"]["exit_code"] == 1
    xml = junit(report)
    assert 'name="A3.planted"' in xml and 'type="RuleUnreached"' in xml
    # A suite that does not require coverage shows the same probe and passes.
    relaxed = check.run_check(_suite(tmp_path, require=False))
    assert relaxed.exit_code == 0 and relaxed.report["coverage"]["unreached"] == ["A3.planted"]
    assert "informational" in check_markdown.summary(relaxed.report)


def test_check_command_writes_the_section_and_fails(listed, monkeypatch, tmp_path):
    from toolcall_sim.cli.main import main

    monkeypatch.setitem(probes.PROBES, "A3.planted", ("A3", "a branch no run takes"))
    (tmp_path / "s").mkdir()
    path = tmp_path / "s" / "covtiny.toml"
    path.write_text(SUITE.format(require="true"))
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # no baseline here: nothing but coverage can fail the run
    assert main(["check", str(path), "--out", str(out)]) == 1
    summary = (out / "summary.md").read_text()
    assert "| `A3.planted` | A3: a branch no run takes | contract | **not listed** |" in summary
    assert json.loads((out / "report.json").read_text())["coverage"]["unreached"] == ["A3.planted"]
    page = (out / "index.html").read_text()
    assert '<h2 id="coverage">Rule coverage</h2>' in page and "A3.planted" in page


def test_the_section_is_the_same_bytes_for_the_same_runs(tmp_path):
    one = check.run_check(_suite(tmp_path))
    two = check.run_check(_suite(tmp_path))
    assert json_text(one.report["coverage"]) == json_text(two.report["coverage"])
    assert check_markdown.summary(one.report) == check_markdown.summary(two.report)


def test_check_counts_the_explorers_probes_and_the_search_is_unchanged():
    from toolcall_sim.ci.check_jobs import job_explore
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    run = suites.from_dict({"name": "x", "explore": [{"world": "two-messages", "variants": ["contract"]}]}).explore[0]
    out = job_explore(run)
    plain = ex.explore(worlds.build(run.world, run.variant, run.second), check.explore_bounds(run),
                       max_states=run.max_states)
    assert (out["states"], out["transitions"]) == (plain.states, plain.transitions)
    assert dict(out["probes"]) and set(dict(out["probes"])) <= set(probes.PROBES)


def test_one_run_reports_have_no_coverage_section():
    from toolcall_sim.ci.check_jobs import job_scenario
    from toolcall_sim.ci.one_run import one_run
    from toolcall_sim.world.inputs import SCENARIO_DIR

    (run,) = [r for r in suites.from_dict({"name": "x", "scenarios": [
        {"files": ["us10_interrupt_before_start_arrives"], "variants": ["contract"]}]}).scenarios]
    assert str(SCENARIO_DIR)
    result = one_run("run", "one", "us10", job_scenario(run), 0)
    assert "coverage" not in result.report and "probes_reached" not in result.report["counts"]
