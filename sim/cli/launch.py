"""The ``toolcall-sim`` console script's first code: a Ctrl-C or SIGTERM during start-up is one line.

Theory of operation
-------------------
Importing the commands takes a second or two on a loaded machine (the model, simpy, the
reports). Until ``toolcall_sim.cli.main.main`` runs, Python's own SIGINT handler would end a Ctrl-C in
that window with a ``KeyboardInterrupt`` traceback from somewhere inside an import, which
breaks the exit-code contract of ``sim/cli/main.py`` (a traceback is never an answer). So this
module, which imports nothing of the project, installs a start-up handler first: a Ctrl-C
before the command runs prints ``toolcall-sim: interrupted while starting`` and exits 130
at once (nothing has been written yet, so there is nothing to keep). Once everything is
imported, Python's default handler is put back and ``toolcall_sim.cli.main.main`` keeps its own rule
(the summary so far, finished files kept, exit 130).

SIGTERM (``kill PID``, a CI runner's timeout) is Ctrl-C (sim/io/interrupt.py Rule 1): its
handler, installed here first, hands it to whatever handles SIGINT at that moment, so in
the start-up window it is the same one line and exit 130, and afterwards the command's
own rule. sim/io/interrupt.py imports nothing of the project either.
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_INTERRUPTED = 130  # toolcall_sim.world.inputs.EXIT_INTERRUPTED, not imported: see above


def _interrupted_while_starting(signum, frame) -> None:  # noqa: ARG001 - signal handler shape
    sys.stderr.write("toolcall-sim: interrupted while starting\n")
    sys.stderr.flush()
    # Not SystemExit: an import half-done could catch or re-wrap an exception; nothing is
    # open or half-written yet, so leaving at once loses nothing.
    os._exit(EXIT_INTERRUPTED)


def main(argv: list[str] | None = None, *, _after_guard=None) -> int:
    """Guard the imports, then run the command line (``_after_guard`` is the tests' hook
    to deliver a signal inside the guarded window deterministically)."""
    from toolcall_sim.io.interrupt import sigterm_as_sigint

    sigterm_as_sigint()  # before the guard: a SIGTERM from here on goes where SIGINT goes
    previous = signal.signal(signal.SIGINT, _interrupted_while_starting)
    if _after_guard is not None:
        _after_guard()
    from toolcall_sim.cli.main import main as cli_main

    signal.signal(signal.SIGINT, previous)
    return cli_main(argv)
