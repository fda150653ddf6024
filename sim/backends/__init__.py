"""Where seeds run: this process, local worker processes, or a Dask distributed cluster.

Theory of operation
-------------------
Every command that runs many independent seeds (``swarm``, ``sweep``; the lead wires
``check`` and ``compare`` the same way) hands the work to one function, ``map_seeds(fn,
first_seed, seeds, args, workers=K, cluster=ADDRESS)``. ``fn(seed, *args)`` must be a
module-level function whose answer depends only on its arguments (each command's Rule 1:
no global ``random``, no wall clock, no state carried from one seed to the next), so it
does not matter which process runs a seed, or what that process ran before. A "seed" is
just an integer index: the sweep numbers (point, variant, seed) triples and decodes them
in its ``fn``.

1. The seeds are cut into ranges of consecutive seeds (``chunks``: a function of the
   arguments only). A task is one range, sent as three numbers plus ``args`` and
   answered with the list of its seeds' results; a cheap seed costs no round trip.
2. The backend runs the tasks: in this process (``workers=1``, no cluster), in a pool of
   ``workers`` local processes (``LocalPool``: forked where safe, ``_pool_context``;
   sim/ci/check_jobs.py runs its jobs on it too), or on the Dask
   scheduler at ``cluster`` (``distributed.Client(address)``; imported only then, so no
   other command pays for importing Dask).
3. Results are yielded in seed order, whatever order the tasks finish in: a finished
   task waits in a buffer until every earlier one is in. So the output of a run is the
   same for every backend and every number of workers. ``on_progress(done, total)`` is
   called as seeds finish (in completion order: a cluster's progress, not only the
   head of the queue).

Failures. ``run_range`` catches an exception of ``fn`` at the seed that raised it and
raises ``SeedFailed`` naming that seed, so the error can say which seed. On a cluster,
Dask retries a task that raised (``retries=RETRIES``) and reschedules one whose worker
died (up to the scheduler's ``allowed-failures``). A task that still fails is split into
single-seed tasks (each with the same retries), so a worker death pins down the seed that
kills its worker; a seed that keeps failing raises ``SeedFailed``: a harness error (exit
70) naming the seed, never a silently missing result. Locally, a raised exception ends
the run at once as ``SeedFailed`` (a retry in a process of the same machine would run
the same deterministic code), and a worker process that dies names the seed range it
held (``WorkerDied``).

Ctrl-C, locally. The parent alone handles it, and SIGTERM the same way (sim/io/interrupt.py
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

A cluster with no worker left. While results are awaited (``_WorkerWatch``), the
scheduler's worker count is asked for every ``WATCH_EVERY_S``. When no worker has been on
the scheduler for ``NOTICE_AFTER_S``, one line on stderr says so (``no workers on ADDRESS
for 2 s; waiting up to 60 s ...``), and the run goes on if one comes back. When none has
come back within the grace time (``NO_WORKERS_GRACE_S``, or the environment's
``TOOLCALL_SIM_NO_WORKERS_GRACE_S``; counted from the moment the last one left), one more
line says so and ``NoWorkers`` is raised: a ``KeyboardInterrupt``, so every command folds
what finished as it does for Ctrl-C (the summary so far, in seed order), then exits
``EXIT_NO_WORKERS`` (75, sysexits' "temporary failure": the same command may succeed
once workers are back) instead of 130. Without the watch, Dask waits for workers for
ever and the command printed nothing.

Cluster address. ``check_address`` refuses a malformed address before any work (bad
input, exit 2). ``local`` starts a ``distributed.LocalCluster`` of ``--workers``
processes on this machine (``LocalDaskCluster``): Dask's whole path, no scheduler to run. A well-formed address that no scheduler answers within
``CONNECT_TIMEOUT_S`` is ``ClusterUnreachable``, also exit 2: the address
is the user's input, like a scenario path that does not exist, and nothing was run
(both are ``ScenarioError``s, which sim/cli/main.py turns into one line and exit 2).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from toolcall_sim.world.scenario_spec import ScenarioError

# Chunks: a task is at most MAX_CHUNK_SEEDS seeds. They start at one seed and double
# (the first result comes as soon as one seed is done, as with one process), and end at
# about 1/CHUNKS_PER_WORKER of what is left per worker, so they shrink towards the end
# (guided scheduling). Seeds are far from equal (a failing swarm seed costs up to
# MAX_MINIMIZE_RUNS re-runs): big chunks in the middle keep the round trips few, small
# ones at the end keep one worker from finishing alone.
MAX_CHUNK_SEEDS = 32
CHUNKS_PER_WORKER = 4
RETRIES = 2  # Dask retries of a task that raised, before it is split into single seeds
CONNECT_TIMEOUT_S = 10  # how long a scheduler may take to answer before it is unreachable
# How many workers a cluster run plans its chunks for, when the scheduler reports none yet.
DEFAULT_CLUSTER_WORKERS = 2
# A cluster with no worker left (theory of operation): asked every WATCH_EVERY_S, said
# after NOTICE_AFTER_S without one, given up after the grace time without one. 60 s lets a
# nanny or an orchestrator restart a worker; the environment variable lets a user whose
# workers take longer to come back (a batch queue) wait longer, or a test wait less.
WATCH_EVERY_S = 1.0
NOTICE_AFTER_S = 2.0
NO_WORKERS_GRACE_S = 60.0
GRACE_ENV = "TOOLCALL_SIM_NO_WORKERS_GRACE_S"
MAX_GRACE_S = 86_400.0  # a day: beyond it a typo, not a plan
EXIT_NO_WORKERS = 75  # sim/world/inputs.py names it too (the exit codes live there)
_POLL_S = 0.05  # how often a finished task is looked for between two watches

ENVIRONMENT_HINT = "pip install toolcall-sim where `dask scheduler` and `dask worker` run"
_ADDRESS = re.compile(r"^(tcp|tls|ws|wss|inproc)://\S+$")


class SeedFailed(Exception):
    """A seed whose run raised on every try: a harness error (exit 70) naming the seed."""

    def __init__(self, seed: int, error: str, tries: int = 1):
        super().__init__(f"seed {seed} failed on every try ({tries}): {error}")
        self.seed, self.error, self.tries = seed, error, tries

    def __reduce__(self):  # picklable with its fields (it crosses process boundaries)
        return SeedFailed, (self.seed, self.error, self.tries)


class WorkerDied(Exception):
    """A local worker process died (a signal, ``os._exit``) while it held these seeds."""


class BadAddress(ScenarioError):
    """A malformed ``--cluster`` address: one line, exit 2 (bad input, like every
    ``ScenarioError``; sim/commands would be a circular import from here)."""


class ClusterUnreachable(BadAddress):
    """A well-formed ``--cluster`` address that no scheduler answered: one line, exit 2."""


class NoWorkers(KeyboardInterrupt):
    """No worker on the scheduler for the whole grace time: the run stops as on Ctrl-C
    (every caller folds what finished), with its own exit code (``EXIT_NO_WORKERS``)."""

    exit_code = EXIT_NO_WORKERS
    why = "no workers left on the cluster"  # the commands' "interrupted (...)" line


def no_workers_grace_s(environ=os.environ) -> float:
    """The grace time: ``TOOLCALL_SIM_NO_WORKERS_GRACE_S`` (seconds, 0..a day), or 60 s.
    A value that is not such a number is one line of bad input (exit 2), not ignored."""
    text = environ.get(GRACE_ENV)
    if text is None or not text.strip():
        return NO_WORKERS_GRACE_S
    try:
        grace = float(text)
    except ValueError:
        grace = -1.0
    if not 0 <= grace <= MAX_GRACE_S:  # also refuses nan
        raise BadAddress(f"{GRACE_ENV}: not a number of seconds from 0 to {MAX_GRACE_S:.0f}: {text!r}")
    return grace


def _seconds(value: float) -> str:
    """Seconds for a line: whole ones, with a tenth below 10 s (a grace of 0.5 s is not 0)."""
    return f"{round(value, 1):g}" if value < 10 else f"{value:.0f}"


class _WorkerWatch:
    """Asks the scheduler for its worker count (at most every ``WATCH_EVERY_S``) while a
    cluster run waits, says when none is left, and raises ``NoWorkers`` when none came
    back within the grace time (theory of operation). ``clock`` and ``say`` are the
    wall clock and stderr, replaceable by a test."""

    def __init__(self, count: Callable[[], int], address: str, grace_s: float,
                 clock: Callable[[], float] = time.monotonic, say: Callable[[str], None] | None = None):
        self.count, self.address, self.grace_s, self.clock = count, address, grace_s, clock
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.asked_at = None  # when the count was last asked for
        self.none_since = None  # when the count was first seen to be 0 (None: workers are there)
        self.told = False

    def check(self) -> None:
        now = self.clock()
        if self.asked_at is not None and now - self.asked_at < WATCH_EVERY_S:
            return
        self.asked_at = now
        workers = self.count()
        if workers:
            if self.told:
                self.say(f"toolcall-sim: {workers} worker(s) back on {self.address}; the run goes on")
            self.none_since, self.told = None, False
            return
        if self.none_since is None:
            self.none_since = now
        gone_s = now - self.none_since
        if not self.told and gone_s >= min(NOTICE_AFTER_S, self.grace_s):
            self.told = True
            self.say(f"toolcall-sim: no workers on {self.address} for {_seconds(gone_s)} s; waiting up to "
                     f"{_seconds(self.grace_s)} s for one to come back ({GRACE_ENV})")
        if self.told and gone_s >= self.grace_s:
            raise NoWorkers(f"no workers on {self.address} for {_seconds(gone_s)} s")

    def wait(self, ready: Callable[[], bool]) -> None:
        """Return when ``ready()``; watch the workers meanwhile."""
        while not ready():
            self.check()
            time.sleep(_POLL_S)


def chunks(first_seed: int, seeds: int, workers: int) -> list[tuple[int, int]]:
    """(first seed, count) of each task, in seed order; a function of the arguments only
    (the output would not change with another split, but a test can pin this one)."""
    out = []
    seed, left, ramp = first_seed, seeds, 1
    while left > 0:
        n = max(1, min(ramp, MAX_CHUNK_SEEDS, left // (CHUNKS_PER_WORKER * max(1, workers))))
        out.append((seed, n))
        seed, left, ramp = seed + n, left - n, ramp * 2
    return out


LOCAL = "local"  # ``--cluster local``: a Dask LocalCluster of ``--workers`` processes on this machine


def check_address(address: str, flag: str = "--cluster") -> str:
    """A Dask scheduler address: ``tcp://host:port`` (or tls://, ws://, wss://,
    inproc://), or ``local``. Anything else is one line of bad input."""
    if isinstance(address, str) and address.strip() == LOCAL:
        return LOCAL
    if not isinstance(address, str) or not _ADDRESS.match(address.strip()):
        raise BadAddress(f"{flag}: not a Dask scheduler address {address!r} (use e.g. tcp://host:8786, or local)")
    return address.strip()


