"""``toolcall-sim replay FILE``: replay a counterexample or a recorded trace through the
pure model.

Theory of operation
-------------------
The file's actions are applied through ``model.system.apply`` (no simpy, no chance) by
``sim.counterexample.replay``; ``reports.replay`` renders the verdict. The exit code is
the verdict: 1 when the violation reproduces, 0 when every action applied and it no
longer does, 3 when an action stopped fitting (the model changed), in which case the
replay says nothing about the violation.
"""

from __future__ import annotations

from reports.json_text import json_text
from reports.replay import replay_json, replay_text

from .common import EXIT_DOES_NOT_FIT, EXIT_OK, EXIT_VIOLATION, BadFlag, load_scenario, one_line

NAME = "replay"
HELP = ("replay a counterexample or a recorded trace through the model "
        "(exit 1 reproduced, 0 no longer reproduces, 3 no longer fits)")
EXIT_OF_OUTCOME = {"reproduced": EXIT_VIOLATION, "not_reproduced": EXIT_OK, "does_not_fit": EXIT_DOES_NOT_FIT}


def add_arguments(parser) -> None:
    parser.add_argument("file")
    parser.add_argument("--scenario", metavar="FILE",
                        help="the scenario of a recorded trace, when it is not found by name and content next to "
                             "the trace, in the current folder or among the shipped scenarios")
    parser.add_argument("--json", action="store_true")


def main(args, out) -> int:
    from .. import counterexample as cx

    try:
        if args.scenario is not None:
            load_scenario(args.scenario)  # bad input before anything runs
        r = cx.replay(args.file, args.scenario)
    except cx.BadInput as err:
        raise BadFlag(one_line(err)) from None
    out.write(json_text(replay_json(r)) if args.json else replay_text(r))
    return EXIT_OF_OUTCOME[r.outcome]
