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
    before = _swarm_table(6)
    assert "C1.4.retry-timed-out" not in before["unreached"]
    monkeypatch.setattr(retry, "go_retries", lambda outcome: False)  # the retry branch gone
    assert "C1.4.retry-timed-out" in _swarm_table(6)["unreached"]


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
