"""The explorer's states and the one context a search steps them in.

Theory of operation
-------------------
model/explore.py searches; this module is what it searches with. A ``Node`` is one
explored state: the system, the budgets spent and the path's ghost history (explore.py
Rule 3) as interned handles. A ``Context`` belongs to one search and holds its tables:

- the interner (model/interning.py), through which a state's identity is a tuple of
  handles (``Context.key``, explore.py Rule 4), made of a system part and the ghost's
  handle; ``Context.system_key`` gives the system part and the expansion key of
  explore.py Rule 10, taking from the parent's key every component a step left as it
  was (the same object); the keys live in model/explore_keys.py (``Keys``, a base class
  of this ``Context``);
- the transition memo (``Context.apply``, explore.py Rule 7), in model/explore_memo.py
  (``TransitionMemo``, a base class of this ``Context``): a step cached under the
  handles of what it reads as the edits it made, replayed onto any state with the same
  footprint. What a delta works out once and keeps, because a replay is the search's
  commonest step (75,000 in the default world): whether it is a no-op for the nodes
  (``quiet``, Rule 6's test read off the delta) and whether it sends to chatd
  (``to_chatd``, ``_may_unsettle`` without a scan); its new messages and timers
  renumbered for its last few shifts (``renumbered``); and its timer table's handle as a
  transition from the old table's (``timers_after``, carried here by ``_timers_after``),
  so a replayed table is not keyed again. ``CHECK_MEMO`` checks each of these against
  what it stands for. A replay edits the timers and the open requests in one copy of
  each table (``_edited``, not one ``FMap`` per edit), and a no-op delivery that
  settling finds is replayed by ``_settled``, which keeps the state's own node objects
  (equal handles) and renumbers nothing. The delta and these replays live in
  model/explore_replay.py (``Delta``, ``replay``, ``edited``, ``settled``);
- a step run for real keys its ghost records by their canonical JSON text (what the
  parallel search's digests read), a flat record once: its handle is kept under its
  typed fields (``ghost_flat``), checked against the text under ``CHECK_MEMO``;
- Rule 6's settling of no-op deliveries (``Context.settle``), with its static half
  (``_may_unsettle``); ``Context.advance`` is a step and its settling without the
  ghost's growth, which is what explore.py Rule 10 memoizes; ``Context.child_of`` is the
  same for a settled state whose expansion key is known (a listing of its children,
  the hottest path): it finds a delivery's, a timer's, a tick's or a fault's memo key
  from the parent's handles, and its settling lists no actions (no path is kept);
- the verdict memo: the properties' violations per ghost history and committed chats,
  each new one from the history's monitor state (model/properties/monitor.py), grown
  from its parent history's by the step's new records; it lives in
  model/explore_verdicts.py (``Verdicts``, this ``Context``'s base class).

Memos kept on states (``_iid``, ``_fp``, ``_what``, ``_link``) name their context by a
bare token, never the context itself, so a search makes no reference cycles
(explore.py ``without_cycle_collection``); ``core.replace`` drops them from a changed copy.
They are read with ``getattr(x, name, None)``: ``x.__dict__`` makes the instance's dict
object through its descriptor on every read, 2.6 times the time of a read.
"""

from __future__ import annotations

import json
from bisect import insort
from operator import attrgetter

from . import chatd
from . import properties as props
from . import system as msys
# The transition memo's edits and their replays (model/explore_replay.py), by the names
# this module's code uses.
from .explore_replay import Delta as _Delta
from .explore_replay import new_action as _new_action
from .explore_replay import settled as _settled
from .explore_keys import Keys
from .explore_memo import TransitionMemo
from .explore_verdicts import Verdicts, ghost_trace  # noqa: F401 - ghost_trace: re-exported
from .interning import Id, Interner
from .system import Tick

BUDGETS = ("agent_restarts", "ownership_changes", "interrupts", "lost_responses", "task_retries")

# Records the properties read; the rest of a step's records are not kept on paths.
_GHOST_NOTES = ("cancel_never_received", "interrupt_requested", "interruption_finished", "acquired", "task_started",
                "batch_started")
