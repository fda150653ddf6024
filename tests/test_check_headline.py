"""The answer first (issue 37): summary.md and index.html open with the headline in
words, computed from the runs (sim/ci/headline.py) and worded by reports/check_*.py, then
a row of counts per scenario run; an expected violation says who expected it and is
never coloured as a failure."""

from __future__ import annotations

import json
import re

import pytest

from toolcall_sim.ci import check
from toolcall_sim.cli.main import main


def _empty_baseline(folder) -> str:
    path = folder / "baseline.json"
    path.write_text(json.dumps(check.baseline_doc([])))
    return str(path)

INCIDENT_SUITE = """
name = "incident"
summary = "the incident, nine hours and past the timeout"

[[scenarios]]
files = ["codagt757_incident", "codagt757_incident_past_timeout"]
"""
# The words come from the runs (process starts, results, simulated time), never pasted:
# today's nine hours start a process every 15 minutes and commit nothing; the contract
# starts one and, past the 10-hour execute timeout, commits timed_out.
INCIDENT_HEADLINE = ("The CODAGT-757 incident (codagt757-incident, codagt757-incident-past-timeout): "
                     "today: 36 process starts in 9 h, no result; contract: 1 process start, timed_out at 10 h.")


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    root = tmp_path_factory.mktemp("headline")
    (root / "incident.toml").write_text(INCIDENT_SUITE)
    assert main(["check", str(root / "incident.toml"), "--out", str(root / "out"), "--baseline",
                 _empty_baseline(root)]) == 0
    return root / "out"


def test_summary_md_opens_with_the_headline_then_the_counts(incident):
    lines = (incident / "summary.md").read_text().splitlines()
    assert lines[0] == "# toolcall-sim check: incident" and lines[1] == ""
    assert lines[2] == f"**{INCIDENT_HEADLINE}**"  # the first content
    head = lines.index("| scenario | variant | simulated | process starts | results | unknown results | expectations |")
    assert head < lines.index("## Properties by variant")
    assert lines[head + 2:head + 6] == [
        "| `codagt757-incident` | `contract` | 9 h | 1 | 0 | 0 | met |",
        "| `codagt757-incident` | `today` | 9 h | 36 | 0 | 0 | met |",
        "| `codagt757-incident-past-timeout` | `contract` | 11 h | 1 | 1 | 0 | met |",
        "| `codagt757-incident-past-timeout` | `today` | 11 h | 44 | 0 | 0 | met |"]


def test_index_html_main_opens_with_the_headline_then_the_counts(incident):
    page = (incident / "index.html").read_text()
    main_part = page[page.index("<main>") + len("<main>"):]
    first = re.match(r'\s*<p class="headline" id="headline">([^<]*)</p>', main_part)
    assert first and first.group(1) == INCIDENT_HEADLINE
    assert main_part.index('<table id="counts">') < main_part.index("<h2>Properties by variant</h2>")
    assert "<td>codagt757-incident-past-timeout</td><td>contract</td><td>11 h</td><td>1</td><td>1</td>" in main_part


def test_an_expected_violation_says_who_expected_it_and_is_not_a_failure(incident):
    md = (incident / "summary.md").read_text()
    page = (incident / "index.html").read_text()
    said = "violated, expected by the [expect.today] of codagt757-incident, codagt757-incident-past-timeout"
    assert f"| `at_most_once` | holds | {said} |" in md and "violated (expected)" not in md
    cells = re.findall(r'<td class="([^"]*)">violated, expected by[^<]*</td>', page)
    assert cells and set(cells) == {"expected-violation"}  # never the failure class
    css = page[page.index("<style>"):page.index("</style>")]
    colour = {name: re.search(rf"\.{name} {{ background: (#[0-9a-f]+)", css).group(1)
              for name in ("violated", "expected-violation", "fail")}
    assert colour["expected-violation"] not in (colour["violated"], colour["fail"])
    assert "- **expected by its scenario's [expect.today]** `at_most_once` under `today`" in md
    assert re.search(r"<h3><span>expected by its scenario&#x27;s \[expect.today\]</span> <code>at_most_once", page)
    assert '<span class="new">expected' not in page


def test_a_suite_of_many_scenarios_has_no_headline_but_its_counts(tmp_path):
    """With no incident run and many scenarios there is no one subject: the counts table
    comes first."""
    (tmp_path / "two.toml").write_text('name = "two"\nsummary = "two"\n[[scenarios]]\n'
                                       'files = ["us04_retry_changes_nothing", "smoke_retry"]\n')
    assert main(["check", str(tmp_path / "two.toml"), "--out", str(tmp_path / "out"), "--baseline",
                 _empty_baseline(tmp_path)]) == 0
    lines = (tmp_path / "out" / "summary.md").read_text().splitlines()
    assert lines[2].startswith("**PASS**") and lines[4].startswith("| scenario | variant |")
    assert 'class="headline"' not in (tmp_path / "out" / "index.html").read_text()


def test_one_run_report_has_its_scenario_as_headline(tmp_path):
    assert main(["run", "scenarios/us04_retry_changes_nothing.toml", "--variant", "contract", "--report",
                 str(tmp_path / "r")]) == 0
    lines = (tmp_path / "r" / "summary.md").read_text().splitlines()
    assert lines[2].startswith("**us04-retry-changes-nothing: contract: ") and lines[4].startswith("**PASS**")


def test_the_headline_names_the_scenarios_toolcall_sim_incident_runs():
    """One list of the incident's scenarios (sim/world/inputs.py): by file for the
    command, by name for the headline; each file's name is its stem with hyphens."""
    from toolcall_sim.ci import headline
    from toolcall_sim.world.inputs import INCIDENT_SCENARIOS, load_scenario, resolve_scenario

    names = tuple(load_scenario(resolve_scenario(stem)).name for stem in INCIDENT_SCENARIOS)
    assert names == headline.INCIDENT == ("codagt757-incident", "codagt757-incident-past-timeout")
