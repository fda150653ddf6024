"""Exhaustive exploration of small worlds: breadth-first search over ``system.apply``.

Theory of operation
-------------------
The explorer drives the same ``model.system.apply`` as the simpy world, but instead of
drawing one future it takes every one: in each state, every action the world could take
next (``enabled``) is applied, and the resulting states are deduplicated by a canonical
fingerprint. Breadth-first order makes the first violation found for a property the one
with the shortest path, which is returned as a list of labelled actions that ``replay``
(and ``toolcall-sim replay``) runs again.

Rule 1 (time). Time is discrete and advances only when something waits for it: a timer
        fires at its due time (all timers due at the same time may fire in any order), or
        a ``Tick`` moves time by 1 ms while a message is in flight, which is how latency is
        explored. A message must be delivered (or lost) within ``max_in_flight_ms`` of its
        sending, so time cannot pass a message's deadline. The default bound is 0: any
        order of the messages in flight, none of them outliving its millisecond.
        Durations are the small, order-preserving ``Timing.explorer()`` (1 small ms
        stands for ``scale`` real ms).
Rule 2 (budgets). Faults are actions limited by budgets: agent restarts, ownership changes
        (an immediate takeover by the other replica), interrupts, lost responses and task
        retries (attempt timeouts that fire). A spent budget disables its action.
Rule 3 (ghost history). Properties are functions of a trace. Each explored state carries
        the records the properties read (ground truth, commits, interrupts, ownership,
        restarts, the start requests' ages) for the path that reached it; it is part of the
        fingerprint, so two paths merge only when their histories agree (up to order,
        Rule 5). Safety properties are checked on every new state, eventually-properties
        on terminal states (quiesced, or nothing left to do before the horizon).
Rule 4 (interned keys). A state's identity is a tuple of small handles (model/interning.py):
        one per node state (agent, replicas, database), one for the messages in flight
        and one for the armed timers (as sets, leaving out sequence numbers, which only
        say in which order things were created), one for the ghost history, plus the
        clock, the partitions and the budgets spent. Equal components share one handle,
        so two states are compared exactly, in a few pointer comparisons, and a step
        keys only the components it changed. ``fingerprint`` renders the same identity
        as a SHA-256 digest for people and files.
Rule 5 (reordered histories merge). Two paths that reach the same system state with the
        same ghost records in another order are one state: the fingerprint takes the
        ghost as a multiset, and the kept state carries the first path's order. The
        orders differ only where steps commute (they touched different nodes and left
        the same system behind), yet a property may compare the positions of two such
        records (a start on the agent and an interrupt's commit on a replica in the same
        millisecond). So every path that reaches a kept state has the properties checked
        on its own order, at the depth where the exact search would check it. Records
        added later come after the merged ones in every order, so no later check can
        tell the orders apart. ``Bounds(merge_reordered=False)`` turns the merge
        off; a test checks that both settings find the same violations at the same depth.
Rule 6 (no-op deliveries settle). A late answer that nobody waits for any more is
        delivered in the step that made it late (``Context.settle``): its delivery
        commutes with everything, so exploring it at every position would only multiply
        states. A step that touched neither chatd's side nor sent it anything cannot
        make a delivery a no-op, so it skips the search for one (``_may_unsettle``).

Rule 7 (the transition memo). ``apply`` is pure and reads little of the state: a delivery to
        the agent reads the agent; one to a replica, a replica's timer, an interrupt or
        a takeover read the replicas and the database; a restart reads the agent's
        life; a lost message or a tick reads nothing. So a step is cached under the
        handles of what it reads (``Context._memo_key``) as the edits it made
        (``_Delta``): the node states it replaced, the messages and timers it added
        (renumbered from the counter of the state it is replayed on), the timers and
        open requests it removed, and its ghost records. Of the 119,186 steps of the
        default world's search 3,837 run ``system.apply``. A step that writes outside what
        it read is never cached; ``CHECK_MEMO`` (the tests) applies every cached step
        for real too and compares field by field.
Rule 8 (storage). A numbered state keeps only its key, its parent's number and the index
        of the parent's action that led to it; a counterexample's path is rebuilt by
        replaying those choices from the initial state. Only the frontier holds nodes.
Rule 9 (one order of events). ``Search`` makes every decision (a state's verdict, a child
        numbered or merged, ``max_states``, ``stop_on``) in one fixed order, so
        sim/explore_parallel.py can let worker processes expand states and still number
        them here in that order: the result is the same for any number of workers.

The periodic worker loops (heartbeats, acquisition polls, runner syncs) are switched off
in explored worlds (their intervals exceed the horizon): ownership changes happen through
the explicit ``takeover`` fault instead, which is what a stale heartbeat leads to.
"""

from __future__ import annotations

import gc
import hashlib
import json
from array import array
from bisect import insort
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from . import chatd
from . import properties as props
from .properties.evidence import committed_calls
from . import system as msys
from .core import FMap, Response, replace
from .interning import Id, Interner, digest_of
from .system import Tick

