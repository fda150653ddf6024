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

Below ``PROBES`` (added at the end, so tables other work adds to ``PROBES`` merge
cleanly), the rule-level accounting: every heading of docs/contract.md is probed, a user
story whose proof ``STORY_PROOFS`` witnesses, ``NOT_A_BRANCH`` (why not) or
``NOT_YET_PROBED`` (a gap); ``RULE_VARIANTS`` and ``PROBE_VARIANTS`` say under which
variants a branch exists (an unreached probe counts only there, ``variants_of``); and
``SWARM_GAPS`` says why the swarm's stories cannot reach a probe a scenario reaches.
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
    "A4.6.edit-applied": ("A4.6", "every file of an edit prepared -> all written, 200"),
    "A4.6.edit-missing-file": ("A4.6", "edit names a file that does not exist -> 404, no file written"),
    "A4.6.edit-no-path": ("A4.6", "an edit's file entry without a path -> 400, no file written"),
    "A4.6.edit-not-absolute": ("A4.6", "an edit's file path is relative -> 400, no file written"),
    "A4.6.edit-no-edits": ("A4.6", "an edit's file entry with no search/replace -> 400, no file written"),
    "A4.6.edit-directory": ("A4.6", "an edit's path is a directory -> 400, no file written"),
    "A4.6.edit-not-found": ("A4.6", "search found by no pass (exact, trailing or all whitespace ignored) -> 400"),
    "A4.6.edit-ambiguous": ("A4.6", "search matches more than once without replace_all -> 400"),
    "A4.6.edit-duplicate": ("A4.6", "an edit names one file twice -> 400 for the later entry"),
    "A4.6.edit-none-written": ("A4.6", "one file of an edit failed -> the files that prepared well are not written"),
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

    # ---- chatd side: the decisions of sections C1-C5 (issue 35, chatd probes) ----------
    # Branches only the contract has (today's chatd sends no identity, no cancel and has
    # no answer timer): C3.2's selection and dial, C3.3.cancel-result, C3.7, C4.2 with
    # headers, C4.3's run-age budget, C4.4.retry-same-identity, C4.5, C4.6's cancel, the
    # refusal and no-answer classes of C5.1, C5.2.unknown, all of C5.3, C5.4's not-applied,
    # unknown and generic rows, C5.5.not-json (an old agent's 404 to a cancel). Only today
    # has C4.4.retry-without-identity. Every other chatd probe exists under both.
    # C1.2 the runner (model/chatd/runner.py ``_observe``)
    "C1.2.db-down": ("C1.2", "database down -> the runner's read is skipped"),
    "C1.2.chat-gone": ("C1.2", "the chat row is gone -> runner dropped"),
    "C1.2.unchanged": ("C1.2", "newer snapshot, same history and status -> nothing started"),
    "C1.2.cancel-task": ("C1.2", "history or status moved -> the running task canceled without waiting"),
    "C1.2.start-generation": ("C1.2", "running -> generation task started"),
    "C1.2.start-abandon": ("C1.2", "waiting, error or archived -> abandon task started"),
    "C1.2.no-task": ("C1.2", "requires_action -> no modelled task, runner idle"),
    # C1.3 one generation task is one action (model/chatd/tasks.py)
    "C1.3.execute-batch": ("C1.3", "unresolved local calls -> the parallel batch, one dial"),
    "C1.3.generate": ("C1.3", "nothing unresolved, script left -> generate the next assistant message"),
    "C1.3.finish-turn": ("C1.3", "text answer or script used up -> finish the turn"),
    "C1.3.batch-committed": ("C1.3", "every call has its result -> one fenced commit of the batch"),
    # C2.1 claiming (runner.py ``_acquire``)
    "C2.1.db-down": ("C2.1", "database down -> the poll claims nothing"),
    "C2.1.claim-unowned": ("C2.1", "runnable chat with no owner -> claimed"),
    "C2.1.claim-stale": ("C2.1", "runnable chat whose other owner's heartbeat is stale -> taken over"),
    "C2.1.reclaim-own": ("C2.1", "own runner's heartbeat went stale -> runner replaced by a new one"),
    # C2.2 the lease (runner.py, chatd_db.py ``ownership_hint``)
    "C2.2.db-down": ("C2.2", "database down -> heartbeats not renewed"),
    "C2.2.expire": ("C2.2", "cleanup deletes heartbeat rows older than the stale limit"),
    "C2.2.hint-unowned": ("C2.2", "transition leaves the chat runnable and unowned -> chat:ownership"),
    "C2.2.hint-stale-owner": ("C2.2", "transition leaves the chat runnable, owner's heartbeat stale -> chat:ownership"),
    # C2.3 moving to another replica (runner.py, retry.py)
    "C2.3.noticed-on-publish": ("C2.3", "old runner reads a new owner on chat:update -> dropped, task canceled"),
    "C2.3.noticed-on-sync": ("C2.3", "old runner reads a new owner on its 15 s sync -> dropped, task canceled"),
    "C2.3.abandon-released": ("C2.3", "abandon done (owner columns cleared) -> runner dropped"),
    "C2.3.abandon-owner-moved": ("C2.3", "abandon fenced out by a new owner -> runner dropped"),
    # C3.1 from the user's interrupt to the interrupt task (chatd_db.py, runner.py)
    "C3.1.requested": ("C3.1", "interrupt of a running chat -> interrupting"),
    "C3.1.refused-not-running": ("C3.1", "interrupt of a chat that is not running -> refused"),
    "C3.1.start-interrupt-task": ("C3.1", "runner reads interrupting -> interrupt task started"),
    # C3.2 the interrupt task (model/chatd/interrupt.py, batch.py, retry.py)
    "C3.2.cancel-foreground": ("C3.2", "unresolved foreground execute -> cancel with its stop age"),
    "C3.2.cancel-background": ("C3.2", "unresolved background execute -> cancel with stop age 0"),
    "C3.2.cancel-file": ("C3.2", "unresolved edit_files/write_file -> cancel with stop age 0"),
    "C3.2.no-cancel": ("C3.2", "call without a cancel (other tool, bad arguments, differing copies)"),
    "C3.2.no-dial": ("C3.2", "no cancel selected -> no clock read, no dial, commit at once"),
    "C3.2.dial": ("C3.2", "cancels selected -> one clock read, one dial"),
    "C3.2.dial-failed": ("C3.2", "interrupt's dial failed -> each cancel's unreachable result"),
    "C3.2.ended-uncommitted": ("C3.2", "interrupt attempt ended (canceled, timed out) before its commit -> nothing committed"),
    # C3.3 what an interrupt commits (chatd_db.py ``tx_finish_interruption``)
    "C3.3.cancel-result": ("C3.3", "unresolved call with a cancel's answer -> its mapped result"),
    "C3.3.generic": ("C3.3", "unresolved call without a cancel result -> generic interrupted result"),
    "C3.3.nothing-open": ("C3.3", "no unresolved call -> only FinishInterruption"),
    # C3.5 races on the interrupt path (model/chatd/replica.py)
    "C3.5.late-answer-ignored": ("C3.5", "answer for a task, attempt or call that ended -> ignored"),
    # C3.6 message edits (chatd_db.py ``db_edit_message``)
    "C3.6.discards-calls": ("C3.6", "edit discards a branch with tool calls -> no result, no cancel"),
    "C3.6.discards-no-calls": ("C3.6", "edit discards a branch without tool calls"),
    "C3.6.ends-interruption": ("C3.6", "edit while interrupting -> running, the interruption ends"),
    "C3.6.refused-archived": ("C3.6", "edit of an archived chat -> refused"),
    "C3.6.refused-no-message": ("C3.6", "edit of a chat without a user message -> refused"),
    # C3.7 duplicate provider IDs (model/chatd/interrupt.py)
    "C3.7.one-cancel": ("C3.7", "copies of a provider ID with the same cancel -> one cancel"),
    "C3.7.no-cancel": ("C3.7", "copies of a provider ID with differing (or no) cancels -> none"),
    # C4.2 the execute request sequence (model/chattool/execute.py, model/chatd/batch.py)
    "C4.2.dial-failed": ("C4.2", "generation attempt's dial failed -> a result per call, no request"),
    "C4.2.start-with-headers": ("C4.2", "start sent with the tool call headers"),
    "C4.2.start-without-headers": ("C4.2", "start sent without tool call headers (no identity)"),
    "C4.2.background-answered": ("C4.2", "background start answered -> the start result"),
    # C4.1 identity (model/chatd/tasks.py, the batch's one database clock read)
    "C4.1.age-from-db": ("C4.1", "batch begins with an identity whose age is measured from database timestamps"),
    "C4.1.no-identity": ("C4.1", "batch begins without an identity (today's chatd sends none)"),
    # C4.3 deadline arithmetic (execute.py, calls.py)
    "C4.3.budget-left": ("C4.3", "new agent, timeout - run age > 0 -> wait that long"),
    "C4.3.budget-spent": ("C4.3", "new agent, run age >= timeout -> one snapshot at once"),
    "C4.3.read-again": ("C4.3", "capped read says running, time left -> read again"),
    "C4.3.deadline-fired": ("C4.3", "wait deadline reached -> one snapshot"),
    # C4.4 a task retry's second attempt (model/chatd/batch.py)
    "C4.4.retry-same-identity": ("C4.4", "later attempt begins its calls again with the same identity"),
    "C4.4.retry-without-identity": ("C4.4", "later attempt begins its calls again without an identity"),
    # C4.5 agent answer timeout (model/chattool/calls.py)
    "C4.5.start": ("C4.5", "answer timer ended a start -> no answer"),
    "C4.5.file": ("C4.5", "answer timer ended an edit or write -> no answer"),
    "C4.5.cancel": ("C4.5", "answer timer ended a cancel -> no answer"),
    # C4.6 old agents (execute.py, cancel.py)
    "C4.6.legacy-wait": ("C4.6", "start answered with another process ID -> legacy wait"),
    "C4.6.cancel-http-error": ("C4.6", "cancel answered with an HTTP error (old agent's 404) -> generic result"),
    # C5.1 the shared error classifier (model/chattool/classifier.py), one per class
    "C5.1.no-answer": ("C5.1", "our answer timer ended the request -> NoAnswer"),
    "C5.1.refused": ("C5.1", "coded 409 -> Refused(code)"),
    "C5.1.response": ("C5.1", "other HTTP error answer -> Response"),
    "C5.1.unreachable": ("C5.1", "transport failure or deadline -> Unreachable"),
    "C5.1.unreadable": ("C5.1", "anything else (answer not decodable) -> Unreadable"),
    # C5.2 execute results in generation (model/chattool/results.py rows)
    "C5.2.completed": ("C5.2", "exited -> its code and output"),
    "C5.2.timed-out": ("C5.2", "running at the deadline -> timed out with the process ID"),
    "C5.2.background-started": ("C5.2", "background start -> the background process ID"),
    "C5.2.failed": ("C5.2", "refusal, start error or failed read -> failed"),
    "C5.2.unknown": ("C5.2", "outcome unknown -> the UUID to check"),
    # C5.3 execute results on interrupt (model/chattool/cancel.py rows)
    "C5.3.canceled": ("C5.3", "canceled by the user with partial output"),
    "C5.3.timed-out": ("C5.3", "past its deadline, left running -> timed out"),
    "C5.3.background-started": ("C5.3", "background call -> the background start result"),
    "C5.3.completed": ("C5.3", "exited before the cancel -> the real result"),
    "C5.3.failed": ("C5.3", "recorded start error -> failed"),
    "C5.3.not-run": ("C5.3", "cancel before the agent received the call -> not run"),
    "C5.3.unknown": ("C5.3", "no process, unreachable, no answer -> unknown"),
    "C5.3.generic": ("C5.3", "cancel error without a mapping -> generic interrupted result"),
    # C5.4 edit_files and write_file results, in generation and on interrupt
    "C5.4.applied": ("C5.4", "the tool's own result from the (recorded) answer"),
    "C5.4.not-applied": ("C5.4", "canceled before the agent received it -> not applied"),
    "C5.4.unknown": ("C5.4", "the change may have been applied -> unknown"),
    "C5.4.failed": ("C5.4", "refusal, bad arguments or plain error -> failed"),
    "C5.4.generic": ("C5.4", "on interrupt, an unmapped cancel error or lost disk -> generic"),
    # C5.5 SDK error texts in results (classifier.py ``sdk_text_probe``)
    "C5.5.json-message": ("C5.5", "HTTP error answer with a JSON message -> 'unexpected status code N: message'"),
    "C5.5.json-without-message": ("C5.5", "JSON error answer without a message or empty -> the SDK's fallback text"),
    "C5.5.not-json": ("C5.5", "non-JSON error answer -> content type named, body quoted"),
    # C5.6 workspace states (model/chatd/batch.py, the dial's answer)
    "C5.6.no-workspace": ("C5.6", "the chat has no workspace -> plain error / generic, no request"),
    "C5.6.deleted": ("C5.6", "the workspace was deleted -> plain error / generic, no request"),
    "C5.6.no-agent-execute": ("C5.6", "stopped workspace (no agent), execute -> plain error / generic"),
    "C5.6.no-agent-file": ("C5.6", "stopped workspace (no agent), file tool -> unknown (disk kept)"),
}

