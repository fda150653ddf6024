"""A scenario that replays one path step by step: ``[replay]``, the counterexample
``toolcall-sim explore`` writes for ``toolcall-sim run``.

Theory of operation
-------------------
The explorer's counterexample is a list of actions on its small clock (model/explore.py);
``replay`` reads it as JSON. This module reads and writes the same list as a scenario
file, so a violation found by the search is a story ``run`` tells (and the pytest plugin
can pin): its world, then each step on a line, then what the run shows. Every driver
has one ``system.apply``, and any failure replays as a list of actions: the steps are
that list, applied through ``Simulation.step`` (sim/world/simulation.py), nothing else.

Rule 1 (the world). Without ``world`` the steps run in the file's own ``[world]`` and
        ``[[turns]]``, built on the explorer's clock exactly as ``explore SCENARIO.toml``
        builds them (sim/world/explore_scenario.py ``build``: its ratio, its refusals);
        with ``world`` in that small world of model/worlds.py (``second``: the default
        world's second call), and then the file has neither ``[world]`` nor ``[[turns]]``.
Rule 2 (the steps). Each step is one action of model/actions.py in the words of
        ``vocabulary.REPLAY_STEPS`` (``{ at_ms = 8, do = "deliver", seq = 6, msg = ... }``),
        ``at_ms`` on the explorer's clock, never before the step before it. They are
        applied in order, with no agenda, latency or chance. A step that does not fit
        the state it comes to is refused, one line naming the step, exit 2: one
        ``system.apply`` refuses (a message not in flight or not the one named, a timer
        not armed or not yet due), one the explorer would not take there (a message moved
        at another time than the current one, a timer fired off its due time, a tick or a
        fault its state does not enable: ``_not_offered``), a fault that does nothing.
        So is a step after the horizon, ``until`` on the explorer's clock (moved by the
        chats' start as explore_scenario.py Rule 4 moves it; in a named world 1 small ms
        is 1 s, as ``explore --horizon`` reads it).
Rule 3 (nothing else decides). A replayed run draws nothing and no network times it, so
        ``seed``, ``[network]``, ``[clocks]`` and ``[[faults]]`` (the faults that struck
        are steps) are refused in such a file, and ``run --seed`` and ``--until`` with it
        (sim/world/run.py). The run ends at its last step.
Rule 4 (writing). ``document`` writes a counterexample (its world as the counterexample
        file records it: sim/drivers/counterexample.py) as such a file: the scenario's own
        ``[world]`` and ``[[turns]]`` (or the small world's name), ``until`` giving the
        horizon the search had, the steps, and ``[expect.<variant>]`` with exactly the
        violations and residual risks that ``run`` of the file shows, found by running
        it. So ``run`` reports "expectations met" (exit 0), as for every shipped story
        of a bug (its ``[expect.today]`` names what it demonstrates); once the bug is
        fixed the violation is gone (exit 1) or a step no longer fits (exit 2). A path
        whose replay does not show its property is not written (``NotWritten``).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace
from typing import Any

from toolcall_sim.model import system as msys
from toolcall_sim.model import vocabulary
from toolcall_sim.world.scenario_spec import ReplaySpec, Scenario, ScenarioError, format_duration

# The first line of every file ``document`` writes: what tells a file explore may replace
# from one it must not (sim/cli/explore_search.py).
MARKER = "# Written by toolcall-sim explore"
# Top-level keys a replay refuses (Rule 3), and the two a named world refuses besides (Rule 1).
_NEVER = {"seed": "a replayed run draws nothing", "network": "the steps say when each message arrives or is lost",
          "clocks": "the explorer runs every node on true time",
          "faults": "the faults that struck are steps (do = \"fault\")"}
_OWN_WORLD = ("world", "turns")
_MESSAGE_ACTIONS = {"deliver": msys.Deliver, "lose": msys.Drop}
_SEQ_MAX = 2**63 - 1
_BARE = re.compile(r"[^A-Za-z0-9_-]")  # a character a TOML key must be quoted for


class NotWritten(Exception):
    """One line: why a counterexample has no scenario file."""


def read(c, data: Any) -> ReplaySpec | None:
    """``[replay]`` of a scenario dict (None without one), checked as the loader checks
    every section (``c`` is its checker: one line, exit 2), with the top-level keys a
    replay refuses (Rules 1 and 3)."""
    from toolcall_sim.model import worlds

    if not isinstance(data, dict) or "replay" not in data:
        return None
    table = c.table(data["replay"], "replay")
    c.keys(table, set(vocabulary.REPLAY_KEYS), "replay")
    world = None
    if "world" in table:
        world = c.name(table["world"], "replay.world")
        if world not in worlds.names():
            c.fail("replay.world", f"unknown small world {world!r} (known: {', '.join(worlds.names())})")
    second = "background"
    if "second" in table:
        if world != "default":
            c.fail("replay.second", "shapes only the default world (replay.world = \"default\")")
        second = c.typed(table["second"], str, "replay.second")
        if second not in vocabulary.REPLAY_SECONDS:
            c.fail("replay.second", f"expected one of {', '.join(vocabulary.REPLAY_SECONDS)}, got {second!r}")
    for key, why in _NEVER.items():
        if key in data:
            c.fail(key, f"a scenario with [replay] replays its steps: {why}")
    if world is not None:
        for key in _OWN_WORLD:
            if key in data:
                c.fail(key, f"replay.world names the small world {world!r}, which has its own chats and tool calls")
    if "steps" not in table:
        c.fail("replay.steps", "missing (the actions to replay, in order)")
    listed = c.capped(c.typed(table["steps"], list, "replay.steps"), vocabulary.MAX_ITEMS, "replay.steps", "steps")
    if not listed:
        c.fail("replay.steps", "no step: a replay of nothing shows nothing")
    steps = []
    for i, step in enumerate(listed):
        steps.append(_step(c, step, f"replay.steps[{i}]"))
        if i and steps[-1].at_ms < steps[-2].at_ms:
            c.fail(f"replay.steps[{i}].at_ms", f"{steps[-1].at_ms} is before the step before it ({steps[-2].at_ms}): "
                                               "time never runs backwards")
    return ReplaySpec(world, second, tuple(steps))


def _step(c, value: Any, where: str):
    """One step as its model action (Rule 2): only the fields its ``do`` has."""
    step = c.table(value, where)
    do = step.get("do")
    if not isinstance(do, str) or do not in vocabulary.REPLAY_STEPS:
        c.fail(f"{where}.do", f"expected one of {', '.join(vocabulary.REPLAY_STEPS)}, got {do!r}")
    fields = vocabulary.REPLAY_STEPS[do]
    kind = None
    if do == "fault":
        kind = step.get("fault")
        if not isinstance(kind, str) or kind not in vocabulary.REPLAY_FAULTS:
            c.fail(f"{where}.fault", f"expected one of the explorer's faults {', '.join(vocabulary.REPLAY_FAULTS)}, "
                                     f"got {kind!r}")
        fields += vocabulary.REPLAY_FAULTS[kind]
    c.keys(step, {"at_ms", "do", *fields}, where)
    for key in ("at_ms", *fields):
        if key not in step:
            c.fail(f"{where}.{key}", f"missing (a {do} step has " + ", ".join(("at_ms", *fields)) + ")")
    at_ms = c.bounded(step["at_ms"], 0, vocabulary.MAX_UNTIL_MS, f"{where}.at_ms", " (ms of the explorer's clock)")
    if do in ("deliver", "lose"):
        return _MESSAGE_ACTIONS[do](at_ms, c.bounded(step["seq"], 0, _SEQ_MAX, f"{where}.seq"), c.name(step["msg"], f"{where}.msg"))
    if do == "timer":
        return msys.Fire(at_ms, c.name(step["node"], f"{where}.node"), c.name(step["name"], f"{where}.name"))
    if do == "tick":
        return msys.Tick(at_ms)
    params = tuple((key, c.name(step[key], f"{where}.{key}")) for key in vocabulary.REPLAY_FAULTS[kind])
    return msys.Fault(at_ms, kind, params)


def world_of(scenario: Scenario, variant: str) -> tuple[msys.WorldConfig, int]:
    """The world the steps run in and the horizon they keep within (Rules 1 and 2)."""
    from toolcall_sim.model import planted_bugs, worlds
    from toolcall_sim.model.explore import Bounds
    from toolcall_sim.world import explore_scenario

    spec = scenario.replay
    if spec.world is None:
        built = explore_scenario.build(replace(scenario, replay=None), variant)
        return built.config, built.bounds.horizon_ms
    try:
        config = worlds.build(spec.world, variant, spec.second)
    except planted_bugs.UnknownVariant as err:
        raise ScenarioError(f"{scenario.path}: variant: {err}") from None
    return config, scenario.until_ms // Bounds().scale


def run(scenario: Scenario, world, horizon_ms: int) -> None:
    """Apply the steps to ``world`` (a fresh ``Simulation``) in order (Rule 2)."""
    for i, action in enumerate(scenario.replay.steps):
        where = f"{scenario.path}: replay.steps[{i}] ({action.label()})"
        if action.at_ms > horizon_ms:
            raise ScenarioError(f"{where}: at {action.at_ms} small ms, after the horizon of {horizon_ms} "
                                "(until, on the explorer's clock)")
        why = _not_offered(world.system, action, horizon_ms)
        if why is not None:
            raise ScenarioError(f"{where}: not enabled at {world.system.now_ms} small ms: {why}")
        try:
            step = world.step(action)
        except msys.ReplayMismatch as err:
            raise ScenarioError(f"{where}: not enabled at {world.system.now_ms} small ms: "
                                f"{str(err).removeprefix(action.label() + ': ')}") from None
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as err:
            # (as sim/world/replay.py: a step naming what this world has not got)
            raise ScenarioError(f"{where}: does not apply here ({type(err).__name__}: {err})") from None
        skipped = next((r for r in step.records if r.get("kind") == "fault_skipped"), None)
        if skipped is not None:  # (the explorer offers no fault that does nothing; the timed world fails one)
            raise ScenarioError(f"{where}: not enabled at {action.at_ms} small ms: the fault does nothing here "
                                f"({skipped.get('why', '')})")


def _not_offered(s: msys.System, action, horizon_ms: int) -> str | None:
    """Why the explorer would not take ``action`` in ``s`` (None: it may), beyond what
    ``system.apply`` itself refuses: time moves only to a timer's due time or by a tick,
    so a delivery or loss is at the current time and a timer fires when due; a tick and
    a fault must be among the actions the explorer's state enables (model/explore_actions.py
    ``enabled``, every budget left, every message as late as it likes, no folding of
    replicas). Deliveries are not asked of ``enabled``: the search also delivers at once an
    answer nobody awaits any more, wherever it is in flight (model/explore.py Rule 6)."""
    from toolcall_sim.model.explore import Bounds, Node, enabled

    kind = type(action)
    if kind is msys.Deliver or kind is msys.Drop:
        return None if action.at_ms == s.now_ms else f"a message moves at the current time, not at {action.at_ms} ms"
    if kind is msys.Fire:
        timer = s.timers.get((action.node, action.name))
        if timer is not None and timer.due_ms != action.at_ms:
            return f"the timer is due at {timer.due_ms} ms, not {action.at_ms} ms"
        return None  # (apply names a timer that is not armed)
    many = vocabulary.MAX_UNTIL_MS
    bounds = Bounds(max_in_flight_ms=many, horizon_ms=horizon_ms, agent_restarts=many, ownership_changes=many,
                    interrupts=many, lost_responses=many, task_retries=many, symmetry=False)
    offered = enabled(Node(s, (0, 0, 0, 0, 0), (), None, None), bounds)
    if action in offered:
        return None
    same = [a.label() for a in offered if type(a) is kind]
    return "the state offers " + (", ".join(same) if same else f"no {action.label().split()[0]} step")


# -- writing (Rule 4) ----------------------------------------------------------------


def step_line(action) -> dict:
    """One action as a step's table (Rule 2's words); NotWritten for an action the
    explorer never takes (an ``Idle`` batch, a fault the explorer has not got)."""
    as_json = msys.action_to_json(action)
    do = as_json.pop("action")
    if do not in vocabulary.REPLAY_STEPS:
        raise NotWritten(f"a {do} step is the timed world's, not the explorer's")
    out = {"at_ms": as_json.pop("at_ms"), "do": do}
    if do in ("deliver", "lose"):
        return out | {"seq": action.seq, "msg": action.what}
    if do == "fault":
        if action.kind not in vocabulary.REPLAY_FAULTS or \
                tuple(k for k, _ in action.params) != vocabulary.REPLAY_FAULTS[action.kind]:
            raise NotWritten(f"a {action.kind} fault with {dict(action.params)} is not one of the explorer's")
        return out | {"fault": action.kind, **dict(action.params)}
    return out | as_json


def document(world: dict, prop: str, residual_risk: str | None, detail: str, actions) -> str:
    """The counterexample in ``world`` (a counterexample file's world: ``explore`` or
    ``explore-scenario``) as a scenario file's text (Rule 4); NotWritten, one line, when
    it cannot be one or its replay does not show ``prop``."""
    from toolcall_sim.model import properties as props
    from toolcall_sim.model import worlds
    from toolcall_sim.world import explore_scenario as es
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict
    from toolcall_sim.world.scenario_toml import to_toml

    variant = world["variant"]
    bounds = world["bounds"]
    found = prop + (f"-{residual_risk}" if residual_risk else "")
    steps = [step_line(a) for a in actions]
    if not steps:
        raise NotWritten("the violation holds in the initial state: there is no step to replay")
    comment = [f"{MARKER}: the shortest path the search found to {found}"]
    if world["kind"] == "explore":
        name = world["name"]
        head = {"name": f"{name}-{variant}-{found}", "summary": "", "variant": variant,
                "until": format_duration(bounds["horizon_ms"] * bounds["scale"])}
        table = {"world": name} | ({"second": world["second"]} if world["second"] != "background" else {})
        chats = ", ".join(f"{c.name} is chat {c.chat_id}" for c in worlds.build(name, variant, world["second"]).chats)
        comment += [f"# in the explorer's {name} world (model/worlds.py) under {variant}, as a scenario",
                    "# `toolcall-sim run` replays step by step (scenarios/README.md, [replay]). The steps are on the",
                    f"# explorer's clock, 1 small ms for 1 s; until is the search's horizon. {chats}."]
        body = {}
    else:
        raw = world["scenario"]
        scenario = from_dict(raw, "world.scenario")
        ratio = es.ratio_of(scenario)
        own = es.build(scenario, variant, world.get("faults", "anywhere"))  # the horizon of until, no --horizon
        until = raw.get("until")
        if own.bounds.horizon_ms != bounds["horizon_ms"]:
            shift = own.bounds.horizon_ms - es.small(scenario.until_ms, ratio)
            if bounds["horizon_ms"] <= shift:
                raise NotWritten(f"the horizon ({bounds['horizon_ms']} small ms) ends before the chats start")
            until = format_duration(int((bounds["horizon_ms"] - shift) * ratio))
        head = {"name": f"{scenario.name}-{variant}-{found}", "summary": "", "variant": variant}
        if until is not None:
            head["until"] = until
        table = {}
        body = {k: raw[k] for k in ("world", "turns") if k in raw}
        chats = ", ".join(f"{c.name} is chat {c.chat_id}" for c in own.config.chats)
        comment += [f"# in {scenario.name} under {variant}, as a scenario `toolcall-sim run` replays step by step",
                    "# (scenarios/README.md, [replay]): its world and turns, on the explorer's clock as",
                    f"# `toolcall-sim explore` builds them (1 small ms = {format_duration(int(ratio))}); until gives the",
                    f"# search's horizon. {chats}."]
    head["summary"] = (f"explore's counterexample: {found} in {len(steps)} steps ({detail})" if detail else
                       f"explore's counterexample: {found} in {len(steps)} steps")
    replay_part = {"replay": table | {"steps": steps}}

    def text(expect: dict) -> str:
        out = "\n".join(comment) + "\n" + to_toml(head | body) + to_toml(replay_part)
        for key, wanted in expect.items():  # ([expect.<variant>] as a section: to_toml would inline it)
            out += f"\n[expect.{json.dumps(key) if _BARE.search(key) else key}]\n" \
                + "".join(f"{k} = {json.dumps(v)}\n" for k, v in wanted.items())
        if tomllib.loads(out) != head | body | replay_part | ({"expect": expect} if expect else {}):
            raise NotWritten("the TOML writer lost information")
        return out

    try:
        result = run_scenario(from_dict(tomllib.loads(text({})), "counterexample"), variant)
    except ScenarioError as err:
        raise NotWritten(f"its replay was refused: {str(err).split(': ', 1)[1]}") from None
    violated, risks = result.found()
    shown = prop in violated if residual_risk is None or residual_risk in props.KNOWN_FINDINGS else residual_risk in risks
    if not shown:
        raise NotWritten(f"its replay shows {', '.join(violated + risks) or 'no violation'}, not {found}")
    return text({variant: {"violations": violated, "residual_risks": risks}})
