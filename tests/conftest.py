"""How the suite is run, not what it checks.

Theory of operation
-------------------
pyproject.toml runs the suite in two pytest-xdist workers with ``--dist load
--maxschedchunk 2``: the tests form one queue, and a worker that is nearly done takes the
next two. Tests marked ``slow`` (seed sweeps, explorations, child processes: seconds to
half a minute each) are moved to the front of that queue, so both workers start on them
and the thousand fast tests fill in behind; a long test taken near the end would leave
one core idle while it runs (longest jobs first, as a scheduler packs them).

Only the order changes, and only in xdist workers: every worker reorders its collection
the same way (xdist checks that the workers' collections agree), and a run in one process
(``-n 0``) keeps pytest's file order. No test depends on the order.
"""

from __future__ import annotations


def pytest_collection_modifyitems(config, items) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    fast = [item for item in items if item.get_closest_marker("slow") is None]
    items[:] = slow + fast
