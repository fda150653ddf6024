"""The output of ``toolcall-sim run`` and ``incident``: a run's story, its JSON shape, and
the lines of the determinism check.

Theory of operation
-------------------
``toolcall_sim.world.run.run_scenario`` hands over a ``RunResult`` (the scenario, the simpy world with its
trace, the violations and the properties' report); this module only reads it. The story
is one header line, one line per tool call (what it did to the workspace, which results
were committed when), the answers of crafted requests, the verdict of every property
(a known finding, a residual risk and a new violation each named as such), then whether
the scenario's expectations were met, and the trace hash that identifies the run. The
JSON shape carries the same facts for machines, and the agent's end state as a user of its
API would read it (``agent``: the tool call records it holds per chat, by route and by
state, and its processes, running or exited, held or reaped). Neither decides anything: the exit code
comes from ``RunResult.expectation_failures`` in the command.
"""

from __future__ import annotations

from toolcall_sim.model.properties import KNOWN_FINDINGS


def story(result) -> str:
    replay = result.scenario.replay
    when = (f"(seed {result.seed}), {result.until_ms / 3_600_000:g}h simulated" if replay is None else
            f"({len(replay.steps)} steps replayed on the explorer's clock, the last at {result.until_ms} small ms; "
            "times below are small ms / 1000)")
    lines = [f"scenario {result.scenario.name} under {result.variant} {when}, {len(result.world.trace)} trace records"]
    if result.scenario.summary:
        lines.append(f"  {result.scenario.summary}")
    for row in result.tool_call_rows():
        kinds = ", ".join(f"{r['kind']} at {r['committed_at_s']:g}s" for r in row["results"]) or "none"
        effect = (
            f"{row['process_starts']} process start(s)" if row["tool"] == "execute" else f"{row['edits_applied']} edit(s) applied"
        )
        lines.append(f"  {row['chat']} {row['id']} ({row['tool']}, {row['uuid'][:8]}): {effect}; results: {kinds}")
    for rec in result.world.trace:
        if rec.get("kind") == "probe_answer":  # a crafted request's answer (fault kind request)
            lines.append(f"  request {rec['name']} at {rec['t_ms'] / 1000:g}s: {rec['status'] or 'no answer'} {rec['body'][:100]}")
    if result.violations:
        for v in result.violations:
            if v.residual_risk in KNOWN_FINDINGS:
                lines.append(f"  KNOWN FINDING {v.residual_risk} ({v.property}) at {v.at_ms / 1000:g}s: {v.detail}")
            elif v.residual_risk:
                lines.append(f"  RESIDUAL RISK {v.residual_risk} ({v.property}) at {v.at_ms / 1000:g}s: {v.detail}")
            else:
                lines.append(f"  VIOLATION {v.property} at {v.at_ms / 1000:g}s: {v.detail}")
    else:
        lines.append("  no property violated")
    report = result.report
    if report is not None:
        for v in report.informational:
            lines.append(f"  RESIDUAL RISK {v.residual_risk} at {v.at_ms / 1000:g}s: {v.detail}")
        if report.results:
            lines.append(f"  unknown results: {report.unknown_results} of {report.results}")
    failures = result.expectation_failures()
    if failures:
        lines.append("  expectations NOT met:")
        lines.extend(f"    {f}" for f in failures)
    else:
        lines.append("  expectations met")
    lines.append(f"  trace sha256 {result.trace_sha256}")
    return "\n".join(lines) + "\n"


def incident_part(result) -> str:
    """One run of ``toolcall-sim incident``: its story, then a blank line."""
    return story(result) + "\n"


def run_json(result, deterministic: bool = False) -> dict:
    """The JSON shape of a run (``toolcall-sim run --json``); ``deterministic`` adds the
    key ``deterministic: true`` after a passed ``--check-determinism``."""
    report = result.report
    doc = {
        "scenario": result.scenario.name,
        "variant": result.variant,
        "seed": result.seed,
        "trace_sha256": result.trace_sha256,
        "events": len(result.world.trace),
        "sim_time_s": result.until_ms / 1000,
        "tool_calls": result.tool_call_rows(),
        "violations": [v.to_json() for v in result.violations],
        "residual_risks": [v.to_json() for v in (report.informational if report else [])],
        "unknown_results": report.unknown_results if report else 0,
        "unreached": list(report.unreached) if report else [],
        "expect_met": not result.expectation_failures(),
        # The agent at the end as a user of its API reads it: records held per chat and
        # the processes of its boot, held or reaped (``RunResult.agent_end_state``).
        "agent": result.agent_end_state(),
    }
    if deterministic:
        doc["deterministic"] = True
    return doc


# -- the determinism check (``run --check-determinism``) -----------------------------------

def determinism_ok(records: int, digest: str) -> str:
    """Both checked processes wrote the same trace: how many records and its hash."""
    return (f"deterministic: {records} records, identical in two processes (PYTHONHASHSEED=1, 2) and this one, "
            f"sha256 {digest}\n")


def traces_part_at(index: int, first: str, second: str) -> str:
    """The checked processes' traces differ first at record ``index``."""
    return f"traces part at record {index}:\n  run 1: {first}\n  run 2: {second}\n"


def traces_part_in_length(first_records: int, second_records: int) -> str:
    """One checked trace is a prefix of the other."""
    return (f"traces part at record {min(first_records, second_records)}: one run has {first_records} records, "
            f"the other {second_records}\n")


def traces_part_here(this_sha256: str, checked_sha256: str) -> str:
    """The two checked processes agree, but this process wrote another trace."""
    return (f"traces part: this process gives sha256 {this_sha256}, the two checked processes "
            f"{checked_sha256}\n")


def checked_run_failed(last_error_line: str) -> str:
    """A checked process did not finish its run (bad input or a harness error)."""
    return f"check-determinism: a checked run failed: {last_error_line}\n"


def report_written(report_dir) -> str:
    """The line after a run's story when ``--report DIR`` wrote its page."""
    return f"report: {report_dir}/index.html (summary.md, report.json, junit.xml, figures/)\n"
