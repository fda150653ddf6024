"""Scenario files: TOML that reads like a story, validated before anything runs.

Theory of operation
-------------------
A scenario names a world (replicas, constants), a network, clocks, scripted assistant
turns with their tool calls, a fault schedule, and expectations per variant. Loading
either returns a ``Scenario`` or raises ``ScenarioError`` whose message is one line:
``<file>: <field>: <reason>``. The command line prints that line and exits 2.

Scenario files are read and written in one place: this module reads them, one small
reader per section (``_read_head`` for the top-level keys, ``_read_world``,
``_read_network``, ``_read_clocks``, ``_read_turns``, ``_read_faults``, and
sim/world/scenario_expect.py's ``read_expect`` for ``[expect.<variant>]``), called by
``from_dict`` in the file's order, each seeing what the sections before it defined (the
world's replicas and nodes, then the tool calls and chats); sim/world/scenario_faults.py
reads one fault, sim/world/scenario_spec.py holds the values
read (and the duration words), sim/world/scenario_toml.py writes a scenario dict back out, and
sim/world/scenario_drawn.py reads the swarm's own draws without checking them again;
sim/world/scenario_replay.py reads ``[replay]`` (one path of the explorer, step by step:
read first, since a replay of a named small world has no ``[[turns]]``).

Rule 1. Unknown keys are errors (a typo must not silently change a run).
Rule 2. Durations are strings with units ("250ms", "2s", "15m", "9h", "1h30m") and are
        never negative; they become integer milliseconds.
Rule 3. Expectations may only name tool calls the scenario defines.
Rule 4. Every word comes from model/vocabulary.py, and a value the run would not use is
        an error too: a fault for a chat, replica or node the world does not have, a timed
        fault after ``until`` (a clock step, or an event-triggered fault's offset, too), a
        clock for a node that does not exist, an unknown result
        kind, property or residual risk in an expectation, a zero execute timeout.
Rule 5. Only a clock offset may be negative (``offset = "-2h"``): a node's clock may run
        behind true time, nothing else runs backwards.
Rule 6. Nothing unbounded (issue 32): ``load`` reads only a regular file, stat'ed before
        it is opened (a FIFO, a device, a socket or a directory is refused, never read,
        so nothing blocks), at most ``vocabulary.MAX_SCENARIO_BYTES``, whose brackets
        nest at most ``MAX_NESTING`` deep (counted on the text before the TOML reader,
        which recurses once a level, sees it); every list the run walks has its cap
        (replicas, turns, tool calls, chats, faults, clock steps, any other list, a
        string's length: model/vocabulary.py's sizes).
Rule 7. Nothing accepted in silence: a name (scenario, chat, tool call, path, fault) is
        never empty and no text holds a control character (names none, free text only
        tab and newline), so nothing printed can drive the terminal, and every error line
        writes a control character as its escape; a seed lies in ``SEED_MIN..SEED_MAX``,
        a process's exit code in 0..255; a scenario has a tool call to judge; an
        expectation no run could meet (a negative count, a kind the tool never gives, a
        name twice, ``result`` bounds with no millisecond between) is refused.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from toolcall_sim.model import chattool, vocabulary

from toolcall_sim.io import input_file
from toolcall_sim.world.scenario_check import _CONTROL, _Checker, _Context, _printable, _short  # noqa: F401 (re-exported)
from toolcall_sim.world import scenario_replay
from toolcall_sim.world.scenario_expect import _a, read_expect  # (_a: "an execute", both readers' wording)
from toolcall_sim.world.scenario_faults import read_fault
from toolcall_sim.world.scenario_spec import (  # re-exported: the values read, for sim/ and tests
    ROUTE_OF_TOOL,
    Expectation,
    FaultSpec,
    MessageMatch,
    Scenario,
    ScenarioError,
    ToolCallSpec,
    Trigger,
    Turn,
    check_until,
    format_duration,
    parse_duration,
    parse_signed_duration,
)
from toolcall_sim.world.scenario_toml import to_toml  # re-exported: the writer, beside the reader

__all__ = [
    "ROUTE_OF_TOOL", "Expectation", "FaultSpec", "MessageMatch", "Scenario", "ScenarioError", "ToolCallSpec",
    "Trigger", "Turn", "check_until", "format_duration", "parse_duration", "parse_signed_duration", "to_toml",
    "load", "from_dict",
]

# The vocabulary is declared once, in model/vocabulary.py (its Rule 1: a word is accepted
# only if a run uses it); these names are views of it for this module's readers.
TOOLS = vocabulary.TOOLS
WORLD_KEYS = {k.name: {"integer": int, "string": str, "table": dict, "boolean": bool}.get(k.type, k.type)
              for k in vocabulary.WORLD_KEYS.values()}
TOP_KEYS = {"name", "summary", "variant", "seed", "until", "world", "network", "clocks", "turns", "faults", "expect",
            "replay"}
_TOOL_KEYS = {
    "execute": ("command", "runs_for", "timeout", "background", "exit_code", "output", "kill_fails"),
    "edit_files": ("path", "edits"),
    "write_file": ("path", "content"),
}


def load(path: str | Path, shown: str | None = None) -> Scenario:
    """The scenario file at ``path``, checked; ``shown`` names it in error messages
    (default: ``path`` as given; the pytest plugin shows it relative to the rootdir).
    Rule 6: only a regular file of at most ``MAX_SCENARIO_BYTES`` is read, and its TOML
    nests at most ``MAX_NESTING`` levels."""
    path = Path(path)
    shown = str(path) if shown is None else shown
    raw = _read_capped(path, shown)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{shown}: not UTF-8 text (byte {err.start}): a scenario file is UTF-8 TOML") from None
    _check_nesting(text, shown)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(_printable(f"{shown}: syntax: {err}")) from None
    except RecursionError:  # (the scan above bounds brackets; this is its backstop)
        raise ScenarioError(_printable(f"{shown}: nested deeper than {vocabulary.MAX_NESTING} levels")) from None
    return from_dict(data, shown)


def _read_capped(path: Path, shown: str) -> bytes:
    """Rule 6: the bytes of the regular file at ``path``, at most ``MAX_SCENARIO_BYTES``
    (sim/io/input_file.py: a FIFO, a device, a socket or a directory is refused unread)."""
    try:
        return input_file.read_capped(path, shown, vocabulary.MAX_SCENARIO_BYTES, "a scenario file")
    except input_file.InputFileError as err:
        raise ScenarioError(_printable(str(err))) from None


# The pieces of TOML text that can hold a bracket that is not one: strings (the four
# kinds) and comments; and the brackets themselves.
_TOML_TOKENS = re.compile("|".join((
    r'"""(?:[^"\\]|\\.|"(?!""))*"""',  # a multi-line basic string
    r"'''(?:[^']|'(?!''))*'''",  # a multi-line literal string
    r'"(?:[^"\\\n]|\\.)*"',  # a basic string
    r"'[^'\n]*'",  # a literal string
    r"#[^\n]*",  # a comment
    r"[\[\]{}]",
)))


def _check_nesting(text: str, shown: str) -> None:
    """Rule 6: arrays and inline tables nest at most ``MAX_NESTING`` deep, counted on the
    text before the TOML reader (which recurses once a level) sees it; strings and
    comments are skipped. Stops at the first level too deep."""
    depth = 0
    limit = vocabulary.MAX_NESTING
    for m in _TOML_TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, m.start()) + 1
                raise ScenarioError(f"{shown}: line {line}: arrays and tables nest deeper than the cap of {limit} levels")
        elif token in "]}":
            depth = max(depth - 1, 0)


def from_dict(data: dict, shown: str = "<scenario>") -> Scenario:
    """The scenario in ``data`` (a parsed file, or a dict swarm drew), checked; ``shown``
    names it in error messages. A dict nested too deep for Python's stack (dotted keys
    nest without brackets: ``a.a.a... = 1``) is one line too (Rule 6)."""
    try:
        return _from_dict(data, shown)
    except RecursionError:
        raise ScenarioError(_printable(f"{shown}: nested deeper than {vocabulary.MAX_NESTING} levels")) from None


def _from_dict(data: dict, shown: str) -> Scenario:
    c = _Checker(shown)
    # A replay of one of the explorer's named worlds has no turns of its own (sim/world/scenario_replay.py).
    replay = scenario_replay.read(c, data)
    named = replay is not None and replay.world is not None
    name, summary, variant, seed, until_ms = _read_head(c, data, turns_required=not named)
    world = _read_world(c, data.get("world", {}))
    replicas = tuple(f"replica-{i + 1}" for i in range(dict(world).get("replicas", 2)))
    if named:
        replicas = _small_world_replicas(replay.world)
    nodes = ("agent", "db") + replicas
    lat_min, lat_max, loss, links, latency_shape, stalls = _read_network(c, data.get("network", {}), nodes)
    clocks = _read_clocks(c, data.get("clocks", {}), nodes, until_ms)
    if named:
        turns, ctx = (), _Context(set(), {}, {}, (), replicas, nodes, {}, set(), {})
    else:
        turns, ctx = _read_turns(c, data["turns"], replicas, nodes)
    faults, request_names = _read_faults(c, data.get("faults", []), ctx, until_ms)
    expect = read_expect(c, data.get("expect", {}), ctx, request_names, len(faults))
    return Scenario(
        path=shown,
        name=name,
        summary=summary,
        variant=variant,
        seed=seed,
        until_ms=until_ms,
        world=world,
        latency_min_ms=lat_min,
        latency_max_ms=lat_max,
        loss=loss,
        links=links,
        clocks=clocks,
        turns=turns,
        faults=faults,
        expect=expect,
        latency_shape=latency_shape,
        stalls=stalls,
        replay=replay,
    )


def _small_world_replicas(name: str) -> tuple[str, ...]:
    """The replicas of the explorer's small world ``name`` (what its expectations may name)."""
    from toolcall_sim.model import worlds

    return worlds.build(name).replicas


