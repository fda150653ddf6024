"""The output of ``toolcall-sim explore``: its first line, its JSON shape, and its summary.

Theory of operation
-------------------
The command runs ``toolcall_sim.model.explore.explore``, writes a counterexample file per violation,
and hands this module the result and where the files went. ``explore_json`` is the one
shape of the outcome (``--json`` prints it; the text summary is rendered from the same
document, so the two never tell different stories). The summary says how much was
searched (states, transitions, depth, speed, bounds), whether the search was exhausted,
and for every violation its tag (a new VIOLATION, a known finding, or a residual risk by
name), its shortest path of labelled actions and the command that replays it.

``states_per_s`` is the only wall-clock figure; it reports speed and never enters a run.
"""

from __future__ import annotations


def first_line(variant: str, world: str, out_dir) -> str:
    """Printed before the search starts (long searches should say where files go)."""
    in_world = "" if world == "default" else f" in {world}"
    return f"explore {variant}{in_world}: counterexamples go to {out_dir}\n"


def violation_json(v, counterexample: str, scenario: str | None = None, not_written: str | None = None) -> dict:
    """One violation as the JSON shape lists it: ``v`` is a ``toolcall_sim.model.explore`` violation,
    ``counterexample`` the file it was saved to, ``scenario`` the scenario file beside it
    that ``run`` replays (None: ``not_written`` says why there is none)."""
    out = {"property": v.property, "residual_risk": v.residual_risk, "counterexample": counterexample,
           "scenario": scenario, "steps": len(v.path), "detail": v.detail, "actions": [a.label() for a in v.path]}
    if scenario is None and not_written is not None:
        out["scenario_not_written"] = not_written
    return out


def _files(v: dict) -> list[str]:
    """The lines naming a violation's files and the commands that replay them."""
    lines = [f"    counterexample: {v['counterexample']} (toolcall-sim replay {v['counterexample']})"]
    if v.get("scenario"):
        lines.append(f"    scenario: {v['scenario']} (toolcall-sim run {v['scenario']})")
    elif v.get("scenario_not_written"):
        lines.append(f"    no scenario file: {v['scenario_not_written']}")
    return lines


def explore_json(world: str, variant: str, result, elapsed_s: float, violations: list[dict], bounds: dict,
                 out_dir, interrupted: bool, workers: int = 1) -> dict:
    """The JSON shape of an exploration (``toolcall-sim explore --json``). ``workers``
    changes only the speed: every other field is the same for any number of them."""
    return {"world": world, "variant": variant, "states": result.states, "transitions": result.transitions,
            "depth": result.depth, "states_per_s": round(result.states / elapsed_s), "workers": workers,
            "exhausted": result.exhausted, "violations": violations, "bounds": bounds, "out": str(out_dir),
            "interrupted": interrupted}


def summary(doc: dict, *, max_in_flight: str, horizon: str, budgets: dict[str, int], max_states: int,
            wrote_graph: bool, known_findings) -> str:
    """The text after the first line: ``doc`` is ``explore_json``'s document; the flags
    are echoed as the user wrote them (``max_in_flight``, ``horizon``); ``known_findings``
    names the residual risks that are known findings (model/properties/risks.py)."""
    lines = []
    states = doc["states"]
    if doc["interrupted"]:
        lines.append(f"  interrupted (Ctrl-C) at {states} states: the summary so far"
                     + (", no state graph written" if wrote_graph else ""))
    lines.append(f"  {states} unique states, {doc['transitions']} transitions, "
                 f"depth {doc['depth']}, {doc['states_per_s']} states/s"
                 + (f" on {doc['workers']} processes" if doc.get("workers", 1) > 1 else ""))
    lines.append(f"  max in flight {max_in_flight}, horizon {horizon}, budgets: "
                 + ", ".join(f"{b} {n}" for b, n in budgets.items())
                 + _unreduced(doc.get("bounds", {})))
    violations = doc["violations"]
    if not violations:
        lines.append("  exhausted, no violation" if doc["exhausted"] else
                     "  NOT exhausted (interrupted), no violation so far" if doc["interrupted"] else
                     f"  NOT exhausted (stopped at {max_states} states), no violation so far")
    for v in violations:
        risk = v["residual_risk"]
        tag = ("known finding " if risk in known_findings else "residual risk ") + risk if risk else "VIOLATION"
        lines.append(f"  {tag}: {v['property']} in {v['steps']} steps: {v['detail']}")
        lines.extend(f"    {i:3}. {label}" for i, label in enumerate(v["actions"], 1))
        lines.extend(_files(v))
    if violations and not doc["exhausted"]:
        why = ("on Ctrl-C" if doc["interrupted"] else
               f"at --max-states {max_states}" if states > max_states else "as asked")
        lines.append(f"  search stopped {why} at {states} states, not exhausted")
    elif violations:
        new = sum(1 for v in violations if v["residual_risk"] is None)
        lines.append(f"  exhausted: {new} new finding(s), {len(violations) - new} residual risk(s)")
    return "".join(line + "\n" for line in lines)


