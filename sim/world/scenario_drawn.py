"""A drawn scenario, read without checking it again (``from_drawn``).

Theory of operation
-------------------
The swarm draws its worlds itself (sim/world/stories.py ``draw_scenario``), so they are
valid by construction: ``from_drawn`` turns such a dict into the same ``Scenario`` as
sim/world/scenario.py ``from_dict`` would, key by key, without the checks a user's file
needs (a sixth of a swarm seed's cost). A dict with any key or fault kind the draw never
writes goes through ``from_dict`` instead, and tests/test_swarm.py compares the two
readings over drawn seeds. It lives apart from the file reader because it is the
swarm's shortcut, not part of reading a user's file.
"""

from __future__ import annotations

import re

from toolcall_sim.model import vocabulary
from toolcall_sim.world.scenario import WORLD_KEYS, from_dict
from toolcall_sim.world.scenario_spec import (
    WRITTEN_MS,
    FaultSpec,
    MessageMatch,
    Scenario,
    ToolCallSpec,
    Trigger,
    Turn,
    parse_duration,
)


# What sim/world/stories.py ``draw_scenario`` writes, key by key: a dict with any other key, or
# a fault of another kind, goes through ``from_dict`` (``from_drawn``'s fallback).
_DRAWN_TOP = frozenset(("name", "summary", "seed", "until", "world", "network", "turns", "faults"))
_DRAWN_WORLD = frozenset(("replicas", "generation_time", "handler_time", "files"))
_DRAWN_TOOL_KEYS = frozenset(("id", "tool", "command", "runs_for", "timeout", "background", "exit_code", "output",
                              "path", "content", "edits"))
_DRAWN_FAULT_KINDS = frozenset(vocabulary.SWARM_FAULT_KINDS)
_DRAWN_FAULT_KEYS = frozenset(("kind", "at", "when", "offset", "message", "by", "downtime", "replica", "chat",
                               "between", "duration"))


