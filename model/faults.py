"""The world's faults: one handler per model fault kind (``FAULT_HANDLERS``).

Theory of operation
-------------------
A ``Fault`` action is something the world does to the system: an agent restart, a
workspace that stops, is deleted or starts again, a replica crash, an ownership change or
takeover, an interrupt, a user message or a message edit, a partition and its healing, a
database outage, a handler panic, or a crafted request from the probe node.
``toolcall_sim.model.system.apply`` records the fault and calls its handler here; each handler edits the
system through the same ``_Builder`` as every other step (model/system.py), so faults obey
that module's rules: a fault with a duration arms a ``world`` timer that ends it (Rule 3),
the kinds are exactly the vocabulary's, checked at import (Rule 6), and the probe's
crafted requests are answered to the probe (Rule 7). A fault that can do nothing records
``fault_skipped`` with its reason.

This module edits the system through model/builder.py's builder and node helpers;
model/system.py imports it (and it imports nothing of model/system.py).
"""

from __future__ import annotations


from . import agent, builder, chatd, chattool, vocabulary
from .actions import Fault
from .core import FMap, Request, Send, replace
from .identity import CHAT_ID_HEADER, set_tool_call_headers, tool_call_uuid
from .builder import AGENT, DB, PROBE, WORLD



def _agent_restart(b: builder._Builder, f: Fault):
    builder._agent_down(b, f.kind)
    downtime = f.get("downtime", 0)
    if downtime:
        b.set_timer(WORLD, "agent_boot", downtime)
    else:
        builder._boot_agent(b)


def _agent_shutdown(b: builder._Builder, f: Fault):
    builder._agent_down(b, f.kind)


def _workspace(b: builder._Builder, f: Fault):
    """The workspace stops, is deleted or starts again (model/system.py Rule 4;
    ``builder.set_workspace``); a move it cannot make (start a deleted workspace, stop a
    stopped one) is skipped with the reason."""
    state = f.get("state")
    why = builder.set_workspace(b, state, f"workspace_{state}")
    if why is not None:
        b.record(WORLD, "fault_skipped", fault=f.kind, why=why)


def _replica_crash(b: builder._Builder, f: Fault):
    name = f.get("replica")
    builder._crash_replica(b, name)
    downtime = f.get("downtime", 0)
    if downtime:
        b.set_timer(WORLD, f"replica_boot:{name}", downtime)
    else:
        builder._boot_replica(b, name)


def _ownership_change(b: builder._Builder, f: Fault):
    if f.get("immediate"):
        _takeover(b, f)
        return
    chat_id = f.get("chat") or builder._first_chat(b.s)
    owner = builder.chat_owner(b.s, chat_id)
    if owner is None:
        b.record(WORLD, "fault_skipped", fault=f.kind, why="chat has no owner")
        return
    # The owner's heartbeats stop; another replica's acquisition poll takes the chat
    # over once the heartbeat is stale; the old runner then notices and stops. The
    # pause outlasts the stale window and two polls, on the owner's own timing (90 s on
    # the reference clock), so a world with other timing keys still changes owner.
    rep = b.s.replicas[owner]
    timing = rep.rules.timing
    pause_ms = f.get("pause", timing.heartbeat_stale_ms + 2 * timing.acquisition_interval_ms)
    b.set(replicas=b.s.replicas.set(owner, chatd.replica_pause_heartbeats(rep, True)))
    b.set_timer(WORLD, f"resume_heartbeats:{owner}", pause_ms)


def _takeover(b: builder._Builder, f: Fault):
    """What a stale heartbeat leads to, at once: the owner's heartbeat row is made stale
    and replica ``to`` (default: the next replica after the owner) runs its acquisition
    poll now (the explorer's ownership change; ``ownership_change`` with ``immediate``)."""
    chat_id = f.get("chat") or builder._first_chat(b.s)
    owner = builder.chat_owner(b.s, chat_id)
    to = f.get("to")
    if to is None:
        names = b.s.config.replicas
        to = names[(names.index(owner) + 1) % len(names)] if owner in names else names[0]
    if to == owner or b.s.replicas.get(to) is None:
        why = "the new owner already owns the chat" if to == owner else f"{to} is down"
        b.record(WORLD, "fault_skipped", fault=f.kind, why=why)
        return
    if owner is not None:
        rep = b.s.replicas[owner]
        b.set(replicas=b.s.replicas.set(owner, chatd.replica_pause_heartbeats(rep, True)))
    hb = FMap((k, (-(10**15) if k[0] == chat_id else v)) for k, v in b.s.db.heartbeats.items())
    b.set(db=replace(b.s.db, heartbeats=hb))
    b.replica_step(to, chatd.replica_on_timer, "acquire")


