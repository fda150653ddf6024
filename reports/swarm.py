"""The swarm report as people and machines read it: ``toolcall-sim swarm``'s text.

Theory of operation
-------------------
sim/drivers/swarm.py runs seeds and returns plain values: one outcome per seed and a report
(``summarize``: failures, residual risks and known findings by name, simulated hours,
unknown results). Everything a user reads about them is written here and nowhere else:
the one-line description of a fault kept in a failure (``describe_fault``, which goes
into the JSON too), the header, the progress and failure lines printed while seeds run,
the final text (``format_report``) and the JSON shape (``format_json``). Nothing here
decides anything: change a word here and no verdict changes.
"""

from __future__ import annotations

import json


def describe_fault(f: dict) -> str:
    """One fault in a few words: ``interrupt chat-1 at 3m12s``, ``delay start toolu_02
    request #1 by 30s``."""
    kind = f["kind"]
    if kind in ("lose", "delay", "handler_panic"):
        m = f["message"]
        text = f"{kind} {m['route']} {m.get('tool_call') or '*'} {m.get('direction', 'request')} #{m.get('nth', 1)}"
        return text + (f" by {f['by']}" if kind == "delay" else "")
    what = {
        "agent_restart": lambda: f"agent_restart (down {f.get('downtime', '0s')})",
        "replica_crash": lambda: f"replica_crash {f['replica']} (down {f.get('downtime', '0s')})",
        "partition": lambda: f"partition {'|'.join(f['between'])} for {f.get('duration', 'ever')}",
        "db_outage": lambda: f"db_outage for {f.get('duration', 'ever')}",
    }.get(kind, lambda: f"{kind} {f.get('chat', 'chat-1')}")()
    if "at" in f:
        return f"{what} at {f['at']}"
    w = f["when"]
    return f"{what} {f.get('offset', '0s')} after {w['event']} {w.get('route', 'start')} {w.get('tool_call') or '*'} #{w.get('nth', 1)}"



def format_header(variant: str, first_seed: int, last_seed: int, out_dir) -> str:
    """The line printed before the first seed runs."""
    return f"swarm under {variant}: seeds {first_seed}..{last_seed}; failures go to {out_dir}\n"


def format_failure_written(failure: dict) -> str:
    """The progress line (stderr) for a failing seed whose files were just written."""
    return f"  ... seed {failure['seed']} FAIL {failure['property']}: {failure['file']}, {failure['counterexample']}\n"


def format_progress(done: int, seeds: int, failures: int) -> str:
    """The progress line (stderr) every few seeds."""
    return f"  ... {done} of {seeds} seeds, {failures} failure(s)\n"


def format_interrupted(done: int, seeds: int, why: str = "Ctrl-C") -> str:
    """Said before the summary of a swarm stopped by Ctrl-C (or ``why`` it stopped)."""
    return f"interrupted ({why}) after {done} of {seeds} seeds: the summary so far\n"


def format_json(report: dict) -> str:
    """The report as one JSON object (``--json``): keys sorted, so it is byte-stable."""
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def format_report(report: dict, header: bool = True) -> str:
    """The report as text: each failure with its kept faults and the commands that
    reproduce it, then one summary line."""
    last = report["first_seed"] + report["seeds_run"] - 1
    lines = [f"swarm under {report['variant']}: seeds {report['first_seed']}..{last}"] if header else []
    for f in report["failures"]:
        also = f" (also: {', '.join(f['other_properties'])})" if f["other_properties"] else ""
        lines.append(f"FAIL seed {f['seed']}: {f['property']} at {f['at_s']:g}s: {f['detail']}{also}")
        lines.append(f"  faults ({f['faults_drawn']} drawn, {len(f['faults'])} kept, {f['tool_calls']} tool call(s)): "
                     + ("; ".join(f["faults"]) or "none"))
        for cmd in f.get("reproduce", []):
            lines.append(f"  reproduce: {cmd}")
    risks = ", ".join(f"{k}={v}" for k, v in report["residual_risks"].items()) or "none"
    known = ", ".join(f"{k}={v}" for k, v in report.get("known_findings", {}).items()) or "none"
    lines.append(
        f"summary: {report['seeds_run']} seed(s), {len(report['failures'])} failure(s), residual risks: {risks}, "
        f"known findings: {known}, "
        f"{report['sim_hours']:g} simulated hours, unknown results {report['unknown_results']}/{report['results']} "
        f"({100 * report['unknown_rate']:.1f}%)"
    )
    return "\n".join(lines) + "\n"
