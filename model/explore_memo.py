"""The explorer's transition memo: a step cached under what it reads, replayed elsewhere.

Theory of operation
-------------------
explore.py Rule 7. ``TransitionMemo.apply`` is ``system.apply`` through a memo: a step is
cached under the handles of the part of the state it reads (``_memo_key``: a delivery to
the running agent reads the agent; a delivery, timer or fault on chatd's side reads the
replicas and the database; a lost message reads nothing; anything else reads every node)
as the edits it made (``_delta``, a ``Delta`` of model/explore_replay.py), and replayed
onto any state with the same footprint whose open requests meet the guards the step read
(``_first_fit``), new messages and timers renumbered from that state's counter (``_hit``).
A step that writes outside what it read is never cached. The memo keeps two generations
of ``MEMO_GENERATION`` keys, so its memory is bounded and the steps a search meets again
a few levels later are still there.

What a delta works out once (whether it is a no-op for the nodes, whether it sends to
chatd) lets Rule 6's settling (model/explore_context.py ``Context.settle``) test a
memoized delivery without a trial step (``_noop``). Under ``CHECK_MEMO`` (the tests) every
hit is also applied for real and compared field by field (``_check``), so a footprint that
misses something the step reads fails loudly.

``TransitionMemo`` is a part of model/explore_context.py's ``Context`` (a base class): it
uses the context's interner and token, its ghost records (``ghost_of``), the envelope
keys of ``Keys`` (``envelope``), the timer handles' carrying (``_timers_after``) and the
``check`` flag, and keeps its own tables (``memo_tables``).
"""

from __future__ import annotations

from typing import Any

from . import system as msys
from .explore_keys import timers_handle
from .explore_replay import NODES as _NODES  # the node states ``Delta.quiet`` compares
from .explore_replay import WHOLE as _WHOLE
from .explore_replay import Delta as _Delta
from .explore_replay import new_delta as _new_delta
from .explore_replay import replay as _replay
from .system import Tick

# The footprints (the parts of the state a memoized step reads, ``_memo_key``)
_AGENT_SIDE = frozenset({"agent"})
_CHATD_SIDE = frozenset({"replicas", "db"})
_AGENT_LIFE = frozenset({"agent", "agent_incarnation", "agent_files"})
_AGENT_LIFE_AND_DB = _AGENT_LIFE | {"db"}
_NOTHING = frozenset()
_ANY_BUT_DIALS = frozenset(_WHOLE) - {"dials_waiting"}
_AGENT = msys.AGENT


