"""Each ``toolcall-sim check`` job computed once per test module, and each exhaustive
exploration of a comparison world once per test process, for the tests whose subject is
what is done with them (the fold, the baseline, the judgment, the writers, a design's
verdicts), not the computation.

Theory of operation
-------------------
``toolcall_sim.ci.check.run_check`` hands its job list to ``toolcall_sim.ci.check_jobs.run_jobs`` and folds the
outputs. A job is a pure function of its arguments (the rule of sim/ci/check_jobs.py that
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

``each_exploration_once`` does the same one level down, for ``toolcall_sim.model.explore.explore``
(a pure function of the world, the bounds and the state bound: the explorer's
determinism rule) called without a stop rule, progress or edges, across modules:
tests/test_check_sections.py's one-worker check, tests/test_compare.py's command and
tests/test_designs.py's contract exhaust the same above-margin world under the same
designs (about a second each). ``EXPLORATIONS`` lives as long as the test process; the
modules share one xdist group (``XDIST_GROUP``, tests/conftest.py), so they share the
process, and the first one to explore a world computes it. The check sections' run
with two workers explores in its pool without it, and its report is compared byte for
byte with the one-worker run that filled ``EXPLORATIONS``.

``checked_searches`` runs small searches with ``CHECK_MEMO`` on (model/explore_context.py:
every replayed step applied for real, every memoized expansion computed again, every
monitor's verdict compared with the whole ghost history's) once per test process for
the two modules that read what those checks saw: tests/test_explore_parallel.py (which
footprints were replayed, how many expansions were checked, the memo's hits) and
tests/test_monitor.py (how many verdicts were compared, a sample of ghost histories).
One search serves both when they name the same world, variant, time in flight and state
bound: the checks are the same switch, and each hook only records. Each module reads
only its own cases' records, so each asserts what it asserted with its own pass; the
modules share one xdist group (``CHECKED_GROUP``), so they share the process (3 of the
12 searches were the same ones: about 1.5 s of CPU once).
"""

from __future__ import annotations

import pickle

import pytest

from toolcall_sim.ci import check
from toolcall_sim.ci.check_jobs import SECONDS


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
                computed = real([(fn, args)], 1)
                for out in computed:  # a memoized job takes no time: junit.xml says 0 for it
                    out.pop(SECONDS, None)
                memo[key] = pickle.dumps(computed)
            outputs.extend(pickle.loads(memo[key]))
            if on_progress is not None:  # the progress the real driver reports, job by job
                from toolcall_sim.ci.check_jobs import _what

                on_progress(len(outputs), len(jobs), _what(outputs[-1]))
        return outputs

    patch.setattr(check, "run_jobs", once)


# (world config, bounds, max_states) as text -> the pickled ``toolcall_sim.model.explore.Result``,
# for the life of this test process (``each_exploration_once``).
EXPLORATIONS: dict = {}
# The xdist group of the modules that share ``EXPLORATIONS`` (tests/conftest.py).
ABOVE_MARGIN_GROUP = "explore-above-margin"


def each_exploration_once(patch: pytest.MonkeyPatch, memo: dict = EXPLORATIONS) -> None:
    """While ``patch`` holds, ``toolcall_sim.model.explore.explore`` without a stop rule, progress
    callback or edges hands back a copy of the result ``memo`` holds for the same world,
    bounds and state bound, computing it the first time."""
    import inspect

    from toolcall_sim.model import explore as ex

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


# (world, variant, in_flight_ms, max_states) -> ``Checked``, for the life of this test
# process (``checked_searches``).
CHECKED: dict = {}
# The xdist group of the modules that read ``CHECKED`` (tests/conftest.py).
CHECKED_GROUP = "checked-searches"
# Every how many compared verdicts a ghost history is kept (test_monitor's reads test).
HISTORY_EVERY = 7


class Checked:
    """What the ``CHECK_MEMO`` checks saw in one search (each check raised on its first
    difference, so a record here means every comparison agreed)."""

    def __init__(self):
        self.replayed: set = set()  # footprint kinds (a step memo key's first part) replayed
        self.expansions: list = []  # the size of each memoized expansion checked
        self.verdicts: list = []  # per verdict compared with the whole history's: any violation
        self.histories: list = []  # (trace, final) of every HISTORY_EVERY-th compared verdict
        self.memo_hits = self.memo_misses = 0
        self.result = b""  # the pickled ``toolcall_sim.model.explore.Result``


def checked_searches(cases, memo: dict = CHECKED) -> list:
    """The ``Checked`` of each (world, variant, in_flight_ms, max_states) in ``cases``,
    searching with ``CHECK_MEMO`` on the ones ``memo`` does not hold yet."""
    missing = [case for case in cases if case not in memo]
    if missing:
        from toolcall_sim.model import explore as ex
        from toolcall_sim.model import explore_context
        from toolcall_sim.model import properties as props
        from toolcall_sim.model import worlds

        now = [None]
        real_lookup, real_check, real_whole = ex.Context._lookup, ex.Search._check_expansion, props.violations_of

        def lookup(self, key, s):
            found = real_lookup(self, key, s)
            if found is not None:
                now[0].replayed.add(key[0])
            return found

        def check(self, node, found):
            now[0].expansions.append(len(found[1]))
            return real_check(self, node, found)

        def whole(trace, final, kinds, calls=None):
            found = real_whole(trace, final, kinds, calls)
            seen = now[0]
            seen.verdicts.append(bool(found))
            if len(seen.verdicts) % HISTORY_EVERY == 0:
                seen.histories.append((trace, final))
            return found

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(explore_context, "CHECK_MEMO", True)
            patch.setattr(ex.Context, "_lookup", lookup)
            patch.setattr(ex.Search, "_check_expansion", check)
            patch.setattr(props, "violations_of", whole)
            for case in missing:
                world, variant, in_flight_ms, states = case
                now[0] = seen = Checked()
                result = ex.explore(worlds.build(world, variant), ex.Bounds(max_in_flight_ms=in_flight_ms),
                                    max_states=states)
                seen.memo_hits, seen.memo_misses = result.memo_hits, result.memo_misses
                seen.result = pickle.dumps(result)
                memo[case] = seen
    return [memo[case] for case in cases]
