"""The explorer's verdict memo: the properties' violations per ghost history.

Theory of operation
-------------------
A state's verdict reads only its ghost history (explore.py Rule 3) and, of the system,
its committed tool calls and chat statuses and the configuration, which one search never
changes; so ``Verdicts.verdict`` memoizes it per (property kinds, history handle, chats
handle). A new verdict comes from the history's monitor state
(model/properties/monitor.py): a history's handle holds its parent history's handle and
the step's new records, so ``Verdicts.monitor`` grows the parent's monitor state by
those records' tags, and builds the evidence of the whole history only when a property
must be checked again, a violation classified, or the parent's monitor state is no
longer kept. Under ``CHECK_MEMO`` every new verdict is compared with judging the whole
history.

``Verdicts`` is a part of model/explore_context.py's ``Context`` (its base class): it
uses the context's interner, its ``quiesced`` and its ``check`` flag, and keeps its own
tables (``verdict_tables``).
"""

from __future__ import annotations

from . import properties as props
from .interning import Id
from .properties.evidence import committed_calls


def ghost_trace(node) -> list[dict]:
    """A state's ghost history as trace records, what the properties read."""
    return [h.value for h in node.ghost]


class Verdicts:
    """The verdict memo of a search's ``Context`` (theory of operation above)."""

    # The monitor states kept, in each of two generations (``monitor``): a state's is
    # asked for by its children a breadth-first level later, and a miss costs one
    # judgement of the whole history (as every verdict did before).
    MONITORS_LIMIT = 50_000

    def verdict_tables(self) -> None:
        """The memo's tables, made by the context's ``__init__``."""
        self.verdicts: dict = {}  # (kinds, history handle, chats handle) -> violations
        self.calls: dict = {}  # chats handle -> the committed tool calls and their number (``_calls_of``)
        self.call_sets: dict = {}  # committed tool calls (a tuple) -> their number
        self.monitors: dict = {}  # (ghost history handle, calls' number) -> its monitor state
        self.monitors_old: dict = {}  # the previous generation (``monitor``)
        self.monitor_states: dict = {}  # each distinct monitor state, to share one object
        self.tags: dict = {}  # ghost record handle -> its properties.record_tags

    def verdict(self, node, kinds: tuple, chats: Id | None = None) -> list:
        """The properties' violations in this state. They read the ghost history and, of
        the system, only the chats (committed tool calls, statuses) and the
        configuration, which is the same for the whole search: so the verdict is
        memoized on those. A new one comes from the history's monitor state
        (model/properties/monitor.py, ``monitor``), which the evidence of the whole
        history is built for only when a property must be checked again or a violation
        classified: the same violations as judging the whole history. ``chats``: the
        handle of the state's chats when the caller has it (``chats_of``)."""
        if chats is None or self.check:
            found = self.interner.handle(node.system.db.chats)
            if chats is not None and chats is not found:
                raise AssertionError("the verdict's chats handle differs from the state's")
            chats = found
        key = (kinds, node.order, chats)
        found = self.verdicts.get(key)
        if found is None:
            calls = self.calls.get(chats)
            if calls is None:
                calls = self.calls[chats] = self._calls_of(node.system)
            built = []

            def evidence() -> props.Evidence:
                if not built:
                    built.append(props.Evidence(ghost_trace(node), node.system, calls[0]))
                return built[0]
            state = self.monitor(node.order, calls[1], evidence)
            # An empty verdict is the one empty tuple: most states have one, and the memo
            # keeps them all.
            found = self.verdicts[key] = props.Monitor.violations(state, kinds, self.quiesced(node.system),
                                                                  evidence) or ()
            if self.check:
                whole = props.violations_of(ghost_trace(node), node.system, kinds, calls[0])
                if whole != list(found):
                    raise AssertionError(f"the monitor's verdict {found} differs from the whole history's {whole}")
        return found

    def _calls_of(self, s) -> tuple:
        """The committed tool calls and their number in this search (a monitor's calls)."""
        calls = committed_calls(s)
        frozen = tuple(calls)
        number = self.call_sets.get(frozen)
        if number is None:
            number = self.call_sets[frozen] = len(self.call_sets)
        return calls, number

    def monitor(self, order: Id, calls: int, evidence) -> tuple:
        """The monitor state of the ghost history ``order`` under the committed calls
        numbered ``calls`` (``_calls_of``): memoized; else grown from its parent
        history's (a sequence handle's value is its parent's handle and the new
        records), which its parent state computed a breadth-first level before; else,
        when the parent's is not kept (other calls, or a level wider than the memo),
        made from ``evidence()``, the whole history's. The memo keeps two generations
        of ``MONITORS_LIMIT``; equal states are one object (they are few, except in
        worlds of many findings, whose violations name their records)."""
        key = (order, calls)
        states = self.monitors
        found = states.get(key)
        if found is None:
            found = self.monitors_old.get(key)
        if found is not None:
            return found
        seq = order.value  # ("seq", parent's handle, *new records), or None: the empty history
        parent = None
        if seq is not None:
            parent_key = (seq[1], calls)
            parent = states.get(parent_key)
            if parent is None:
                parent = self.monitors_old.get(parent_key)
        if parent is None:
            found = props.Monitor.of(evidence())
        else:
            tags_of = self.tags
            tags = ()
            for h in seq[2:]:
                more = tags_of.get(h)
                if more is None:
                    more = tags_of[h] = props.record_tags(h.value)
                tags += more
            found = props.Monitor.grown(parent, tags, evidence)
        shared = self.monitor_states
        if len(shared) >= self.MONITORS_LIMIT:
            shared.clear()  # sharing only saves memory; a world of many findings refills it
        found = shared.setdefault(found, found)
        if len(states) >= self.MONITORS_LIMIT:
            self.monitors_old = states
            states = self.monitors = {}
        states[key] = found
        return found
