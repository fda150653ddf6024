"""The shipped scenarios as a whole: each is a test of its own, run by the pytest plugin.

Every scenario file of scenarios/ is collected by sim/pytest_plugin.py (pyproject.toml's
``toolcall_scenarios``) as one item per ``[expect.<variant>]``, named
``scenarios/<file>.toml::<variant>``; each meets its expectations and gives its trace
hash pinned in tests/golden/scenario_hashes.json (``toolcall_trace_hashes``). A change
that means to keep behaviour (a refactor) keeps every hash; one that means to change it
re-pins them with

    TOOLCALL_SIM_REPIN=1 python -m pytest scenarios/

and says in its commit why they moved. The tests here check what those items cannot:
that every scenario is run under both variants with a pinned hash, and the incident's
numbers across files.
"""

from __future__ import annotations

import json
import pathlib
import tomllib

import pytest

from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml")) + sorted((ROOT / "scenarios").glob("explore/*.toml"))
GOLDEN = ROOT / "tests" / "golden" / "scenario_hashes.json"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_expects_both_variants(path):
    """The plugin runs a scenario under the variants it expects: each shipped scenario
    says what today and the contract do (66 items for 33 files, as the loop over both
    variants that the plugin replaced)."""
    assert {"today", "contract"} <= {variant for variant, _ in load(path).expect}


def test_pinned_hashes_are_the_collected_items():
    """The project's pytest configuration runs scenarios/ with the pinned hashes, and
    every pinned key is an item the plugin collects (no stale pin, no item without one)."""
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["toolcall_scenarios"] == ["scenarios"]
    assert (ROOT / ini["toolcall_trace_hashes"]).resolve() == GOLDEN
    items = {f"{p.stem}/{variant}" for p in SCENARIOS for variant, _ in load(p).expect}
    assert set(json.loads(GOLDEN.read_text())) == items


@pytest.mark.slow
def test_incident_numbers():
    """The incident: 36 starts in 9 h and no result under today; one start under the
    contract, and past 10 h one timed_out result with the process still running."""
    root = ROOT / "scenarios"
    today = run_scenario(load(root / "codagt757_incident.toml"), "today").tool_call_rows()[0]
    assert (today["process_starts"], today["results"]) == (36, [])
    contract = run_scenario(load(root / "codagt757_incident.toml"), "contract").tool_call_rows()[0]
    assert (contract["process_starts"], contract["results"]) == (1, [])
    past = run_scenario(load(root / "codagt757_incident_past_timeout.toml"), "contract").tool_call_rows()[0]
    assert past["process_starts"] == 1 and [r["kind"] for r in past["results"]] == ["timed_out"]
    assert past["processes_running_at_end"] == 1
