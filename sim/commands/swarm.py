"""``toolcall-sim swarm``: swarm testing, random worlds each with its own fault mix.

Theory of operation
-------------------
Only the registration lives here: the flags and the run are ``sim.swarm``'s
(``add_arguments`` and ``main``), which draws the worlds, minimizes failures and writes
them; its summary text is rendered in the ``reports`` package.
"""

from __future__ import annotations

from .. import swarm

NAME = "swarm"
HELP = "swarm testing: random worlds, each with its own fault mix"


def add_arguments(parser) -> None:
    swarm.add_arguments(parser)


def main(args, out) -> int:
    return swarm.main(args, out)
