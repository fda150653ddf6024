"""The pytest plugin (sim/pytest_plugin.py), run as a user runs it: pytest in a folder
of scenario files (pytester), with the plugin loaded as an installed package loads it
(its ``pytest11`` entry point, ``toolcall_sim``)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET

import pytest

# Imported here, before any in-process pytester run: such a run drops the modules it
# imported when it ends, and numpy (under matplotlib, which draws a failed item's
# sequence diagram) cannot be imported twice in one process.
import toolcall_sim.reports.figures  # noqa: F401

# Imported here, before any in-process pytester run: pytester restores sys.modules after
# each run, so a module first imported inside one would be dropped while modules kept
# from that run still hold its classes (an isinstance against a class of the second
# import then fails).
import toolcall_sim.model.explore  # noqa: F401
import toolcall_sim.model.worlds  # noqa: F401
import toolcall_sim.reports.explore  # noqa: F401
import toolcall_sim.api  # noqa: F401
import toolcall_sim.drivers.counterexample  # noqa: F401
import toolcall_sim.pytest_plugin  # noqa: F401
import toolcall_sim.drivers.stateful  # noqa: F401
import toolcall_sim.drivers.swarm  # noqa: F401

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLUGIN = ("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:benchmark")
LOST = (ROOT / "scenarios" / "lost_start_answer.toml").read_text()
# The same story expecting what only the contract does, under today too: today's run
# starts the command twice, so today fails and the contract passes.
WRONG = LOST.replace('[expect.today]\ntoolu_01 = { process_starts = 2, results = ["completed"] }',
                     '[expect.today]\ntoolu_01 = { process_starts = 1, results = ["completed"] }')
assert WRONG != LOST


def _folder(pytester, files: dict[str, str]) -> None:
    for name, body in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)


def _run(pytester, *args):
    return pytester.runpytest(*PLUGIN, *args)


def test_each_scenario_times_each_expected_variant_is_an_item(pytester):
    """Only scenario files are collected (a suite or other TOML is not), one item per
    ``[expect.<variant>]``; ``-k`` selects by file, variant or scenario name."""
    _folder(pytester, {"scenarios/lost_start_answer.toml": LOST,
                       "scenarios/suites/nightly.toml": 'name = "nightly"\nscenarios = ["lost_start_answer"]\n',
                       "scenarios/other/settings.toml": "[tool]\nx = 1\n",
                       "elsewhere/lost.toml": LOST})
    result = _run(pytester, "--collect-only", "-q", ".")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/lost_start_answer.toml::contract", "scenarios/lost_start_answer.toml::today"]
    for k, selected in (("today", ["today"]), ("lost-start-answer and contract", ["contract"]),
                        ("lost_start", ["contract", "today"])):
        out = _run(pytester, "--collect-only", "-q", "-k", k, "scenarios").outlines
        assert [line.split("::")[1] for line in out if "::" in line] == selected, k
    _run(pytester, "scenarios").assert_outcomes(passed=2)


def test_a_failure_tells_the_story(pytester):
    _folder(pytester, {"scenarios/lost_start_answer.toml": WRONG})
    result = _run(pytester, "scenarios")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    for line in ("scenario lost-start-answer under today, seed 41 (scenarios/lost_start_answer.toml)",
                 "  story: The agent's answer to the start is lost",
                 "  chat-1 toolu_01 (execute): started 2 processes (at 2.121 s on agent incarnation 1, at 902.21 s "
                 "on incarnation 1); committed 1 result (completed at 932.224 s by replica-1)",
                 "expectations not met:",
                 "  toolu_01.process_starts: expected 1, got 2",
                 "  at_most_once at 902.21 s (new finding): 2 process starts for toolu_01",
                 "    evidence #46 at 2.121 s agent: truth process_started",
                 "reproduce: toolcall-sim run scenarios/lost_start_answer.toml --variant today --seed 41",
                 "sequence diagram: reports/out/pytest/lost_start_answer-today.svg"):
        assert line in out, line
    assert "Traceback" not in out and "def runtest" not in out
    # The diagram is the run's, with the records the violation cites highlighted.
    svg = (pytester.path / "reports/out/pytest/lost_start_answer-today.svg").read_text()
    assert svg.startswith("<?xml") and 'id="evidence-46"' in svg and "lost-start-answer under today" in svg


TAKEOVER_TESTS = """
import pytest
from toolcall_sim.api import Scenario, on, takeover