# ---------------------------------------------------------------------------
# One reader per section
# ---------------------------------------------------------------------------


def _read_head(c: _Checker, data: Any, turns_required: bool = True) -> tuple[str, str, str, int, int]:
    """The top level: known keys, ``name`` and ``turns`` present (but in a replay of a
    named small world); name, summary, variant, seed and until (Rule 2; a run lasts more
    than nothing and at most the cap)."""
    if not isinstance(data, dict):
        c.fail("scenario", f"expected a table, got {type(data).__name__}")
    c.keys(data, TOP_KEYS, "")
    for required in ("name", "turns") if turns_required else ("name",):
        if required not in data:
            c.fail(required, "missing")
    name = c.name(data["name"], "name")
    summary = c.text(data.get("summary", ""), "summary")
    variant = c.name(data.get("variant", "contract"), "variant")
    seed = c.bounded(data.get("seed", 1), vocabulary.SEED_MIN, vocabulary.SEED_MAX, "seed", " (2**63 - 1)")
    until_ms = c.typed(data.get("until", "1h"), "duration", "until")
    try:
        check_until(until_ms, "until")
    except ScenarioError as err:
        c.fail("until", str(err).split(": ", 1)[1])
    return name, summary, variant, seed, until_ms


def _read_world(c: _Checker, value: Any) -> tuple[tuple[str, Any], ...]:
    """``[world]``: the vocabulary's world keys, each of its declared type."""
    world = c.table(value, "world")
    c.keys(world, WORLD_KEYS, "world")
    world_values = []
    for key, kind in WORLD_KEYS.items():
        if key in world:
            value = c.typed(world[key], kind, f"world.{key}")
            if key == "replicas":
                c.bounded(value, 1, vocabulary.MAX_REPLICAS, "world.replicas")
            if key == "agent":
                c.name(value, "world.agent")
            if key == "workspace" and value not in vocabulary.WORKSPACE_STATES:
                c.fail("world.workspace", f"unknown state {value!r} (known: {', '.join(vocabulary.WORKSPACE_STATES)})")
            if key == "pubsub" and value not in vocabulary.PUBSUB_DELIVERY:
                c.fail("world.pubsub", f"unknown delivery {value!r} (known: {', '.join(vocabulary.PUBSUB_DELIVERY)})")
            if key in ("files", "replica_variants"):
                c.capped(value, vocabulary.MAX_ITEMS, f"world.{key}", "entries")
                read = c.text if key == "files" else c.name
                value = tuple(sorted((c.name(k, f"world.{key} key"), read(v, f"world.{key}.{k}")) for k, v in value.items()))
            if key in vocabulary.TIMING_KEYS and value <= 0:
                c.fail(f"world.{key}", "must be longer than 0s")
            world_values.append((key, value))
    return tuple(world_values)