# Records the properties read; the rest of a step's records are not kept on paths.
_GHOST_NOTES = ("cancel_never_received", "interrupt_requested", "interruption_finished", "acquired", "task_started",
                "batch_started")
_GHOST_KINDS = ("truth", "agent_up", "agent_down", "fault")


@dataclass(frozen=True)
class Bounds:
    # How long a message may stay in flight (small ms). 0: messages reorder freely but
    # take no time; 1 lets them span a timer tick, still below the age margin (2).
    max_in_flight_ms: int = 0
    horizon_ms: int = 30  # explore no further than this (small ms): 30 s, the CLI default
    agent_restarts: int = 1
    ownership_changes: int = 1
    interrupts: int = 1
    lost_responses: int = 1
    task_retries: int = 1
    scale: int = 1000  # real ms per small ms (Timing.explorer's age margin 2 stands for 2 s)
    fifo_links: bool = True  # each directed link delivers in send order
    merge_reordered: bool = True  # Rule 5: histories that differ only in order merge


LOSABLE_ROUTES = ("start", "edit", "write", "cancel")  # the tool call answers whose loss matters
BUDGETS = ("agent_restarts", "ownership_changes", "interrupts", "lost_responses", "task_retries")


# ---------------------------------------------------------------------------
# Explored states
# ---------------------------------------------------------------------------


class Node:
    """One explored state: the system, the budgets spent, and the path's ghost history
    (Rule 3). A plain slotted class: the search makes one per transition."""

    __slots__ = ("system", "used", "ghost", "order", "bag", "settled")

    def __init__(self, system: msys.System, used: tuple, ghost: tuple, order: Id, bag: Id, settled: bool = False):
        self.system = system
        self.used = used  # budgets spent, in BUDGETS order
        self.ghost = ghost  # the ghost records in path order, as interned handles (Rule 3)
        self.order = order  # the handle of that sequence (the verdict memo's key)
        self.bag = bag  # the handle of the same records as a multiset (Rule 5); .value is the sorted tuple
        self.settled = settled  # Rule 6 has run on it (every node but the first)


def _may_unsettle(before: msys.System, after: msys.System, action) -> bool:
    """Rule 6's static half: a settled state's step can make a delivery a no-op only by
    changing chatd's side (a replica, the database), by sending a message to it, or as a
    fault or world event (which may change anything). A delivery to the agent or an
    agent timer that sends nothing to chatd leaves every other message as it was."""
    if type(action) is msys.Fault or type(action) is Tick:
        return True
    if after.replicas is not before.replicas or after.db is not before.db or after.partitions is not before.partitions:
        return True
    seq = before.seq
    return any(e.seq > seq and e.dst != msys.AGENT for e in after.in_flight)


def _ghost_records(records) -> list[dict]:
    out = []
    for rec in records:
        kind = rec.get("kind")
        if kind in _GHOST_KINDS or (kind == "note" and rec.get("note") in _GHOST_NOTES):
            out.append(rec)
        elif kind == "send" and rec.get("route") in ("start", "edit", "write", "cancel"):
            out.append(rec)
    # Sequence numbers only say in which order messages were created; two paths that
    # differ only there reach the same state.
    return [{k: v for k, v in r.items() if k != "seq"} for r in out]


def _by_n(handle: Id) -> int:
    return handle.n


def _by_digest(handle: Id) -> bytes:
    return handle.digest


# The System fields that a step replaces whole (node states and small world facts); the
# shared tables (messages, timers, open requests) are edited by key instead (Rule 7).
_WHOLE = ("agent", "agent_incarnation", "agent_files", "replicas", "replica_boots", "db", "partitions",
          "dials_waiting")
_AGENT_SIDE = frozenset({"agent"})
_CHATD_SIDE = frozenset({"replicas", "db"})
_AGENT_LIFE = frozenset({"agent", "agent_incarnation", "agent_files"})
_NOTHING = frozenset()
_ANY_BUT_DIALS = frozenset(_WHOLE) - {"dials_waiting"}


@dataclass(frozen=True)
class _Delta:
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


