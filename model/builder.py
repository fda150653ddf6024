"""The world's state and the effect builder every step edits it through.

Theory of operation
-------------------
``System`` is every node's state (the agent, each chatd replica, the database), the
messages in flight, the armed timers, the partitions and the true time; ``Step`` is what
one action makes of it. ``_Builder`` owns a private copy of the system for one step: the
node handlers' effects become messages in flight, timers and trace records through it,
and its timer edits are kept aside until the step ends and put into one new timer table
(``settle_timers``). The node helpers below it (boot and crash a replica, take the agent
down and boot it, find a message, the owner of a chat) are what model/system.py's
interpreter, model/faults.py's fault handlers and model/idle.py's batched periodic
firings share: the three import this module, and it imports none of them, so the world's
interpreter and its fault handlers form no import circle (issue 33). The rules these
pieces keep are numbered in model/system.py's docstring.
"""

from __future__ import annotations

import json
from urllib.parse import unquote_plus
from dataclasses import dataclass, field
from typing import Any

from . import agent, chatd, chattool, vocabulary
from .actions import Action
from .core import (
    EMPTY,
    REMOVED,
    replace,
    CancelTimer,
    FMap,
    Probe,
    Publish,
    Reply,
    Request,
    Response,
    Send,
    SetTimer,
    TraceRecord,
    header_value,
)
from .identity import AGE_MS_HEADER, TOOL_CALL_ID_HEADER, path_unescape

_new_object = object.__new__
_set_attribute = object.__setattr__

AGENT = "agent"
WORLD = "world"
DB = "db"
PROBE = "probe"  # sends the crafted requests of ``request`` faults and receives their answers


# The configuration (replicas, chats, clocks, rules) lives in model/world_config.py and
# is re-exported: every driver says ``msys.WorldConfig``.
from .world_config import PERFECT_CLOCK, ChatSpec, ClockSpec, WorldConfig  # noqa: E402,F401


# ---------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Envelope:
    """A message in flight. ``what`` describes it for labels and fault triggers."""

    seq: int
    src: str
    dst: str
    payload: Any  # Request | Response | TransportError | Publish
    sent_at_ms: int
    what: str
    route: str
    tool_call: str | None

    def __init__(self, seq, src, dst, payload, sent_at_ms, what, route, tool_call):
        # The dataclass's own ``__init__`` with the fields written straight into the
        # instance dict: a frozen dataclass's generated one goes through
        # ``object.__setattr__`` per field, a third dearer, and every step builds
        # envelopes, timers and steps (``dataclass`` keeps an ``__init__`` the class
        # defines; tests/test_core_records.py checks it matches the fields).
        d = self.__dict__
        d["seq"], d["src"], d["dst"], d["payload"] = seq, src, dst, payload
        d["sent_at_ms"], d["what"], d["route"], d["tool_call"] = sent_at_ms, what, route, tool_call


@dataclass(frozen=True)
class Timer:
    node: str
    name: str
    due_ms: int  # true time
    seq: int  # which arming this is; a replaced timer's old wake-up is stale

    def __init__(self, node, name, due_ms, seq):  # (as ``Envelope.__init__``)
        d = self.__dict__
        d["node"], d["name"], d["due_ms"], d["seq"] = node, name, due_ms, seq


@dataclass(frozen=True)
class System:
    config: WorldConfig
    now_ms: int = 0
    agent: Any = None  # AgentState, or None while the agent is down
    agent_incarnation: int = 0
    agent_files: FMap = EMPTY  # the disk while the agent is down
    replicas: FMap = EMPTY  # name -> ReplicaState or None while crashed
    replica_boots: FMap = EMPTY  # name -> number of boots
    db: Any = None
    in_flight: tuple[Envelope, ...] = ()
    timers: FMap = EMPTY  # (node, name) -> Timer
    partitions: tuple[tuple[str, str], ...] = ()
    dials_waiting: tuple[Envelope, ...] = ()
    open_requests: FMap = EMPTY  # req_id -> (route, tool_call) for labelling answers
    seq: int = 0
    # The chat's workspace as chatd's database sees it (``WORKSPACE_DIAL_STATUS``): only
    # a running workspace has an agent. Set by ``[world] workspace`` and the ``workspace``
    # fault (``set_workspace``); the explorer never changes it (its actions are restarts,
    # interrupts and takeovers), so its state keys need not carry it.
    workspace: str = "running"