def _read_network(c: _Checker, value: Any, nodes: tuple[str, ...]) -> tuple[int, int, float, tuple, tuple, tuple]:
    """``[network]``: the latency of every message (a ``min``..``max`` range, or a shape
    with a tail: toolcall_sim.model.vocabulary.LATENCY_SHAPES), rare long ``stalls`` on top, the loss,
    and per-link overrides (``[network.links."agent->replica-1"]``: a uniform range and a
    loss) between nodes of this world."""
    network = c.table(value, "network")
    c.keys(network, {"latency", "loss", "links", "stalls"}, "network")
    lat = c.table(network.get("latency", {"min": "2ms", "max": "40ms"}), "network.latency")
    shape_name = lat.get("shape", "uniform")
    if shape_name not in vocabulary.LATENCY_SHAPES:
        c.fail("network.latency.shape", f"unknown shape {shape_name!r} (known: {', '.join(vocabulary.LATENCY_SHAPES)})")
    shape = vocabulary.LATENCY_SHAPES[shape_name]
    for key in lat:
        if key != "shape" and key not in shape.fields:
            c.fail(f"network.latency.{key}", f"not used by a {shape_name} latency (its fields: {', '.join(shape.fields)})")
    latency_shape: tuple = ()
    lat_min, lat_max = 2, 40  # the defaults, recorded for a shaped latency too (links inherit the shape, not these)
    if shape_name == "uniform":
        lat_min = c.typed(lat.get("min", "2ms"), "duration", "network.latency.min")
        lat_max = c.typed(lat.get("max", "40ms"), "duration", "network.latency.max")
        if lat_max < lat_min:
            c.fail("network.latency", f"max {lat.get('max')} is below min {lat.get('min')}")
    else:
        for key in shape.fields:
            if key not in lat:
                c.fail(f"network.latency.{key}", f"required by a {shape_name} latency")
        median = c.typed(lat["median"], "duration", "network.latency.median")
        p99 = c.typed(lat["p99"], "duration", "network.latency.p99")
        if median <= 0:
            c.fail("network.latency.median", "must be longer than 0s")
        if p99 < median:
            c.fail("network.latency.p99", f"{lat['p99']} is below the median {lat['median']}")
        latency_shape = (("shape", shape_name), ("median_ms", median), ("p99_ms", p99))
    stalls = _read_stalls(c, network["stalls"]) if "stalls" in network else ()
    loss = _loss(c, network.get("loss", 0.0), "network.loss")
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
            values.append(("loss", _loss(c, spec["loss"], f"{where}.loss")))
        links.append((link, tuple(values)))
    return lat_min, lat_max, loss, tuple(links), latency_shape, stalls


