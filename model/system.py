"""The whole world as one pure state machine: ``apply(system, action) -> Step``.

Theory of operation
-------------------
``System`` holds every node's state (the agent, each chatd replica, the database), the
messages in flight, the armed timers, the partitions and the true simulated time. An
``Action`` is one thing the world lets happen: a message is delivered or lost, a timer
fires, or a fault strikes. ``apply`` runs the node's pure handler for it, turns the
handler's effects into new in-flight messages and timers, and returns the new system with
the trace records of the step. Three drivers choose the actions: the simulated world (which
decides *when* and, through one seeded generator, *whether*), the exhaustive explorer, and
hypothesis. Whatever chose them, the list of actions replays the same run with no scheduler and
no randomness.

Rule 1. Time moves only through actions: every action carries ``at_ms`` (true time) and
        ``apply`` never moves time backwards. Each node reads its own clock
        (``ClockSpec.read``), and only durations cross nodes (A6).
Rule 2. Actions are labelled, not positional: a delivery names the message's sequence
        number *and* what it is (``start toolu_01 replica-1 -> agent``), so a replay that
        stops matching says at which step and why (``ReplayMismatch``).
Rule 3. Faults are actions too. Faults with a duration (agent downtime, replica downtime,
        a partition, a database outage) arm a timer on the node ``world`` that ends them,
        so every driver ends them the same way.
Rule 4. The world, not the agent, answers a dial, by the workspace's state
        (``System.workspace``; model/builder.py ``WORKSPACE_DIAL_STATUS``). A running
        workspace's dial gets 200 once the agent is up and nothing while it is down (the
        dialer's own timer ends the wait); a chat without a workspace, a deleted
        workspace and a stopped one (no running agent) get at once the dial error chatd
        reads from its database before it dials. Only a running workspace has an agent:
        stopping or deleting it takes the agent down (a deleted one loses its disk too),
        starting it again boots a new agent. A booting agent reports its incarnation to
        the database (``Db.agent_incarnation``, as the real agent reports its start to
        coderd), which only the incarnation-token design reads. A request that reaches a
        down agent is refused (a transport error); a message across a partition is lost.
Rule 5. Ground truth (``truth(...)`` effects) becomes ``truth`` records, kept apart from what
        chatd believes and commits, which is what the checkers compare.
Rule 6. Fault kinds are the vocabulary's (model/vocabulary.py): one handler per kind in
        ``FAULT_HANDLERS`` (model/faults.py), checked against it at import; an unknown kind does not fit
        (``ReplayMismatch``). A fault that can do nothing (a takeover by the replica that
        owns the chat already, a crafted request for a call not yet committed) records
        ``fault_skipped`` with the reason, which fails a scenario's expectations.
Rule 7. The ``probe`` node stands for a client that is not chatd: a ``request`` fault
        sends its crafted HTTP request to the agent (US9, A5) and the answer comes back
        to the probe as a ``probe_answer`` record; the probe's exchanges are no trigger
        events and no message faults apply to them.

The actions themselves (``Deliver``, ``Drop``, ``Fire``, ``Fault``, ``Tick``) and their
JSON form live in model/actions.py and are re-exported here; the fault handlers (Rules 3,
6 and 7: ``FAULT_HANDLERS``) live in model/faults.py and edit the system through this
module's ``_Builder``. What stays here is one piece, the world's interpreter: the effect
builder and the delivery and timer rules. The builder owns a private copy of the system
for its step and keeps the step's timer edits aside until the step ends, then puts them
into one new timer table (``_Builder.finish``: a fired timer's cancel and its handler's
re-arm are one edit). One delivery skips the builder: a publish its
replica ignores (``chatd.publish_changes_nothing``: down, no runner for the chat, an
update the runner has seen, a paused worker's ownership event) is the step the builder would make, the message out of flight
and one ``deliver`` record (``_quiet_publish``, tests/test_system_publish.py); most of
the publishes a swarm seed delivers are such.

Model abstractions: a caller that stops waiting does not tell the agent (the agent's
waiter answers into the void, which the caller ignores); a cancel waiting on a pending run
therefore still calls the stopper, which a retried cancel would do anyway.
"""

from __future__ import annotations

