"""A scenario that replays one path step by step: ``[replay]``, the counterexample
``toolcall-sim explore`` writes for ``toolcall-sim run``.

Theory of operation
-------------------
The explorer's counterexample is a list of actions on its small clock (model/explore.py);
``replay`` reads it as JSON. This module reads the same list from a scenario file
(``read``, which the loader calls); sim/world/replay_world.py builds the world the steps
run in and applies them, sim/world/replay_write.py writes such a file (three modules, so
that the loader, the runner and the writer import one another in one direction only),
so a violation found by the search is a story ``run`` tells (and the pytest plugin
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
        fault its state does not enable: sim/world/replay_world.py ``_not_offered``), a
        fault that does nothing.
        So is a step after the horizon, ``until`` on the explorer's clock (moved by the
        chats' start as explore_scenario.py Rule 4 moves it; in a named world 1 small ms
        is 1 s, as ``explore --horizon`` reads it).
Rule 3 (nothing else decides). A replayed run draws nothing and no network times it, so
        ``seed``, ``[network]``, ``[clocks]`` and ``[[faults]]`` (the faults that struck
        are steps) are refused in such a file, and ``run --seed`` and ``--until`` with it
        (sim/world/run.py). The run ends at its last step.
Rule 4 (writing). ``document`` (sim/world/replay_write.py) writes a counterexample (its
        world as the counterexample file records it: sim/drivers/counterexample.py) as
        such a file: the scenario's own
        ``[world]`` and ``[[turns]]`` (or the small world's name), ``until`` giving the
        horizon the search had, the steps, and ``[expect.<variant>]`` with exactly the
        violations and residual risks that ``run`` of the file shows, found by running
        it. So ``run`` reports "expectations met" (exit 0), as for every shipped story
        of a bug (its ``[expect.today]`` names what it demonstrates); once the bug is
        fixed the violation is gone (exit 1) or a step no longer fits (exit 2). A path
        whose replay does not show its property is not written (``NotWritten``).
"""

from __future__ import annotations

from typing import Any

from toolcall_sim.model import system as msys
from toolcall_sim.model import vocabulary
from toolcall_sim.world.scenario_spec import ReplaySpec

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
