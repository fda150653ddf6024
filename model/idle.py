"""Idle firings of the replicas' periodic loops, applied in a batch (the ``Idle`` action).

Theory of operation
-------------------
A chatd replica runs three periodic loops (chatd-contract.md section 2; model/chatd/
runner.py): the acquisition poll (``acquire``, every ``acquisition_interval_ms``), the
heartbeat (``heartbeat``, every ``heartbeat_interval_ms``) and each runner's sync
(``sync/<chat_id>``, every ``runner_sync_interval_ms``). In a long quiet world almost
every firing of them does nothing a reader could see: the poll finds no chat to take,
the sync finds no newer snapshot, the heartbeat of a replica with no runners writes no
row. Stepping each through ``system.apply`` (and the simpy world) is where a 9-hour
world spends 96% of its steps.

``advance`` fires those timers in the order the simpy world would, (due, arming
sequence number), by calling the real handler ``chatd.replica_on_timer`` on the real
state and clock readings, and accepts a firing as *idle* only when the handler

- returns the replica state unchanged (the same object),
- returns exactly one effect, the re-arming ``SetTimer`` of the same timer, and
- returns the database unchanged (the same object), except for a ``heartbeat``, whose
  one effect is the upsert of its runners' heartbeat rows at the database clock.

An idle firing therefore changes exactly what its ``Fire`` step would have changed (the
timer's re-arming with the next sequence number, ``now_ms``, and a heartbeat's rows,
which the other replica's staleness check reads: they hold what the stepwise run wrote at
that instant, because the handler wrote them at that instant) and records nothing but the
``timer`` record of its own firing, which is the one record a batch drops. A firing that
is not idle (a poll that takes a chat or deletes stale rows, a sync that sees a change,
any firing while the database is down, whose ``db_down`` note is a record) stops the
batch: the caller applies it as an ordinary ``Fire`` step. Pauses, crashes, outages and
clock drift or steps need no special case: each firing reads the state and the clocks as
they are at its instant.

Because the handlers are pure and the order is fixed, ``apply(Idle(at_ms, fires))``
replays a batch exactly: it fires the next ``fires`` periodic timers and raises
``ReplayMismatch`` when one of them is not idle or the last is not at ``at_ms``.
The explorer's worlds put the periodic loops beyond their horizon, so it never meets one.
"""

from __future__ import annotations

import copy
from heapq import heapify, heapreplace

from . import chatd
from .chatd.state import SYNC_PREFIX, TIMER_ACQUIRE, TIMER_HEARTBEAT
from .core import FMap, SetTimer


def is_periodic(s, node: str, name: str) -> bool:
    """A replica's periodic loop timer (the only kind a batch may fire)."""
    return (name == TIMER_HEARTBEAT or name == TIMER_ACQUIRE or name.startswith(SYNC_PREFIX)) \
        and node in s.config.replicas


def next_periodic(s):
    """The periodic timer that fires first, by (due, arming sequence number), or None."""
    best = None
    for (node, name), timer in s.timers.items():
        if is_periodic(s, node, name) and (best is None or (timer.due_ms, timer.seq) < (best.due_ms, best.seq)):
            best = timer
    return best


