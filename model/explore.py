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
Rule 4 (canonical fingerprints). A fingerprint is the SHA-256 of the state's canonical
        ``repr``s (frozen dataclasses in field order, sorted ``FMap``s, sorted message and
        timer sets), leaving out what only labels use (message sequence numbers, the
        request label index, the configuration); never Python's ``hash``. Each state
        object caches its repr (``core.CachedRepr``), so a step re-renders only the
        parts it changed.
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
        delivered in the step that made it late (``_settle``): its delivery commutes
        with everything, so exploring it at every position would only multiply states.

The periodic worker loops (heartbeats, acquisition polls, runner syncs) are switched off
in explored worlds (their intervals exceed the horizon): ownership changes happen through
the explicit ``takeover`` fault instead, which is what a stale heartbeat leads to.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from . import chatd
from . import properties as props
from . import system as msys
from .core import Response
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


@dataclass(frozen=True)
class Node:
    system: msys.System
    used: tuple[int, ...]  # budgets spent, in BUDGETS order
    ghost: tuple  # the path's property-relevant records (Rule 3), as canonical JSON strings
    trace: tuple = field(default=(), compare=False)  # the same records parsed, for the properties


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


def _freeze(records) -> tuple:
    return tuple(json.dumps(r, sort_keys=True, separators=(",", ":"), default=str) for r in records)


def _grow(node_ghost: tuple, node_trace: tuple, records) -> tuple[tuple, tuple]:
    new = _freeze(_ghost_records(records))
    return node_ghost + new, node_trace + tuple(json.loads(r) for r in new)


def ghost_trace(node: Node) -> list[dict]:
    return list(node.trace)


def fingerprint(node: Node, reorder: bool = True) -> str:
    """Rule 4. ``repr`` of frozen dataclasses, tuples and sorted ``FMap``s is canonical
    (field order, sorted keys, no addresses), and far cheaper than a JSON walk. With
    ``reorder`` (Rule 5) the ghost history counts as a multiset."""
    s = node.system
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
        "\x1f".join(sorted(node.ghost) if reorder else node.ghost),
    )
    # Separators that no repr or JSON text contains keep the parts from running together.
    return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()


def _is_attempt_timeout(name: str) -> bool:
    return name.endswith("/timeout")


def enabled(node: Node, bounds: Bounds) -> list:
    """Every action the world may take next, in a deterministic order (Rule 1, Rule 2)."""
    s = node.system
    used = dict(zip(BUDGETS, node.used))
    now = s.now_ms
    actions: list = []
    deadline = min((e.sent_at_ms + bounds.max_in_flight_ms for e in s.in_flight), default=None)
    heads = _link_heads(s.in_flight) if bounds.fifo_links else s.in_flight
    for env in heads:
        actions.append(msys.Deliver(now, env.seq, env.what))
    for env in heads:
        if (used["lost_responses"] < bounds.lost_responses and env.src == msys.AGENT
                and isinstance(env.payload, Response) and env.route in LOSABLE_ROUTES):
            actions.append(msys.Drop(now, env.seq, env.what))
    due = [t for t in s.timers.values() if t.due_ms <= bounds.horizon_ms]
    if due:
        first = min(t.due_ms for t in due)
        if deadline is None or first <= deadline:
            for t in sorted(due, key=lambda t: (t.node, t.name)):
                if t.due_ms != first:
                    continue
                if _is_attempt_timeout(t.name) and used["task_retries"] >= bounds.task_retries:
                    continue
                actions.append(msys.Fire(max(now, first), t.node, t.name))
    # Only tool call requests may be held while time passes: their transit time is what the
    # age rule is about. Every other message is delivered before time moves on.
    delayable = [e for e in s.in_flight if e.dst == msys.AGENT and e.route in LOSABLE_ROUTES]
    if delayable and len(delayable) == len(s.in_flight) and now + 1 <= min(deadline, bounds.horizon_ms):
        nxt = min((t.due_ms for t in s.timers.values()), default=None)
        if nxt is None or now + 1 <= nxt:
            actions.append(Tick(now + 1))
    if used["agent_restarts"] < bounds.agent_restarts and s.agent is not None:
        actions.append(msys.Fault(now, "agent_restart"))
    # Interrupts and ownership changes may strike any chat, in the world's chat order.
    rows = [(spec.chat_id, s.db.chats.get(spec.chat_id)) for spec in s.config.chats]
    for chat, row in rows:
        if used["interrupts"] < bounds.interrupts and row is not None and row.status == chatd.RUNNING:
            actions.append(msys.Fault(now, "interrupt", (("chat", chat),)))
    for chat, row in rows:
        if used["ownership_changes"] < bounds.ownership_changes and row is not None and row.worker_id:
            owner = msys.chat_owner(s, chat)
            others = [r for r in s.config.replicas if r != owner and s.replicas.get(r) is not None]
            if owner is not None and others and row.status in chatd.RUNNABLE:
                actions.append(msys.Fault(now, "takeover", (("chat", chat), ("to", others[0]))))
    return actions


def _connection(env: msys.Envelope) -> tuple:
    """Which connection a message travels on: chatd dials the agent once per task attempt
    (the request IDs start with ``<worker>/t<n>/a<m>``), and answers ride back on it."""
    req_id = getattr(env.payload, "req_id", "") or ""
    attempt = "/".join(req_id.split("/")[:3])
    ends = tuple(sorted((env.src, env.dst)))
    return ends + (attempt,)


def _link_heads(in_flight) -> list:
    """The oldest message of each direction of each connection: a connection delivers in
    order, different connections (attempts, replicas) race freely. Losing a message takes
    it out of order, which the lost-response budget allows."""
    heads: dict[tuple, msys.Envelope] = {}
    for env in in_flight:  # in_flight is in send order
        heads.setdefault((env.src, env.dst) + _connection(env), env)
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


