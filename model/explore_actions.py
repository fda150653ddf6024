"""What a state of the explorer enables next (model/explore.py Rules 1 and 2), and the
search's bounds.

Theory of operation
-------------------
``enabled(node, bounds)`` lists every action the world may take next, in one fixed order,
so that the breadth-first search (model/explore.py) numbers states alike in every run and
process: the deliveries of the messages at the head of their connection (and, while the
lost-response budget lasts, the loss of a tool call answer), the timers due first within
the horizon (a task attempt's timeout only while the task-retry budget lasts), a ``Tick``
of 1 small ms while only held tool call requests are in flight, then the faults whose
budgets are left (an agent restart, an interrupt of a running chat, a takeover of an owned
chat by any live replica but its owner). A connection delivers in order (chatd dials the agent once per
task attempt and its answers ride back on it); different connections race freely.
Actions are made without their dataclass ``__init__`` (``_action``, ``_message_action``):
a listing makes one per message and timer of every state.

Fault windows (``Bounds.fault_windows``, ``--faults at-trigger`` of a scenario). Empty, the
default, every budgeted fault may strike in every state. Otherwise each entry
``(budget, window, chat, to)`` says where that budget's fault may strike: a budget with
windows is offered only in a state where one of them holds (``_holds``), restricted to
its ``chat`` (an interrupt's or takeover's; "" any) and ``to`` (a takeover's target; ""
any); a budget without any keeps striking anywhere. A window reads the system state only
(model/explore.py Rule 10: a state's children depend on its system and its budgets):
``("after", t)`` the clock is at ``t`` small ms or later (the clock jumps from timer to
timer, so a state exactly at ``t`` may not exist; once open the window stays open);
``("message", direction, route, tool_call)`` such a message is in flight (a request from a
replica to the agent, or the agent's answer; "" any tool call), and for the lost-response
budget only such an answer may be dropped; ``("process", tool_call)`` a process of the
tool call runs on the agent; ``("result", tool_call)`` its result is committed in the
database; ``("message_committed", tool_call)`` the assistant message carrying it is. A
budget's windows share its count: two interrupts at two triggers may both strike in
either window while the budget lasts.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from . import chatd
from . import system as msys
from .core import Response
from .explore_context import Node, _is_attempt_timeout
from .explore_symmetry import prune
from .system import Tick


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
    # Symmetry (model/explore_symmetry.py): of interchangeable untouched replicas, only the
    # first acts; ``pinned_replicas`` are named by a property or an expectation and never fold.
    symmetry: bool = True
    pinned_replicas: tuple[str, ...] = ()
    # Partial-order reduction (model/explore_por.py): one agent delivery alone where its
    # set is persistent.
    partial_order: bool = True
    # Where each budget's fault may strike (module docstring): (budget, window, chat, to)
    # tuples of strings and ints, so a counterexample file records them as lists; empty:
    # every budgeted fault anywhere.
    fault_windows: tuple = ()


# ``explore --reduction``'s choices: which of the two reductions a search takes, as the
# (symmetry, partial_order) fields of ``Bounds``. Both find the same violations; symmetry
# alone is the faster of the reduced searches where messages wait in flight (the partial
# order's proofs cost about the states they save: docs/performance.md).
REDUCTIONS = {"all": (True, True), "symmetry": (True, False), "none": (False, False)}

LOSABLE_ROUTES = ("start", "edit", "write", "cancel")  # the tool call answers whose loss matters


def enabled(node: Node, bounds: Bounds) -> list:
    """Every action the world may take next, in a deterministic order (Rule 1, Rule 2)."""
    s = node.system
    restarts, ownership, interrupts, lost, retries = node.used  # BUDGETS order
    now = s.now_ms
    in_flight = s.in_flight
    actions: list = []
    deadline = None
    held = False
    if in_flight:
        # One pass for the oldest sending time (the deadline); whether every message is a
        # tool call request to the agent, which may wait while time passes (below); and
        # the oldest message of each direction of each connection (``_connection``): a
        # connection delivers in order, different connections (attempts, replicas) race
        # freely, and losing a message takes it out of order, which the lost-response
        # budget allows.
        fifo = bounds.fifo_links
        first_sent = None
        held = True
        links: dict = {}
        for env in in_flight:  # in send order
            sent = env.sent_at_ms
            if first_sent is None or sent < first_sent:
                first_sent = sent
            if held and (env.dst != _AGENT or env.route not in LOSABLE_ROUTES):
                held = False
            if fifo:
                link = getattr(env, "_link", None)
                if link is None:
                    link = _connection(env)
                if link not in links:
                    links[link] = env
        deadline = first_sent + bounds.max_in_flight_ms
        if not fifo:
            heads = in_flight
        elif len(links) == 1:
            heads = list(links.values())
        else:
            heads = sorted(links.values(), key=_SEQ)
        actions = [_message_action(_DELIVER, now, env.seq, env.what) for env in heads]
        if lost < bounds.lost_responses:
            losable = _windows(bounds.fault_windows, "lost_responses")
            for env in heads:
                if env.src == msys.AGENT and env.route in LOSABLE_ROUTES and isinstance(env.payload, Response) \
                        and (losable is None or any(_names(w, env) for w, _, _ in losable)):
                    actions.append(_message_action(msys.Drop, now, env.seq, env.what))
    timers = s.timers._items
    nxt = None  # the first timer due, and the first due within the horizon (one pass, no generator)
    if timers:
        horizon = bounds.horizon_ms
        first = None
        for _, t in timers:
            due = t.due_ms
            if nxt is None or due < nxt:
                nxt = due
            if due <= horizon and (first is None or due < first):
                first = due
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
    if in_flight and now + 1 <= min(deadline, bounds.horizon_ms) and held:
        if nxt is None or now + 1 <= nxt:
            actions.append(_action(Tick, at_ms=now + 1))
    windows = bounds.fault_windows
    if restarts < bounds.agent_restarts and s.agent is not None and _open(s, windows, "agent_restarts") != []:
        actions.append(_action(_FAULT, at_ms=now, kind="agent_restart", params=()))
    # Interrupts and ownership changes may strike any chat, in the world's chat order
    # (within their windows' chats and targets, when they have windows).
    may_interrupt = interrupts < bounds.interrupts
    may_take_over = ownership < bounds.ownership_changes
    where_interrupt = _open(s, windows, "interrupts") if may_interrupt else None
    where_take_over = _open(s, windows, "ownership_changes") if may_take_over else None
    may_interrupt = may_interrupt and where_interrupt != []
    may_take_over = may_take_over and where_take_over != []
    if may_interrupt or may_take_over:
        chats = s.db.chats
        rows = [(spec.chat_id, chats._index.get(spec.chat_id)) for spec in s.config.chats]  # (no method call)
        if may_interrupt:
            for chat, row in rows:
                if row is not None and row.status == chatd.RUNNING and \
                        (where_interrupt is None or any(c in ("", chat) for c, _ in where_interrupt)):
                    actions.append(_action(_FAULT, at_ms=now, kind="interrupt", params=(("chat", chat),)))
        if may_take_over:
            for chat, row in rows:
                if row is not None and row.worker_id and row.status in chatd.RUNNABLE:
                    owner = msys.chat_owner(s, chat)
                    others = [r for r in s.config.replicas if r != owner and s.replicas.get(r) is not None]
                    if owner is not None:
                        # to any live replica but the owner: with three, a third can take
                        # over while the second's stale attempt is still in flight
                        for other in others:
                            if where_take_over is not None and not any(
                                    c in ("", chat) and to in ("", other) for c, to in where_take_over):
                                continue
                            actions.append(_action(_FAULT, at_ms=now, kind="takeover",
                                                   params=(("chat", chat), ("to", other))))
    if bounds.symmetry and len(s.config.replicas) > 1:
        return prune(node, actions, bounds.pinned_replicas)
    return actions


def _windows(windows: tuple, budget: str) -> list | None:
    """``budget``'s windows as (window, chat, to); None when it has none (anywhere)."""
    if not windows:
        return None
    found = [(w, chat, to) for b, w, chat, to in windows if b == budget]
    return found or None