class TransitionMemo:
    """The transition memo of one search (Rule 7), a base class of ``Context``."""

    # The transition memo keeps two generations of this many keys (``apply``), as the
    # expansion memo does: its deltas hold whole node states, which were 28% of the 1 s
    # world's memory (276 of 982 bytes a state, all 30,955 keys kept), and the steps a
    # search meets again are met a few levels later. At 10,000 the 1 s world keeps
    # 879 bytes a state for 1.3% more model steps (31,365 against 30,955); no other
    # explored world or planted-bug search has this many distinct steps (15,458 the most).
    MEMO_GENERATION = 10_000
    # probe ID -> model steps that took its branch (issue 35), counted when a dict is set
    # (sim/ci/check_jobs.py ``job_explore``): only steps applied for real, not memo hits,
    # which replay a step with the same footprint and so the same probes. The set of
    # probes reached is exact; the counts are "applied steps", the same on every run.
    probe_counts: dict | None = None

    def memo_tables(self) -> None:
        self.memo: dict = {}  # memo key -> the deltas stepped under it (Rule 7); its older generation:
        self.memo_old: dict = {}
        self.hits = 0
        self.misses = 0

    def _noop(self, s: msys.System, d: _Delta) -> bool:
        """Whether a memoized delivery leaves the nodes, timers and counter as they are
        (Rule 6's test, read off the delta instead of a trial step)."""
        if not d.quiet:
            return False
        for op in d.timer_ops:
            if op[0] != "timer_cancel" or op[1] in s.timers._index:
                return False
        return True

    def _nodes_kept(self, s: msys.System, d: _Delta) -> bool:
        """``CHECK_MEMO``: ``_Delta.quiet`` computed on ``s`` itself: no new message or
        ghost record, and the agent, replicas and database keep their handles."""
        iid = self.interner.iid
        return not d.seq_inc and not d.ghost and all(
            iid(value) is iid(s.__dict__[name]) for name, value in d.whole if name in ("agent", "replicas", "db"))

    def _lookup(self, key, s: msys.System) -> _Delta | None:
        """The first delta under ``key`` that fits ``s``, from either generation of the
        memo (``apply``; ``child_of`` and ``settle`` read the two inline)."""
        deltas = self.memo.get(key)
        if deltas is None:
            deltas = self.memo_old.get(key, ())
        return self._first_fit(deltas, s)

    @staticmethod
    def _first_fit(deltas, s: msys.System) -> _Delta | None:
        """The first memoized step whose guards (the open requests it read) ``s`` meets."""
        for delta in deltas:
            if not delta.guards:
                return delta
            get = s.open_requests._index.get  # (the map's own dict: no method call per guard)
            for k, v in delta.guards:
                if get(k) != v:
                    break
            else:
                return delta
        return None

    def _hit(self, s: msys.System, action, delta: _Delta) -> msys.System:
        """A memo hit: the delta replayed onto ``s``, its timer table's handle carried
        (``_timers_after``), and under ``CHECK_MEMO`` compared with the real step."""
        self.hits += 1
        out = _replay(s, action, delta, self.token)
        if delta.timer_ops:
            self._timers_after(s, out, delta)
        if self.check:
            self._check(s, action, out, delta.ghost)
        return out

    def apply(self, s: msys.System, action) -> tuple[msys.System, tuple]:
        """``system.apply`` through the transition memo (Rule 7): the new system and the
        handles of the step's ghost records."""
        key, footprint = self._memo_key(s, action)
        if key is not None:
            delta = self._lookup(key, s)
            if delta is not None:
                return self._hit(s, action, delta), delta.ghost
        self.misses += 1
        log: list = [] if key is not None else None
        st = msys.apply(s, action, log)
        counts = self.probe_counts
        if counts is not None:
            for pid in st.probes:
                counts[pid] = counts.get(pid, 0) + 1
        ghost = self.ghost_of(st.records)
        if key is not None:
            delta = self._delta(s, action, st.system, log, footprint, ghost)
            if delta is not None:
                memo = self.memo
                deltas = memo.get(key)
                if deltas is None:
                    if len(memo) >= self.MEMO_GENERATION:
                        # A new generation; the oldest is dropped.
                        self.memo_old = memo
                        memo = self.memo = {}
                    # (an older generation's deltas for the key come along, so a lookup
                    # that finds the key here sees them all)
                    deltas = memo[key] = list(self.memo_old.get(key, ()))
                deltas.append(delta)
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
            memo = getattr(env, "_what", None)
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
            # The explorer's faults read one side each: a restart the agent's life (and the
            # database row its boot reports the new incarnation to, model/system.py Rule 4),
            # an interrupt or a takeover chatd's rows and replicas (model/faults.py).
            if action.kind == "agent_restart":
                return (("restart", action.params, action.at_ms, iid(s.agent), s.agent_incarnation,
                         iid(s.agent_files), iid(s.db)), _AGENT_LIFE_AND_DB)
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
        # (loops, not generator expressions: the memo makes a delta per step it runs for
        # real, and each generator is an object of its own)
        base = s.seq
        kept, added, to_chatd = [], [], False
        for e in out.in_flight:
            if e.seq <= base:
                kept.append(e)
            else:
                added.append(e)
                if e.dst != _AGENT:
                    to_chatd = True
        added = tuple(added)
        dropped = len(s.in_flight) - len(kept)
        seq = getattr(action, "seq", None)
        if dropped > 1 or (dropped == 1 and (seq is None or any(e.seq == seq for e in kept))):
            return None
        if out.in_flight != tuple(kept) + added:
            return None
        timer_ops, open_ops, guards = [], [], []
        for op in log:
            kind = op[0]
            if kind.startswith("timer"):
                timer_ops.append(op)
            elif kind == "open_set" or kind == "open_remove":
                open_ops.append(op)
            elif kind == "open_read":
                guards.append((op[1], op[2]))
        quiet = out.seq == base and not ghost
        if quiet:
            for name, value in whole:
                if name in _NODES and iid(value) is not iid(s.__dict__[name]):
                    quiet = False
                    break
        return _new_delta(base, tuple(whole), dropped == 1, added, tuple(timer_ops), tuple(open_ops), tuple(guards),
                          out.seq - base, ghost, quiet, to_chatd)

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
        memo = out.timers._fp
        if memo is not None and memo[0] is self.token:
            # The handle a replay gave the timers (``_Delta.timers_after``) is theirs.
            fresh = timers_handle(self.interner, out.timers)
            if fresh is not memo[1]:
                raise AssertionError(f"memo differs in the timers' handle after {action.label()}")