class Context:
    """One search's tables: the interner (Rule 4), the transition memo (Rule 7) and the
    verdict memo. A context's handles and nodes belong to it; ``explore`` makes its own."""

    # A memo this big is dropped and refilled: it only saves time, and a search that
    # outgrows it (millions of distinct steps) should not grow memory without bound.
    MEMO_LIMIT = 400_000

    def __init__(self, digests: bool = False):
        self.interner = Interner(digests)
        self.token = self.interner.token  # what this context's memos on states name it by
        # Sets (messages in flight, the ghost as a multiset) are sorted canonically: by
        # first sight in one process, by digest where processes must agree (Rule 4).
        self.sort_key = _by_digest if digests else _by_n
        self.grown: dict = {}  # (bag handle, new records) -> bag handle
        self.memo: dict = {}
        self.verdicts: dict = {}
        self.awaited: dict = {}  # (replica handle, request ID) -> chatd.awaits
        self.calm: dict = {}  # database handle -> properties.quiesced
        self.calls: dict = {}  # chats handle -> the committed tool calls (properties.evidence)
        self.hits = 0
        self.misses = 0
        self.check = CHECK_MEMO  # tests: every hit is also applied for real and compared

    # -- ghost records (Rule 3) ---------------------------------------------------
    def ghost_of(self, records) -> tuple:
        handles = []
        for rec in _ghost_records(records):
            text = json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str)
            key = ("ghost", text)
            handle = self.interner.table.get(key)
            if handle is None:
                handle = self.interner.key_of(key, json.loads(text))
            handles.append(handle)
        return tuple(handles)

    def grow(self, node: Node, new: tuple) -> tuple[tuple, Id, Id]:
        """The ghost after ``new`` records: the sequence, its handle, the multiset's handle."""
        if not new:
            return node.ghost, node.order, node.bag
        key_of = self.interner.key_of
        order = key_of(("seq", node.order) + new)
        grown = (node.bag, new)
        bag = self.grown.get(grown)
        if bag is None:
            items = list(node.bag.value)
            for h in new:
                insort(items, h, key=self.sort_key)
            items = tuple(items)
            bag = self.grown[grown] = key_of(("bag",) + items, items)
        return node.ghost + new, order, bag

    # -- steps ------------------------------------------------------------------------
    def initial_node(self, config: msys.WorldConfig) -> Node:
        st = msys.initial(config)
        key_of = self.interner.key_of
        empty = Node(None, (), (), key_of(("seq",)), key_of(("bag",), ()))
        ghost, order, bag = self.grow(empty, self.ghost_of(st.records))
        return Node(st.system, (0,) * len(BUDGETS), ghost, order, bag)

    def step(self, node: Node, action) -> tuple[Node, tuple]:
        """The node after ``action`` and the actions taken (``action`` and the deliveries
        that settled after it), which is what a path records."""
        before = node.system
        system, new_ghost = self.apply(before, action)
        ghost, order, bag = self.grow(node, new_ghost)
        if node.settled and not _may_unsettle(before, system, action):
            return Node(system, _spend(node, action), ghost, order, bag, True), (action,)
        system, settled = self.settle(system)
        return Node(system, _spend(node, action), ghost, order, bag, True), (action, *settled)

    def settle(self, s: msys.System) -> tuple[msys.System, list]:
        """Rule 6: deliver at once every message whose delivery changes nothing but the
        network (a late answer to a replica whose call was aborted, say). Such a delivery
        commutes with every other action, so exploring it at every position only
        multiplies states (a partial-order reduction); delivering it now is one of the
        behaviours anyway."""
        settled = []
        changed = True
        while changed:
            changed = False
            replicas = s.replicas
            awaited = self.awaited
            handle = self.interner.handle
            for env in s.in_flight:
                if env.dst == "agent":
                    continue  # the agent answers everything: never a no-op
                rep = replicas.get(env.dst)
                req_id = getattr(env.payload, "req_id", None)
                if rep is not None and req_id is not None:
                    known = awaited.get((handle(rep), req_id))
                    if known is None:
                        known = self.awaits(rep, req_id)
                    if known:
                        continue  # an answer its caller still waits for changes the caller
                action = msys.Deliver(s.now_ms, env.seq, env.what)
                key, _ = self._memo_key(s, action)
                delta = self._lookup(key, s) if key is not None else None
                if delta is not None:
                    # The memo knows what the delivery does: replay it only if it is a no-op.
                    if not self._noop(s, delta):
                        continue
                    self.hits += 1
                    t, ghost = _replay(s, action, delta), delta.ghost
                else:
                    try:
                        t, ghost = self.apply(s, action)
                    except msys.ReplayMismatch:
                        continue
                if (t.seq == s.seq and t.replicas == s.replicas and t.db == s.db and t.timers == s.timers
                        and t.agent == s.agent and not ghost):
                    settled.append(action)
                    s = t
                    changed = True
                    break
        return s, settled

    def timers_key(self, timers: FMap) -> Id:
        """The handle of the armed timers without their sequence numbers (cached on the map)."""
        memo = timers._fp
        if memo is not None and memo[0] is self.token:
            return memo[1]
        found = self.interner.key_of(("timers", *[(k, t.due_ms) for k, t in timers._items]))
        timers._fp = (self.token, found)
        return found

    def awaits(self, rep, req_id: str) -> bool:
        key = (self.interner.handle(rep), req_id)
        found = self.awaited.get(key)
        if found is None:
            found = self.awaited[key] = chatd.awaits(rep, req_id)
        return found

    def _noop(self, s: msys.System, d: _Delta) -> bool:
        """Whether a memoized delivery leaves the nodes, timers and counter as they are
        (Rule 6's test, read off the delta instead of a trial step)."""
        if d.seq_inc or d.ghost:
            return False
        iid = self.interner.iid
        for name, value in d.whole:
            if name in ("agent", "replicas", "db") and iid(value) is not iid(s.__dict__[name]):
                return False
        for op in d.timer_ops:
            if op[0] != "timer_cancel" or op[1] in s.timers:
                return False
        return True

    def _lookup(self, key, s: msys.System) -> _Delta | None:
        for delta in self.memo.get(key, ()):
            if not delta.guards:
                return delta
            get = s.open_requests.get
            for k, v in delta.guards:
                if get(k) != v:
                    break
            else:
                return delta
        return None

    def quiesced(self, s: msys.System) -> bool:
        key = self.interner.handle(s.db)
        found = self.calm.get(key)
        if found is None:
            found = self.calm[key] = props.quiesced(s)
        return found

    def apply(self, s: msys.System, action) -> tuple[msys.System, tuple]:
        """``system.apply`` through the transition memo (Rule 7): the new system and the
        handles of the step's ghost records."""
        key, footprint = self._memo_key(s, action)
        if key is not None:
            delta = self._lookup(key, s)
            if delta is not None:
                self.hits += 1
                out = _replay(s, action, delta)
                if self.check:
                    self._check(s, action, out, delta.ghost)
                return out, delta.ghost
        self.misses += 1
        log: list = [] if key is not None else None
        st = msys.apply(s, action, log)
        ghost = self.ghost_of(st.records)
        if key is not None:
            delta = self._delta(s, action, st.system, log, footprint, ghost)
            if delta is not None:
                if len(self.memo) >= self.MEMO_LIMIT:
                    self.memo.clear()
                self.memo.setdefault(key, []).append(delta)
        return st.system, ghost

    def _memo_key(self, s: msys.System, action) -> tuple[Any, frozenset]:
        """Rule 7: the part of the state a step reads, or None where it is not memoized.
        A delivery to the running agent reads the agent; a delivery or timer on a replica
        reads the replicas and the database (a commit's publish runs every replica); a
        lost message reads nothing; anything else reads every node."""
        iid = self.interner.handle
        t = type(action)
        if t is msys.Deliver or t is msys.Drop:
            seq = action.seq
            for env in s.in_flight:
                if env.seq == seq:
                    break
            else:
                return None, _NOTHING  # system.apply says why it does not fit
            memo = env.__dict__.get("_what")
            what = memo[1] if memo is not None and memo[0] is self.token else self.envelope(env, False)
            if t is msys.Drop:
                return ("lose", what, action.at_ms), _NOTHING
            if env.dst == msys.AGENT:
                if s.agent is not None:
                    return ("agent", what, action.at_ms, iid(s.agent), s.partitions), _AGENT_SIDE
            elif env.dst in s.replicas:
                return ("chatd", what, action.at_ms, iid(s.replicas), iid(s.db), s.partitions), _CHATD_SIDE
        elif t is msys.Fire:
            timer = s.timers.get((action.node, action.name))
            if timer is None or timer.due_ms > action.at_ms:
                return None, _NOTHING
            if action.node == msys.AGENT:
                if s.agent is not None:
                    return ("agent-timer", action.name, action.at_ms, iid(s.agent)), _AGENT_SIDE
            elif action.node in s.replicas:
                return ("chatd-timer", action.node, action.name, action.at_ms, iid(s.replicas), iid(s.db)), _CHATD_SIDE
        if t is Tick:
            return ("tick", action.at_ms), _NOTHING  # time passes; nothing runs
        if s.dials_waiting:
            return None, _NOTHING  # they hold messages by sequence number: not worth it
        if t is msys.Fault:
            # The explorer's faults read one side each: a restart the agent's life, an
            # interrupt or a takeover chatd's rows and replicas (model/faults.py).
            if action.kind == "agent_restart":
                return (("restart", action.params, action.at_ms, iid(s.agent), s.agent_incarnation,
                         iid(s.agent_files)), _AGENT_LIFE)
            if action.kind in ("interrupt", "takeover"):
                return (("chatd-fault", action.kind, action.params, action.at_ms, iid(s.replicas), iid(s.db)),
                        _CHATD_SIDE)
        if t is msys.Fault:
            what = (t, action.kind, action.params)
        elif t is msys.Fire:
            what = (t, action.node, action.name)
        elif t is Tick:
            what = (t,)
        else:
            return None, _NOTHING  # an action the explorer does not take (a batch of idle firings)
        return (("any",) + what + (action.at_ms, iid(s.agent), s.agent_incarnation, iid(s.agent_files),
                                   iid(s.replicas), iid(s.replica_boots), iid(s.db), s.partitions)), _ANY_BUT_DIALS

    def _delta(self, s, action, out, log, footprint, ghost) -> _Delta | None:
        whole = []
        iid = self.interner.iid
        for name in _WHOLE:
            before, after = s.__dict__[name], out.__dict__[name]
            if after is before:
                continue
            if name not in footprint:
                if name == "dials_waiting" or iid(after) is not iid(before):
                    return None  # it wrote outside what it read: not a local step
                continue
            whole.append((name, after))
        kept = [e for e in out.in_flight if e.seq <= s.seq]
        added = tuple(e for e in out.in_flight if e.seq > s.seq)
        dropped = len(s.in_flight) - len(kept)
        seq = getattr(action, "seq", None)
        if dropped > 1 or (dropped == 1 and (seq is None or any(e.seq == seq for e in kept))):
            return None
        if out.in_flight != tuple(kept) + added:
            return None
        timer_ops = tuple(op for op in log if op[0].startswith("timer"))
        open_ops = tuple(op for op in log if op[0] in ("open_set", "open_remove"))
        guards = tuple((op[1], op[2]) for op in log if op[0] == "open_read")
        return _Delta(s.seq, tuple(whole), dropped == 1, added, timer_ops, open_ops, guards, out.seq - s.seq, ghost)

    def _check(self, s, action, out, ghost) -> None:
        """``CHECK_MEMO``: the memoized step must equal the real one, field by field."""
        st = msys.apply(s, action)
        real = st.system
        iid = self.interner.iid
        for name in _WHOLE:
            if iid(real.__dict__[name]) is not iid(out.__dict__[name]):
                raise AssertionError(f"memo differs in {name} after {action.label()}")
        for name in ("in_flight", "timers", "open_requests", "seq", "now_ms"):
            if real.__dict__[name] != out.__dict__[name]:
                raise AssertionError(f"memo differs in {name} after {action.label()}")
        if self.ghost_of(st.records) != ghost:
            raise AssertionError(f"memo differs in its ghost records after {action.label()}")

    # -- fingerprints (Rule 4) ---------------------------------------------------------
    def envelope(self, env: msys.Envelope, with_sent_at: bool = True) -> Id:
        """A message's handle without its sequence number (which only says in which order
        messages were created); its sending time counts for the state, not for a step."""
        slot = "_fp" if with_sent_at else "_what"
        memo = env.__dict__.get(slot)
        if memo is not None and memo[0] is self.token:
            return memo[1]
        key = (env.src, env.dst, self.interner.iid(env.payload), env.what)
        if with_sent_at:
            key += (env.sent_at_ms,)
        handle = self.interner.key_of(key)
        env.__dict__[slot] = (self.token, handle)
        return handle

    def key(self, node: Node, reorder: bool = True) -> tuple:
        """The state's identity in this search: a tuple of handles and small values. Two
        nodes have equal keys exactly when their system states are equal (sequence
        numbers and labels aside), their budgets are, and their ghost histories are (as
        multisets with ``reorder``, Rule 5)."""
        s = node.system
        iid = self.interner.handle
        key_of = self.interner.key_of
        envelope = self.envelope
        order = self.sort_key
        handles = []
        for e in s.in_flight:
            memo = e.__dict__.get("_fp")
            handles.append(memo[1] if memo is not None and memo[0] is self.token else envelope(e))
        if len(handles) > 1:
            handles.sort(key=order)
        msgs = key_of(("msgs", *handles))
        timers = self.timers_key(s.timers)
        dials = key_of(tuple(sorted((envelope(e) for e in s.dials_waiting), key=order))) if s.dials_waiting else ()
        return (s.now_ms, iid(s.agent), s.agent_incarnation, iid(s.agent_files), iid(s.replicas), iid(s.db), msgs,
                timers, s.partitions, dials, node.used, node.bag if reorder else node.order)

    def verdict(self, node: Node, kinds: tuple) -> list:
        """The properties' violations in this state. They read the ghost history and, of
        the system, only the chats (committed tool calls, statuses) and the
        configuration, which is the same for the whole search: so the verdict is
        memoized on those."""
        chats = self.interner.handle(node.system.db.chats)
        key = (kinds, node.order, chats)
        found = self.verdicts.get(key)
        if found is None:
            calls = self.calls.get(chats)
            if calls is None:
                calls = self.calls[chats] = committed_calls(node.system)
            found = self.verdicts[key] = props.violations_of(ghost_trace(node), node.system, kinds, calls)
        return found


