"""Symmetry of the explored worlds: untouched replicas are interchangeable.

Theory of operation
-------------------
Two states that differ only by which of two equal, untouched replicas did something are
one story told twice: a takeover by replica-2 while replica-3 idles, or by replica-3
while replica-2 idles. The search keeps one of them by never taking, in a state, an
action that names an untouched replica when an earlier untouched replica of the same
class is there to take it (``prune``): the classic reduction by the state's stabilizer
(Emerson and Sistla's, and what TLC's symmetry sets and Stateright's representatives
give), which here needs no renaming of states, because an untouched replica is named
nowhere in the state but in its own entries.

Rule 1 (the class). A replica is untouched while ``ReplicaState.joined`` is 0 on its
        first boot: it never changed its state, so it holds no runner, owns no chat
        row, made no request and paused no heartbeat. Two untouched replicas are in one
        class when they have the same rules (a replica of a mixed-version rollout is its
        own class), the same clock, the same timers (by name and due time) and the same
        messages waiting for them (by sender, route, payload and sending time: the late
        pub/sub world sends each replica its publishes), and no property or expectation
        names either (``Bounds.pinned_replicas``: a scenario that expects replica-3 to
        commit keeps replica-3 out of every class, so a state that names it is never
        folded into one that names replica-2).
Rule 2 (the pruned actions). In a class, the first replica in the world's order is the
        representative; a takeover by another member, a timer of another member and a
        message to another member (an untouched replica has sent none) are left out. Each has its twin on the
        representative (Rule 1 makes the state the same under the swap of the two), and
        the twin's child is the left-out child with the two names swapped.
Rule 3 (why the swap is a symmetry). Nothing in a step reads a replica's name but to
        find its entries, with one exception: an immediate publish reaches every replica
        in turn, and the first to act wins the chat. That order is the order the
        replicas first acted in (``joined``, model/builder.py ``publish_order``), then the
        untouched ones, so it follows the story and not the names; among untouched ones
        the world's order stands, and the winner is then one of a class, whichever it is.
        So a swap of two replicas maps every step to a step, and every property, which
        reads ghost records by chat and tool call (never by a replica's name), to the
        same verdict: the search finds every violation the unreduced search finds, at
        the same depth (tests/test_explore_symmetry.py checks it on every small world
        and planted bug, and that every state of the unreduced search has a twin among
        the reduced one's).
Rule 4 (what is not folded). Chats are not interchangeable: an acquisition takes the
        runnable chats in the database's order of their IDs, so which of two equal chats
        a replica takes first is decided by their names (the small worlds start their
        chats at different times for that reason). Tool calls of one batch are not
        either: they travel one connection to the agent in the batch's order and chatd
        commits their results in that order, so no state has two of them in swapped
        places. Both would need a renaming of whole states; the measured gain
        (``toolcall-sim bench``) is the replicas'.
"""

from __future__ import annotations

from . import system as msys


def prune(node, actions: list, pinned: tuple = ()) -> list:
    """``actions`` without those that name a non-representative untouched replica
    (Rules 1 and 2); the same list when no two replicas are interchangeable."""
    twin = interchangeable(node.system, pinned)
    if not twin:
        return actions
    kept = []
    for action in actions:
        t = type(action)
        if t is _FAULT:
            if action.kind == "takeover" and dict(action.params).get("to") in twin:
                continue
        elif t is _FIRE:
            if action.node in twin:
                continue
        elif t is _DELIVER or t is _DROP:
            # (only the receiver can be a twin: an untouched replica has sent nothing)
            if _in_flight(node.system, action.seq).dst in twin:
                continue
        kept.append(action)
    return kept


def interchangeable(s: msys.System, pinned: tuple = ()) -> dict:
    """Each untouched replica that is not its class's representative -> its
    representative (Rule 1); empty when there is none."""
    names = s.config.replicas
    replicas = s.replicas._index
    boots = s.replica_boots._index
    # (a replica booted again is fresh but its old worker may still own a chat row, which
    # names it: only a replica on its first boot is untouched)
    untouched = [n for n in names if (rep := replicas.get(n)) is not None and not rep.joined
                 and boots.get(n) == 1 and n not in pinned]
    if len(untouched) < 2:
        return {}
    classes: dict = {}
    twin = {}
    for name in untouched:
        sig = _signature(s, name)
        first = classes.setdefault(sig, name)
        if first != name:
            twin[name] = first
    return twin


def _signature(s: msys.System, name: str) -> tuple:
    """What an untouched replica is, without its name (Rule 1)."""
    rep = s.replicas._index[name]
    timers = tuple(sorted((n, t.due_ms) for (node, n), t in s.timers._items if node == name))
    waiting = tuple(sorted(
        (env.src if env.dst == name else ("to", env.dst), env.route, repr(env.payload), env.sent_at_ms)
        for env in s.in_flight + s.dials_waiting if env.dst == name or env.src == name))
    return (rep.rules, s.config.clocks.get(name), timers, waiting)


def _in_flight(s: msys.System, seq: int) -> msys.Envelope:
    """The message a delivery or a drop names (``enabled`` lists only messages in flight)."""
    return next(env for env in s.in_flight if env.seq == seq)


_DELIVER, _DROP, _FIRE, _FAULT = msys.Deliver, msys.Drop, msys.Fire, msys.Fault
