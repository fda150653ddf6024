"""Every duration chatd and its tool layer wait for, as one value that a run can scale.

Theory of operation
-------------------
``Timing`` holds each duration of chatd (model/chatd/, model/chatd_db.py) and of its
tool layer (model/chattool/) in integer milliseconds; its defaults are the reference
values (docs/contract.md C-appendix, design B). chatd reads them from
``ChatdRules.timing``, and chattool from the ``timing`` its task layer hands to
``begin_call`` / ``begin_cancel`` / ``select_cancels`` (kept in ``CallState``), so a
scaled run is ``dataclasses.replace(rules, timing=Timing.small())``: no code path
differs, only the numbers.

It is a module of its own, not part of chattool, because both layers read it and
chattool must know nothing of chatd's workers, runners and attempts; it imports nothing
from the model, so it sits below both.

Rule 1. The defaults ARE the reference: ``Timing()`` changes no behaviour, and the
        module-level constants of chatd and chattool are aliases of these defaults.
Rule 2. The agent's own durations live in ``agent.AgentRules`` (``age_margin_ms``,
        ``output_wait_cap_ms``, ``exited_reap_after_ms``), which chatd never reads; the
        ``agent_*`` fields here mirror them so one value describes a whole world's clock
        scale. The world must keep the two consistent: build the agent's rules with
        ``timing.agent_rules(base)``. chattool's ``agent_output_wait_cap_ms`` is only
        documentation of why a blocking read may return "running" early; the agent
        enforces the cap.
Rule 3. A scaled timing must keep every ordering the reference relies on (``ORDERINGS``,
        each with its reason); ``violations()`` lists the ones a timing breaks.
        ``small()`` keeps, in addition, the order (and the ties) of every pair of real
        durations, so nothing that happens "before" another thing in a real run happens
        after it in a small one.
Rule 4. Durations a world chooses are not here: message latency, fault durations
        (downtime, partitions, the ownership change's heartbeat pause), a scripted chat's
        generation time (``Chat.gen_time_ms``; ``default_gen_time_ms`` is only the
        default a world should use), a process's run time and an execute call's own
        ``timeout`` argument. A world that scales its timing scales those too:
        message latency must stay below ``agent_age_margin_ms`` (the margin is the
        transit allowance of the age rule: a request that travels longer can make a
        restarted agent take an old call for a new one), and the ownership change's
        pause must exceed ``heartbeat_stale_ms + acquisition_interval_ms`` to cause one.

What an execute ``timeout`` argument T does, for choosing scaled scenario values (real
bounds in brackets): T <= ``agent_answer_timeout_ms`` [1 min] has no answer timer (the
execute deadline ends the start); T <= ``agent_output_wait_cap_ms`` [5 min] needs one
blocking read; a larger T re-reads; T + ``dial_timeout_ms`` + ``snapshot_timeout_ms``
beyond ``task_timeout_ms`` [about 14 min] cannot finish within one attempt (the
CODAGT-757 incident: a 2 h command). That is design B; a chatd before the stack
(``today``, ``chattool.BEFORE_STACK``) arms no answer timer at all, so a start whose
answer never comes waits for T (foreground) or for ``task_timeout_ms`` (background, file
tools), and ``agent_answer_timeout_ms`` only bounds its interrupt cancels, which it never
sends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .core import CachedRepr

if TYPE_CHECKING:  # only for the annotation; timing stays below every other model module
    from .agent import AgentRules


@dataclass(frozen=True, repr=False)
class Timing(CachedRepr):
    """chatd, chattool and (mirrored) agent durations in integer milliseconds."""

    # chatd (docs/contract.md C-appendix)
    task_timeout_ms: int = 15 * 60_000  # defaultTaskTimeout: one attempt of the retry wrapper
    task_retry_initial_backoff_ms: int = 100  # first backoff; doubles per retry
    task_retry_max_backoff_ms: int = 5_000  # backoff cap; retries never stop
    acquisition_interval_ms: int = 30_000  # the worker's acquisition poll
    runner_sync_interval_ms: int = 15_000  # a runner re-reads its chat this often
    heartbeat_interval_ms: int = 9_000  # the worker upserts its runners' heartbeats
    heartbeat_stale_ms: int = 30_000  # older heartbeats let another worker take over
    dial_timeout_ms: int = 30_000  # chatd's dial of the agent (design section 9)
    default_gen_time_ms: int = 2_000  # the scripted model's answer time, if a chat sets none
    # chattool (design B, docs/contract.md C4.3, C4.5)
    agent_answer_timeout_ms: int = 60_000  # start, edit, write and cancel requests
    execute_default_timeout_ms: int = 10_000  # an execute call without a timeout argument
    snapshot_timeout_ms: int = 30_000  # the one non-blocking read after the wait
    # the agent's (agent.AgentRules; Rule 2)
    agent_age_margin_ms: int = 2_000  # ageMargin of the age rule
    agent_output_wait_cap_ms: int = 300_000  # maxWaitDuration of a ?wait=true read
    agent_exited_reap_after_ms: int = 300_000  # exitedProcessReapAge

    @classmethod
    def small(cls) -> "Timing":
        """Small, order-preserving durations for exhaustive exploration.

        A strictly increasing map of the real values (ties kept), compressed so that the
        periodic worker loops fire about a dozen times per attempt instead of a hundred,
        and checked against ``ORDERINGS``:

        =====================  ========  =====  ============================================
        field                  real ms   small  why this value
        =====================  ========  =====  ============================================
        backoff initial        100       1      smallest duration
        age margin, gen time   2 000     2      margin == gen time as in reality (a chat
                                                started with the agent still makes its first
                                                call look new); latency must stay <= 1
        backoff max            5 000     4      doubles 1, 2, 4: above the margin
        heartbeat interval     9 000     5      above the backoff cap
        execute default        10 000    6      above the heartbeat, below the answer
        runner sync            15 000    7      one heartbeat per sync (9 < 15 < 18)
        stale, acquisition,    30 000    16     three heartbeats fit in the stale window,
        dial, snapshot                          a fourth does not (27 < 30 < 36)
        answer timeout         60 000    17     above every 30 s wait
        output wait cap, reap  300 000   18     above the answer timeout
        attempt timeout        900 000   60     fits dial + answer, dial + execute default +
                                                snapshot, and dial + wait cap + snapshot (a
                                                timeout just above the cap still finishes
                                                in one attempt, like 5..14 min in reality)
        =====================  ========  =====  ============================================
        """
        return cls(
            task_timeout_ms=60,
            task_retry_initial_backoff_ms=1,
            task_retry_max_backoff_ms=4,
            acquisition_interval_ms=16,
            runner_sync_interval_ms=7,
            heartbeat_interval_ms=5,
            heartbeat_stale_ms=16,
            dial_timeout_ms=16,
            default_gen_time_ms=2,
            agent_answer_timeout_ms=17,
            execute_default_timeout_ms=6,
            snapshot_timeout_ms=16,
            agent_age_margin_ms=2,
            agent_output_wait_cap_ms=18,
            agent_exited_reap_after_ms=18,
        )

    @classmethod
    def explorer(cls) -> "Timing":
        """The explorer's clock: as few steps as possible while keeping the orders the
        contract relies on, in small ms (1 small ms stands for ``Bounds.scale`` real ms):

        backoff 1 < age margin 2 = generation 2 < dial 3 = snapshot 3 < answer timeout 4
        < the foreground call's execute timeout 8 (its argument) < attempt timeout 10
        < the agent's output wait cap 12.

        The age margin stays below the answer timeout, which stays below the execute timeout,
        which stays below the attempt timeout (so a long command outlives an attempt, the
        incident's shape). The output wait cap exceeds the attempt, so one blocking read spans
        a whole attempt instead of a dozen re-reads. The periodic worker loops (heartbeats,
        acquisition polls, runner syncs) are pushed past any horizon: the explorer changes
        ownership with its ``takeover`` fault instead.
        """
        quiet = 10**9
        return replace(
            cls.small(),
            task_timeout_ms=10, task_retry_initial_backoff_ms=1, task_retry_max_backoff_ms=4,
            dial_timeout_ms=3, snapshot_timeout_ms=3, agent_answer_timeout_ms=4, execute_default_timeout_ms=6,
            agent_age_margin_ms=2, default_gen_time_ms=2, agent_output_wait_cap_ms=12,
            agent_exited_reap_after_ms=quiet,
            heartbeat_interval_ms=quiet, acquisition_interval_ms=quiet, runner_sync_interval_ms=quiet,
            heartbeat_stale_ms=quiet,
        )

    def agent_rules(self, base: "AgentRules") -> "AgentRules":
        """``base`` with the agent's durations replaced by this timing's (Rule 2)."""
        return replace(
            base,
            age_margin_ms=self.agent_age_margin_ms,
            output_wait_cap_ms=self.agent_output_wait_cap_ms,
            exited_reap_after_ms=self.agent_exited_reap_after_ms,
        )

    def value(self, expr: str) -> int:
        """The value of a sum like ``"dial_timeout_ms + 3*heartbeat_interval_ms"``."""
        total = 0
        for term in expr.split("+"):
            coef, _, name = term.strip().rpartition("*")
            total += int(coef or 1) * getattr(self, name)
        return total

    def violations(self) -> list[str]:
        """Every ordering of ``ORDERINGS`` this timing breaks, as readable text."""
        out = []
        for left, op, right, why in ORDERINGS:
            a, b = self.value(left), self.value(right)
            if not _HOLDS[op](a, b):
                out.append(f"{left} ({a}) {op} {right} ({b}) fails: {why}")
        return out


DEFAULT_TIMING = Timing()

_HOLDS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b}

# The orderings chatd, chattool and the agent rely on: (left, relation, right, reason).
# Each side is a sum of fields, optionally with integer factors.
ORDERINGS: tuple[tuple[str, str, str, str], ...] = (
    ("task_retry_initial_backoff_ms", "<=", "task_retry_max_backoff_ms",
     "the backoff doubles up to its cap"),
    ("agent_age_margin_ms", "<", "agent_answer_timeout_ms",
     "the margin is a transit allowance, far shorter than any wait for an answer"),
    ("agent_age_margin_ms", "<", "execute_default_timeout_ms",
     "the margin is a transit allowance, far shorter than a command's run"),
    ("agent_age_margin_ms", "<=", "default_gen_time_ms",
     "an agent booted with the chat has been up a margin when the first call commits, "
     "so the call is new to it (not 'agent started after tool call')"),
    ("execute_default_timeout_ms", "<", "agent_answer_timeout_ms",
     "a default foreground start ends at the execute deadline, never 'did not answer' "
     "(chattool rule 3)"),
    ("heartbeat_interval_ms", "<", "heartbeat_stale_ms",
     "a live worker's runners never look stale"),
    ("3*heartbeat_interval_ms", "<", "heartbeat_stale_ms",
     "a takeover needs three missed heartbeats (a short database outage takes nothing)"),
    ("heartbeat_stale_ms", "<", "4*heartbeat_interval_ms",
     "and not four: the takeover comes as soon after a stall as in reality"),
    ("heartbeat_stale_ms", "==", "acquisition_interval_ms",
     "both 30 s: a stale chat is taken at the next poll, at most one stale window late"),
    ("runner_sync_interval_ms", "<", "heartbeat_stale_ms",
     "a runner that lost its chat notices before another stale window passes"),
    ("agent_answer_timeout_ms", "<", "agent_output_wait_cap_ms",
     "a blocking read of a command within the answer timeout is never cut by the cap"),
    ("agent_output_wait_cap_ms", "==", "agent_exited_reap_after_ms",
     "both 5 min in the agent"),
    ("default_gen_time_ms", "<", "task_timeout_ms",
     "a generation finishes within its attempt (the attempt timer is never re-armed)"),
    ("task_retry_max_backoff_ms", "<", "task_timeout_ms",
     "a retry waits less than an attempt lasts"),
    ("dial_timeout_ms + agent_answer_timeout_ms", "<", "task_timeout_ms",
     "an interrupt's cancel, a file tool and a background start finish within one "
     "attempt even when the agent never answers (design B; before the stack they wait "
     "for the attempt timeout)"),
    ("dial_timeout_ms + execute_default_timeout_ms + snapshot_timeout_ms", "<", "task_timeout_ms",
     "a default foreground execute finishes within one attempt, snapshot included"),
    ("dial_timeout_ms + agent_output_wait_cap_ms + snapshot_timeout_ms", "<", "task_timeout_ms",
     "a command that outlives one blocking read can still finish within one attempt"),
    ("heartbeat_stale_ms + acquisition_interval_ms", "<", "task_timeout_ms",
     "an ownership change can happen while one attempt runs (the incident's shape)"),
)
