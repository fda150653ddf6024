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

Compiled modules are cached even where ``PYTHONDONTWRITEBYTECODE`` is set (as it is in
some sandboxes and CI images): without a cache every process of the suite compiles the
project from source again, and pytest rewrites the asserts of every test module again,
in each xdist worker (measured: collecting took 5.1 s of CPU per worker without the
cache, 2.3 s with it) and in each child process a test starts (0.2-0.5 s each). The
caches are the ordinary ``__pycache__`` folders (.gitignore'd) that Python and pytest
write when the variable is not set; child processes keep the variable and only read them.
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = False


def pytest_collection_modifyitems(config, items) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    fast = [item for item in items if item.get_closest_marker("slow") is None]
    items[:] = slow + fast