def _open(s: msys.System, windows: tuple, budget: str) -> list | None:
    """The (chat, to) restrictions of ``budget``'s windows that hold in ``s``; None when
    the budget has no windows (it strikes anywhere), [] when none holds."""
    found = _windows(windows, budget)
    if found is None:
        return None
    return [(chat, to) for w, chat, to in found if _holds(s, w)]


def _names(window: tuple, env: msys.Envelope) -> bool:
    """Whether a ``("message", direction, route, tool_call)`` window names ``env``."""
    if window[0] != "message" or env.route == "publish" or msys.PROBE in (env.src, env.dst):
        return False
    _, direction, route, tool_call = window
    return (direction == ("response" if env.src == _AGENT else "request") and route in ("", env.route)
            and tool_call in ("", env.tool_call))


def _holds(s: msys.System, window: tuple) -> bool:
    """Whether ``window`` (module docstring) holds in the system state ``s``: it reads
    nothing else (model/explore.py Rule 10)."""
    kind = window[0]
    if kind == "after":
        return s.now_ms >= window[1]
    if kind == "message":
        return any(_names(window, env) for env in s.in_flight)
    tool_call = window[1]
    if kind == "process":
        return s.agent is not None and any(p.running and p.key is not None and p.key.tool_call_id == tool_call
                                           for p in s.agent.processes.values())
    if kind == "result":
        return any(m.role == "tool" and m.provider_id == tool_call for c in s.db.chats.values() for m in c.messages)
    if kind == "message_committed":
        return any(m.role == "assistant" and any(tc.provider_id == tool_call for tc in m.tool_calls)
                   for c in s.db.chats.values() for m in c.messages)
    raise ValueError(f"unknown fault window {window!r}")


