"""The transition memo's edits: a memoized step as edits, and their replay onto a state.

Theory of operation
-------------------
model/explore_context.py ``Context.apply`` (model/explore.py Rule 7) runs a step once
per footprint and keeps what it did as a ``Delta``: the node states and small world
facts it replaced whole, the message it took out of the network, the messages and
timers it added (numbered from the counter of the state it ran on), and its keyed edits
of the timer table and the open requests. This module is that record and the ways of
laying it onto another state with the same footprint, which are the search's commonest
steps:

- ``replay``: the step itself, its new messages and timers renumbered from the other
  state's counter (``renumber``; the last ``RENUMBERED_KEPT`` shifts kept on the delta);
- ``settled``: a no-op delivery that settling found (Rule 6), which keeps the state's
  own node objects and moves no number;
- ``edited``: a table's keyed edits made in one copy, the same table ``FMap.set`` and
  ``remove`` would make, and the same object where they change nothing.

Nothing here decides when a delta fits or computes a key: model/explore_memo.py's
``TransitionMemo`` does, and under ``CHECK_MEMO`` checks every replay against
``system.apply``; it and model/explore_context.py name these ``_Delta``, ``_replay`` and
so on.
"""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from dataclasses import dataclass, field, fields

from . import system as msys
from .core import FMap

# The System fields that a step replaces whole (node states and small world facts); the
# shared tables (messages, timers, open requests) are edited by key instead (Rule 7).
WHOLE = ("agent", "agent_incarnation", "agent_files", "replicas", "replica_boots", "db", "partitions",
          "dials_waiting")

@dataclass(frozen=True)
class Delta:
    """What one step did, as edits another state with the same footprint can take."""

    base_seq: int  # the sequence counter of the state it was computed on
    whole: tuple  # (field, new value) for the System fields it replaced
    drops_env: bool  # the delivered (or lost) message left the network
    added: tuple  # new Envelopes, numbered from base_seq
    timer_ops: tuple  # ("timer_set", key, Timer) | ("timer_cancel", key) | ("timers_of_node_cancel", node)
    open_ops: tuple  # ("open_set", req_id, value) | ("open_remove", req_id)
    guards: tuple  # (req_id, value) of the open requests it read: the state must agree
    seq_inc: int
    ghost: tuple  # handles of its ghost records, in order
    # It adds no ghost record and no message and leaves the agent, the replicas and the
    # database equal to those of the state it was computed on, whose handles the memo
    # key of a delivery to chatd holds: Rule 6's no-op test but for the timers (``_noop``).
    quiet: bool = False
    to_chatd: bool = False  # one of its new messages goes to chatd (``_may_unsettle``)
    # Caches of a frozen value, made on first use (written through ``__dict__``):
    # shift -> its new messages and timers numbered from another counter (``replay``),
    # the last ``RENUMBERED_KEPT`` shifts: a step is replayed at a few distances from
    # its own counter again and again, and renumbered messages are large to keep;
    renumbered: dict | None = field(default=None, compare=False, repr=False)
    # the handle of the timers before -> after it, without sequence numbers
    # (``Context.timers_key``), which its timer edits decide.
    timers_after: dict | None = field(default=None, compare=False, repr=False)


_DELTA_FIELDS = tuple(f.name for f in fields(Delta))  # (declaration order)


def new_delta(base_seq, whole, drops_env, added, timer_ops, open_ops, guards, seq_inc, ghost, quiet,
              to_chatd) -> Delta:
    """``Delta(...)`` without its dataclass ``__init__``, which a frozen class generates
    as interpreted code setting each field through ``object.__setattr__``: the memo makes
    one per step it runs for real. The fields in their declaration order, caches unset
    (``strict``: a field added to ``Delta`` and not here fails at once)."""
    delta = object.__new__(Delta)
    # Field by field, not through ``__dict__``: an instance whose dict is never asked for
    # keeps its fields in CPython's compact inline values, 30 bytes a state less in the 1 s
    # world, where the memo keeps a delta per distinct step.
    for name, value in zip(_DELTA_FIELDS, (base_seq, whole, drops_env, added, timer_ops, open_ops, guards, seq_inc,
                                           ghost, quiet, to_chatd, None, None), strict=True):
        _set_attr(delta, name, value)
    return delta


# How many shifts a delta keeps its renumbered messages and timers for: the default
# world's first 10,000 states take 3.8% fewer instructions with every shift kept, 2.4%
# with 3; every shift costs the 1 s world 100 bytes per state.
RENUMBERED_KEPT = 4

_KEY = itemgetter(0)  # a sorted pair's key (``edited``)
_set_attr = object.__setattr__  # (a System is frozen: a replayed one's fields are given around ``__setattr__``)


