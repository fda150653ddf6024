"""Reading the ``[[faults]]`` of a scenario file: fault kinds, their fields, triggers.

Theory of operation
-------------------
sim/world/scenario.py reads a scenario section by section; a fault is the one section whose
shape depends on a word in it (its ``kind``), so its reader lives here: ``read_fault``
looks the kind up in the vocabulary (model/vocabulary.py's ``FAULTS``), checks the keys
that kind takes, reads its trigger (``at`` a time, or ``when`` an event, plus an
``offset``) and each field by the field's declared type (``_fault_field``), then checks
what only the whole fault can say (an immediate takeover needs two replicas, a request's
route must be its tool call's). ``read_match`` reads a message or an event trigger.

Each reader takes the file's checker ``c`` (``fail``/``table``/``keys``/``typed``) and the
cross-reference context ``ctx`` (the tool calls, chats, replicas and nodes read so far)
from sim/world/scenario.py, and returns the plain values of sim/world/scenario_spec.py. The error
messages are sim/world/scenario.py's Rule 4: one line naming the field and what is known.
"""

from __future__ import annotations

from typing import Any

from toolcall_sim.model import vocabulary

from toolcall_sim.world.scenario_check import _Checker, _Context
from toolcall_sim.world.scenario_spec import ROUTE_OF_TOOL, FaultSpec, MessageMatch, Trigger, format_duration

ROUTES = vocabulary.ROUTES


def read_fault(c: _Checker, f: dict, where: str, ctx: _Context, until_ms: int) -> FaultSpec:
    kind = f.get("kind")
    if kind is None:
        c.fail(f"{where}.kind", "missing")
    spec = vocabulary.FAULTS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        c.fail(f"{where}.kind", f"unknown fault kind {kind!r} (known: {', '.join(sorted(vocabulary.FAULTS))})")
    message_fault = spec.shape == "message"
    c.keys(f, {"kind", *spec.fields} | (set() if message_fault else {"at", "when", "offset"}), where)
    for r in spec.required:
        if r not in f:
            c.fail(f"{where}.{r}", f"missing (a {kind} fault needs it)")
    if not message_fault and ("at" in f) == ("when" in f):
        c.fail(where, "give exactly one of 'at' (a time) or 'when' (an event)")
    trigger_match = None
    event = None
    at_ms = None
    offset_ms = 0
    if not message_fault:
        offset_ms = c.typed(f.get("offset", "0s"), "duration", f"{where}.offset")
        if "at" in f:
            at_ms = c.typed(f["at"], "duration", f"{where}.at")
            if at_ms + offset_ms >= until_ms:
                c.fail(f"{where}.at", f"{format_duration(at_ms + offset_ms)} is not before until "
                                      f"({format_duration(until_ms)}): the fault would never fire")
        else:
            when = c.table(f["when"], f"{where}.when")
            c.keys(when, {"event", "route", "tool_call", "nth"}, f"{where}.when")
            event = when.get("event")
            if event not in vocabulary.TRIGGER_EVENTS:
                c.fail(f"{where}.when.event", f"unknown event {event!r} (known: {', '.join(vocabulary.TRIGGER_EVENTS)})")
            trigger_match = read_match(c, when, f"{where}.when", ctx, vocabulary.TRIGGER_EVENTS[event].direction, event)
            if offset_ms >= until_ms:  # (an event comes at 0s at the earliest)
                c.fail(f"{where}.offset", f"{format_duration(offset_ms)} is not before until ({format_duration(until_ms)}): "
                                          "the fault would never fire")
    params = []
    for key in spec.fields:
        if key not in f:
            continue
        value = _fault_field(c, key, f[key], f"{where}.{key}", ctx, kind)
        params.append((key, value))
    values = dict(params)
    if kind == "ownership_change" and "to" in values and not values.get("immediate"):
        c.fail(f"{where}.to", "needs immediate = true (a stale-heartbeat takeover goes to whichever replica polls "
                              "first; `to` takes the chat at once)")
    if (kind == "takeover" or values.get("immediate")) and len(ctx.replicas) < 2:
        c.fail(where, f"an immediate {kind} needs at least two replicas")
    if kind == "request":
        route = values["route"]
        if "tool_call" in values:
            tool_route = ROUTE_OF_TOOL[ctx.tool_of[values["tool_call"]]]
            if route == "list":
                c.fail(f"{where}.tool_call", "a list names no tool call: it lists the agent's processes "
                                             "(with as_chat, that chat's only)")
            if route in ("output", "signal") and tool_route != "start":
                c.fail(f"{where}.route", f"{values['tool_call']} is a {ctx.tool_of[values['tool_call']]} call: "
                                         f"only an execute call has a process to read or signal")
            elif route not in ("cancel", "output", "signal") and route != tool_route:
                c.fail(f"{where}.route", f"{values['tool_call']} is a {ctx.tool_of[values['tool_call']]} call: "
                                         f"its request goes to {tool_route} (or cancel)")
            copies = ctx.copies.get(values["tool_call"], ())
            if route in ("start", "edit", "write") and len({_request_args(s) for s in copies}) > 1:
                c.fail(f"{where}.tool_call", f"{values['tool_call']} shares its provider ID with "
                                             f"{', '.join(s.id for s in copies if s.id != values['tool_call'])} "
                                             "in its assistant message, with other arguments: chatd's request "
                                             "for it is ambiguous")
            params.append(("owner_chat", ctx.chat_of[values["tool_call"]]))
            params = [(k, ctx.provider_of[v] if k == "tool_call" else v) for k, v in params]
        elif route not in ("start", "output", "signal", "list"):
            c.fail(f"{where}.tool_call", f"missing (a {route} request names its tool call)")
    if kind == "handler_panic":
        m = values["message"]
        if m.direction != "request" or m.route not in ("start", "edit", "write"):
            c.fail(f"{where}.message", "a handler panic names a start, edit or write request")
    return FaultSpec(kind, Trigger(at_ms, event, trigger_match, offset_ms), tuple(params))


