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
so ``toolcall-sim replay`` runs it again. ``search`` counts the programs on stderr
(``toolcall_sim.io.progress``: a bar on a terminal, nothing in a log or with ``--quiet``), then the
programs shrinking tries.
"""

from __future__ import annotations

import json
import tempfile
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
from toolcall_sim.io.progress import Progress

settings.register_profile("ci", max_examples=40, stateful_step_count=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=1000, stateful_step_count=80, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])

OUT = Path("reports/out/hypothesis")
PROGRESS_PROGRAMS = 25  # programs between progress lines (TOOLCALL_SIM_PROGRESS=lines)


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


def _file_name(variant: str, prop: str) -> str:
    return f"{variant.replace('+', '_')}-{prop}.json"


def save_counterexample(out: Path, variant: str, bounds: ex.Bounds, v, path: list, world: str = "default") -> Path:
    """Write the failing path in the one replay format (the latest, i.e. most shrunk, wins)."""
    return cx.save_actions(out / _file_name(variant, v.property), cx.explore_world(world, variant, bounds),
                           v.property, v.residual_risk, path, "hypothesis", v.detail)


# ---------------------------------------------------------------------------
# Command line: toolcall-sim search
# ---------------------------------------------------------------------------


def main(args, out) -> int:
    """``toolcall-sim search``: drawn race stories (``story_main``) or, with ``--world``,
    hypothesis over that small world; a shrunk failure prints as its story of action
    labels and is written in the replay format. Derandomized, so the same arguments find
    the same failure. 0 no new finding, 1 one."""
    from hypothesis.stateful import run_state_machine_as_test

    from toolcall_sim.world.scenario import ScenarioError

    if args.world is None:
        if args.steps is not None:
            raise ScenarioError("search: --steps counts the actions of a --world program; drawn stories have none")
        return story_main(args, out)
    if args.shrink_runs is not None or args.seed is not None:
        raise ScenarioError("search: --shrink-runs and --seed are for drawn stories; --world programs are "
                            "derandomized")
    args.steps = 40 if args.steps is None else args.steps
    args.examples = 200 if args.examples is None else args.examples
    args.out = str(OUT) if args.out is None else args.out
    if args.examples < 1 or args.steps < 1:
        raise ScenarioError("search: --examples and --steps must be at least 1")
    from toolcall_sim.world.inputs import check_variant
    from toolcall_sim.io.output import check_out_dir, write_atomic

    check_variant(args.variant, "search: --variant")
    out_dir = check_out_dir(args.out)
    progress = Progress.for_command(args, f"search {args.variant}", args.examples, unit="programs",
                                    every=PROGRESS_PROGRAMS)
    chosen = settings(max_examples=args.examples, stateful_step_count=args.steps, deadline=None, database=None,
                      derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    out.write(f"search {args.variant} in world {args.world}: up to {args.examples} programs of up to {args.steps} "
              "actions (hypothesis); "
              f"a counterexample goes to {out_dir}\n")
    out.flush()
    # Every failing program hypothesis meets writes its file; only the last, shrunk one
    # is kept (into --out), so the folder holds no half-shrunk leftovers. Hypothesis's
    # own storage (.hypothesis) lives in the scratch folder too, not wherever we run.
    from hypothesis.configuration import set_hypothesis_home_dir

    count = _ProgramCount(progress, args.examples)
    with tempfile.TemporaryDirectory() as scratch, progress:
        set_hypothesis_home_dir(Path(scratch) / ".hypothesis")
        try:
            try:
                run_state_machine_as_test(machine_for(args.variant, out=Path(scratch), world=args.world,
                                                      on_program=count.program, on_violation=count.violation),
                                          settings=chosen)
            except AssertionError:
                progress.finish()  # shrunk: the failure is what follows
                raise
            else:
                progress.finish()
            finally:
                progress.close()  # the bar's last state stays above what is printed next
        except AssertionError as err:
            name = _file_name(args.variant, str(err).split(":", 1)[0])
            file = write_atomic(out_dir / name, (Path(scratch) / name).read_bytes())
            doc = json.loads(file.read_text())
            out.write(f"  VIOLATION {err}\n  shrunk to {doc['steps']} actions:\n")
            for i, action in enumerate(doc["actions"], 1):
                out.write(f"    {i:3}. {action['label']}\n")
            out.write(f"  counterexample: {file} (toolcall-sim replay {file})\n")
            return 1
        except KeyboardInterrupt:
            # The smallest failing program met so far, if any, is kept: hypothesis writes
            # the latest (most shrunk) one last.
            kept = sorted(Path(scratch).glob("*.json"))
            for f in kept:
                write_atomic(out_dir / f.name, f.read_bytes())
            out.write("  interrupted (Ctrl-C): " + (f"{len(kept)} counterexample(s) found so far kept in {out_dir}, "
                                                    "maybe not fully shrunk\n" if kept else "no new finding so far\n"))
            return 130
        finally:
            set_hypothesis_home_dir(None)
    out.write("  no new finding\n")
    return 0


# ---------------------------------------------------------------------------
# toolcall-sim search without --world: drawn race stories
# ---------------------------------------------------------------------------


def story_main(args, out) -> int:
    """Drawn race stories (sim/drivers/story_search.py): the shrunk failure is written as a
    scenario file and a counterexample; hypothesis's example database lives in
    ``<out>/hypothesis-db`` (its failures are tried first next time)."""
    from toolcall_sim.drivers import story_search
    from toolcall_sim.world.inputs import check_variant
    from toolcall_sim.io.output import check_out_dir, default_out_dir, sigint_deferred
    from toolcall_sim.world.scenario import ScenarioError

    shrink_runs = story_search.SHRINK_RUNS if args.shrink_runs is None else args.shrink_runs
    args.examples = story_search.EXAMPLES if args.examples is None else args.examples
    args.seed = 0 if args.seed is None else args.seed
    if args.examples < 1 or shrink_runs < 0:
        raise ScenarioError("search: --examples must be at least 1 and --shrink-runs not negative")
    if args.seed < 0:
        raise ScenarioError(f"search: --seed: must not be negative, got {args.seed}")
    check_variant(args.variant, "search: --variant")
    out_dir = check_out_dir(default_out_dir("search") if args.out is None else args.out)
    out.write(f"search {args.variant}: up to {args.examples} drawn race stories (hypothesis, seed {args.seed}), "
              f"shrinking with up to {shrink_runs} runs; a counterexample goes to {out_dir}\n")
    out.flush()
    progress = Progress.for_command(args, f"search {args.variant}", args.examples, unit="programs",
                                    every=PROGRESS_PROGRAMS)
    shown = {"shrinking": False}

    def on_program(outcome) -> None:
        if outcome.programs_to_failure is None:
            progress(min(outcome.programs, args.examples), args.examples)
            return
        if not shown["shrinking"]:
            shown["shrinking"] = True
            progress.set_description("shrinking", unknown_total=True)
        progress(outcome.shrink_runs, None, outcome.violated or "")
    with progress:
        outcome = story_search.search(args.variant, args.examples, shrink_runs,
                                      database_dir=out_dir / "hypothesis-db", seed=args.seed, on_program=on_program)
        if not outcome.interrupted:  # an interrupted bar stays where it stopped
            progress.finish()
    out.write(f"  {outcome.programs} programs run in {outcome.seconds:.1f}s\n")
    if outcome.found:
        faults, calls, turns = outcome.length
        # The scenario and its counterexample together or not at all (a second Ctrl-C
        # waits for the pair: sim/io/interrupt.py Rule 2).
        with sigint_deferred():
            toml_path, json_path = story_search.write_failure(outcome, out_dir)
        # Cut short while shrinking: the smallest failing story met so far is kept and
        # said to be that, and the exit is 130 like every interrupt (not 1 as if done).
        shrunk = (f"shrinking cut short (Ctrl-C) after {outcome.shrink_runs} runs; the smallest failing story so "
                  f"far, maybe not fully shrunk, has" if outcome.interrupted else
                  f"shrunk with {outcome.shrink_runs} runs to")
        out.write(f"  VIOLATION {outcome.violated}: {outcome.detail}\n"
                  f"  first failure after {outcome.programs_to_failure} programs; {shrunk} "
                  f"{faults} faults, {calls} tool calls, {turns} turns:\n"
                  f"    {outcome.scenario['summary']}\n"
                  f"  scenario: {toml_path} (toolcall-sim run {toml_path} --variant {args.variant})\n"
                  f"  counterexample: {json_path} (toolcall-sim replay {json_path})\n")
        if outcome.interrupted:
            out.write("  interrupted (Ctrl-C): the search and its shrinking were cut short\n")
            return 130
        return 1
    if outcome.interrupted:
        out.write("  interrupted (Ctrl-C): no new finding so far\n")
        return 130
    out.write("  no new finding\n")
    return 0

class _ProgramCount:
    """What ``search`` shows while hypothesis runs: programs tried out of ``--examples``,
    then, from the first failing program on, the programs shrinking has tried (how many it
    will need is not known, so the bar pulses)."""

    def __init__(self, progress: Progress, examples: int):
        self.progress = progress
        self.examples = examples
        self.programs = 0
        self.shrinking_from: int | None = None  # programs run when the first one failed

    def program(self) -> None:
        self.programs += 1
        if self.shrinking_from is None:
            self.progress(min(self.programs, self.examples), self.examples)
        else:
            self.progress(self.programs - self.shrinking_from, None, self.progress.what)

    def violation(self, prop: str) -> None:
        if self.shrinking_from is None:
            self.shrinking_from = self.programs
            self.progress.set_description("shrinking", unknown_total=True)
            self.progress(0, None, prop)