def _replay(s: msys.System, action, d: _Delta) -> msys.System:
    """Rule 7: a memoized step's edits on another state with the same footprint. New
    messages and timers are numbered from this state's counter, as the step would have."""
    out = object.__new__(msys.System)
    fields_ = out.__dict__
    fields_.update(s.__dict__)
    fields_["now_ms"] = action.at_ms
    for name, value in d.whole:
        fields_[name] = value
    shift = s.seq - d.base_seq
    in_flight = s.in_flight
    if d.drops_env:
        seq = action.seq
        in_flight = tuple([e for e in in_flight if e.seq != seq])
    if d.added:
        in_flight += d.added if shift == 0 else tuple([_renumber(e, shift) for e in d.added])
    fields_["in_flight"] = in_flight
    if d.timer_ops:
        timers = s.timers
        for op in d.timer_ops:
            kind = op[0]
            if kind == "timer_set":
                timers = timers.set(op[1], op[2] if shift == 0 else _renumber(op[2], shift))
            elif kind == "timer_cancel":
                timers = timers.remove(op[1])
            else:
                timers = FMap((k, t) for k, t in timers.items() if t.node != op[1])
        fields_["timers"] = timers
    if d.open_ops:
        open_requests = s.open_requests
        for op in d.open_ops:
            if op[0] == "open_set":
                open_requests = open_requests.set(op[1], op[2])
            else:
                open_requests = open_requests.remove(op[1])
        fields_["open_requests"] = open_requests
    fields_["seq"] = s.seq + d.seq_inc
    return out


