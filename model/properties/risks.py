"""The named classes a violation can belong to when it is not a new finding: the residual
risks the design documents (docs/contract.md D7) and the known findings about
the contract that stand after the fixes.

Theory of operation
-------------------
Each class is a name and the sentence a report prints for it, with its reference. A
residual risk is the design's accepted cost; a known finding is a real violation (a
scenario expects it under ``violations``) that is named so a swarm or a search reports it
as known instead of as new (``is_known_finding``). How each class is recognised lives in
``toolcall_sim.model.properties.classify``; this module is data only, so ``Violation`` can say whether
it is a known finding without importing the recognizers.
"""

from __future__ import annotations

RESIDUAL_RISKS = {
    "age_check_best_effort": (
        "docs/contract.md D7: the age check is best effort; a request delayed longer than the "
        "2 s margin right after an agent restart can run a second time"
    ),
    "mixed_coderd_versions": (
        "docs/contract.md D7: mixed coderd versions during a rollout; a header-less request from an "
        "old coderd ran while the interrupt reports not run"
    ),
    "unknown_cancel_work_later": (
        "docs/contract.md D7: a cancel the agent cannot answer for sure (a slow agent, or a cancel "
        "landing within the margin right after an agent start) turns into unknown, and the work may still happen "
        "later; US10's never-runs promise comes only with a recorded cancel"
    ),
    "stale_request_after_edit": (
        "docs/contract.md D7: a stale request for a tool call resolved without a cancel (a message edit "
        "that discards the branch, Q4) can still act if it arrives before the chat's next message; same as "
        "today, a Q4 follow-up"
    ),
    "false_unknown_after_agent_start": (
        "docs/contract.md D7: false unknown; a tool call committed shortly before the agent started "
        "gets agent_started_after_tool_call although no earlier agent received it"
    ),
    "duplicate_ids_without_cancel": (
        "docs/contract.md C3.2: calls of one message sharing a provider ID share one UUID and get a cancel "
        "only when every copy gets the same one (Go's interruptedToolCalls); otherwise none is sent, each copy "
        "keeps the generic result and its foreground process runs on"
    ),
}

# Findings about the contract itself that stand after the fixes: real violations, so a
# scenario expects them under ``violations``, but each is recognised and named like a
# residual risk so a swarm or a search reports it as known instead of as new.
KNOWN_FINDINGS = {
    "run_age_counts_from_record": (
        "scenarios/finding_slow_spawn_timed_out.toml: run age counts from the agent's record, not from the "
        "process start (docs/contract.md A4.3), so with a start handler slower than the margin and a second "
        "start waiting on it, chatd commits timed_out for a command that has not run its timeout"
    ),
    "read_failure_after_restart_is_failed": (
        "scenarios/finding_restart_while_waiting.toml: the agent restarts while chatd waits for a foreground "
        "command's output; the restart kills the process, the blocking read and the snapshot both fail before "
        "the execute deadline, and chatd commits failed (exit -1, \"get process output: ...; use process_output "
        "with ID ... to retry\"), as Go's waitForProcess does (coderd/x/chatd/chattool/execute.go), for a "
        "command whose outcome is unknown"
    ),
    "kill_failed_reported_interrupted": (
        "scenarios/finding_interrupt_kill_fails.toml: the agent cannot kill a foreground command's process "
        "group (EPERM), so the interrupt's cancel gets the agent's 500 \"Failed to stop the tool call's "
        "process.\" (docs/contract.md A3, A4.2) and chatd commits the generic interrupted result, which does "
        "not tell the model that the command still runs"
    ),
}


def is_known_finding(v) -> bool:
    """A violation classified as a known finding (not a documented residual risk)."""
    return v.residual_risk in KNOWN_FINDINGS
