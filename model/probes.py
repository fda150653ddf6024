"""The declared probes of rule coverage (issue 35): one table, pure data.

Theory of operation
-------------------
A model handler that takes a branch of a numbered rule of docs/contract.md returns a
``Probe(id)`` effect (``core.probe``) beside its other effects. The interpreter
(model/builder.py ``_Builder.absorb``) counts it into ``Step.probes`` and never into the
trace, so no pinned hash and no explored state depends on a probe. The drivers add the
steps' probes up per run (sim/world/simulation.py ``Simulation.probes``), and
``toolcall-sim coverage`` lists, per probe, its hits per driver and variant and the
probes nothing reached. ``PROBES`` maps each probe ID to the rule it belongs to (a
section of docs/contract.md) and the branch it counts; tests/test_probes.py checks that
this table and the ``probe("...")`` call sites in model/ are the same set.
``UNREACHABLE`` names the probes no driver can reach, each with its reason: a probe
neither reached nor listed there fails ``coverage``.
"""

from __future__ import annotations

# probe ID -> (docs/contract.md rule, the branch counted)
PROBES: dict[str, tuple[str, str]] = {
    # A2.2-A2.4 the shared lookup and the middleware (agent/agenttoolcall middleware.go, store.go Lookup)
    "A2.2.stale": ("A2.2", "key of an older message than the chat's latest -> 409 stale_tool_call"),
    "A2.3.not-provable": ("A2.3", "no record, agent not up long enough -> 409 agent_started_after_tool_call"),
    "A2.3.proven-new": ("A2.3", "no record, provably new -> pending record inserted, handler runs once"),
    "A2.4.no-headers": ("A2.4", "request without tool call headers -> runs as before, no record"),
    "A2.4.bad-headers": ("A2.4", "malformed tool call headers -> 400"),
    "A2.4.no-chat": ("A2.4", "tool call headers without a chat ID -> 400"),
    "A2.4.found-canceled": ("A2.4", "record is a canceled marker -> 409 tool_call_canceled"),
    "A2.4.input-mismatch": ("A2.4", "record of another input -> 409 input_mismatch, no wait"),
    "A2.4.replay-recorded": ("A2.4", "done record -> the recorded response replayed"),
    "A2.4.wait-pending": ("A2.4", "pending record -> the request waits for the run"),
    # A3 the cancel route (agent/agenttoolcall cancel.go, handleCancel)
    "A3.bad-headers": ("A3", "cancel with malformed tool call headers -> 400"),
    "A3.no-headers": ("A3", "cancel without tool call headers -> 400"),
    "A3.no-chat": ("A3", "cancel without a chat ID -> 400"),
    "A3.wrong-id": ("A3", "path ID is not the UUID of the request's own key -> 400"),
    "A3.bad-json": ("A3", "cancel body not decodable -> 400"),
    "A3.refused": ("A3", "shared lookup refuses (stale or too old) -> coded 409"),
    "A3.never-received": ("A3", "call never received -> canceled marker, started=false"),
    "A3.already-canceled": ("A3", "record already canceled -> started=false"),
    "A3.waits-pending": ("A3", "record pending -> the cancel waits for the run to publish"),
    "A3.stop-failed": ("A3", "stopper error -> 500 without run-age header"),
    "A3.answered-recorded": ("A3", "recorded response + process state after the stop rule -> 200"),
    # A4.2 the stop rule (agent/agentproc api.go, StopToolCallProcess)
    "A4.2.no-process": ("A4.2", "no process has the call's ID -> process omitted"),
    "A4.2.kill-young": ("A4.2", "running and run age below threshold -> kill"),
    "A4.2.kill-fails": ("A4.2", "kill of a young run fails -> error, run goes on"),
    "A4.2.leave-running": ("A4.2", "running, run age at or over threshold (or threshold 0) -> left running"),
    "A4.2.already-exited": ("A4.2", "process already exited -> reported as it ended"),
    # -- Agent side, the rest of A2 and A4 (model/agent/: middleware, cancel, processes, files, state) --
    # A2.5 a handler that panics (agent/agenttoolcall middleware.go, record.run; httpmw.Recover)
    "A2.5.before-effects": ("A2.5", "handler panics before any side effect -> the record holds the handler-failed 500"),
    "A2.5.after-spawn": ("A2.5", "handler panics after spawning its process -> 500 recorded, the process runs on"),
    "A2.5.recovery-500": ("A2.5", "the creating request of a tool call run that panicked -> recovery 500, no run-age header"),
    "A2.5.recovery-no-record": ("A2.5", "a run without tool call headers panics -> recovery 500, nothing recorded"),
    "A2.5.waiter-recorded-500": ("A2.5", "a request waiting on the run that panicked -> the recorded 500 with run age"),
    "A2.5.later-recorded-500": ("A2.5", "a later request of a call whose run panicked -> the recorded 500 replayed"),
    # A2.7 a pending record dropped by a newer message (store.go insert; middleware.go)
    "A2.7.drop-pending": ("A2.7", "a newer message's record replaces the chat's records while a run of the older one is pending"),
    "A2.7.publish-dropped": ("A2.7", "a run whose record a newer message dropped publishes: waiters woken, nothing recorded"),
    # A4.1 start with a tool call (agent/agentproc api.go, handleStartProcess)
    "A4.1.tool-call-id": ("A4.1", "start with tool call headers -> the process ID is the tool call UUID"),
    "A4.1.own-id": ("A4.1", "start without tool call headers -> the agent picks the process ID"),
    "A4.1.failed-bad-body": ("A4.1", "start body not decodable -> 400, an answer like any other"),
    "A4.1.failed-no-command": ("A4.1", "start without a command -> 400, an answer like any other"),
    "A4.1.failed-workdir": ("A4.1", "start in a directory that does not exist -> 500, an answer like any other"),
    # A4.3 run age: the cancel's threshold (cancel.go, StopToolCallProcess)
    "A4.3.threshold-clamped": ("A4.3", "cancel threshold negative or past the maximum -> clamped to [0, max]"),
    "A4.3.threshold-zero": ("A4.3", "threshold 0 -> run age not compared, a running process is left"),
    # A4.4 reaping, per process at each list (agent/agentproc process.go, manager.list)
    "A4.4.running": ("A4.4", "running process -> never reaped"),
    "A4.4.exited-recently": ("A4.4", "exited, at most 5 min since its exit second -> kept"),
    "A4.4.kept-current": ("A4.4", "exited over 5 min ago, its tool call record current -> kept"),
    "A4.4.reaped-not-current": ("A4.4", "exited over 5 min ago, its record no longer current -> reaped"),
    "A4.4.reaped-no-key": ("A4.4", "exited over 5 min ago, started without a tool call -> reaped"),
    # A4.5 agent restart or shutdown (agent close; a stopped workspace)
    "A4.5.process-killed": ("A4.5", "shutdown kills a running process (not a cancel)"),
    "A4.5.exited-process-lost": ("A4.5", "shutdown forgets an exited process"),
    "A4.5.records-lost": ("A4.5", "shutdown loses a chat's records"),
    "A4.5.request-broken": ("A4.5", "a request waiting on a run or a process is broken"),
    "A4.5.run-lost": ("A4.5", "a pending handler run never publishes"),
    # A4.6 files (agent/agentfiles api.go, HandleEditFiles, HandleWriteFile)
    "A4.6.edit-applied": ("A4.6", "edit of existing files -> applied, 200"),
    "A4.6.edit-missing-file": ("A4.6", "edit names a file that does not exist -> 404, earlier files stay edited"),
    "A4.6.edit-bad-body": ("A4.6", "edit body not decodable -> 400"),
    "A4.6.edit-no-files": ("A4.6", "edit names no file -> 400"),
    "A4.6.write-applied": ("A4.6", "write with a path -> written, 200"),
    "A4.6.write-no-path": ("A4.6", "write without a path -> 400"),
    # A4.9 listing processes (agent/agentproc api.go, handleListProcesses)
    "A4.9.one-chat": ("A4.9", "list with a chat -> that chat's processes only"),
    "A4.9.every-chat": ("A4.9", "list without a chat -> every process"),
    "A4.9.capped": ("A4.9", "more than 10 processes to list -> the first 10"),
    # C1.4 chatd's task retry (coderd/x/chatd tasks.go, runTaskWithRetry)
    "C1.4.retry-timed-out": ("C1.4", "attempt timed out (not a pure expected exit) -> retried after backoff"),
    "C1.4.retry-error": ("C1.4", "attempt failed with a retryable error -> retried after backoff"),
    "C1.4.exit-no-retry": ("C1.4", "attempt ended in an expected exit (fence) -> not retried"),
    "C1.4.done": ("C1.4", "attempt done -> task ends"),
    # C2.4 commit fencing (coderd/x/chatd, verifyTaskFence; model/chatd_db.py FENCES)
    "C2.4.fenced-owner": ("C2.4", "write turned away: another worker/runner owns the chat"),
    "C2.4.fenced-status": ("C2.4", "write turned away: the chat's status moved"),
    "C2.4.fenced-history": ("C2.4", "write turned away: the history version moved"),
    "C2.4.fenced-attempt": ("C2.4", "write turned away: the generation attempt moved"),
    "C2.4.fenced-no-chat": ("C2.4", "write turned away: the chat row is gone"),
    "C2.4.db-down": ("C2.4", "transaction failed, database down -> retryable error"),
}

# probe ID -> why no driver can reach it (one line each)
UNREACHABLE: dict[str, str] = {
    "A4.6.write-no-path": "chatd's write always carries ?path= (a write_file call needs one) and a crafted "
                          "request replaces headers and body, never the query; tests/test_agent_probes.py covers it",
}


def rule_of(probe_id: str) -> str:
    return PROBES[probe_id][0]
