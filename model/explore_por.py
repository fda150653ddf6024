"""Partial-order reduction of the explorer: one agent delivery taken alone, when every
other order leads to the same stories.

Theory of operation
-------------------
Two steps that touch different nodes (the agent takes a request; a replica takes an
answer, fires a timer, is interrupted, takes over a chat) reach the same state in either
order, and the unreduced search visits both orders and every state between. A
persistent set (Godefroid's; SPIN's reduction is one) is a set of enabled steps such
that, along every path from the state that takes none of them, each step taken is
independent of them where it is taken: whatever the rest of the world does first, they
commute with it. Exploring only a persistent set then loses no terminal state and, when
its steps add nothing a property reads and a cycle cannot avoid them forever, no
violation of a property of the recorded history (Clarke, Grumberg, Peled: conditions C0
to C3 of an ample set).

Rule 1 (the candidate). An enabled delivery of a request to the agent that adds no ghost
        record, in ``enabled``'s order (the first that qualifies is taken). The agent's
        steps are the natural candidates: they read and write the agent alone, and a
        replica never reads the agent's state.
Rule 2 (persistence, decided, not assumed). A replica may still send the agent a
        request that overtakes the candidate on another connection, so no static class
        of steps is persistent here (docs/pages/explanation/reduction.md). Instead
        ``persistent`` searches the states reachable from the state without taking the
        candidate ``d``: in each, ``d`` must still be enabled and add no record, and every
        enabled step ``e`` must commute with ``d`` there (``d`` then ``e`` and ``e`` then
        ``d`` are both possible and reach the same state, ghost history included).
        That is the definition of a persistent set read state by state, so the set
        ``{d}`` is persistent exactly when the search finds no exception. The search
        stays within the same millisecond: a tick or a timer that moves the clock
        changes ``d``'s arrival time, so it never commutes, and it is looked for first
        in each state, before any pair is compared.
Rule 3 (invisibility, C2). ``d`` adds no ghost record where it is taken nor in any state
        of Rule 2's search, so moving it earlier leaves every path's sequence of records
        as it was; the properties read only that sequence and the committed database,
        which a delivery to the agent does not touch.
Rule 4 (cycles, C3). A reduced state takes one delivery to the agent, and the agent
        sends only to the replicas, so the requests in flight to the agent are one fewer
        after it: no cycle of the state graph is made of reduced states alone, and no
        step is put off for ever.
Rule 5 (one decision per system state). Whether ``{d}`` is persistent depends on the
        system state and the budgets spent only (the ghost enters the comparisons on both
        sides alike), so explore.py Rule 10 memoizes the reduced list with the state's
        children, the parallel driver's workers take the same decision (explore.py
        Rule 9), and a path is rebuilt through the same reduced lists
        (``Search.choices``). Facts learnt in a search (``{d}`` persistent or not in a
        state, a pair commuting or not) are kept per expansion key, so a state of a
        region already searched is decided without searching it again.
Rule 6 (the agent's pairs, kept by what they read). Whether ``d`` adds a record, and
        whether ``d`` commutes with another of the agent's steps (a delivery to it, its
        timer), depend on the agent's side of the state only: the time, the agent, its
        incarnation and files, the partitions (what the transition memo keys an agent's
        step by, model/explore_memo.py). So they are worked out once per such key and
        kept in ``Context.por_pairs``, on the agent's side: the two orders, each step as
        ``system.apply`` makes it, must reach one state and one multiset of records.
        That implies Rule 2's comparison (settling then delivers the same messages after
        either order); where only settling makes the orders meet (an output poll answered
        before or after the process exits, to a replica that no longer waits), the pair
        is taken not to commute, which costs reduction and never soundness, and keeps
        the decision a function of the state (Rule 5). ``CHECK_MEMO`` recomputes every
        kept answer and checks the implication. An agent restart is compared in full
        every time: it also answers the requests still open to the agent it ends.

Symmetry (model/explore_symmetry.py) prunes ``enabled`` first; the reduction is taken
in the pruned graph, whose violations are the unpruned one's. ``Bounds(partial_order=
False)`` and ``explore --no-reduction`` switch it off; tests/test_explore_por.py checks that
both settings find the same properties violated on every small world and planted bug,
and, under ``CHECK_MEMO``, that a reduced state's delivery commutes with every step
enabled beside it.
"""

