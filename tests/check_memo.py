"""Each ``toolcall-sim check`` job computed once per test module, and each exhaustive
exploration of a comparison world once per test process, for the tests whose subject is
what is done with them (the fold, the baseline, the judgment, the writers, a design's
verdicts), not the computation.

Theory of operation
-------------------
``sim.check.run_check`` hands its job list to ``sim.check_jobs.run_jobs`` and folds the
outputs. A job is a pure function of its arguments (the rule of sim/check_jobs.py that
lets the jobs run on any number of processes and give the same report), so a test that
runs the same suite several times (a baseline written, then judged; the same design
compared with other expectations) gets the same outputs from running each job once:
``each_job_once`` swaps ``run_jobs`` for one that looks each job up in ``memo`` by its
function and the ``repr`` of its arguments (frozen dataclasses and strings: the same
text for the same job) and runs only the jobs it has not seen, in this process.

Each output is handed back as a pickle round trip, a fresh copy as a pool worker hands
it back, so a fold that changes an output cannot change what the next run reads. The
swap holds only with one worker: a run with ``--workers 2`` is a test of the pool and
runs every job itself. Where a test compares two runs' bytes (determinism), at least one
of them computes its own jobs, so the comparison still compares two computations.

``each_exploration_once`` does the same one level down, for ``model.explore.explore``
(a pure function of the world, the bounds and the state bound: the explorer's
determinism rule) called without a stop rule, progress or edges, across modules:
tests/test_check_sections.py's one-worker check, tests/test_compare.py's command and
tests/test_designs.py's contract exhaust the same above-margin world under the same
designs (about a second each). ``EXPLORATIONS`` lives as long as the test process; the
modules share one xdist group (``XDIST_GROUP``, tests/conftest.py), so they share the
process, and the first one to explore a world computes it. The check sections' run
with two workers explores in its pool without it, and its report is compared byte for
byte with the one-worker run that filled ``EXPLORATIONS``.
"""

from __future__ import annotations

import pickle

import pytest

from sim import check


def each_job_once(patch: pytest.MonkeyPatch, memo: dict) -> None:
    """While ``patch`` holds, one-worker ``check`` runs take each job's output from
    ``memo`` (a dict the caller keeps, empty at first) and add the ones they compute."""
    real = check.run_jobs

    def once(jobs, workers, on_progress=None, cluster=None):
        if workers > 1 or cluster is not None:
            return real(jobs, workers, on_progress, cluster)
        outputs = []
        for fn, args in jobs:
            key = (fn.__module__, fn.__qualname__, repr(args))
            if key not in memo:
                memo[key] = pickle.dumps(real([(fn, args)], 1))
            outputs.extend(pickle.loads(memo[key]))
            if on_progress is not None:  # the progress the real driver reports, job by job
                from sim.check_jobs import _what

                on_progress(len(outputs), len(jobs), _what(outputs[-1]))
        return outputs

    patch.setattr(check, "run_jobs", once)


# (world config, bounds, max_states) as text -> the pickled ``model.explore.Result``,
# for the life of this test process (``each_exploration_once``).
EXPLORATIONS: dict = {}
# The xdist group of the modules that share ``EXPLORATIONS`` (tests/conftest.py).
ABOVE_MARGIN_GROUP = "explore-above-margin"


def each_exploration_once(patch: pytest.MonkeyPatch, memo: dict = EXPLORATIONS) -> None:
    """While ``patch`` holds, ``model.explore.explore`` without a stop rule, progress
    callback or edges hands back a copy of the result ``memo`` holds for the same world,
    bounds and state bound, computing it the first time."""
    import inspect

    from model import explore as ex

    real = ex.explore
    signature = inspect.signature(real)

    def once(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if a["stop_on"] is not None or a["on_progress"] is not None or a["keep_edges"]:
            return real(*args, **kwargs)
        key = repr((a["config"], a["bounds"], a["max_states"]))
        if key not in memo:
            memo[key] = pickle.dumps(real(*args, **kwargs))
        return pickle.loads(memo[key])

    patch.setattr(ex, "explore", once)
