"""Each ``toolcall-sim check`` job computed once per test module, for the tests whose
subject is what ``check`` does with the jobs' outputs (the fold, the baseline, the
judgment, the writers), not the jobs.

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