def takeover_at_the_start(to):
    world = Scenario("takeover at the start").world(replicas=2).chat("chat-1")
    world = world.execute("toolu_01", "make", runs_for="20m", timeout="30m")
    return world.fault(takeover(to, when=on("request_sent", tool_call="toolu_01")))


def test_to_the_owner(toolcall_run):  # replica-2 owns chat-1: the README's test, a race that never happened
    result = toolcall_run(takeover_at_the_start("replica-2"), variant="contract")
    assert result.call("toolu_01").process_starts == 1


def test_to_the_owner_allowed(toolcall_run):
    result = toolcall_run(takeover_at_the_start("replica-2"), variant="contract", allow_noop_faults=[0])
    assert result.fault_problems()


@pytest.mark.toolcall_allow_noop_faults
def test_to_the_owner_marked(toolcall_run):
    assert toolcall_run(takeover_at_the_start("replica-2"), variant="contract").fault_problems()


@pytest.mark.toolcall_allow_noop_faults(0)
def test_to_the_owner_marked_by_index(toolcall_run):
    assert toolcall_run(takeover_at_the_start("replica-2"), variant="contract").fault_problems()


@pytest.mark.toolcall_allow_noop_faults
def test_the_keyword_wins_over_the_marker(toolcall_run):
    toolcall_run(takeover_at_the_start("replica-2"), variant="contract", allow_noop_faults=False)


def test_a_real_takeover(toolcall_run):
    assert toolcall_run(takeover_at_the_start("replica-1"), variant="contract").fault_problems() == []