# ---------------------------------------------------------------------------
# What a worker runs
# ---------------------------------------------------------------------------


_STOP = None  # in a local worker: the pool's stop event (set by the parent on Ctrl-C or an early stop)


def run_range(fn: Callable, first_seed: int, seeds: int, args: tuple = ()) -> list:
    """Module level: one task, on any backend. The results of ``fn(seed, *args)`` for the
    range, in order. An exception becomes ``SeedFailed`` naming its seed. Once the local
    parent has stopped reading, the rest of the range is skipped: a Ctrl-C waits for one
    seed per worker (at most ``STOP_GRACE_S``: ``LocalPool``), not a whole chunk."""
    results = []
    for seed in range(first_seed, first_seed + seeds):
        if _STOP is not None and _STOP.is_set():
            break
        try:
            results.append(fn(seed, *args))
        except SeedFailed:
            raise
        except Exception as err:  # noqa: BLE001 - named by its seed, then reported as a harness error
            raise SeedFailed(seed, f"{type(err).__name__}: {' '.join(str(err).split())}") from None
    return results


def _worker_init(stop, parent_pid=None, initializer=None, initargs: tuple = ()) -> None:  # LocalPool's initializer
    """Ctrl-C and SIGTERM are the parent's to handle: it stops handing out work, reports
    and ends the workers (a Ctrl-C at a terminal reaches the whole process group, workers
    too); a worker dies with its parent (sim/io/interrupt.py Rule 4)."""
    from toolcall_sim.io.interrupt import worker_signals

    global _STOP
    _STOP = stop
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

    Workers ignore SIGINT and SIGTERM (``_worker_init``) and see ``_STOP`` set once the parent stops
    early. The parent waits through ``_DeferredSigint`` (see there for the hang it
    prevents). Leaving the block normally (every result read) shuts the pool down and
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
# The one entry point
# ---------------------------------------------------------------------------


