"""The rules one chatd build follows (``ChatdRules``), its variants and reference durations.

Theory of operation
-------------------
A variant is a ``ChatdRules`` value, never a fork of the code. Its fields say what differs
between real builds (``send_identity``, ``interrupt_cancels``, ``tool_layer``) and hold
the knobs of the planted bugs (model/planted_bugs.py). The code of chatd never branches
on a planted-bug knob: it asks one of the hooks below (``fence_checks``, ``cancel_plan``,
``batch_left_running``, ``interrupt_answers``), whose correct behaviour is what the
contract says and whose bug is one small deviation in the hook, so the correct path
reads straight and each bug lives in one place. Only the real-version differences are
read directly (``rules.send_identity``, ``rules.serial_tools``), or through a hook where
that reads better (``cancels_for``). tests/test_chatd_rules.py checks that no other
module of chatd reads a planted-bug knob.

Every duration a replica waits for is read from ``timing`` (model/timing.py); the
constants below are its defaults, the reference values, for readers and tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import chattool
from ..chatd_db import FENCES, FenceRule, last_assistant, unresolved_calls
from ..core import CachedRepr, replace
from ..identity import MAX_MS
from ..timing import DEFAULT_TIMING, Timing
from .designs import NONE as NO_BOOKKEEPING, Bookkeeping

# ---------------------------------------------------------------------------
# Constants (docs/contract.md C-appendix)
# ---------------------------------------------------------------------------

# The reference durations, for readers and tests: the code reads ``rules.timing``
# (model/timing.py), whose defaults these are.
TASK_TIMEOUT_MS = DEFAULT_TIMING.task_timeout_ms  # defaultTaskTimeout, 15 min
TASK_RETRY_INITIAL_BACKOFF_MS = DEFAULT_TIMING.task_retry_initial_backoff_ms  # 100 ms
TASK_RETRY_MAX_BACKOFF_MS = DEFAULT_TIMING.task_retry_max_backoff_ms  # 5 s
ACQUISITION_INTERVAL_MS = DEFAULT_TIMING.acquisition_interval_ms  # 30 s
RUNNER_SYNC_INTERVAL_MS = DEFAULT_TIMING.runner_sync_interval_ms  # 15 s
HEARTBEAT_INTERVAL_MS = DEFAULT_TIMING.heartbeat_interval_ms  # 9 s
HEARTBEAT_STALE_MS = DEFAULT_TIMING.heartbeat_stale_ms  # 30 s
DIAL_TIMEOUT_MS = DEFAULT_TIMING.dial_timeout_ms  # 30 s, design section 9, PR 5 text
DEFAULT_GEN_TIME_MS = DEFAULT_TIMING.default_gen_time_ms  # 2 s

ACQUISITION_BATCH_SIZE = 10  # a count, not a duration: the same at every timing

# ``ChatdRules.fence_checks``'s answers: (op, owner, history, attempt switches) -> FenceRule.
_FENCE_CHECKS: dict[tuple, FenceRule] = {}

# Result kinds of a call that never ran or never applied: an interrupt still commits them
# (3.3), unless the planted bug ``interrupt_commits_not_run=False`` drops them.
NOT_RUN_KINDS = ("not_run", "not_applied")


@dataclass(frozen=True, repr=False)
class ChatdRules(CachedRepr):
    """The rules one chatd build follows. Real variants differ in ``send_identity``,
    ``interrupt_cancels`` and ``tool_layer``; the fence switches and the other knobs
    below ``serial_tools`` are for planted bugs (a checker must catch them), read only
    by the hooks (methods) of this class. ``timing`` holds every duration chatd and its
    tool layer wait for: the reference values by default, ``replace(rules,
    timing=Timing.small())`` for exhaustive exploration (model/timing.py).

    What the CODAGT-757 stack changed in chatd (docs/contract.md D9, PRs 4-6 on
    the SDK of PR 1; Q9), and what ``today`` (chatd before the stack) does instead. The
    facts of "before" come from docs/contract.md C2.3, C3.3, C4.2, C4.5, C5.2 and C6,
    design section 2 ("What breaks today"), and the legacy branches of the Go execute tool
    (coder/coder ``coderd/x/chatd/chattool/execute.go``: ``executeBackground``,
    ``executeForeground`` without an identity, ``waitForProcess``):

    - Tool call identity and headers (PR 1 SDK headers; PR 4 dispatch identity, the tool
      call age from the DB clock, execute sends headers; PR 6 edit_files/write_file):
      ``send_identity``. Today: no identity, no headers; the agent picks every process ID,
      so each retry or new owner starts the command again (the incident, section 6).
    - Attach by the run age, deadline = process start + timeout (PR 4, 4.3): follows from
      the identity. Today: the legacy wait, the full timeout from this attempt's start,
      wall time from the local start.
    - The agent answer timeout of 1 min on starts, edits and writes (PR 4 per Q9b; PR 6):
      ``tool_layer.agent_answer_timeout``. Today: none. A foreground start waits on its
      command context (the execute timeout), a background start, edit or write on the
      attempt: a start whose answer is lost waits for the 15-minute attempt timeout and
      the retry starts the command again.
    - A snapshot failing past the execute deadline reports unknown (PR 4, Q9c):
      ``tool_layer.snapshot_failure_unknown``. Today: "command timed out after <timeout>;
      failed to get output: <err>" (kind ``timed_out``).
    - The shared classifier and its unknown texts (PR 4, used by PR 5 and PR 6), and the
      dial failure "an earlier attempt may have started the command" (PR 4): follow from
      the identity. Today: the legacy texts, "start process: <err>", plain dial errors.
    - Interrupt cancels and their result mapping (PR 5 execute, PR 6 file tools; C5):
      ``interrupt_cancels``. Today: no dial, no cancel; every unresolved call gets the
      generic "tool call was interrupted before it produced a result" (3.3).
    Unchanged by the stack, so ``today`` has them too: the 30 s dial timeout (design line 7
    calls it "chatd's 30-second dial timeout"), the snapshot after a failed or ended wait,
    re-reading after the agent's 5-minute read cap, the retry wrapper, fences and serial
    tools.
    """

    name: str
    send_identity: bool  # C1/C2: tool call headers (identity from the DB clock) on requests
    interrupt_cancels: bool  # C5: the interrupt task cancels on the agent; else generic
    tool_layer: chattool.ToolLayer = chattool.DESIGN_B  # answer timeout (Q9b) and Q9c
    # Tools marked serial (Go's SerialToolCalls): box_* and find_tools in Go; none of the
    # three tools with an agent side is, so a test marks one to see the order (Rule 9).
    serial_tools: tuple[str, ...] = chattool.SERIAL_TOOLS
    # What chatd keeps per tool call besides the committed call: nothing in design B; a
    # ledger, first-attempt-only lookups or incarnation tokens in the design variants
    # (model/chatd/designs.py, model/designs.py). Read only through its hooks (batch.py).
    bookkeeping: Bookkeeping = NO_BOOKKEEPING
    # Planted-bug knobs, read only by the hooks below (True is the contract).
    history_fence: bool = True  # 2.4 requireHistory
    attempt_fence: bool = True  # 2.4 requireGenerationAttempt
    owner_fence: bool = True  # 2.4 ownedByTask
    # 1.4a: a timed-out attempt's calls stop with it. False plants a bug (the Go mistake
    # of an attempt context not handed down to the tool calls): its calls go on and the
    # batch still commits, which only the attempt fence then refuses.
    attempt_timeout_stops_calls: bool = True
    interrupt_rereads_unresolved: bool = True  # 3.2 step 4: answer only calls still unresolved
    interrupt_commits_not_run: bool = True  # 3.3: a call that never ran still gets its result
    interrupt_spares_background: bool = True  # C5/US6: background cancels carry stop age 0
    timing: Timing = DEFAULT_TIMING

    # -- hooks ------------------------------------------------------------------------

    def fence_checks(self, op: str) -> FenceRule:
        """Which parts of the task fence ``op`` checks (chatd_db rule 3): the table
        ``chatd_db.FENCES``. A planted fence bug switches a part off."""
        # A pure function of the operation and three switches: each answer is built once
        # (FenceRule is frozen, so one instance serves every caller; a step asks a few).
        key = (op, self.owner_fence, self.history_fence, self.attempt_fence)
        checks = _FENCE_CHECKS.get(key)
        if checks is None:
            rule = FENCES[op]
            checks = _FENCE_CHECKS[key] = FenceRule(
                owner=rule.owner and self.owner_fence,
                status=rule.status,
                history=rule.history and self.history_fence,
                attempt=rule.attempt and self.attempt_fence,
            )
        return checks

    def cancels_for(self, calls: tuple) -> tuple:
        """Interrupt rule 6: the cancels to send for the unresolved ``calls``, as
        ``(call, plan)`` pairs (``chattool.select_cancels``). ``today`` sends none (a real
        difference: every call gets the generic result, 3.3); so does the planted bug
        ``interrupt-without-cancel`` inside the contract."""
        if not (self.interrupt_cancels and calls):
            return ()
        return tuple((pick.call, self.cancel_plan(pick.plan)) for pick in chattool.select_cancels(calls, self.timing))

    def cancel_plan(self, plan: Any) -> Any:
        """The plan a cancel is sent with: chattool's, whose background cancels carry stop
        age 0 (C5, US6). The planted bug ``background-stopped-on-interrupt`` gives a
        background cancel a stop age that stops anything."""
        if self.interrupt_spares_background or not plan.background:
            return plan
        return replace(plan, stop_run_age_ms=MAX_MS)

    def batch_left_running(self, att: Any, timed_out: bool) -> Any:
        """Retry rule 4 (1.4a): a timed-out attempt's calls stop with it, so this is None.
        The planted bug ``attempt_timeout_stops_calls=False`` returns the attempt whose
        execute batch goes on after the timeout (and later commits)."""
        if self.attempt_timeout_stops_calls or not timed_out or att is None:
            return None
        if att.step != "calls" or att.action != "execute_local_tools":
            return None
        return att

    def interrupt_answers(self, chat: Any, results_by_provider: Any) -> tuple[Any, tuple]:
        """Interrupt rule 6 (3.2 step 4): ``(tool call message, calls)`` the interrupt's
        commit writes a result for, re-read at the commit: EVERY call still unresolved.
        Planted bugs: ``interrupt_rereads_unresolved=False`` answers every call of the last
        assistant message again; ``interrupt_commits_not_run=False`` leaves a call whose
        cancel result says it never ran without any result."""
        if self.interrupt_rereads_unresolved:
            call_msg, calls = unresolved_calls(chat)
        else:
            call_msg = last_assistant(chat)
            calls = call_msg.tool_calls if call_msg is not None else ()
        if not self.interrupt_commits_not_run:
            calls = tuple(c for c in calls
                          if getattr(results_by_provider.get(c.provider_id), "kind", None) not in NOT_RUN_KINDS)
        return call_msg, calls


TODAY = ChatdRules("today", send_identity=False, interrupt_cancels=False, tool_layer=chattool.BEFORE_STACK)
CONTRACT = ChatdRules("contract", send_identity=True, interrupt_cancels=True)
VARIANTS: dict[str, ChatdRules] = {"today": TODAY, "contract": CONTRACT}