"""


def test_a_race_that_never_happened_fails_a_test_by_default(pytester):
    """issue 37: a README-style test whose takeover targets the chat's owner fails, in
    the fault's words, with the command that runs the world again; the keyword and the
    marker opt out; a real takeover passes."""
    pytester.makepyfile(test_takeover=TAKEOVER_TESTS)
    result = _run(pytester, "-rf")
    result.assert_outcomes(passed=4, failed=2)
    out = result.stdout.str()
    message = ("faults[0] (takeover to replica-2 when request_sent of toolu_01 (nth 1)) fired at 2.106 s and did "
               "nothing: the new owner already owns the chat")
    assert f"E       toolcall_sim.api.FaultDidNothing: {message}" in out
    assert "FAILED test_takeover.py::test_to_the_owner - " in out
    assert "FAILED test_takeover.py::test_the_keyword_wins_over_the_marker - " in out
    assert "allow_noop_faults=[0]" in out
    assert "toolcall-sim runs of this test" in out
    assert "takeover_at_the_start.toml --variant contract --seed 1" in out
    assert "def run(" not in out  # the plugin's and the API's frames are hidden


def test_the_pages_race_that_never_happened_fails_as_the_page_shows(pytester):
    """docs/pages/how-to/pytest.md's example of a takeover to the chat's owner, run as
    written: it fails with the lines the page shows (the temporary path aside)."""
    import re

    page = (ROOT / "docs" / "pages" / "how-to" / "pytest.md").read_text()
    section = page.split("## A race that did not happen fails", 1)[1].split("\n## ", 1)[0]
    code, shown = re.findall(r"```(?:python|text)\n(.*?)```", section, re.S)[:2]
    pytester.makepyfile(test_page=code)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    for line in shown.splitlines():
        if line.startswith("toolcall-sim run "):
            line = "takeover_at_the_start.toml " + line.split(".toml ", 1)[1]
        assert line in out, line


def test_x_stops_at_the_first_failing_race_and_junitxml_reports_each(pytester):
    _folder(pytester, {"scenarios/a.toml": WRONG, "scenarios/b.toml": WRONG})
    _run(pytester, "-x", "scenarios").assert_outcomes(passed=1, failed=1)
    result = _run(pytester, "--junitxml=out.xml", "scenarios")
    result.assert_outcomes(passed=2, failed=2)
    cases = ET.parse(pytester.path / "out.xml").getroot().iter("testcase")
    by_name = {(c.get("classname"), c.get("name")): c for c in cases}
    assert set(by_name) == {("scenarios.a.toml", "contract"), ("scenarios.a.toml", "today"),
                            ("scenarios.b.toml", "contract"), ("scenarios.b.toml", "today")}
    failed = by_name[("scenarios.a.toml", "today")].find("failure")
    assert "toolu_01.process_starts: expected 1, got 2" in failed.text
    props = {p.get("name"): p.get("value") for p in by_name[("scenarios.a.toml", "contract")].iter("property")}
    assert props["reproduce"] == "toolcall-sim run scenarios/a.toml --variant contract --seed 41"
    assert props["variant"] == "contract" and props["seed"] == "41" and len(props["trace_sha256"]) == 64


API_TESTS = '''
from toolcall_sim.api import Scenario, lose, on, takeover


def lost():
    world = Scenario("lost start answer").chat("chat-1").execute("toolu_01", "make", runs_for="20m", timeout="30m")
    return world.fault(lose(route="start", tool_call="toolu_01", direction="response"))


def test_passes(toolcall_run):
    assert toolcall_run(lost(), variant="contract").call("toolu_01").process_starts == 1


def test_fails(toolcall_run):
    toolcall_run(lost(), variant="contract")
    assert toolcall_run(lost(), variant="today", until="20m").call("toolu_01").process_starts == 1


def test_explores(toolcall_explore):
    assert toolcall_explore(variant="today", max_states=300).counterexamples


def test_noop(toolcall_run):  # a takeover to the owner already: FaultDidNothing fails it
    world = Scenario("noop").world(replicas=2).chat("chat-1").execute("toolu_01", "make", runs_for="1m", timeout="30m")
    toolcall_run(world.fault(takeover("replica-2", when=on("request_sent", tool_call="toolu_01"))), variant="contract")
'''


def test_api_test_cases_carry_the_reproduce_commands_in_junitxml(pytester):
    """A test built with the API (``toolcall_run``) carries in junit.xml the properties a
    scenario item carries, the same reproduce command text, one set per run, passed or
    failed; ``toolcall_explore`` a replay command per counterexample."""
    pytester.makepyfile(test_api_race=API_TESTS)
    result = _run(pytester, "--junitxml=out.xml")
    result.assert_outcomes(passed=2, failed=2)
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "out.xml").getroot().iter("testcase")}

    def props(name: str) -> list[tuple[str, str]]:
        return [(p.get("name"), p.get("value")) for p in cases[name].iter("property")]

    (scenario, variant, seed, sha, reproduce) = props("test_passes")
    assert scenario == ("scenario", "lost start answer") and variant == ("variant", "contract")
    assert sha[0] == "trace_sha256" and len(sha[1]) == 64
    assert reproduce[0] == "reproduce" and reproduce[1].startswith("toolcall-sim run ")
    assert reproduce[1].endswith(f"lost_start_answer.toml --variant contract --seed {seed[1]}")
    failed = [value for name, value in props("test_fails") if name == "reproduce"]
    assert len(failed) == 2 and failed[1].endswith("--variant today --seed 1 --until 20m")
    assert cases["test_fails"].find("failure") is not None
    # the same text a scenario item's reproduce property has: toolcall-sim run FILE --variant V --seed S
    replays = [value for name, value in props("test_explores") if name == "reproduce"]
    assert replays and all(v.startswith("toolcall-sim replay ") and v.endswith(".json") for v in replays)
    # a run that fails with FaultDidNothing still names its command
    (noop,) = [value for name, value in props("test_noop") if name == "reproduce"]
    assert "FaultDidNothing" in cases["test_noop"].find("failure").get("message")
    assert noop.startswith("toolcall-sim run ") and noop.endswith("noop.toml --variant contract --seed 1")


def test_variant_and_seed_options(pytester):
    _folder(pytester, {"scenarios/lost_start_answer.toml": LOST})
    out = _run(pytester, "--collect-only", "-q", "--toolcall-variant", "contract", "--toolcall-seeds", "1-2,5",
               "scenarios").outlines
    assert [line for line in out if "::" in line] == [
        f"scenarios/lost_start_answer.toml::contract[seed={s}]" for s in (1, 2, 5)]
    _run(pytester, "--toolcall-variant", "contract", "--toolcall-seeds", "1-3", "scenarios").assert_outcomes(passed=3)
    bad = _run(pytester, "--toolcall-variant", "tomorrow", "scenarios")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--toolcall-variant: " in bad.stderr.str() and "tomorrow" in bad.stderr.str()
    bad = _run(pytester, "--toolcall-seeds", "5-1", "scenarios")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "--toolcall-seeds: '5-1' is no range" in bad.stderr.str()


def test_pinned_expectations_run_at_the_files_seed_alone_and_say_so(pytester):
    """``seeds = "pinned"`` in an ``[expect.<variant>]``: under ``--toolcall-seeds`` that
    variant runs once, at the file's seed, named so, and the terminal summary lists it;
    the other variants run at each seed; without the option nothing changes."""
    pinned = LOST.replace("[expect.today]\n", '[expect.today]\nseeds = "pinned"\n')
    assert pinned != LOST
    _folder(pytester, {"scenarios/lost.toml": pinned})
    out = _run(pytester, "--collect-only", "-q", "--toolcall-seeds", "1-2", "scenarios").outlines
    assert [line for line in out if "::" in line] == [
        "scenarios/lost.toml::contract[seed=1]", "scenarios/lost.toml::contract[seed=2]",
        "scenarios/lost.toml::today[seed=41,pinned]"]
    result = _run(pytester, "--toolcall-seeds", "1-2", "--junitxml=out.xml", "scenarios")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(['toolcall-sim: 1 scenario item(s) ran at their file\'s own seed only, not at '
                                 '--toolcall-seeds (their expectations say seeds = "pinned"): '
                                 'scenarios/lost.toml::today (seed 41)'])
    case = next(c for c in ET.parse(pytester.path / "out.xml").getroot().iter("testcase")
                if c.get("name") == "today[seed=41,pinned]")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["seed"] == "41" and props["reproduce"].endswith("--variant today --seed 41")
    plain = _run(pytester, "scenarios")
    plain.assert_outcomes(passed=2)
    assert "toolcall-sim:" not in plain.stdout.str()
    _folder(pytester, {"scenarios/lost.toml": pinned.replace('seeds = "pinned"', 'seeds = "some"')})
    bad = _run(pytester, "scenarios")
    bad.assert_outcomes(errors=1)
    assert "scenarios/lost.toml: expect.today.seeds: expected one of any, pinned, got 'some'" in bad.stdout.str()


def test_a_bad_scenario_is_a_one_line_collection_error(pytester):
    _folder(pytester, {"scenarios/bad.toml": LOST.replace('timeout = "20m"', 'timeout = "0s"'),
                       "scenarios/broken.toml": "name = \n"})
    result = _run(pytester, "scenarios")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "scenarios/bad.toml: turns[0].tool_calls[0].timeout: must be longer than 0s" in out
    assert "scenarios/broken.toml: syntax: " in out
    assert "Traceback" not in out


def test_the_ini_folder_runs_with_the_testpaths(pytester):
    """``toolcall_scenarios`` names a folder of scenario files (not called scenarios):
    plain ``pytest`` runs it beside the testpaths; an explicit path runs only itself."""
    _folder(pytester, {"races/lost.toml": LOST, "tests/test_nothing.py": "def test_ok():\n    pass\n"})
    pytester.makeini("[pytest]\ntestpaths = tests\ntoolcall_scenarios = races\n")
    _run(pytester).assert_outcomes(passed=3)
    _run(pytester, "tests").assert_outcomes(passed=1)


def test_pinned_trace_hashes_fail_when_moved_and_repin(pytester, monkeypatch):
    _folder(pytester, {"scenarios/lost.toml": LOST,
                       "pins.json": json.dumps({"lost/contract": "0" * 64})})
    pytester.makeini("[pytest]\ntoolcall_trace_hashes = pins.json\n")
    result = _run(pytester, "scenarios")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert f"trace hash moved: lost/contract is pinned to {'0' * 64} in pins.json" in out
    assert "trace hash: lost/today has no pinned hash in pins.json" in out
    monkeypatch.setenv("TOOLCALL_SIM_REPIN", "1")
    _run(pytester, "scenarios").assert_outcomes(passed=2)
    monkeypatch.delenv("TOOLCALL_SIM_REPIN")
    _run(pytester, "scenarios").assert_outcomes(passed=2)
    assert set(json.loads((pytester.path / "pins.json").read_text())) == {"lost/contract", "lost/today"}


@pytest.mark.slow
def test_scenario_items_run_under_xdist(pytester, monkeypatch):
    """In two worker processes (a child pytest, as the project's suite runs), every item
    is collected and run once. (Without hypothesis's plugin, which imports all of
    hypothesis in each of the child's three processes, a quarter of its CPU: no item
    here is a hypothesis test.)"""
    # The child imports this checkout's sim/, wherever the installed package points.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    _folder(pytester, {"scenarios/a.toml": LOST, "scenarios/b.toml": WRONG})
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:hypothesispytest", "-n", "2", "scenarios")
    result.assert_outcomes(passed=3, failed=1)
    assert "toolu_01.process_starts: expected 1, got 2" in result.stdout.str()


def test_the_entry_point_is_declared_and_resolves_when_installed():
    """pyproject.toml registers the plugin under our name, ``toolcall_sim`` (``-p
    no:toolcall_sim`` turns it off); the installed metadata has it and it loads this module."""
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert eps == {"toolcall_sim": "toolcall_sim.pytest_plugin"}
    installed = [ep for ep in importlib.metadata.entry_points(group="pytest11") if ep.value == "toolcall_sim.pytest_plugin"]
    import toolcall_sim.pytest_plugin

    assert [ep.name for ep in installed] == ["toolcall_sim"]
    assert installed[0].load() is toolcall_sim.pytest_plugin


def test_the_projects_suite_loads_the_plugin_once(request):
    """This suite runs with the plugin (the installed entry point), registered once."""
    import toolcall_sim.pytest_plugin

    manager = request.config.pluginmanager
    assert manager.is_registered(toolcall_sim.pytest_plugin)
    assert [name for name, plugin in manager.list_name_plugin()
            if plugin is toolcall_sim.pytest_plugin] == ["toolcall_sim"]


def test_hypothesis_profile_from_the_environment(pytester, monkeypatch):
    pytester.makepyfile(test_p="from hypothesis import settings\n\ndef test_p():\n"
                               "    assert settings().max_examples == 1000\n")
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "long")
    _run(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "nope")
    bad = _run(pytester)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "HYPOTHESIS_PROFILE: no profile 'nope'" in bad.stderr.str()


def test_explore_fixture(toolcall_explore):
    """A small search: the contract holds every safety property as far as it went; today
    violates some, each with a counterexample file that replays."""
    contract = toolcall_explore(variant="contract", max_states=300)
    assert contract.states >= 300 and not contract.exhausted and contract.counterexamples == []
    assert set(contract.verdicts.values()) == {"holds so far"}
    contract.assert_holds()
    today = toolcall_explore(variant="today", max_states=300)
    violated = sorted(p for p, verdict in today.verdicts.items() if verdict == "violated")
    assert violated == sorted(c["property"] for c in today.counterexamples) and violated
    with pytest.raises(AssertionError, match="violated in \\d+ steps"):
        today.assert_holds()
    file = today.counterexamples[0]["counterexample"]
    replay = subprocess.run([sys.executable, "-m", "toolcall_sim", "replay", file], cwd=ROOT, capture_output=True, text=True)
    assert replay.returncode == 1, replay.stdout + replay.stderr  # the violation again


def test_swarm_fixture(toolcall_swarm):
    swarm = toolcall_swarm(seeds=[1, 2], variant="contract")
    assert swarm.report["seeds_run"] == 2 and swarm.report["variant"] == "contract"
    swarm.assert_no_failures()