def map_seeds(fn: Callable, first_seed: int, seeds: int, args: tuple = (), *, workers: int = 1,
              cluster: Any = None, on_progress: Callable[[int, int], None] | None = None,
              retries: int = RETRIES, preload: Callable[[], None] | None = None, unit: str = "seed") -> Iterator:
    """``fn(seed, *args)`` for seeds ``first_seed .. first_seed + seeds - 1``, yielded in
    seed order, one at a time (a caller that stops early keeps every finished one).
    ``cluster``: a scheduler address (or a ``distributed.Client``, for tests and for
    callers that reuse one); otherwise ``workers`` local processes. ``preload``: imports
    the parent runs once before forking, so forked workers do not each import them.
    ``unit``: what one index is to the caller (a ``seed``; ``check``'s ``job``, the
    sweep's ``run``), the word of the line that says what a stopped run keeps."""
    if cluster is not None:
        yield from _map_cluster(fn, first_seed, seeds, args, cluster, on_progress, retries, unit)
        return
    if workers <= 1 or seeds <= 1:
        for i, seed in enumerate(range(first_seed, first_seed + seeds)):
            yield run_range(fn, seed, 1, args)[0]
            if on_progress is not None:
                on_progress(i + 1, seeds)
        return
    yield from _map_local(fn, first_seed, seeds, args, min(workers, seeds), on_progress, preload)


