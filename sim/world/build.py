"""A scenario's timed world: the configuration the model runs and the options of its
network, built from a scenario file's values.

Theory of operation
-------------------
``build`` turns a ``Scenario`` (sim/world/scenario.py) into the model's ``WorldConfig``
(replicas, chats and their tool calls, the agent and chatd rules of the variant, the
timing) and the ``WorldOptions`` the simulation's network reads (latency, loss, per-link
settings, faults). It is a module of its own, apart from sim/world/run.py, so that the
explorer's scenario builder (sim/world/explore_scenario.py), which builds the same world
on a smaller clock, and the replay of an explorer's path (sim/world/replay_world.py),
which the runner asks for, need not import the runner: no import circle.
"""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import replace

from toolcall_sim.model import agent, chatd, chattool, planted_bugs
from toolcall_sim.model import system as msys
from toolcall_sim.model import vocabulary
from toolcall_sim.model.timing import DEFAULT_TIMING, Timing
from toolcall_sim.model.core import EMPTY, FMap

from toolcall_sim.world import latency
from toolcall_sim.world.scenario import Scenario, ScenarioError, ToolCallSpec, format_duration
from toolcall_sim.world.simulation import LinkSpec, WorldOptions


# Chat names in scenarios become stable UUIDs (the tool call UUID needs a real chat UUID).
CHAT_NAMESPACE = uuid.UUID("6f1c2d3e-4b5a-5c6d-8e7f-101112131415")


@functools.lru_cache(maxsize=4096)  # pure: a swarm names its chats "chat-1", "chat-2" in every seed
def chat_uuid(name: str) -> str:
    try:
        return str(uuid.UUID(name))
    except ValueError:
        return str(uuid.uuid5(CHAT_NAMESPACE, name))


def _tool_call(spec: ToolCallSpec) -> chattool.ToolCall:
    return chattool.ToolCall(spec.provider, spec.tool, _args_json(spec))


def _args_json(spec: ToolCallSpec) -> str:
    """The call's arguments as the model wrote them: the text ``json.dumps(args,
    sort_keys=True, separators=(",", ":"))`` gives for ``args`` = ``{"command", "timeout"
    (chatd's duration words), "run_in_background"}`` of an execute, ``{"files": [{"path",
    "edits": [{"search", "replace"}]}]}`` of an edit_files, ``{"path", "content"}`` of a
    write_file. Written out with the keys in sorted order and each string quoted by the
    quoting ``dumps`` itself uses (ensure_ascii): building the dict and running the
    encoder over it was a third of ``build``'s cost (tests/test_setup_paths.py compares the
    two texts for every scenario file and drawn world)."""
    quote = _JSON_STRING
    if spec.tool == "execute":
        text = '{"command":' + quote(spec.command)
        if spec.background:
            text += ',"run_in_background":true'
        if spec.timeout_ms is not None:
            text += ',"timeout":' + quote(format_duration(spec.timeout_ms))
        return text + "}"
    if spec.tool == "edit_files":
        edits = ",".join(['{"replace":' + quote(r) + ',"search":' + quote(s) + "}" for s, r in spec.edits])
        return '{"files":[{"edits":[' + edits + '],"path":' + quote(spec.path) + "}]}"
    return '{"content":' + quote(spec.content) + ',"path":' + quote(spec.path) + "}"


# The string quoting ``json.dumps`` applies with ensure_ascii (its default): the C
# function its encoder calls for every string.
_JSON_STRING = json.encoder.encode_basestring_ascii


def world_timing(scenario: Scenario) -> Timing:
    """The one ``Timing`` every replica and its tool layer read (vocabulary Rule 3): the
    reference values with the scenario's ``[world]`` timing keys on top, and the agent's
    age margin mirrored so the checkers judge with the margin the agent used. A planted
    bug's own timing knobs go on top of this (``planted_bugs.resolve``). Orderings the
    reference relies on (``timing.ORDERINGS``) are not enforced: a world may break them
    on purpose (a 5 min attempt timeout under today), and the run shows what follows."""
    world = scenario.world_values()
    changes = {field: world[key] for key, field in vocabulary.TIMING_KEYS.items() if world.get(key) is not None}
    if world.get("age_margin") is not None:
        changes["agent_age_margin_ms"] = world["age_margin"]
    return replace(DEFAULT_TIMING, **changes) if changes else DEFAULT_TIMING


