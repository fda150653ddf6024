"""Exhaustive exploration of small worlds: breadth-first search over ``system.apply``.

Theory of operation
-------------------
The explorer drives the same ``toolcall_sim.model.system.apply`` as the simpy world, but instead of
drawing one future it takes every one: in each state, every action the world could take
next (``enabled``) is applied, and the resulting states are deduplicated by a canonical
key (Rule 4). Breadth-first order makes the first violation found for a property the one
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
        (an immediate takeover by any live replica but the owner), interrupts, lost responses and task
        retries (attempt timeouts that fire). A spent budget disables its action.
        ``Bounds.fault_windows`` may hold a budget's fault to windows the system state
        shows (a time on, a message in flight, a process running, a commit made:
        model/explore_actions.py), which a scenario's ``--faults at-trigger`` sets.
Rule 3 (ghost history). Properties are functions of a trace. Each explored state carries
        the records the properties read (ground truth, commits, interrupts, ownership,
        restarts, the start requests' ages) for the path that reached it; it is part of the
        state's key, so two paths merge only when their histories agree (up to order,
        Rule 5). Safety properties are checked on every new state, eventually-properties
        on terminal states (quiesced, or nothing left to do before the horizon).
Rule 4 (interned keys). A state's identity is a tuple of small handles (model/interning.py):
        one per node state (agent, replicas, database), one for the messages in flight
        and one for the armed timers (as sets, leaving out sequence numbers, which only
        say in which order things were created), one for the ghost history, plus the
        clock, the partitions and the budgets spent. Equal components share one handle,
        so two states are compared exactly, in a few pointer comparisons, and a step
        keys only the components it changed. ``fingerprint`` gives the same identity as
        a 128-bit content digest, the same in every process (what sim/drivers/explore_parallel.py
        compares states by).
Rule 5 (reordered histories merge). Two paths that reach the same system state with the
        same ghost records in another order are one state: the key takes the ghost as
        a multiset, and the kept state carries the first path's order. The
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

The states and the search's context (Rules 6 and 7 in code) are model/explore_context.py,
the state keys (Rule 4) model/explore_keys.py;
what a state enables and the search's bounds (Rules 1 and 2 in code), model/explore_actions.py.

Rule 7 (the transition memo). ``apply`` is pure and reads little of the state: a delivery to
        the agent reads the agent; one to a replica, a replica's timer, an interrupt or
        a takeover read the replicas and the database; a restart reads the agent's
        life; a lost message or a tick reads nothing. So a step is cached under the
        handles of what it reads (``Context._memo_key``) as the edits it made
        (``_Delta``): the node states it replaced, the messages and timers it added
        (renumbered from the counter of the state it is replayed on), the timers and
        open requests it removed, and its ghost records. Of the 79,921 steps the default
        world's search still takes (Rule 10 spares the rest) 4,834 run ``system.apply``.
        A step that writes outside what it read is never cached; ``CHECK_MEMO`` (the
        tests) applies every cached step for real too and compares field by field. The
        memo keeps two generations of ``Context.MEMO_GENERATION`` keys: its deltas hold
        whole node states, and only the 1 s world has more distinct steps than one
        generation holds (31,365 steps run instead of 30,955; 879 bytes a state instead
        of 982).
Rule 8 (storage). A numbered state keeps only its key, its parent's number and the index
        of the parent's action that led to it; a counterexample's path is rebuilt by
        replaying those choices from the initial state. Only the frontier holds nodes.
Rule 9 (one order of events). ``Search`` makes every decision (a state's verdict, a child
        numbered or merged, ``max_states``, ``stop_on``) in one fixed order, so
        sim/drivers/explore_parallel.py can let worker processes expand states and still number
        them here in that order: the result is the same for any number of workers.
Rule 10 (one expansion per system state). A state's children depend on its system and
        its budgets, never on its ghost history, which a step only extends by the records
        it adds; and states that differ only in their ghost are 1.75x as many as the
        system states (the default world: 33,443 states, 19,226 expansion keys, measured
        before the ghost kept each request's arrival, issue 34: 37,502 states since). So
        ``Search.successors`` expands a system state once: under its expansion key
        (``Context.system_key``: the key's system part, plus what the key leaves out but
        a step or ``enabled`` reads, sequence numbers aside: the messages in their
        sending order, the open requests, the replicas' boots) it keeps whether the state
        is terminal and, per enabled action, the child's system, new ghost records,
        budgets, key part, verdict kinds and chats: in the default world 19,419 of the
        33,443 states list their actions and step (52,282 of the 79,690 children). Per
        state only the ghost grows, the key's last part is added and the verdicts are
        read. A child taken from another state carries that state's sequence numbers,
        which never enter a key or a verdict; a path is rebuilt by replaying choices
        (Rule 8), so its labels are its own, and with ``keep_edges`` (labels on edges) the
        memo is off. It keeps two generations of ``EXPANSIONS_LIMIT`` expansions: twins
        are found within a few breadth-first levels of each other, and the memo holds
        whole child systems, so a bigger one costs the 1 s world memory per state
        (exhausted: 844 bytes at 4,000, 899 at 6,000, 941 at 8,000, before a step's
        delta kept its renumbered messages and timer transitions, which made 899 956;
        since an entry keeps no action (344 bytes each, read only for labels): 946 at
        6,000, 949 at 7,000, 978 at 8,000, 997 at 9,000, 1,018 at 10,000; the issue's
        goal is 1 KB) for hits the widest searches need (pid-from-command's two chats:
        42,452 of 53,313 expansions list their actions at 6,000, 40,047 at 8,000,
        38,412 at 12,000, 37,468 at 20,000). Under ``CHECK_MEMO`` every reuse is
        computed again and compared.
        A listed child is also kept per system state and action (``Search.steps``: the
        expansion key without the budgets, ``_without_budgets``; a message by its place
        in flight), since a child's system does not depend on the budgets, only which
        actions are enabled does: a state listed under other budgets takes the children
        they share and adds its own budgets to their keys. It holds the expansion
        memo's own child entries in the same two generations, so it keeps no child
        alive longer: in the default world 13,359 of the 52,271 listed children come
        from it, 8.6% fewer instructions for the whole search by cachegrind, and the
        1 s world's memory per state 955 -> 961 bytes; pid-from-command takes 7,600 of
        106,000 from it, about what its lookups cost. (A first version, which stored
        new tuples per child and was judged by the wall clock, was left at 65 more bytes
        per state and no time saved.) ``_check_step`` computes each such child again
        under ``CHECK_MEMO``.
Rule 11 (partial order). ``Search.choices`` is what a state takes: ``enabled``'s actions,
        or one delivery to the agent alone where its set is persistent, which
        model/explore_por.py decides by searching what can happen without it (its
        theory of operation). The decision reads the system and the budgets only, so it
        is memoized with the expansion (Rule 10), workers take it alike (Rule 9), and a
        path is rebuilt through the same lists (Rule 8). ``Bounds(partial_order=False)``
        (``--no-reduction``) takes every order: the default world has 14,170 states
        reduced, 37,502 not.

The periodic worker loops (heartbeats, acquisition polls, runner syncs) are switched off
in explored worlds (their intervals exceed the horizon): ownership changes happen through
the explicit ``takeover`` fault instead, which is what a stale heartbeat leads to.
"""

