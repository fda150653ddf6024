"""Idle firings of the replicas' periodic loops, applied in a batch (the ``Idle`` action).

Theory of operation
-------------------
A chatd replica runs three periodic loops (docs/contract.md C2.1/C2.2; model/chatd/
runner.py): the acquisition poll (``acquire``, every ``acquisition_interval_ms``), the
heartbeat (``heartbeat``, every ``heartbeat_interval_ms``) and each runner's sync
(``sync/<chat_id>``, every ``runner_sync_interval_ms``). In a long quiet world almost
every firing of them does nothing a reader could see: the poll finds no chat to take,
the sync finds no newer snapshot, the heartbeat of a replica with no runners writes no
row. Stepping each through ``system.apply`` (and the simulated world) is where a 9-hour
world spends 96% of its steps.

``advance`` fires those timers in the order the simulated world would, (due, arming
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

How a batch is computed without asking every firing's handler (each shortcut is exact,
and tests/test_world_idle.py checks each against firing one at a time):

1. Within a batch only heartbeat rows and time change, so a sync's or a heartbeat's
   verdict, once asked, holds for the batch; a poll's holds while no heartbeat row is
   older than its stale limit (then its cleanup deletes nothing and no owned chat is
   stale), checked at every poll. Heartbeat rows are written once, each replica's last
   beat, before a poll is asked and at the end (``_write_beats``).
2. ``memo`` carries verdicts between batches while the handler's inputs are the same
   objects (``advance``).
3. Once every loop that fires has a verdict, the rest is closed form: each loop fires
   every period, the firings merge in (due, seq) order by a rule on their instants
   (``_fire_key``), and the first poll that would not be idle is found by division
   (``_bulk_counted``; poll by poll when the database clock drifts or steps). Replays
   list and sort the firings instead (``_bulk``), so every replay of a batched run checks
   the counted merge against the listed one.
4. The answer of the firing that stops a batch is kept in ``memo`` (``ASKED``) with the
   inputs it was computed from; the next batch that meets that firing with the very
   same inputs (the same replica state and database objects, the same clock readings)
   takes it, and so does the ``Fire`` step the world then applies (``system.apply``'s
   ``asked``): the handlers are pure, so it is the answer a new call would give.
5. A batch starts from the heap the last one left (``HEAP``), its entries checked
   against the timer table and the loop timers armed since added (``ARMED``, which the
   simulated world fills from each step's ``Step.armed``), instead of filtering the
   whole table for loop timers again; tests/test_world_idle.py compares every batch of
   its runs with one built from the table.
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import heapify, heapreplace

from . import builder, chatd
from .actions import ReplayMismatch
from .chatd.state import SYNC_PREFIX, TIMER_ACQUIRE, TIMER_HEARTBEAT
from .core import SetTimer

_on_timer = chatd.replica_on_timer  # the loops' handler (``ASKED`` holds it by identity)


_LOOP_NAMES = (TIMER_HEARTBEAT, TIMER_ACQUIRE)
_INF = float("inf")  # (a name: ``float("inf")`` parses its string at every call)
# The memo entry of the last firing found not idle: (handler, replica state, database,
# args, clock, database clock, answer). The next batch that meets the same firing with
# the very same inputs takes the answer instead of asking again, and so does the ``Fire``
# step the world then applies (``system.apply``'s ``asked``): a firing that stops a batch
# is otherwise computed two or three times (a poll that takes a chat, a sync that reads a
# change), a twentieth of a swarm seed's time.
ASKED = "asked"
# The memo entry of the system the last batch returned and the key of its first periodic
# timer by (due, seq), the head of the batch's heap: what ``next_periodic`` of that very
# system answers (the heap holds every replica loop's timer in that order), so the world,
# which asks it after every batch, reads it instead of scanning the timer table again.
FIRST = "first"
# The memo entries that carry a batch's heap to the next batch instead of building it
# from the timer table again (a tenth of a batch's cost): ``HEAP`` is the heap the last
# batch left, one entry per loop timer of the system it returned, and ``ARMED`` the loop
# timers armed since, which the caller lists (``note_armed``: the simulated world sees
# every step's ``Step.armed``). An entry whose timer is no longer the one in the table
# (canceled, or re-armed: then the new arming is in ``ARMED``) is left out, and an armed
# timer that is still the one in the table is added: the heap the table would give. Only
# a caller that keeps ``ARMED`` (it is in the memo) gets the carried heap.
HEAP = "heap"
ARMED = "armed"


def note_armed(memo: dict, timer) -> None:
    """The caller armed a loop timer since the last batch (see ``HEAP``)."""
    memo[ARMED].append(timer)


def is_periodic(s, node: str, name: str) -> bool:
    """A replica's periodic loop timer (the only kind a batch may fire)."""
    return (name == TIMER_HEARTBEAT or name == TIMER_ACQUIRE or name.startswith(SYNC_PREFIX)) \
        and node in s.config.replicas