def _request_args(spec) -> tuple:
    """What chatd's own request for a tool call is built from (its tool and arguments),
    to tell whether copies sharing a provider ID send the same request."""
    return (spec.tool, spec.command, spec.background, spec.timeout_ms, spec.path, spec.content, spec.edits)


def _fault_field(c: _Checker, key: str, value: Any, where: str, ctx: _Context, kind: str) -> Any:
    what = vocabulary.FAULT_FIELD_TYPES[key]
    if what == "duration":
        ms = c.typed(value, "duration", where)
        if ms == 0 and key != "downtime":  # downtime 0s: back at once; by/duration 0s would do nothing
            c.fail(where, "must be longer than 0s" + (" (omit it: the fault lasts until healed)" if key == "duration" else ""))
        return ms
    if what == "bool":
        return c.typed(value, bool, where)
    if what == "str":  # a request's name (printed, keyed by) or body (sent as it is)
        return c.name(value, where) if key == "name" else c.text(value, where)
    if what == "replica":
        return _one_of(c, c.typed(value, str, where), where, "replica", ctx.replicas)
    if what == "chat":
        return _one_of(c, c.typed(value, str, where), where, "chat", ctx.chats)
    if what == "nodes":
        pair = c.typed(value, list, where)
        if len(pair) != 2:
            c.fail(where, "name exactly two nodes")
        for node in pair:
            _one_of(c, node, where, "node", ctx.nodes)
        return tuple(pair)
    if what == "message":
        return read_match(c, c.table(value, where), where, ctx, None, None)
    if what == "workspace_state":
        state = c.typed(value, str, where)
        if state == "none":
            c.fail(where, "a chat keeps its workspace while a world runs: start without one with "
                          "[world] workspace = \"none\"")
        if state not in vocabulary.WORKSPACE_FAULT_STATES:
            c.fail(where, f"unknown state {state!r} (known: {', '.join(vocabulary.WORKSPACE_FAULT_STATES)})")
        return state
    if what == "request_route":
        route = c.typed(value, str, where)
        if route not in vocabulary.REQUEST_ROUTES:
            c.fail(where, f"unknown route {route!r} (known: {', '.join(vocabulary.REQUEST_ROUTES)})")
        return route
    if what == "tool_call":
        name = c.typed(value, str, where)
        if name not in ctx.ids:
            c.fail(where, f"names a tool call that does not exist: {name!r}")
        return name
    if what == "headers":
        table = c.capped(c.table(value, where), vocabulary.MAX_ITEMS, where, "headers")
        # A header's name and value go on one line of the request: no control character
        # (a newline would be a second header); an empty value removes the header.
        return tuple((c.name(k, f"{where} key"), c.name(v, f"{where}.{k}", empty_ok=True)) for k, v in table.items())
    raise AssertionError(what)


def read_match(c: _Checker, table: dict, where: str, ctx: _Context, event_direction: str | None,
           event: str | None) -> MessageMatch:
    """A message (``event`` None: route, tool_call, direction, nth) or an event trigger
    (the event fixes the direction; events that are not messages take no route other than
    the tool call's own)."""
    allowed = {"route", "tool_call", "nth"} | ({"direction"} if event is None else {"event"})
    c.keys(table, allowed, where)
    tool_call = table.get("tool_call")
    if tool_call is not None:
        tool_call = c.typed(tool_call, str, f"{where}.tool_call")
        if tool_call not in ctx.ids:
            c.fail(f"{where}.tool_call", f"names a tool call that does not exist: {tool_call!r}")
    if tool_call is not None:
        provider = ctx.provider(c, tool_call, f"{where}.tool_call")
    if event_direction == "none":
        route = None
        if "route" in table:
            own = ROUTE_OF_TOOL.get(ctx.tool_of.get(tool_call, "execute"))
            if table["route"] != own:
                c.fail(f"{where}.route", f"a {event} event is on the tool call's own route ({own}), not {table['route']!r}")
        if event == "process_started" and tool_call is not None and ctx.tool_of[tool_call] != "execute":
            c.fail(f"{where}.tool_call", f"{tool_call} is not an execute call: it starts no process")
        direction = "none"
    else:
        route = table.get("route", "start")
        if route not in ROUTES:
            c.fail(f"{where}.route", f"unknown route {route!r} (known: {', '.join(ROUTES)})")
        direction = event_direction or table.get("direction", "request")
        if direction not in ("request", "response"):
            c.fail(f"{where}.direction", f"must be 'request' or 'response', got {direction!r}")
    nth = c.typed(table.get("nth", 1), int, f"{where}.nth")
    if nth < 1:
        c.fail(f"{where}.nth", f"must be at least 1, got {nth}")
    return MessageMatch(route, provider if tool_call is not None else None, direction, nth)


def _one_of(c, name, where: str, noun: str, known) -> str:
    """``name`` if the scenario has a ``noun`` of that name; else the loader's one line."""
    if name not in known:
        c.fail(where, f"no such {noun} {name!r} ({noun}s: {', '.join(known)})")
    return name