@dataclass(frozen=True)
class Step:
    system: System
    records: tuple[dict, ...] = field(default=())
    # The timers the step armed, in arming order, including any it replaced or canceled
    # again before it ended: the simulated world schedules those still armed (``Timer``
    # identity in ``system.timers``) without scanning every armed timer after every step.
    armed: tuple = ()
    # The probe IDs (model/probes.py) the step's handlers took, in order: rule coverage
    # counts them; no record, so no trace, hash or explored state depends on them.
    probes: tuple = ()

    def __init__(self, system, records=(), armed=(), probes=()):  # (as ``Envelope.__init__``)
        d = self.__dict__
        d["system"], d["records"], d["armed"], d["probes"] = system, records, armed, probes


# ---------------------------------------------------------------------------
# Describing messages
# ---------------------------------------------------------------------------

_ROUTE_BY_SUFFIX = (("/output", "output"), ("/signal", "signal"), ("/cancel", "cancel"))


def route_of(req: Request) -> str:
    if req.method == "DIAL":
        return "dial"
    if req.path == agent.START_PATH:
        return "start"
    if req.path == agent.EDIT_PATH:
        return "edit"
    if req.path == agent.WRITE_PATH:
        return "write"
    if req.path == agent.LIST_PATH:
        return "list"
    for suffix, route in _ROUTE_BY_SUFFIX:
        if req.path.endswith(suffix):
            return route
    return "other"


def tool_call_of(req: Request) -> str | None:
    raw = header_value(req.headers, TOOL_CALL_ID_HEADER)
    if raw is None:
        return None
    try:
        return path_unescape(raw)
    except ValueError:
        return raw


def _tool_call_by_input(config: "WorldConfig", req: Request, route: str) -> str | None:
    """Which scripted tool call a header-less request serves (today's chatd sends no tool
    call headers): the execute call of that chat with that command, or the file call with
    that path. Only for labels, triggers and attribution; the agent never sees it."""
    if route not in ("start", "edit", "write"):
        return None
    try:
        body = json.loads(req.body.decode("utf-8")) if route != "write" else {}
    except ValueError:
        return None
    if route == "start":
        key = str(body.get("command", "")) if isinstance(body, dict) else ""
    elif route == "edit":
        files = body.get("files") if isinstance(body, dict) else None
        key = str(files[0].get("path", "")) if isinstance(files, list) and files and isinstance(files[0], dict) else ""
    else:
        key = next((v for k, v in (p.split("=", 1) for p in req.query.split("&") if "=" in p) if k == "path"), "")
        key = unquote_plus(key)
    if not key:
        return None
    for chat in config.chats:
        for turn in chat.turns:
            for call in turn:
                if chattool.call_target(call) == key:
                    return call.provider_id
    return None


def _describe_answer(answer, route: str, tool_call: str | None) -> str:
    status = answer.status if isinstance(answer, Response) else "transport-error"
    return f"{route} {tool_call or '-'} answer {status}"


# ---------------------------------------------------------------------------
# Building and applying
# ---------------------------------------------------------------------------


