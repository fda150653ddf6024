"""Rule coverage's probes (issue 35): the declared table and the call sites agree, a
probe changes no trace, and a removed branch leaves its rule unreached."""

from __future__ import annotations

import re
from pathlib import Path

from toolcall_sim.model import probes
from toolcall_sim.model.core import Probe, probe

MODEL = Path(probes.__file__).resolve().parent
_CALL = re.compile(r"""\bprobe\(\s*["']([^"']+)["']\s*\)""")


def call_sites() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(MODEL.rglob("*.py")):
        if path.name in ("probes.py", "core.py"):
            continue
        for m in _CALL.finditer(path.read_text()):
            found.setdefault(m.group(1), []).append(str(path.relative_to(MODEL)))
    return found


def test_every_declared_probe_has_a_call_site_and_every_call_site_is_declared():
    sites = call_sites()
    assert set(sites) - set(probes.PROBES) == set(), "call sites with undeclared probe IDs"
    assert set(probes.PROBES) - set(sites) == set(), "declared probes without a call site"


def test_every_probe_call_names_its_id_literally():
    """The call-site check reads literal IDs only, so an ID put together at run time
    (``probe(f"C5.2.{kind}")``) would hide from it: a branch chosen from a table takes its
    probe from a table of probes built with literal IDs (model/chattool/results.py)."""
    any_call = re.compile(r"\bprobe\(")
    for path in sorted(MODEL.rglob("*.py")):
        if path.name in ("probes.py", "core.py"):
            continue
        text = path.read_text()
        assert len(any_call.findall(text)) == len(_CALL.findall(text)), path.relative_to(MODEL)


def test_every_probe_names_a_rule_of_the_contract():
    contract = (MODEL.parent / "docs" / "contract.md").read_text()
    for pid, (rule, branch) in probes.PROBES.items():
        assert pid.startswith(rule + "."), pid
        assert f"### {rule} " in contract, rule
        assert branch
    assert set(probes.UNREACHABLE) <= set(probes.PROBES)


def test_a_probe_is_counted_beside_the_trace_not_in_it():
    from toolcall_sim.model import builder, system
    step = system.initial(builder.WorldConfig())
    b = builder._Builder(step.system, None)
    b.absorb("agent", [probe("A3.no-chat")])
    out = b.finish()
    assert out.records == () and out.probes == ("A3.no-chat",)
    assert type(probe("x")) is Probe


# -- the coverage driver and command -------------------------------------------------

def _swarm_table(seeds: int):
    from toolcall_sim.drivers import coverage as cov
    counts = cov.Coverage()
    cov.run_swarm(counts, seeds)
    return cov.coverage_table(counts)


def test_a_planted_probe_no_driver_reaches_is_reported_and_fails_coverage(monkeypatch, capsys):
    from toolcall_sim.cli.main import main
    monkeypatch.setitem(probes.PROBES, "A3.planted", ("A3", "a branch no run takes"))
    table = _swarm_table(2)
    assert "A3.planted" in table["unreached"]
    code = main(["coverage", "--swarm", "2"])
    out = capsys.readouterr().out
    assert code == 1 and "A3.planted" in out and "NOT LISTED" in out
    # Listed as unreachable with a reason, it no longer fails the command on its own.
    monkeypatch.setitem(probes.UNREACHABLE, "A3.planted", "planted by the test")
    assert "A3.planted" not in _swarm_table(2)["unreached"]


def test_removing_a_probes_branch_leaves_its_rule_unreached(monkeypatch):
    from toolcall_sim.model.chatd import retry
    def missing(table):  # the variants where the retry branch exists and no seed took it
        return {r["probe"]: r for r in table["probes"]}["C1.4.retry-timed-out"]["unreached_in"]
    assert missing(_swarm_table(6)) != ["today", "contract"]  # reached under one at least
    monkeypatch.setattr(retry, "go_retries", lambda outcome: False)  # the retry branch gone
    after = _swarm_table(6)
    assert missing(after) == ["today", "contract"] and "C1.4.retry-timed-out" in after["unreached"]


def test_swarm_counts_do_not_depend_on_workers():
    from toolcall_sim.drivers import coverage as cov
    one, two = cov.Coverage(), cov.Coverage()
    cov.run_swarm(one, 4, workers=1)
    cov.run_swarm(two, 4, workers=2)
    assert one.hits == two.hits and one.witnesses == two.witnesses