def next_periodic(s, memo: dict | None = None):
    """The periodic timer that fires first, by (due, arming sequence number), or None.
    (``is_periodic`` inline: the world asks after most steps.) ``memo``: ``advance``'s,
    whose ``FIRST`` answers for the very system its last batch returned, and whose
    ``HEAP`` and ``ARMED`` (a caller that notes what it arms) hold every loop timer."""
    if memo is not None:
        known = memo.get(FIRST)
        if known is not None and known[0] is s:
            return s.timers._index.get(known[1])
        heap = memo.get(HEAP)
        if heap is not None:
            # The loop timers are those of the last batch's heap still armed and those
            # armed since (``HEAP``, ``ARMED``): the first of them, without a scan of the
            # whole table. (Entries are (due, seq, key): distinct by seq.)
            table = s.timers._index
            first = None
            for entry in heap:
                timer = table.get(entry[2])
                if timer is not None and timer.seq == entry[1] and (first is None or entry < first):
                    first = entry
            for timer in memo[ARMED]:
                key = (timer.node, timer.name)
                if table.get(key) is timer and (first is None or (timer.due_ms, timer.seq) < first[:2]):
                    first = (timer.due_ms, timer.seq, key)
            return None if first is None else table[first[2]]
    best = None
    replicas = s.config.replicas
    # (The dict, not the sorted pairs: the first by (due, seq), which are distinct, is
    # the same in any order, and a table a step edited is not sorted until read.)
    for (node, name), timer in s.timers._index.items():
        if (name == TIMER_HEARTBEAT or name == TIMER_ACQUIRE or name.startswith(SYNC_PREFIX)) and node in replicas \
                and (best is None or timer.due_ms < best.due_ms or (timer.due_ms == best.due_ms and timer.seq < best.seq)):
            best = timer
    return best