def _loss(c: _Checker, value: Any, where: str) -> float:
    """A loss probability (the world's ``network.loss`` or one link's): 0 to 1."""
    loss = float(c.typed(value, float, where))
    if not 0.0 <= loss <= 1.0:
        c.fail(where, f"must be between 0 and 1, got {loss}")
    return loss


def _read_stalls(c: _Checker, value: Any) -> tuple:
    """``stalls = { probability, min, max }``: every message, with ``probability``, takes
    an extra ``min``..``max``. A stall that never happens or takes no time is refused
    (it would be accepted and ignored)."""
    stalls = c.table(value, "network.stalls")
    c.keys(stalls, set(vocabulary.STALL_FIELDS), "network.stalls")
    for key in vocabulary.STALL_FIELDS:
        if key not in stalls:
            c.fail(f"network.stalls.{key}", "required (stalls = { probability, min, max })")
    probability = float(c.typed(stalls["probability"], float, "network.stalls.probability"))
    if not 0.0 < probability <= 1.0:
        c.fail("network.stalls.probability", f"must be above 0 and at most 1, got {probability} (omit stalls for none)")
    low = c.typed(stalls["min"], "duration", "network.stalls.min")
    high = c.typed(stalls["max"], "duration", "network.stalls.max")
    if high <= 0:
        c.fail("network.stalls.max", "must be longer than 0s")
    if high < low:
        c.fail("network.stalls", f"max {stalls['max']} is below min {stalls['min']}")
    return (("probability", probability), ("min_ms", low), ("max_ms", high))