def step(node: Node, action) -> tuple[Node, tuple]:
    """The node after ``action`` and the actions taken (``action`` and the deliveries
    that settled after it), which is what a path records."""
    st = msys.apply(node.system, action)
    ghost, trace = _grow(node.ghost, node.trace, st.records)
    system, settled = _settle(st.system)
    return Node(system, _spend(node, action), ghost, trace), (action, *settled)


def _settle(s: msys.System) -> tuple[msys.System, list]:
    """Deliver at once every message whose delivery changes nothing but the network (a
    late answer to a replica whose call was aborted, say). Such a delivery commutes with
    every other action, so exploring it at every position only multiplies states (a
    partial-order reduction); delivering it now is one of the behaviours anyway."""
    settled = []
    changed = True
    while changed:
        changed = False
        for env in s.in_flight:
            if env.dst == msys.AGENT:
                continue  # the agent answers everything: never a no-op
            rep = s.replicas.get(env.dst)
            if rep is not None and hasattr(env.payload, "req_id") and chatd.awaits(rep, env.payload.req_id):
                continue  # an answer its caller still waits for changes the caller
            try:
                st = msys.apply(s, msys.Deliver(s.now_ms, env.seq, env.what))
            except msys.ReplayMismatch:
                continue
            t = st.system
            if (t.seq == s.seq and t.replicas == s.replicas and t.db == s.db and t.timers == s.timers
                    and t.agent == s.agent and not _ghost_records(st.records)):
                settled.append(msys.Deliver(s.now_ms, env.seq, env.what))
                s = t
                changed = True
                break
    return s, settled


def initial_node(config: msys.WorldConfig) -> Node:
    st = msys.initial(config)
    ghost, trace = _grow((), (), st.records)
    return Node(st.system, (0,) * len(BUDGETS), ghost, trace)


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
    edges: list = field(default_factory=list)  # (parent fp, child fp, label) when asked for


def _terminal(node: Node, actions: list) -> bool:
    return not actions or props.quiesced(node.system)


def explore(config: msys.WorldConfig, bounds: Bounds = Bounds(), max_states: int = 200_000,
            keep_edges: bool = False, stop_on: Callable[[Found], bool] | None = None,
            on_progress: Callable[[int], bool | None] | None = None) -> Result:
    """Breadth-first search. Returns every violated property's shortest counterexample.
    ``on_progress(states)`` is called after each expanded state (it should be cheap); a
    true answer stops the search there (not exhausted), keeping every counterexample
    found so far."""
    root = initial_node(config)
    root_fp = fingerprint(root, bounds.merge_reordered)
    verdicts: dict[tuple, list] = {}  # (kinds, ghost, chats) -> violations: most steps change neither
    parent: dict[str, tuple[str, Any] | None] = {root_fp: None}
    depth_of = {root_fp: 0}
    frontier = deque([(root_fp, root)])
    result = Result()
    found: dict[str, Found] = {}
    stopped = False

    def report(node: Node, kinds: tuple, path: Callable[[], list]) -> None:
        nonlocal stopped
        for v in verdict(verdicts, node, kinds):
            key = v.property if v.residual_risk is None else f"{v.property}:{v.residual_risk}"
            if key not in found:
                found[key] = Found(v.property, v.residual_risk, path(), v.detail)
                stopped = stopped or (stop_on is not None and stop_on(found[key]))

    while frontier and not stopped:
        fp, node = frontier.popleft()
        actions = enabled(node, bounds)
        report(node, ("always", "eventually") if _terminal(node, actions) else ("always",), lambda: _path(parent, fp))
        if stopped:
            break
        for action in actions:
            child, taken = step(node, action)
            cfp = fingerprint(child, bounds.merge_reordered)
            result.transitions += 1
            if keep_edges:
                result.edges.append((fp, cfp, action.label()))
            if cfp in parent:
                if bounds.merge_reordered:
                    # Rule 5: this path's own order of the history is checked too, at the
                    # depth the exact search would check it.
                    kinds = ("always", "eventually") if props.quiesced(child.system) else ("always",)
                    report(child, kinds, lambda: _path(parent, fp) + list(taken))
                continue
            parent[cfp] = (fp, taken)
            depth_of[cfp] = depth_of[fp] + 1
            result.depth = max(result.depth, depth_of[cfp])
            if len(parent) > max_states:
                break
            frontier.append((cfp, child))
        if on_progress is not None and on_progress(len(parent)):
            stopped = True  # the driver asks to stop (Ctrl-C): what was found so far is kept
            break
        if len(parent) > max_states:
            break
    result.states = len(parent)
    result.exhausted = not frontier and len(parent) <= max_states and not stopped
    result.violations = list(found.values())
    return result


def verdict(memo: dict, node: Node, kinds: tuple) -> list:
    """The properties' violations in this state. They read the ghost history and, of the
    system, only the chats (committed tool calls, statuses) and the configuration, which
    is the same for the whole search: so the verdict is memoized on those."""
    key = (kinds, node.ghost, repr(node.system.db.chats))
    found = memo.get(key)
    if found is None:
        found = memo[key] = props.evaluate(ghost_trace(node), node.system, kinds).violations
    return found


def _path(parent, fp) -> list:
    """The actions from the initial state to ``fp`` (settled deliveries included)."""
    steps = []
    while parent[fp] is not None:
        fp, taken = parent[fp]
        steps.append(taken)
    steps.reverse()
    return [a for taken in steps for a in taken]