def _interrupt(b: builder._Builder, f: Fault):
    b.db_step(chatd.db_interrupt, f.get("chat") or builder._first_chat(b.s))


def _user_message(b: builder._Builder, f: Fault):
    b.db_step(chatd.db_send_user_message, f.get("chat") or builder._first_chat(b.s), "more")


def _message_edit(b: builder._Builder, f: Fault):
    """The user edits the chat's current user message (chatd_db rule 9): the branch after
    it is discarded, nothing is canceled on the agent (design Q4)."""
    b.db_step(chatd.db_edit_message, f.get("chat") or builder._first_chat(b.s))


def _partition(b: builder._Builder, f: Fault):
    x, y = f.get("between")
    b.set(partitions=b.s.partitions + ((x, y),))
    if f.get("duration"):
        b.set_timer(WORLD, f"heal:{x}|{y}", f.get("duration"))


def _heal(b: builder._Builder, f: Fault):
    between = f.get("between")
    if between:
        x, y = between
        b.set(partitions=tuple(p for p in b.s.partitions if p not in ((x, y), (y, x))))
    else:
        b.set(partitions=())


def _db_outage(b: builder._Builder, f: Fault):
    b.set(db=chatd.db_set_up(b.s.db, False))
    b.record(DB, "db_down")
    if f.get("duration"):
        b.set_timer(WORLD, "db_up", f.get("duration"))


def _handler_panic(b: builder._Builder, f: Fault):
    run_id = f.get("run")
    b.cancel_timer((AGENT, f"handler:{run_id}"))
    if b.s.agent is not None:
        b.agent_step(
            agent.on_handler_done, run_id, b.clock(AGENT), True, bool(f.get("after_spawn", False)),
            cause=builder._run_request(b.s, f"handler:{run_id}"),
        )


# The paths of the routes a crafted request takes without a tool call's own path (the
# list names no process; start, edit and write default to chatd's request for the call).
_ROUTE_PATHS = {"start": agent.START_PATH, "edit": agent.EDIT_PATH, "write": agent.WRITE_PATH, "list": agent.LIST_PATH}


def _probe_request(b: builder._Builder, f: Fault):
    """A crafted request from the probe node (US9, A5): built from the committed tool
    call it names, with the chat ID of ``as_chat`` (none when absent), the tool call
    headers of the target, then ``headers`` applied on top (an empty value removes a
    header). An output or signal request is the model's process tool on the process
    whose ID is the call's UUID (``_process_request``); a list names no call and is the
    agent's process list (``GET /api/v0/processes/list``: with ``as_chat`` that chat's
    processes, without it every process, docs/contract.md A4.9). A start, edit or write carries by
    default chatd's own request for that call
    (path, query and body bytes, ``_chatd_request``), so a "same request" differs only in
    what the scenario changes (issue 34: the body was the model's arguments, and a copy
    of chatd's start always met 409 ``input_mismatch``); ``body`` replaces it. Its answer
    comes back to the probe and is recorded as ``probe_answer``."""
    target = _committed_call(b.s, f.get("owner_chat"), f.get("tool_call")) if f.get("tool_call") else None
    if f.get("tool_call") and target is None:
        b.record(WORLD, "fault_skipped", fault=f.kind, why="the tool call's message is not committed yet")
        return
    route = f.get("route")
    headers: tuple = ()
    if f.get("as_chat"):
        headers = ((CHAT_ID_HEADER, f.get("as_chat")),)
    path, query, body = _ROUTE_PATHS.get(route, ""), "", b""
    if target is not None:
        msg_id, call = target
        headers = set_tool_call_headers(headers, msg_id, call.provider_id, 0)
        uuid = tool_call_uuid(f.get('owner_chat'), msg_id, call.provider_id)
        if route == "cancel":
            path = f"/api/v0/tool-calls/{uuid}/cancel"
            body = b'{"stop_if_run_age_below_ms":600000}'
        elif route in ("output", "signal"):
            path, body = _process_request(route, uuid)
        else:
            sent = _chatd_request(b, f.get("owner_chat"), msg_id, call, route)
            if sent is not None:
                path, query, body = sent.path, sent.query, sent.body
    elif route == "cancel":
        path = "/api/v0/tool-calls/00000000-0000-0000-0000-000000000000/cancel"
        body = b'{"stop_if_run_age_below_ms":0}'
    elif route in ("output", "signal"):
        path, body = _process_request(route, "00000000-0000-0000-0000-000000000000")  # no such process
    for name, value in f.get("headers", ()):
        headers = tuple((k, v) for k, v in headers if k.lower() != name.lower())
        if value != "":
            headers += ((name, value),)
    if f.get("body") is not None:
        body = f.get("body").encode()
    method = "GET" if route in ("output", "list") else "POST"
    req = Request(f"{PROBE}/{f.get('name')}", PROBE, method, path, query, headers, body)
    b.send(PROBE, AGENT, req)