from __future__ import annotations

from collections import deque

from . import system as msys
from .system import Tick

FACTS_LIMIT = 1_000_000  # Rule 5's facts kept at most (then forgotten and learnt again)


def reduce(ctx, node, actions: list, enabled, bounds) -> list:
    """``actions`` (``enabled``'s list in ``node``), or the one delivery of Rule 1 whose
    set is persistent (Rule 2)."""
    if len(actions) < 2:
        return actions
    s = node.system
    agent_bound = None
    for action in actions:
        if type(action) is _DELIVER:
            if agent_bound is None:
                agent_bound = {env.seq for env in s.in_flight if env.dst == _AGENT}
                if not agent_bound:
                    return actions
            if action.seq in agent_bound and persistent(ctx, node, action, enabled, bounds):
                return [action]
    return actions


def persistent(ctx, node, d, enabled, bounds) -> bool:
    """Rule 2: whether ``{d}`` is persistent in ``node``: a search of the states reachable
    without taking ``d``, cut short by what earlier searches learnt (Rule 5)."""
    facts, pairs = ctx.por_facts, ctx.por_pairs
    root = (_xkey(ctx, node), _place(node, d))
    known = facts.get(root)
    if known is not None:
        return known
    seen = {root}
    region = [root]
    queue = deque([(node, root[0])])
    failed = None
    while queue and failed is None:
        x, xk = queue.popleft()
        choices = enabled(x, bounds)
        now = x.system.now_ms
        # Rule 2's cheapest exception first: a step that moves the clock (a tick is
        # enabled whenever only requests to the agent are in flight) never commutes.
        if any(_moves_clock(e, now) for e in choices):
            failed = x
            break
        own = _same_in(choices, d)
        if own is None:
            failed = x  # another step disabled ``d``
            break
        what_d = _what(ctx, x, own)
        if _adds_records(ctx, x, own, xk, what_d):
            failed = x  # ``d`` would add a record here (Rule 3)
            break
        after_d = []  # ``d``'s child of ``x``, made once when a pair is compared in full

        def in_full(e) -> bool:
            if not after_d:
                after_d.append(_after(ctx, x, own)[0])
            return _commute(ctx, x, own, e, after_d[0], enabled, bounds)

        for e in choices:
            if e is own:
                continue
            if _chatd_side(x, e, now):
                # Rule 2's common case, by the footprints: ``e`` reads and writes chatd's
                # side and the messages other than ``d``'s, ``d`` the agent and its own
                # answer (checked pair by pair under ``CHECK_MEMO``).
                if ctx.check and not in_full(e):
                    raise AssertionError(f"{e!r} does not commute with the agent's {own!r}")
            else:
                pair = _pair_key(ctx, x, xk, what_d, e)
                if pair is None:
                    known = in_full(e)
                else:
                    known = pairs.get(pair)
                    if known is None or ctx.check:
                        found = _agent_commute(ctx, x, own, e)
                        if known is not None and known != found:
                            raise AssertionError(f"the agent-side pair memo differs for {own!r} and {e!r}")
                        if found and ctx.check and not in_full(e):
                            raise AssertionError(f"{e!r} commutes with {own!r} on the agent's side only")
                        known = _keep(pairs, pair, found)
                if not known:
                    failed = x
                    break
            xe, _ = ctx.step(x, e)
            ek = _xkey(ctx, xe, x, xk)
            k = (ek, _place(xe, own))
            if k in seen:
                continue
            fact = facts.get(k)
            if fact is False:
                failed = xe  # a path that avoids ``d`` reaches a state known not to keep it
                break
            seen.add(k)
            if fact is True:
                continue  # every path on from there is known to keep ``d`` first
            region.append(k)
            queue.append((xe, ek))
    if len(facts) >= FACTS_LIMIT:
        facts.clear()  # facts only save work: any of them can be learnt again
    if failed is None:
        # Every path from a state of the region that avoids ``d`` is the tail of one from
        # ``node``: ``{d}`` is persistent in each of them too.
        for k in region:
            facts[k] = True
        return True
    # ``{d}`` is not persistent where the exception was found (a path of length 0 or 1
    # from there shows it), nor here.
    facts[root] = False
    if failed is not node and any(env.seq == d.seq for env in failed.system.in_flight):
        facts[(_xkey(ctx, failed), _place(failed, d))] = False
    return False


