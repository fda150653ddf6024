"""Seeds on local worker processes: the process pool (``LocalPool``), and Ctrl-C.

Theory of operation
-------------------
sim/backends/__init__.py ``map_seeds`` with ``workers`` > 1 and no cluster runs
``_map_local``: every task of ``chunks`` (sim/backends/task.py) is queued at once, three
numbers each, on a ``LocalPool`` of ``workers`` processes (forked where safe,
``_pool_context``; sim/ci/check_jobs.py runs its jobs on the pool too), and the results
come back in seed order, whatever order the tasks finish in.

Failures. A raised exception ends the run at once as ``SeedFailed`` (a retry in a
process of the same machine would run the same deterministic code), and a worker process
that dies names the seed range it held (``WorkerDied``).

Ctrl-C. The parent alone handles it, and SIGTERM the same way (sim/io/interrupt.py
Rules 1 and 4): workers ignore both (a Ctrl-C at a terminal reaches the whole process
group) and die with the parent, even a parent killed with SIGKILL. While the parent's own code touches the pool
it records SIGINT instead of raising it (``_DeferredSigint``) and raises
``KeyboardInterrupt`` where it holds no lock; it never blocks in
``concurrent.futures.wait``, which leaks its futures' locks when interrupted half-way
(the hang of ``swarm --workers 2`` after Ctrl-C: the executor's thread then waits for one
of those locks and ``shutdown`` for that thread, forever). An early stop (Ctrl-C, a
failed seed, a caller that stops reading) sets the workers' stop event and ends within
``STOP_GRACE_S + KILL_AFTER_S``: a worker still busy by then is killed. The seeds
yielded before the stop are the caller's; those under way are dropped (their results
would come after the caller stopped reading).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from toolcall_sim.backends import task
from toolcall_sim.backends.task import chunks, run_range


class WorkerDied(Exception):
    """A local worker process died (a signal, ``os._exit``) while it held these seeds."""


def _worker_init(stop, parent_pid=None, initializer=None, initargs: tuple = ()) -> None:  # LocalPool's initializer
    """Ctrl-C and SIGTERM are the parent's to handle: it stops handing out work, reports
    and ends the workers (a Ctrl-C at a terminal reaches the whole process group, workers
    too); a worker dies with its parent (sim/io/interrupt.py Rule 4)."""
    from toolcall_sim.io.interrupt import worker_signals

    task._STOP = stop  # what run_range (sim/backends/task.py) looks at between seeds
    worker_signals(parent_pid)
    if initializer is not None:
        initializer(*initargs)


# What a pool's worker imports before its first task (the forkserver's preload): the
# drivers whose functions the pools run.
WORKER_MODULES = ("toolcall_sim.drivers.swarm", "toolcall_sim.ci.check_jobs", "toolcall_sim.ci.compare", "toolcall_sim.ci.sweep", "toolcall_sim.model.explore")


def _pool_context():
    """``fork`` where it is safe, else ``forkserver`` on Linux and ``spawn`` elsewhere. A
    forked worker starts in milliseconds with the model already imported (a spawned one re-imports it: about 0.3 s each, which
    is the whole cost of a small swarm once seeds are cheap). Forking is safe because a
    seed's result depends only on its arguments, never on what the process ran before:
    tests/test_swarm.py checks ``--workers 1`` equals ``--workers 2``. Not forked: on
    macOS (system libraries are not fork-safe, and ``spawn`` is Python's default there),
    and from a process with other threads (a thread holding a lock at the fork leaves it
    held forever in the child: under pytest-xdist, for one, a worker has execnet's
    thread; a Dask client has its event loop thread)."""
    import threading

    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("spawn")
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    # Other threads here: fork from a server process instead. It is started once per
    # process (a fresh interpreter, one thread), imports the modules a worker needs once,
    # and forks each worker from itself: as safe as spawn, without each worker importing
    # the project again (about 0.4 s of CPU per worker, per pool: a test suite under
    # pytest-xdist starts dozens of pools).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(WORKER_MODULES))
    return context


def parent_pid(context) -> int | None:
    """The pid a worker of ``context`` checks it is still the child of once it has asked to
    die with its parent (sim/io/interrupt.py Rule 4): this process for a fork; none for a
    forkserver's worker, whose parent is the server (which ends with this process)."""
    return os.getpid() if context.get_start_method() == "fork" else None


# ---------------------------------------------------------------------------
# The local pool, and Ctrl-C
# ---------------------------------------------------------------------------

# How long an early stop (Ctrl-C, a failed seed, a caller that stops reading) waits for
# each worker to finish the seed it is running before it is killed (workers ignore
# SIGTERM: sim/io/interrupt.py Rule 4). Nothing is lost by the kill: the parent no longer reads results once it stops, and no worker
# writes a file (the commands write in the parent). A swarm seed mostly takes
# milliseconds, so its workers mostly exit within the grace (the stop event ends their
# chunk); a check job (an exploration) does not look at the stop event: it is killed.
STOP_GRACE_S = 1.0
KILL_AFTER_S = 2.0  # after SIGKILL, how long a worker may take to be gone before we stop waiting
# How often the parent waiting for a result wakes up, to let Python run the handler of a
# SIGINT that did not interrupt the wait: CPython runs a signal's handler in the main
# thread when it next executes bytecode, and a signal that lands just before a blocking
# lock wait starts (or in another thread) does not interrupt the wait. Without this, a
# Ctrl-C could wait for the next chunk to finish (seconds to minutes under load).
WAKE_EVERY_S = 0.2
_SIGINT = -1  # the wake-up that the parent's Ctrl-C handler puts among the finished task indices


class _DeferredSigint:
    """While the parent's own code touches the pool, SIGINT is recorded instead of
    raised, wakes the parent if it is waiting, and is handed to the handler it replaced
    (Python's: ``KeyboardInterrupt``) at a point where the parent holds no lock.

    Why: a ``KeyboardInterrupt`` may surface at any line of Python code, also inside
    ``concurrent.futures``. The hang this prevents (seen as a flaky ``swarm --workers 2``
    after Ctrl-C: the parent and both workers on futexes for good) was one such line:
    ``concurrent.futures.wait`` takes the condition lock of every future it waits for, one
    by one (``_AcquireFutures.__enter__``); interrupted half-way, it never releases those
    it holds. The executor's manager thread then blocks on one of them (cancelling or
    completing that future), ``shutdown(wait=True)`` joins the manager thread forever,
    and the workers wait forever for work. The parent here never calls ``wait``: it
    blocks on a ``queue.SimpleQueue`` fed by done-callbacks (its ``get`` holds nothing
    when interrupted, and its ``put`` may be called from a signal handler), and SIGINT
    reaches it only through ``deliver``.

    Outside the main thread (where handlers cannot be set, and where no
    ``KeyboardInterrupt`` is raised) it does nothing. Between uses, e.g. while a
    generator built on the pool is suspended at a ``yield``, the replaced handler is
    back, so the caller's own code sees Ctrl-C as it always did."""

    def __init__(self, wake: queue.SimpleQueue):
        self.wake = wake
        self.previous: Any = None
        self.pending = False
        self.installed = False
        self.depth = 0  # nested uses: the outermost installs and restores

    def __enter__(self) -> "_DeferredSigint":
        self.depth += 1
        if self.depth == 1 and threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._record)
            self.installed = True
        return self

    def _record(self, signum, frame) -> None:  # noqa: ARG002 - a signal handler's signature
        self.pending = True
        self.wake.put(_SIGINT)

    def __exit__(self, kind, value, tb) -> None:
        self.depth -= 1
        if self.depth > 0:
            return
        if self.installed:
            signal.signal(signal.SIGINT, self.previous)
            self.installed = False
        if kind is None:
            self.deliver()

    def deliver(self) -> None:
        """Hand a recorded SIGINT to the replaced handler: Python's raises
        ``KeyboardInterrupt`` here; a recording one (sim/io/output.py ``sigint_flag``) records."""
        if not self.pending:
            return
        self.pending = False
        handler = self.previous
        if callable(handler):
            handler(signal.SIGINT, None)
        elif handler != signal.SIG_IGN:  # SIG_DFL, or a handler set outside Python
            raise KeyboardInterrupt

    def discard(self) -> None:
        """Forget a recorded SIGINT: one that arrives while the pool is being stopped is
        part of stopping."""
        self.pending = False


