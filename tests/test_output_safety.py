"""Outputs never destroy what they did not write (issue 32, "Outputs destroy data"):
sim/io/output.py Rules 1 and 3-7.

A folder of the user's files survives every output flag of every command; a device
node, a FIFO, a socket or a folder given as a file is refused before any work; a symlink
is written through; files and folders get the umask; a full disk is one line, exit 2,
with no partial file and nothing earlier lost; a counterexample is its two files or none.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import snapshot
from toolcall_sim.io import output
from toolcall_sim.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
US02 = "us02_interrupt_stops_foreground"
BUGGY = "contract+records-lost-on-new-message"  # swarm seed 7 finds it at once (tests/test_outputs.py)


def _user_folder(root: Path) -> Path:
    """A folder of the user's own files: what no output may touch."""
    u = root / "mine"
    (u / "sub").mkdir(parents=True)
    (u / "notes.txt").write_text("my notes\n")
    (u / ".hidden").write_text("dot\n")
    (u / "sub" / "data.csv").write_text("1,2\n")
    return u


def _run(argv: list[str], cwd: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    monkeypatch.chdir(cwd)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def _refused(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err


# Every output flag of every command, given the user's folder ({u}). A flag that replaces
# a folder whole, or names a file, refuses it (exit 2); a flag that adds files to a
# folder adds them beside the user's (exit 0 or 1). compare's --out adds files the same
# way (sim/ci/compare.py) but runs for a minute; its --report is here.
EVERY_FLAG = [
    ("run --report", ["run", US02, "--report", "{u}"], {2}),
    ("run --trace", ["run", US02, "--trace", "{u}"], {2}),
    ("explore --report", ["explore", "--world", "default", "--report", "{u}"], {2}),
    ("explore --graph", ["explore", "--world", "default", "--graph", "{u}"], {2}),
    ("explore --out", ["explore", "--world", "default", "--max-states", "50", "--out", "{u}"], {0, 1}),
    ("replay --report", ["replay", "{tmp}/none.json", "--report", "{u}"], {2}),
    ("check --out", ["check", "--out", "{u}"], {2}),
    ("check --update-baseline", ["check", "--baseline", "{u}", "--update-baseline"], {2}),
    ("compare --report", ["compare", "--seeds", "1", "--report", "{u}"], {2}),
    ("swarm --out", ["swarm", "--seeds", "1", "--out", "{u}"], {0, 1}),
    ("search --out", ["search", "--examples", "1", "--out", "{u}"], {0, 1}),
    ("search --world --out", ["search", "--world", "default", "--examples", "1", "--steps", "2", "--out", "{u}"],
     {0, 1}),
    ("sweep --report", ["sweep", "age_margin", "--seeds", "1", "--report", "{u}"], {0}),
]


@pytest.mark.parametrize("argv,codes", [c[1:] for c in EVERY_FLAG], ids=[c[0] for c in EVERY_FLAG])
def test_a_folder_of_user_files_survives_every_output_flag(tmp_path, monkeypatch, capsys, argv, codes):
    u = _user_folder(tmp_path)
    before = snapshot(u)
    code, _, err = _run([a.replace("{u}", str(u)).replace("{tmp}", str(tmp_path)) for a in argv], tmp_path,
                        monkeypatch, capsys)
    assert code in codes, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
    after = snapshot(u)
    assert {k: v for k, v in after.items() if k in before} == before  # every user file as it was
    if code == 2:
        assert after == before


@pytest.mark.parametrize("where", [".", "home", "parent", "root"])
def test_a_report_never_replaces_the_current_home_parent_or_root_folder(tmp_path, monkeypatch, capsys, where):
    """Refused whatever the folder holds, even nothing."""
    cwd = tmp_path / "work" / "here"
    cwd.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    target = {".": ".", "home": str(home), "parent": "..", "root": "/"}[where]
    code, _, err = _run(["run", US02, "--report", target], cwd, monkeypatch, capsys)
    _refused(code, err, "replaced whole")
    assert cwd.is_dir() and home.is_dir()


def test_the_default_check_folder_of_user_files_is_refused_before_the_suite_runs(tmp_path, monkeypatch, capsys):
    """``check`` with no --out writes ./reports/out/check/<suite>: the same rule."""
    from toolcall_sim.ci import check

    mine = tmp_path / "reports" / "out" / "check" / "ci"
    mine.mkdir(parents=True)
    (mine / "keep.txt").write_text("mine\n")
    monkeypatch.setattr(check, "run_check", lambda *a, **k: pytest.fail("the suite ran"))
    code, _, err = _run(["check"], tmp_path, monkeypatch, capsys)
    _refused(code, err, "did not write")
    assert (mine / "keep.txt").read_text() == "mine\n"


def test_an_empty_folder_or_an_earlier_report_is_used(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _run(["run", US02, "--report", str(empty)], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert (empty / output.MARKER).is_file() and (empty / "index.html").is_file()
    (empty / "index.html").write_text("stale")
    code, _, err = _run(["run", US02, "--report", str(empty)], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert (empty / "index.html").read_text() != "stale"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left beside it


def test_files_put_into_the_report_folder_during_the_run_stop_the_replace(tmp_path):
    out_dir = tmp_path / "r"
    tmp = output.new_report_dir(out_dir)
    out_dir.mkdir()
    (out_dir / "theirs.txt").write_text("x")
    with pytest.raises(output.OutputError, match="appeared"):
        output.replace_dir(tmp, out_dir)
    assert (out_dir / "theirs.txt").read_text() == "x"


# ---------------------------------------------------------------------------
# Special files: a device node, a FIFO, a socket, a folder
# ---------------------------------------------------------------------------


def _make(kind: str, path: Path) -> None:
    if kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in our folder
        except PermissionError:
            pytest.skip("mknod of a character device needs root")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    else:
        path.mkdir()


KINDS = {"device": stat.S_ISCHR, "fifo": stat.S_ISFIFO, "socket": stat.S_ISSOCK, "folder": stat.S_ISDIR}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("argv", [["run", US02, "--trace", "{f}"],
                                  ["explore", "--world", "default", "--max-states", "20", "--out", "{tmp}/o",
                                   "--graph", "{f}"],
                                  ["check", "--baseline", "{f}", "--update-baseline", "--out", "{tmp}/o"]],
                         ids=["run --trace", "explore --graph", "check --baseline"])
def test_a_special_file_is_refused_before_any_work_and_stays_what_it_was(tmp_path, monkeypatch, capsys, kind, argv):
    node = tmp_path / "node"
    _make(kind, node)
    code, _, err = _run([a.replace("{f}", str(node)).replace("{tmp}", str(tmp_path)) for a in argv], tmp_path,
                        monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert KINDS[kind](os.lstat(node).st_mode), f"{kind} replaced"
    assert not (tmp_path / "o").exists()  # before any work


@pytest.mark.parametrize("kind", ["device", "fifo", "socket"])
def test_write_atomic_never_replaces_a_special_file(tmp_path, kind):
    node = tmp_path / "node"
    _make(kind, node)
    with pytest.raises(output.OutputError, match="not a regular file"):
        output.write_atomic(node, "x")
    assert KINDS[kind](os.lstat(node).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["node"]


def test_dev_null_as_trace_is_refused_and_stays_a_device(tmp_path, monkeypatch, capsys):
    before = os.lstat("/dev/null")
    code, _, err = _run(["run", US02, "--trace", "/dev/null"], tmp_path, monkeypatch, capsys)
    _refused(code, err, "device node")
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_symlink_is_written_through_and_said(tmp_path, monkeypatch, capsys):
    target = tmp_path / "runs" / "run-7.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    code, _, err = _run(["run", US02, "--trace", str(link)], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("{") and "symlink" in err and str(target) in err


def test_a_symlink_to_a_device_is_refused(tmp_path, monkeypatch, capsys):
    link = tmp_path / "out.jsonl"
    link.symlink_to("/dev/null")
    code, _, err = _run(["run", US02, "--trace", str(link)], tmp_path, monkeypatch, capsys)
    _refused(code, err, "device node")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode) and link.is_symlink()


# ---------------------------------------------------------------------------
# Modes: the user's umask
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_get_the_umask_in_a_fresh_process(tmp_path, umask):
    """The umask is read at import, so a fresh process with it set is the real test."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "toolcall_sim", "run", US02, "--trace", "t.jsonl", "--report", "r"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                          preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "t.jsonl").st_mode) == 0o666 & ~umask
    for path in (tmp_path / "r").rglob("*"):
        want = (0o777 if path.is_dir() else 0o666) & ~umask
        assert stat.S_IMODE(os.stat(path).st_mode) == want, path
    assert stat.S_IMODE(os.stat(tmp_path / "r").st_mode) == 0o777 & ~umask


def test_an_overwritten_file_keeps_its_mode(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("old")
    os.chmod(f, 0o640)
    output.write_atomic(f, "new")
    assert f.read_text() == "new" and stat.S_IMODE(os.stat(f).st_mode) == 0o640


# ---------------------------------------------------------------------------
# Errors while writing: a full disk, an unwritable place, a vanished folder
# ---------------------------------------------------------------------------


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_on_trace_is_one_line_and_leaves_the_old_file(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text("earlier\n")
    monkeypatch.setattr(output.os, "fsync", _enospc)
    code, _, err = _run(["run", US02, "--trace", str(trace)], tmp_path, monkeypatch, capsys)
    _refused(code, err, "No space left")
    assert trace.read_text() == "earlier\n" and sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_a_full_disk_on_a_report_leaves_the_earlier_report(tmp_path, monkeypatch, capsys):
    from toolcall_sim.reports import check_html

    code, _, err = _run(["run", US02, "--report", "r"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    before = snapshot(tmp_path / "r")
    real_page = check_html.page

    def page_then_full(*a, **k):
        real_page(*a, **k)
        _enospc()
    monkeypatch.setattr(check_html, "page", page_then_full)
    code, _, err = _run(["run", US02, "--report", "r"], tmp_path, monkeypatch, capsys)
    _refused(code, err, "No space left")
    assert snapshot(tmp_path / "r") == before and sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.fixture
def small_disk(tmp_path):
    """A real 16 KiB file system (tmpfs; we are root in the test machine), or a skip."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True,
                          check=False)
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_a_really_full_disk_is_one_line_and_no_partial_file(small_disk, tmp_path, monkeypatch, capsys):
    code, _, err = _run(["run", US02, "--trace", str(small_disk / "t.jsonl")], tmp_path, monkeypatch, capsys)
    _refused(code, err, "No space left")
    assert list(small_disk.iterdir()) == []
    code, _, err = _run(["run", US02, "--report", str(small_disk / "r")], tmp_path, monkeypatch, capsys)
    _refused(code, err, "No space left")
    assert list(small_disk.iterdir()) == []


def test_check_into_a_read_only_place_is_refused_before_the_suite_runs(tmp_path, monkeypatch, capsys):
    from toolcall_sim.ci import check

    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(ro)], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        monkeypatch.setattr(check, "run_check", lambda *a, **k: pytest.fail("the suite ran"))
        code, _, err = _run(["check", "--out", str(ro / "report")], tmp_path, monkeypatch, capsys)
        _refused(code, err, "Read-only")
        for argv in (["run", US02, "--trace", str(ro / "t.jsonl")], ["swarm", "--seeds", "1", "--out", str(ro)]):
            code, _, err = _run(argv, tmp_path, monkeypatch, capsys)
            _refused(code, err, "Read-only")
    finally:
        subprocess.run(["umount", str(ro)], check=False)


def test_check_below_a_file_is_refused_before_the_suite_runs(tmp_path, monkeypatch, capsys):
    from toolcall_sim.ci import check

    (tmp_path / "f").write_text("x")
    monkeypatch.setattr(check, "run_check", lambda *a, **k: pytest.fail("the suite ran"))
    code, _, err = _run(["check", "--out", str(tmp_path / "f" / "r")], tmp_path, monkeypatch, capsys)
    _refused(code, err, "not a folder")


FRESH_SUITE = """
name = "fresh"
[[scenarios]]
files = ["us02_interrupt_stops_foreground"]
variants = ["contract"]
"""


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_update_baseline_in_a_fresh_repository_makes_its_folders_with_the_umask(tmp_path, umask):
    """A fresh repository has no reports/: ``check --update-baseline`` makes it (and the
    report's folders) with the umask's modes, writes the baseline, and exits 0; a fresh
    process, since the umask is read at import."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=False)
    (tmp_path / "suite.toml").write_text(FRESH_SUITE)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "toolcall_sim", "check", "suite.toml", "--update-baseline"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                          preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    assert "baseline written: reports/baseline.json" in proc.stdout
    base = tmp_path / "reports" / "baseline.json"
    assert base.is_file() and '"schema": "toolcall-sim/baseline/1"' in base.read_text()
    assert stat.S_IMODE(os.stat(base).st_mode) == 0o666 & ~umask
    for folder in (tmp_path / "reports", tmp_path / "reports" / "out", tmp_path / "reports" / "out" / "check"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o777 & ~umask, folder
    assert (tmp_path / "reports" / "out" / "check" / "fresh" / "summary.md").is_file()


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_update_baseline_below_a_file_or_a_dangling_link_is_refused_before_the_suite_runs(
        tmp_path, monkeypatch, capsys, kind):
    """The folders the baseline needs are made only where nothing is in the way: a file or
    a symlink to nothing named ``reports`` is one line, exit 2, before the suite runs, and
    stays what it was."""
    from toolcall_sim.ci import check

    (tmp_path / "suite.toml").write_text(FRESH_SUITE)
    reports = tmp_path / "reports"
    if kind == "file":
        reports.write_text("the user's notes\n")
    else:
        os.symlink("gone", reports)
    monkeypatch.setattr(check, "run_check", lambda *a, **k: pytest.fail("the suite ran"))
    code, _, err = _run(["check", "suite.toml", "--update-baseline", "--out", str(tmp_path / "o")], tmp_path,
                        monkeypatch, capsys)
    _refused(code, err, "not a folder")
    if kind == "file":
        assert reports.read_text() == "the user's notes\n"
    else:
        assert reports.is_symlink() and os.readlink(reports) == "gone" and "symlink to nothing" in err


def test_a_folder_that_vanishes_mid_run_is_one_line(tmp_path, monkeypatch, capsys):
    """The --out folder removed between the check and the write: the write makes it
    again (mkdir -p), and when it cannot, says so in one line."""
    gone = tmp_path / "gone"

    def blocked(*_a, **_k):
        raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
    monkeypatch.setattr(output.tempfile, "mkstemp", blocked)
    with pytest.raises(output.OutputError, match=str(gone)):
        output.write_atomic(gone / "x.json", "{}")


# ---------------------------------------------------------------------------
# A counterexample is its files together or not at all
# ---------------------------------------------------------------------------


def test_files_written_together_are_all_there_or_none(tmp_path, monkeypatch):
    a, b = tmp_path / "s.toml", tmp_path / "s.json"
    real = output.os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            _enospc()
        real(src, dst)
    monkeypatch.setattr(output.os, "replace", second_fails)
    with pytest.raises(output.OutputError, match="s.json"):
        output.write_together({a: "toml", b: "json"})
    assert list(tmp_path.iterdir()) == []


def test_a_swarm_on_a_full_disk_leaves_no_scenario_without_its_counterexample(tmp_path, monkeypatch, capsys):
    real = output._write_tmp

    def json_fails(target, raw, mode):
        if target.suffix == ".json":
            _enospc()
        return real(target, raw, mode)
    monkeypatch.setattr(output, "_write_tmp", json_fails)
    out = tmp_path / "o"
    code, _, err = _run(["swarm", "--seeds", "1", "--first-seed", "7", "--variant", BUGGY, "--out", str(out)],
                        tmp_path, monkeypatch, capsys)
    _refused(code, err, "swarm-7-")
    assert not out.exists() or list(out.iterdir()) == []
    monkeypatch.undo()
    code, _, err = _run(["swarm", "--seeds", "1", "--first-seed", "7", "--variant", BUGGY, "--out", str(out)],
                        tmp_path, monkeypatch, capsys)
    assert code == 1, err
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"swarm-7-{BUGGY}.json", f"swarm-7-{BUGGY}.toml"]