def _chatd_side(x, e, now: int) -> bool:
    """Whether ``e`` is a step of chatd's side that leaves the clock where it is: a
    delivery to a replica, a lost answer, a replica's timer due now, an interrupt or a
    takeover. Such a step never reads the agent, and a delivery to the agent never reads
    chatd's side, so the two commute (Rule 2): only the agent's own steps are compared
    (Rule 6), and a step that moves the clock never commutes."""
    t = type(e)
    if t is _DELIVER:
        for env in x.system.in_flight:
            if env.seq == e.seq:
                return env.dst != _AGENT
        return False
    if t is _DROP:
        return True
    if t is _FIRE:
        return e.node != _AGENT and e.at_ms == now
    if t is _FAULT:
        return e.kind in ("interrupt", "takeover")
    return False  # a tick, or a step this list does not know: compared


def _moves_clock(e, now: int) -> bool:
    """A tick or a timer due later: it moves the clock, and with it the delivery's arrival
    time (an action of its own, at another time), so the two never commute; known
    without running both orders."""
    t = type(e)
    return t is Tick or (t is _FIRE and e.at_ms > now)


def _commute(ctx, x, d, e, xd, enabled, bounds) -> bool:
    """Whether ``d`` and ``e`` commute in ``x``: each stays enabled after the other, ``d``
    adds no record after ``e`` either, and both orders reach one state (key equality:
    the system, the budgets and the ghost as a multiset, explore.py Rule 4)."""
    e_after = _same_in(enabled(xd, bounds), e)
    if e_after is None:
        return False
    xe, _ = ctx.step(x, e)
    d_after = _same_in(enabled(xe, bounds), d)
    if d_after is None:
        return False
    xed, records = _after(ctx, xe, d_after)
    if records:
        return False
    xde, _ = ctx.step(xd, e_after)
    return ctx.key(xde) == ctx.key(xed)


def _what(ctx, x, d):
    """The handle of the message ``d`` delivers, without its sending time (what the
    transition memo keys a delivery by, model/explore_memo.py)."""
    for env in x.system.in_flight:
        if env.seq == d.seq:
            memo = getattr(env, "_what", None)
            return memo[1] if memo is not None and memo[0] is ctx.token else ctx.envelope(env, False)
    raise ValueError(f"{d!r} names no message in flight")


def _agent_side(x, xk: tuple) -> tuple | None:
    """What a step of the agent's reads of a state, from its expansion key (model/
    explore_keys.py): the time, the agent, its incarnation and files, the partitions and
    the dials waiting; None when the agent is down or a dial waits (those steps read
    more, and are compared by running them)."""
    if xk[9] != () or x.system.agent is None:
        return None
    return xk[0], xk[1], xk[2], xk[3], xk[8]


def _adds_records(ctx, x, d, xk: tuple, what_d) -> bool:
    """Whether ``d`` adds a ghost record in ``x`` (Rule 3): a function of the agent's side
    and the message (Rule 6), kept per those, checked under ``CHECK_MEMO``."""
    side = _agent_side(x, xk)
    key = None if side is None else ("records", side, what_d, d.at_ms)
    known = ctx.por_pairs.get(key) if key is not None else None
    if known is None or ctx.check:
        found = bool(_after(ctx, x, d)[1])
        if known is not None and known != found:
            raise AssertionError(f"the agent-side record memo differs for {d!r}")
        known = _keep(ctx.por_pairs, key, found) if key is not None else found
    return known


def _keep(pairs: dict, key, value: bool) -> bool:
    """``value`` kept under ``key`` in Rule 6's memo (emptied at ``FACTS_LIMIT``: it only
    saves work), and returned."""
    if len(pairs) >= FACTS_LIMIT:
        pairs.clear()
    pairs[key] = value
    return value


