"""The hostile-input table's machinery (issue 32): one case, one run, every rule checked.

Theory of operation
-------------------
A case is an input a user could give by mistake or on purpose: files written into a
fresh folder, a command line (``{tmp}`` is that folder), perhaps an environment variable
or a special file made by ``setup`` (a FIFO, a symlink, a read-only folder). It names the
exit code it must end with and the issue class it comes from. ``run_case`` runs it in this
process, in that folder, and checks the rules that hold for every input whatever its
class:

Rule 1. Never a harness error: exit 70 fails the case whatever it expected, and no
        stderr holds a traceback.
Rule 2. Never a hang: a case that has not finished after ``case.seconds`` of wall time
        (a generous bound, far above what any refusal or small run takes) is stopped by
        SIGALRM and fails as a hang. The bound is a watchdog, not a speed test: no case
        asserts how fast it is.
Rule 3. Bad input (exit 2) is exactly one line on stderr, naming the problem (``needle``,
        when the case gives one), and changes no file at all.
Rule 4. Any outcome changes files only below the folders the case declares it writes
        (``writes``, relative to the case's folder); every other file and folder of the
        case's folder keeps its bytes, its mode and its kind (``snapshot``).
Rule 5. ``check`` (a function of the folder) asserts what the case's own class needs,
        e.g. that a symlink's target got the bytes or that ``/dev/null`` is still a
        device.

The cases live in ``tests/hostile_cases_*.py`` (one module per area, each a ``CASES``
list); tests/test_hostile_inputs.py collects every such module, so an area adds rows
without touching another's file.
"""

from __future__ import annotations

import io
import os
import signal
import stat
import sys
from collections.abc import Callable
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

CLASSES = ("output", "unbounded", "signal", "silent", "docs", "fuzz")


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    cls: str  # one of CLASSES: the issue 32 section the case comes from
    expect: int = 2  # the exit code the case must end with
    files: dict[str, bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # ``{tmp}`` is the case's folder here too
    needle: str | None = None  # a piece of the one stderr line (Rule 3), case-insensitive
    writes: tuple[str, ...] = ()  # folders below {tmp} the run may change (Rule 4)
    setup: Callable[[Path], None] | None = None  # makes what files cannot: FIFOs, links, modes
    check: Callable[[Path], None] | None = None  # Rule 5
    seconds: int = 120  # Rule 2's watchdog

    def __post_init__(self):
        assert self.cls in CLASSES, self.cls


class Hang(BaseException):
    """Raised by the watchdog: a BaseException, so the command line's own ``except
    Exception`` (exit 70) cannot swallow it."""


@contextmanager
def watchdog(seconds: int):
    """Rule 2's bound: SIGALRM raises ``Hang`` after ``seconds`` of wall time (a watchdog
    against a hang, never a speed test); the previous handler is restored after."""
    def fire(signum, frame):  # noqa: ARG001
        raise Hang

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple]:
    """Every path below ``root`` (not following links) with its kind, mode and bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        if any(rel_dir == s or rel_dir.startswith(s + os.sep) for s in skip):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = os.path.relpath(p, root)
            if any(rel == s or rel.startswith(s + os.sep) for s in skip):
                continue
            st = os.lstat(p)
            data = None
            if stat.S_ISREG(st.st_mode):
                data = p.read_bytes()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(p)
            out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), data)
    return out


def run_case(case: Case, tmp: Path, monkeypatch) -> tuple[int, str, str]:
    """Run ``case`` in ``tmp`` (Rules 1-5); returns (exit code, stdout, stderr)."""
    from toolcall_sim.cli.main import main

    for name, data in case.files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if case.setup is not None:
        case.setup(tmp)
    for k, v in case.env.items():
        monkeypatch.setenv(k, v.replace("{tmp}", str(tmp)))
    monkeypatch.chdir(tmp)
    before = snapshot(tmp, case.writes)
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()

    try:
        with watchdog(case.seconds), redirect_stdout(out), redirect_stderr(err):
            monkeypatch.setattr(sys, "stdout", out)
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's own errors
                code = exit_.code if isinstance(exit_.code, int) else 2
    except Hang:
        raise AssertionError(f"{case.id}: still running after {case.seconds} s (a hang)") from None
    stderr = err.getvalue()
    assert code != 70, f"{case.id}: harness error (exit 70): {stderr!r}"  # Rule 1
    assert "Traceback" not in stderr, f"{case.id}: {stderr!r}"
    assert code == case.expect, f"{case.id}: exit {code}, expected {case.expect}; stderr {stderr!r}"
    if code == 2:  # Rule 3
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, f"{case.id}: bad input must be one line, got {stderr!r}"
        if case.needle is not None:
            assert case.needle.lower() in lines[0].lower(), f"{case.id}: {lines[0]!r} lacks {case.needle!r}"
    after = snapshot(tmp, case.writes)  # Rule 4
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"{case.id}: changed outside {case.writes or 'nothing'}: {changed}"
    if case.check is not None:  # Rule 5
        case.check(tmp)
    return code, out.getvalue(), stderr
