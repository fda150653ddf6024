"""``toolcall-sim coverage``: which rules of docs/contract.md the drivers reach (issue 35).

Theory of operation
-------------------
Only the flags and the exit code live here: the runs and counts are
sim/drivers/coverage.py, the text and JSON reports/coverage.py. The declared probes are
model/probes.py ``PROBES``. Every flag is checked before the first run. With no driver
flag, ``--scenarios`` runs. Exit code: 0 when every declared probe was reached by a
driver run under every variant where its branch exists (model/probes.py ``variants_of``)
or is listed in ``UNREACHABLE`` with its reason, 1 when one is neither, 2 on bad input.
A swarm gap (a probe a scenario reaches and the swarm does not) with no reason in
``SWARM_GAPS`` is reported; ``--strict-swarm`` makes it exit 1 too (it needs both
``--scenarios`` and ``--swarm``, else there is no gap to judge: exit 2).
"""

from __future__ import annotations

from toolcall_sim.world.inputs import EXIT_OK, EXIT_VIOLATION, MAX_SEEDS, MAX_STATES, MAX_WORKERS, check_range

NAME = "coverage"
HELP = "which contract rules (model/probes.py) the scenarios, swarm and explorer reach"


def add_arguments(parser) -> None:
    from toolcall_sim.model import worlds

    parser.add_argument("--scenarios", action="store_true", help="run every shipped scenario under both variants")
    parser.add_argument("--swarm", type=int, default=None, metavar="N", help="run swarm seeds 1..N under both variants")
    parser.add_argument("--workers", type=int, default=1, help=f"swarm worker processes (1..{MAX_WORKERS}, default 1)")
    parser.add_argument("--explore", choices=worlds.names(), default=None, metavar="WORLD",
                        help="explore this small world under both variants: " + ", ".join(worlds.names()))
    parser.add_argument("--max-states", type=int, default=200_000, help="the explorer's state budget")
    parser.add_argument("--strict-swarm", action="store_true",
                        help="exit 1 on a swarm gap model/probes.py SWARM_GAPS gives no reason for "
                             "(needs --scenarios and --swarm)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def main(args, out) -> int:
    from toolcall_sim.drivers import coverage as cov
    from toolcall_sim.reports.coverage import coverage_json, format_coverage, unexplained_gaps
    from toolcall_sim.world.inputs import BadFlag

    check_range(args.swarm, "coverage: --swarm", 1, MAX_SEEDS)
    check_range(args.workers, "coverage: --workers", 1, MAX_WORKERS)
    check_range(args.max_states, "coverage: --max-states", 1, MAX_STATES)
    run_scenarios = args.scenarios or (args.swarm is None and args.explore is None)
    if args.strict_swarm and not (run_scenarios and args.swarm is not None):
        raise BadFlag("coverage: --strict-swarm judges the swarm against the scenarios: give --scenarios and --swarm N")
    counts = cov.Coverage()
    if run_scenarios:
        cov.run_scenarios(counts)
    if args.swarm is not None:
        cov.run_swarm(counts, args.swarm, workers=args.workers)
    if args.explore is not None:
        cov.run_explore(counts, args.explore, args.max_states)
    table = cov.coverage_table(counts)
    out.write(coverage_json(table) if args.json else format_coverage(table))
    failed = table["unreached"] or table["undeclared_hits"] or (args.strict_swarm and unexplained_gaps(table))
    return EXIT_VIOLATION if failed else EXIT_OK
