"""The answer first: what a report's headline says, as data (reports/check_*.py word it).

Theory of operation
-------------------
A reviewer reads the first lines of ``summary.md`` and ``index.html`` and stops; so the
report opens with what happened to the tool calls, counted from the scenario runs it
holds (sim/ci/check.py ``_fold_scenario``: process starts of execute calls, committed
results with their kind and time, unknown results, simulated time). Nothing here words
anything or reads a clock: the same runs give the same data.

Rule 1. The headline's subject is the CODAGT-757 incident when the report ran one of its
        scenarios (``INCIDENT``, the scenarios ``toolcall-sim incident`` runs), else the
        one scenario a report ran (``toolcall-sim run --report``), else nothing: a suite
        of many scenarios opens with their table alone (Rule 3).
Rule 2. One clause per variant, ``today`` (what happens now) first, then the others in
        the order the runs came: the first run of the subject
        under that variant that committed a result (what became of the call), else its
        first run (nothing came of it in the time simulated). So the incident reads
        "today: 36 process starts in 9 h, no result" (its nine hours) and, where the
        suite ran it past the 10-hour timeout, "contract: 1 process start, timed_out at
        10 h".
Rule 3. Every scenario run gets a row of counts (starts, results, unknown results,
        simulated hours, whether its expectations held), in the report's order.
Rule 4. Each expected violation says who expected it: per variant and property, the
        scenarios whose ``[expect.<variant>]`` names it (``expected_by``), so a table
        cell reads as an expectation met, not as the contract failing.
"""

from __future__ import annotations

from toolcall_sim.world.inputs import INCIDENT_SCENARIOS

# The incident's scenarios by name (sim/world/inputs.py lists them by file).
INCIDENT = tuple(stem.replace("_", "-") for stem in INCIDENT_SCENARIOS)  # scenario names


def _clause(run: dict) -> dict:
    return {"variant": run["variant"], "scenario": run["scenario"], "process_starts": run["process_starts"],
            "sim_ms": run["sim_ms"], "committed": list(run["committed"])}


def headline(scenarios: list[dict]) -> dict | None:
    """The headline's subject and its clauses (Rules 1, 2), or None."""
    incident = [x for x in scenarios if x["scenario"] in INCIDENT]
    names = list(dict.fromkeys(x["scenario"] for x in scenarios))
    runs = incident or (scenarios if len(names) == 1 else [])
    if not runs:
        return None
    chosen: dict[str, dict] = {}
    for x in runs:
        held = chosen.get(x["variant"])
        if held is None or (not held["committed"] and x["committed"]):
            chosen[x["variant"]] = x
    order = sorted(chosen, key=lambda v: v != "today")  # what happens now first (a stable sort)
    return {"incident": bool(incident), "scenarios": list(dict.fromkeys(x["scenario"] for x in runs)),
            "clauses": [_clause(chosen[v]) for v in order]}


def counts(scenarios: list[dict]) -> list[dict]:
    """Rule 3: a row of counts per scenario run."""
    return [{"scenario": x["scenario"], "variant": x["variant"], "process_starts": x["process_starts"],
             "results": x["results"], "unknown_results": x["unknown_results"], "sim_ms": x["sim_ms"],
             "ok": x["ok"]} for x in scenarios]


def expected_by(findings: list[dict]) -> dict[str, dict[str, list[str]]]:
    """Rule 4: variant -> property -> the scenarios that expect its violation."""
    out: dict[str, dict[str, list[str]]] = {}
    for f in findings:
        if f["status"] == "expected":
            names = out.setdefault(f["variant"], {}).setdefault(f["property"], [])
            if f["where"] not in names:
                names.append(f["where"])
    return out
