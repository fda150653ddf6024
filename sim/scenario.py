"""Scenario files: TOML that reads like a story, validated before anything runs.

A scenario names a world (replicas, constants), a network, clocks, scripted assistant
turns with their tool calls, a fault schedule, and expectations per variant. Loading
either returns a ``Scenario`` or raises ``ScenarioError`` whose message is one line:
``<file>: <field>: <reason>``. The command line prints that line and exits 2.

Rule 1. Unknown keys are errors (a typo must not silently change a run).
Rule 2. Durations are strings with units ("250ms", "2s", "15m", "9h", "1h30m") and are
        never negative; they become integer milliseconds.
Rule 3. Expectations may only name tool calls the scenario defines.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.chattool import DurationError, parse_duration_ms


TOOLS = ("execute", "edit_files", "write_file")
FAULT_KINDS = {
    # kind: (required fields, optional fields)
    "agent_restart": ((), ("downtime",)),
    "agent_shutdown": ((), ()),
    "replica_crash": (("replica",), ("downtime",)),
    "ownership_change": ((), ("chat", "to")),
    "interrupt": ((), ("chat",)),
    "user_message": ((), ("chat",)),
    "partition": (("between",), ("duration",)),
    "heal": ((), ("between",)),
    "lose": (("message",), ()),
    "delay": (("message", "by"), ()),
    "db_outage": ((), ("duration",)),
    "handler_panic": (("message",), ("after_spawn",)),
}
MESSAGE_FAULTS = ("lose", "delay", "handler_panic")
EVENT_KINDS = ("request_sent", "request_delivered", "response_sent", "process_started", "result_committed")
ROUTES = ("start", "edit", "write", "cancel", "output", "dial")
WORLD_KEYS = {
    "replicas": int,
    "generation_time": "duration",
    "agent_boot_at": "duration",
    "age_margin": "duration",
    "attempt_timeout": "duration",
    "agent_answer_timeout": "duration",
    "dial_timeout": "duration",
    "heartbeat_interval": "duration",
    "heartbeat_stale": "duration",
    "acquisition_interval": "duration",
    "files": dict,
    "agent": str,
    "handler_time": "duration",
    "replica_variants": dict,
}


EXPECT_COUNTS = ("process_starts", "edits_applied", "processes_killed", "processes_running_at_end")


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
    id: str
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


@dataclass(frozen=True)
class Turn:
    chat: str
    tool_calls: tuple[ToolCallSpec, ...]


@dataclass(frozen=True)
class MessageMatch:
    """Names one request or response: its route, the tool call, which one (nth)."""

    route: str
    tool_call: str | None = None
    direction: str = "request"
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


def from_dict(data: dict, shown: str = "<scenario>") -> Scenario:
    c = _Checker(shown)
    c.keys(data, TOP_KEYS, "")
    for required in ("name", "turns"):
        if required not in data:
            c.fail(required, "missing")
    name = c.typed(data["name"], str, "name")
    summary = c.typed(data.get("summary", ""), str, "summary")
    variant = c.typed(data.get("variant", "contract"), str, "variant")
    seed = c.typed(data.get("seed", 1), int, "seed")
    until_ms = c.typed(data.get("until", "1h"), "duration", "until")

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
            world_values.append((key, value))

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
        values = []
        if "latency" in spec:
            ls = c.table(spec["latency"], f"{where}.latency")
            c.keys(ls, {"min", "max"}, f"{where}.latency")
            values.append(("latency_min_ms", c.typed(ls.get("min", "0ms"), "duration", f"{where}.latency.min")))
            values.append(("latency_max_ms", c.typed(ls.get("max", "0ms"), "duration", f"{where}.latency.max")))
        if "loss" in spec:
            values.append(("loss", float(c.typed(spec["loss"], float, f"{where}.loss"))))
        links.append((link, tuple(values)))

    clocks = []
    for node, spec in sorted(c.table(data.get("clocks", {}), "clocks").items()):
        where = f"clocks.{node}"
        spec = c.table(spec, where)
        c.keys(spec, {"offset", "drift_ppm", "steps"}, where)
        values = [
            ("offset_ms", c.typed(spec.get("offset", "0s"), "duration", f"{where}.offset")),
            ("drift_ppm", int(c.typed(spec.get("drift_ppm", 0), int, f"{where}.drift_ppm"))),
        ]
        steps = []
        for i, step in enumerate(c.typed(spec.get("steps", []), list, f"{where}.steps")):
            sw = f"{where}.steps[{i}]"
            step = c.table(step, sw)
            c.keys(step, {"at", "by", "back"}, sw)
            by = c.typed(step.get("by", "0s"), "duration", f"{sw}.by")
            steps.append((c.typed(step.get("at", "0s"), "duration", f"{sw}.at"), -by if step.get("back") else by))
        values.append(("steps", tuple(steps)))
        clocks.append((node, tuple(values)))

    turns = []
    seen_ids: set[str] = set()
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
                {"id", "tool", "command", "runs_for", "timeout", "background", "exit_code", "output", "path", "content", "edits"},
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
            edits = []
            for k, e in enumerate(c.typed(tc.get("edits", []), list, f"{tw}.edits")):
                e = c.table(e, f"{tw}.edits[{k}]")
                c.keys(e, {"search", "replace"}, f"{tw}.edits[{k}]")
                edits.append((str(e.get("search", "")), str(e.get("replace", ""))))
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
            )
            if tool == "execute" and not spec.command:
                c.fail(f"{tw}.command", "an execute tool call needs a command")
            if tool != "execute" and not spec.path:
                c.fail(f"{tw}.path", f"a {tool} tool call needs a path")
            calls.append(spec)
        turns.append(Turn(chat, tuple(calls)))

    faults = []
    for i, f in enumerate(c.typed(data.get("faults", []), list, "faults")):
        where = f"faults[{i}]"
        f = c.table(f, where)
        kind = f.get("kind")
        if kind is None:
            c.fail(f"{where}.kind", "missing")
        if kind not in FAULT_KINDS:
            c.fail(f"{where}.kind", f"unknown fault kind {kind!r} (known: {', '.join(sorted(FAULT_KINDS))})")
        required, optional = FAULT_KINDS[kind]
        c.keys(f, {"kind", "at", "when", "offset", *required, *optional}, where)
        for r in required:
            if r not in f:
                c.fail(f"{where}.{r}", f"missing (a {kind} fault needs it)")
        message_fault = kind in MESSAGE_FAULTS
        if message_fault and ("at" in f or "when" in f):
            c.fail(where, f"a {kind} fault names its message and takes no 'at' or 'when'")
        if not message_fault and ("at" in f) == ("when" in f):
            c.fail(where, "give exactly one of 'at' (a time) or 'when' (an event)")
        trigger_match = None
        event = None
        at_ms = None
        if message_fault:
            pass
        elif "at" in f:
            at_ms = c.typed(f["at"], "duration", f"{where}.at")
        else:
            when = c.table(f["when"], f"{where}.when")
            c.keys(when, {"event", "route", "tool_call", "nth"}, f"{where}.when")
            event = when.get("event")
            if event not in EVENT_KINDS:
                c.fail(f"{where}.when.event", f"unknown event {event!r} (known: {', '.join(EVENT_KINDS)})")
            trigger_match = _match(c, when, f"{where}.when", seen_ids, event)
        trigger = Trigger(at_ms, event, trigger_match, c.typed(f.get("offset", "0s"), "duration", f"{where}.offset"))
        params = []
        for key in (*required, *optional):
            if key not in f:
                continue
            value = f[key]
            if key in ("downtime", "duration", "by"):
                value = c.typed(value, "duration", f"{where}.{key}")
            elif key == "message":
                value = _match(c, c.table(value, f"{where}.message"), f"{where}.message", seen_ids, None)
            elif key == "between":
                value = tuple(c.typed(value, list, f"{where}.between"))
                if len(value) != 2:
                    c.fail(f"{where}.between", "name exactly two nodes")
            elif key == "replica":
                value = c.typed(value, str, f"{where}.replica")
            elif key == "after_spawn":
                value = c.typed(value, bool, f"{where}.after_spawn")
            else:
                value = c.typed(value, str, f"{where}.{key}")
            params.append((key, value))
        faults.append(Fault(kind, trigger, tuple(params)))

    expect = []
    for var, spec in sorted(c.table(data.get("expect", {}), "expect").items()):
        where = f"expect.{var}"
        spec = c.table(spec, where)
        calls = []
        violations = None
        residual = None
        for key, value in spec.items():
            if key == "violations":
                violations = tuple(c.typed(v, str, f"{where}.violations") for v in c.typed(value, list, f"{where}.violations"))
                continue
            if key == "residual_risks":
                residual = tuple(c.typed(v, str, f"{where}.residual_risks") for v in c.typed(value, list, f"{where}.residual_risks"))
                continue
            if key not in seen_ids:
                c.fail(f"{where}.{key}", f"names a tool call that does not exist (tool calls: {', '.join(sorted(seen_ids)) or 'none'})")
            value = c.table(value, f"{where}.{key}")
            c.keys(value, set(EXPECT_COUNTS) | {"results"}, f"{where}.{key}")
            items = []
            for k in EXPECT_COUNTS:
                if k in value:
                    items.append((k, c.typed(value[k], int, f"{where}.{key}.{k}")))
            if "results" in value:
                items.append(("results", tuple(c.typed(v, str, f"{where}.{key}.results") for v in c.typed(value["results"], list, f"{where}.{key}.results"))))
            calls.append((key, tuple(items)))
        expect.append((var, Expectation(tuple(calls), violations, residual)))

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


def _match(c: _Checker, table: dict, where: str, ids: set[str], event: str | None) -> MessageMatch:
    c.keys(table, {"route", "tool_call", "direction", "nth", "event"}, where)
    route = table.get("route", "start")
    if route not in ROUTES:
        c.fail(f"{where}.route", f"unknown route {route!r} (known: {', '.join(ROUTES)})")
    tool_call = table.get("tool_call")
    if tool_call is not None and tool_call not in ids:
        c.fail(f"{where}.tool_call", f"names a tool call that does not exist: {tool_call!r}")
    direction = table.get("direction", "request")
    if direction not in ("request", "response"):
        c.fail(f"{where}.direction", f"must be 'request' or 'response', got {direction!r}")
    nth = c.typed(table.get("nth", 1), int, f"{where}.nth")
    if nth < 1:
        c.fail(f"{where}.nth", f"must be at least 1, got {nth}")
    return MessageMatch(route, tool_call, direction, nth)
