"""``toolcall-sim bugs``: the detection table, every planted bug through each driver.

Theory of operation
-------------------
Only the flags and the exit code live here: the runs are ``toolcall_sim.ci.bugs`` (``table``), the
text and JSON are ``toolcall_sim.reports.bugs``. Every flag is checked before the first run. Exit
code: 0 when each driver found all but at most one of the bugs it ran and the plain
contract (run unless ``--bug`` names bugs without ``contract``) showed no new finding,
1 otherwise, 130 when interrupted.
"""

from __future__ import annotations

import sys

from toolcall_sim.reports import bugs as report

from toolcall_sim.world.inputs import (EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION, MAX_EXAMPLES, MAX_SEEDS, MAX_STATES, BadFlag,
                     check_range)

NAME = "bugs"
HELP = "which driver finds which planted bug from its default settings (the detection table)"
# Each driver's budget is capped as the driver's own flag is (sim/world/inputs.py).
BUDGET_CAPS = {"explore": MAX_STATES, "search": MAX_EXAMPLES, "swarm": MAX_SEEDS}


def add_arguments(parser) -> None:
    from toolcall_sim.ci import bugs

    parser.add_argument("--driver", choices=(*bugs.DRIVERS, "all"), default="all",
                        help="the driver to measure (default all)")
    parser.add_argument("--budget", action="append", default=[], metavar="[DRIVER=]N",
                        help="a driver's budget: explore in states, search in programs, swarm in seeds per "
                             "first seed (defaults: " + ", ".join(f"{d}={n}" for d, n in bugs.DEFAULT_BUDGETS.items())
                             + "; at most " + ", ".join(f"{d}={n}" for d, n in BUDGET_CAPS.items())
                             + "); a bare N applies to the one --driver chosen; repeatable")
    parser.add_argument("--bug", dest="bugs", action="append", default=[], metavar="NAME",
                        help="only this planted bug (repeatable); 'contract' is the plain contract, the control "
                             "row, which runs by default only when no --bug is given")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def parse_budgets(values: list[str], drivers) -> dict:
    from toolcall_sim.ci import bugs

    out = {}
    for value in values:
        driver, sep, number = value.rpartition("=")
        if not sep:
            if len(drivers) != 1:
                raise BadFlag(f"--budget {value}: name the driver (e.g. explore={value}) when measuring several")
            driver = drivers[0]
        if driver not in bugs.DRIVERS:
            raise BadFlag(f"--budget {value}: unknown driver {driver!r} (known: {', '.join(bugs.DRIVERS)})")
        if driver not in drivers:
            raise BadFlag(f"--budget {value}: {driver} is not measured (--driver {' '.join(drivers)})")
        try:
            n = int(number)
        except ValueError:
            raise BadFlag(f"--budget {value}: expected a whole number of {bugs.UNITS[driver]}") from None
        out[driver] = check_range(n, f"--budget {driver}", 1, BUDGET_CAPS[driver])
    return out


def main(args, out) -> int:
    from toolcall_sim.ci import bugs

    drivers = list(bugs.DRIVERS) if args.driver == "all" else [args.driver]
    budgets = {**bugs.DEFAULT_BUDGETS, **parse_budgets(args.budget, drivers)}
    known = set(bugs.bug_names()) | {bugs.CONTROL}
    for name in args.bugs:
        if name not in known:
            raise BadFlag(f"--bug: unknown planted bug {name!r} (toolcall-sim list shows them; 'contract' is the "
                          "control)")
    chosen = list(dict.fromkeys(args.bugs)) or None
    if not args.json:
        out.write(report.format_header(drivers, budgets, bugs.SWARM_STARTS))
        out.flush()

    def show(d) -> None:
        from dataclasses import asdict

        sys.stderr.write(report.format_row(asdict(d)))
        sys.stderr.flush()
    try:
        doc = bugs.table(drivers, chosen, budgets, control=chosen is None, on_detection=show)
    except KeyboardInterrupt:
        out.write(report.format_interrupted())
        return EXIT_INTERRUPTED
    out.write(report.format_json(doc) if args.json else report.format_table(doc))
    return EXIT_OK if bugs.goal_met(doc) else EXIT_VIOLATION