def _read_clocks(c: _Checker, value: Any, nodes: tuple[str, ...], until_ms: int) -> tuple:
    """``[clocks.<node>]``: a node's offset (Rule 5: may be negative), drift and steps
    (each before ``until``: Rule 4)."""
    clocks = []
    for node, spec in sorted(c.table(value, "clocks").items()):
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
        listed = c.capped(c.typed(spec.get("steps", []), list, f"{where}.steps"), vocabulary.MAX_CLOCK_STEPS,
                          f"{where}.steps", "steps")
        for i, step in enumerate(listed):
            sw = f"{where}.steps[{i}]"
            step = c.table(step, sw)
            c.keys(step, {"at", "by", "back"}, sw)
            by = c.typed(step.get("by", "0s"), "duration", f"{sw}.by")
            if by == 0:
                c.fail(f"{sw}.by", "must be longer than 0s (a step of nothing)")
            back = c.typed(step.get("back", False), bool, f"{sw}.back")
            at_ms = c.typed(step.get("at", "0s"), "duration", f"{sw}.at")
            if at_ms >= until_ms:  # (a timed fault after until is refused alike: scenario_faults.py)
                c.fail(f"{sw}.at", f"{format_duration(at_ms)} is not before until ({format_duration(until_ms)}): "
                                   "the clock would never step")
            steps.append((at_ms, -by if back else by))
        values.append(("steps", tuple(steps)))
        clocks.append((node, tuple(values)))
    return tuple(clocks)


