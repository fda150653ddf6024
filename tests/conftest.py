"""How the suite is run, not what it checks.

Theory of operation
-------------------
pyproject.toml runs the suite in two pytest-xdist workers with ``--dist loadgroup
--no-loadscope-reorder``: the tests form one queue of work units in collection order,
and a worker that is nearly done takes the next one. A unit is one test, except that
the tests of a module with a module-scoped fixture form one unit (an ``xdist_group``
named after the module, added here): that fixture (a check suite run twice, a compare
run, a bench run, a local cluster) then runs once, in one worker, where ``--dist load``
dealt the module's tests to both workers and each worker ran the fixture again (the
10 s fixture of tests/test_check_sections.py twice, for one). A module may name a group
shared with other modules (``XDIST_GROUP``) when their fixtures reuse one computation
kept for the life of the worker process (tests/check_memo.py ``EXPLORATIONS``): the
modules then run one after the other in one worker. A test may also carry the
``xdist_group`` mark itself: the screenshot tests of tests/test_one_run_report.py join
tests/test_browser.py's group, so one worker's one browser takes every screenshot
(tests/browser.py Rule 2).

Tests marked ``slow`` (seed sweeps, explorations, child processes: seconds each) and
the tests using a module-wide fixture are moved to the front of the queue, so both workers
start on them and the thousand fast tests fill in behind; a long unit taken near the end
would leave one core idle while it runs (longest jobs first, as a scheduler packs them).

Only the order and the grouping change, and only in xdist workers: every worker reorders
its collection the same way (xdist checks that the workers' collections agree), and a
run in one process (``-n 0``) keeps pytest's file order. No test depends on the order.

Compiled modules are cached even where ``PYTHONDONTWRITEBYTECODE`` is set (as it is in
some sandboxes and CI images): without a cache every process of the suite compiles the
project from source again, and pytest rewrites the asserts of every test module again,
in each xdist worker (measured: collecting took 4.1 s of CPU per worker without the
cache, 2.0 s with it) and in each child process a test starts (0.2-0.5 s each). The
caches are the ordinary ``__pycache__`` folders (.gitignore'd) that Python and pytest
write when the variable is not set; child processes keep the variable and only read them.
So the first process compiles the whole project before any other starts
(``pytest_configure`` of the xdist controller, or of a ``-n 0`` run, which runs before
xdist starts its workers): in a fresh clone the workers and the child processes a test
starts (``python -m toolcall_sim``, pools, Dask workers) then read the same caches instead of each
compiling what it imports again (a child that never reads a module a worker imported
first compiled ``sim/cli/launch.py`` and ``sim/__main__.py`` in every run, warm or not). It
costs about 0.2 s once in a fresh clone and a few milliseconds of ``stat`` calls after.
The test modules' rewritten asserts are cached by the workers themselves, each module
once: the second worker rewrites from the last module backwards while the first collects
forwards (``_rewrite_from_the_end``). The second worker also writes hypothesis's Unicode
tables (``.hypothesis/unicode_data/``) before it collects, which each worker computed at
its first drawn text in a fresh clone (``_warm_hypothesis_unicode_tables``). Measured in a
fresh clone: the suite's start (collection, -n 2) 9.5 -> 7.9 s of CPU; the first drawn
text in each worker 1.1 s -> 0.1 s, once 1.1 s in the second worker's start.
"""

from __future__ import annotations

import sys

import pytest

sys.dont_write_bytecode = False

# The project's packages, compiled once by the first process of a run (``pytest_configure``).
PACKAGES = ("model", "sim", "reports", "scenarios")