# probe ID -> why no driver can reach it (one line each)
UNREACHABLE: dict[str, str] = {
    # chatd side (issue 35, chatd probes)
    "C2.4.fenced-attempt": "only an attempt that outlives its end could commit under an old generation "
                           "attempt (the planted bug attempt_timeout_stops_calls=False, scenario "
                           "bug_stale_attempt_commit); today and contract abort an ended attempt's calls, "
                           "and any other task of the runner starts only after history or status moved, "
                           "which the fence checks first",
    "C2.4.fenced-no-chat": "no chat row is ever deleted in the world (archiving keeps the row; no fault deletes one)",
    "C1.2.chat-gone": "no chat row is ever deleted in the world (archiving keeps the row; no fault deletes one)",
    "C1.2.no-task": "requires_action is never entered: dynamic tools are not modelled (chatd_db's abstractions)",
    "C2.3.abandon-owner-moved": "an abandon runs in the step its runner read the chat, after the runner's own owner "
                                "check, and cannot fail on the database (that read found it up), so it is never "
                                "retried into a later owner",
    "C3.6.refused-archived": "no world action archives a chat (chatd_db.db_archive is called by tests only)",
    "C5.1.unreadable": "the model's agents answer every request chatd sends with a body chatd can read (JSON "
                       "with the fields it needs, or an old agent's plain-text 404); tests/test_chatd_probes.py "
                       "feeds a malformed one",
    "C5.5.json-without-message": "every JSON error answer of the model's agents carries a message; "
                                 "tests/test_chatd_probes.py feeds one without",
    # agent side (issue 35, agent probes)
    "A4.6.write-no-path": "chatd's write always carries ?path= (a write_file call needs one) and a crafted "
                          "request replaces headers and body, never the query; tests/test_agent_probes.py covers it",
    # the edit's phase 1 (issue 35, fuzzyReplace and prepareFileEdit): only unit tests
    # (tests/test_agent_probes.py, tests/test_agent_file_edits.py) craft these edits
    "A4.6.edit-no-path": "chatd refuses an edit_files call whose file has no path before sending it, and no "
                         "shipped scenario crafts such a body",
    "A4.6.edit-not-absolute": "every path the shipped scenarios and drawn stories edit is absolute",
    "A4.6.edit-directory": "every path the shipped scenarios and drawn stories edit is a file or missing, "
                           "never a directory of the world's files",
    "A4.6.edit-ambiguous": "every search of the shipped scenarios and drawn stories occurs once in its file "
                           "(a drawn file's lines differ), and a repeated edit's search once in the edited file",
    "A4.6.edit-duplicate": "every edit of the shipped scenarios and drawn stories names one file",
    "A4.6.edit-none-written": "a file left unwritten needs an edit of two files, one of them failing; every edit "
                              "of the shipped scenarios and drawn stories names one file",
}


