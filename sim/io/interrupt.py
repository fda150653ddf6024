"""How a command stops: Ctrl-C and SIGTERM alike, the summary so far, no process left.

Theory of operation
-------------------
Rule 1. SIGTERM is Ctrl-C. ``sigterm_as_sigint`` (installed by sim/cli/launch.py before the
        commands are imported) makes a SIGTERM call whatever handles SIGINT at that
        moment: Python's default raises ``KeyboardInterrupt``; a recording handler
        (``sigint_flag`` below, sim/backends/local.py ``_DeferredSigint``) records it; SIG_IGN
        ignores it. So every place that polls or defers Ctrl-C polls or defers SIGTERM
        too, through one code path, and ``kill PID`` ends a command exactly as Ctrl-C
        does: the summary so far, finished files kept, exit 130 (sim/cli/main.py; one code for
        both, since the command handled the signal and ended cleanly either way).
Rule 2. A long loop that must stop only where stopping loses nothing records the signal
        instead of raising it (``sigint_flag``) and polls; files that belong together
        (a scenario and its counterexample, a report's renames) are written inside
        ``sigint_deferred``, which finishes the block and then raises.
Rule 3. ``Interrupted`` is a ``KeyboardInterrupt`` that carries what finished before it
        (``partial``), for a driver whose command prints the summary so far (check's
        finished jobs, compare's finished designs). Every ``except KeyboardInterrupt``
        still catches it. A run stopped for want of a cluster's workers
        (sim/backends/dask_cluster.py ``NoWorkers``, also a ``KeyboardInterrupt``) is folded the
        same way and ends with its own code: ``exit_code_of`` (75, not 130).
Rule 4. A worker process never outlives its command. It ignores SIGINT and SIGTERM
        (``worker_signals``): a terminal's Ctrl-C, or ``kill`` sent to the whole process
        group, reaches the workers too, and a worker that died of it before the parent
        knew it was stopping would read as a crash (exit 70) instead of an interrupt.
        The parent alone stops them: on an early stop sim/backends/local.py ``LocalPool``
        gives each worker a grace period and then SIGKILLs it (a worker writes no file,
        so nothing is lost). And a worker dies with its parent, even one killed with
        SIGKILL: on Linux it asks the kernel for SIGKILL when its parent ends
        (``prctl(PR_SET_PDEATHSIG)``, through ctypes), and exits at once if the parent is
        already gone by then. A forkserver's worker dies with the forkserver, which
        ends when the command's process does. Elsewhere (macOS) nothing is arranged:
        the parent's early stop still ends its workers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) with what finished before it (Rule 3); ``stop``: the interrupt
    it stands for, whose exit code it keeps (a cluster without workers: 75)."""

    def __init__(self, partial, stop: BaseException | None = None):
        super().__init__()
        self.partial = partial
        self.exit_code, self.why = exit_code_of(stop), why_of(stop)


def exit_code_of(stop: BaseException | None) -> int:
    """The exit code of a command that folded what finished before ``stop``: 130 for
    Ctrl-C or SIGTERM, the stop's own ``exit_code`` where it has one (Rule 3)."""
    return getattr(stop, "exit_code", 130)


def why_of(stop: BaseException | None) -> str:
    """Why a command stopped early, for its "interrupted (...)" line: Ctrl-C (SIGTERM
    included), or the stop's own ``why``."""
    return getattr(stop, "why", "Ctrl-C")


def _as_sigint(signum, frame) -> None:  # noqa: ARG001 - a signal handler's signature
    """Rule 1: a SIGTERM goes where a SIGINT would go now."""
    handler = signal.getsignal(signal.SIGINT)
    if handler == signal.SIG_IGN:
        return
    if callable(handler):
        handler(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt  # SIG_DFL, or a handler set outside Python


def sigterm_as_sigint() -> None:
    """Rule 1, for the whole process (the main thread only: handlers live there)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _as_sigint)


@contextlib.contextmanager
def sigint_flag():
    """While inside, Ctrl-C (SIGINT, and SIGTERM by Rule 1) is recorded instead of raised:
    yields a function that says whether one arrived, for a long loop to poll at a point
    where stopping loses nothing. Outside the main thread (where handlers cannot be set)
    it never says so."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    seen = [False]

    def record(signum, frame):  # noqa: ARG001 - the signal handler's signature
        seen[0] = True
    previous = signal.signal(signal.SIGINT, record)
    try:
        yield lambda: seen[0]
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def sigint_deferred():
    """Finish the block even on Ctrl-C or SIGTERM, then raise KeyboardInterrupt if one
    arrived: for writing the files that belong together (a scenario and its
    counterexample)."""
    with sigint_flag() as interrupted:
        yield
    if interrupted():
        raise KeyboardInterrupt


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent_pid: int | None = None) -> None:
    """Rule 4, in a worker: SIGKILL when the parent ends (Linux); if ``parent_pid`` is
    given and is no longer the parent (it ended before the request was made), exit now."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc prctl: the parent's early stop still ends us
        return
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def worker_signals(parent_pid: int | None = None) -> None:
    """Rule 4: what every worker process runs first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent(parent_pid)