_GHOST_KINDS = ("truth", "agent_up", "agent_down", "fault")


# ---------------------------------------------------------------------------
# Explored states
# ---------------------------------------------------------------------------


class Node:
    """One explored state: the system, the budgets spent, and the path's ghost history
    (Rule 3). A plain slotted class: the search makes one per transition."""

    __slots__ = ("system", "used", "ghost", "order", "bag", "settled", "xkey")

    def __init__(self, system: msys.System, used: tuple, ghost: tuple, order: Id, bag: Id, settled: bool = False,
                 xkey: tuple | None = None):
        self.system = system
        self.used = used  # budgets spent, in BUDGETS order
        self.ghost = ghost  # the ghost records in path order, as interned handles (Rule 3)
        self.order = order  # the handle of that sequence (the verdict memo's key)
        self.bag = bag  # the handle of the same records as a multiset (Rule 5); .value is the sorted tuple
        self.settled = settled  # Rule 6 has run on it (every node but the first)
        # The expansion memo's key of (system, used) (``Context.system_key``, explore.py
        # Rule 10), when the search that made the node computed it; None: not yet.
        self.xkey = xkey


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
    for e in after.in_flight:  # (a loop: a generator expression is an object per call)
        if e.seq > seq and e.dst != _AGENT:
            return True
    return False


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


_FLAT_TYPES = (str, int, bool, type(None))


def _flat(rec: dict) -> tuple | None:
    """A record's fields with each value's type (so ``1`` and ``True`` differ), in
    its own order, or None if a value is anything but a string, an integer, a bool or
    None (a float's text is not decided by equality: ``0.0 == -0.0``)."""
    out = []
    for k, v in rec.items():
        t = type(v)
        if t not in _FLAT_TYPES:
            return None
        out.append((k, t, v))
    return tuple(out)


# The canonical orders of handles in a set (``Context.sort_key``): C getters, which a sort
# calls without a Python frame per comparison.
_by_n = attrgetter("n")
_by_digest = attrgetter("digest")

# ``json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str)`` with its encoder
# built once: ``dumps`` with any argument builds one per call.
_GHOST_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)




