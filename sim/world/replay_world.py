"""The world a ``[replay]`` scenario's steps run in, and the steps applied to it: Rules 1
and 2 of sim/world/scenario_replay.py, which reads the file. sim/world/run.py asks this
module for a replay file's world and runs its steps through it.
"""

from __future__ import annotations

from dataclasses import replace

from toolcall_sim.model import system as msys
from toolcall_sim.model import vocabulary
from toolcall_sim.world.scenario_spec import Scenario, ScenarioError


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