def rule_of(probe_id: str) -> str:
    return PROBES[probe_id][0]


# -- Rule-level accounting (issue 35) ------------------------------------------------
# Every section heading of docs/contract.md is exactly one of: probed (a rule of PROBES),
# a user story whose proof the probes of STORY_PROOFS witness, NOT_A_BRANCH (why the
# section has no branch to count) or NOT_YET_PROBED (a branch nothing counts yet: a gap
# the coverage report lists). tests/test_probes.py parses the headings and checks it.

TODAY, CONTRACT = "today", "contract"
BOTH = (TODAY, CONTRACT)

# heading -> why the section has no branch of its own
NOT_A_BRANCH: dict[str, str] = {
    "C1.1": "the chat's states and the version bump every state transaction does unconditionally: "
            "no branch of its own; the transitions' branches are C1.2's, C2.x's and C3.x's, probed there",
    "A0.3": "a note on sources (what the model infers): no branch",
    "A1": "overview of A1.1-A1.5",
    "A1.1": "timing constants: no branch",
    "A1.2": "the header vocabulary; parsing it is A2.4's and A3's bad-headers branches",
    "A1.3": "the refusal codes; each is a branch of A2.2-A2.4 or A3, probed there",
    "A1.4": "the status vocabulary; each status is a branch of A2.4 or A3, probed there",
    "A1.5": "a pure function (UUIDv5 over the call's identity): no branch",
    "A2": "overview of A2.1-A2.8",
    "A2.1": "the store's state: no decision",
    "A2.6": "a pure function (SHA-256 of the request); its mismatch is A2.4.input-mismatch",
    "A2.8": "a summary of A2.4's branches, probed there",
    "A4": "overview of A4.1-A4.9",
    "A4.7": "the route layout: the model has no mounting to branch on",
    "A4.8": "SDK header plumbing: no branch in the model",
    "A5": "lists the Go test cases (ported in tests/test_agent_conformance.py)",
    **{f"A5.{n}": "lists Go tests (A5)" for n in range(1, 9)},
    "A6.1": "code facts the model follows, each a branch of A2-A4",
    "A6.4": "what could not be verified: no branch",
    "C6": "the incident: a history, reproduced by scenarios, no branch",
    "C7": "lists the chatd Go test groups (ported in tests/)",
    "C8": "notes where the code differs from the design",
    "C8.9": "a code-vs-design note; the branch is C3.6's",
    "C-appendix": "constants: no branch",
    "D0": "design text: terms", "D1": "design text: overview of the stories",
    "D-US3": "a story without a proof clause: truthful_result judges it",
    "D-US4": "a story without a proof clause: retry_changes_nothing judges it",
    "D-US5": "a story without a proof clause: unknown_only_when_unknowable judges it",
    "D-US6": "a story without a proof clause: background_survives judges it",
    "D-US7": "a story without a proof clause: interrupt_finishes judges it",
    "D-US8": "a story without a proof clause: the old-agent scenarios judge it",
    "D-US9": "a story without a proof clause: chat_isolation judges it",
    "D2": "design text", "D3": "design text", "D4": "design text: the routes (A2, A3 probe them)",
    "D-A1": "design text (A2.4 probes it)", "D-A2": "design text", "D-A3": "design text (A2.2-A2.4 probe it)",
    "D-A4": "design text (A4.2 probes it)", "D-A5": "design text (A2.4, A3 probe it)", "D-A6": "design text",
    "D-A7": "design text (A2.3 probes it)",
    **{f"D-C{n}": "design text: a chatd obligation, judged by the properties" for n in range(1, 8)},
    "D5": "design text", "D6": "design text", "D7": "design text: the residual risks (classified by name)",
    "D8": "design text", "D-Q9": "design text", "D9": "design text",
}