class _Builder:
    """Accumulates one step: the evolving system and its trace records; ``finish``
    returns the step (its timer edits are kept aside until then: ``timer_edits``)."""

    # (A builder per step, its attributes read many times in it: slots are cheaper.)
    __slots__ = ("s", "fields", "perfect_clocks", "records", "armed", "action", "pending_publishes", "log", "asked",
                 "timer_edits", "probes")

    def __init__(self, system: System, action: Action | None, log: list | None = None, asked: tuple | None = None):
        # A private shallow copy that this step alone mutates (``set``): cheaper than a
        # dataclasses.replace of the whole System for every field change, and never seen
        # by anyone until the step returns it.
        # (What ``copy.copy`` does for a dataclass instance, without its generic dispatch.)
        s = self.s = _new_object(System)
        # ``fields``: the copy's instance dict itself (the one object ``s.__dict__`` is).
        # The step reads and writes the copy's fields through it: a subscript of the dict
        # is two thirds of an attribute read of an instance whose dict is materialized,
        # and ``s.__dict__`` is an attribute read of its own.
        fields = self.fields = system.__dict__.copy()  # (one block copy: ``core.replace``)
        _set_attribute(s, "__dict__", fields)
        # Most worlds give every node the perfect clock (no ``clocks`` entry): then every
        # reading is the true time and every delay is itself, which ``clock`` and
        # ``set_timer`` (several calls a step) answer without looking the clock up.
        self.perfect_clocks = not system.config.clocks._index  # (the map's dict: no ``__len__`` call)
        self.records: list[dict] = []
        self.armed: list = []  # every Timer ``set_timer`` made, in arming order (``Step.armed``)
        self.probes: list = []  # the ``Probe`` effects' rule IDs, in order (``Step.probes``)
        # The step's edits of the timer table not yet in ``s.timers``: (node, name) -> the
        # Timer armed, or ``REMOVED``; None while there are none. A step edits the table a
        # few times (a fired timer is canceled and its handler re-arms it; a dial's answer
        # arms a timer per call), and copying the table per edit was most of a timer's
        # cost: the edits are put into one new table when the step ends
        # (``settle_timers``), the table every edit made one at a time would give.
        self.timer_edits: dict | None = None
        self.action = action
        self.pending_publishes: list | None = None  # (a list once there is one: ``pubsub_immediate``)
        # The explorer's transition memo (model/explore.py) asks for a log of what the step
        # did to the shared tables (timers, open requests): keyed edits that a cached step
        # replays onto another state. None (every other driver): nothing is logged.
        self.log = log
        # A replica handler's answer already computed for this very input (``apply``'s
        # ``asked``): (handler, replica state, database, args, clock, database clock,
        # answer). Used only when the inputs are the same objects and readings: the
        # handlers are pure, so it is the answer the call would give.
        self.asked = asked

    def flush_publishes(self):
        """With ``pubsub_immediate``, every replica handles each publish, in replica order,
        within the step that committed it (a publish may cause more)."""
        while self.pending_publishes:
            eff = self.pending_publishes.pop(0)
            for name in self.publish_order():
                self.record(name, "deliver", route="publish", what=f"{eff.channel} {eff.chat_id} db -> {name}")
                self.replica_step(name, chatd.replica_on_publish, eff.channel, eff.chat_id)

    def publish_order(self) -> list[str]:
        """The replicas in the order they first acted (``ReplicaState.joined``), then the
        untouched ones in the world's order: the real replicas race for a publish, and an
        order by name would let a replica's name decide who wins (replica-2 before
        replica-3 when both are idle and the owner is not), which no real chatd does and
        which breaks the symmetry of interchangeable replicas (model/explore_symmetry.py).
        With one untouched replica left, or none, it is the order they joined in."""
        names = self.s.config.replicas
        replicas = self.fields["replicas"]._index
        joined = [(rep.joined if rep is not None and rep.joined else len(names) + i + 1, name)
                  for i, name in enumerate(names) for rep in (replicas.get(name),)]
        joined.sort()
        return [name for _, name in joined]

    def set(self, **changes):
        # The private copy's fields are plain instance-dict entries (the frozen
        # dataclass's __setattr__ guard is for everyone else).
        self.fields.update(changes)

    def clock(self, node: str) -> int:
        if self.perfect_clocks:
            return self.fields["now_ms"]
        return self.s.config.clock(node).read(self.fields["now_ms"])

    def record(self, node: str, kind: str, **fields_: Any):
        self.add_record(node, kind, fields_)

    def add_record(self, node: str, kind: str, fields_: dict):
        """``record`` with the fields already in a dict (no keyword unpacking): the one
        place a record's common fields are written, but for the writes out of the hottest
        paths (``absorb``'s notes, ``_deliver``, ``_fire``, ``_quiet_publish``)."""
        now_ms = self.fields["now_ms"]
        clock_ms = now_ms if self.perfect_clocks else self.s.config.clock(node).read(now_ms)
        # (the fields merged in the display: compiled, no ``update`` method looked up)
        self.records.append({"t_ms": now_ms, "node": node, "clock_ms": clock_ms, "kind": kind, **fields_})

    def next_seq(self) -> int:
        fields_ = self.fields
        seq = fields_["seq"] = fields_["seq"] + 1
        return seq

    # -- effects -------------------------------------------------------------
    def absorb(self, node: str, effects, cause: dict | None = None):
        for eff in effects:
            # The effects are exactly these classes (core.py Rule 2, no subclasses), so
            # the type is compared, most frequent first; ``isinstance`` would also do.
            kind = type(eff)
            if kind is SetTimer:
                self.set_timer(node, eff.name, eff.after_ms)
            elif kind is TraceRecord:
                # {"kind": "truth", "truth": <kind>, ...} or {"kind": "note", "note": <kind>, ...}
                channel = eff.channel
                # ``add_record(node, channel, {channel: kind, **fields, **cause})`` written
                # out (a note or truth is every third record): the same keys in the same order.
                now_ms = self.fields["now_ms"]
                rec = {"t_ms": now_ms, "node": node,
                       "clock_ms": now_ms if self.perfect_clocks else self.s.config.clock(node).read(now_ms),
                       "kind": channel, channel: eff.kind}
                for k, v in eff.fields:
                    if k in _RESERVED:
                        k = _RESERVED[k]  # (``_safe_fields``: a later renamed twin wins)
                    elif k == channel:
                        # The channel's name given twice: the keyword call raises the
                        # TypeError it always did.
                        self.record(node, channel, **{channel: eff.kind}, **_safe_fields(eff.fields), **(cause or {}))
                    rec[k] = v
                if cause:
                    # (``rec`` holds the channel and every field's record name: the names a
                    # cause key would clash with; ``agent_step``'s never clash with the rest)
                    if not cause.keys().isdisjoint(rec):
                        self.record(node, channel, **{channel: eff.kind}, **_safe_fields(eff.fields), **cause)
                    rec.update(cause)
                self.records.append(rec)
            elif kind is Send:
                self.send(node, eff.dst, eff.request)
            elif kind is Reply:
                self.reply(node, eff.dst, eff.answer)
            elif kind is CancelTimer:
                self.cancel_timer((node, eff.name))
            elif kind is Publish:
                if self.s.config.pubsub_immediate:
                    if self.pending_publishes is None:
                        self.pending_publishes = []
                    self.pending_publishes.append(eff)
                    continue
                for name in self.s.config.replicas:
                    self.put_in_flight(DB, name, eff, "publish", None, f"{eff.channel} {eff.chat_id} db -> {name}")
            elif kind is Probe:
                self.probes.append(eff.rule)  # (counted beside the step: no record)

    def put_in_flight(self, src, dst, payload, route, tool_call, what):
        fields_ = self.fields
        seq = fields_["seq"] = fields_["seq"] + 1  # (``next_seq``, inline: every message and timer)
        env = Envelope(seq, src, dst, payload, fields_["now_ms"], what, route, tool_call)
        fields_["in_flight"] = fields_["in_flight"] + (env,)  # (``set``, without the keyword call)
        return env

    def send(self, src: str, dst: str, req: Request):
        route = route_of(req)
        tool_call = tool_call_of(req) or _tool_call_by_input(self.s.config, req, route)
        what = f"{route} {tool_call or '-'} {src} -> {dst}"
        env = self.put_in_flight(src, dst, req, route, tool_call, what)
        fields_ = self.fields
        fields_["open_requests"] = fields_["open_requests"].set(req.req_id, (route, tool_call))
        if self.log is not None:
            self.log.append(("open_set", req.req_id, (route, tool_call)))
        fields_ = {"seq": env.seq, "req": req.req_id, "route": route, "tool_call": tool_call, "dst": dst}
        age = header_value(req.headers, AGE_MS_HEADER)
        if age is not None and age.isdigit():
            fields_["age_ms"] = int(age)
        self.add_record(src, "send", fields_)  # (``record``'s fields as a dict, in the same order)

    def reply(self, src: str, dst: str, answer):
        open_requests = self.fields["open_requests"]
        route, tool_call = open_requests.get(answer.req_id, ("other", None))
        if self.log is not None:
            self.log.append(("open_read", answer.req_id, open_requests.get(answer.req_id)))
        what = f"{_describe_answer(answer, route, tool_call)} {src} -> {dst}"
        env = self.put_in_flight(src, dst, answer, route, tool_call, what)
        status = answer.status if isinstance(answer, Response) else None
        self.add_record(src, "reply", {"seq": env.seq, "req": answer.req_id, "route": route, "tool_call": tool_call,
                                       "status": status})

    def set_timer(self, node: str, name: str, after_ms: int):
        fields_ = self.fields
        due = fields_["now_ms"] + (after_ms if after_ms > 0 else 0) if self.perfect_clocks \
            else fields_["now_ms"] + fields_["config"].clock(node).true_delay(max(after_ms, 0))
        seq = fields_["seq"] = fields_["seq"] + 1  # (``next_seq``, inline)
        timer = Timer(node, name, due, seq)
        edits = self.timer_edits
        if edits is None:
            self.timer_edits = {(node, name): timer}
        else:
            edits[node, name] = timer
        self.armed.append(timer)
        if self.log is not None:
            self.log.append(("timer_set", (node, name), timer))

    def cancel_timer(self, key: tuple[str, str]):
        edits = self.timer_edits
        if edits is None:
            self.timer_edits = {key: REMOVED}
        else:
            edits[key] = REMOVED
        if self.log is not None:
            self.log.append(("timer_cancel", key))

    def cancel_node_timers(self, node: str):
        """A node that goes down loses every timer it armed."""
        self.settle_timers()  # (the table as the step's edits so far left it)
        self.set(timers=FMap((k, t) for k, t in self.s.timers.items() if t.node != node))
        if self.log is not None:
            self.log.append(("timers_of_node_cancel", node))

    def finish(self) -> "Step":
        """The step this builder made: its timer edits put into the table
        (``settle_timers``), its records and armed timers. Every builder ends with it (a
        builder's ``s.timers`` lacks the step's timer edits until then)."""
        self.settle_timers()
        return Step(self.s, tuple(self.records), tuple(self.armed), tuple(self.probes))

    def settle_timers(self):
        """Put the step's pending timer edits into ``s.timers`` (one new table): before
        the table is read, and when the step ends. Nothing else in a step reads it."""
        edits = self.timer_edits
        if edits is not None:
            self.timer_edits = None
            fields_ = self.fields
            fields_["timers"] = fields_["timers"].edited(edits)

    # -- nodes ---------------------------------------------------------------
    def agent_step(self, fn, *args, cause: Request | None = None):
        """Run an agent handler. ``cause`` is the request being served: its ID, sender and
        chat go on the ground-truth records so checkers can tell who caused what."""
        fields_ = self.fields
        state, effects = fn(fields_["agent"], *args)
        fields_["agent"] = state
        info = None
        if cause is not None:
            # ``tool_call_of`` is None exactly when the header is absent (a bad escape
            # gives the raw value), so presence is asked without unescaping it.
            info = {"cause": cause.req_id, "cause_src": cause.src,
                    "cause_chat": header_value(cause.headers, "Coder-Chat-Id"),
                    "cause_headers": header_value(cause.headers, TOOL_CALL_ID_HEADER) is not None}
        self.absorb(AGENT, effects, info)

    def replica_step(self, name: str, fn, *args):
        fields_ = self.fields
        replicas = fields_["replicas"]
        rep = replicas._index.get(name)  # (FMap.get without the call: every replica step)
        if rep is None:
            return
        before = rep
        db = fields_["db"]
        if self.perfect_clocks:  # (``clock`` twice, inline: every replica step reads both)
            now_ms = db_now_ms = fields_["now_ms"]
        else:
            now_ms, db_now_ms = self.clock(name), self.clock(DB)
        asked = self.asked
        if asked is not None and asked[0] is fn and asked[1] is rep and asked[2] is db and asked[3] == args \
                and asked[4] == now_ms and asked[5] == db_now_ms:
            rep, db, effects = asked[6]
        else:
            rep, db, effects = fn(rep, db, *args, now_ms, db_now_ms)
        if rep is not before:  # most answers and timers leave the replica as it was: no copy
            if not before.joined:
                # its first change: it joins the story after those that acted before it
                rep = replace(rep, joined=1 + max([r.joined for r in replicas._index.values() if r is not None]))
            fields_["replicas"] = replicas.set(name, rep)
        fields_["db"] = db
        if effects:  # (a third of replica steps have none: a publish or answer for nothing)
            self.absorb(name, effects)

    def db_step(self, fn, *args):
        db, effects = fn(self.s.db, *args, self.clock(DB))
        self.set(db=db)
        self.absorb(DB, effects)


