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
2. ``map_seeds`` chooses the backend that runs the tasks: this process (``workers=1``,
   no cluster), a pool of ``workers`` local processes, or the Dask scheduler at
   ``cluster``.
3. Results are yielded in seed order, whatever order the tasks finish in: a finished
   task waits in a buffer until every earlier one is in. So the output of a run is the
   same for every backend and every number of workers. ``on_progress(done, total)`` is
   called as seeds finish (in completion order: a cluster's progress, not only the
   head of the queue).

The modules, each with its own theory of operation:

- sim/backends/task.py: what every backend shares: ``chunks``, ``run_range`` (what a
  worker runs for one task) and ``SeedFailed`` (a seed that raised, named).
- sim/backends/local.py: the local process pool (``LocalPool``: forked where safe;
  sim/ci/check_jobs.py runs its jobs on it too), its failures (``WorkerDied``) and Ctrl-C.
- sim/backends/dask_cluster.py: the Dask backend (``--cluster ADDRESS``, ``connect``,
  ``cluster_of``), its retries, and the watch that stops a run with no worker left
  (``NoWorkers``, exit 75). Named so that it is never taken for the ``dask`` package.

This module is the choice of backend alone: it imports the three, and none of them
imports it back (tests/test_import_circles.py).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from toolcall_sim.backends.dask_cluster import RETRIES, _map_cluster
from toolcall_sim.backends.local import _map_local
from toolcall_sim.backends.task import run_range


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
