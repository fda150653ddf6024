"""Every shipped scenario meets its expectations under both variants (the stories of the
design's user stories and the CODAGT-757 incident, as runs)."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from sim.run import run_scenario
from sim.scenario import load

SCENARIOS = sorted((pathlib.Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))

# Every shipped scenario's trace hash under both variants. A change that means to keep
# behaviour (a refactor) keeps every hash; one that means to change it re-pins them with
#   TOOLCALL_SIM_REPIN=1 python -m pytest tests/test_scenarios.py
# and says in its commit why they moved.
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "scenario_hashes.json"
_PINNED = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
_SEEN: dict[str, str] = {}


@pytest.mark.parametrize("variant", ["today", "contract"])
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_meets_expectations(path, variant):
    """The scenario's [expect.<variant>] holds (with none: no property is violated)."""
    result = run_scenario(load(path), variant)
    assert result.expectation_failures() == []
    key = f"{path.stem}/{variant}"
    _SEEN[key] = result.trace_sha256
    if os.environ.get("TOOLCALL_SIM_REPIN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps({**_PINNED, **_SEEN}, indent=1, sort_keys=True) + "\n")
    else:
        assert _PINNED.get(key) == result.trace_sha256, f"{key}: trace hash moved (see GOLDEN)"


@pytest.mark.slow
def test_incident_numbers():
    """The incident: 36 starts in 9 h and no result under today; one start under the
    contract, and past 10 h one timed_out result with the process still running."""
    root = SCENARIOS[0].parent
    today = run_scenario(load(root / "codagt757_incident.toml"), "today").tool_call_rows()[0]
    assert (today["process_starts"], today["results"]) == (36, [])
    contract = run_scenario(load(root / "codagt757_incident.toml"), "contract").tool_call_rows()[0]
    assert (contract["process_starts"], contract["results"]) == (1, [])
    past = run_scenario(load(root / "codagt757_incident_past_timeout.toml"), "contract").tool_call_rows()[0]
    assert past["process_starts"] == 1 and [r["kind"] for r in past["results"]] == ["timed_out"]
    assert past["processes_running_at_end"] == 1
