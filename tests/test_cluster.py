"""Issue 17: seeds on a Dask cluster give exactly the result of one machine.

A ``distributed.LocalCluster`` with two workers stands in for a real one. In-process
workers (``processes=False``, threads of this process, about 0.1 s to start) serve the
equality tests; the tests that kill a worker need worker processes (``processes=True``),
since ``os._exit`` in a thread would end the test itself. Those processes are forked
from a server process (Dask's ``forkserver`` method, ``forked_dask_workers``) instead of
spawned: a spawned worker starts a fresh interpreter that imports Dask and the project
again, a forked one starts from the server's imports (Dask's, or the project's where a
local pool of sim/backends/local.py started this process's server first). The tests that kill
workers start six of them, the nanny replacing each dead one (measured: the test that
kills every worker, run alone, 3.7 -> 1.6 s of CPU). How a worker process starts is not
what these tests check: that it dies, is replaced, and changes nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import sys
import threading
from pathlib import Path

import pytest

if importlib.util.find_spec("distributed") is None:  # found, not imported: see DASK_GROUP
    pytest.skip("the distributed package is not installed", allow_module_level=True)

from toolcall_sim import backends
from toolcall_sim.backends import dask_cluster, task
from toolcall_sim.backends import local as local_pool  # (the tests' `local` is the local run's report)
from toolcall_sim.drivers import swarm  # noqa: E402
from toolcall_sim.cli.main import main  # noqa: E402

# The tests that start or reach a Dask cluster (here and in tests/test_sweep.py) form one
# xdist group, so one worker process runs them and only that one imports Dask (0.4 s of
# CPU): this module imports ``distributed`` in the tests, not at its collection, which
# both workers make (tests/conftest.py).
DASK_GROUP = XDIST_GROUP = "dask"

VARIANT = "contract"


@contextlib.contextmanager
def forked_dask_workers():
    """While it holds, the worker processes Dask starts (``LocalCluster(processes=True)``,
    and the nanny's replacement of a dead one) fork from multiprocessing's forkserver
    (``distributed.utils.get_mp_context``), one server per process."""
    import dask

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        yield


@pytest.fixture(scope="module")
def threads_cluster():
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0") as cluster:
        yield cluster


@pytest.fixture
def client(threads_cluster):
    import distributed

    with distributed.Client(threads_cluster, set_as_default=False) as c:
        yield c


def _register_by_value():
    """Worker processes cannot import this test module by name: ship its functions by
    value (cloudpickle), as a user's own module would be shipped."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


# -- functions the workers run (module level: picklable) ---------------------


def _dies_once(seed: int, flag_dir: str, die_at: int):
    """Kills its worker process the first time it meets ``die_at``; otherwise the swarm's
    own outcome of the seed."""
    flag = Path(flag_dir) / f"died-{seed}"
    if seed == die_at and not flag.exists():
        flag.write_text("x")
        os._exit(3)
    return swarm.run_seed(seed, VARIANT)


def _always_dies(seed: int, bad: int):
    if seed == bad:
        os._exit(3)
    return seed * seed


def _raises(seed: int, bad: int):
    if seed == bad:
        raise RuntimeError("the harness broke here")
    return seed * seed


# -- equality ------------------------------------------------------------------


def test_swarm_through_a_cluster_equals_the_local_run(client):
    """The swarm's report through two Dask workers is the report of one process and of
    two local processes, with chunks of several sizes and out-of-order completion."""
    local = swarm.run_swarm(5, 24, VARIANT)
    assert swarm.run_swarm(5, 24, VARIANT, cluster=client) == local
    assert swarm.run_swarm(5, 24, VARIANT, workers=2) == local
    assert len({n for _, n in task.chunks(5, 24, 2)}) > 1


def test_swarm_command_with_cluster_prints_the_same_json_bytes(threads_cluster, tmp_path, capsys):
    """``toolcall-sim swarm --cluster ADDRESS --json`` prints byte for byte what the local
    run prints (the address of an in-process scheduler, as a user gives a tcp:// one)."""
    argv = ["swarm", "--seeds", "10", "--first-seed", "3", "--json", "--out", str(tmp_path)]
    assert main(argv) == 0
    local = capsys.readouterr().out
    assert main(argv + ["--cluster", threads_cluster.scheduler_address]) == 0
    assert capsys.readouterr().out == local
    assert json.loads(local)["seeds_run"] == 10


@pytest.mark.xdist_group(DASK_GROUP)  # it imports Dask
def test_cluster_local_starts_a_local_cluster_with_the_same_report(tmp_path, capsys):
    """``--cluster local --workers 2``: a Dask LocalCluster of two worker processes,
    started and closed by the command; the same JSON bytes as the local run."""
    argv = ["swarm", "--seeds", "8", "--first-seed", "20", "--json", "--out", str(tmp_path)]
    assert main(argv) == 0
    local = capsys.readouterr().out
    with forked_dask_workers():
        assert main(argv + ["--cluster", "local", "--workers", "2"]) == 0
    assert capsys.readouterr().out == local


def test_progress_counts_every_seed_once(client):
    """``on_progress`` sees seeds as tasks finish, up to the total, on either backend."""
    for cluster in (None, client):
        seen = []
        out = list(backends.map_seeds(_raises, 0, 9, (-1,), cluster=cluster, on_progress=lambda d, t: seen.append((d, t))))
        assert out == [s * s for s in range(9)]
        assert seen[-1] == (9, 9) and [d for d, _ in seen] == sorted(d for d, _ in seen)


# -- failures ------------------------------------------------------------------


def test_seed_that_always_raises_is_a_harness_error_naming_it(client, monkeypatch):
    """Dask retries the task; the seed that keeps raising is named, never dropped. (The
    local pool's workers, still starting when the seed fails, are ended without the
    early stop's grace: the grace is tests/test_outputs.py's subject, not this one's.)"""
    monkeypatch.setattr(local_pool, "STOP_GRACE_S", 0.05)
    with pytest.raises(task.SeedFailed, match=r"seed 6 failed on every try \(3\): RuntimeError: the harness broke here"):
        list(backends.map_seeds(_raises, 0, 12, (6,), cluster=client))
    with pytest.raises(task.SeedFailed, match=r"seed 6 failed on every try \(1\): RuntimeError"):
        list(backends.map_seeds(_raises, 0, 12, (6,), workers=2))
    with pytest.raises(task.SeedFailed, match="seed 6"):
        list(backends.map_seeds(_raises, 0, 12, (6,)))


def test_cli_reports_a_failing_seed_as_exit_70(monkeypatch, capsys, tmp_path):
    def broken(seed, variant, minimize_failures=True):
        if seed == 4:
            raise RuntimeError("boom")
        return real(seed, variant, minimize_failures)

    real = swarm.run_seed
    monkeypatch.setattr(swarm, "run_seed", broken)
    assert main(["swarm", "--seeds", "5", "--json", "--out", str(tmp_path)]) == 70
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "seed 4 failed on every try" in err and "boom" in err


@pytest.fixture(scope="module")
def process_cluster():
    import dask
    import distributed

    # One death of a worker under a task makes it suspicious; two and the scheduler
    # gives up on it (KilledWorker), so the always-dying seed is found in seconds.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), forked_dask_workers():
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address="127.0.0.1:0") as cluster:
            yield cluster


