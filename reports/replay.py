"""The output of ``toolcall-sim replay``: the verdict of a replay and its JSON shape.

Theory of operation
-------------------
``toolcall_sim.drivers.counterexample.replay`` hands over a ``Replayed``: whether the violation reproduced,
how many of the actions applied, where they stopped fitting if they did, and the trace
hash next to the one the file recorded. The verdict is one of three (the exit code of the
command says the same): REPRODUCED, not reproduced (every action applied and the violation
is gone), or DOES NOT FIT (an action stopped applying, so nothing is said about the
violation). The second line compares the trace hash with the recorded one.
"""

from __future__ import annotations

from dataclasses import asdict


def replay_text(r) -> str:
    """The two lines ``toolcall-sim replay`` prints for the ``Replayed`` ``r``."""
    what = r.property + (f" (residual risk {r.residual_risk})" if r.residual_risk else "") if r.property else "no property"
    if r.outcome == "does_not_fit":
        verdict = (f"DOES NOT FIT: the replay stopped fitting at {r.mismatch}; {r.applied}/{r.steps} actions "
                   f"applied, so it says nothing about {what} (exit 3)\n")
    else:
        verdict = f"{'REPRODUCED' if r.reproduced else 'not reproduced'}: {what}; {r.applied}/{r.steps} actions applied\n"
    same = "same" if r.expected_sha256 == r.trace_sha256 else f"differs from {r.expected_sha256}"
    return verdict + f"trace sha256 {r.trace_sha256} ({same})\n"


def replay_json(r) -> dict:
    """The JSON shape of a replay (``toolcall-sim replay --json``): every field of the
    ``Replayed``, its violations as the properties write them, and its outcome."""
    out = asdict(r)
    out["violations"] = [v.to_json() for v in r.violations]
    out["outcome"] = r.outcome
    return out


def replay_report_written(report_dir) -> str:
    """The line after the verdict when ``--report DIR`` wrote the replay's page."""
    return f"report: {report_dir}/index.html (summary.md, report.json, figures/)\n"