def test_explorer_counts_are_deterministic_and_find_the_same_states():
    from toolcall_sim.drivers import coverage as cov
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds
    config = worlds.build("default", "contract")
    runs = []
    for _ in range(2):
        search = cov._counting_search(config, ex.Bounds(), 3000)
        search.run()
        runs.append((search.finish().states, dict(search.ctx.probe_counts)))
    assert runs[0] == runs[1] and runs[0][1]
    assert runs[0][0] == ex.explore(config, ex.Bounds(), max_states=3000).states


# -- rule-level accounting: every heading of docs/contract.md --------------------------

def contract_headings() -> list[str]:
    text = (MODEL.parent / "docs" / "contract.md").read_text()
    return re.findall(r"^### (\S+) ", text, re.M)


def test_every_contract_heading_is_probed_a_story_proof_or_says_why_not():
    headings = contract_headings()
    assert len(headings) == len(set(headings)) and "A2.4" in headings and "D-US10" in headings
    probed = set(probes.probed_rules())
    tables = {"NOT_A_BRANCH": set(probes.NOT_A_BRANCH), "NOT_YET_PROBED": set(probes.NOT_YET_PROBED),
              "STORY_PROOFS": set(probes.STORY_PROOFS), "RULE_VARIANTS": set(probes.RULE_VARIANTS)}
    for name, keys in tables.items():
        assert keys <= set(headings), f"model/probes.py {name} names no heading of docs/contract.md: " \
                                      f"{sorted(keys - set(headings))}"
    accounted = probed | tables["NOT_A_BRANCH"] | tables["NOT_YET_PROBED"] | tables["STORY_PROOFS"]
    missing = [h for h in headings if h not in accounted]
    assert not missing, f"headings neither probed nor in NOT_A_BRANCH / NOT_YET_PROBED: {missing}"
    assert not probed & tables["NOT_A_BRANCH"], "a rule with probes has a branch: take it out of NOT_A_BRANCH"
    assert not probed & tables["NOT_YET_PROBED"], \
        f"probed now, take out of NOT_YET_PROBED: {sorted(probed & tables['NOT_YET_PROBED'])}"
    assert not tables["NOT_A_BRANCH"] & tables["NOT_YET_PROBED"]
    assert not tables["STORY_PROOFS"] & (tables["NOT_A_BRANCH"] | probed)
    assert all(probes.rule_status(h)[0] != "unknown" for h in headings)


def test_story_proofs_variants_and_swarm_gaps_name_declared_probes():
    named = {p for ps in probes.STORY_PROOFS.values() for p in ps}
    assert named <= set(probes.PROBES), sorted(named - set(probes.PROBES))
    assert set(probes.SWARM_GAPS) <= set(probes.PROBES)
    assert set(probes.PROBE_VARIANTS) <= set(probes.PROBES)
    for variants in (*probes.RULE_VARIANTS.values(), *probes.PROBE_VARIANTS.values()):
        assert variants and set(variants) <= set(probes.BOTH)
    assert probes.variants_of("A3.never-received") == ("contract",)
    assert probes.variants_of("A2.4.no-headers") == probes.BOTH == probes.variants_of("C1.4.done")


def test_contract_heading_test_fails_on_a_planted_heading(monkeypatch):
    """The heading test is not vacuous: a rule heading no table accounts for fails it."""
    import pytest
    monkeypatch.setattr(__import__(__name__), "contract_headings", lambda: ["A2.4", "Z9.9"])
    with pytest.raises(AssertionError):
        test_every_contract_heading_is_probed_a_story_proof_or_says_why_not()


# -- the coverage table: variants, rules, stories, swarm gaps ---------------------------

# us10: a start slow to arrive, the interrupt's cancel first (A3.never-received, then
# A2.4.found-canceled); us02: the cancel kills the young foreground process.
FEW = {"us10_interrupt_before_start_arrives", "us02_interrupt_stops_foreground"}


def _scenario_table(names=FEW):
    from toolcall_sim.drivers import coverage as cov
    counts = cov.Coverage()
    cov.run_scenarios(counts, names=names)
    return cov.coverage_table(counts)