class Context(Keys, TransitionMemo, Verdicts):
    """One search's tables: the interner and the state keys (Rule 4; ``Keys``,
    model/explore_keys.py), the transition memo (Rule 7; ``TransitionMemo``,
    model/explore_memo.py) and the verdict memo (``Verdicts``, model/explore_verdicts.py).
    A context's handles and nodes belong to it; ``explore`` makes its own."""

    # The ghost records' memo (``ghost_of``) this big is dropped and refilled: it only
    # saves time, and a search that outgrows it should not grow memory without bound.
    MEMO_LIMIT = 400_000

    def __init__(self, digests: bool = False):
        self.interner = Interner(digests)
        self.token = self.interner.token  # what this context's memos on states name it by
        # Sets (messages in flight, the ghost as a multiset) are sorted canonically: by
        # first sight in one process, by digest where processes must agree (Rule 4).
        self.sort_key = _by_digest if digests else _by_n
        self.grown: dict = {}  # (bag handle, new records) -> bag handle
        self.memo_tables()  # model/explore_memo.py
        self.awaited: dict = {}  # (replica handle, request ID) -> chatd.awaits
        self.calm: dict = {}  # database handle -> properties.quiesced
        # database handle -> (the properties' kinds a state with it is checked for, its chats' handle)
        self.chats_of: dict = {}
        self.verdict_tables()  # model/explore_verdicts.py
        self.key_tables()  # model/explore_keys.py
        self.ghost_flat: dict = {}  # a flat ghost record's typed fields -> its handle (``ghost_of``)
        self.check = CHECK_MEMO  # tests: every hit is also applied for real and compared
        # (expansion key, a delivery's place) -> whether its set is persistent
        # (model/explore_por.py Rule 5)
        self.por_facts: dict = {}
        # what the agent-side steps of a reduction's search were found to do (commute, add
        # records), by what they read (model/explore_por.py Rule 6)
        self.por_pairs: dict = {}

    # -- ghost records (Rule 3) ---------------------------------------------------
    def ghost_of(self, records) -> tuple:
        """The handles of a step's ghost records. A record's key is its canonical JSON
        text (what a parallel search's digests read), rendered once per flat record:
        a record of strings, integers, bools and None (the ghost's records, measured)
        finds its handle by its fields and their types (``ghost_flat``), so a step run
        for real (Rule 7) encodes none it has seen."""
        handles = []
        flats = self.ghost_flat
        for rec in _ghost_records(records):
            flat = _flat(rec)
            handle = flats.get(flat) if flat is not None else None
            if handle is None or self.check:
                text = _GHOST_JSON.encode(rec)
                key = ("ghost", text)
                found = self.interner.table.get(key)
                if found is None:
                    found = self.interner.key_of(key, json.loads(text))
                if handle is not None and handle is not found:
                    raise AssertionError(f"ghost record memo differs for {text}")
                handle = found
                if flat is not None:
                    if len(flats) >= self.MEMO_LIMIT:
                        flats.clear()
                    flats[flat] = handle
            handles.append(handle)
        return tuple(handles)

    def grow(self, node: Node, new: tuple) -> tuple[tuple, Id, Id]:
        """The ghost after ``new`` records: the sequence, its handle, the multiset's handle."""
        if not new:
            return node.ghost, node.order, node.bag
        key_of = self.interner.key_of
        # The sequence's key is its value: its parent's handle and the new records
        # (``verdict`` walks it back to a history it has a monitor for).
        seq = ("seq", node.order) + new
        order = key_of(seq, seq)
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
    def initial_ghost(self) -> Node:
        """A node with nothing but an empty ghost history, to ``grow`` one from."""
        key_of = self.interner.key_of
        return Node(None, (), (), key_of(("seq",)), key_of(("bag",), ()))

    def initial_node(self, config: msys.WorldConfig) -> Node:
        st = msys.initial(config)
        ghost, order, bag = self.grow(self.initial_ghost(), self.ghost_of(st.records))
        return Node(st.system, (0,) * len(BUDGETS), ghost, order, bag)

    def step(self, node: Node, action) -> tuple[Node, tuple]:
        """The node after ``action`` and the actions taken (``action`` and the deliveries
        that settled after it), which is what a path records."""
        system, new_ghost, taken = self.advance(node, action)
        ghost, order, bag = self.grow(node, new_ghost)
        return Node(system, _spend(node, action), ghost, order, bag, True), taken

    def advance(self, node: Node, action) -> tuple[msys.System, tuple, tuple]:
        """``step`` without the ghost's growth: the system after ``action`` and the
        deliveries that settle after it (Rule 6), the handles of the step's new ghost
        records (a settled delivery adds none) and the actions taken."""
        before = node.system
        system, new_ghost = self.apply(before, action)
        if node.settled and not _may_unsettle(before, system, action):
            return system, new_ghost, (action,)
        system, settled = self.settle(system)
        return system, new_ghost, (action, *settled)

    def child_of(self, node: Node, action, parent_key: tuple) -> tuple[msys.System, tuple]:
        """``advance`` of a settled node whose expansion key (``system_key``) is known,
        without the actions taken: explore.py Rule 10's listing of a state's children,
        the search's hottest path. A delivery, a lost message, a timer, a tick or one of
        the explorer's faults finds its memo key (``_memo_key``, the same key) from the
        parent's handles, and a memoized step is replayed here; anything else (a step
        not memoized yet) goes through ``apply``. A fault is always settled after
        (``_may_unsettle``)."""
        before = node.system
        t = type(action)
        key = None
        if t is _DELIVER or t is _DROP:
            seq = action.seq
            for env in before.in_flight:
                if env.seq == seq:
                    memo = getattr(env, "_what", None)
                    what = memo[1] if memo is not None and memo[0] is self.token else self.envelope(env, False)
                    if t is _DROP:
                        key = ("lose", what, action.at_ms)
                    elif env.dst == msys.AGENT:
                        if before.agent is not None:
                            key = ("agent", what, action.at_ms, parent_key[1], before.partitions)
                    elif env.dst in before.replicas._index:  # (the map's own dict: no method call)
                        key = ("chatd", what, action.at_ms, parent_key[4], parent_key[5], before.partitions)
                    break
        elif t is Tick:
            key = ("tick", action.at_ms)
        elif t is _FAULT:
            # (``_memo_key``'s keys of the explorer's faults, from the parent's handles)
            if not before.dials_waiting:
                kind = action.kind
                if kind == "agent_restart":
                    key = ("restart", action.params, action.at_ms, parent_key[1], before.agent_incarnation,
                           parent_key[3], parent_key[5])
                elif kind == "interrupt" or kind == "takeover":
                    key = ("chatd-fault", kind, action.params, action.at_ms, parent_key[4], parent_key[5])
        elif t is _FIRE:
            # ``enabled`` lists a timer only when it is armed and due.
            name, at_ms = action.name, action.at_ms
            where = action.node
            timer = before.timers._index.get((where, name))
            if timer is not None and timer.due_ms <= at_ms:
                if where == msys.AGENT:
                    if before.agent is not None:
                        key = ("agent-timer", name, at_ms, parent_key[1])
                elif where in before.replicas._index:
                    key = ("chatd-timer", where, name, at_ms, parent_key[4], parent_key[5])
        delta = None
        if key is not None:
            if self.check:
                if key != self._memo_key(before, action)[0]:
                    raise AssertionError(f"memo differs in the key of {action.label()}")
                delta = self._lookup(key, before)  # (where the tests watch the lookups)
            else:
                # ``_lookup`` inline: the call cost the default world's search 0.8k
                # instructions a state (callgrind), on the listing's hottest path.
                deltas = self.memo.get(key)
                if deltas is None:
                    deltas = self.memo_old.get(key)
                if deltas:
                    delta = self._first_fit(deltas, before)
        if delta is None:
            system, new_ghost = self.apply(before, action)
            if not _may_unsettle(before, system, action):
                return system, new_ghost
            return self.settle(system, False)[0], new_ghost
        system = self._hit(before, action, delta)
        if self.check:
            if delta.to_chatd != any(e.seq > before.seq and e.dst != msys.AGENT for e in system.in_flight):
                raise AssertionError(f"memo differs in whether it sends to chatd after {action.label()}")
        # ``_may_unsettle`` with the delta's own answer for its new messages.
        if (t is Tick or t is _FAULT or system.replicas is not before.replicas or system.db is not before.db
                or system.partitions is not before.partitions or delta.to_chatd):
            system = self.settle(system, False)[0]
        return system, delta.ghost

    def _timers_after(self, before: msys.System, after: msys.System, delta: _Delta) -> None:
        """A replayed step's new timer table: its handle, kept as the delta's transition
        from the old table's handle (``_replay`` reads it there the next time)."""
        timers = after.timers
        memo = timers._fp
        if timers is before.timers or (memo is not None and memo[0] is self.token):
            return
        found = self.timers_key(timers)
        memo = before.timers._fp
        if memo is not None and memo[0] is self.token:
            if delta.timers_after is None:
                delta.__dict__["timers_after"] = {}
            delta.timers_after[memo[1]] = found

    def settle(self, s: msys.System, taken: bool = True) -> tuple[msys.System, list]:
        """Rule 6: deliver at once every message whose delivery changes nothing but the
        network (a late answer to a replica whose call was aborted, say). Such a delivery
        commutes with every other action, so exploring it at every position only
        multiplies states (a partial-order reduction); delivering it now is one of the
        behaviours anyway. Without ``taken`` (a listing, ``child_of``, which keeps no
        path) the settled deliveries are not listed, and a delivery the memo settles makes
        no action."""
        # A step is a hot path: ``awaits``, ``_memo_key`` and ``_noop`` are inlined here
        # for a delivery to a replica (the candidates), the rest goes through ``apply``.
        settled = []
        awaited = self.awaited
        handle = self.interner.handle
        token = self.token
        memo, memo_old = self.memo, self.memo_old
        while True:
            replicas = s.replicas
            rep_of = replicas._index.get  # (the map's own dict: no method call per message)
            nodes = None  # the chatd memo key's node handles, read once a pass needs them
            for env in s.in_flight:
                dst = env.dst
                if dst == "agent":
                    continue  # the agent answers everything: never a no-op
                rep = rep_of(dst)
                req_id = getattr(env.payload, "req_id", None)
                if rep is not None and req_id is not None:
                    rep_memo = getattr(rep, "_iid", None)
                    aw_key = (rep_memo[1] if rep_memo is not None and rep_memo[0] is token else handle(rep), req_id)
                    waits = awaited.get(aw_key)
                    if waits is None:
                        waits = awaited[aw_key] = chatd.awaits(rep, req_id)
                    if waits:
                        continue  # an answer its caller still waits for changes the caller
                if rep is not None or dst in replicas._index:
                    what = getattr(env, "_what", None)
                    what = what[1] if what is not None and what[0] is token else self.envelope(env, False)
                    if nodes is None:
                        nodes = (handle(replicas), handle(s.db), s.partitions)
                    key = ("chatd", what, s.now_ms) + nodes
                    deltas = memo.get(key)
                    if deltas is None:
                        deltas = memo_old.get(key)
                    delta = self._first_fit(deltas, s) if deltas else None
                else:
                    delta = None
                if delta is not None:
                    # The memo knows what the delivery does: replay it only if it is a
                    # no-op, which is then certain (``_noop`` reads what the test below does).
                    if self.check and delta.quiet != self._nodes_kept(s, delta):
                        raise AssertionError(f"memo differs in its no-op test for {env.what}")
                    if not delta.quiet:
                        continue
                    if delta.timer_ops and not self._noop(s, delta):
                        continue
                    self.hits += 1
                    out = _settled(s, env.seq, delta)
                    if taken or self.check:
                        action = _new_action(msys.Deliver, s.now_ms, env.seq, env.what)
                        if taken:
                            settled.append(action)
                        if self.check:
                            self._check(s, action, out, delta.ghost)
                    s = out
                    break
                action = _new_action(msys.Deliver, s.now_ms, env.seq, env.what)
                try:
                    t, ghost = self.apply(s, action)
                except msys.ReplayMismatch:
                    continue
                if (t.seq == s.seq and t.replicas == s.replicas and t.db == s.db and t.timers == s.timers
                        and t.agent == s.agent and not ghost):
                    if taken:
                        settled.append(action)
                    s = t
                    break
            else:
                return s, settled

    def awaits(self, rep, req_id: str) -> bool:
        key = (self.interner.handle(rep), req_id)
        found = self.awaited.get(key)
        if found is None:
            found = self.awaited[key] = chatd.awaits(rep, req_id)
        return found

    def quiesced(self, s: msys.System) -> bool:
        key = self.interner.handle(s.db)
        found = self.calm.get(key)
        if found is None:
            found = self.calm[key] = props.quiesced(s)
        return found

_DELIVER, _DROP, _FIRE, _FAULT = msys.Deliver, msys.Drop, msys.Fire, msys.Fault
_AGENT = msys.AGENT


# Tests set this: every memoized step is checked against system.apply (model/explore.py
# Rule 7), so a footprint that misses something the step reads fails loudly.
CHECK_MEMO = False

def _is_attempt_timeout(name: str) -> bool:
    return name.endswith("/timeout")


def _spend(node: Node, action) -> tuple[int, ...]:
    """The budgets spent after ``action`` (Rule 2): the node's own tuple when it spends none."""
    t = type(action)
    if t is msys.Drop:
        at = _LOST
    elif t is msys.Fire:
        if not _is_attempt_timeout(action.name):
            return node.used
        at = _RETRIES
    elif t is msys.Fault:
        at = _FAULT_BUDGET[action.kind]
    else:
        return node.used
    used = list(node.used)
    used[at] += 1
    return tuple(used)


_LOST = BUDGETS.index("lost_responses")
_RETRIES = BUDGETS.index("task_retries")
_FAULT_BUDGET = {"agent_restart": BUDGETS.index("agent_restarts"), "interrupt": BUDGETS.index("interrupts"),
                 "takeover": BUDGETS.index("ownership_changes")}