def advance(s, before: tuple | None = None, max_fires: int | None = None, memo: dict | None = None):
    """Fire idle periodic timers in (due, seq) order while their (due, seq) is below
    ``before`` (a (time, priority) pair: the world's next other agenda entry) and fewer
    than ``max_fires`` have fired. Returns (system, fires, last fire's time or None, the
    timer that stopped the batch because its firing is not idle, or None).

    ``memo`` (a dict the caller keeps between batches, or None) carries verdicts from one
    batch to the next: a loop's verdict is reused only while what its handler reads is
    the very same objects (the replica state and the up flag of the database; a sync's
    and a poll's also the chats, and a poll's the set of heartbeat rows, which it is
    still checked against every time; a heartbeat reads no chat and no row: its verdict,
    the upsert of its runners' rows, holds while its replica and the up flag do), so it
    changes no result, only how often the handler is asked. The entries hold
    those objects, so an identity is never that of a newer object. It also receives
    ``FIRST``: the returned system's first periodic timer (``next_periodic``)."""
    DB = builder.DB

    carried = memo.get(HEAP) if memo is not None else None
    if carried is not None:
        # The last batch's heap, checked against the table, and the loop timers armed
        # since (``HEAP``): the entries the table would give, in another order, which a
        # heap of distinct (due, seq) entries does not see.
        table = s.timers._index
        heap = []
        for entry in carried:
            timer = table.get(entry[2])
            if timer is not None and timer.seq == entry[1]:
                heap.append(entry)
        armed_since = memo[ARMED]
        if armed_since:
            for timer in armed_since:
                key = (timer.node, timer.name)
                if table.get(key) is timer:
                    heap.append((timer.due_ms, timer.seq, key))
            armed_since.clear()
    else:
        names = s.config.replicas
        heap = [(t.due_ms, t.seq, key) for key, t in s.timers._items
                if key[0] in names and (key[1] in _LOOP_NAMES or key[1].startswith(SYNC_PREFIX))]
        if memo is not None and ARMED in memo:
            memo[ARMED].clear()  # (in the table already)
    if memo is not None and ARMED in memo:
        memo[HEAP] = heap  # (the list this batch updates in place: what it leaves)
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
    before = (_INF,) if before is None else tuple(before)
    max_fires = max_fires if max_fires is not None else 1 << 62
    get_known = known.get
    bulk_tried = False
    # The loops whose first firing is below ``before``: every loop below it has a verdict
    # exactly when all of these have one. (A loop gets its verdict when it first fires,
    # and a loop that has not fired still has its first entry; so the count answers what
    # a scan of the heap for unknown entries below ``before`` would, at every firing.)
    below = len([e for e in heap if e < before])  # (a list's length: no generator frame)
    while fires < max_fires:
        entry = heap[0]
        if entry >= before:
            break
        # (The first entry is below ``before``: unknown, it decides at once.)
        if not bulk_tried and entry[2] in known and len(known) == below:
            # Every loop's verdict is known: the rest of the batch in closed form.
            bulk_tried = True
            if row_owner is None:
                row_owner = _row_owner(replicas)
            bulk = _bulk_counted if before[0] != _INF else _bulk
            done, seq, last = bulk(heap, known, before, max_fires - fires, seq, armed, beats, db.heartbeats,
                                   row_owner, db_clock)
            if done:
                fires += done
                last_ms = last
                continue
        due_ms, _, key = entry
        verdict = get_known(key)
        if verdict is None and memo is not None:
            seen = memo.get(key)
            # (What each loop's handler reads, ``advance``: a heartbeat neither the chats
            # nor the rows, a sync not the rows.)
            if seen is not None and seen[0] is replicas._index.get(key[0]) and seen[2] == db.db_up \
                    and (key[1] == TIMER_HEARTBEAT
                         or seen[1] is db.chats and (key[1] != TIMER_ACQUIRE or seen[3] == db.heartbeats._index.keys())):
                verdict = known[key] = seen[4]
        if verdict is not None and verdict[2] is not None:
            # A poll found idle once in this batch stays idle while no heartbeat row is
            # older than its stale limit (then its cleanup deletes nothing and no owned
            # chat is stale; the rest of what it reads cannot change within a batch).
            if row_owner is None:
                row_owner = _row_owner(replicas)
            floor = db_clock.read(due_ms) - verdict[2]
            for k, v in db.heartbeats._items:  # (a loop, not ``any`` over a generator: every poll asks)
                owner = row_owner.get(k)
                if (db_clock.read(beats[owner]) if owner in beats else v) < floor:
                    verdict = None  # ask the handler: it will find something to do
                    break
        if verdict is not None:
            if verdict[1]:
                beats[key[0]] = due_ms
        else:
            node, name = key
            rep = replicas._index.get(node)  # (FMap.get without the call)
            if rep is None:
                blocked = _timer(key, armed.get(key)) if key in armed else s.timers.get(key)
                break
            if name == TIMER_ACQUIRE and beats:
                db = _write_beats(db, replicas, beats, db_clock)
            clock = config.clock(node)
            now_ms, db_now_ms = clock.read(due_ms), db_clock.read(due_ms)
            asked = memo.get(ASKED) if memo is not None else None
            if asked is not None and asked[0] is _on_timer and asked[1] is rep and asked[2] is db \
                    and asked[3] == (name,) and asked[4] == now_ms and asked[5] == db_now_ms:
                rep_after, db_after, effects = asked[6]
            else:
                rep_after, db_after, effects = _on_timer(rep, db, name, now_ms, db_now_ms)
            if not (rep_after is rep and len(effects) == 1 and type(effects[0]) is SetTimer
                    and effects[0].name == name and (db_after is db or name == TIMER_HEARTBEAT)):
                if memo is not None:
                    memo[ASKED] = (_on_timer, rep, db, (name,), now_ms, db_now_ms, (rep_after, db_after, effects))
                blocked = _timer(key, armed.get(key)) if key in armed else s.timers.get(key)
                break
            # A paused worker's poll reads no row (runner.py ``_acquire``): its verdict holds.
            stale_ms = (rep.rules.timing.heartbeat_stale_ms if name == TIMER_ACQUIRE and not rep.heartbeats_paused
                        else None)
            period_ms = clock.true_delay(max(effects[0].after_ms, 0))  # true time: drift is constant
            known[key] = verdict = (period_ms, db_after is not db, stale_ms)
            if memo is not None:
                # The set of heartbeat rows by the keys view of the map's index (never
                # changed after it is built): compared as a set, without a tuple each time.
                memo[key] = (rep, db.chats, db.db_up, db.heartbeats._index.keys(), verdict)
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
        if memo is not None:
            memo[FIRST] = (s, heap[0][2])
        return s, 0, None, blocked
    out = object.__new__(type(s))  # ``copy.copy`` of the dataclass, without its generic dispatch
    fields_ = s.__dict__.copy()  # (one block copy: ``core.replace``)
    object.__setattr__(out, "__dict__", fields_)
    # The same keys in the same (sorted) order, the re-armed loops' timers replaced: one
    # new table for all of them (``FMap.edited``).
    fields_["timers"] = s.timers.edited({key: _Timer(key[0], key[1], at[0], at[1]) for key, at in armed.items()})
    fields_["seq"] = seq
    fields_["db"] = db
    fields_["now_ms"] = last_ms
    if memo is not None:
        memo[FIRST] = (out, heap[0][2])
    return out, fires, last_ms, blocked


