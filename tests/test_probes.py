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