def _pair_key(ctx, x, xk: tuple, what_d, e) -> tuple | None:
    """Rule 6: the key under which whether ``d`` and ``e`` commute is kept, when both are
    the agent's steps (a delivery to it, its timer): what the two steps read, which is
    the agent's side of the state (``_agent_side``), the two messages and the times.
    None for any other pair, which is compared by running both orders every time: an
    agent restart also answers the requests still open to the agent it ends, which are
    chatd's side of the state."""
    side = _agent_side(x, xk)
    if side is None:
        return None
    t = type(e)
    if t is _DELIVER:
        for env in x.system.in_flight:
            if env.seq == e.seq:
                if env.dst != _AGENT:
                    return None
                return ("pair", side, what_d, _what(ctx, x, e), e.at_ms)
        return None
    if t is _FIRE:
        return ("timer", side, what_d, e.node, e.name, e.at_ms) if e.node == _AGENT else None
    return None


def _agent_commute(ctx, x, d, e) -> bool:
    """Rule 6: whether two of the agent's steps commute on the agent's side in ``x``: each
    leaves the other as it was (its message in flight, its timer armed as it was), ``d``
    adds no record after ``e``, and the two orders, each step as ``system.apply`` makes
    it (no settling after), reach one state and add one multiset of records. It reads
    only what ``_pair_key`` keeps it by. It implies ``_commute`` (settling after either
    order then settles the same messages; checked under ``CHECK_MEMO``); where only
    settling makes two orders meet, it says no, which costs reduction, never soundness."""
    s0 = x.system
    s_d, _ = ctx.apply(s0, d)
    if not _left_as_it_was(s_d, s0, e):
        return False
    s_e, g_e = ctx.apply(s0, e)
    if not _left_as_it_was(s_e, s0, d):
        return False
    s_ed, g_ed = ctx.apply(s_e, d)
    if g_ed:
        return False
    s_de, g_de = ctx.apply(s_d, e)
    used = x.used
    if ctx.system_key(s_de, used)[0] != ctx.system_key(s_ed, used)[0]:
        return False
    order = ctx.sort_key
    return sorted(g_de, key=order) == sorted(g_e, key=order)


def _left_as_it_was(after, before, a) -> bool:
    """Whether the step from ``before`` to ``after`` left ``a`` (a delivery or a timer)
    as it was: its message still in flight, its timer armed with the same arming."""
    if type(a) is _DELIVER:
        return any(env.seq == a.seq for env in after.in_flight)
    return after.timers._index.get((a.node, a.name)) == before.timers._index.get((a.node, a.name))


def _after(ctx, x, action):
    """The node after ``action`` and the ghost records the action itself added."""
    child, _ = ctx.step(x, action)
    return child, child.ghost[len(x.ghost):]


def _place(node, d) -> tuple:
    """Which message ``d`` delivers, as the expansion key tells messages apart: its place
    among the messages in flight in their sending order (sequence numbers differ between
    states of one expansion key), and the time."""
    for i, env in enumerate(node.system.in_flight):
        if env.seq == d.seq:
            return i, d.at_ms
    raise ValueError(f"{d!r} names no message in flight")


def _same_in(actions: list, action):
    """The action of ``actions`` that is ``action`` (same kind and fields: a message by
    its sequence number, which a step never changes), or None."""
    t, fields = type(action), action.__dict__
    for a in actions:
        if type(a) is t and a.__dict__ == fields:
            return a
    return None


def _xkey(ctx, node, parent=None, parent_key: tuple | None = None) -> tuple:
    """The expansion key of ``node`` (explore.py Rule 10): its system and budgets, what
    Rule 5's facts are kept by; given its parent and the parent's key, the components a
    step left as they were are taken from there."""
    if parent is None:
        return ctx.system_key(node.system, node.used)[1]
    return ctx.system_key(node.system, node.used, parent.system, parent_key)[1]


_DELIVER, _DROP, _FIRE, _FAULT = msys.Deliver, msys.Drop, msys.Fire, msys.Fault
_AGENT = msys.AGENT
