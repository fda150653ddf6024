"""``toolcall-sim search``: random search with shrinking (hypothesis) of the default world.

Theory of operation
-------------------
Only the registration lives here: the flags and the run are ``sim.stateful``'s
(``add_arguments`` and ``main``), the hypothesis state machine that drives
``model.system.apply`` and shrinks a failure to a short counterexample.
"""

from __future__ import annotations

from .. import stateful

NAME = "search"
HELP = "random search with shrinking (hypothesis) of the default world"


def add_arguments(parser) -> None:
    stateful.add_arguments(parser)


def main(args, out) -> int:
    return stateful.main(args, out)