def _action(cls, **fields_):
    """A frozen action without its dataclass ``__init__``, which is interpreted code with
    one ``object.__setattr__`` per field: ``enabled`` makes one per delivery, timer, tick
    and fault of every state. The fields in their declaration order, as ``__init__``
    writes them. (Listed actions are not kept by the memos, so the instance dict this
    makes costs no memory that lasts; ``explore_replay.new_delta`` says why a kept delta
    is made otherwise.)"""
    action = object.__new__(cls)
    action.__dict__.update(fields_)
    return action


def _message_action(cls, at_ms: int, seq: int, what: str):
    """``_action`` of a ``Deliver`` or a ``Drop`` with its fields as arguments (no keyword
    dictionary per action: ``enabled`` makes one per message at the head of its link)."""
    action = object.__new__(cls)
    fields_ = action.__dict__
    fields_["at_ms"] = at_ms
    fields_["seq"] = seq
    fields_["what"] = what
    return action


def _unnumbered(action) -> tuple:
    """An action without its message's sequence number (``Deliver``, ``Drop``)."""
    return (type(action),) + tuple(sorted((k, v) for k, v in action.__dict__.items() if k != "seq"))


def _connection(env: msys.Envelope) -> tuple:
    """Which connection a message travels on: chatd dials the agent once per task attempt
    (the request IDs start with ``<worker>/t<n>/a<m>``), and answers ride back on it."""
    memo = getattr(env, "_link", None)
    if memo is None:
        req_id = getattr(env.payload, "req_id", "") or ""
        attempt = "/".join(req_id.split("/")[:3])
        memo = env.__dict__["_link"] = (env.src, env.dst) + tuple(sorted((env.src, env.dst))) + (attempt,)
    return memo


_SEQ = attrgetter("seq")
_DELIVER = msys.Deliver
_FAULT = msys.Fault
_AGENT = msys.AGENT
