"""``toolcall-sim replay FILE``: replay a counterexample or a recorded trace through the
pure model.

Theory of operation
-------------------
The file's actions are applied through ``toolcall_sim.model.system.apply`` (no simpy, no chance) by
``toolcall_sim.drivers.counterexample.replay``; ``toolcall_sim.reports.replay`` renders the verdict. The exit code is
the verdict: 1 when the violation reproduces, 0 when every action applied and it no
longer does, 3 when an action stopped fitting (the model changed), in which case the
replay says nothing about the violation; a recorded trace whose replay rebuilds other
records than the file holds is 3 too (edited, or the code changed), and a file that
contradicts itself (a label not its action's, ``steps`` not its number of actions) is
bad input (sim/drivers/counterexample.py says why).

``--report DIR`` writes the replay's report page as ``toolcall-sim check`` writes a
suite's (sim/ci/check.py Rule 6): the replayed trace's sequence diagram with the records
that prove the violation highlighted when it reproduced (plain when it did not), its
timeline, and a copy of the file in ``counterexamples/``. No ``junit.xml``: its one test
case would only repeat the exit code, which the flag does not change.
"""

from __future__ import annotations

from toolcall_sim.reports.json_text import json_text
from toolcall_sim.reports.replay import replay_json, replay_report_written, replay_text

from toolcall_sim.cli.commands.check import add_report_flag, check_report_dir, write_one_run
from toolcall_sim.world.inputs import EXIT_DOES_NOT_FIT, EXIT_OK, EXIT_VIOLATION, BadFlag, load_scenario, one_line

NAME = "replay"
HELP = ("replay a counterexample or a recorded trace through the model "
        "(exit 1 reproduced, 0 no longer reproduces, 3 no longer fits)")
EXIT_OF_OUTCOME = {"reproduced": EXIT_VIOLATION, "not_reproduced": EXIT_OK, "does_not_fit": EXIT_DOES_NOT_FIT}


def add_arguments(parser) -> None:
    parser.add_argument("file", help="a counterexample (.json, from explore, search or swarm) or a trace "
                                     "written by run --trace (.jsonl)")
    parser.add_argument("--scenario", metavar="FILE",
                        help="the scenario of a recorded trace, when it is not found by name and content next to "
                             "the trace, in the current folder or among the shipped scenarios")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    add_report_flag(parser)


def main(args, out) -> int:
    from toolcall_sim.drivers import counterexample as cx

    report_dir = check_report_dir(args.report) if args.report is not None else None
    try:
        if args.scenario is not None:
            load_scenario(args.scenario)  # bad input before anything runs
        r = cx.replay(args.file, args.scenario)
    except cx.BadInput as err:
        raise BadFlag(one_line(err)) from None
    code = EXIT_OF_OUTCOME[r.outcome]
    if report_dir is not None:
        write_one_run(one_run_report(args, r, code), report_dir)
    out.write(json_text(replay_json(r)) if args.json else replay_text(r))
    if report_dir is not None and not args.json:
        out.write(replay_report_written(report_dir))
    return code


def one_run_report(args, r, code: int):
    """This replay as one-run report data (sim/ci/check.py Rule 6). The file was read and
    its world built once already (``cx.replay``); reading it again cannot fail now."""
    from pathlib import Path

    from toolcall_sim.ci.one_run import one_run, replay_output
    from toolcall_sim.drivers import counterexample as cx

    world, actions, doc = cx.load_any(args.file)
    config = cx.world_of(world, Path(args.file).parent, args.scenario)
    name = Path(args.file).name
    reasons = {"reproduced": [f"reproduced: {r.property}" + (f" ({r.residual_risk})" if r.residual_risk else "")],
               "does_not_fit": [f"does not fit: {r.mismatch}"]}.get(r.outcome, [])
    # A recorded trace names no property: each violation it replays to is a finding.
    output = replay_output(name, world, actions, config, r, every=doc.get("property") is None)
    return one_run("replay", name, Path(name).stem, output, code, reasons)
