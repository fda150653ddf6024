"""The explorer's tour: every small world in turn, within one budget of states.

Theory of operation
-------------------
Each small world of model/worlds.py holds what one class of races needs (two chats for
chat isolation, late database events for the commit fences, a model that answers twice
for an interrupt during the next message), some races also need a request to wait in
flight (a cancel overtaking its start, a request across an agent restart), and each
needs one to three kinds of fault. A user who does not know which world fits which bug
runs the tour: stages of (world, time in flight, fault kinds), few faults first.

Rule 1 (order). A stage turns on one, two or three kinds of fault, or all of them
        (each at its budget); no bug planted so far needs more than three. Stages go by
        that number, then by world, cheapest first (two-messages, late-pubsub,
        default, two-chats), messages instant (in flight 0) before waiting up to 1 s (1
        small ms, below the 2 s age margin, so the contract's assumption holds), then by
        kinds in ``toolcall_sim.model.explore.BUDGETS`` order.
Rule 2 (rounds). Sizes differ by three orders of magnitude (a world with one kind of
        fault is a few hundred states; two chats with every fault and messages in
        flight are millions), and no order of the stages alone puts the small ones
        first. So the tour goes in rounds of growing caps (``ROUND_CAPS``): each round
        runs, in Rule 1 order, every stage the earlier rounds did not exhaust, again
        from its start, within the round's cap. A stage of S states costs S in the
        first round that holds it, plus at most the smaller caps before: small stages
        of every kind are done before any big one takes its time.
Rule 3 (budgets). Budgets are states, never seconds: a stage explores at most
        ``min(round cap, budget left)``; the tour's states are the sum of its stages'
        (each may overshoot its cap by the two states ``explore`` counts past it). The
        same tour finds the same counterexamples in any process.
Rule 4 (stopping). ``stop_on`` ends the tour at the stage where it accepts a
        counterexample (as it ends one search, model/explore.py); every stage before it
        ran whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Callable

from toolcall_sim.model import explore as ex
from toolcall_sim.model import worlds


@dataclass(frozen=True)
class Stage:
    world: str  # a name of model/worlds.py
    max_in_flight_ms: int  # on the explorer's clock (1 small ms stands for 1 s)
    faults: tuple[str, ...]  # the fault kinds turned on (names of toolcall_sim.model.explore.BUDGETS)

    def label(self) -> str:
        return f"{self.world}, in flight {self.max_in_flight_ms}s, {'+'.join(self.faults)}"

    def bounds(self, budgets: ex.Bounds) -> ex.Bounds:
        """``budgets`` with this stage's time in flight and only its fault kinds on."""
        return replace(budgets, max_in_flight_ms=self.max_in_flight_ms,
                       **{k: getattr(budgets, k) if k in self.faults else 0 for k in ex.BUDGETS})


WORLD_ORDER = ("two-messages", "late-pubsub", "default", "two-chats")  # cheapest first (Rule 1)
ROUND_CAPS = (500, 5_000, 60_000)  # Rule 2
MAX_KINDS = 3  # stages turn on at most this many kinds of fault, or all (Rule 1)
TOUR_STATES = 200_000  # the default budget of the whole tour (every bug planted so far needs under 40,000)


def stages(budgets: ex.Bounds = ex.Bounds()) -> list[Stage]:
    """The tour's stages in order (Rule 1), over the fault kinds whose budget is above 0."""
    kinds = [k for k in ex.BUDGETS if getattr(budgets, k) > 0]
    out = []
    for n in sorted({*range(1, min(MAX_KINDS, len(kinds)) + 1), len(kinds)} - {0}):
        for world in WORLD_ORDER:
            for in_flight_ms in (0, 1):
                out.extend(Stage(world, in_flight_ms, combo) for combo in combinations(kinds, n))
    return out


@dataclass
class StageRun:
    stage: Stage
    bounds: ex.Bounds
    result: ex.Result
    states_before: int  # the tour's states before this stage
    round_cap: int  # the cap of the round it ran in (Rule 2)


@dataclass
class Tour:
    runs: list[StageRun] = field(default_factory=list)
    stopped: bool = False  # stop_on accepted a counterexample, or the driver asked

    @property
    def states(self) -> int:
        return sum(r.result.states for r in self.runs)


def tour(variant: str, budgets: ex.Bounds = ex.Bounds(), max_states: int = TOUR_STATES,
         stop_on: Callable[[ex.Found], bool] | None = None,
         on_progress: Callable[[int], bool | None] | None = None, workers: int = 1) -> Tour:
    """Explore the stages of ``stages(budgets)`` under ``variant`` in rounds, within
    ``max_states`` states in all; ``budgets`` gives each fault kind's count and the
    horizon (each stage sets its own time in flight). ``on_progress(tour states)`` as
    in ``ex.explore``: a true answer stops the tour."""
    done = Tour()
    configs: dict[str, object] = {}
    pending = stages(budgets)
    for round_cap in ROUND_CAPS:
        left_over = []
        for stage in pending:
            left = max_states - done.states
            if left <= 0:
                return done
            if stage.world not in configs:
                configs[stage.world] = worlds.build(stage.world, variant)
            cap = min(round_cap, left)
            before = done.states
            progress = None if on_progress is None else (lambda states, before=before: on_progress(before + states))
            b = stage.bounds(budgets)
            if workers > 1:
                from toolcall_sim.drivers.explore_parallel import explore as explore_parallel

                result = explore_parallel(configs[stage.world], b, max_states=cap, stop_on=stop_on,
                                          on_progress=progress, workers=workers)
            else:
                result = ex.explore(configs[stage.world], b, max_states=cap, stop_on=stop_on, on_progress=progress)
            done.runs.append(StageRun(stage, b, result, before, round_cap))
            accepted = stop_on is not None and any(stop_on(v) for v in result.violations)
            if accepted or (not result.exhausted and result.states < cap):
                done.stopped = True  # stop_on accepted one, or on_progress asked to stop (Rule 4)
                return done
            if not result.exhausted:
                left_over.append(stage)
        pending = left_over
    return done