def _in_order(tasks: list[tuple[int, int]], on_progress, total: int, next_done) -> Iterator:
    """Yield the results of ``tasks`` in task order: ``next_done()`` returns finished
    (task index, results) pairs in completion order; each is buffered until every earlier
    task is in (Rule 3 of the theory of operation)."""
    buffered: dict[int, list] = {}
    head, done = 0, 0
    while head < len(tasks):
        for index, results in next_done():
            buffered[index] = results
            done += tasks[index][1]
            if on_progress is not None:
                on_progress(done, total)
        while head in buffered:
            yield from buffered.pop(head)
            head += 1


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


# ---------------------------------------------------------------------------
# Dask
# ---------------------------------------------------------------------------


class LocalDaskCluster:
    """``--cluster local``: a Dask ``LocalCluster`` of ``workers`` processes (one thread
    each) and its client, closed together. The same path through Dask as a remote
    cluster (pickled tasks, retries, a worker that dies is replaced), on one machine."""

    def __init__(self, workers: int):
        import logging

        from distributed import Client, LocalCluster

        # Every log of the cluster silenced, errors too: this cluster is the command's own,
        # and what matters of it the command says in its own lines (a failed seed, exit
        # 70). An interrupted gather made its scheduler log "Couldn't gather keys" and
        # "Closed comm" with tracebacks on about half the Ctrl-Cs (distributed 2026.8.0),
        # which broke the one-line rule of an interrupted command.
        # Its dashboard listens on the loopback only, at a port of the system's choosing:
        # ":0" listened on every interface, so anyone on the network could watch (and the
        # dashboard has no login). Nobody is told its port; it is there for a deliberate
        # look (docs/pages/how-to/dask-cluster.md).
        self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL + 1)
        self.client = Client(self.cluster, set_as_default=False)

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


def add_cluster_flag(parser, what: str = "the work") -> None:
    """``--cluster ADDRESS`` as every command that can use a cluster takes it."""
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help=f"run {what} on a Dask scheduler, e.g. tcp://host:8786, or `local` for a "
                             f"LocalCluster of --workers processes (the same report as without it)")


def check_cluster_flags(address: str, workers: int, command: str) -> None:
    """``--cluster`` beside ``--workers``, checked before anything runs: a malformed
    address, or ``--workers`` beside a scheduler that brings its own workers, is one line
    of bad input (exit 2)."""
    check_address(address, f"{command}: --cluster")
    if workers > 1 and address.strip() != LOCAL:
        raise BadAddress(f"{command}: --workers: not used with --cluster (the cluster's workers run the work; "
                         "with --cluster local it is the number of Dask workers)")


@contextmanager
def cluster_of(address: str | None, workers: int, command: str):
    """A command's ``--cluster``: checked (a malformed address, or ``--workers`` beside a
    scheduler that brings its own workers, is one line and exit 2), connected before the
    command prints anything (an unreachable scheduler is one line too), closed at the
    end. None without the flag."""
    if address is None:
        yield None
        return
    check_cluster_flags(address, workers, command)
    cluster = connect(address, f"{command}: --cluster", workers)
    try:
        yield cluster
    finally:
        cluster.close()


class _DropSyncCancelNameError:
    """A logging filter for distributed's known race (seen with distributed 2026.8.0):
    ``distributed.utils.sync`` answers a Ctrl-C by scheduling ``cancel``, which reads its
    ``future`` before it is bound when the interrupt came early, and tornado logs that
    NameError with a traceback. The interrupt itself is handled (exit 130 with the summary
    so far); the traceback would break the one-line rule, so only that record is dropped."""

    @staticmethod
    def filter(record) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, NameError) and "'future'" in str(exc) and "sync.<locals>.cancel" in record.getMessage())