def _read_turns(c: _Checker, value: Any, replicas: tuple[str, ...], nodes: tuple[str, ...]) -> tuple[tuple, _Context]:
    """``[[turns]]``: each assistant turn's chat and tool calls (IDs unique in the file,
    a provider ID used by one turn of a chat only, where several calls may share it:
    ``_read_tool_call``), and the context the later sections check names against."""
    turns = []
    seen_ids: set[str] = set()
    tool_of: dict[str, str] = {}
    chat_of: dict[str, str] = {}
    # (chat, provider ID) -> (turn index, the tool call ids with it, in call order)
    provider_ids: dict[tuple[str, str], tuple[int, list[str]]] = {}
    scripts: dict[str, ToolCallSpec] = {}  # the command the agent runs -> the first call with it
    chat_names: dict[str, None] = {}  # the chats so far, in order
    for i, turn in enumerate(c.capped(c.typed(value, list, "turns"), vocabulary.MAX_TURNS, "turns", "turns")):
        where = f"turns[{i}]"
        turn = c.table(turn, where)
        c.keys(turn, {"chat", "tool_calls"}, where)
        chat = c.name(turn.get("chat", "chat-1"), f"{where}.chat")
        chat_names.setdefault(chat)
        c.capped(chat_names, vocabulary.MAX_CHATS, f"{where}.chat", "chats")
        calls = []
        listed = c.capped(c.typed(turn.get("tool_calls", []), list, f"{where}.tool_calls"),
                          vocabulary.MAX_TOOL_CALLS_PER_TURN, f"{where}.tool_calls", "tool calls in one turn")
        c.capped(range(len(seen_ids) + len(listed)), vocabulary.MAX_TOOL_CALLS, f"{where}.tool_calls",
                 "tool calls in all")
        for j, tc in enumerate(listed):
            spec = _read_tool_call(c, tc, f"{where}.tool_calls[{j}]", chat, i, seen_ids, provider_ids)
            if spec.tool == "execute":
                _one_script(c, spec, f"{where}.tool_calls[{j}]", scripts)
            calls.append(spec)
            tool_of[spec.id] = spec.tool
            chat_of[spec.id] = chat
        turns.append(Turn(chat, tuple(calls)))
    if not seen_ids:
        c.fail("turns", "no tool call in any turn: the scenario has nothing to judge")
    chats = tuple(dict.fromkeys(t.chat for t in turns))
    provider_of = {tc_id: provider for (_, provider), (_, ids) in provider_ids.items() for tc_id in ids}
    chats_of_provider: dict[str, set[str]] = {}
    for chat, provider in provider_ids:
        chats_of_provider.setdefault(provider, set()).add(chat)
    shared = {p for p, in_chats in chats_of_provider.items() if len(in_chats) > 1}
    copies = {tc_id: tuple(ids) for _, ids in provider_ids.values() if len(ids) > 1 for tc_id in ids}
    by_id = {tc.id: tc for turn in turns for tc in turn.tool_calls}
    return tuple(turns), _Context(seen_ids, tool_of, chat_of, chats, replicas, nodes, provider_of, shared,
                                  {tc_id: tuple(by_id[i] for i in ids) for tc_id, ids in copies.items()})


def _one_script(c: _Checker, spec: ToolCallSpec, tw: str, scripts: dict[str, ToolCallSpec]) -> None:
    """The world runs one script per command (what the process does on the agent:
    sim/world/build.py ``build``), so two execute calls with one command (copies sharing a
    provider ID often have one) must say the same ``runs_for``, ``exit_code``, ``output``
    and ``kill_fails``: a second script would be dropped in silence."""
    command = chattool.strip_trailing_ampersand(spec.command)[0].strip()
    first = scripts.setdefault(command, spec)
    for key, mine, theirs in (("runs_for", spec.runs_for_ms, first.runs_for_ms),
                              ("exit_code", spec.exit_code, first.exit_code), ("output", spec.output, first.output),
                              ("kill_fails", spec.kill_fails, first.kill_fails)):
        if mine != theirs:
            c.fail(f"{tw}.{key}", f"{first.id} runs the same command {command!r} with another {key}: the agent "
                                  "runs one script per command")