class LocalPool:
    """``workers`` local processes (``_pool_context``: forked where safe) that run
    module-level calls; the parent alone handles Ctrl-C. Used as a context manager:

        with LocalPool(2) as pool:
            pool.submit_all([(fn, args), ...])
            for result in pool.results():   # in submission order
                ...

    Workers ignore SIGINT and SIGTERM (``_worker_init``) and see the stop event
    (sim/backends/task.py ``_STOP``) set once the parent stops early. The parent waits
    through ``_DeferredSigint`` (see there for the hang it prevents). Leaving the block normally (every result read) shuts the pool down and
    joins it; leaving it early (an exception, Ctrl-C, a generator closed before its end)
    sets the stop event, cancels the tasks not started, gives each worker up to
    ``STOP_GRACE_S`` to finish its current call and then kills it: an early stop always
    ends, whatever a worker is doing."""

    def __init__(self, workers: int, *, initializer: Callable | None = None, initargs: tuple = (),
                 preload: Callable[[], None] | None = None):
        self.context = _pool_context()
        if preload is not None and self.context.get_start_method() == "fork":
            preload()  # imported once before the fork, not in each worker
        self.stop = self.context.Event()
        self._finished: queue.SimpleQueue = queue.SimpleQueue()
        self._sigint = _DeferredSigint(self._finished)
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=self.context, initializer=_worker_init,
                                         initargs=(self.stop, parent_pid(self.context), initializer, initargs))
        self._futures: list = []
        self._collected = 0

    def __enter__(self) -> "LocalPool":
        return self

    def __exit__(self, kind, value, tb) -> None:
        self.close(early=kind is not None or self._collected < len(self._futures))

    def submit_all(self, calls: list[tuple[Callable, tuple]]) -> None:
        """Queue every call at once (the pool hands them out as workers free up). A
        finished call puts its index on the parent's queue (from the executor's thread)."""
        with self._sigint:
            for fn, args in calls:
                index = len(self._futures)
                future = self._pool.submit(fn, *args)
                self._futures.append(future)
                future.add_done_callback(lambda _future, index=index: self._finished.put(index))

    def results(self, on_finished: Callable[[int], None] | None = None,
                died: Callable[[int], str] | None = None) -> Iterator:
        """The calls' results in submission order (a finished one waits for every earlier
        one). ``on_finished(index)`` is called in completion order. An exception of a
        call is raised here; a worker that died is ``WorkerDied`` with ``died(index)``."""
        buffered: dict[int, Any] = {}
        head = 0
        while head < len(self._futures):
            with self._sigint:
                for index, result in self._next_finished(died):
                    buffered[index] = result
                    if on_finished is not None:
                        on_finished(index)
            while head in buffered:
                self._collected += 1
                yield buffered.pop(head)
                head += 1

    def _next_finished(self, died) -> list[tuple[int, Any]]:
        """Blocks until some call is finished; (index, result) of every finished one, in
        index order. A recorded Ctrl-C is delivered first (the results that came with it
        are not read)."""
        while True:
            try:
                indices = [self._finished.get(timeout=WAKE_EVERY_S)]
                break
            except queue.Empty:
                continue  # Python's handler of a Ctrl-C runs now, if one is waiting (see WAKE_EVERY_S)
        while not self._finished.empty():
            indices.append(self._finished.get())
        self._sigint.deliver()  # raises KeyboardInterrupt if one came (by the replaced handler)
        out = []
        for index in sorted(i for i in indices if i != _SIGINT):
            try:
                out.append((index, self._futures[index].result()))
            except BrokenProcessPool:
                raise WorkerDied(died(index) if died is not None else
                                 f"a worker process died while running task {index}") from None
        return out

    def close(self, early: bool) -> None:
        """Stop the pool: joined when every result was read; else stopped within
        ``STOP_GRACE_S + KILL_AFTER_S`` (see the class)."""
        with self._sigint:
            self.stop.set()  # a no-op after the last call; else the calls under way end early
            if not early:
                self._pool.shutdown(wait=True)
            else:
                processes = list((getattr(self._pool, "_processes", None) or {}).values())
                manager = getattr(self._pool, "_executor_manager_thread", None)
                self._pool.shutdown(wait=False, cancel_futures=True)
                _reap(processes, STOP_GRACE_S)
                if manager is not None:
                    # It ends once its workers are gone; joined so that the process is
                    # left with one thread (a later pool may fork: _pool_context).
                    manager.join(KILL_AFTER_S)
            self._sigint.discard()