from __future__ import annotations

import gc
from array import array
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from . import system as msys
from .interning import digest_extended, digest_of, digest_text_of
from .explore_por import reduce as reduce_order
from .system import Tick

# The explored states and the search's context live in model/explore_context.py; what
# drivers and tests name as ``explore.X`` is re-exported here.
# What a state enables (Rules 1 and 2) is model/explore_actions.py; re-exported here too.
from .explore_actions import LOSABLE_ROUTES, REDUCTIONS, Bounds, _unnumbered, enabled  # noqa: F401
from .explore_context import (  # noqa: F401
    BUDGETS,
    Context,
    Node,
    _is_attempt_timeout,
    _spend,
    ghost_trace,
)
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


def fingerprint(node: Node, reorder: bool = True) -> str:
    """The state's identity as every process computes it: the 128-bit content digest of
    its key (model/interning.py Rule 4), the ghost as a multiset with ``reorder``. It is
    what the parallel driver compares states by; a fresh digest context re-keys the node,
    whatever context made it."""
    ctx = Context(digests=True)
    ghost, order, bag = ctx.grow(ctx.initial_ghost(), ctx.ghost_of([h.value for h in node.ghost]))
    return digest_of(ctx.key(Node(node.system, node.used, ghost, order, bag), reorder)).hex()


_DELIVER, _DROP, _FIRE, _FAULT = msys.Deliver, msys.Drop, msys.Fire, msys.Fault


