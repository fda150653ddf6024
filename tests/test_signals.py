"""SIGTERM is Ctrl-C, and no command leaves a process behind (issue 32; sim/io/interrupt.py).

Every test runs the real command in its own session (``start_new_session``: its process
group is its pid, so a signal can go to the main process only, as ``kill PID`` sends it,
or to the whole group, as a terminal's Ctrl-C does). It waits until the command has
started work by reading its progress lines on stderr (``TOOLCALL_SIM_PROGRESS=lines``),
never by sleeping, then signals and checks: the exit code, the summary so far, the files
kept, and that no process of the command's session is left. Every wait is bounded (a
watchdog against a hang, not a speed test).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WATCHDOG_S = 180  # the most any wait below may take before the test fails as a hang

pytestmark = pytest.mark.slow


class Command:
    """A ``toolcall-sim`` run in its own session, its stderr read line by line."""

    def __init__(self, args: list[str], cwd: Path):
        env = {**os.environ, "TOOLCALL_SIM_PROGRESS": "lines"}
        self.proc = subprocess.Popen([sys.executable, "-m", "toolcall_sim", *args], cwd=cwd, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.lines: queue.SimpleQueue = queue.SimpleQueue()
        self.stderr: list[str] = []
        self.stdout = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, needle: str) -> None:
        """Until a stderr line holds ``needle`` (the command's work has begun)."""
        deadline = time.monotonic() + WATCHDOG_S
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                pytest.fail(f"no stderr line with {needle!r} within {WATCHDOG_S}s: {''.join(self.stderr)}")
            if line is None:
                pytest.fail(f"the command ended before {needle!r}: {''.join(self.stderr)}")
            self.stderr.append(line)
            if needle in line:
                return

    def signal(self, signum: int, group: bool) -> None:
        if group:
            os.killpg(self.proc.pid, signum)
        else:
            os.kill(self.proc.pid, signum)

    def finish(self) -> int:
        try:
            self.stdout = self.proc.stdout.read()
            code = self.proc.wait(timeout=WATCHDOG_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the command did not end within {WATCHDOG_S}s of the signal")
        self._reader.join(timeout=WATCHDOG_S)
        while True:
            line = self.lines.get()
            if line is None:
                break
            self.stderr.append(line)
        return code

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    @property
    def err(self) -> str:
        return "".join(self.stderr)


def session_members(sid: int) -> list[tuple[int, str]]:
    """Live processes of session ``sid`` (every descendant of a command started with
    ``start_new_session``, reparented or not), as (pid, command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2:].split()
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            found.append((int(entry), cmdline))
    return found


def assert_nothing_left(cmd: Command) -> None:
    """No process of the command's session survives it (a process killed a moment ago may
    still be on its way out: polled up to the watchdog)."""
    deadline = time.monotonic() + 10
    left = session_members(cmd.proc.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = session_members(cmd.proc.pid)
    if left:
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert left == [], f"processes left behind: {left}"


def interrupted(cmd: Command, needle: str, signum: int, group: bool) -> int:
    cmd.wait_for(needle)
    cmd.signal(signum, group)
    code = cmd.finish()
    assert "Traceback" not in cmd.err, cmd.err
    assert_nothing_left(cmd)
    return code


HOW = [pytest.param(signal.SIGTERM, False, id="SIGTERM-main"), pytest.param(signal.SIGTERM, True, id="SIGTERM-group"),
       pytest.param(signal.SIGINT, False, id="SIGINT-main"), pytest.param(signal.SIGINT, True, id="SIGINT-group")]


# ---------------------------------------------------------------------------
# swarm
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("signum,group", HOW)
def test_swarm_with_workers_stops_as_on_ctrl_c_and_leaves_no_worker(tmp_path, signum, group):
    cmd = Command(["swarm", "--seeds", "100000", "--workers", "2", "--variant", "contract+no-age-margin",
                   "--out", "out"], tmp_path)
    code = interrupted(cmd, "seeds,", signum, group)
    assert code == 130, cmd.err
    assert "interrupted (Ctrl-C) after " in cmd.stdout and "the summary so far" in cmd.stdout
    assert "summary: " in cmd.stdout
    # Every failure written so far is a pair: its scenario and its counterexample.
    tomls = sorted(p.stem for p in (tmp_path / "out").glob("*.toml")) if (tmp_path / "out").exists() else []
    jsons = sorted(p.stem for p in (tmp_path / "out").glob("*.json")) if (tmp_path / "out").exists() else []
    assert tomls == jsons


EXPLORE_LONG = ["explore", "--world", "default", "--workers", "2", "--max-states", "100000000", "--horizon", "600s",
                "--agent-restarts", "3", "--ownership-changes", "3", "--out", "out"]


@pytest.mark.parametrize("args,needle", [(["swarm", "--seeds", "100000", "--workers", "2", "--out", "out"], "seeds,"),
                                         (EXPLORE_LONG, "states")], ids=["swarm", "explore"])
def test_workers_die_with_a_parent_killed_outright(tmp_path, args, needle):
    """SIGKILL cannot be handled: the workers end because the kernel kills them with their
    parent (sim/io/interrupt.py Rule 4: PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    cmd = Command(args, tmp_path)
    cmd.wait_for(needle)
    deadline = time.monotonic() + WATCHDOG_S  # the workers may be forked after the first progress line
    while not [pid for pid, _ in session_members(cmd.proc.pid) if pid != cmd.proc.pid]:
        assert time.monotonic() < deadline and cmd.proc.poll() is None, f"no worker forked: {cmd.err}"
        time.sleep(0.05)
    cmd.signal(signal.SIGKILL, group=False)
    assert cmd.finish() == -signal.SIGKILL
    assert_nothing_left(cmd)


@pytest.mark.parametrize("signum,group", [HOW[0], HOW[1]])
def test_swarm_on_a_local_dask_cluster_stops_on_sigterm_and_shuts_the_cluster_down(tmp_path, signum, group):
    """The submitted futures are cancelled, the client closed and the LocalCluster the
    command started shut down: none of its processes (scheduler, nannies, workers) stays."""
    pytest.importorskip("distributed")
    cmd = Command(["swarm", "--seeds", "100000", "--cluster", "local", "--workers", "2", "--out", "out"], tmp_path)
    code = interrupted(cmd, "seeds,", signum, group)
    assert code == 130, cmd.err
    assert "the summary so far" in cmd.stdout


# ---------------------------------------------------------------------------
# explore, check, sweep, compare
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("signum,group", HOW[:2])
def test_explore_with_workers_stops_with_the_states_so_far(tmp_path, signum, group):
    cmd = Command([*EXPLORE_LONG, "--json"], tmp_path)
    code = interrupted(cmd, "states", signum, group)
    assert code == 130, cmd.err
    doc = json.loads(cmd.stdout)
    assert doc["interrupted"] is True and doc["states"] > 0


@pytest.mark.parametrize("signum,group", [HOW[0], HOW[3]])
def test_check_with_workers_prints_the_jobs_done_and_keeps_the_old_report(tmp_path, signum, group):
    old = tmp_path / "report"
    old.mkdir()
    (old / "summary.md").write_text("the old report\n")
    (old / ".toolcall-sim-report").write_text("written by toolcall-sim\n")  # an earlier report of ours
    cmd = Command(["check", "--quick", "--workers", "2", "--out", "report", "--baseline",
                   str(ROOT / "reports" / "baseline.json")], tmp_path)
    code = interrupted(cmd, " explore default (contract)", signum, group)  # the first job under way
    assert code == 130, cmd.err
    assert "INTERRUPTED (Ctrl-C): " in cmd.stdout and " jobs finished; " in cmd.stdout, cmd.stdout
    assert "report: not written" in cmd.stdout
    assert (old / "summary.md").read_text() == "the old report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary folder left


@pytest.mark.parametrize("signum,group", HOW[:2])
def test_sweep_with_workers_prints_the_table_so_far(tmp_path, signum, group):
    cmd = Command(["sweep", "age_margin", "--workers", "2", "--report", "rep"], tmp_path)
    code = interrupted(cmd, "runs", signum, group)
    assert code == 130, cmd.err
    assert "interrupted (Ctrl-C) after " in cmd.stdout and "the table so far" in cmd.stdout
    assert "latency_p99" in cmd.stdout  # the table's header: the rows finished so far follow
    assert not (tmp_path / "rep").exists()  # a part of a sweep is not written as its report


def test_compare_with_workers_prints_the_designs_finished(tmp_path):
    cmd = Command(["compare", "--designs", "today,contract,ledger", "--seeds", "3000", "--workers", "2",
                   "--out", "out"], tmp_path)
    # "... contract" begins the second design: the first one is finished.
    code = interrupted(cmd, "... contract", signal.SIGTERM, False)
    assert code == 130, cmd.err
    assert "interrupted (Ctrl-C) after 1 of 3 designs: the matrix so far" in cmd.stdout, cmd.stdout
    assert "today" in cmd.stdout


# ---------------------------------------------------------------------------
# search: Ctrl-C while shrinking
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("signum,group", [HOW[3], HOW[0]])
def test_search_cut_short_while_shrinking_says_so_keeps_the_best_and_exits_130(tmp_path, signum, group):
    cmd = Command(["search", "--variant", "contract+no-age-margin", "--examples", "5000", "--shrink-runs", "100000",
                   "--out", "out"], tmp_path)
    code = interrupted(cmd, "shrinking: ", signum, group)
    assert code == 130, (cmd.stdout, cmd.err)
    assert "shrinking cut short" in cmd.stdout and "maybe not fully shrunk" in cmd.stdout, cmd.stdout
    assert "VIOLATION at_most_once" in cmd.stdout
    toml = tmp_path / "out" / "search-contract_no-age-margin-at_most_once.toml"
    assert toml.is_file() and toml.with_suffix(".json").is_file()
    # The story kept fails on its own.
    done = subprocess.run([sys.executable, "-m", "toolcall_sim", "run", str(toml)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=WATCHDOG_S)
    assert done.returncode == 1, done.stderr


# ---------------------------------------------------------------------------
# start-up
# ---------------------------------------------------------------------------

# SIGTERM in the start-up window: tests/test_launch.py, beside Ctrl-C's.


def test_after_start_up_sigterm_goes_where_sigint_goes():
    child = ("import signal, sys\nfrom toolcall_sim.cli import launch\nfrom toolcall_sim.io import interrupt\n"
             "code = launch.main(['list'])\n"
             "assert signal.getsignal(signal.SIGTERM) is interrupt._as_sigint\n"
             "try:\n    signal.raise_signal(signal.SIGTERM)\nexcept KeyboardInterrupt:\n    sys.exit(42)\n"
             "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True,
                          timeout=WATCHDOG_S)
    assert done.returncode == 42, done.stderr


@pytest.mark.parametrize("signum,group", HOW[:2])
def test_bench_stops_at_once_and_kills_its_fresh_process(tmp_path, signum, group):
    """bench measures each row in a fresh spawned process (sim/ci/bench.py
    ``in_fresh_process``): a signal ends the command now, not when the row is measured."""
    cmd = Command(["bench", "--quick"], tmp_path)
    code = interrupted(cmd, "explorer, default world", signum, group)
    assert code == 130, cmd.err
    assert cmd.err.endswith("toolcall-sim: interrupted\n"), cmd.err