def _reap(processes: list, grace_s: float) -> None:
    """Wait up to ``grace_s`` for ``processes`` to exit, then SIGKILL those left (they
    ignore SIGTERM: sim/io/interrupt.py Rule 4) and wait up to ``KILL_AFTER_S`` for them to
    go. Whether a process has exited is read from its sentinel (never ``waitpid``, which
    the executor's thread may be doing)."""
    from multiprocessing.connection import wait as wait_for

    alive = list(processes)
    for stage in ("grace", "kill"):
        if stage == "kill":
            for p in alive:
                p.kill()
        deadline = time.monotonic() + (grace_s if stage == "grace" else KILL_AFTER_S)
        while alive and (left := deadline - time.monotonic()) > 0:
            ready = wait_for([p.sentinel for p in alive], timeout=left)
            alive = [p for p in alive if p.sentinel not in ready]
        if not alive:
            return


# ---------------------------------------------------------------------------
# The backend: seeds on the pool
# ---------------------------------------------------------------------------


def _map_local(fn, first_seed, seeds, args, workers, on_progress, preload) -> Iterator:
    tasks = chunks(first_seed, seeds, workers)
    done = 0

    def finished(index: int) -> None:
        nonlocal done
        done += tasks[index][1]
        if on_progress is not None:
            on_progress(done, seeds)

    def died(index: int) -> str:
        first, n = tasks[index]
        return f"a worker process died while running seeds {first}..{first + n - 1} (or another chunk under way)"

    # Every chunk is queued at once (three numbers each); on an early stop the ones not
    # started are cancelled and the ones under way end after their current seed.
    with LocalPool(workers, preload=preload) as pool:
        pool.submit_all([(run_range, (fn, first, n, args)) for first, n in tasks])
        for results in pool.results(finished, died):
            yield from results