def test_a_killed_worker_changes_nothing(process_cluster, tmp_path):
    """A worker process dies mid-run (``os._exit`` in the middle of the seeds); Dask runs
    its task again on a live worker, and the report is complete and identical."""
    import distributed

    _register_by_value()
    local = swarm.summarize([swarm.run_seed(s, VARIANT) for s in range(5, 21)], 5, VARIANT)
    with distributed.Client(process_cluster, set_as_default=False) as client:
        outcomes = list(backends.map_seeds(_dies_once, 5, 16, (str(tmp_path), 12), cluster=client))
    assert (tmp_path / "died-12").exists()  # the worker did die
    assert swarm.summarize(outcomes, 5, VARIANT) == local


def test_a_seed_that_kills_every_worker_is_named(process_cluster):
    """A seed that kills each worker it runs on: its task is split into single seeds and
    the one that keeps killing workers is named (the others' results are not lost in
    silence: the run stops with a harness error)."""
    import distributed

    _register_by_value()
    with distributed.Client(process_cluster, set_as_default=False) as client:
        with pytest.raises(task.SeedFailed, match=r"seed 3 failed on every try.*KilledWorker"):
            list(backends.map_seeds(_always_dies, 0, 6, (3,), cluster=client))


def test_a_local_worker_that_dies_names_its_seeds(monkeypatch):
    monkeypatch.setattr(local_pool, "STOP_GRACE_S", 0.05)  # as above: the others end without the grace
    with pytest.raises(local_pool.WorkerDied, match="worker process died"):
        list(backends.map_seeds(_always_dies, 0, 6, (3,), workers=2))


# -- the address ---------------------------------------------------------------


