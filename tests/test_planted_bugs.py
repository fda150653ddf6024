"""Every checker is shown able to fail: each planted bug is caught by its property in its
named scenario, and the same scenario under the plain contract has no new finding."""

from __future__ import annotations

import pathlib

import pytest

from toolcall_sim.model import planted_bugs
from toolcall_sim.model import properties as props
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import load

SCENARIOS = pathlib.Path(__file__).resolve().parent.parent / "scenarios"


def _new_findings(scenario: str, variant: str) -> set[str]:
    result = run_scenario(load(SCENARIOS / f"{scenario}.toml"), variant)
    return {v.property for v in result.violations if v.residual_risk is None}


@pytest.mark.parametrize("mutant", planted_bugs.PLANTED_BUGS, ids=lambda m: m.name)
def test_planted_bug_is_caught(mutant):
    """Under contract+<bug> the named property reports a new finding; under contract the
    scenario has none."""
    assert mutant.caught_by in _new_findings(mutant.scenario, f"contract+{mutant.name}")
    assert _new_findings(mutant.scenario, "contract") == set()


def test_every_safety_and_liveness_property_has_a_planted_bug():
    """No checker is left unproven: each always/eventually property catches some bug, or
    the flaw of a rejected design (model/designs.py; tests/test_designs.py proves each
    is caught in its world and scenario, and not under the contract)."""
    from toolcall_sim.model import designs

    caught = {m.caught_by for m in planted_bugs.PLANTED_BUGS} | {d.flaw for d in designs.DESIGNS if d.flaw}
    checked = {p.name for p in props.PROPERTIES if p.kind in ("always", "eventually")}
    assert checked - caught == set()


def test_variant_names_resolve():
    """Every listed variant resolves to rule objects; unknown names are refused."""
    for name in planted_bugs.variant_names():
        planted_bugs.resolve(name)
    with pytest.raises(planted_bugs.UnknownVariant):
        planted_bugs.resolve("contract+no-such-bug")
    with pytest.raises(planted_bugs.UnknownVariant):
        planted_bugs.resolve("tomorrow")


@pytest.mark.slow
def test_sometimes_properties_are_reached_somewhere():
    """Every sometimes-property is reached by at least one shipped scenario under the
    contract, so none of them is vacuous."""
    unreached = {p.name for p in props.PROPERTIES if p.kind == "sometimes"}
    for path in sorted(SCENARIOS.glob("*.toml")):
        result = run_scenario(load(path), "contract")
        report = props.evaluate(result.world.trace, result.world.system)
        unreached &= set(report.unreached)
        if not unreached:
            break
    assert unreached == set()


@pytest.mark.parametrize(
    "scenario,risk",
    [
        ("rr_delayed_retry_across_restart", "age_check_best_effort"),
        ("rr_rollout_mixed_versions", "mixed_coderd_versions"),
        ("rr_false_unknown_after_restart", "false_unknown_after_agent_start"),
        ("rr_cancel_within_margin_after_restart", "unknown_cancel_work_later"),
        ("rr_delayed_cancel_after_restart", "age_check_best_effort"),
        ("rr_stale_request_after_edit", "stale_request_after_edit"),
    ],
)
def test_residual_risk_reported_by_name(scenario, risk):
    """Each residual risk of design section 7 the world can produce is reported by name,
    with its section reference, and is not a new finding."""
    result = run_scenario(load(SCENARIOS / f"{scenario}.toml"), "contract")
    named = [v for v in result.violations + result.report.informational if v.residual_risk == risk]
    assert named and "D7" in props.RESIDUAL_RISKS[risk]
    assert [v for v in result.violations if v.residual_risk is None] == []


def test_incident_evidence_points_at_the_starts():
    """Under today the incident fails at_most_once with evidence: the 36 process starts."""
    result = run_scenario(load(SCENARIOS / "codagt757_incident.toml"), "today")
    (v,) = [v for v in result.violations if v.property == "at_most_once"]
    starts = [result.world.trace[i] for i in v.evidence]
    assert len(starts) == 36 and all(r.get("truth") == "process_started" for r in starts)
    assert v.uuid and v.provider_id == "toolu_01"