def _renumber(obj, shift: int):
    """A memoized step's new message or timer, numbered from another counter. Its
    explorer memos (keys without the number) carry over."""
    new = object.__new__(type(obj))
    fields_ = new.__dict__
    fields_.update(obj.__dict__)
    fields_["seq"] = obj.seq + shift
    return new


# Tests set this: every memoized step is checked against system.apply (model/explore.py
# Rule 7), so a footprint that misses something the step reads fails loudly.
CHECK_MEMO = False

_DEFAULT: Context | None = None


def default_context() -> Context:
    """The context of the module-level helpers (``initial_node``, ``step``), which the
    hypothesis state machine and tests drive one step at a time."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Context()
    return _DEFAULT


def initial_node(config: msys.WorldConfig) -> Node:
    return default_context().initial_node(config)


def step(node: Node, action) -> tuple[Node, tuple]:
    return default_context().step(node, action)


def ghost_trace(node: Node) -> list[dict]:
    return [h.value for h in node.ghost]


def fingerprint(node: Node, reorder: bool = True) -> str:
    """A canonical digest of the state for people and files (the GraphML names, tests
    across processes): SHA-256 of the canonical ``repr``s, sequence numbers and labels
    left out, the ghost as a multiset with ``reorder``. The search itself compares
    interned keys (``Context.key``): equal exactly when these digests' inputs are."""
    s = node.system
    ghost = [json.dumps(h.value, sort_keys=True, separators=(",", ":"), default=str) for h in node.ghost]
    parts = (
        str(s.now_ms),
        repr(s.agent),
        str(s.agent_incarnation),
        repr(s.agent_files),
        repr(s.replicas),
        repr(s.db),
        "\x1f".join(sorted(repr((e.src, e.dst, e.payload, e.sent_at_ms)) for e in s.in_flight)),
        "\x1f".join(sorted(f"{k!r}@{t.due_ms}" for k, t in s.timers.items())),
        repr(s.partitions),
        "\x1f".join(sorted(repr((e.src, e.payload)) for e in s.dials_waiting)),
        repr(node.used),
        "\x1f".join(sorted(ghost) if reorder else ghost),
    )
    return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()


