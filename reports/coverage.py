"""What ``toolcall-sim coverage`` prints: the rule coverage table (issue 35).

Theory of operation
-------------------
sim/drivers/coverage.py ``coverage_table`` gives plain values; this module only renders
them: a text table (one row per declared probe: rule, probe, hits per driver and variant,
the smallest witness), the probes never reached with model/probes.py's reason where one is
listed, and the unreached unlisted ones that make the command exit 1; or the same as JSON.
"""

from __future__ import annotations

from toolcall_sim.reports.json_text import json_text

_SHORT = {"today": "T", "contract": "C"}


def format_coverage(table: dict) -> str:
    lines = ["rule coverage (model/probes.py):"]
    for d in table["drivers"]:
        lines.append(f"  {d['driver']}: {d['ran']}")
    drivers = [d for d in ("scenarios", "swarm", "explore") if any(d in r["hits"] for r in table["probes"][:1])]
    head = f"  {'probe':<24} " + " ".join(f"{d + ' T/C':>17}" for d in drivers) + "  first reached by"
    lines += ["", head]
    for r in table["probes"]:
        cells = " ".join(f"{_pair(r['hits'].get(d, {})):>17}" for d in drivers)
        witness = r["witness"].get("scenarios") or r["witness"].get("swarm") or r["witness"].get("explore") or "-"
        lines.append(f"  {r['probe']:<24} {cells}  {witness}")
    lines.append("")
    lines.append(f"  {table['reached']} of {table['declared']} probes reached"
                 + "".join(f"; {d}: {_reached_by(table, d)}" for d in drivers))
    never = [r for r in table["probes"] if not r["reached"]]
    if never:
        lines.append("  never reached:")
        for r in never:
            why = r["unreachable"] or "NOT LISTED as unreachable (model/probes.py UNREACHABLE)"
            lines.append(f"    {r['probe']} ({r['rule']}: {r['branch']}): {why}")
    if table["undeclared_hits"]:
        lines.append(f"  probes hit but not declared: {', '.join(table['undeclared_hits'])}")
    return "\n".join(lines) + "\n"


def coverage_json(table: dict) -> str:
    return json_text(table)


def _pair(per_variant: dict) -> str:
    return "/".join(str(per_variant.get(v, "-")) for v in ("today", "contract"))


def _reached_by(table: dict, driver: str) -> int:
    return sum(1 for r in table["probes"] if any(r["hits"].get(driver, {}).values()))
