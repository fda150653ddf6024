"""A task, on every backend: a range of consecutive seeds, how the seeds are cut into
tasks, and what a worker runs for one.

Theory of operation
-------------------
sim/backends/__init__.py ``map_seeds`` hands the seeds to a backend: local worker
processes (sim/backends/local.py) or a Dask cluster (sim/backends/dask_cluster.py). Both
cut the seeds the same way and run the same function in their workers; that shared part
is this module, which both import (the package's ``__init__`` imports the two backends,
so neither may import it back: tests/test_import_circles.py).

1. ``chunks`` cuts the seeds into ranges of consecutive seeds, a function of the
   arguments only. A task is one range, sent as three numbers plus ``args`` and
   answered with the list of its seeds' results; a cheap seed costs no round trip.
2. ``run_range`` is what a worker runs for one task, on any backend (module level: a
   forked, spawned or Dask worker finds it by its name). An exception of ``fn`` is
   caught at the seed that raised it and raised as ``SeedFailed`` naming that seed
   (picklable with its fields: it crosses process boundaries), so the error can say
   which seed. In a local worker ``_STOP`` is the pool's stop event (set there by
   sim/backends/local.py ``_worker_init``): once the parent has stopped reading, the
   rest of the range is skipped.
"""

from __future__ import annotations

from typing import Callable

# Chunks: a task is at most MAX_CHUNK_SEEDS seeds. They start at one seed and double
# (the first result comes as soon as one seed is done, as with one process), and end at
# about 1/CHUNKS_PER_WORKER of what is left per worker, so they shrink towards the end
# (guided scheduling). Seeds are far from equal (a failing swarm seed costs up to
# MAX_MINIMIZE_RUNS re-runs): big chunks in the middle keep the round trips few, small
# ones at the end keep one worker from finishing alone.
MAX_CHUNK_SEEDS = 32
CHUNKS_PER_WORKER = 4


class SeedFailed(Exception):
    """A seed whose run raised on every try: a harness error (exit 70) naming the seed."""

    def __init__(self, seed: int, error: str, tries: int = 1):
        super().__init__(f"seed {seed} failed on every try ({tries}): {error}")
        self.seed, self.error, self.tries = seed, error, tries

    def __reduce__(self):  # picklable with its fields (it crosses process boundaries)
        return SeedFailed, (self.seed, self.error, self.tries)


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


# ---------------------------------------------------------------------------
# What a worker runs
# ---------------------------------------------------------------------------


_STOP = None  # in a local worker: the pool's stop event (set by the parent on Ctrl-C or an early stop)


def run_range(fn: Callable, first_seed: int, seeds: int, args: tuple = ()) -> list:
    """Module level: one task, on any backend. The results of ``fn(seed, *args)`` for the
    range, in order. An exception becomes ``SeedFailed`` naming its seed. Once the local
    parent has stopped reading, the rest of the range is skipped: a Ctrl-C waits for one
    seed per worker (at most ``STOP_GRACE_S``: sim/backends/local.py ``LocalPool``), not a
    whole chunk."""
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