def replay(s: msys.System, action, d: Delta, token: object = None) -> msys.System:
    """Rule 7: a memoized step's edits on another state with the same footprint. New
    messages and timers are numbered from this state's counter, as the step would have.
    Given the context's ``token``, the new timer table gets its handle from the old
    one's (``Context.timers_key``) through the delta's ``timers_after``."""
    out = object.__new__(msys.System)
    fields_ = s.__dict__.copy()  # (a copy given to the new object: 1.4x faster than an update)
    _set_attr(out, "__dict__", fields_)
    fields_["now_ms"] = action.at_ms
    for name, value in d.whole:
        fields_[name] = value
    shift = s.seq - d.base_seq
    in_flight = s.in_flight
    if d.drops_env:
        seq = action.seq
        in_flight = tuple([e for e in in_flight if e.seq != seq])
    if shift == 0:
        added, timer_ops = d.added, d.timer_ops
    else:
        cache = d.renumbered
        if cache is None:
            cache = d.__dict__["renumbered"] = {}
        found = cache.get(shift)
        if found is None:
            if len(cache) >= RENUMBERED_KEPT:
                cache.clear()
            found = cache[shift] = (
                tuple([renumber(e, shift) for e in d.added]),
                tuple([op if op[0] != "timer_set" else (op[0], op[1], renumber(op[2], shift)) for op in d.timer_ops]))
        added, timer_ops = found
    if added:
        in_flight += added
    fields_["in_flight"] = in_flight
    if timer_ops:
        before = s.timers
        timers = fields_["timers"] = edited(before, timer_ops)
        if token is not None and timers is not before:
            memo = before._fp
            if memo is not None and memo[0] is token and d.timers_after is not None:
                after = d.timers_after.get(memo[1])
                if after is not None:
                    timers._fp = (token, after)
    if d.open_ops:
        fields_["open_requests"] = edited(s.open_requests, d.open_ops)
    fields_["seq"] = s.seq + d.seq_inc
    return out


def edited(table: FMap, ops: tuple) -> FMap:
    """A replayed step's edits of the timers or the open requests (``Delta.timer_ops``,
    ``open_ops``) in one copy of the table's index, not one ``FMap.set`` or ``remove``
    (and a new map) each: a replay makes two on average, and is the search's commonest
    step. The sorted pairs are spliced as ``FMap.set`` does. The same table as those
    calls made, and the same object where they changed nothing (a removal of a key that
    is not there), which ``system_key`` and ``_timers_after`` test for."""
    index = None
    items = table._items
    for op in ops:
        kind = op[0]
        if kind == "timers_of_node_cancel":
            # (the step builds a new table here whatever it holds)
            node = op[1]
            items = tuple([(k, t) for k, t in items if t.node != node])
            index = dict(items)
            continue
        key = op[1]
        if index is None:
            if kind != "timer_set" and kind != "open_set" and key not in table._index:
                continue  # a removal of what is not there
            index = table._index.copy()
        # The key's place among the pairs, comparing keys only (``FMap.set`` probes with
        # the 1-tuple ``(key,)``, which finds the same place: a pair with an equal key
        # sorts after it; a probe here compares the keys once, not for equality first).
        at = bisect_left(items, key, key=_KEY)
        there = at < len(items) and items[at][0] == key
        if kind == "timer_set" or kind == "open_set":
            index[key] = op[2]
            items = items[:at] + ((key, op[2]),) + items[at + 1 if there else at:]
        elif there:  # timer_cancel, open_remove
            del index[key]
            items = items[:at] + items[at + 1:]
    if index is None:
        return table
    return FMap._sorted(items, index)



NODES = ("agent", "replicas", "db")


def settled(s: msys.System, seq: int, d: Delta) -> msys.System:
    """``replay`` of a no-op delivery that ``settle`` found (``Delta.quiet`` and
    ``_noop``): it only takes the message out of the network and edits the open
    requests. The agent, replicas and database it replaced have the handles of ``s``'s
    own (``quiet``), so ``s``'s objects are kept, which later keys read by identity
    (``system_key``); its timer edits cancel timers that are not armed, and it makes
    no message or timer, so no number moves."""
    out = object.__new__(msys.System)
    fields_ = s.__dict__.copy()  # (a copy given to the new object: 1.4x faster than an update)
    _set_attr(out, "__dict__", fields_)
    for name, value in d.whole:
        if name not in NODES:
            fields_[name] = value
    if d.drops_env:
        fields_["in_flight"] = tuple([e for e in s.in_flight if e.seq != seq])
    if d.open_ops:
        fields_["open_requests"] = edited(s.open_requests, d.open_ops)
    return out


def new_action(cls, at_ms: int, seq: int, what: str):
    """A ``Deliver`` (or ``Drop``) without its dataclass ``__init__`` (a frozen class's
    fields are set one ``object.__setattr__`` each): settling makes one per candidate."""
    action = object.__new__(cls)
    action.__dict__.update(at_ms=at_ms, seq=seq, what=what)
    return action


def renumber(obj, shift: int):
    """A memoized step's new message or timer, numbered from another counter. Its
    explorer memos (keys without the number) carry over."""
    new = object.__new__(type(obj))
    fields_ = new.__dict__
    fields_.update(obj.__dict__)
    fields_["seq"] = obj.seq + shift
    return new
