"""The subcommands of ``toolcall-sim``, one module each.

Theory of operation
-------------------
Every module here is one subcommand with the same three names: ``NAME`` (the word on the
command line), ``HELP`` (its line in ``toolcall-sim --help``), ``add_arguments(parser)``
(its flags) and ``main(args, out) -> int`` (run it, write to ``out``, return the exit
code). ``sim/cli/main.py`` registers them in the order of ``COMMANDS`` and owns what is common:
the global ``--debug`` flag and how an exception becomes an exit code. A command checks
every flag before it starts work (a bad flag costs a millisecond, not a search of
minutes), hands its results to the ``reports`` package for the text and JSON a user reads,
and decides the exit code (sim/world/inputs.py names them).
"""

from __future__ import annotations

# ``list`` is the module of ``toolcall-sim list`` (named as the command is); it shadows the
# builtin only in this file, which needs no builtin list.
from toolcall_sim.cli.commands import bench, bugs, check, compare, coverage, drift, explore, incident, list, replay, run, search, swarm, sweep

# The order of ``toolcall-sim --help``.
COMMANDS = (run, list, incident, explore, replay, swarm, sweep, search, check, compare, bugs, coverage, drift, bench)