def _is_attempt_timeout(name: str) -> bool:
    return name.endswith("/timeout")


def enabled(node: Node, bounds: Bounds) -> list:
    """Every action the world may take next, in a deterministic order (Rule 1, Rule 2)."""
    s = node.system
    restarts, ownership, interrupts, lost, retries = node.used  # BUDGETS order
    now = s.now_ms
    in_flight = s.in_flight
    actions: list = []
    deadline = None
    if in_flight:
        deadline = min(e.sent_at_ms for e in in_flight) + bounds.max_in_flight_ms
        heads = _link_heads(in_flight) if bounds.fifo_links else in_flight
        actions = [_action(msys.Deliver, at_ms=now, seq=env.seq, what=env.what) for env in heads]
        if lost < bounds.lost_responses:
            for env in heads:
                if env.src == msys.AGENT and env.route in LOSABLE_ROUTES and isinstance(env.payload, Response):
                    actions.append(_action(msys.Drop, at_ms=now, seq=env.seq, what=env.what))
    timers = s.timers._items
    if timers:
        horizon = bounds.horizon_ms
        first = min((t.due_ms for _, t in timers if t.due_ms <= horizon), default=None)
        if first is not None and (deadline is None or first <= deadline):
            at = max(now, first)
            for (node_name, name), t in timers:  # sorted by (node, name)
                if t.due_ms != first:
                    continue
                if _is_attempt_timeout(name) and retries >= bounds.task_retries:
                    continue
                actions.append(_action(msys.Fire, at_ms=at, node=node_name, name=name))
    # Only tool call requests may be held while time passes: their transit time is what the
    # age rule is about. Every other message is delivered before time moves on.
    if in_flight and all(e.dst == msys.AGENT and e.route in LOSABLE_ROUTES for e in in_flight) \
            and now + 1 <= min(deadline, bounds.horizon_ms):
        nxt = min((t.due_ms for _, t in timers), default=None)
        if nxt is None or now + 1 <= nxt:
            actions.append(Tick(now + 1))
    if restarts < bounds.agent_restarts and s.agent is not None:
        actions.append(msys.Fault(now, "agent_restart"))
    # Interrupts and ownership changes may strike any chat, in the world's chat order.
    may_interrupt = interrupts < bounds.interrupts
    may_take_over = ownership < bounds.ownership_changes
    if may_interrupt or may_take_over:
        chats = s.db.chats
        rows = [(spec.chat_id, chats.get(spec.chat_id)) for spec in s.config.chats]
        if may_interrupt:
            for chat, row in rows:
                if row is not None and row.status == chatd.RUNNING:
                    actions.append(msys.Fault(now, "interrupt", (("chat", chat),)))
        if may_take_over:
            for chat, row in rows:
                if row is not None and row.worker_id and row.status in chatd.RUNNABLE:
                    owner = msys.chat_owner(s, chat)
                    others = [r for r in s.config.replicas if r != owner and s.replicas.get(r) is not None]
                    if owner is not None and others:
                        actions.append(msys.Fault(now, "takeover", (("chat", chat), ("to", others[0]))))
    return actions