def pytest_configure(config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller compiled already
        if config.workerinput.get("workerid") == "gw1":
            _warm_hypothesis_unicode_tables()
            _rewrite_from_the_end(config)
        return
    import compileall
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for package in PACKAGES:
        # quiet=2: a read-only checkout writes nothing and says nothing; each process then
        # compiles what it imports, as without this step.
        compileall.compile_dir(root / package, quiet=2)


def _rewrite_from_the_end(config) -> None:
    """In a fresh clone, pytest rewrites the asserts of every test module in each worker
    (about 2.3 s of CPU for this suite) and caches the result beside the module. The
    workers collect the modules in the same order, so they would both rewrite all of
    them at the same time; instead the second worker first rewrites them from the last
    one backwards, until it meets a module the first worker, collecting forwards, has
    already cached: each module is rewritten once, and both workers then collect from
    the caches. In a warm checkout the last module is cached and this stops at once.
    It uses pytest's own rewriting and cache writer (the calls its import hook makes);
    should their names change, the workers rewrite as before."""
    from pathlib import Path

    try:
        from _pytest.assertion import rewrite as rw

        state = config.stash[rw.assertstate_key]
        # Only the modules this run collects (a run of one file rewrites one file).
        here = config.invocation_params.dir
        asked = [(here / arg.split("::", 1)[0]).resolve() for arg in config.args]
        modules = [m for m in Path(__file__).resolve().parent.glob("test_*.py")
                   if any(m == a or a in m.parents for a in asked)]
        for source in sorted(modules, reverse=True):
            pyc = rw.get_cache_dir(source) / (source.name[:-3] + rw.PYC_TAIL)
            if rw._read_pyc(source, pyc) is not None:
                return  # the first worker got here: the rest is cached
            source_stat, code = rw._rewrite_test(source, config)
            if not (rw.try_makedirs(pyc.parent) and rw._write_pyc(state, code, source_stat, pyc)):
                return  # a read-only checkout: each worker rewrites in memory, as before
    except Exception:  # noqa: BLE001 - an optimisation only; the import hook does the same work
        return


def _warm_hypothesis_unicode_tables() -> None:
    """Hypothesis's text strategies need the table of the characters UTF-8 encodes and
    its Unicode category map, which it computes at the first use in a process (a loop
    over every code point: about 1 s of CPU) unless ``.hypothesis/unicode_data/`` holds
    them. In a fresh clone each worker computed them at its first drawn text; the second
    worker writes them first, before its collection, while the first still collects (in
    a warm checkout this reads the two small files). It is hypothesis's own function and
    cache: what hypothesis draws does not change. Hypothesis warns about any storage it
    reads while plugins load (``HypothesisSideeffectWarning``, printed above every run's
    dots); this read is the point, so its warning is silenced here alone."""
    import warnings

    try:
        from hypothesis.errors import HypothesisSideeffectWarning
        from hypothesis.internal import charmap

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HypothesisSideeffectWarning)
            charmap.charmap()
            charmap.intervals_from_codec("utf-8")
    except Exception:  # noqa: BLE001 - an optimisation only; hypothesis computes them itself
        return


def module_wide_fixtures(item) -> list[str]:
    """The module-scoped fixtures ``item`` uses that its own module defines."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # a scenario file's item (sim/pytest_plugin.py): no fixtures
        return []
    module = getattr(item, "module", None)
    return sorted(name for name, defs in info.name2fixturedefs.items()
                  if defs and defs[-1].scope == "module" and module is not None
                  and getattr(defs[-1].func, "__module__", None) == module.__name__)


def group_of(item) -> str | None:
    """The xdist group of ``item`` when it uses a module-wide fixture: its module's
    ``XDIST_GROUP`` where the module names one (modules whose fixtures share a cache for
    the life of the process, tests/check_memo.py), else its module's path."""
    if not module_wide_fixtures(item):
        return None
    return getattr(item.module, "XDIST_GROUP", None) or item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist names the group in the node id
def pytest_collection_modifyitems(config, items) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return
    front, rest = [], []
    for item in items:
        group = group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        (front if group is not None or item.get_closest_marker("slow") is not None else rest).append(item)
    items[:] = front + rest


def pytest_collection_finish(session) -> None:
    """Everything collection built (thousands of items, the imported project, hypothesis)
    lives until the session ends: move it out of the cycle collector's reach, so each
    full collection in a test walks only what that test allocated (``gc.freeze``). Only
    when the collector runs changes, never what a test computes."""
    import gc

    gc.collect()
    gc.freeze()
    # And collect the youngest generation every 20,000 net allocations instead of 700:
    # the tests allocate millions of short-lived model objects that reference counting
    # frees; the collector only finds the rare cycle, later (the world's own
    # ``rare_collections`` makes the same trade, sim/world/simulation.py).
    gc.set_threshold(20_000, 10, 10)
