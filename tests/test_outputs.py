"""Outputs where the user asks, whole or not at all; the same run has the same hash
anywhere; Ctrl-C keeps what was done (issue 12).

The Ctrl-C tests run the command in its own process, wait for its first progress line,
send SIGINT and read what it printed: no sleeps and no wall-clock asserts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from toolcall_sim.io import output
from toolcall_sim.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
US02 = "us02_interrupt_stops_foreground"
# The trace hash of us02 under its default variant and seed; the header names the
# scenario by content, so every way of reaching the file gives this one. (Re-pinned when
# idle loop firings were batched, and when the agent began recording each request's
# arrival as ground truth, issue 34.)
US02_SHA256 = "226cef8b41c235740228bb6c9673306c94829f84c5d18fd07a3e0fa273705121"
BUGGY = "contract+records-lost-on-new-message"  # a planted bug swarm seed 7 finds at once


def _env() -> dict:
    """This checkout's code, from any folder."""
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _sim(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolcall_sim", *args], capture_output=True, text=True, cwd=cwd,
                          env=env or _env(), check=False)


def _hash(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["trace_sha256"]


class _Ran:
    """What ``_here`` ran: the exit code and the text, named as a finished process's."""

    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def here(monkeypatch, capsys):
    """``here(args, cwd)``: the command run in this process from the folder ``cwd``. The
    tests of folders are about the current directory, which ``chdir`` changes, not
    about a fresh interpreter (test_an_installed_package_gives_the_same_hash and the
    Ctrl-C tests start one); a process start costs a second of imports each."""
    def run(args: list[str], cwd: Path) -> _Ran:
        capsys.readouterr()
        monkeypatch.chdir(cwd)
        code = main(args)
        out, err = capsys.readouterr()
        return _Ran(code, out, err)
    return run


# ---------------------------------------------------------------------------
# The same run, the same hash, anywhere
# ---------------------------------------------------------------------------


def test_three_paths_to_one_scenario_give_one_hash(tmp_path, here):
    """By name, by relative path, and as a copy in another folder run from there."""
    copy = tmp_path / "elsewhere" / "my-copy.toml"
    copy.parent.mkdir()
    shutil.copy(ROOT / "scenarios" / f"{US02}.toml", copy)
    hashes = {
        _hash(here(["run", US02, "--json"], ROOT)),
        _hash(here(["run", f"scenarios/{US02}.toml", "--json"], ROOT)),
        _hash(here(["run", "my-copy.toml", "--json"], copy.parent)),
    }
    assert hashes == {US02_SHA256}


def test_the_trace_header_names_the_scenario_by_content(tmp_path):
    assert main(["run", US02, "--trace", str(tmp_path / "t.jsonl")]) == 0
    header = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert header["kind"] == "header" and header["scenario"] == "us02-interrupt-stops-foreground"
    assert len(header["scenario_sha256"]) == 64 and "scenario_path" not in header
    assert str(ROOT) not in (tmp_path / "t.jsonl").read_text()


def test_a_trace_replays_from_another_folder(tmp_path, here):
    """A trace of a shipped scenario replays from anywhere; a trace of a user's
    scenario replays when the scenario lies next to the trace, or is named."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert here(["run", US02, "--trace", str(tmp_path / "a" / "t.jsonl")], ROOT).returncode == 0
    proc = here(["replay", str(tmp_path / "a" / "t.jsonl")], tmp_path / "b")
    assert proc.returncode == 0 and f"trace sha256 {US02_SHA256} (same)" in proc.stdout, proc.stderr

    mine = (ROOT / "scenarios" / "smoke_retry.toml").read_text().replace('"smoke-retry"', '"mine"')
    (tmp_path / "a" / "mine.toml").write_text(mine)
    assert here(["run", "mine.toml", "--trace", "mine.jsonl"], tmp_path / "a").returncode == 0
    proc = here(["replay", str(tmp_path / "a" / "mine.jsonl")], tmp_path / "b")
    assert proc.returncode == 0 and "(same)" in proc.stdout, proc.stderr
    (tmp_path / "b" / "renamed.toml").write_text(mine)
    shutil.move(tmp_path / "a" / "mine.jsonl", tmp_path / "b" / "mine.jsonl")
    (tmp_path / "a" / "mine.toml").unlink()
    proc = here(["replay", "mine.jsonl", "--scenario", "renamed.toml"], tmp_path / "b")
    assert proc.returncode == 0 and "(same)" in proc.stdout, proc.stderr


def test_a_trace_whose_scenario_changed_is_not_replayed_against_it(tmp_path, here):
    """Content identity: an edited scenario of the same name is not the one recorded."""
    mine = (ROOT / "scenarios" / "smoke_retry.toml").read_text().replace('"smoke-retry"', '"mine"')
    (tmp_path / "s.toml").write_text(mine)
    assert here(["run", "s.toml", "--trace", "t.jsonl"], tmp_path).returncode == 0
    (tmp_path / "s.toml").write_text(mine.replace('runs_for = "20m"', 'runs_for = "21m"'))
    proc = here(["replay", "t.jsonl"], tmp_path)
    assert proc.returncode == 2 and "no scenario 'mine' with sha256" in proc.stderr
    (tmp_path / "s.toml").write_text(mine.replace('summary = "', 'summary = "Prose does not change a run. '))
    assert here(["replay", "t.jsonl"], tmp_path).returncode == 0


def _build_requirements() -> list:
    """pyproject.toml's ``[build-system] requires``, as ``packaging`` requirements."""
    import tomllib

    from packaging.requirements import Requirement

    return [Requirement(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]]


def _met_in(requirements: list, paths: list[str]) -> bool:
    """Whether the distributions found on ``paths`` satisfy every requirement."""
    from importlib import metadata

    for req in requirements:
        found = next(iter(metadata.distributions(name=req.name, path=paths)), None)
        if found is None or not req.specifier.contains(found.version, prereleases=True):
            return False
    return True


def _build_without_isolation(env: dict) -> list[str]:
    """pip's flags (and ``env``'s ``PYTHONPATH``) to build the package without a build
    environment of its own: pip's isolation installs the build requirements into a fresh
    folder at each install (about 2 s of this test's 3.5 s). Where this
    interpreter's packages satisfy ``[build-system] requires``, the build uses them; else
    it uses a folder of them kept in the user's cache (``$XDG_CACHE_HOME`` or ~/.cache,
    where pip keeps its own) for this interpreter and these requirements, installed once
    by pip itself (the first run on a machine pays it, as isolation did at every run; a
    fresh clone on the same machine finds it). Whatever fails on the way leaves pip's
    own isolation (no flags)."""
    requirements = _build_requirements()
    if _met_in(requirements, sys.path):
        return ["--no-build-isolation"]
    import hashlib

    tag = hashlib.sha256(f"{sys.version} {[str(r) for r in requirements]}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    kept = cache / "toolcall-sim-tests" / f"build-requirements-{tag}"
    if not _met_in(requirements, [str(kept)]):
        scratch = kept.with_name(kept.name + f".{os.getpid()}.tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            scratch.parent.mkdir(parents=True, exist_ok=True)
        except OSError:  # no writable cache: pip's isolation
            return []
        made = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(scratch),
                               *map(str, requirements)], capture_output=True, text=True, check=False)
        if made.returncode != 0 or not _met_in(requirements, [str(scratch)]):
            shutil.rmtree(scratch, ignore_errors=True)
            return []
        shutil.rmtree(kept, ignore_errors=True)
        try:
            scratch.rename(kept)  # whole or absent: a run stopped mid-install leaves only a .tmp
        except OSError:  # another run put its own there first
            shutil.rmtree(scratch, ignore_errors=True)
            if not _met_in(requirements, [str(kept)]):
                return []
    env["PYTHONPATH"] = os.pathsep.join([str(kept), *filter(None, [env.get("PYTHONPATH")])])
    return ["--no-build-isolation"]


@pytest.mark.slow
def test_an_installed_package_gives_the_same_hash(tmp_path):
    """A non-editable install (pip --target) run from another folder: the shipped
    scenario by name, the same hash. The package is built without pip's build isolation
    where the build requirements are at hand (``_build_without_isolation``): what is
    installed is the same package, built by the same backend."""
    src = tmp_path / "src"
    for part in ("model", "sim", "scenarios", "reports"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__", "out"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, src / part)
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(src)]
    build_env = dict(os.environ)
    flags = _build_without_isolation(build_env)
    pip = subprocess.run(install + flags, capture_output=True, text=True, check=False, env=build_env)
    if pip.returncode != 0 and flags:  # pip's own isolation, as without the kept requirements
        shutil.rmtree(target, ignore_errors=True)
        pip = subprocess.run(install, capture_output=True, text=True, check=False, env=build_env)
    if pip.returncode != 0:
        pytest.skip(f"pip could not build the package here: {pip.stderr.strip().splitlines()[-1:]}")
    (tmp_path / "run").mkdir()
    env = dict(os.environ, PYTHONPATH=str(target))
    proc = _sim(["run", US02, "--json"], tmp_path / "run", env)
    assert _hash(proc) == US02_SHA256
    assert not (target / "reports" / "out").exists()


# ---------------------------------------------------------------------------
# Outputs where the user asks
# ---------------------------------------------------------------------------


def test_swarm_writes_under_the_current_folder_and_its_files_replay_anywhere(tmp_path, here):
    """The default folder is ./reports/out/swarm where the command runs (named in the
    first line), not the package; the counterexample embeds its scenario, holds no
    absolute path, and replays from another folder with the same hash."""
    def package_files():  # (Python's own __pycache__ is not the command's output)
        return sorted(p.name for p in (ROOT / "reports").rglob("*") if "__pycache__" not in p.parts)
    before = package_files()
    proc = here(["swarm", "--seeds", "1", "--first-seed", "7", "--variant", BUGGY], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[0].endswith("failures go to reports/out/swarm")
    files = sorted(p.name for p in (tmp_path / "reports" / "out" / "swarm").iterdir())
    assert files == [f"swarm-7-{BUGGY}.json", f"swarm-7-{BUGGY}.toml"]
    assert package_files() == before
    text = (tmp_path / "reports" / "out" / "swarm" / files[0]).read_text()
    assert str(tmp_path) not in text and str(ROOT) not in text
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = here(["replay", str(tmp_path / "reports" / "out" / "swarm" / files[0])], elsewhere)
    assert proc.returncode == 1 and "REPRODUCED" in proc.stdout and "(same)" in proc.stdout, proc.stdout


def test_search_leaves_no_hypothesis_folder_behind(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["search", "--examples", "2", "--steps", "5", "--world", "default"]) == 0
    assert "a counterexample goes to reports/out/hypothesis" in capsys.readouterr().out.splitlines()[0]
    assert not (tmp_path / ".hypothesis").exists()
    # Drawn stories (the default): hypothesis's folder and its example database live
    # under the output folder.
    assert main(["search", "--examples", "2"]) == 0
    assert "a counterexample goes to reports/out/search" in capsys.readouterr().out.splitlines()[0]
    assert not (tmp_path / ".hypothesis").exists()
    # (hypothesis writes there only what it has not written before in this process)
    assert {p.name for p in tmp_path.iterdir()} <= {"reports"}
    assert {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.parent == tmp_path / "reports" / "out"} \
        <= {"reports/out/search"}


def test_help_names_the_default_folders(capsys):
    for command in ("swarm", "explore", "search"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert f"./reports/out/{'hypothesis' if command == 'search' else command}" in capsys.readouterr().out


def test_write_atomic_leaves_the_old_file_or_the_new_one(tmp_path, monkeypatch):
    target = tmp_path / "f.json"
    output.write_atomic(target, "old\n")

    def broken_fsync(fd):
        raise OSError("disk full")
    monkeypatch.setattr(output.os, "fsync", broken_fsync)
    with pytest.raises(output.OutputError, match="disk full"):  # the user's path: exit 2, not 70
        output.write_atomic(target, "new\n")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["f.json"]
    monkeypatch.undo()
    output.write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_check_determinism_with_trace_and_json_does_both(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    assert main(["run", US02, "--check-determinism", "--trace", str(trace), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["deterministic"] is True and doc["trace_sha256"] == US02_SHA256
    import hashlib
    assert hashlib.sha256(trace.read_bytes()).hexdigest() == US02_SHA256


# ---------------------------------------------------------------------------
# Replay outcomes
# ---------------------------------------------------------------------------


def test_a_replay_that_stops_fitting_has_its_own_exit_code(tmp_path, capsys):
    """Exit 3, not the 0 of "no longer reproduces"."""
    assert main(["explore", "--world", "default", "--variant", "today", "--property", "at_most_once", "--json",
                 "--out", str(tmp_path)]) == 1
    path = json.loads(capsys.readouterr().out)["violations"][0]["counterexample"]
    doc = json.loads(Path(path).read_text())
    doc["actions"][3]["at_ms"] = 10**9  # time jumps ahead: the next action is in the past
    Path(path).write_text(json.dumps(doc))
    assert main(["replay", path]) == 3
    assert capsys.readouterr().out.startswith("DOES NOT FIT: the replay stopped fitting at step")
    assert main(["replay", path, "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["outcome"] == "does_not_fit"


# ---------------------------------------------------------------------------
# Ctrl-C
# ---------------------------------------------------------------------------


def _interrupt_after(args: list[str], cwd: Path, ready, env: dict | None = None) -> tuple[int, str, str]:
    """Start the command, read stderr until ``ready(line)``, send SIGINT, collect."""
    proc = subprocess.Popen([sys.executable, "-m", "toolcall_sim", *args], cwd=cwd, env=env or _env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if ready(line):
            break
    else:
        proc.wait()
        pytest.fail(f"no progress line before the end: exit {proc.returncode}, stderr {''.join(seen)!r}")
    proc.send_signal(signal.SIGINT)
    try:
        # A guard against a hang, not a speed check: a Ctrl-C that stops nothing would
        # otherwise hold the whole suite (seen once with --workers 2: the parent and its
        # pool workers all waiting on locks).
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        for child in _children(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the command did not stop within 120 s of its Ctrl-C: {args}")
    return proc.returncode, out, "".join(seen) + err


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc; none elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_on_swarm_keeps_every_finished_counterexample(tmp_path, workers):
    """With workers too: the first chunk is one seed, so the first failure comes as soon
    as it is done, and a Ctrl-C stops the workers after their current seed."""
    code, out, err = _interrupt_after(["swarm", "--seeds", "100000", "--first-seed", "7", "--variant", BUGGY,
                                       "--workers", workers], tmp_path, lambda line: " FAIL " in line)
    assert code == 130, err
    assert "Traceback" not in err
    lines = out.splitlines()
    assert lines[0].startswith(f"swarm under {BUGGY}: seeds 7..100006")
    assert any(line.startswith("interrupted (Ctrl-C) after ") for line in lines)
    assert lines[-1].startswith("summary: ")
    written = sorted((tmp_path / "reports" / "out" / "swarm").iterdir())
    assert written and not [p for p in written if p.name.endswith(".tmp")]
    scenarios = {p.stem for p in written if p.suffix == ".toml"}
    assert scenarios == {p.stem for p in written if p.suffix == ".json"}  # never one without the other
    for stem in scenarios:
        assert f"reports/out/swarm/{stem}.toml" in out  # each finished failure is in the summary
    replayed = _sim(["replay", str(written[0])], tmp_path) if written[0].suffix == ".json" else \
        _sim(["replay", str(written[0].with_suffix(".json"))], tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr


# A Ctrl-C at a chosen line of the parent: a trace function counts the Python lines the
# parent runs inside the local pool's generator (sim/backends/local.py) and raises SIGINT at
# line K, as a real Ctrl-C arriving there would be handled (at the next bytecode). The
# old pool hung for K inside ``concurrent.futures.wait`` taking its futures' locks.
_CTRL_C_AT_LINE = """
import multiprocessing, signal, sys, time
from toolcall_sim import backends

def slow(seed):
    time.sleep(0.002)
    return seed

def interrupted_at(k):
    gen = backends.map_seeds(slow, 0, 20000, workers=2)
    next(gen)  # the pool is up and every chunk queued
    lines = [0]

    def trace(frame, event, arg):
        if event == "line":
            lines[0] += 1
            if lines[0] == k:
                signal.raise_signal(signal.SIGINT)
        return trace

    sys.settrace(trace)
    try:
        for _ in gen:
            pass
        outcome = "ran to the end"
    except KeyboardInterrupt:
        outcome = "interrupted"
    finally:
        sys.settrace(None)
    gen.close()
    return outcome, len(multiprocessing.active_children())

if __name__ == "__main__":
    for k in map(int, sys.argv[1:]):
        print(k, *interrupted_at(k), flush=True)
"""


@pytest.mark.slow
def test_ctrl_c_at_any_line_of_the_pool_stops_it(tmp_path):
    """The flaky hang of ``swarm --workers 2`` after Ctrl-C, made deterministic: SIGINT at
    chosen lines of the parent while it waits for its pool (the lines of the first waits,
    and later ones). Each run raises KeyboardInterrupt out of the generator, leaves no
    worker behind, and the whole script ends (the timeout guards against a hang; it is not
    a speed check)."""
    script = tmp_path / "ctrl_c_at_line.py"
    script.write_text(_CTRL_C_AT_LINE, encoding="utf-8")
    ks = ["3", "40", "150", "400", "700", "1000", "1300"]
    out, err = _script_within(script, ks, cwd=tmp_path, hung="the pool did not stop after a Ctrl-C")
    assert out.splitlines() == [f"{k} interrupted 0" for k in ks], err


def _script_within(script, args, *, cwd, hung: str) -> tuple[str, str]:
    """Run ``script`` in its own session and return its (stdout, stderr) once it exits 0;
    on a hang (120 s: a guard, not a speed check) kill it and its workers together and
    fail with ``hung`` and what it printed before."""
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=cwd, env=_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{hung}; printed before: {out!r}")
    assert proc.returncode == 0, err
    return out, err


_STUCK_WORKER = """
import multiprocessing, sys, time
from toolcall_sim import backends
from toolcall_sim.backends import local

def stuck(seed):
    if seed > 0:
        time.sleep(3600)  # a call that never ends in time: the stop event cannot reach it
    return seed

if __name__ == "__main__":
    local.STOP_GRACE_S = 0.5
    gen = backends.map_seeds(stuck, 0, 4, workers=2)
    print(next(gen), flush=True)
    gen.close()  # an early stop: the caller stops reading
    print(len(multiprocessing.active_children()), flush=True)
"""


@pytest.mark.slow
def test_an_early_stop_ends_workers_that_do_not_finish(tmp_path):
    """A caller that stops reading (Ctrl-C, a failed seed) ends the pool even while its
    workers are inside a call that would take an hour: after the grace period they are
    terminated, and none is left. (The old pool's ``shutdown(wait=True)`` waited for the
    hour; the timeout guards against that, it is not a speed check.)"""
    script = tmp_path / "stuck_worker.py"
    script.write_text(_STUCK_WORKER, encoding="utf-8")
    out, err = _script_within(script, [], cwd=tmp_path, hung="the pool waited for its stuck workers")
    assert out.splitlines() == ["0", "0"], err


@pytest.mark.slow
def test_ctrl_c_on_explore_prints_the_summary_so_far(tmp_path):
    code, out, err = _interrupt_after(["explore", "--world", "default", "--max-states", "100000000", "--max-in-flight", "5s",
                                       "--agent-restarts", "2", "--out", "o"], tmp_path,
                                      lambda line: "states" in line,
                                      # a log gets no progress unless asked (sim/io/progress.py Rule 1)
                                      env=dict(_env(), TOOLCALL_SIM_PROGRESS="lines"))
    assert code == 130, err
    assert "Traceback" not in err
    lines = out.splitlines()
    assert lines[0] == "explore contract: counterexamples go to o"
    assert lines[1].startswith("  interrupted (Ctrl-C) at ")
    assert "unique states" in lines[2]
    assert "exhausted, no violation" not in out
