"""Scenario files: TOML that reads like a story, validated before anything runs.

A scenario names a world (replicas, constants), a network, clocks, scripted assistant
turns with their tool calls, a fault schedule, and expectations per variant. Loading
either returns a ``Scenario`` or raises ``ScenarioError`` whose message is one line:
``<file>: <field>: <reason>``. The command line prints that line and exits 2.

Rule 1. Unknown keys are errors (a typo must not silently change a run).
Rule 2. Durations are strings with units ("250ms", "2s", "15m", "9h", "1h30m") and are
        never negative; they become integer milliseconds.
Rule 3. Expectations may only name tool calls the scenario defines.
Rule 4. Every word comes from model/vocabulary.py, and a value the run would not use is
        an error too: a fault for a chat, replica or node the world does not have, a timed
        fault after ``until``, a clock for a node that does not exist, an unknown result
        kind, property or residual risk in an expectation, a zero execute timeout.
Rule 5. Only a clock offset may be negative (``offset = "-2h"``): a node's clock may run
        behind true time, nothing else runs backwards.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model import vocabulary
from model.gocompat.duration import DurationError, parse_duration_ms


# The vocabulary is declared once, in model/vocabulary.py (its Rule 1: a word is accepted
# only if a run uses it); these names are views of it for this module's readers.
TOOLS = vocabulary.TOOLS
FAULT_KINDS = {name: (f.required, f.optional) for name, f in vocabulary.FAULTS.items()}
MESSAGE_FAULTS = vocabulary.MESSAGE_FAULTS
EVENT_KINDS = tuple(vocabulary.TRIGGER_EVENTS)
ROUTES = vocabulary.ROUTES
WORLD_KEYS = {k.name: {"integer": int, "string": str, "table": dict, "boolean": bool}.get(k.type, k.type)
              for k in vocabulary.WORLD_KEYS.values()}
EXPECT_COUNTS = vocabulary.EXPECT_COUNTS
ROUTE_OF_TOOL = {"execute": "start", "edit_files": "edit", "write_file": "write"}


class ScenarioError(Exception):
    """One line: file, field and reason."""


def parse_duration(text: Any, where: str) -> int:
    """Rule 2: "1h30m" -> 5_400_000, read with the same Go duration grammar chatd uses for
    an execute timeout. Raises ScenarioError naming ``where``."""
    if isinstance(text, bool) or not isinstance(text, str):
        raise ScenarioError(f"{where}: expected a duration string such as \"2s\", got {text!r}")
    s = text.strip()
    if s.startswith("-"):
        raise ScenarioError(f"{where}: duration must not be negative, got {text!r}")
    try:
        return parse_duration_ms(s)
    except DurationError:
        raise ScenarioError(
            f"{where}: not a duration {text!r} (use e.g. \"250ms\", \"2s\", \"15m\", \"9h\")"
        ) from None


def format_duration(ms: int) -> str:
    """Inverse of parse_duration for display: 5_400_000 -> "1h30m"."""
    if ms == 0:
        return "0s"
    out = ""
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)):
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out


@dataclass(frozen=True)
class ToolCallSpec:
    id: str  # the scenario's name for the call (unique in the file)
    tool: str
    command: str = ""
    runs_for_ms: int = 0
    timeout_ms: int | None = None
    background: bool = False
    exit_code: int = 0
    output: str = ""
    path: str = ""
    content: str = ""
    edits: tuple[tuple[str, str], ...] = ()
    provider_id: str = ""  # the ID the model gave it; empty: the same as ``id``

    @property
    def provider(self) -> str:
        return self.provider_id or self.id


@dataclass(frozen=True)
class Turn:
    chat: str
    tool_calls: tuple[ToolCallSpec, ...]


@dataclass(frozen=True)
class MessageMatch:
    """Names one request or response: its route, the tool call, which one (nth)."""

    route: str | None  # None: any route (the events that are not messages)
    tool_call: str | None = None
    direction: str = "request"  # request | response | none (process_started, result_committed, message_committed)
    nth: int = 1


@dataclass(frozen=True)
class Trigger:
    at_ms: int | None = None
    event: str | None = None
    match: MessageMatch | None = None
    offset_ms: int = 0


@dataclass(frozen=True)
class Fault:
    kind: str
    trigger: Trigger
    params: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)


@dataclass(frozen=True)
class Expectation:
    tool_calls: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    violations: tuple[str, ...] | None = None  # properties violated as new findings
    residual_risks: tuple[str, ...] | None = None  # documented residual risks reported
    sometimes: tuple[str, ...] = ()  # sometimes-properties the run must reach
    interrupt_finished_within_ms: int | None = None  # every interrupt finishes within this
    requests: tuple[tuple[str, int], ...] = ()  # crafted request name -> expected answer status


@dataclass(frozen=True)
class Scenario:
    path: str
    name: str
    summary: str
    variant: str
    seed: int
    until_ms: int
    world: tuple[tuple[str, Any], ...]
    latency_min_ms: int
    latency_max_ms: int
    loss: float
    links: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    clocks: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    turns: tuple[Turn, ...]
    faults: tuple[Fault, ...]
    expect: tuple[tuple[str, Expectation], ...] = field(default=())

    def world_value(self, name: str, default: Any = None) -> Any:
        return dict(self.world).get(name, default)

    def expectation(self, variant: str) -> Expectation | None:
        return dict(self.expect).get(variant)

    def tool_call_ids(self) -> list[str]:
        return [tc.id for turn in self.turns for tc in turn.tool_calls]

    def replicas(self) -> tuple[str, ...]:
        return tuple(f"replica-{i + 1}" for i in range(self.world_value("replicas", 2)))


# ---------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------


class _Checker:
    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, reason: str):
        raise ScenarioError(f"{self.path}: {where}: {reason}")

    def table(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected a table, got {type(value).__name__}")
        return value

    def keys(self, table: dict, allowed, where: str):
        for key in table:
            if key not in allowed:
                self.fail(f"{where}.{key}" if where else key, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def typed(self, value: Any, kind, where: str):
        if kind == "duration":
            try:
                return parse_duration(value, where)
            except ScenarioError as err:
                self.fail(where, str(err).split(": ", 1)[1])
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            self.fail(where, f"expected an integer, got {value!r}")
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            self.fail(where, f"expected a number, got {value!r}")
        if kind is str and not isinstance(value, str):
            self.fail(where, f"expected a string, got {value!r}")
        if kind is bool and not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {value!r}")
        if kind is list and not isinstance(value, list):
            self.fail(where, f"expected a list, got {value!r}")
        if kind is dict and not isinstance(value, dict):
            self.fail(where, f"expected a table, got {value!r}")
        return value


def load(path: str | Path) -> Scenario:
    path = Path(path)
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ScenarioError(f"{shown}: cannot read: {err.strerror or err}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{shown}: syntax: {err}") from None
    return from_dict(data, shown)


TOP_KEYS = {"name", "summary", "variant", "seed", "until", "world", "network", "clocks", "turns", "faults", "expect"}



def parse_signed_duration(text: Any, where: str) -> int:
    """A duration that may be negative (Rule 5): "-2h" -> -7_200_000."""
    if isinstance(text, str) and text.strip().startswith("-"):
        return -parse_duration(text.strip()[1:], where)
    return parse_duration(text, where)


def check_until(until_ms: int, where: str) -> int:
    """A run lasts more than nothing and at most ``vocabulary.MAX_UNTIL_MS`` (a longer ask
    would run for minutes of real time with no word)."""
    if until_ms <= 0:
        raise ScenarioError(f"{where}: must be longer than 0s")
    if until_ms > vocabulary.MAX_UNTIL_MS:
        raise ScenarioError(f"{where}: {format_duration(until_ms)} is longer than the cap of "
                            f"{format_duration(vocabulary.MAX_UNTIL_MS)} of simulated time")
    return until_ms


def from_dict(data: dict, shown: str = "<scenario>") -> Scenario:
    c = _Checker(shown)
    if not isinstance(data, dict):
        c.fail("scenario", f"expected a table, got {type(data).__name__}")
    c.keys(data, TOP_KEYS, "")
    for required in ("name", "turns"):
        if required not in data:
            c.fail(required, "missing")
    name = c.typed(data["name"], str, "name")
    summary = c.typed(data.get("summary", ""), str, "summary")
    variant = c.typed(data.get("variant", "contract"), str, "variant")
    seed = c.typed(data.get("seed", 1), int, "seed")
    until_ms = c.typed(data.get("until", "1h"), "duration", "until")
    try:
        check_until(until_ms, "until")
    except ScenarioError as err:
        c.fail("until", str(err).split(": ", 1)[1])

    world = c.table(data.get("world", {}), "world")
    c.keys(world, WORLD_KEYS, "world")
    world_values = []
    for key, kind in WORLD_KEYS.items():
        if key in world:
            value = c.typed(world[key], kind, f"world.{key}")
            if key == "replicas" and value < 1:
                c.fail("world.replicas", f"must be at least 1, got {value}")
            if key in ("files", "replica_variants"):
                value = tuple(sorted((str(k), c.typed(v, str, f"world.{key}.{k}")) for k, v in value.items()))
            if key in vocabulary.TIMING_KEYS and value <= 0:
                c.fail(f"world.{key}", "must be longer than 0s")
            world_values.append((key, value))
    replicas = tuple(f"replica-{i + 1}" for i in range(dict(world_values).get("replicas", 2)))
    nodes = ("agent", "db") + replicas

    network = c.table(data.get("network", {}), "network")
    c.keys(network, {"latency", "loss", "links"}, "network")
    lat = c.table(network.get("latency", {"min": "2ms", "max": "40ms"}), "network.latency")
    c.keys(lat, {"min", "max"}, "network.latency")
    lat_min = c.typed(lat.get("min", "2ms"), "duration", "network.latency.min")
    lat_max = c.typed(lat.get("max", "40ms"), "duration", "network.latency.max")
    if lat_max < lat_min:
        c.fail("network.latency", f"max {lat.get('max')} is below min {lat.get('min')}")
    loss = float(c.typed(network.get("loss", 0.0), float, "network.loss"))
    if not 0.0 <= loss <= 1.0:
        c.fail("network.loss", f"must be between 0 and 1, got {loss}")
    links = []
    for link, spec in sorted(c.table(network.get("links", {}), "network.links").items()):
        where = f"network.links.{link}"
        spec = c.table(spec, where)
        c.keys(spec, {"latency", "loss"}, where)
        src, sep, dst = link.partition("->")
        for end in (src, dst):
            if not sep or end not in nodes + ("probe",):
                c.fail(where, f"name a link as \"<node>-><node>\" between nodes of this world ({', '.join(nodes + ('probe',))})")
        values = []
        if "latency" in spec:
            ls = c.table(spec["latency"], f"{where}.latency")
            c.keys(ls, {"min", "max"}, f"{where}.latency")
            values.append(("latency_min_ms", c.typed(ls.get("min", "0ms"), "duration", f"{where}.latency.min")))
            values.append(("latency_max_ms", c.typed(ls.get("max", "0ms"), "duration", f"{where}.latency.max")))
            if values[-1][1] < values[-2][1]:
                c.fail(f"{where}.latency", "max is below min")
        if "loss" in spec:
            link_loss = float(c.typed(spec["loss"], float, f"{where}.loss"))
            if not 0.0 <= link_loss <= 1.0:
                c.fail(f"{where}.loss", f"must be between 0 and 1, got {link_loss}")
            values.append(("loss", link_loss))
        links.append((link, tuple(values)))

    clocks = []
    for node, spec in sorted(c.table(data.get("clocks", {}), "clocks").items()):
        where = f"clocks.{node}"
        if node not in nodes:
            c.fail(where, f"no such node (nodes: {', '.join(nodes)})")
        spec = c.table(spec, where)
        c.keys(spec, {"offset", "drift_ppm", "steps"}, where)
        try:
            offset_ms = parse_signed_duration(spec.get("offset", "0s"), f"{where}.offset")
        except ScenarioError as err:
            c.fail(f"{where}.offset", str(err).split(": ", 1)[1])
        drift_ppm = int(c.typed(spec.get("drift_ppm", 0), int, f"{where}.drift_ppm"))
        if not -1_000_000 < drift_ppm <= 1_000_000:
            c.fail(f"{where}.drift_ppm", f"must be above -1000000 (a clock that stands still) and at most 1000000, got {drift_ppm}")
        values = [("offset_ms", offset_ms), ("drift_ppm", drift_ppm)]
        steps = []
        for i, step in enumerate(c.typed(spec.get("steps", []), list, f"{where}.steps")):
            sw = f"{where}.steps[{i}]"
            step = c.table(step, sw)
            c.keys(step, {"at", "by", "back"}, sw)
            by = c.typed(step.get("by", "0s"), "duration", f"{sw}.by")
            if by == 0:
                c.fail(f"{sw}.by", "must be longer than 0s (a step of nothing)")
            back = c.typed(step.get("back", False), bool, f"{sw}.back")
            steps.append((c.typed(step.get("at", "0s"), "duration", f"{sw}.at"), -by if back else by))
        values.append(("steps", tuple(steps)))
        clocks.append((node, tuple(values)))

    turns = []
    seen_ids: set[str] = set()
    tool_of: dict[str, str] = {}
    chat_of: dict[str, str] = {}
    provider_ids: dict[tuple[str, str], str] = {}  # (chat, provider ID) -> tool call id
    for i, turn in enumerate(c.typed(data["turns"], list, "turns")):
        where = f"turns[{i}]"
        turn = c.table(turn, where)
        c.keys(turn, {"chat", "tool_calls"}, where)
        chat = c.typed(turn.get("chat", "chat-1"), str, f"{where}.chat")
        calls = []
        for j, tc in enumerate(c.typed(turn.get("tool_calls", []), list, f"{where}.tool_calls")):
            tw = f"{where}.tool_calls[{j}]"
            tc = c.table(tc, tw)
            c.keys(
                tc,
                {"id", "provider_id", "tool", "command", "runs_for", "timeout", "background", "exit_code", "output", "path",
                 "content", "edits"},
                tw,
            )
            if "id" not in tc:
                c.fail(f"{tw}.id", "missing")
            tc_id = c.typed(tc["id"], str, f"{tw}.id")
            if tc_id in seen_ids:
                c.fail(f"{tw}.id", f"duplicate tool call id {tc_id!r}")
            seen_ids.add(tc_id)
            tool = c.typed(tc.get("tool", "execute"), str, f"{tw}.tool")
            if tool not in TOOLS:
                c.fail(f"{tw}.tool", f"unknown tool {tool!r} (known: {', '.join(TOOLS)})")
            for key in tc:
                if key not in ("id", "tool", "provider_id") and key not in _TOOL_KEYS[tool]:
                    c.fail(f"{tw}.{key}", f"not used by a {tool} tool call (it uses: {', '.join(_TOOL_KEYS[tool])})")
            edits = []
            for k, e in enumerate(c.typed(tc.get("edits", []), list, f"{tw}.edits")):
                e = c.table(e, f"{tw}.edits[{k}]")
                c.keys(e, {"search", "replace"}, f"{tw}.edits[{k}]")
                edits.append((c.typed(e.get("search", ""), str, f"{tw}.edits[{k}].search"),
                              c.typed(e.get("replace", ""), str, f"{tw}.edits[{k}].replace")))
            spec = ToolCallSpec(
                id=tc_id,
                tool=tool,
                command=c.typed(tc.get("command", ""), str, f"{tw}.command"),
                runs_for_ms=c.typed(tc.get("runs_for", "0s"), "duration", f"{tw}.runs_for"),
                timeout_ms=c.typed(tc["timeout"], "duration", f"{tw}.timeout") if "timeout" in tc else None,
                background=c.typed(tc.get("background", False), bool, f"{tw}.background"),
                exit_code=c.typed(tc.get("exit_code", 0), int, f"{tw}.exit_code"),
                output=c.typed(tc.get("output", ""), str, f"{tw}.output"),
                path=c.typed(tc.get("path", ""), str, f"{tw}.path"),
                content=c.typed(tc.get("content", ""), str, f"{tw}.content"),
                edits=tuple(edits),
                provider_id=c.typed(tc.get("provider_id", ""), str, f"{tw}.provider_id"),
            )
            if "provider_id" in tc and not spec.provider_id:
                c.fail(f"{tw}.provider_id", "must not be empty")
            if (chat, spec.provider) in provider_ids:
                c.fail(f"{tw}.provider_id", f"{spec.provider!r} is already a provider ID in {chat}")
            provider_ids[(chat, spec.provider)] = tc_id
            if spec.timeout_ms == 0:
                c.fail(f"{tw}.timeout", "must be longer than 0s (omit it for chatd's 10s default)")
            if tool == "execute" and not spec.command:
                c.fail(f"{tw}.command", "an execute tool call needs a command")
            if tool != "execute" and not spec.path:
                c.fail(f"{tw}.path", f"a {tool} tool call needs a path")
            calls.append(spec)
            tool_of[tc_id] = tool
            chat_of[tc_id] = chat
        turns.append(Turn(chat, tuple(calls)))
    chats = tuple(dict.fromkeys(t.chat for t in turns))
    provider_of = {tc_id: provider for (_, provider), tc_id in provider_ids.items()}
    shared = {p for p in provider_of.values() if sum(1 for q in provider_of.values() if q == p) > 1}
    ctx = _Context(seen_ids, tool_of, chat_of, chats, replicas, nodes, provider_of, shared)

    faults = []
    request_names: list[str] = []
    for i, f in enumerate(c.typed(data.get("faults", []), list, "faults")):
        fault = _fault(c, c.table(f, f"faults[{i}]"), f"faults[{i}]", ctx, until_ms)
        if fault.kind == "request":
            if fault.get("name") in request_names:
                c.fail(f"faults[{i}].name", f"two requests are named {fault.get('name')!r}")
            request_names.append(fault.get("name"))
        faults.append(fault)

    expect = []
    for var, spec in sorted(c.table(data.get("expect", {}), "expect").items()):
        expect.append((var, _expectation(c, var, spec, ctx, request_names)))

    return Scenario(
        path=shown,
        name=name,
        summary=summary,
        variant=variant,
        seed=seed,
        until_ms=until_ms,
        world=tuple(world_values),
        latency_min_ms=lat_min,
        latency_max_ms=lat_max,
        loss=loss,
        links=tuple(links),
        clocks=tuple(clocks),
        turns=tuple(turns),
        faults=tuple(faults),
        expect=tuple(expect),
    )


_TOOL_KEYS = {
    "execute": ("command", "runs_for", "timeout", "background", "exit_code", "output"),
    "edit_files": ("path", "edits"),
    "write_file": ("path", "content"),
}


@dataclass(frozen=True)
class _Context:
    ids: set
    tool_of: dict
    chat_of: dict
    chats: tuple
    replicas: tuple
    nodes: tuple
    provider_of: dict  # tool call id -> provider ID (what the world's records name)
    shared: set  # provider IDs used in more than one chat

    def provider(self, c: "_Checker", tool_call: str, where: str) -> str:
        """What the world names a tool call by (its provider ID), refused when another
        chat's call has the same one (a trigger could not tell them apart)."""
        provider = self.provider_of[tool_call]
        if provider in self.shared:
            c.fail(where, f"{tool_call}'s provider ID {provider!r} is shared by calls of several chats: "
                          "a message or event cannot tell them apart")
        return provider


