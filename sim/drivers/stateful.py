"""Hypothesis as the third driver: drawn race stories by default (sim/drivers/story_search.py),
or a rule-based state machine over one of the explorer's worlds (``--world``).

Theory of operation
-------------------
``toolcall-sim search`` with no ``--world`` draws the swarm's race stories through
hypothesis (sim/drivers/story_search.py: bigger worlds than the explorer exhausts, aimed with
``hypothesis.target``, shrunk to a smaller story). With ``--world NAME`` it runs the
state machine below over that small world, as it always did.

Hypothesis chooses the actions and shrinks a failure to the shortest program it can find.
There is one rule per action kind (deliver, lose, fire a timer, let time pass, restart the
agent, interrupt, change ownership) with a small readable argument (which message, which
timer, by position among the enabled ones), so a shrunk failure reads like a story. The
world, the budgets and the enabled actions are the explorer's (``toolcall_sim.model.explore``); the
invariant is every safety property on the path's history. On a failure the machine writes
the path as a counterexample file (``reports/out/hypothesis/``) in the one replay format,
so ``toolcall-sim replay`` runs it again. The command line (``toolcall-sim search``, its
progress and its text) is sim/cli/commands/search.py's; this module is the driver only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from toolcall_sim.model import explore as ex
from toolcall_sim.model import worlds
from toolcall_sim.model import properties as props
from toolcall_sim.model import system as msys

from toolcall_sim.drivers import counterexample as cx

settings.register_profile("ci", max_examples=40, stateful_step_count=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=1000, stateful_step_count=80, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])

OUT = Path("reports/out/hypothesis")


def machine_for(variant: str = "contract", bounds: ex.Bounds | None = None, out: Path | None = OUT,
                world: str = "default", on_program: Callable[[], None] | None = None,
                on_violation: Callable[[str], None] | None = None):
    """A RuleBasedStateMachine class over the small world ``world`` of ``variant``.
    ``on_program()`` is called as each program starts (shrinking's included) and
    ``on_violation(property)`` as a program fails: what ``search`` counts on its bar."""
    config = worlds.build(world, variant)
    # Random search can afford latency within the margin (messages 1 s in flight, so
    # `let_time_pass` has something to do); the exhaustive default keeps them instant.
    bounds = bounds or ex.Bounds(max_in_flight_ms=1)

    class ToolCallWorld(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            if on_program is not None:
                on_program()
            self.node = ex.initial_node(config)
            self.path: list = []

        # -- helpers -------------------------------------------------------------
        def _enabled(self, cls, kind: str | None = None) -> list:
            return [a for a in ex.enabled(self.node, bounds)
                    if isinstance(a, cls) and (kind is None or getattr(a, "kind", None) == kind)]

        def _do(self, action):
            note(action.label())
            self.node, taken = ex.step(self.node, action)
            self.path.extend(taken)

        # -- rules: one per action kind -------------------------------------------
        @precondition(lambda self: self._enabled(msys.Deliver))
        @rule(i=st.integers(0, 7))
        def deliver(self, i):
            options = self._enabled(msys.Deliver)
            self._do(options[i % len(options)])

        @precondition(lambda self: self._enabled(msys.Drop))
        @rule(i=st.integers(0, 3))
        def lose_response(self, i):
            options = self._enabled(msys.Drop)
            self._do(options[i % len(options)])

        @precondition(lambda self: self._enabled(msys.Fire))
        @rule(i=st.integers(0, 3))
        def fire_timer(self, i):
            options = self._enabled(msys.Fire)
            self._do(options[i % len(options)])

        @precondition(lambda self: self._enabled(msys.Tick))
        @rule()
        def let_time_pass(self):
            self._do(self._enabled(msys.Tick)[0])

        @precondition(lambda self: self._enabled(msys.Fault, "agent_restart"))
        @rule()
        def restart_agent(self):
            self._do(self._enabled(msys.Fault, "agent_restart")[0])

        @precondition(lambda self: self._enabled(msys.Fault, "interrupt"))
        @rule()
        def interrupt(self):
            self._do(self._enabled(msys.Fault, "interrupt")[0])

        @precondition(lambda self: self._enabled(msys.Fault, "takeover"))
        @rule()
        def change_ownership(self):
            self._do(self._enabled(msys.Fault, "takeover")[0])

        @precondition(lambda self: not ex.enabled(self.node, bounds))
        @rule()
        def world_at_rest(self):
            """Nothing is left to happen before the horizon (the run is over)."""

        # -- the properties --------------------------------------------------------
        @invariant()
        def safety_properties_hold(self):
            report = props.evaluate(ex.ghost_trace(self.node), self.node.system, ("always",))
            new = [v for v in report.violations if v.residual_risk is None]
            if new:
                v = new[0]
                if out is not None:
                    save_counterexample(out, variant, bounds, v, self.path, world)
                if on_violation is not None:
                    on_violation(v.property)
                raise AssertionError(f"{v.property}: {v.detail}")

    ToolCallWorld.__name__ = f"ToolCallWorld_{variant.replace('+', '_').replace('-', '_')}"
    return ToolCallWorld


def file_name(variant: str, prop: str) -> str:
    return f"{variant.replace('+', '_')}-{prop}.json"


def save_counterexample(out: Path, variant: str, bounds: ex.Bounds, v, path: list, world: str = "default") -> Path:
    """Write the failing path in the one replay format (the latest, i.e. most shrunk, wins)."""
    return cx.save_actions(out / file_name(variant, v.property), cx.explore_world(world, variant, bounds),
                           v.property, v.residual_risk, path, "hypothesis", v.detail)