# heading -> a branch no probe counts yet (the coverage report lists these as gaps);
# an entry goes once PROBES has a probe of the rule (tests/test_probes.py insists)
NOT_YET_PROBED: dict[str, str] = {
}

# rule -> the variants where it exists (any rule not named: both). Today's chatd sends no
# tool call headers and no cancel, so the agent's record, cancel and stop rules exist
# under the contract only; a crafted request (a scenario's request fault) may still reach
# them under today, which is counted but not required.
RULE_VARIANTS: dict[str, tuple[str, ...]] = {
    rule: (CONTRACT,) for rule in ("A2.2", "A2.3", "A2.4", "A2.7", "A3", "A4.2", "A4.3", "C5.3")
}

# probe -> its variants where they differ from its rule's: a branch that needs a tool
# call record, an identity, a cancel or design B's answer table exists under the
# contract only; the legacy paths of today's chatd under today (or both, where an old
# coderd or agent takes them under the contract too)
PROBE_VARIANTS: dict[str, tuple[str, ...]] = {
    # every request of today's chatd, and an old coderd's under the contract (rollout)
    "A2.4.no-headers": BOTH,
    **{pid: (CONTRACT,) for pid in (
        "A2.5.recovery-500", "A2.5.waiter-recorded-500", "A2.5.later-recorded-500",
        "A4.1.tool-call-id", "A4.4.kept-current", "A4.4.reaped-not-current", "A4.5.records-lost",
        "C3.2.cancel-foreground", "C3.2.cancel-background", "C3.2.cancel-file", "C3.2.no-cancel",
        "C3.2.dial", "C3.2.dial-failed", "C3.2.ended-uncommitted", "C3.3.cancel-result",
        "C3.7.one-cancel", "C3.7.no-cancel", "C4.2.start-with-headers", "C4.3.budget-left",
        "C4.3.budget-spent", "C4.4.retry-same-identity", "C4.5.start", "C4.5.file", "C4.5.cancel",
        "C4.6.cancel-http-error", "C5.1.no-answer", "C5.1.refused", "C5.1.unreadable", "C5.2.unknown",
        "C5.4.not-applied", "C5.4.unknown", "C5.4.generic", "C5.5.not-json", "C5.5.json-without-message",
        "A4.6.write-no-path")},
    "C4.4.retry-without-identity": (TODAY,),  # a retry of today's chatd: no identity to send again
    "C4.1.age-from-db": (CONTRACT,),
    "C4.1.no-identity": BOTH,  # today's chatd, and an old coderd's under the contract (rollout)
}

