"""The agent's rules and configuration: ``AgentRules`` (Rev C or an old agent), the
scripts processes run, and the working directories that exist.

Theory of operation
-------------------
``AgentRules`` carries two kinds of thing. Fields are values: the real versions' one
difference (``understands_tool_calls``: Rev C or an old agent, US8) and durations
(``age_margin_ms``, ``handler_ms``, the reap age, the output wait cap), which a scenario
or the explorer's timing may change. Methods are hooks: each one is a rule of the
contract that Rev C follows and that the handlers call where the rule applies (the
record goes in before the run, which records a new record keeps, the cancel marker, a
tool call's process ID, chat isolation, the stop rule, which exited processes a
list keeps). The handlers read straight as
Rev C; a planted bug is a subclass that overrides one hook (planted.py), never a branch
in a handler. The only branch on these rules that remains in the agent is the real
version difference: an old agent has no tool call middleware and no cancel route.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import EMPTY, CachedRepr, FMap, Request, note
from ..identity import Key
from .state import AgentState, ChatRecords, Effects, Process, Record, Recorded
from .store import _insert, _set_record, current, uptime_ms


@dataclass(frozen=True, repr=False)
class AgentRules(CachedRepr):
    """The agent's contract rules, so a variant or a planted bug is a small object over
    the same code. ``AgentRules()`` is Rev C."""

    name: str = "rev-c"
    understands_tool_calls: bool = True  # False: an old agent (US8) ignores the headers
    age_margin_ms: int = 2_000  # ageMargin: transit allowance after chatd measured the age
    handler_ms: int = 0  # how long a handler run takes before it publishes (a slow spawn or edit)
    exited_reap_after_ms: int = 300_000  # exitedProcessReapAge
    output_wait_cap_ms: int = 300_000  # maxWaitDuration of ?wait=true reads

    # -- The record and the run (rule 1, rule 2: A1) -------------------------------------

    def record_when_proven_new(self, state: AgentState, key: Key, record: Record) -> AgentState:
        """A1: a call proven new gets its (pending) record before its handler runs, so a
        request that arrives during the run waits on it instead of running it again."""
        return _insert(state, key, record)

    def record_when_published(self, state: AgentState, key: Key, record: Record) -> AgentState:
        """The run's answer fills in the record inserted when the call was proven new,
        if the chat still holds it (a newer message may have dropped it)."""
        return _set_record(state, key, record)

    def records_kept_on_insert(self, chat: ChatRecords | None, message_id: int) -> ChatRecords:
        """The records a new record of ``message_id`` joins (section 2.4 step 5): a newer
        message (or an unknown chat) starts afresh, dropping every older message's
        records; the same message keeps its other records."""
        if chat is None or message_id > chat.latest_message_id:
            return ChatRecords(latest_message_id=message_id)
        return chat

    def proven_new(self, state: AgentState, req: Request | None, age_ms: int, now_ms: int) -> bool:
        """Rule 1's age rule (A3): with no record of the call, it is proven never received
        only when the agent has been up longer than the call's age plus the margin
        (``uptime - margin > age``, a negative age counted as 0). ``req`` is the request
        being decided (a design variant reads more of it, model/agent/designs.py)."""
        return uptime_ms(state, now_ms) - self.age_margin_ms > max(age_ms, 0)

    # -- Cancel (rule 5, section 3; US10) ------------------------------------------------

    def mark_canceled(self, state: AgentState, key: Key, now_ms: int) -> tuple[AgentState, Effects]:
        """A cancel of a call the agent never received (and can prove it never will run)
        inserts a canceled marker, so the late start is refused ``tool_call_canceled``."""
        state = _insert(state, key, Record("", True, now_ms, "", Recorded(0, "", b"")))
        return state, [note("canceled_marker", uuid=key.uuid)]

    # -- Processes (rules 6 and 9; section 4.1, 4.2, A5) ----------------------------------

    def pid_for(self, key: Key, command: str) -> str:
        """A tool call's process ID is its tool call UUID (derived from chat, message and
        provider ID), so a retry or a cancel names the same process."""
        return key.uuid

    def pid_to_stop(self, key: Key, recorded: Recorded) -> str:
        """The process a cancel stops: the one named by the cancel's tool call UUID."""
        return key.uuid

    def process_visible(self, request_chat: str | None, process_chat: str) -> bool:
        """agentproc's chat isolation for output and signal (api.go): refused only when
        the request has a chat and the process has a different, non-empty one."""
        return request_chat is None or not process_chat or process_chat == request_chat

    def stop_below(self, run_age_ms: int, threshold_ms: int) -> bool:
        """The stop rule's comparison (section 4.2): kill while run age < threshold."""
        return run_age_ms < threshold_ms

    def kept_when_exited(self, state: AgentState, proc: Process) -> bool:
        """Rule 8's exception (docs/contract.md A4.4, Rev C ``WithToolCallStore``): an
        exited process of a tool call is not reaped while its record is current (the
        latest message of its chat). A process started without tool call headers has no
        key: today's chatd and an old agent keep nothing, as agentproc did before the
        contract (``manager.list`` reaped every exited process after 5 minutes)."""
        return proc.key is not None and current(state, proc.key)


OLD_AGENT = AgentRules(name="old-agent", understands_tool_calls=False)
AGENT_VARIANTS = {"rev-c": AgentRules(), "old": OLD_AGENT}


@dataclass(frozen=True, repr=False)
class Script(CachedRepr):
    """What a process does: writes ``output_at_start``, runs ``runs_for_ms``, writes
    ``output_at_exit`` and exits with ``exit_code``."""

    runs_for_ms: int = 0
    exit_code: int = 0
    output_at_start: str = ""
    output_at_exit: str = ""
    kill_fails: bool = False  # a kill of its process group fails (EPERM): the stopper errors


@dataclass(frozen=True, repr=False)
class AgentConfig(CachedRepr):
    rules: AgentRules = AgentRules()
    scripts: FMap = EMPTY  # command -> Script
    dirs: tuple[str, ...] = ("/home/coder",)  # existing working directories