_RESERVED = {"kind": "result_kind", "t_ms": "at_t_ms", "node": "at_node", "clock_ms": "at_clock_ms"}


def _safe_fields(pairs) -> dict:
    """Effect fields as record fields; names the record itself uses are renamed (a
    result's ``kind`` becomes ``result_kind``)."""
    return {_RESERVED.get(k, k): v for k, v in pairs}


def initial(config: WorldConfig) -> Step:
    """The world at true time 0: agent and replicas booted, chats created, each chat's
    first user message scheduled (a ``world`` timer) at its start time. A workspace that
    is not running (``WorldConfig.workspace``) has no agent to boot, and its state opens
    the trace as a ``workspace`` record."""
    db = chatd.db_empty(config.chatd_rules.timing.heartbeat_stale_ms)  # the ownership hint's stale window
    b = _Builder(System(config=config, db=db, agent_files=config.files, workspace=config.workspace), None)
    b.record(WORLD, "world_start", replicas=list(config.replicas), chatd=config.chatd_rules.name,
             agent=config.agent_config.rules.name)
    if config.workspace != RUNNING:
        b.record(WORLD, "workspace", state=config.workspace, was=None)
    if config.message_ids_per_chat:
        b.set(db=replace(b.s.db, message_ids_per_chat=True))
    if config.agent_boot_at_ms == 0:
        _boot_agent(b)
    else:
        b.set_timer(WORLD, "agent_boot", config.agent_boot_at_ms)
    for name in config.replicas:
        _boot_replica(b, name)
    for chat in config.chats:
        b.db_step(chatd.db_new_chat, chat.chat_id, chat.turns, chat.gen_time_ms)
        b.set_timer(WORLD, f"user_message:{chat.chat_id}", chat.start_at_ms)
    b.flush_publishes()
    return b.finish()


