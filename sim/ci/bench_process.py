"""How ``toolcall-sim bench`` measures one thing: alone in a fresh spawned process, with
its own wall clock and peak resident set (sim/ci/bench.py's theory of operation), and
the ratio a row reports. Shared by the rows of sim/ci/bench.py and sim/ci/bench_reach.py.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import sys
import time

WHOLE_SPACE = 10_000_000  # max_states that no world reaches: "explore it all"


def _seconds(started: float) -> float:
    return max(time.perf_counter() - started, 1e-9)


def _ratio(value: float, baseline: float) -> float:
    # Four significant digits: today's ratios are as small as 0.002.
    return float(f"{value / baseline:.4g}") if baseline > 0 else 0.0


def _rss_bytes() -> int:
    """This process's peak resident set. On Linux ``VmHWM`` of /proc/self/status, which
    belongs to the address space and starts afresh in a spawned process; not
    ``ru_maxrss``, which Linux carries across ``execve`` from the forking parent, so a
    spawned worker would start at its parent's peak and the growth would read low."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # in kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # kB on Linux, bytes on macOS


def in_fresh_process(fn, *args):
    """``fn(*args)`` in a fresh spawned process, so each measurement starts cold. That
    process ignores Ctrl-C and SIGTERM and dies with this one (sim/io/interrupt.py Rule 4);
    a Ctrl-C or SIGTERM here kills it at once instead of waiting for its measurement to
    end (it holds no file: the figures are written here). The start itself is not cut in
    half (a child killed while it unpickles its task prints a traceback)."""
    from toolcall_sim.io.interrupt import sigint_deferred

    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_run_and_send, args=(send, os.getpid(), fn, args))
    try:
        with sigint_deferred():
            process.start()
        send.close()
        ok, value = receive.recv()
    except BaseException:
        if process.pid is not None:
            process.kill()
        raise
    finally:
        if process.pid is not None:
            process.join()
        receive.close()
    if not ok:
        raise value
    return value


def _run_and_send(send, parent_pid: int, fn, args) -> None:  # module level: what the fresh process runs
    from toolcall_sim.io.interrupt import worker_signals

    worker_signals(parent_pid)
    try:
        result = (True, fn(*args))
    except Exception as err:  # noqa: BLE001 - raised again in the parent
        result = (False, err)
    send.send(result)
