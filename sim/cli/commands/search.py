"""``toolcall-sim search``: random search with shrinking (hypothesis) of the default world.

Theory of operation
-------------------
The flags, their checks, the progress and the files live here; the search itself is the
drivers': drawn race stories (sim/drivers/story_search.py, the default) or, with
``--world``, the hypothesis state machine over one of the explorer's small worlds
(sim/drivers/stateful.py), and the text is toolcall_sim.reports.search's. Hypothesis is
imported only when a search runs, so building the command line does not pay for it (0.1 s
of every ``toolcall-sim`` start).

A shrunk failure prints as its story and is written in the replay format (and, for a
drawn story, as a scenario file). Derandomized, so the same arguments find the same
failure: 0 no new finding, 1 one, 130 interrupted (the smallest failure met so far kept).
The programs are counted on stderr (toolcall_sim.io.progress: a bar on a terminal,
nothing in a log or with ``--quiet``), then the programs shrinking tries.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from toolcall_sim.reports import search as text
from toolcall_sim.world.inputs import (MAX_EXAMPLES, MAX_SHRINK_RUNS, MAX_STEPS, check_range, check_seeds,
                                       check_variant)
from toolcall_sim.io.errors import ScenarioError

NAME = "search"
HELP = "random search with shrinking (hypothesis) of the default world"
# toolcall_sim.drivers.stateful.OUT: where --world programs' counterexamples go (a test keeps them equal).
WORLD_OUT = "reports/out/hypothesis"
PROGRESS_PROGRAMS = 25  # programs between progress lines (TOOLCALL_SIM_PROGRESS=lines)


def add_arguments(parser) -> None:
    from toolcall_sim.model import worlds as small_worlds

    from toolcall_sim.io.output import default_out_dir
    from toolcall_sim.io.progress import add_quiet_flag

    parser.add_argument("--variant", default="contract", help="variant, e.g. today or contract+no-age-margin")
    parser.add_argument("--examples", type=int, default=None,
                        help=f"programs hypothesis tries (1..{MAX_EXAMPLES}; default 1000 drawn stories, the budget "
                             "of toolcall-sim bugs; 200 with --world)")
    parser.add_argument("--world", choices=small_worlds.names(), default=None,
                        help="search this small world of the explorer step by step (the rule-based state "
                             "machine) instead of drawing race stories (the default)")
    parser.add_argument("--steps", type=int, default=None,
                        help=f"with --world: actions per program at most (1..{MAX_STEPS}, default 40)")
    parser.add_argument("--shrink-runs", type=int, default=None,
                        help=f"without --world: runs shrinking may spend after the first failure (0..{MAX_SHRINK_RUNS}, "
                             "default 200)")
    parser.add_argument("--seed", type=int, default=None, help="without --world: hypothesis's seed (0..2**63-1, default 0)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help=f"where the shrunk counterexample (and, for stories, hypothesis's example "
                             f"database) is written (default ./{default_out_dir('search')} for stories, "
                             f"./{WORLD_OUT} with --world, under the current directory)")
    add_quiet_flag(parser)


def main(args, out) -> int:
    # The ranges first (sim/world/inputs.py): --steps 10**9 would otherwise reach
    # hypothesis, whose health check fails as a harness error.
    check_range(args.examples, "search: --examples", 1, MAX_EXAMPLES)
    check_range(args.steps, "search: --steps", 1, MAX_STEPS)
    check_range(args.shrink_runs, "search: --shrink-runs", 0, MAX_SHRINK_RUNS)
    check_seeds(args.seed, 1, "search: --seed")
    if args.world is None:
        if args.steps is not None:
            raise ScenarioError("search: --steps counts the actions of a --world program; drawn stories have none")
        return _stories(args, out)
    if args.shrink_runs is not None or args.seed is not None:
        raise ScenarioError("search: --shrink-runs and --seed are for drawn stories; --world programs are "
                            "derandomized")
    return _world(args, out)


def _world(args, out) -> int:
    """Hypothesis over the small world ``--world``, step by step."""
    from hypothesis import HealthCheck, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.stateful import run_state_machine_as_test

    from toolcall_sim.drivers import stateful
    from toolcall_sim.io.output import check_out_dir, write_atomic
    from toolcall_sim.io.progress import Progress

    steps = 40 if args.steps is None else args.steps
    examples = 200 if args.examples is None else args.examples
    check_variant(args.variant, "search: --variant")
    out_dir = check_out_dir(str(stateful.OUT) if args.out is None else args.out)
    progress = Progress.for_command(args, f"search {args.variant}", examples, unit="programs",
                                    every=PROGRESS_PROGRAMS)
    chosen = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                      derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    out.write(text.world_plan(args.variant, args.world, examples, steps, out_dir))
    out.flush()
    # Every failing program hypothesis meets writes its file; only the last, shrunk one
    # is kept (into --out), so the folder holds no half-shrunk leftovers. Hypothesis's
    # own storage (.hypothesis) lives in the scratch folder too, not wherever we run.
    count = _ProgramCount(progress, examples)
    with tempfile.TemporaryDirectory() as scratch, progress:
        set_hypothesis_home_dir(Path(scratch) / ".hypothesis")
        try:
            try:
                run_state_machine_as_test(stateful.machine_for(args.variant, out=Path(scratch), world=args.world,
                                                               on_program=count.program,
                                                               on_violation=count.violation),
                                          settings=chosen)
            except AssertionError:
                progress.finish()  # shrunk: the failure is what follows
                raise
            else:
                progress.finish()
            finally:
                progress.close()  # the bar's last state stays above what is printed next
        except AssertionError as err:
            name = stateful.file_name(args.variant, str(err).split(":", 1)[0])
            file = write_atomic(out_dir / name, (Path(scratch) / name).read_bytes())
            out.write(text.world_violation(str(err), json.loads(file.read_text()), file))
            return 1
        except KeyboardInterrupt:
            # The smallest failing program met so far, if any, is kept: hypothesis writes
            # the latest (most shrunk) one last.
            kept = sorted(Path(scratch).glob("*.json"))
            for f in kept:
                write_atomic(out_dir / f.name, f.read_bytes())
            out.write(text.world_interrupted(len(kept), out_dir))
            return 130
        finally:
            set_hypothesis_home_dir(None)
    out.write(text.no_finding())
    return 0


def _stories(args, out) -> int:
    """Drawn race stories (sim/drivers/story_search.py): the shrunk failure is written as a
    scenario file and a counterexample; hypothesis's example database lives in
    ``<out>/hypothesis-db`` (its failures are tried first next time)."""
    from toolcall_sim.drivers import story_search
    from toolcall_sim.io.output import check_out_dir, default_out_dir, sigint_deferred
    from toolcall_sim.io.progress import Progress

    shrink_runs = story_search.SHRINK_RUNS if args.shrink_runs is None else args.shrink_runs
    examples = story_search.EXAMPLES if args.examples is None else args.examples
    seed = 0 if args.seed is None else args.seed
    check_variant(args.variant, "search: --variant")
    out_dir = check_out_dir(default_out_dir("search") if args.out is None else args.out)
    out.write(text.story_plan(args.variant, examples, seed, shrink_runs, out_dir))
    out.flush()
    progress = Progress.for_command(args, f"search {args.variant}", examples, unit="programs",
                                    every=PROGRESS_PROGRAMS)
    shown = {"shrinking": False}

    def on_program(outcome) -> None:
        if outcome.programs_to_failure is None:
            progress(min(outcome.programs, examples), examples)
            return
        if not shown["shrinking"]:
            shown["shrinking"] = True
            progress.set_description("shrinking", unknown_total=True)
        progress(outcome.shrink_runs, None, outcome.violated or "")
    with progress:
        outcome = story_search.search(args.variant, examples, shrink_runs,
                                      database_dir=out_dir / "hypothesis-db", seed=seed, on_program=on_program)
        if not outcome.interrupted:  # an interrupted bar stays where it stopped
            progress.finish()
    out.write(text.story_ran(outcome.programs, outcome.seconds))
    if outcome.found:
        # The scenario and its counterexample together or not at all (a second Ctrl-C
        # waits for the pair: sim/io/interrupt.py Rule 2).
        with sigint_deferred():
            toml_path, json_path = story_search.write_failure(outcome, out_dir)
        out.write(text.story_violation(outcome, args.variant, toml_path, json_path))
        return 130 if outcome.interrupted else 1  # cut short is 130 like every interrupt, not 1 as if done
    if outcome.interrupted:
        out.write(text.story_interrupted())
        return 130
    out.write(text.no_finding())
    return 0


class _ProgramCount:
    """What ``search --world`` shows while hypothesis runs: programs tried out of
    ``--examples``, then, from the first failing program on, the programs shrinking has
    tried (how many it will need is not known, so the bar pulses)."""

    def __init__(self, progress, examples: int):
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