def _fault(c: _Checker, f: dict, where: str, ctx: _Context, until_ms: int) -> Fault:
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
            trigger_match = _match(c, when, f"{where}.when", ctx, vocabulary.TRIGGER_EVENTS[event].direction, event)
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
            if route != "cancel" and route != tool_route:
                c.fail(f"{where}.route", f"{values['tool_call']} is a {ctx.tool_of[values['tool_call']]} call: "
                                         f"its request goes to {tool_route} (or cancel)")
            params.append(("owner_chat", ctx.chat_of[values["tool_call"]]))
            params = [(k, ctx.provider_of[v] if k == "tool_call" else v) for k, v in params]
        elif route != "start":
            c.fail(f"{where}.tool_call", f"missing (a {route} request names its tool call)")
    if kind == "handler_panic":
        m = values["message"]
        if m.direction != "request" or m.route not in ("start", "edit", "write"):
            c.fail(f"{where}.message", "a handler panic names a start, edit or write request")
    return Fault(kind, Trigger(at_ms, event, trigger_match, offset_ms), tuple(params))


def _fault_field(c: _Checker, key: str, value: Any, where: str, ctx: _Context, kind: str) -> Any:
    what = vocabulary.FAULT_FIELD_TYPES[key]
    if what == "duration":
        ms = c.typed(value, "duration", where)
        if ms == 0 and key != "downtime":  # downtime 0s: back at once; by/duration 0s would do nothing
            c.fail(where, "must be longer than 0s" + (" (omit it: the fault lasts until healed)" if key == "duration" else ""))
        return ms
    if what == "bool":
        return c.typed(value, bool, where)
    if what == "str":
        text = c.typed(value, str, where)
        if key == "name" and not text:
            c.fail(where, "must not be empty")
        return text
    if what == "replica":
        name = c.typed(value, str, where)
        if name not in ctx.replicas:
            c.fail(where, f"no such replica {name!r} (replicas: {', '.join(ctx.replicas)})")
        return name
    if what == "chat":
        name = c.typed(value, str, where)
        if name not in ctx.chats:
            c.fail(where, f"no such chat {name!r} (chats: {', '.join(ctx.chats)})")
        return name
    if what == "nodes":
        pair = c.typed(value, list, where)
        if len(pair) != 2:
            c.fail(where, "name exactly two nodes")
        for node in pair:
            if node not in ctx.nodes:
                c.fail(where, f"no such node {node!r} (nodes: {', '.join(ctx.nodes)})")
        return tuple(pair)
    if what == "message":
        return _match(c, c.table(value, where), where, ctx, None, None)
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
        table = c.table(value, where)
        return tuple((str(k), c.typed(v, str, f"{where}.{k}")) for k, v in table.items())
    raise AssertionError(what)