def _action(cls, **fields_):
    """A frozen action without its dataclass ``__init__`` (one ``object.__setattr__`` per
    field): ``enabled`` makes one per delivery and timer of every state."""
    action = object.__new__(cls)
    action.__dict__.update(fields_)
    return action


def _connection(env: msys.Envelope) -> tuple:
    """Which connection a message travels on: chatd dials the agent once per task attempt
    (the request IDs start with ``<worker>/t<n>/a<m>``), and answers ride back on it."""
    memo = env.__dict__.get("_link")
    if memo is None:
        req_id = getattr(env.payload, "req_id", "") or ""
        attempt = "/".join(req_id.split("/")[:3])
        memo = env.__dict__["_link"] = (env.src, env.dst) + tuple(sorted((env.src, env.dst))) + (attempt,)
    return memo


def _link_heads(in_flight) -> list:
    """The oldest message of each direction of each connection: a connection delivers in
    order, different connections (attempts, replicas) race freely. Losing a message takes
    it out of order, which the lost-response budget allows."""
    heads: dict[tuple, msys.Envelope] = {}
    for env in in_flight:  # in_flight is in send order
        heads.setdefault(_connection(env), env)
    return sorted(heads.values(), key=lambda e: e.seq)


def _spend(node: Node, action) -> tuple[int, ...]:
    used = list(node.used)
    if isinstance(action, msys.Drop):
        used[BUDGETS.index("lost_responses")] += 1
    elif isinstance(action, msys.Fire) and _is_attempt_timeout(action.name):
        used[BUDGETS.index("task_retries")] += 1
    elif isinstance(action, msys.Fault):
        key = {"agent_restart": "agent_restarts", "interrupt": "interrupts", "takeover": "ownership_changes"}[action.kind]
        used[BUDGETS.index(key)] += 1
    return tuple(used)



# ---------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------


@dataclass
class Found:
    property: str
    residual_risk: str | None
    path: list  # actions from the initial state
    detail: str


@dataclass
class Result:
    states: int = 0
    transitions: int = 0
    depth: int = 0
    exhausted: bool = False
    violations: list = field(default_factory=list)  # Found, one per property (the shortest)
    edges: list = field(default_factory=list)  # (parent name, child name, label) when asked for
    memo_hits: int = 0  # steps taken from the transition memo (Rule 7)
    memo_misses: int = 0  # steps run through system.apply


def explore(config: msys.WorldConfig, bounds: Bounds = Bounds(), max_states: int = 200_000,
            keep_edges: bool = False, stop_on: Callable[[Found], bool] | None = None,
            on_progress: Callable[[int], bool | None] | None = None) -> Result:
    """Breadth-first search. Returns every violated property's shortest counterexample.
    ``on_progress(states)`` is called after each expanded state (it should be cheap); a
    true answer stops the search there (not exhausted), keeping every counterexample
    found so far."""
    with without_cycle_collection():
        search = Search(config, bounds, max_states, keep_edges, stop_on)
        search.run(on_progress)
        result = search.finish()
        # Freed now, by reference counting, not walked by the collector once it is back on.
        del search
    return result


