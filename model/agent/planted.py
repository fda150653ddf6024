"""The agent's planted bugs: each a subclass of ``AgentRules`` that overrides the hook of
one rule, so the handlers keep reading as Rev C (model/planted_bugs.py names them, says
which property catches each and where).

Theory of operation
-------------------
A planted bug is a small, plausible mistake in one rule of the contract. Here a mistake
is a method: ``RunBeforeRecord`` records nothing when a call is proven new and inserts
the record when the run publishes, instead of the other way round. ``with_bugs`` makes
a rules object that follows the given bugs on top of any rules value (Rev C, an old
agent, a scenario's margins and durations): the field values are kept and the class is
the bugs' subclass; for several bugs it is one class built from them, made once per
combination so that equal rules compare equal. Values (the age margin) need no hook: a
planted bug sets them as fields (``PlantedBug.agent``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import fields
from functools import cache

from ..identity import Key
from .rules import AgentRules
from .state import AgentState, ChatRecords, Effects, Record, Recorded
from .store import _insert


class RunBeforeRecord(AgentRules):
    """run-before-record (breaks A1): the handler runs before the record exists, so a
    request that arrives during a slow run is proven new and runs again."""

    def record_when_proven_new(self, state: AgentState, key: Key, record: Record) -> AgentState:
        return state

    def record_when_published(self, state: AgentState, key: Key, record: Record) -> AgentState:
        return _insert(state, key, record)


class RecordsLostOnNewMessage(AgentRules):
    """records-lost-on-new-message: every insert starts the chat afresh, so the same
    message's other records are lost and a retried batch runs again."""

    def records_kept_on_insert(self, chat: ChatRecords | None, message_id: int) -> ChatRecords:
        return ChatRecords(latest_message_id=message_id)


class CancelWithoutMarker(AgentRules):
    """cancel-without-marker (breaks US10): a cancel of a call never received records
    nothing, so the late start still runs."""

    def mark_canceled(self, state: AgentState, key: Key, now_ms: int) -> tuple[AgentState, Effects]:
        return state, []


class StopRuleInclusive(AgentRules):
    """stop-rule-inclusive: the stop rule kills at run age == threshold too, so a
    foreground process exactly at its deadline is killed."""

    def stop_below(self, run_age_ms: int, threshold_ms: int) -> bool:
        return run_age_ms <= threshold_ms


class PidFromCommand(AgentRules):
    """pid-from-command: a tool call's process ID comes from its command, a cancel stops
    the process its recorded answer names, and processes are looked up without the chat,
    so another chat's cancel, output read or signal reaches the process."""

    def pid_for(self, key: Key, command: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, "command:" + command))

    def pid_to_stop(self, key: Key, recorded: Recorded) -> str:
        try:
            return json.loads(recorded.body.decode("utf-8")).get("id", key.uuid)
        except (ValueError, AttributeError):
            return key.uuid

    def process_visible(self, request_chat: str | None, process_chat: str) -> bool:
        return True


def with_bugs(rules: AgentRules, bugs: tuple[type[AgentRules], ...]) -> AgentRules:
    """``rules`` (its field values) following the overrides of ``bugs`` as well as any it
    already follows. No bugs: ``rules`` itself."""
    cls = _combined(type(rules), tuple(bugs))
    if cls is type(rules):
        return rules
    return cls(**{f.name: getattr(rules, f.name) for f in fields(rules)})


@cache
def _combined(base: type[AgentRules], bugs: tuple[type[AgentRules], ...]) -> type[AgentRules]:
    """One class per combination (cached, so rules built twice compare equal): the bugs
    first in the method order, then ``base``. A bug ``base`` already follows is skipped."""
    new = tuple(dict.fromkeys(b for b in bugs if not issubclass(base, b)))
    if not new:
        return base
    if len(new) == 1 and base is AgentRules:
        return new[0]
    name = "".join(b.__name__ for b in new) + base.__name__
    return type(name, (*new, base), {"__doc__": f"{base.__name__} with {', '.join(b.__name__ for b in new)}."})