# user story with a proof clause -> the probes whose branch is its proof event; the
# story's proof is witnessed when a run reaches every one of them
STORY_PROOFS: dict[str, tuple[str, ...]] = {
    # one process per UUID and always a result: the start takes the UUID, a retry waits
    # for or replays the record instead of starting again, the wait ends by the agent's
    # run age, and a request the agent does not answer in time still gets a result
    "D-US1": ("A4.1.tool-call-id", "A2.4.wait-pending", "A2.4.replay-recorded", "C4.3.budget-left",
              "C4.5.start"),
    # the cancel kills the young foreground process; the result says canceled by the user
    "D-US2": ("A4.2.kill-young", "C5.3.canceled"),
    # the call never runs: the cancel leaves a marker, a later request is refused, the
    # model gets "not run"
    "D-US10": ("A3.never-received", "A2.4.found-canceled", "C5.3.not-run"),
}

# probe -> why the swarm's default mix (sim/world/stories.py STORIES and its fault kinds)
# does not reach it where a shipped scenario does
SWARM_GAPS: dict[str, str] = {
    "A2.4.no-chat": "a start without Coder-Chat-Id is a crafted request; the swarm crafts only output and "
                    "signal requests (process_signal story)",
    "A3.wrong-id": "a cancel carrying another chat's ID is a crafted request; the swarm crafts only output "
                   "and signal requests",
    "A2.4.input-mismatch": "needs two requests of one call with different inputs (a crafted start, or "
                           "duplicate provider IDs with other arguments); the duplicate_ids story copies "
                           "one command",
    "A2.4.no-headers": "under the contract only an old coderd sends no tool call headers (a rollout "
                       "scenario); every swarm world runs one chatd version",
    **{pid: "a malformed request is a scenario's crafted request (us09_malformed_requests); the swarm crafts "
            "only output and signal requests, and chatd's own requests are well formed"
       for pid in ("A2.4.bad-headers", "A3.bad-headers", "A3.no-headers", "A3.no-chat", "A3.bad-json",
                   "A4.1.failed-bad-body", "A4.1.failed-no-command", "A4.1.failed-workdir",
                   "A4.3.threshold-clamped", "A4.6.edit-missing-file", "A4.6.edit-bad-body", "A4.6.edit-no-files",
                   "A4.6.edit-no-edits")},
    "A4.6.edit-not-found": "a drawn edit appends to the line it searches for, so a repeat still finds that line "
                           "(and applies again); the scenarios' repeated edits replace their search string",
    **{pid: "a kill that fails is the tool call field kill_fails, which the swarm never draws"
       for pid in ("A3.stop-failed", "A4.2.kill-fails", "C4.6.cancel-http-error")},
    **{pid: "a handler panic is the handler_panic fault, not among the swarm's fault kinds"
       for pid in ("A2.5.before-effects", "A2.5.after-spawn", "A2.5.recovery-500", "A2.5.recovery-no-record",
                   "A2.5.waiter-recorded-500", "A2.5.later-recorded-500", "C5.3.failed")},
    **{pid: "under the contract an old agent or an old coderd is a scenario world only; every swarm world runs "
            "the variant's own agent and one chatd version"
       for pid in ("A4.1.own-id", "C4.2.start-without-headers", "C4.6.legacy-wait", "C5.5.not-json")},
    **{pid: "a process list is a crafted list request; the swarm crafts only output and signal requests, and "
            "chatd never lists"
       for pid in ("A4.4.running", "A4.4.exited-recently", "A4.4.kept-current", "A4.4.reaped-not-current",
                   "A4.4.reaped-no-key", "A4.9.one-chat", "A4.9.every-chat", "A4.9.capped")},
    **{pid: "needs an interrupt or an edit between a task's read and its commit, a window the scenarios hit "
            "with a trigger; the swarm's timed faults did not land in it in seeds 1..200 (rare, not impossible)"
       for pid in ("C2.4.fenced-status", "C2.4.fenced-history")},
    **{pid: "the message_edit story edits while a call's request is on its way: never before the calls nor "
            "while the chat is interrupting (edit_before_calls, edit_while_interrupting)"
       for pid in ("C3.6.discards-no-calls", "C3.6.refused-no-message", "C3.6.ends-interruption")},
    "C5.6.no-workspace": "the workspace_state story stops or deletes the workspace; a chat without a workspace "
                         "([world] workspace = none) is a scenario world only",
}


def variants_of(probe_id: str) -> tuple[str, ...]:
    """The variants where ``probe_id``'s branch exists: where its being unreached counts."""
    return PROBE_VARIANTS.get(probe_id) or RULE_VARIANTS.get(PROBES[probe_id][0], BOTH)


def probed_rules() -> dict[str, list[str]]:
    """rule -> its declared probes, in PROBES order."""
    out: dict[str, list[str]] = {}
    for pid, (rule, _) in PROBES.items():
        out.setdefault(rule, []).append(pid)
    return out


def rule_status(rule: str) -> tuple[str, str]:
    """(status, detail) of a docs/contract.md heading: ``probed`` (its probes),
    ``story`` (the probes witnessing its proof), ``not a branch`` or ``no probe yet``
    (the reason), or ``unknown``."""
    probed = probed_rules()
    if rule in probed:
        return "probed", ", ".join(probed[rule])
    if rule in STORY_PROOFS:
        return "story", ", ".join(STORY_PROOFS[rule])
    if rule in NOT_A_BRANCH:
        return "not a branch", NOT_A_BRANCH[rule]
    if rule in NOT_YET_PROBED:
        return "no probe yet", NOT_YET_PROBED[rule]
    return "unknown", ""