def _process_request(route: str, process_id: str) -> tuple[str, bytes]:
    """The model's process tools on a process ID (US6, US9): ``process_output`` reads the
    output route without waiting, ``process_signal`` sends ``kill`` (the request's
    ``body`` replaces it, e.g. ``{"signal":"terminate"}``)."""
    if route == "output":
        return f"/api/v0/processes/{process_id}/output", b""
    return f"/api/v0/processes/{process_id}/signal", b'{"signal":"kill"}'


def _chatd_request(b: builder._Builder, chat_id: str, msg_id: int, call, route: str):
    """The request chatd sends for ``call`` on ``route``: what the chat owner's tool layer
    (the first replica's when the chat has no owner) builds when it begins the call, taken
    from that step's ``Send``; None when the call sends nothing on that route (another
    tool, or arguments chatd refuses before sending)."""
    owner = builder.chat_owner(b.s, chat_id) or b.s.config.replicas[0]
    rules = b.s.config.replica_rules.get(owner) or b.s.config.chatd_rules
    ident = chattool.Identity(chat_id, msg_id, call.provider_id)
    _, effects = chattool.begin_call(call, ident, PROBE, f"{PROBE}/chatd", chat_id, b.clock(owner), rules.send_identity,
                                     timing=rules.timing, layer=rules.tool_layer)
    for eff in effects:
        if isinstance(eff, Send) and builder.route_of(eff.request) == route:
            return eff.request
    return None


def _committed_call(s: builder.System, chat_id: str, provider_id: str):
    """(message ID, ToolCall) of the committed assistant message carrying ``provider_id``."""
    chat = s.db.chats.get(chat_id) if s.db is not None else None
    for msg in (chat.messages if chat is not None else ()):
        for call in msg.tool_calls if msg.role == "assistant" else ():
            if call.provider_id == provider_id:
                return msg.id, call
    return None


FAULT_HANDLERS = {
    "agent_restart": _agent_restart,
    "agent_shutdown": _agent_shutdown,
    "workspace": _workspace,
    "replica_crash": _replica_crash,
    "ownership_change": _ownership_change,
    "takeover": _takeover,
    "interrupt": _interrupt,
    "user_message": _user_message,
    "message_edit": _message_edit,
    "partition": _partition,
    "heal": _heal,
    "db_outage": _db_outage,
    "handler_panic": _handler_panic,
    "request": _probe_request,
}
# One vocabulary (model/vocabulary.py): a kind without a handler, or a handler for a kind
# no file can name, is a bug in this module, found at import (model/system.py Rule 6).
assert set(FAULT_HANDLERS) == set(vocabulary.model_fault_kinds()), sorted(set(FAULT_HANDLERS) ^ set(vocabulary.model_fault_kinds()))
FAULT_KINDS = tuple(FAULT_HANDLERS)