def _agent_api(s: System):
    """The module (or stub) whose handlers run the agent: ``WorldConfig.agent_impl``."""
    return s.config.agent_impl or agent


def _boot_agent(b: _Builder):
    if b.s.workspace != RUNNING:
        return  # a workspace that is not running boots no agent (its boot timer finds none)
    inc = b.s.agent_incarnation + 1
    state = _agent_api(b.s).boot(b.s.config.agent_config, b.clock(AGENT), b.s.agent_files, inc)
    b.set(agent=state, agent_incarnation=inc, db=replace(b.s.db, agent_incarnation=inc))
    b.record(AGENT, "agent_up", incarnation=inc)
    waiting = b.s.dials_waiting
    b.set(dials_waiting=())
    for env in waiting:
        b.reply(AGENT, env.src, Response(env.payload.req_id, 200))


def _agent_down(b: _Builder, why: str):
    if b.s.agent is None:
        return
    dead, effects = _agent_api(b.s).shutdown(b.s.agent, b.clock(AGENT))
    b.set(agent=None, agent_files=dead.files)
    b.cancel_node_timers(AGENT)
    b.absorb(AGENT, effects)
    b.record(AGENT, "agent_down", why=why, incarnation=b.s.agent_incarnation)


# ---------------------------------------------------------------------------
# The workspace (model/system.py Rule 4)
# ---------------------------------------------------------------------------

