"""toolcall-sim: deterministic simulation and model checking of the CODAGT-757 tool call
contract between chatd and the workspace agent.

Exit codes mean one thing each:
  0    nothing violated, every expectation met (replay: the violation no longer reproduces)
  1    a property was violated or an expectation was not met (replay: it reproduces;
       drift: a modelled rule's Go code changed, moved or is gone, or something is new)
  2    bad input: a malformed file, flag or value, reported in one line on stderr
  3    replay only: the actions stopped fitting the model at a step (the code changed),
       so the replay says nothing about the violation
  70   a harness error: one line on stderr; run again with --debug for the traceback
  75   --cluster only: no worker on the scheduler for the grace time (60 s, or
       TOOLCALL_SIM_NO_WORKERS_GRACE_S); the summary so far is printed, as for 130
  130  interrupted (Ctrl-C, or SIGTERM: kill PID): the summary so far is printed,
       finished files are kept, no worker process is left

Outputs (counterexamples, minimized scenarios) go under ./reports/out/<command> in the
current directory unless --out says otherwise; never into the installed package.
"""

# Theory of operation (for readers of the code; the text above is ``--help``): this module
# only registers the subcommands of ``sim/cli/commands/`` (one module each, with its flags and
# its ``main``) and keeps the exit-code contract above: a command returns 0, 1 or 3 (or 130
# after an interrupt it handled), raises bad input (exit 2) and anything else becomes one
# line and exit 70, or the traceback with --debug. The text a user reads is written by the
# ``reports`` package. SIGTERM is Ctrl-C (sim/io/interrupt.py Rule 1, installed by
# sim/cli/launch.py), so both end as one KeyboardInterrupt here and share exit 130: the
# command caught the signal and stopped cleanly either way, and a second code (143) would
# only make scripts test for two ways of saying "stopped, summary printed".

from __future__ import annotations

import argparse
import sys

from toolcall_sim.cli.commands import COMMANDS
from toolcall_sim.world.inputs import (
    EXIT_BAD_INPUT,
    EXIT_DOES_NOT_FIT,
    EXIT_HARNESS,
    EXIT_INTERRUPTED,
    EXIT_NO_WORKERS,
    EXIT_OK,
    EXIT_VIOLATION,
    SCENARIO_DIR,
    BadFlag,
    check_variant,
    load_scenario,
    one_line,
)
from toolcall_sim.io.output import OutputError
from toolcall_sim.world.scenario import ScenarioError

# The names this module had before the commands moved out keep working from here (for
# callers outside sim/; sim's own modules import them from toolcall_sim.world.inputs, below
# the command line, so nothing imports toolcall_sim.cli.main back).
__all__ = ["main", "parser", "BadFlag", "check_variant", "load_scenario", "SCENARIO_DIR", "EXIT_OK", "EXIT_VIOLATION",
           "EXIT_BAD_INPUT", "EXIT_DOES_NOT_FIT", "EXIT_HARNESS", "EXIT_INTERRUPTED", "EXIT_NO_WORKERS"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit status 2, like bad scenario input
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message}\n")

    def _get_values(self, action, arg_strings):
        # ``--flag=--`` is the value ``--``: Python 3.11's argparse drops it and hands
        # the command an empty list where a string belongs (a harness error found by
        # tests/test_fuzz_cli.py); taken literally, the flag's own check refuses it.
        if action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)  # a flag with choices: '--' is none of them
            return value
        return super()._get_values(action, arg_strings)


def _debug_flag(parser) -> None:
    # On every subcommand too, so ``toolcall-sim run x --debug`` works; SUPPRESS keeps a
    # subcommand's default from overwriting ``toolcall-sim --debug run x``.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on a harness error, print the Python traceback instead of one line")


def parser() -> argparse.ArgumentParser:
    """The command line: the global flags, then each subcommand's own."""
    top = _Parser(prog="toolcall-sim", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--debug", action="store_true", default=False,
                     help="on a harness error, print the Python traceback instead of one line")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(p)
        _debug_flag(p)
        # The module, not its ``main``: looked up when the command runs.
        p.set_defaults(command_module=command)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.command_module.main(args, sys.stdout)
    except (ScenarioError, OutputError, BadFlag) as err:
        print(f"toolcall-sim: {one_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as stop:
        if getattr(stop, "exit_code", None) == EXIT_NO_WORKERS:
            return EXIT_NO_WORKERS  # sim/backends/dask_cluster.py said why in its own line
        print("toolcall-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - the one place a harness error becomes an exit code
        if args.debug:
            raise
        print(f"toolcall-sim: harness error: {type(err).__name__}: {one_line(err)} "
              "(run again with --debug for the traceback)", file=sys.stderr)
        return EXIT_HARNESS