from . import chatd, faults, idle
# The actions live in their own module; they are re-exported here because every driver
# says ``msys.Deliver``, ``msys.Fault``, ``msys.action_from_json``.
from .actions import (  # noqa: F401
    ACTION_TYPES,
    Action,
    Deliver,
    Drop,
    Fault,
    Fire,
    Idle,
    ReplayMismatch,
    Tick,
    action_from_json,
    action_to_json,
)
# The world's state, the effect builder and the node helpers live in model/builder.py
# (shared with model/faults.py and model/idle.py); every driver says ``msys.System``,
# ``msys.initial``, ``msys.AGENT``, so they are re-exported here.
from .builder import (  # noqa: F401
    AGENT,
    DB,
    PERFECT_CLOCK,
    PROBE,
    RUNNING,
    WORKSPACE_DIAL_STATUS,
    WORLD,
    ChatSpec,
    ClockSpec,
    Envelope,
    Step,
    System,
    Timer,
    WorldConfig,
    _agent_api,
    _agent_down,
    _boot_agent,
    _boot_replica,
    _Builder,
    _crash_replica,
    _find,
    _find_index,
    _first_chat,
    _new_object,
    _partitioned,
    _run_request,
    _set_attribute,
    chat_owner,
    initial,
    route_of,
    set_workspace,
    tool_call_of,
)
from .core import Publish, Response, TransportError


def apply(system: System, action: Action, log: list | None = None, asked: tuple | None = None) -> Step:
    """Apply one action. Raises ReplayMismatch when it does not fit. ``log``, when given,
    receives the step's keyed edits of the timers and open requests (``_Builder.log``).
    ``asked``, when given, is a replica handler's answer computed already for the same
    inputs (``_Builder.asked``; model/idle.py ``ASKED``): the step is the same with or
    without it, only the handler is not called twice."""
    if action.at_ms < system.now_ms:
        raise ReplayMismatch(f"{action.label()}: at {action.at_ms} ms is before now ({system.now_ms} ms)")
    kind = type(action)  # the actions are exactly these classes (model/actions.py)
    if kind is Idle:
        return idle.apply_idle(system, action)  # a batch of idle periodic firings (model/idle.py)
    if kind is Deliver or kind is Drop:
        in_flight = system.in_flight
        seq = action.seq
        for at, env in enumerate(in_flight):  # (``_find_index``, inline: every delivery)
            if env.seq == seq:
                break
        else:
            raise ReplayMismatch(f"{action.label()}: no message #{action.seq} is in flight")
        if env.what != action.what:
            raise ReplayMismatch(f"{action.label()}: message #{action.seq} is now '{env.what}'")
        rest = in_flight[:at] + in_flight[at + 1:]  # (sequence numbers are unique)
        payload = env.payload
        if kind is Deliver and type(payload) is Publish and not system.partitions \
                and chatd.publish_changes_nothing(system.replicas._index.get(env.dst), system.db,
                                              payload.channel, payload.chat_id):
            return _quiet_publish(system, action, env, rest)
        b = _Builder(system, action, log, asked)
        fields_ = b.fields  # (``set``, without the keyword call)
        fields_["now_ms"] = action.at_ms
        fields_["in_flight"] = rest
        if kind is Drop:
            b.record(env.dst, "lost", seq=env.seq, what=env.what, route=env.route, tool_call=env.tool_call)
            _forget_answered(b, env)
        else:
            _deliver(b, env)
    else:
        b = _Builder(system, action, log, asked)
        fields_ = b.fields  # (``set``, without the keyword call)
        fields_["now_ms"] = action.at_ms
        if kind is Fire:
            timer = fields_["timers"]._index.get((action.node, action.name))  # (FMap.get without the call)
            if timer is None:
                raise ReplayMismatch(f"{action.label()}: no such timer is armed")
            if timer.due_ms > action.at_ms:
                raise ReplayMismatch(f"{action.label()}: due at {timer.due_ms} ms, not {action.at_ms} ms")
            b.cancel_timer((action.node, action.name))
            _fire(b, action.node, action.name)
        elif kind is not Tick:
            _fault(b, action)
    if b.pending_publishes:  # (only with ``pubsub_immediate``)
        b.flush_publishes()
    if b.timer_edits is not None:  # (``finish``, inline: every step ends here)
        b.settle_timers()
    return Step(b.s, tuple(b.records), tuple(b.armed), tuple(b.probes) if b.probes else ())


def _quiet_publish(system: System, action: Deliver, env: Envelope, rest: tuple) -> Step:
    """The delivery of a publish its replica ignores (``chatd.publish_changes_nothing``:
    the handler would return the replica and database it was given and no effect), as
    the general step makes it, without a builder: the message leaves flight, time moves
    to the delivery, and the one record is the ``deliver`` record. A swarm seed delivers
    some 16 of these (a chat's update reaches every replica; one of them runs the chat),
    a sixth of its steps. tests/test_system_publish.py compares it with the general step."""
    at_ms = action.at_ms
    s = _new_object(System)
    fields_ = system.__dict__.copy()  # (one block copy: ``core.replace``)
    fields_["now_ms"] = at_ms
    fields_["in_flight"] = rest
    _set_attribute(s, "__dict__", fields_)
    config = system.config
    dst = env.dst
    clock_ms = config.clock(dst).read(at_ms) if config.clocks._index else at_ms
    return Step(s, ({"t_ms": at_ms, "node": dst, "clock_ms": clock_ms, "kind": "deliver", "seq": env.seq,
                     "what": env.what, "route": env.route, "tool_call": env.tool_call},), ())