def from_drawn(data: dict, shown: str = "<scenario>") -> Scenario:
    """``from_dict(data, shown)`` for a dict the swarm drew itself (sim/world/stories.py
    ``draw_scenario``), without checking it again: a drawn world is valid by construction
    (tests/test_swarm.py validates drawn worlds with ``from_dict`` and compares the two
    conversions, ``Scenario`` for ``Scenario``, over hundreds of seeds and every story).
    The checks were a twentieth of a swarm seed, paid for a dict no user wrote. Only the
    keys and fault kinds the drawing writes are converted here; a dict with anything else
    (a user's scenario, an edited draw) is read by ``from_dict``, whose checks and
    one-line errors stay whole for every input a user gives."""
    if not (data.keys() <= _DRAWN_TOP and data.get("world", {}).keys() <= _DRAWN_WORLD):
        return from_dict(data, shown)
    for turn in data["turns"]:
        for tc in turn["tool_calls"]:
            if not tc.keys() <= _DRAWN_TOOL_KEYS:
                return from_dict(data, shown)
    for f in data["faults"]:
        if f["kind"] not in _DRAWN_FAULT_KINDS or not f.keys() <= _DRAWN_FAULT_KEYS:
            return from_dict(data, shown)
    ms = _drawn_ms
    world_in = data.get("world", {})
    world = []
    for key, kind in WORLD_KEYS.items():  # (the reader's order: the vocabulary's)
        if key in world_in:
            value = world_in[key]
            if kind == "duration":
                value = ms(value)
            elif key == "files":
                value = tuple(sorted((str(k), v) for k, v in value.items()))
            world.append((key, value))
    latency = data["network"]["latency"]
    turns = []
    provider_of: dict[str, str] = {}  # a drawn call's provider ID is its ID (no ``provider_id``)
    for turn in data["turns"]:
        calls = []
        for tc in turn["tool_calls"]:
            calls.append(_frozen(ToolCallSpec, {
                "id": tc["id"],
                "tool": tc["tool"],
                "command": tc.get("command", ""),
                "runs_for_ms": ms(tc.get("runs_for", "0s")),
                "timeout_ms": ms(tc["timeout"]) if "timeout" in tc else None,
                "background": tc.get("background", False),
                "exit_code": tc.get("exit_code", 0),
                "output": tc.get("output", ""),
                "path": tc.get("path", ""),
                "content": tc.get("content", ""),
                "edits": tuple([(e.get("search", ""), e.get("replace", "")) for e in tc.get("edits", ())]),
                "provider_id": "",
                "kill_fails": False,
            }))
            provider_of[tc["id"]] = tc["id"]
        turns.append(_frozen(Turn, {"chat": turn["chat"], "tool_calls": tuple(calls)}))
    faults = []
    for f in data["faults"]:
        kind = f["kind"]
        spec = vocabulary.FAULTS[kind]
        at_ms = event = match = None
        offset_ms = 0
        if spec.shape != "message":
            offset_ms = ms(f.get("offset", "0s"))
            if "at" in f:
                at_ms = ms(f["at"])
            else:
                when = f["when"]
                event = when["event"]
                match = _drawn_match(when, vocabulary.TRIGGER_EVENTS[event].direction, provider_of)
        params = []
        for key in spec.fields:  # (``read_fault``'s order: the vocabulary's)
            if key in f:
                value = f[key]
                what = vocabulary.FAULT_FIELD_TYPES[key]
                if what == "duration":
                    value = ms(value)
                elif what == "nodes":
                    value = tuple(value)
                elif what == "message":
                    value = _drawn_match(value, None, provider_of)
                params.append((key, value))
        trigger = _frozen(Trigger, {"at_ms": at_ms, "event": event, "match": match, "offset_ms": offset_ms})
        faults.append(_frozen(FaultSpec, {"kind": kind, "trigger": trigger, "params": tuple(params)}))
    return _frozen(Scenario, {
        "path": shown,
        "name": data["name"],
        "summary": data.get("summary", ""),
        "variant": "contract",  # (``from_dict``'s default: a drawn world names no variant)
        "seed": data["seed"],
        "until_ms": ms(data["until"]),
        "world": tuple(world),
        "latency_min_ms": ms(latency["min"]),
        "latency_max_ms": ms(latency["max"]),
        "loss": float(data["network"].get("loss", 0.0)),
        "links": (),
        "clocks": (),
        "turns": tuple(turns),
        "faults": tuple(faults),
        "expect": (),
        "latency_shape": (),
        "stalls": (),
    })


def _frozen(cls, fields_: dict):
    """An instance of the frozen dataclass ``cls`` whose fields are ``fields_`` (every
    field, in declaration order), without its generated ``__init__``, which sets each
    field through ``object.__setattr__`` (a drawn world builds some twenty of these; none
    of these classes computes anything in ``__init__``). model/core.py ``replace`` copies
    frozen states the same way."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", fields_)
    return obj


def _drawn_match(table: dict, event_direction: str | None, provider_of: dict) -> MessageMatch:
    """``toolcall_sim.world.scenario_faults.read_match`` of a drawn message or event trigger, unchecked."""
    tool_call = table.get("tool_call")
    if event_direction == "none":
        route, direction = None, "none"
    else:
        route = table.get("route", "start")
        direction = event_direction or table.get("direction", "request")
    return _frozen(MessageMatch, {"route": route, "tool_call": provider_of[tool_call] if tool_call is not None else None,
                                  "direction": direction, "nth": table.get("nth", 1)})


# ``format_duration``'s words ("1h30m5s20ms"): hours, minutes, seconds, milliseconds, each
# optional and in that order. The drawing writes nothing else; anything else (and the
# empty string) is read by ``parse_duration``.
_DRAWN_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?")


def _drawn_ms(text: str) -> int:
    ms = WRITTEN_MS.get(text)  # (written by this process's drawing: sim/world/scenario_spec.py)
    if ms is not None:
        return ms
    m = _DRAWN_DURATION.fullmatch(text)
    if m is None or not text:
        return parse_duration(text, "duration")
    h, mi, s, milli = m.groups()
    return (int(h or 0) * 3_600_000 + int(mi or 0) * 60_000 + int(s or 0) * 1_000 + int(milli or 0))