@pytest.mark.parametrize("address", ["localhost:8786", "http://host:8786", "tcp://", "tcp://a b", ""])
def test_malformed_address_is_one_line_exit_2(address, capsys, tmp_path):
    assert main(["swarm", "--seeds", "2", "--cluster", address, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "swarm: --cluster: not a Dask scheduler address" in err


def test_workers_with_a_cluster_is_refused(capsys, tmp_path):
    """``--workers`` would be ignored with ``--cluster``: refused, one line."""
    assert main(["swarm", "--seeds", "2", "--workers", "2", "--cluster", "tcp://127.0.0.1:9", "--out", str(tmp_path)]) == 2
    assert "swarm: --workers: not used with --cluster" in capsys.readouterr().err


@pytest.mark.xdist_group(DASK_GROUP)  # it imports Dask
def test_unreachable_scheduler_is_one_line_exit_2(monkeypatch, capsys, tmp_path):
    """Nothing listens on the port: one line, exit 2 (the address is the user's input),
    and nothing on stdout (the connection comes before the header)."""
    monkeypatch.setattr(dask_cluster, "CONNECT_TIMEOUT_S", 0.2)  # refused at once; Dask retries until then
    assert main(["swarm", "--seeds", "2", "--cluster", "tcp://127.0.0.1:9", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == ""
    assert len(err.splitlines()) == 1 and "swarm: --cluster: no Dask scheduler answered at tcp://127.0.0.1:9" in err


# -- check and compare through a cluster (issue 17: "swarm, check and compare take --cluster")


TINY_SUITE = """
name = "tiny"
[[scenarios]]
files = ["us09_chat_isolation", "lost_start_answer"]
variants = ["contract", "today"]
"""


def test_check_jobs_through_a_cluster_give_the_same_report(client, tmp_path):
    """check's jobs go to the cluster as numbers and come back in job order: the same
    report.json, summary.md and junit.xml as one process."""
    from toolcall_sim.ci import check, suite as suites
    from toolcall_sim.cli.commands.check import write_report
    from toolcall_sim.drivers import counterexample as cx

    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE)
    suite = suites.load(str(path))
    for name, kwargs in (("local", {}), ("cluster", {"cluster": client})):
        result = check.run_check(suite, baseline=[], **kwargs)
        write_report(result, tmp_path / name, cx)
    for f in ("report.json", "summary.md"):
        assert (tmp_path / "local" / f).read_bytes() == (tmp_path / "cluster" / f).read_bytes(), f
    # junit.xml differs in its wall times alone (reports/junit.py)
    timeless = [re.sub(r' time="[0-9.]+"', ' time="0"', (tmp_path / d / "junit.xml").read_text())
                for d in ("local", "cluster")]
    assert timeless[0] == timeless[1]


def test_compare_swarm_seeds_through_a_cluster_are_the_same_rows(client):
    from toolcall_sim.ci import compare

    assert compare.swarm_runs("contract", 4, 1, cluster=client) == compare.swarm_runs("contract", 4, 1)


@pytest.mark.parametrize("command", [["check", "--quick"], ["compare", "--seeds", "2"]])
def test_check_and_compare_refuse_a_bad_cluster_in_one_line(command, tmp_path, capsys):
    assert main([*command, "--out", str(tmp_path / "o"), "--cluster", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("toolcall-sim: ") and "--cluster" in err
    assert main([*command, "--out", str(tmp_path / "o"), "--cluster", "tcp://127.0.0.1:8786", "--workers", "2"]) == 2
    assert "--workers: not used with --cluster" in capsys.readouterr().err


# -- a cluster whose last worker is gone (issue 37: "hangs in silence") ----------


_RELEASE = threading.Event()  # set by the test once the run stopped


def _slow_after(seed: int, first_slow: int):
    """Quick up to ``first_slow``, then held until the test releases it (at most a
    minute): the workers are closed while seeds are still under way however fast or
    slow the machine is, so how many finished is decided by the test, not by timing."""
    if seed >= first_slow:
        _RELEASE.wait(60)
    return seed * seed


def _watch(monkeypatch, grace_s: str) -> None:
    """A grace of ``grace_s`` (through the environment, as a user sets it) and the
    worker count asked for ten times a second: the bound the test waits on is the
    grace, not the default minute."""
    monkeypatch.setenv(dask_cluster.GRACE_ENV, grace_s)
    monkeypatch.setattr(dask_cluster, "WATCH_EVERY_S", 0.1)


def test_workers_closed_mid_run_stop_the_run_and_keep_what_finished(monkeypatch, capsys):
    """Every worker of the cluster is closed mid-run: within the grace the run stops
    with ``NoWorkers`` (exit 75), after one line saying no workers are left and one
    saying what is kept; the seeds yielded before are the run's first seeds."""
    import distributed

    _watch(monkeypatch, "0.5")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0") as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            got = []
            run = backends.map_seeds(_slow_after, 0, 40, (3,), cluster=client)
            _RELEASE.clear()
            try:
                with pytest.raises(dask_cluster.NoWorkers) as stop:
                    for result in run:
                        got.append(result)
                        if len(got) == 3:
                            cluster.scale(0)  # the last worker leaves; nothing replaces it
            finally:
                _RELEASE.set()
    assert stop.value.exit_code == dask_cluster.EXIT_NO_WORKERS == 75
    assert got == [0, 1, 4]  # seeds 0-2 finished; 3 on were held when the worker left
    err = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"toolcall-sim: no workers on \S+ for [\d.]+ s; waiting up to 0\.5 s for "
                        r"one to come back \(TOOLCALL_SIM_NO_WORKERS_GRACE_S\)", err[0]), err
    assert f"stopped; {len(got)} of 40 seed(s) finished in order are kept" in err[-1] and "(exit 75)" in err[-1]


CHECK_SUITE = 'name = "one"\n[[scenarios]]\nfiles = ["us02_interrupt_stops_foreground"]\n'


@pytest.mark.parametrize("command, said, stopped", [
    (["swarm", "--seeds", "4"], "interrupted (no workers left on the cluster) after 0 of 4 seeds", "0 of 4 seed(s)"),
    (["sweep", "age_margin", "--seeds", "1"], "interrupted (no workers left on the cluster) after 0 of 30 runs",
     "0 of 30 run(s)"),
    (["compare", "--seeds", "2", "--designs", "contract"],
     "interrupted (no workers left on the cluster) after 0 of 1 designs", "0 of 2 seed(s)"),
    # check's unit of work is a job (a scenario run here), not a seed: its stop line says so
    (["check", "one.toml", "--out", "out", "--baseline", "none.json", "--update-baseline"],
     "INTERRUPTED (no workers left on the cluster): 0 of 2 jobs finished", "0 of 2 job(s)"),
])
def test_a_scheduler_without_workers_exits_75_with_the_summary_so_far(command, said, stopped, monkeypatch, capsys,
                                                                       tmp_path):
    """``toolcall-sim swarm|sweep|compare|check --cluster ADDRESS`` where no worker ever
    comes: not a wait for ever, but the summary of what finished (nothing) and exit 75
    (the table of a sweep and the matrix of a comparison stopped before their first row
    too); the stop line counts what the command runs (seeds, the sweep's runs, check's jobs)."""
    import distributed

    _watch(monkeypatch, "0.3")
    monkeypatch.chdir(tmp_path)  # where swarm and compare write
    (tmp_path / "one.toml").write_text(CHECK_SUITE)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as cluster:
        code = main([*command, "--cluster", cluster.scheduler_address])
    captured = capsys.readouterr()
    assert code == 75, captured.err
    assert said in captured.out, captured.out
    assert f"no workers on {cluster.scheduler_address}" in captured.err and "(exit 75)" in captured.err
    (line,) = [x for x in captured.err.splitlines() if ": stopped; " in x]
    assert f"stopped; {stopped} finished in order are kept" in line, line


def test_a_worker_that_comes_back_within_the_grace_lets_the_run_go_on():
    """The watch alone, on a clock of its own: said once after NOTICE_AFTER_S without a
    worker, quiet again when one is back, and NoWorkers only after the whole grace."""
    now, counts, said = [0.0], iter([2, 0, 0, 0, 1, 0, 0, 0, 0]), []
    watch = dask_cluster._WorkerWatch(lambda: next(counts), "tcp://s:8786", 10.0, clock=lambda: now[0], say=said.append)
    for t in (0, 1, 2, 3, 4, 5, 6, 12):  # seconds: 0 is gone at 1, back at 4, gone again from 5
        now[0] = t
        watch.check()
    assert said == ["toolcall-sim: no workers on tcp://s:8786 for 2 s; waiting up to 10 s for one to come back "
                    "(TOOLCALL_SIM_NO_WORKERS_GRACE_S)",
                    "toolcall-sim: 1 worker(s) back on tcp://s:8786; the run goes on",
                    "toolcall-sim: no workers on tcp://s:8786 for 7 s; waiting up to 10 s for one to come back "
                    "(TOOLCALL_SIM_NO_WORKERS_GRACE_S)"]
    now[0] = 15
    with pytest.raises(dask_cluster.NoWorkers, match="no workers on tcp://s:8786 for 10 s"):
        watch.check()


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "1e9"])
def test_a_grace_that_is_not_a_number_of_seconds_is_refused(value):
    with pytest.raises(dask_cluster.BadAddress, match="TOOLCALL_SIM_NO_WORKERS_GRACE_S: not a number of seconds"):
        dask_cluster.no_workers_grace_s({dask_cluster.GRACE_ENV: value})
    assert dask_cluster.no_workers_grace_s({}) == dask_cluster.NO_WORKERS_GRACE_S == 60