def _without_budgets(xkey: tuple) -> tuple:
    """An expansion key (``Context.system_key``) without the budgets spent: the system
    state, which decides a child's system (``Search.successors``' ``steps``)."""
    return xkey[:10] + xkey[11:]


# ---------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------


@dataclass
class Found:
    property: str
    residual_risk: str | None
    path: list  # actions from the initial state
    detail: str
    depth: int | None = None  # the breadth-first depth of the state it was found in (a report's depth chart)


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
    states_per_depth: tuple = ()  # numbered states at each breadth-first depth, from 0 (a report's depth chart)
    processes: int = 1  # processes that searched (sim/drivers/explore_parallel.py: 1 when it ended before forking)


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


ALWAYS = ("always",)  # the properties' kinds a state is checked for (properties.violations_of)
TERMINAL = ("always", "eventually")


class Search:
    """One breadth-first search, one state at a time (``run``), or driven a level at a
    time by a parallel driver (sim/drivers/explore_parallel.py) through ``report`` and ``offer``,
    which keep the order of events, and so the result, of the one-process search.

    Rule 8 (storage): a numbered state keeps only its key, its parent's number and which
    of the parent's enabled actions led to it; a path is rebuilt by replaying those
    choices from the initial state. Only the frontier holds whole nodes.
    Rule 9 (keys): in one process a state's key is its tuple of handles (exact); with
    ``digests`` (parallel searches) it is the 128-bit digest of that tuple
    (model/interning.py Rule 4), which every process computes alike."""

    # Rule 10's memo holds at most twice this many expansions (two generations).
    EXPANSIONS_LIMIT = 8_000

    def __init__(self, config: msys.WorldConfig, bounds: Bounds = Bounds(), max_states: int = 200_000,
                 keep_edges: bool = False, stop_on: Callable[[Found], bool] | None = None, digests: bool = False,
                 warm_from: Search | None = None):
        self.config, self.bounds, self.max_states = config, bounds, max_states
        self.keep_edges, self.stop_on, self.digests = keep_edges, stop_on, digests
        # ``warm_from``: an earlier search of the same world and bounds, whose context
        # (handles, step and verdict memos) and expansion memo this one starts from, so
        # that with no generation dropped every expansion is found in memory: what the
        # search costs beside the model's steps (sim/ci/bench.py's ceiling).
        self.ctx = Context(digests) if warm_from is None else warm_from.ctx
        self.reorder = bounds.merge_reordered
        root = self.ctx.initial_node(config)
        self.index: dict = {self.key(root): 0}
        # Rule 10's memo, in two generations (``successors``); none with edges, whose
        # labels carry each path's own sequence numbers.
        self.expansions: dict | None = None if keep_edges else {}
        self.expansions_old: dict = {}
        # and each listed child per system state (the expansion key without the budgets)
        # and action, in the same two generations (``successors``).
        self.steps: dict = {}
        self.steps_old: dict = {}
        if warm_from is not None and self.expansions is not None:
            self.expansions, self.expansions_old = warm_from.expansions, warm_from.expansions_old
            self.steps, self.steps_old = warm_from.steps, warm_from.steps_old
        self.texts: dict = {}  # a key's small parts -> their digest text (``digest_text_of``)
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
        return TERMINAL if terminal else ALWAYS

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
            node, taken = ctx.step(node, self.choices(node)[m])
            steps.extend(taken)
        return steps

    def report(self, violations: list, path: Callable[[], list], depth: int | None = None) -> None:
        for v in violations:
            key = v.property if v.residual_risk is None else f"{v.property}:{v.residual_risk}"
            if key not in self.found:
                self.found[key] = Found(v.property, v.residual_risk, path(), v.detail, depth)
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
                self.report(dup_violations(), lambda: self.path_to(parent, move), self.depths[parent] + 1)
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

    def choices(self, node: Node) -> list:
        """The actions the search takes in ``node``: ``enabled``'s, or the one delivery
        whose set is persistent (model/explore_por.py), the same in every process."""
        actions = enabled(node, self.bounds)
        if self.bounds.partial_order and len(actions) > 1:
            return reduce_order(self.ctx, node, actions, enabled, self.bounds)
        return actions

    def successors(self, node: Node) -> tuple[bool, tuple]:
        """Rule 10: whether ``node`` is terminal, and its children in the order of its
        enabled actions, each ``(action (None unless edges are kept or under
        ``CHECK_MEMO``: only labels read it), system, new ghost handles, budgets spent, the
        system part of its key, its expansion key, the properties' kinds it is checked for
        as a known state (by its quiescence), the handle of its chats (the verdict memo's
        key, ``Context.verdict``), the text of the system part's digest with
        ``digests``)``: the ghost is the only part of a child that its
        parent's ghost decides, so these are memoized by the parent's expansion key and a
        child node is grown from them (``child``)."""
        xkey = node.xkey
        expansions = self.expansions
        if xkey is not None and expansions is not None:
            found = expansions.get(xkey)
            if found is None:
                found = self.expansions_old.get(xkey)
            if found is not None:
                if self.ctx.check:
                    self._check_expansion(node, found)
                return found
        ctx, digests = self.ctx, self.digests
        actions = self.choices(node)
        step, system_key, chats_of = ctx.child_of, ctx.system_key, ctx.chats_of
        if not actions:
            terminal = True
        elif xkey is not None:
            # Quiescence by the database's handle in the key (``chats_of``, below).
            facts = chats_of.get(xkey[5])
            terminal = ctx.quiesced(node.system) if facts is None else facts[0] is TERMINAL
            if ctx.check and terminal != ctx.quiesced(node.system):
                raise AssertionError("expansion memo differs in the state's quiescence")
        else:
            terminal = ctx.quiesced(node.system)
        children = []
        parent = node.system if xkey is not None else None
        fast = xkey is not None and node.settled
        texts = self.texts
        same = node.used
        # The children already listed for this system state under other budgets
        # (``steps``): a child's system does not depend on the budgets spent.
        steps = None
        if fast and expansions is not None:
            base = _without_budgets(xkey)
            steps = self.steps.get(base)
            if steps is None:
                steps = self.steps_old.get(base)
                if steps is None:
                    steps = {}
                self.steps[base] = steps
            places = None
        check = ctx.check
        # An entry names its action only where it is read (labels on edges, the checks):
        # a kept action is 344 bytes, a third of a state's share in the 1 s world.
        labelled = self.keep_edges or check
        for action in actions:
            # (a delivery or a tick spends no budget: ``_spend`` without a call)
            t = type(action)
            used = same if t is _DELIVER or t is Tick else _spend(node, action)
            if steps is not None:
                # The action without its sequence numbers: a message by its place in
                # flight (the expansion key's messages are in sending order), a lost one
                # by the complement (small integers: no tuple per delivery).
                if t is _DELIVER or t is _DROP:
                    if places is None:
                        places = {e.seq: i for i, e in enumerate(node.system.in_flight)}
                    step_key = places[action.seq] if t is _DELIVER else ~places[action.seq]
                elif t is _FIRE:
                    step_key = (action.node, action.name, action.at_ms)
                elif t is _FAULT:
                    step_key = (action.kind, action.params)
                else:
                    step_key = t
                done = steps.get(step_key)
                if done is not None:
                    # Another state's child, with the budgets this one spends.
                    sk = done[4][:10] + (used,)
                    entry = (action if labelled else None, done[1], done[2], used, sk, sk + done[5][11:], done[6],
                             done[7], digest_text_of(sk, texts) if digests else None)
                    if check:
                        self._check_step(node, action, entry)
                    children.append(entry)
                    continue
            if fast:
                system, new_ghost = step(node, action, xkey)
            else:
                system, new_ghost, _ = ctx.advance(node, action)
            sk, xk = system_key(system, used, parent, xkey)
            # Quiescence and the chats are the database's: read by its handle in the key,
            # both in one lookup.
            db = sk[5]
            facts = chats_of.get(db)
            if facts is None:
                facts = chats_of[db] = (TERMINAL if ctx.quiesced(system) else ALWAYS,
                                        ctx.interner.handle(system.db.chats))
            entry = (action if labelled else None, system, new_ghost, used, sk, xk, facts[0], facts[1],
                     digest_text_of(sk, texts) if digests else None)
            children.append(entry)
            if steps is not None:
                steps[step_key] = entry
        found = (terminal, tuple(children))
        if xkey is not None and expansions is not None:
            if len(expansions) >= self.EXPANSIONS_LIMIT:
                # A new generation: the memo only saves time, and the states that share a
                # system state are found within a few breadth-first levels of each other.
                self.expansions_old, self.steps_old = expansions, self.steps
                expansions = self.expansions = {}
                self.steps = {}
            expansions[xkey] = found
        return found

    def child(self, node: Node, entry: tuple) -> tuple[Node, object]:
        """A child node from its ``successors`` entry, and its key (Rule 9)."""
        _, system, new_ghost, used, sk, xk, _, _, text = entry
        ghost, order, bag = self.ctx.grow(node, new_ghost)
        last = bag if self.reorder else order
        return Node(system, used, ghost, order, bag, True, xk), digest_extended(text, last) if text else sk + (last,)

    def _check_step(self, node: Node, action, entry: tuple) -> None:
        """``CHECK_MEMO`` (the tests): a child taken from another state with the same
        system state (Rule 10's ``steps``) must be the real one, sequence numbers aside."""
        ctx = self.ctx
        system, new_ghost = ctx.child_of(node, action, node.xkey)
        sk, xk = ctx.system_key(system, entry[3], node.system, node.xkey)
        real = (new_ghost, entry[3], sk, xk, TERMINAL if ctx.quiesced(system) else ALWAYS,
                ctx.interner.handle(system.db.chats), digest_text_of(sk, self.texts) if self.digests else None)
        if real != entry[2:]:
            raise AssertionError(f"expansion memo differs in its step {action.label()}")

    def _check_expansion(self, node: Node, found: tuple) -> None:
        """``CHECK_MEMO`` (the tests): a memoized expansion must be the real one, sequence
        numbers aside (Rule 10)."""
        real = self.expansions, self.expansions_old
        self.expansions = None
        try:
            terminal, children = self.successors(node)
        finally:
            self.expansions, self.expansions_old = real
        if terminal != found[0] or len(children) != len(found[1]):
            raise AssertionError("expansion memo differs in its actions")
        for a, b in zip(children, found[1]):
            # The action and the child's system only as far as sequence numbers aside.
            if _unnumbered(a[0]) != _unnumbered(b[0]) or a[2:] != b[2:]:
                raise AssertionError(f"expansion memo differs after {a[0].label()}")

    def expand(self, number: int, node: Node) -> None:
        ctx = self.ctx
        terminal, children = self.successors(node)
        # (the chats' handle by the database's in the expansion key, when there is one)
        facts = ctx.chats_of.get(node.xkey[5]) if node.xkey is not None else None
        violations = ctx.verdict(node, TERMINAL if terminal else ALWAYS, facts[1] if facts is not None else None)
        if violations:
            self.report(violations, lambda: self.path_to(number), self.depths[number])
            if self.stopped:
                return
        if self.keep_edges or self.digests:
            for move, entry in enumerate(children):
                child, key = self.child(node, entry)
                new = self.offer(number, move, key, entry[0].label() if self.keep_edges else "",
                                 lambda: ctx.verdict(child, entry[6], entry[7]))
                if self.full:
                    return
                if new is not None:
                    self.frontier.append((new, child))
            return
        # ``child`` and ``offer`` inlined: the one-process search's hot loop, event for
        # event the same (a report of no violations does nothing).
        index, parents, moves, depths = self.index, self.parents, self.moves, self.depths
        frontier, result, reorder, grow, verdict = self.frontier, self.result, self.reorder, ctx.grow, ctx.verdict
        verdicts = ctx.verdicts
        depth = depths[number] + 1
        for move, (_, system, new_ghost, used, sk, xk, kinds, chats, _) in enumerate(children):
            if new_ghost:
                ghost, order, bag = grow(node, new_ghost)
            else:
                ghost, order, bag = node.ghost, node.order, node.bag
            result.transitions += 1
            key = sk + (bag if reorder else order,)
            # Numbered here if new: one hash of the key, not one to look and one to store.
            n = len(parents)
            if index.setdefault(key, n) != n:
                if reorder:
                    # Rule 5: this path's own order of the history is checked too (the
                    # verdict memo read here first, as ``Context.verdict`` keys it).
                    violations = verdicts.get((kinds, order, chats))
                    if violations is None:
                        violations = verdict(Node(system, used, ghost, order, bag, True, xk), kinds, chats)
                    if violations:
                        self.report(violations, lambda move=move: self.path_to(number, move), depth)
                continue
            if n >= self.max_states + 1:
                del index[key]  # (not numbered after all)
                self.full = True
                return
            parents.append(number)
            moves.append(move)
            depths.append(depth)
            if depth > result.depth:
                result.depth = depth
            frontier.append((n, Node(system, used, ghost, order, bag, True, xk)))

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
        per_depth = [0] * (max(self.depths) + 1)
        for d in self.depths:
            per_depth[d] += 1
        result.states_per_depth = tuple(per_depth)
        return result
