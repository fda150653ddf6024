"""Seeds on a Dask distributed cluster (``--cluster ADDRESS``), and the watch for a
cluster with no worker left.

Theory of operation
-------------------
sim/backends/__init__.py ``map_seeds`` with a cluster runs ``_map_cluster``: each task
of ``chunks`` (sim/backends/task.py) is submitted to the Dask scheduler at ``cluster``
(``distributed.Client(address)``: Dask is imported only here, and only then, so no other
command pays for importing it), and the results are yielded in seed order
(``_in_order``: a finished task waits in a buffer until every earlier one is in).

Failures. Dask retries a task that raised (``retries=RETRIES``) and reschedules one whose
worker died (up to the scheduler's ``allowed-failures``). A task that still fails is
split into single-seed tasks (each with the same retries), so a worker death pins down
the seed that kills its worker; a seed that keeps failing raises ``SeedFailed``: a
harness error (exit 70) naming the seed, never a silently missing result.

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

import os
import re
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from toolcall_sim.backends.task import SeedFailed, chunks, run_range
from toolcall_sim.world.scenario_spec import ScenarioError

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
# The cluster, and seeds on it
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


def _in_order(tasks: list[tuple[int, int]], on_progress, total: int, next_done) -> Iterator:
    """Yield the results of ``tasks`` in task order: ``next_done()`` returns finished
    (task index, results) pairs in completion order; each is buffered until every earlier
    task is in (Rule 3 of sim/backends/__init__.py's theory of operation)."""
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