def build(scenario: Scenario, variant: str) -> tuple[msys.WorldConfig, WorldOptions]:
    """The timed world of ``scenario`` under ``variant`` and how its network behaves
    (a ``[replay]`` file's world is sim/world/replay_world.py's, which sim/world/run.py
    ``build`` asks first)."""
    world = scenario.world_values()
    agent_name = world.get("agent", "rev-c")
    base_agent = agent.AGENT_VARIANTS.get(agent_name)
    if base_agent is None:
        raise ScenarioError(f"{scenario.path}: world.agent: unknown agent {agent_name!r} (known: {', '.join(sorted(agent.AGENT_VARIANTS))})")
    timing = world_timing(scenario)
    if world.get("age_margin") is not None:
        base_agent = replace(base_agent, age_margin_ms=world["age_margin"])
    if world.get("handler_time") is not None:
        base_agent = replace(base_agent, handler_ms=world["handler_time"])
    try:
        rules, agent_rules = _resolved(variant, base_agent, timing)
    except planted_bugs.UnknownVariant as err:
        raise ScenarioError(f"{scenario.path}: variant: {err}") from None
    chats: dict[str, list] = {}
    scripts = {}
    for turn in scenario.turns:
        chats.setdefault(turn.chat, []).append(tuple([_tool_call(tc) for tc in turn.tool_calls]))
        for tc in turn.tool_calls:
            if tc.tool == "execute":
                scripts[chattool.strip_trailing_ampersand(tc.command)[0].strip()] = agent.Script(
                    runs_for_ms=tc.runs_for_ms, exit_code=tc.exit_code, output_at_start=tc.output,
                    kill_fails=tc.kill_fails,
                )
    gen_ms = world.get("generation_time", chatd.DEFAULT_GEN_TIME_MS)
    start_ms = world.get("chat_start", 0)
    stagger_ms = world.get("chat_stagger", 0)
    chat_specs = tuple([
        msys.ChatSpec(name, chat_uuid(name), tuple(turns), gen_ms, start_ms + i * stagger_ms)
        for i, (name, turns) in enumerate(chats.items())
    ])
    clocks = FMap(
        (node, msys.ClockSpec(dict(v)["offset_ms"], dict(v)["drift_ppm"], dict(v)["steps"]))
        for node, v in scenario.clocks
    ) if scenario.clocks else EMPTY
    replicas = _replica_names(world.get("replicas", 2))
    replica_rules = {}
    for name, replica_variant in world.get("replica_variants", ()):
        if name not in replicas:
            raise ScenarioError(f"{scenario.path}: world.replica_variants.{name}: no such replica (replicas: {', '.join(replicas)})")
        try:
            replica_rules[name] = _resolved(replica_variant, base_agent, timing)[0]
        except planted_bugs.UnknownVariant as err:
            raise ScenarioError(f"{scenario.path}: world.replica_variants.{name}: {err}") from None
    files = world.get("files")
    config = msys.WorldConfig(
        replicas=replicas,
        chatd_rules=rules,
        agent_config=agent.AgentConfig(rules=agent_rules, scripts=FMap(scripts)),
        chats=chat_specs,
        clocks=clocks,
        files=FMap(files) if files else EMPTY,
        agent_boot_at_ms=world.get("agent_boot_at", 0),
        message_ids_per_chat=world.get("message_ids_per_chat", False),
        workspace=world.get("workspace", "running"),
        replica_rules=FMap(replica_rules) if replica_rules else EMPTY,
        pubsub_immediate=world.get("pubsub", "late") == "at_commit",
        reference_timing=timing,  # the world's clock before the variant's planted bugs
    )
    shape = latency.shape_of(scenario.latency_shape)
    links = {}
    for name, values in scenario.links:
        v = dict(values)
        links[name] = LinkSpec(
            v.get("latency_min_ms", scenario.latency_min_ms), v.get("latency_max_ms", scenario.latency_max_ms),
            v.get("loss", scenario.loss),
            shape=None if "latency_min_ms" in v else shape,  # a link's own range is uniform; else the network's shape
        )
    options = WorldOptions(scenario.latency_min_ms, scenario.latency_max_ms, scenario.loss, links, scenario.faults,
                           latency_shape=shape, stalls=latency.stalls_of(scenario.stalls))
    return config, options


@functools.lru_cache(maxsize=64)  # pure: a swarm world has 1-3 replicas
def _replica_names(count: int) -> tuple[str, ...]:
    return tuple(f"replica-{i + 1}" for i in range(count))


# Every swarm seed resolves the same variant over the same few agents (rev-c, with or
# without a story's handler time) and the reference timing: the rule objects are frozen
# and ``resolve`` is pure, so equal inputs share one answer (a sixth of ``build``'s cost).
# An unknown variant raises each time (a raise is not remembered).
@functools.lru_cache(maxsize=256)
def _resolved(variant: str, base_agent: agent.AgentRules, timing: Timing):
    return planted_bugs.resolve(variant, base_agent, timing=timing)