RUNNING, NO_WORKSPACE, STOPPED, DELETED = "running", "none", "stopped", "deleted"
# How the world answers a dial when the workspace is not running: the dial errors chatd
# gets from its database before it dials (coder/coder coderd/x/chatd/chatd.go
# ``turnWorkspaceContext.getWorkspaceConn`` -> ``loadWorkspaceAgentLocked``: a chat whose
# workspace ID is unset has no workspace; a latest build without agents has no running
# agent), as the statuses model/chatd/batch.py ``DIAL_FAILURE_FOR_STATUS`` maps to
# chattool's dial error kinds.
WORKSPACE_DIAL_STATUS = {NO_WORKSPACE: 424, DELETED: 410, STOPPED: 404}
# The states a workspace can move to while a world runs, from which states: a running
# workspace stops or is deleted, a stopped one starts again (``start_workspace``: a new
# agent on the kept disk) or is deleted. A deleted workspace stays deleted, and a chat
# keeps its binding (one without a workspace gets one only from create_workspace, which
# the scripted model never calls).
WORKSPACE_MOVES = {STOPPED: (RUNNING,), DELETED: (RUNNING, STOPPED), RUNNING: (STOPPED,)}
# (one vocabulary: the states a scenario may name are these, checked at import)
assert {RUNNING, *WORKSPACE_DIAL_STATUS} == set(vocabulary.WORKSPACE_STATES)
assert set(WORKSPACE_MOVES) == set(vocabulary.WORKSPACE_FAULT_STATES)


