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
UNREACHABLE: dict[str, str] = {}


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
    "C5.5": "a citation note on the SDK's error text: no branch",
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
    rule: "a branch with no probe yet"
    for rule in ("A2.5", "A2.7", "A4.1", "A4.3", "A4.4", "A4.5", "A4.6", "A4.9",
                 "C1.1", "C1.2", "C1.3", "C2.1", "C2.2", "C2.3", "C3.1", "C3.2", "C3.3", "C3.5",
                 "C3.6", "C3.7", "C4.1", "C4.2", "C4.3", "C4.4", "C4.5", "C4.6",
                 "C5.1", "C5.2", "C5.3", "C5.4", "C5.6")
}

# rule -> the variants where it exists (any rule not named: both). Today's chatd sends no
# tool call headers, no cancel and no identity, so the agent's record, cancel and stop
# rules and design B's chatd rules exist only under the contract; a crafted request
# (a scenario's request fault) may still reach them under today, which is counted but
# not required.
RULE_VARIANTS: dict[str, tuple[str, ...]] = {
    **{rule: (CONTRACT,) for rule in ("A2.2", "A2.3", "A2.4", "A2.5", "A2.7", "A3", "A4.1", "A4.2", "A4.3",
                                      "A4.6", "C3.5", "C4.1", "C4.2", "C4.3", "C4.4", "C4.5", "C4.6",
                                      "C5.1", "C5.3", "C5.4")},
}

# probe -> its variants where they differ from its rule's
PROBE_VARIANTS: dict[str, tuple[str, ...]] = {
    # every request of today's chatd, and an old coderd's under the contract (rollout)
    "A2.4.no-headers": BOTH,
}

# Probes other helpers of issue 35 are adding (placeholder IDs a story proof names):
# probe ID -> who adds it. An entry goes once PROBES declares the ID (tests/test_probes.py).
AWAITED: dict[str, str] = {
    "A4.1.start-with-uuid": "agent side: a start with a tool call takes the tool call UUID as its process ID",
    "C4.3.deadline-from-run-age": "chatd side: the execute deadline is timeout - run age",
    "C4.5.answer-timeout": "chatd side: a request's wait ends at the agent answer timeout",
}

# user story with a proof clause -> the probes whose branch is its proof event; the
# story's proof is witnessed when a run reaches every one of them
STORY_PROOFS: dict[str, tuple[str, ...]] = {
    # one process per UUID: the start takes the UUID, a retry waits for or replays the
    # record instead of starting again, and the wait ends by the agent's clock
    "D-US1": ("A4.1.start-with-uuid", "A2.4.wait-pending", "A2.4.replay-recorded",
              "C4.3.deadline-from-run-age", "C4.5.answer-timeout"),
    # the cancel kills the young foreground process
    "D-US2": ("A4.2.kill-young",),
    # the call never runs: the cancel leaves a marker, a later request is refused
    "D-US10": ("A3.never-received", "A2.4.found-canceled"),
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