def _forget_answered(b: _Builder, env: Envelope):
    payload = env.payload
    if isinstance(payload, (Response, TransportError)):
        fields_ = b.fields  # (``set``, without the keyword call)
        fields_["open_requests"] = fields_["open_requests"].remove(payload.req_id)
        if b.log is not None:
            b.log.append(("open_remove", payload.req_id))


def _deliver(b: _Builder, env: Envelope):
    fields_ = b.fields
    if fields_["partitions"] and _partitioned(b.s, env.src, env.dst):  # (most worlds are whole)
        b.record(env.dst, "lost", seq=env.seq, what=env.what, why="partition", route=env.route, tool_call=env.tool_call)
        _forget_answered(b, env)
        return
    payload = env.payload
    # (``add_record`` written out, as ``_quiet_publish`` does: a delivery is the most
    # frequent record; the same keys in the same order)
    now_ms = fields_["now_ms"]
    dst = env.dst
    b.records.append({"t_ms": now_ms, "node": dst,
                      "clock_ms": now_ms if b.perfect_clocks else b.s.config.clock(dst).read(now_ms),
                      "kind": "deliver", "seq": env.seq, "what": env.what, "route": env.route,
                      "tool_call": env.tool_call})
    if dst == AGENT:
        if env.route == "dial" and fields_["workspace"] != RUNNING:  # (most worlds' workspace runs)
            b.reply(AGENT, env.src, Response(payload.req_id, WORKSPACE_DIAL_STATUS[fields_["workspace"]]))
            return
        if fields_["agent"] is None:
            if env.route == "dial":
                b.set(dials_waiting=b.s.dials_waiting + (env,))
            else:
                b.reply(AGENT, env.src, TransportError(payload.req_id, "connection refused: the agent is down"))
            return
        if env.route == "dial":
            b.reply(AGENT, env.src, Response(payload.req_id, 200))
            return
        b.agent_step(_agent_api(b.s).on_request, payload, b.clock(AGENT), cause=payload)
        return
    if isinstance(payload, Publish):
        b.replica_step(env.dst, chatd.replica_on_publish, payload.channel, payload.chat_id)
        return
    _forget_answered(b, env)
    if env.dst == PROBE:
        status = payload.status if isinstance(payload, Response) else None
        text = payload.body.decode("utf-8", "replace") if isinstance(payload, Response) else payload.reason
        b.record(PROBE, "probe_answer", name=payload.req_id.partition("/")[2], status=status, body=text)
        return
    b.replica_step(env.dst, chatd.replica_on_answer, payload)


def _fire(b: _Builder, node: str, name: str):
    fields_ = b.fields
    now_ms = fields_["now_ms"]  # (``add_record`` written out: every timer's step)
    b.records.append({"t_ms": now_ms, "node": node,
                      "clock_ms": now_ms if b.perfect_clocks else b.s.config.clock(node).read(now_ms),
                      "kind": "timer", "name": name})
    if node == AGENT:
        if fields_["agent"] is not None:
            b.agent_step(_agent_api(b.s).on_timer, name, b.clock(AGENT), cause=_run_request(b.s, name))
        return
    if node == WORLD:
        kind, _, arg = name.partition(":")
        if kind == "agent_boot":
            if b.s.agent is None:
                _boot_agent(b)
        elif kind == "replica_boot":
            if b.s.replicas.get(arg) is None:
                _boot_replica(b, arg)
        elif kind == "heal":
            a, _, c = arg.partition("|")
            b.set(partitions=tuple(p for p in b.s.partitions if p not in ((a, c), (c, a))))
            b.record(WORLD, "healed", between=[a, c])
        elif kind == "db_up":
            b.set(db=chatd.db_set_up(b.s.db, True))
            b.record(DB, "db_up")
        elif kind == "user_message":
            b.db_step(chatd.db_send_user_message, arg, "go")
        elif kind == "resume_heartbeats":
            rep = b.s.replicas.get(arg)
            if rep is not None:
                b.set(replicas=b.s.replicas.set(arg, chatd.replica_pause_heartbeats(rep, False)))
        return
    b.replica_step(node, chatd.replica_on_timer, name)


def _fault(b: _Builder, f: Fault):
    b.record(WORLD, "fault", fault=f.kind, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in f.params})
    handler = faults.FAULT_HANDLERS.get(f.kind)
    if handler is None:
        raise ReplayMismatch(f"{f.label()}: unknown fault kind")
    handler(b, f)
