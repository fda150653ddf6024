"""Hostile-input rows of issue 32's signal class ("Nothing unbounded, nothing hangs",
bullets 3-4): none fit the in-process table.

Every case of that class is a signal sent to a running command (SIGTERM or SIGINT, to the
main process or its whole group, or SIGKILL), and what it must show is in other processes:
the workers that must not survive, the exit code of the command's own process. The table
runs ``toolcall_sim.cli.main.main`` inside the test's process (tests/hostile.py), where a signal would
reach pytest itself and no worker is the command's child. Those cases are real
subprocesses in tests/test_signals.py instead (swarm, explore, check, sweep, compare,
search while shrinking, ``--cluster local``, SIGKILL of the parent) and
tests/test_launch.py (SIGTERM during start-up).
"""

from __future__ import annotations

CASES: list = []