def advance(s, before: tuple | None = None, max_fires: int | None = None):
    """Fire idle periodic timers in (due, seq) order while their (due, seq) is below
    ``before`` (a (time, priority) pair: the simpy world's next other event) and fewer
    than ``max_fires`` have fired. Returns (system, fires, last fire's time or None, the
    timer that stopped the batch because its firing is not idle, or None)."""
    from .system import DB  # system imports this module at its end

    heap = [(t.due_ms, t.seq, key) for key, t in s.timers.items() if is_periodic(s, *key)]
    if not heap:
        return s, 0, None, None
    heapify(heap)
    config = s.config
    db_clock = config.clock(DB)
    replicas = s.replicas
    db = s.db
    seq = s.seq
    armed: dict = {}
    # Within a batch nothing changes but heartbeat rows and time, so a sync's or a
    # heartbeat's verdict holds for the whole batch (neither reads the clock or the rows):
    # key -> (re-arm delay in ms, writes heartbeat rows, a poll's stale limit in ms). A
    # poll reads both the clock and the rows: its verdict holds only while no row is older
    # than its stale limit, checked at every poll (below); else the handler is asked, after
    # the heartbeats due before it are written.
    known: dict = {}
    beats: dict = {}  # replica -> true time of its last heartbeat not yet written
    row_owner = None  # heartbeat row key -> the replica whose runner it is
    fires = 0
    last_ms = None
    blocked = None
    # (due, seq, key) >= (time, priority): a tie on both (impossible: sequence numbers are
    # unique and faults' priorities are halves) would count as not before.
    before = (float("inf"),) if before is None else tuple(before)
    max_fires = max_fires if max_fires is not None else 1 << 62
    get_known = known.get
    while fires < max_fires:
        entry = heap[0]
        if entry >= before:
            break
        due_ms, _, key = entry
        verdict = get_known(key)
        if verdict is not None and verdict[2] is not None:
            # A poll found idle once in this batch stays idle while no heartbeat row is
            # older than its stale limit (then its cleanup deletes nothing and no owned
            # chat is stale; the rest of what it reads cannot change within a batch).
            if row_owner is None:
                row_owner = {(r.chat_id, r.runner_id): n for n, rp in replicas.items() if rp is not None
                             for r in rp.runners.values()}
            floor = db_clock.read(due_ms) - verdict[2]
            if any((db_clock.read(beats[row_owner[k]]) if row_owner.get(k) in beats else v) < floor
                   for k, v in db.heartbeats.items()):
                verdict = None  # ask the handler: it will find something to do
        if verdict is not None:
            if verdict[1]:
                beats[key[0]] = due_ms
        else:
            node, name = key
            rep = replicas.get(node)
            if rep is None:
                blocked = _timer(key, armed.get(key)) if key in armed else s.timers.get(key)
                break
            if name == TIMER_ACQUIRE and beats:
                db = _write_beats(db, replicas, beats, db_clock)
            clock = config.clock(node)
            rep_after, db_after, effects = chatd.replica_on_timer(rep, db, name, clock.read(due_ms), db_clock.read(due_ms))
            if not (rep_after is rep and len(effects) == 1 and type(effects[0]) is SetTimer
                    and effects[0].name == name and (db_after is db or name == TIMER_HEARTBEAT)):
                blocked = _timer(key, armed.get(key)) if key in armed else s.timers.get(key)
                break
            stale_ms = rep.rules.timing.heartbeat_stale_ms if name == TIMER_ACQUIRE else None
            period_ms = clock.true_delay(max(effects[0].after_ms, 0))  # true time: drift is constant
            known[key] = verdict = (period_ms, db_after is not db, stale_ms)
            db = db_after
            if name == TIMER_HEARTBEAT:
                beats.pop(node, None)
        seq += 1
        due_ms_next = due_ms + verdict[0]
        armed[key] = (due_ms_next, seq)
        heapreplace(heap, (due_ms_next, seq, key))
        fires += 1
        last_ms = due_ms
    if beats:
        db = _write_beats(db, replicas, beats, db_clock)
    if not fires:
        return s, 0, None, blocked
    out = copy.copy(s)
    timers = dict(s.timers.items())
    for key, at in armed.items():
        timers[key] = _timer(key, at)
    for name, value in (("timers", FMap(timers)), ("seq", seq), ("db", db), ("now_ms", last_ms)):
        object.__setattr__(out, name, value)
    return out, fires, last_ms, blocked


def _timer(key, at):
    from .system import Timer

    return Timer(key[0], key[1], at[0], at[1])


def _write_beats(db, replicas, beats: dict, db_clock):
    """Write the heartbeats deferred in a batch: each replica's last one, by its own
    handler at that instant's database clock (the rows an earlier beat wrote are
    overwritten by the later one in the stepwise run too)."""
    for node in sorted(beats):
        _, db, _ = chatd.replica_on_timer(replicas[node], db, TIMER_HEARTBEAT, 0, db_clock.read(beats[node]))
    beats.clear()
    return db


def apply_idle(s, action):
    """``apply`` of an ``Idle`` action: the next ``fires`` periodic firings, each idle."""
    from .system import ReplayMismatch, Step

    fires = action.fires
    if type(fires) is not int or fires < 1:
        raise ReplayMismatch(f"{action.label()}: fires must be a whole number >= 1")
    first = next_periodic(s)
    if first is not None and first.due_ms < s.now_ms:
        raise ReplayMismatch(f"{action.label()}: timer {first.node} {first.name} was due before now ({s.now_ms} ms)")
    out, done, last_ms, blocked = advance(s, None, fires)
    if done != fires:
        why = (f"timer {blocked.node} {blocked.name} at {blocked.due_ms} ms is not idle" if blocked is not None
               else "no periodic timer is armed")
        raise ReplayMismatch(f"{action.label()}: only {done} idle fires ({why})")
    if last_ms != action.at_ms:
        raise ReplayMismatch(f"{action.label()}: the last fire is at {last_ms} ms, not {action.at_ms} ms")
    return Step(out, ())