def set_workspace(b: _Builder, state: str, why: str) -> str | None:
    """Move the workspace to ``state``; returns why it cannot (nothing changes), else None.

    A stopped workspace has no agent: its processes die and its records are lost, as in
    an agent shutdown, but its disk stays (a stop build keeps the volume). A deleted
    workspace loses the disk too. Starting a stopped workspace boots a new agent on the
    kept disk. Dials that waited for the agent get the new state's answer at once."""
    was = b.s.workspace
    if was == state:
        return f"the workspace is already {state}"
    if was not in WORKSPACE_MOVES.get(state, ()):
        return f"a {'chat without a workspace' if was == NO_WORKSPACE else was + ' workspace'} cannot become {state}"
    b.set(workspace=state)
    b.record(WORLD, "workspace", state=state, was=was)
    if state == RUNNING:
        _boot_agent(b)
        return None
    _agent_down(b, why)
    if state == DELETED:
        b.set(agent_files=EMPTY)
    waiting = b.s.dials_waiting
    b.set(dials_waiting=())
    for env in waiting:
        b.reply(AGENT, env.src, Response(env.payload.req_id, WORKSPACE_DIAL_STATUS[state]))
    return None


# A replica's boot is pure, and every world boots its replicas alike: the same names, at
# true time 0, first boots, under one rules object (sim/world/build.py shares the resolved rules
# of a variant). The answers, immutable states and effects, are kept per rules object
# (found by identity: the entry holds the object, so it stays the same one) and per
# (name, clock, boot count). Bounded: the oldest rules go, a full table is emptied.
_BOOTED: list = []  # [(rules, {(name, clock ms, boots): (state, effects)})], newest last


def _boot_answers(rules) -> dict:
    for known, answers in _BOOTED:
        if known is rules:
            return answers
    if len(_BOOTED) >= 8:
        del _BOOTED[0]
    answers: dict = {}
    _BOOTED.append((rules, answers))
    return answers


def _boot_replica(b: _Builder, name: str):
    boots = b.s.replica_boots.get(name, 0) + 1
    rules = b.s.config.replica_rules.get(name) or b.s.config.chatd_rules
    now_ms = b.clock(name)
    answers = _boot_answers(rules)  # (``chatd.replica_boot``, remembered)
    known = answers.get((name, now_ms, boots))
    if known is None:
        if len(answers) >= 64:
            answers.clear()
        rep, effects = chatd.replica_boot(name, now_ms, rules, boots)
        known = answers[name, now_ms, boots] = (rep, tuple(effects))
    rep, effects = known
    b.set(replicas=b.s.replicas.set(name, rep), replica_boots=b.s.replica_boots.set(name, boots))
    b.absorb(name, effects)


def _crash_replica(b: _Builder, name: str):
    rep = b.s.replicas.get(name)
    if rep is None:
        return
    effects = chatd.replica_crash(rep)
    b.set(replicas=b.s.replicas.set(name, None))
    b.cancel_node_timers(name)
    b.absorb(name, effects)


def _run_request(s: System, timer_name: str) -> Request | None:
    """The request whose pending handler run a ``handler:<run>`` timer executes."""
    if not timer_name.startswith("handler:") or s.agent is None:
        return None
    run = s.agent.runs.get(timer_name[len("handler:"):])
    return run.request if run is not None else None


def _partitioned(s: System, a: str, b: str) -> bool:
    return (a, b) in s.partitions or (b, a) in s.partitions


def _find(s: System, seq: int) -> Envelope | None:
    at = _find_index(s.in_flight, seq)
    return None if at is None else s.in_flight[at]


def _find_index(in_flight: tuple[Envelope, ...], seq: int) -> int | None:
    for at, env in enumerate(in_flight):
        if env.seq == seq:
            return at
    return None


def chat_owner(s: System, chat_id: str) -> str | None:
    chat = s.db.chats.get(chat_id) if s.db is not None else None
    if chat is None or not chat.worker_id:
        return None
    for name, rep in s.replicas.items():
        if rep is not None and rep.worker_id == chat.worker_id:
            return name
    return None


def _first_chat(s: System) -> str:
    return s.config.chats[0].chat_id
