"""Human output of a run: a short story per tool call, then the verdict and trace hash."""

from __future__ import annotations

from model.properties import KNOWN_FINDINGS


def story(result) -> str:
    lines = [
        f"scenario {result.scenario.name} under {result.variant} (seed {result.seed}), "
        f"{result.until_ms / 3_600_000:g}h simulated, {len(result.world.trace)} trace records",
    ]
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