def _row_owner(replicas) -> dict:
    """Heartbeat row key (chat, runner) -> the replica whose runner it is."""
    return {(r.chat_id, r.runner_id): n for n, rp in replicas.items() if rp is not None for r in rp.runners.values()}


def _bulk(heap, known, before, remaining, seq, armed, beats, rows, row_owner, db_clock):
    """The rest of a batch in closed form, once every loop that fires in it has a known
    verdict: each loop fires at its next due and every period after it; the firings are
    merged in the order the stepwise world takes them, (due, seq), where a firing's seq is
    the one its previous firing armed it with (``_fire_key``).

    The bulk ends before the first firing not below ``before``, after ``remaining``
    firings, and before a poll that would not be idle: each poll is checked against the
    heartbeat rows as the beats ordered before it left them (as in the loop of
    ``advance``). Updates the heap, ``armed`` and ``beats``; returns (firings, the last
    seq, the last firing's time)."""
    inf = _INF
    if before[0] == inf:
        end_ms = max(d for d, _, k in heap if k in known) + remaining * max(known[k][0] for _, _, k in heap if k in known) + 1
    else:
        end_ms = before[0] + 1
    timers = []  # (key, first firing's time, its seq, period) of each loop that fires
    fires = []
    for first_ms, q, key in heap:
        if key not in known:
            continue  # first due at or after ``before``: it does not fire in this batch
        period_ms = known[key][0]
        if period_ms <= 0:
            return 0, seq, None  # a zero period never leaves its instant: leave it to the loop
        i = len(timers)
        timers.append((key, first_ms, q, period_ms))
        fires.append((first_ms, 0, q, 0, 0, i))
        fires.extend((t, 1, t - period_ms, (t - first_ms) // period_ms, q, i)
                     for t in range(first_ms + period_ms, end_ms, period_ms))
    fires.sort()
    bound_ms = before[0]
    cut = bisect_left(fires, (bound_ms,)) if bound_ms != inf else len(fires)
    if len(before) > 1:
        while cut < len(fires) and fires[cut][0] == bound_ms and fires[cut][1] == 0 and fires[cut][2] < before[1]:
            cut += 1  # a loop's first firing at the bound's instant, armed before the bound's event
    cut = min(cut, remaining)
    # The polls, each against the rows as the heartbeats ordered before it left them.
    writers = {key[0]: (first_ms, q, period_ms, i) for i, (key, first_ms, q, period_ms) in enumerate(timers)
               if known[key][1]}
    for i, (key, first_ms, q, period_ms) in enumerate(timers):
        stale_ms = known[key][2]
        if stale_ms is None:
            continue
        for t in range(first_ms, fires[cut - 1][0] + 1 if cut else first_ms, period_ms):
            poll = _fire_key(t, first_ms, q, period_ms, i)
            floor = db_clock.read(t) - stale_ms
            if any(_row_at(k, v, row_owner, writers, beats, poll, db_clock) < floor for k, v in rows.items()):
                cut = min(cut, bisect_left(fires, poll))
                break
    if not cut:
        return 0, seq, None
    # The last firing of each loop before the cut: its re-arming and, for a heartbeat,
    # the rows it wrote.
    last_of = {}
    j = cut - 1
    while j >= 0 and len(last_of) < len(timers):
        last_of.setdefault(fires[j][5], j)
        j -= 1
    entries = []
    index = {t[0]: i for i, t in enumerate(timers)}
    for entry in heap:
        i = index.get(entry[2])
        if i in last_of:
            j = last_of[i]
            at = (fires[j][0] + timers[i][3], seq + j + 1)
            armed[entry[2]] = at
            entries.append((at[0], at[1], entry[2]))
            if timers[i][0][0] in writers and writers[timers[i][0][0]][3] == i:
                beats[timers[i][0][0]] = fires[j][0]
        else:
            entries.append(entry)
    heap[:] = entries
    heapify(heap)
    return cut, seq + cut, fires[cut - 1][0]


def _bulk_counted(heap, known, before, remaining, seq, armed, beats, rows, row_owner, db_clock):
    """``_bulk`` for a finite ``before``, counted instead of listed: the firings of a loop
    below a key (``_fire_key`` order) are counted in closed form, a loop's last firing
    takes the seq its place in the merged order gives it, and, with a database clock that
    only has an offset, the first poll that would not be idle is computed per heartbeat
    row. ``_bulk`` (which lists and sorts every firing) is what replays use, so every
    replay of a batched run checks this against it. Same arguments and result."""
    timers = []  # (key, first firing's time, its seq, period, index)
    for first_ms, q, key in heap:
        verdict = known.get(key)
        if verdict is None:
            continue  # first due at or after ``before``: it does not fire in this batch
        if verdict[0] <= 0:
            return 0, seq, None
        timers.append((key, first_ms, q, verdict[0], len(timers)))
    cut = (before[0], 0, before[1]) if len(before) > 1 else (before[0],)
    # The polls: the first one that would not be idle ends the bulk before it.
    if any(known[t[0]][2] is not None for t in timers):
        failing = _first_failing_poll(timers, known, cut, beats, rows, row_owner, db_clock)
        if failing is not None and failing < cut:
            cut = failing
    counts = [_count_all_below((t,), cut) for t in timers]  # (each loop's own)
    total = sum(counts)
    if total > remaining:
        return _bulk(heap, known, before, remaining, seq, armed, beats, rows, row_owner, db_clock)
    if not total:
        return 0, seq, None
    # Each loop's last firing, in the merged order. Its place there: every firing of the
    # loops whose last firing comes before it (their counts), its own earlier ones, and
    # those of the loops whose last firing comes after it below it, which are counted.
    # The latest is at place total - 1, counting nothing; a loop that did not fire has
    # no firing below any of them.
    lasts = []  # (key of the last firing, its time, firings, timer)
    for t, n in zip(timers, counts):
        if n:
            at_ms = t[1] + (n - 1) * t[3]
            lasts.append((_fire_key(at_ms, t[1], t[2], t[3], t[4]), at_ms, n, t))
    lasts.sort()  # (keys differ in their loop's index: nothing after them is compared)
    rest = total  # the firings of the loops whose last firing is this one or earlier
    later = []  # the loops whose last firing comes after this one
    for last, at_ms, n, t in reversed(lasts):
        key = t[0]
        place = rest - 1 + _count_all_below(later, last) if later else rest - 1
        rest -= n
        later.append(t)
        armed[key] = (at_ms + t[3], seq + place + 1)
        if known[key][1]:
            beats[key[0]] = at_ms
    fired = {t[0] for t in later}
    heap[:] = [(armed[e[2]][0], armed[e[2]][1], e[2]) if e[2] in fired else e for e in heap]
    heapify(heap)
    return total, seq + total, lasts[-1][1]


def _count_all_below(timers, key: tuple) -> int:
    """How many firings of these loops come before ``key`` in the merged order
    (``_fire_key``): a batch asks it once per loop (its own count below the cut), and
    once per loop that fired, over the loops whose last firing comes after its own."""
    t = key[0]
    if t == _INF:
        raise ValueError("an unbounded count")
    total = 0
    for _, first_ms, q, period_ms, i in timers:
        if t <= first_ms:
            if t == first_ms and (first_ms, 0, q, 0, 0, i) < key:
                total += 1
            continue
        # (One division for both: the whole periods since the first firing, and whether
        # one falls at t.)
        n, rest_ms = divmod(t - first_ms, period_ms)
        if rest_ms:
            total += n + 1  # the firings at first_ms + 0 .. n periods, all before t
        else:
            total += n  # those strictly before t; the one at t goes by its key:
            if (t, 1, t - period_ms, n, q, i) < key:  # (``_fire_key`` of a later firing)
                total += 1
    return total


def _first_failing_poll(timers, known, cut, beats, rows, row_owner, db_clock):
    """The key of the first poll below ``cut`` whose rows would not all be fresh (its
    cleanup would delete one, or an owned chat would be stale), or None.

    With a database clock that only has an offset ``c`` (no drift, no steps), a row read
    at poll time t is stale iff its value < t + c - stale. A row whose replica beats in
    the bulk every P <= stale ms is fresh from that replica's first beat on (the last
    beat before any later poll is less than P ms old); before it, and for every other
    row, the value is fixed, so the first stale poll is found by division. Any other
    clock: each poll is checked in turn (``_row_at``)."""
    writers = {t[0][0]: (t[1], t[2], t[3], t[4]) for t in timers if known[t[0]][1]}
    polls = [t for t in timers if known[t[0]][2] is not None]
    best = None
    if db_clock.drift_ppm == 0 and not db_clock.steps:
        offset_ms = db_clock.offset_ms
        for key, first_ms, q, period_ms, i in polls:
            stale_ms = known[key][2]
            for row, value in rows.items():
                owner = row_owner.get(row)
                w = writers.get(owner)
                if w is not None and w[2] > stale_ms:
                    return _first_failing_poll_stepwise(polls, known, cut, beats, rows, row_owner, writers, db_clock)
                fixed = db_clock.read(beats[owner]) if owner in beats else value
                fail_ms = fixed - offset_ms + stale_ms + 1  # first instant the fixed value is stale
                k = max(0, -(-(fail_ms - first_ms) // period_ms))
                at_ms = first_ms + k * period_ms
                poll = _fire_key(at_ms, first_ms, q, period_ms, i)
                if w is not None and not poll < _fire_key(w[0], w[0], w[1], w[2], w[3]):
                    continue  # by then its replica beats: fresh for good
                if poll < cut and (best is None or poll < best):
                    best = poll
        return best
    return _first_failing_poll_stepwise(polls, known, cut, beats, rows, row_owner, writers, db_clock)


def _first_failing_poll_stepwise(polls, known, cut, beats, rows, row_owner, writers, db_clock):
    best = None
    for key, first_ms, q, period_ms, i in polls:
        stale_ms = known[key][2]
        at_ms = first_ms
        while True:
            poll = _fire_key(at_ms, first_ms, q, period_ms, i)
            if not poll < cut or (best is not None and not poll < best):
                break
            floor = db_clock.read(at_ms) - stale_ms
            if any(_row_at(k, v, row_owner, writers, beats, poll, db_clock) < floor for k, v in rows.items()):
                best = poll
                break
            at_ms += period_ms
    return best


def _fire_key(t: int, first_ms: int, q, period_ms: int, i: int) -> tuple:
    """A bulk firing's place among those at its instant (the order is (due, seq)):

    - a loop's first firing in the bulk (armed before it, with a lower seq than any
      armed in it) comes before the others, and firsts go by their seq;
    - the others by the instant of their previous firing (it armed the lower seq);
    - loops of one period, whose previous firings share an instant too, by how often
      they fired in the bulk (fewer: it was a first there, recursively), then by the seq
      they started with."""
    if t == first_ms:
        return (t, 0, q, 0, 0, i)
    return (t, 1, t - period_ms, (t - first_ms) // period_ms, q, i)


def _row_at(key, value, row_owner, writers, beats, poll, db_clock):
    """A heartbeat row's value as a poll (at ``poll``, a ``_fire_key``) reads it: the last
    beat of the replica whose runner it is ordered before the poll, in the bulk or before
    it (``beats``), else the value in the database."""
    owner = row_owner.get(key)
    w = writers.get(owner)
    if w is not None:
        first_ms, q, period_ms, i = w
        t = poll[0]
        if t >= first_ms:
            n = (t - first_ms) // period_ms
            beat = first_ms + n * period_ms
            if beat == t and _fire_key(beat, first_ms, q, period_ms, i) > poll:
                beat -= period_ms
            if beat >= first_ms:
                return db_clock.read(beat)
    if owner in beats:
        return db_clock.read(beats[owner])
    return value


def _timer(key, at):
    return builder.Timer(key[0], key[1], at[0], at[1])


# (system imports this module at its end, after its ``Timer``: the class is there in
# either import order)
_Timer = builder.Timer


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
    Step = builder.Step
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