def _unreduced(bounds: dict) -> str:
    """What the summary says of a search that left a reduction out (``--reduction``)."""
    if bounds.get("symmetry") is False:
        return "; no reduction: every replica acts (--no-reduction)"
    if bounds.get("partial_order") is False:
        return "; symmetry only: every order of independent steps (--reduction symmetry)"
    return ""


def progress_line(states: int) -> str:
    """The line on stderr every so many states (long searches should show they move)."""
    return f"  ... {states} states\n"


# ---------------------------------------------------------------------------
# The tour (explore without --world: sim/drivers/explore_tour.py)
# ---------------------------------------------------------------------------


def tour_first_line(variant: str, stages: int, max_states: int, out_dir) -> str:
    return (f"explore {variant}: the tour of every small world ({stages} stages of world, time in flight and "
            f"fault kinds, in rounds of growing caps; {max_states} states at most; --world NAME explores one); "
            f"counterexamples go to {out_dir}\n")


def tour_json(variant: str, done, elapsed_s: float, violations: list[dict], out_dir, interrupted: bool,
              max_states: int) -> dict:
    """The JSON shape of a tour: totals, each stage run (its label, round cap, states,
    whether exhausted) and each property's first counterexample."""
    runs = [{"stage": r.stage.label(), "round_cap": r.round_cap, "states": r.result.states,
             "exhausted": r.result.exhausted} for r in done.runs]
    return {"tour": True, "variant": variant, "states": done.states, "max_states": max_states,
            "states_per_s": round(done.states / elapsed_s), "stages_run": len(runs),
            "stages_exhausted": len({r["stage"] for r in runs if r["exhausted"]}),
            "stopped": done.stopped, "runs": runs, "violations": violations, "out": str(out_dir),
            "interrupted": interrupted}


def tour_summary(doc: dict, known_findings) -> str:
    lines = []
    if doc["interrupted"]:
        lines.append(f"  interrupted (Ctrl-C) at {doc['states']} states: the summary so far")
    lines.append(f"  {doc['stages_run']} stage runs, {doc['stages_exhausted']} stages exhausted, "
                 f"{doc['states']} states in all, {doc['states_per_s']} states/s")
    for v in doc["violations"]:
        risk = v["residual_risk"]
        tag = ("known finding " if risk in known_findings else "residual risk ") + risk if risk else "VIOLATION"
        lines.append(f"  {tag}: {v['property']} in {v['steps']} steps ({v['stage']}): {v['detail']}")
        lines.extend(f"    {i:3}. {label}" for i, label in enumerate(v["actions"], 1))
        lines.extend(_files(v))
    new = sum(1 for v in doc["violations"] if v["residual_risk"] is None)
    end = ("stopped as asked" if doc["stopped"] and not doc["interrupted"] else
           f"ended at {doc['max_states']} states" if doc["states"] >= doc["max_states"] else "every stage run")
    lines.append(f"  tour {end}: {new} new finding(s), {len(doc['violations']) - new} residual risk(s)")
    return "".join(line + "\n" for line in lines)


def report_written(report_dir) -> str:
    """The line after the summary when ``--report DIR`` wrote the search's page."""
    return f"report: {report_dir}/index.html (summary.md, report.json, junit.xml, figures/)\n"
