"""``toolcall-sim search``: random search with shrinking (hypothesis) of the default world.

Theory of operation
-------------------
Only the registration lives here: the flags, and the run, which is ``toolcall_sim.drivers.stateful``'s
``main`` (the hypothesis state machine that drives ``toolcall_sim.model.system.apply`` and shrinks a
failure to a short counterexample). The flags are declared here, not there, so building
the command line does not import hypothesis (0.1 s of every ``toolcall-sim`` start);
``toolcall_sim.drivers.stateful`` is imported when a search runs.
"""

from __future__ import annotations

from toolcall_sim.world.inputs import MAX_EXAMPLES, MAX_SHRINK_RUNS, MAX_STEPS, check_range, check_seeds

NAME = "search"
HELP = "random search with shrinking (hypothesis) of the default world"
# toolcall_sim.drivers.stateful.OUT: where --world programs' counterexamples go (a test keeps them equal).
WORLD_OUT = "reports/out/hypothesis"


def add_arguments(parser) -> None:
    from toolcall_sim.model import worlds as small_worlds

    from toolcall_sim.io.output import default_out_dir
    from toolcall_sim.io.progress import add_quiet_flag

    parser.add_argument("--variant", default="contract", help="variant, e.g. today or contract+no-age-margin")
    parser.add_argument("--examples", type=int, default=None,
                        help=f"programs hypothesis tries (1..{MAX_EXAMPLES}; default 500 drawn stories, the budget "
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
    from toolcall_sim.drivers import stateful

    # The ranges first (sim/world/inputs.py): --steps 10**9 would otherwise reach
    # hypothesis, whose health check fails as a harness error.
    check_range(args.examples, "search: --examples", 1, MAX_EXAMPLES)
    check_range(args.steps, "search: --steps", 1, MAX_STEPS)
    check_range(args.shrink_runs, "search: --shrink-runs", 0, MAX_SHRINK_RUNS)
    check_seeds(args.seed, 1, "search: --seed")

    return stateful.main(args, out)