def _read_tool_call(c: _Checker, tc: Any, tw: str, chat: str, turn: int, seen_ids: set[str],
                    provider_ids: dict[tuple[str, str], tuple[int, list[str]]]) -> ToolCallSpec:
    """One tool call of a turn: only the keys its tool uses. Records its ID in
    ``seen_ids`` and itself under its (chat, provider ID) in ``provider_ids``.

    Calls of one turn (one assistant message) may share a provider ID, as a model can
    send them: chatd runs each copy with the same tool call identity, so they share one
    UUID, and commits a result for each (docs/contract.md C3.7). A provider ID of
    an earlier turn of the chat is refused: Go would give it another UUID, but a scenario
    names a chat's committed calls by provider ID across its messages."""
    tc = c.table(tc, tw)
    c.keys(
        tc,
        {"id", "provider_id", "tool", "command", "runs_for", "timeout", "background", "exit_code", "output", "path",
         "content", "edits", "kill_fails"},
        tw,
    )
    if "id" not in tc:
        c.fail(f"{tw}.id", "missing")
    tc_id = c.name(tc["id"], f"{tw}.id")
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
    listed = c.capped(c.typed(tc.get("edits", []), list, f"{tw}.edits"), vocabulary.MAX_ITEMS, f"{tw}.edits", "edits")
    for k, e in enumerate(listed):
        e = c.table(e, f"{tw}.edits[{k}]")
        c.keys(e, {"search", "replace"}, f"{tw}.edits[{k}]")
        edits.append((c.text(e.get("search", ""), f"{tw}.edits[{k}].search"),
                      c.text(e.get("replace", ""), f"{tw}.edits[{k}].replace")))
    spec = ToolCallSpec(
        id=tc_id,
        tool=tool,
        command=c.text(tc.get("command", ""), f"{tw}.command"),
        runs_for_ms=c.typed(tc.get("runs_for", "0s"), "duration", f"{tw}.runs_for"),
        timeout_ms=c.typed(tc["timeout"], "duration", f"{tw}.timeout") if "timeout" in tc else None,
        background=c.typed(tc.get("background", False), bool, f"{tw}.background"),
        # A process exits with 0..255 (model/vocabulary.py EXIT_CODE_MIN/MAX).
        exit_code=c.bounded(tc.get("exit_code", 0), vocabulary.EXIT_CODE_MIN, vocabulary.EXIT_CODE_MAX,
                            f"{tw}.exit_code", " (a process's exit status)"),
        output=c.text(tc.get("output", ""), f"{tw}.output"),
        kill_fails=c.typed(tc.get("kill_fails", False), bool, f"{tw}.kill_fails"),
        path=c.name(tc.get("path", ""), f"{tw}.path", empty_ok=True),
        content=c.text(tc.get("content", ""), f"{tw}.content"),
        edits=tuple(edits),
        provider_id=c.name(tc.get("provider_id", ""), f"{tw}.provider_id", empty_ok=True),
    )
    if "provider_id" in tc and not spec.provider_id:
        c.fail(f"{tw}.provider_id", "must not be empty")
    earlier = provider_ids.setdefault((chat, spec.provider), (turn, []))
    if earlier[0] != turn:
        c.fail(f"{tw}.provider_id", f"{spec.provider!r} is already a provider ID of an earlier assistant message in "
                                    f"{chat} (calls share one only within a turn)")
    earlier[1].append(tc_id)
    if spec.timeout_ms == 0:
        c.fail(f"{tw}.timeout", "must be longer than 0s (omit it for chatd's 10s default)")
    if tool == "execute" and not spec.command:
        c.fail(f"{tw}.command", "an execute tool call needs a command")
    if tool != "execute" and not spec.path:
        c.fail(f"{tw}.path", f"{_a(tool)} tool call needs a path")
    return spec


def _read_faults(c: _Checker, value: Any, ctx: _Context, until_ms: int) -> tuple[tuple[FaultSpec, ...], dict[str, str]]:
    """``[[faults]]``: each read by sim/world/scenario_faults.py; request faults' names are
    unique (expectations name them), and each name's route says what its answer can show."""
    faults = []
    request_names: dict[str, str] = {}  # request name -> route
    for i, f in enumerate(c.capped(c.typed(value, list, "faults"), vocabulary.MAX_FAULTS, "faults", "faults")):
        fault = read_fault(c, c.table(f, f"faults[{i}]"), f"faults[{i}]", ctx, until_ms)
        if fault.kind == "request":
            if fault.get("name") in request_names:
                c.fail(f"faults[{i}].name", f"two requests are named {fault.get('name')!r}")
            request_names[fault.get("name")] = fault.get("route")
        faults.append(fault)
    return tuple(faults), request_names
