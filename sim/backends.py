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
   ``workers`` local processes (forked where safe: ``_pool_context``), or on the Dask
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

Cluster address. ``check_address`` refuses a malformed address before any work (bad
input, exit 2). ``local`` starts a ``distributed.LocalCluster`` of ``--workers``
processes on this machine (``LocalDaskCluster``): Dask's whole path, no scheduler to run. A well-formed address that no scheduler answers within
``CONNECT_TIMEOUT_S`` is ``ClusterUnreachable``, also exit 2: the address
is the user's input, like a scenario path that does not exist, and nothing was run
(both are ``ScenarioError``s, which sim/cli.py turns into one line and exit 2).
"""

from __future__ import annotations

import multiprocessing
import re
import sys
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from .scenario_spec import ScenarioError

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
    seed per worker, not a whole chunk."""
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


def _worker_init(stop) -> None:  # module level: the local pool's initializer
    """Ctrl-C is the parent's to handle: it stops handing out seeds and reports."""
    import signal

    global _STOP
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pool_context():
    """``fork`` where it is safe, else ``spawn``. A forked worker starts in milliseconds
    with the model already imported (a spawned one re-imports it: about 0.3 s each, which
    is the whole cost of a small swarm once seeds are cheap). Forking is safe because a
    seed's result depends only on its arguments, never on what the process ran before:
    tests/test_swarm.py checks ``--workers 1`` equals ``--workers 2``. Not forked: on
    macOS (system libraries are not fork-safe, and ``spawn`` is Python's default there),
    and from a process with other threads (a thread holding a lock at the fork leaves it
    held forever in the child: under pytest-xdist, for one, a worker has execnet's
    thread; a Dask client has its event loop thread)."""
    import threading

    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


# ---------------------------------------------------------------------------
# The one entry point
# ---------------------------------------------------------------------------


def map_seeds(fn: Callable, first_seed: int, seeds: int, args: tuple = (), *, workers: int = 1,
              cluster: Any = None, on_progress: Callable[[int, int], None] | None = None,
              retries: int = RETRIES, preload: Callable[[], None] | None = None) -> Iterator:
    """``fn(seed, *args)`` for seeds ``first_seed .. first_seed + seeds - 1``, yielded in
    seed order, one at a time (a caller that stops early keeps every finished one).
    ``cluster``: a scheduler address (or a ``distributed.Client``, for tests and for
    callers that reuse one); otherwise ``workers`` local processes. ``preload``: imports
    the parent runs once before forking, so forked workers do not each import them."""
    if cluster is not None:
        yield from _map_cluster(fn, first_seed, seeds, args, cluster, on_progress, retries)
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
    context = _pool_context()
    if preload is not None and context.get_start_method() == "fork":
        preload()  # imported once before the fork, not in each worker
    stop = context.Event()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init,
                               initargs=(stop,))
    tasks = chunks(first_seed, seeds, workers)
    try:
        # Every chunk is queued at once (three numbers each); the pool hands them out as
        # workers free up. On Ctrl-C the ones not started are cancelled below.
        futures = {pool.submit(run_range, fn, first, n, args): i for i, (first, n) in enumerate(tasks)}
        waiting = set(futures)

        def next_done():
            finished, _ = wait(waiting, return_when=FIRST_COMPLETED)
            out = []
            for future in sorted(finished, key=futures.__getitem__):
                waiting.discard(future)
                index = futures[future]
                try:
                    out.append((index, future.result()))
                except BrokenProcessPool:
                    first, n = tasks[index]
                    raise WorkerDied(f"a worker process died while running seeds {first}..{first + n - 1} "
                                     f"(or another chunk under way)") from None
            return out

        yield from _in_order(tasks, on_progress, seeds, next_done)
    finally:
        stop.set()  # a no-op after the last chunk; else the chunks under way end early
        pool.shutdown(wait=True, cancel_futures=True)


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

        self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address=":0", silence_logs=logging.ERROR)
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


def connect(address: str, flag: str = "--cluster", workers: int = 2):
    """A ``distributed.Client`` for ``address`` (for ``local``, a ``LocalDaskCluster`` of
    ``workers`` processes), or ``ClusterUnreachable`` (one line)."""
    address = check_address(address, flag)
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is a dependency
        raise BadAddress(f"{flag}: the distributed package is not installed (pip install distributed)") from None
    if address == LOCAL:
        return LocalDaskCluster(workers)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise ClusterUnreachable(f"{flag}: no Dask scheduler answered at {address} within "
                                 f"{CONNECT_TIMEOUT_S}s ({type(err).__name__}: {' '.join(str(err).split())})") from None


def _map_cluster(fn, first_seed, seeds, args, cluster, on_progress, retries) -> Iterator:
    from distributed import as_completed

    own = isinstance(cluster, str)
    if own:
        cluster = connect(cluster)
    client = cluster.client if isinstance(cluster, LocalDaskCluster) else cluster
    try:
        workers = len(client.scheduler_info().get("workers", {})) or DEFAULT_CLUSTER_WORKERS
        tasks = chunks(first_seed, seeds, workers)
        futures = {client.submit(run_range, fn, first, n, args, retries=retries, pure=False): i
                   for i, (first, n) in enumerate(tasks)}
        stream = as_completed(list(futures), loop=client.loop)

        def next_done():
            future = next(stream)
            index = futures[future]
            if future.status == "finished":
                return [(index, future.result())]
            first, n = tasks[index]
            return [(index, _single_seeds(client, fn, first, n, args, retries, future))]

        try:
            yield from _in_order(tasks, on_progress, seeds, next_done)
        finally:
            client.cancel(list(futures))
    finally:
        if own:
            cluster.close()


def _single_seeds(client, fn, first_seed, seeds, args, retries, failed) -> list:
    """A task that failed after its retries (an exception, or workers that kept dying
    under it): its seeds again, one task each, so the seed that fails is named. The
    results of the seeds that pass are kept; the first seed that fails raises."""
    futures = [client.submit(run_range, fn, seed, 1, args, retries=retries, pure=False)
               for seed in range(first_seed, first_seed + seeds)]
    results = []
    for seed, future in zip(range(first_seed, first_seed + seeds), futures):
        try:
            results.extend(future.result())
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