def _match(c: _Checker, table: dict, where: str, ctx: _Context, event_direction: str | None,
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


def _expectation(c: _Checker, var: str, spec: Any, ctx: _Context, request_names: list[str]) -> Expectation:
    from model import planted_bugs
    from model import properties as props

    where = f"expect.{var}"
    try:
        planted_bugs.resolve(var)
    except planted_bugs.UnknownVariant as err:
        c.fail(where, str(err))
    spec = c.table(spec, where)
    kinds = {p.name: p.kind for p in props.PROPERTIES}

    def names(key: str, known, what: str) -> tuple[str, ...]:
        out = tuple(c.typed(v, str, f"{where}.{key}") for v in c.typed(spec[key], list, f"{where}.{key}"))
        for n in out:
            if n not in known:
                c.fail(f"{where}.{key}", f"unknown {what} {n!r} (known: {', '.join(sorted(known))})")
        return out

    calls = []
    violations = residual = None
    sometimes: tuple[str, ...] = ()
    within = None
    requests: tuple = ()
    for key, value in spec.items():
        if key == "violations":
            violations = names(key, [n for n, k in kinds.items() if k != "sometimes"], "property")
        elif key == "residual_risks":
            residual = names(key, props.RESIDUAL_RISKS, "residual risk")
        elif key == "sometimes":
            sometimes = names(key, [n for n, k in kinds.items() if k == "sometimes"], "sometimes-property")
        elif key == "interrupt_finished_within":
            within = c.typed(value, "duration", f"{where}.{key}")
        elif key == "requests":
            table = c.table(value, f"{where}.requests")
            for rname, status in table.items():
                if rname not in request_names:
                    c.fail(f"{where}.requests.{rname}", f"no request fault has that name (requests: {', '.join(request_names) or 'none'})")
                c.typed(status, int, f"{where}.requests.{rname}")
            requests = tuple(sorted(table.items()))
        elif key not in ctx.ids:
            c.fail(f"{where}.{key}", f"names a tool call that does not exist (tool calls: {', '.join(sorted(ctx.ids)) or 'none'})")
        else:
            calls.append((key, _call_expectation(c, f"{where}.{key}", value, ctx)))
    return Expectation(tuple(calls), violations, residual, sometimes, within, requests)


def _call_expectation(c: _Checker, where: str, value: Any, ctx: _Context) -> tuple:
    value = c.table(value, where)
    c.keys(value, set(vocabulary.EXPECT_CALL_KEYS), where)
    items: list = []
    for k in EXPECT_COUNTS:
        if k in value:
            items.append((k, c.typed(value[k], int, f"{where}.{k}")))
    if "results" in value:
        kinds = tuple(c.typed(v, str, f"{where}.results") for v in c.typed(value["results"], list, f"{where}.results"))
        for kind in kinds:
            if kind not in vocabulary.RESULT_KINDS:
                c.fail(f"{where}.results", f"unknown result kind {kind!r} (known: {', '.join(vocabulary.RESULT_KINDS)})")
        items.append(("results", kinds))
    if "result" in value:
        table = c.table(value["result"], f"{where}.result")
        c.keys(table, set(vocabulary.EXPECT_RESULT_FIELDS), f"{where}.result")
        fields = []
        for k, v in table.items():
            fw = f"{where}.result.{k}"
            what = vocabulary.EXPECT_RESULT_FIELDS[k]
            if what == "duration":
                v = c.typed(v, "duration", fw)
            elif what == "integer":
                v = c.typed(v, int, fw)
            else:
                v = c.typed(v, str, fw)
                if what == "result kind" and v not in vocabulary.RESULT_KINDS:
                    c.fail(fw, f"unknown result kind {v!r} (known: {', '.join(vocabulary.RESULT_KINDS)})")
                if what == "replica" and v not in ctx.replicas:
                    c.fail(fw, f"no such replica {v!r} (replicas: {', '.join(ctx.replicas)})")
            fields.append((k, v))
        items.append(("result", tuple(sorted(fields))))
    return tuple(items)