@contextmanager
def without_cycle_collection():
    """The search makes millions of small objects and no reference cycles (memos name
    their context by a token: model/interning.py), so Python's cycle collector finds
    nothing and only walks an ever larger heap: a third of a large search's time,
    measured. Reference counting still frees every state the search drops."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Search:
    """One breadth-first search, one state at a time (``run``), or driven a level at a
    time by a parallel driver (sim/explore_parallel.py) through ``report`` and ``offer``,
    which keep the order of events, and so the result, of the one-process search.

    Rule 8 (storage): a numbered state keeps only its key, its parent's number and which
    of the parent's enabled actions led to it; a path is rebuilt by replaying those
    choices from the initial state. Only the frontier holds whole nodes.
    Rule 9 (keys): in one process a state's key is its tuple of handles (exact); with
    ``digests`` (parallel searches) it is the 128-bit digest of that tuple
    (model/interning.py Rule 4), which every process computes alike."""

    def __init__(self, config: msys.WorldConfig, bounds: Bounds = Bounds(), max_states: int = 200_000,
                 keep_edges: bool = False, stop_on: Callable[[Found], bool] | None = None, digests: bool = False):
        self.config, self.bounds, self.max_states = config, bounds, max_states
        self.keep_edges, self.stop_on, self.digests = keep_edges, stop_on, digests
        self.ctx = Context(digests)
        self.reorder = bounds.merge_reordered
        root = self.ctx.initial_node(config)
        self.index: dict = {self.key(root): 0}
        self.parents = array("l", [-1])  # state number -> its parent's number
        self.moves = array("l", [-1])  # state number -> the index of the parent's action that led here
        self.depths = array("l", [0])
        self.frontier = deque([(0, root)])
        self.result = Result()
        self.found: dict[str, Found] = {}
        self.stopped = False  # a counterexample stop_on accepted, or the driver asked
        self.full = False  # max_states reached

    def key(self, node: Node):
        key = self.ctx.key(node, self.reorder)
        return digest_of(key) if self.digests else key

    def kinds(self, node: Node, actions: list | None) -> tuple:
        terminal = (actions is not None and not actions) or self.ctx.quiesced(node.system)
        return ("always", "eventually") if terminal else ("always",)

    def path_to(self, number: int, move: int | None = None) -> list:
        """Rule 8: the actions from the initial state to state ``number`` (settled
        deliveries included), and on through its ``move``-th action when given."""
        chain = [] if move is None else [move]
        while self.parents[number] != -1:
            chain.append(self.moves[number])
            number = self.parents[number]
        ctx = self.ctx
        node = ctx.initial_node(self.config)
        steps: list = []
        for m in reversed(chain):
            node, taken = ctx.step(node, enabled(node, self.bounds)[m])
            steps.extend(taken)
        return steps

    def report(self, violations: list, path: Callable[[], list]) -> None:
        for v in violations:
            key = v.property if v.residual_risk is None else f"{v.property}:{v.residual_risk}"
            if key not in self.found:
                self.found[key] = Found(v.property, v.residual_risk, path(), v.detail)
                self.stopped = self.stopped or (self.stop_on is not None and self.stop_on(self.found[key]))

    def offer(self, parent: int, move: int, key, label: str = "", dup_violations=None) -> int | None:
        """One child of ``parent`` in the one-process order: its number if it is new,
        None if it is known (its own order of the history is then checked, Rule 5) or
        the search is full (``self.full``)."""
        self.result.transitions += 1
        known = self.index.get(key)
        if self.keep_edges:
            self.result.edges.append((f"s{parent}", f"s{known if known is not None else len(self.parents)}", label))
        if known is not None:
            if self.reorder:
                # Rule 5: this path's own order of the history is checked too, at the
                # depth the exact search would check it.
                self.report(dup_violations(), lambda: self.path_to(parent, move))
            return None
        if len(self.parents) >= self.max_states + 1:
            self.full = True
            return None
        number = len(self.parents)
        self.index[key] = number
        self.parents.append(parent)
        self.moves.append(move)
        depth = self.depths[parent] + 1
        self.depths.append(depth)
        if depth > self.result.depth:
            self.result.depth = depth
        return number

    def offer_known(self, parent: int, move: int, dup_violations) -> None:
        """``offer`` for a child the driver already knows to be a numbered state."""
        self.result.transitions += 1
        if self.reorder:
            self.report(dup_violations(), lambda: self.path_to(parent, move))
        return None

    def expand(self, number: int, node: Node) -> None:
        ctx = self.ctx
        actions = enabled(node, self.bounds)
        self.report(ctx.verdict(node, self.kinds(node, actions)), lambda: self.path_to(number))
        if self.stopped:
            return
        for move, action in enumerate(actions):
            child, _ = ctx.step(node, action)
            new = self.offer(number, move, self.key(child), action.label() if self.keep_edges else "",
                             lambda: ctx.verdict(child, self.kinds(child, None)))
            if self.full:
                return
            if new is not None:
                self.frontier.append((new, child))

    def run(self, on_progress: Callable[[int], bool | None] | None = None, until_frontier: int | None = None) -> None:
        """Expand states until the search ends (or, with ``until_frontier``, until the
        frontier holds that many states: a parallel driver's head start)."""
        frontier = self.frontier
        while frontier and not self.stopped and not self.full:
            if until_frontier is not None and len(frontier) >= until_frontier:
                return
            self.expand(*frontier.popleft())
            if on_progress is not None and on_progress(len(self.parents)):
                self.stopped = True  # the driver asks to stop (Ctrl-C): what was found so far is kept
                return

    def finish(self, frontier_left: bool | None = None) -> Result:
        result = self.result
        result.states = len(self.parents) + (1 if self.full else 0)
        left = bool(self.frontier) if frontier_left is None else frontier_left
        result.exhausted = not left and not self.full and not self.stopped
        result.violations = list(self.found.values())
        result.memo_hits, result.memo_misses = self.ctx.hits, self.ctx.misses
        return result