def _without_probes(monkeypatch, which):
    """The cancel handler (model/agent/routes.py's ``_cancel``) no longer emits the probes
    ``which`` accepts: as if their branch were gone."""
    from toolcall_sim.model.agent import routes
    from toolcall_sim.model.core import Probe as P
    handler = routes._cancel

    def cancel(*args):
        state, effects = handler(*args)
        return state, [e for e in effects if not (isinstance(e, P) and which(e.rule))]
    monkeypatch.setattr(routes, "_cancel", cancel)


def test_a_removed_branch_leaves_its_probe_its_rule_and_its_story_unreached(monkeypatch):
    before = _scenario_table()
    rows = {r["probe"]: r for r in before["probes"]}
    assert rows["A3.never-received"]["unreached_in"] == [] and "A3.never-received" not in before["unreached"]
    stories = {s["story"]: s for s in before["stories"]}
    assert stories["D-US10"]["witnessed"] and stories["D-US2"]["witnessed"]
    rules = {r["rule"]: r for r in before["rules"]}
    assert rules["A3"]["unreached_in"] == [] and rules["A3"]["variants"] == ["contract"]

    _without_probes(monkeypatch, lambda pid: pid == "A3.never-received")
    after = _scenario_table()
    assert "A3.never-received" in after["unreached"]
    assert {r["probe"]: r for r in after["probes"]}["A3.never-received"]["unreached_in"] == ["contract"]
    d_us10 = {s["story"]: s for s in after["stories"]}["D-US10"]
    assert not d_us10["witnessed"] and d_us10["unreached"] == ["A3.never-received"]

    _without_probes(monkeypatch, lambda pid: pid.startswith("A3."))  # the whole cancel rule
    rules = {r["rule"]: r for r in _scenario_table()["rules"]}
    assert rules["A3"]["unreached_in"] == ["contract"]


def test_a_listed_unreachable_probe_does_not_fail_and_keeps_its_reason(monkeypatch):
    table = _scenario_table()
    assert "A3.bad-json" in table["unreached"]
    monkeypatch.setitem(probes.UNREACHABLE, "A3.bad-json", "listed by the test")
    table = _scenario_table()
    assert "A3.bad-json" not in table["unreached"] and "A3.bad-json" in table["unreached_listed"]
    from toolcall_sim.reports.coverage import format_coverage
    assert "A3.bad-json (A3: cancel body not decodable -> 400) under contract: listed by the test" \
        in format_coverage(table)


def test_swarm_gaps_are_judged_per_variant_and_say_why(monkeypatch):
    from toolcall_sim.drivers import coverage as cov
    from toolcall_sim.reports.coverage import unexplained_gaps
    counts = cov.Coverage()
    cov.run_scenarios(counts, names={"us09_forged_requests"})
    cov.run_swarm(counts, 2)
    gaps = {(g["probe"], g["variant"]): g for g in cov.coverage_table(counts)["swarm_gaps"]}
    # us09 forges a cancel with another chat's ID; the swarm crafts no cancel
    assert gaps[("A3.wrong-id", "contract")]["reason"] == probes.SWARM_GAPS["A3.wrong-id"]
    assert ("A3.wrong-id", "today") not in gaps  # the cancel route exists under the contract only
    monkeypatch.delitem(probes.SWARM_GAPS, "A3.wrong-id")
    table = cov.coverage_table(counts)
    assert any(g["probe"] == "A3.wrong-id" for g in unexplained_gaps(table))


def test_strict_swarm_needs_both_drivers_and_fails_on_an_unexplained_gap(monkeypatch, capsys):
    from toolcall_sim.cli.main import main
    assert main(["coverage", "--swarm", "2", "--strict-swarm"]) == 2
    capsys.readouterr()


def test_a_probe_only_the_swarm_reaches_is_a_scenario_gap():
    from toolcall_sim.drivers import coverage as cov
    counts = cov.Coverage()
    cov.run_scenarios(counts, names={"us02_interrupt_stops_foreground"})
    cov.run_swarm(counts, 3)
    table = cov.coverage_table(counts)
    gaps = {(g["probe"], g["variant"]) for g in table["scenario_gaps"]}
    rows = {r["probe"]: r for r in table["probes"]}
    for pid, variant in gaps:
        assert rows[pid]["hits"]["scenarios"][variant] == 0 and rows[pid]["hits"]["swarm"][variant] > 0
    assert ("A2.4.wait-pending", "contract") in gaps  # seeds 1..3 wait on a pending run; us02 does not