def _quiet_known_dask_races() -> None:
    import logging

    logger = logging.getLogger("tornado.application")
    if not any(isinstance(f, _DropSyncCancelNameError) for f in logger.filters):
        logger.addFilter(_DropSyncCancelNameError())


def connect(address: str, flag: str = "--cluster", workers: int = 2):
    """A ``distributed.Client`` for ``address`` (for ``local``, a ``LocalDaskCluster`` of
    ``workers`` processes), or ``ClusterUnreachable`` (one line)."""
    address = check_address(address, flag)
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is a dependency
        raise BadAddress(f"{flag}: the distributed package is not installed (pip install distributed)") from None
    _quiet_known_dask_races()
    if address == LOCAL:
        return LocalDaskCluster(workers)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise ClusterUnreachable(f"{flag}: no Dask scheduler answered at {address} within "
                                 f"{CONNECT_TIMEOUT_S}s ({type(err).__name__}: {' '.join(str(err).split())})") from None


def _map_cluster(fn, first_seed, seeds, args, cluster, on_progress, retries, unit: str = "seed") -> Iterator:
    from distributed import as_completed

    own = isinstance(cluster, str)
    if own:
        cluster = connect(cluster)
    client = cluster.client if isinstance(cluster, LocalDaskCluster) else cluster
    try:
        watch = _WorkerWatch(lambda: len(client.nthreads()), client.scheduler.address, no_workers_grace_s())
        workers = len(client.nthreads()) or DEFAULT_CLUSTER_WORKERS
        tasks = chunks(first_seed, seeds, workers)
        futures = {client.submit(run_range, fn, first, n, args, retries=retries, pure=False): i
                   for i, (first, n) in enumerate(tasks)}
        stream = as_completed(list(futures), loop=client.loop)
        done = 0  # seeds finished, in order or not

        def next_done():
            nonlocal done
            watch.wait(stream.has_ready)  # never blocks in next(): no worker would mean for ever
            future = next(stream)
            index = futures[future]
            first, n = tasks[index]
            results = future.result() if future.status == "finished" else \
                _single_seeds(client, fn, first, n, args, retries, future, watch)
            done += n
            return [(index, results)]

        yielded = 0
        try:
            for result in _in_order(tasks, on_progress, seeds, next_done):
                yield result
                yielded += 1
        except NoWorkers as stop:
            # The seeds yielded are the caller's (its summary so far); those finished past
            # a seed still missing are dropped, as on Ctrl-C (the output is a prefix in
            # seed order, the same for every backend).
            watch.say(f"toolcall-sim: {stop}: stopped; {yielded} of {seeds} {unit}(s) finished in order are kept"
                      + (f", {done - yielded} finished after a missing one are not" if done > yielded else "")
                      + f" (exit {EXIT_NO_WORKERS})")
            raise
        finally:
            client.cancel(list(futures))
    finally:
        if own:
            cluster.close()


def _single_seeds(client, fn, first_seed, seeds, args, retries, failed, watch: _WorkerWatch) -> list:
    """A task that failed after its retries (an exception, or workers that kept dying
    under it): its seeds again, one task each, so the seed that fails is named. The
    results of the seeds that pass are kept; the first seed that fails raises."""
    futures = [client.submit(run_range, fn, seed, 1, args, retries=retries, pure=False)
               for seed in range(first_seed, first_seed + seeds)]
    results = []
    for seed, future in zip(range(first_seed, first_seed + seeds), futures):
        try:
            watch.wait(future.done)  # a split task waits for workers as the whole one did
            results.extend(future.result())
        except KeyboardInterrupt:  # Ctrl-C, or NoWorkers: the rest of the split is not wanted
            client.cancel(futures)
            raise
        except SeedFailed as err:
            client.cancel(futures)
            raise SeedFailed(err.seed, err.error, retries + 1) from None
        except Exception as err:  # noqa: BLE001 - KilledWorker and the like: the seed's worker kept dying
            client.cancel(futures)
            text = " ".join(str(err).split())
            if "deserializ" in text:
                # The scheduler (it unpickles the task graph) or a worker lacks this code.
                text += f" (the Dask scheduler and workers need the same toolcall-sim installed: {ENVIRONMENT_HINT})"
            raise SeedFailed(seed, f"{type(err).__name__}: {text}", retries + 1) from None
    return results
