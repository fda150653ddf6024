"""Rows of the hostile-input table (tests/hostile.py) for outputs (issue 32, class
"output"): report folders that hold a user's files, the current, home and root folders,
single-file outputs aimed at a FIFO, a device node, a socket, a folder or a symlink,
unwritable places and names no file system takes.

What sim/io/output.py promises (its Rules 1-7) and these rows hold it to: a folder is
replaced whole only when it is new, empty or an earlier report of ours (its marker file);
only a regular file or a new name is written, and a symlink's target is written through
it; a place nothing can be made in is refused before the run; outputs get the umask's
modes. Each refusal is one line, exit 2, and (hostile.py Rule 4) changes no file of the
case's folder.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from hostile import Case

GOOD = b"""name = "ok"
until = "1m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" } ]
"""
S = {"s.toml": GOOD}
RUN = ("run", "{tmp}/s.toml")
USER_FILES = {"me/notes.txt": b"a user's notes\n", "me/project/main.go": b"package main\n"}
MARKER = ".toolcall-sim-report"


def _fifo(name: str):
    def setup(tmp: Path) -> None:
        os.mkfifo(tmp / name)
    return setup


def _socket(name: str):
    def setup(tmp: Path) -> None:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(tmp / name))
        s.close()  # the socket file stays: what a daemon's stale socket looks like
    return setup


def _link(name: str, to: str, make: str | None = None):
    """``name`` -> ``to``; ``make`` ("file" or "dir") creates what it points at."""
    def setup(tmp: Path) -> None:
        if make == "dir":
            (tmp / to).mkdir(parents=True, exist_ok=True)
        elif make == "file":
            (tmp / to).parent.mkdir(parents=True, exist_ok=True)
            (tmp / to).write_bytes(b"old\n")
        os.symlink(to, tmp / name)
    return setup


def _is_fifo(name: str):
    def check(tmp: Path) -> None:
        assert stat.S_ISFIFO(os.lstat(tmp / name).st_mode), name
    return check


def _dev_null_is_a_device(tmp: Path) -> None:  # noqa: ARG001
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode), "/dev/null was replaced"


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def _trace_through_link(tmp: Path) -> None:
    assert (tmp / "trace.jsonl").is_symlink(), "the link was replaced by a file"
    data = (tmp / "traces" / "run-7.jsonl").read_bytes()
    assert data.startswith(b"{") and data != b"old\n", "the link's target did not get the trace"


def _new_trace_has_umask_mode(tmp: Path) -> None:
    mode = stat.S_IMODE(os.stat(tmp / "t" / "trace.jsonl").st_mode)
    assert mode == 0o666 & ~_umask(), oct(mode)


def _report_replaced(tmp: Path) -> None:
    rep = tmp / "rep"
    assert (rep / MARKER).is_file(), "the new report lacks its marker"
    assert not (rep / "old-report.html").exists(), "an earlier report's file outlived its replacement"
    assert stat.S_IMODE(os.stat(rep).st_mode) == 0o777 & ~_umask()
    for p in rep.iterdir():
        if p.is_file():
            assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~_umask(), (p, oct(os.stat(p).st_mode))


def _into(folder: str):
    """``{folder}/`` exists (empty) before the run."""
    def setup(tmp: Path) -> None:
        (tmp / folder).mkdir(parents=True, exist_ok=True)
    return setup


CASES = [
    # Report folders (Rule 6): only new, empty or ours is replaced whole.
    Case("output: run --report on a folder of the user's files", (*RUN, "--report", "{tmp}/me"), "output",
         files={**S, **USER_FILES}, needle="did not write"),
    Case("output: run --report on a folder holding one user file and our marker as a symlink",
         (*RUN, "--report", "{tmp}/me"), "output", files={**S, "me/keep.txt": b"x\n", "elsewhere": b"m\n"},
         setup=lambda tmp: os.symlink("../elsewhere", tmp / "me" / MARKER), needle="did not write"),
    Case("output: run --report on the current folder", (*RUN, "--report", "."), "output", files=S,
         needle="the current folder"),
    Case("output: run --report on the folder above the current one", (*RUN, "--report", ".."), "output", files=S,
         needle="above the current"),
    Case("output: run --report on the root folder", (*RUN, "--report", "/"), "output", files=S,
         needle="root folder"),
    Case("output: run --report on the home folder", (*RUN, "--report", "{tmp}/me"), "output",
         files={**S, "me/.bashrc": b"# mine\n"}, env={"HOME": "{tmp}/me"}, needle="home folder"),
    Case("output: run --report through a symlink to a folder of the user's files", (*RUN, "--report", "{tmp}/r"),
         "output", files={**S, **USER_FILES}, setup=_link("r", "me"), needle="did not write"),
    Case("output: check --out on a folder holding a user's file", ("check", "--quick", "--out", "{tmp}/out"),
         "output", files={"out/mine.txt": b"keep me\n"}, needle="did not write"),
    Case("output: check --out under /proc, where nothing can be made, refused before the suite runs",
         ("check", "--out", "/proc/toolcall-sim-report"), "output", needle="/proc/toolcall-sim-report", seconds=30),
    Case("output: explore --report on a folder of the user's files",
         ("explore", "--world", "default", "--variant", "contract", "--out", "{tmp}/o", "--report", "{tmp}/me"),
         "output", files=USER_FILES, needle="did not write"),
    Case("output: replay --report on the current folder", ("replay", "{tmp}/missing.json", "--report", "."),
         "output", needle="current folder"),
    Case("output: run --report on an earlier report replaces it, with the umask's modes",
         (*RUN, "--report", "{tmp}/rep"), "output", expect=0,
         files={**S, f"rep/{MARKER}": b"written by toolcall-sim\n", "rep/old-report.html": b"<p>old</p>\n"},
         writes=("rep",), check=_report_replaced),
    Case("output: run --report on an empty folder writes the report there", (*RUN, "--report", "{tmp}/rep"),
         "output", expect=0, files=S, setup=_into("rep"), writes=("rep",),
         check=lambda tmp: (tmp / "rep" / MARKER).is_file() or (_ for _ in ()).throw(AssertionError("no marker"))),
    # Single-file outputs (Rule 4): a regular file or a new name; a symlink's target.
    Case("output: run --trace into a FIFO (no reader: a write would hang)", (*RUN, "--trace", "{tmp}/fifo"),
         "output", files=S, setup=_fifo("fifo"), check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("output: run --trace /dev/null (as root the rename would delete the device)",
         (*RUN, "--trace", "/dev/null"), "output", files=S, check=_dev_null_is_a_device, needle="device node"),
    Case("output: run --trace into a socket", (*RUN, "--trace", "{tmp}/sock"), "output", files=S,
         setup=_socket("sock"), needle="socket"),
    Case("output: run --trace into a folder", (*RUN, "--trace", "{tmp}/d"), "output", files=S, setup=_into("d"),
         needle="folder"),
    Case("output: run --trace into a folder that does not exist", (*RUN, "--trace", "{tmp}/nope/t.jsonl"),
         "output", files=S, needle="does not exist"),
    Case("output: run --trace below a file", (*RUN, "--trace", "{tmp}/s.toml/t.jsonl"), "output", files=S),
    Case("output: run --trace with a NUL byte in its name", (*RUN, "--trace", "{tmp}/t\x00.jsonl"), "output",
         files=S, needle="null byte"),
    Case("output: run --trace through a symlink to a FIFO", (*RUN, "--trace", "{tmp}/t.jsonl"), "output",
         files=S, setup=lambda tmp: (os.mkfifo(tmp / "fifo"), os.symlink("fifo", tmp / "t.jsonl")),
         check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("output: run --trace through a symlink writes its target and keeps the link",
         (*RUN, "--trace", "{tmp}/trace.jsonl"), "output", expect=0, files=S,
         setup=_link("trace.jsonl", "traces/run-7.jsonl", make="file"), writes=("traces",),
         check=_trace_through_link),
    Case("output: run --trace to a new name gets the umask's mode", (*RUN, "--trace", "{tmp}/t/trace.jsonl"),
         "output", expect=0, files=S, setup=_into("t"), writes=("t",), check=_new_trace_has_umask_mode),
    Case("output: explore --graph into a FIFO",
         ("explore", "--world", "default", "--variant", "contract", "--out", "{tmp}/o", "--graph", "{tmp}/g"),
         "output", setup=_fifo("g"), check=_is_fifo("g"), needle="FIFO", seconds=30),
    Case("output: explore --graph /dev/null",
         ("explore", "--world", "default", "--variant", "contract", "--out", "{tmp}/o", "--graph", "/dev/null"),
         "output", check=_dev_null_is_a_device, needle="device node"),
    # Output folders (Rule 3): a file in the way, or a place nothing can be made in.
    Case("output: explore --out is a file", ("explore", "--world", "default", "--out", "{tmp}/f"), "output",
         files={"f": b"a user's file\n"}, needle="not a folder"),
    Case("output: swarm --out below a file", ("swarm", "--seeds", "2", "--out", "{tmp}/f/sub"), "output",
         files={"f": b"a user's file\n"}, needle="not a folder"),
    Case("output: compare --out under /proc", ("compare", "--seeds", "1", "--out", "/proc/toolcall-sim-compare"),
         "output", needle="cannot write", seconds=30),
    Case("output: sweep --report is a FIFO", ("sweep", "age_margin", "--seeds", "1", "--report", "{tmp}/fifo"), "output",
         setup=_fifo("fifo"), check=_is_fifo("fifo"), needle="not a folder", seconds=30),
    Case("output: search --out is a device node", ("search", "--out", "/dev/null/x"), "output",
         needle="not a folder"),
    Case("output: explore --out with a NUL byte", ("explore", "--world", "default", "--out", "{tmp}/o\x00x"),
         "output", needle="null byte"),
]

# Input files other than scenarios (sim/io/input_file.py): a FIFO is never opened (its open
# would wait for a writer for ever), a device never read (/dev/zero never ends), a
# folder refused; each in one line, before any work.
CASES += [
    Case("unbounded: check --baseline is a FIFO", ("check", "--quick", "--baseline", "{tmp}/fifo", "--out", "{tmp}/o"),
         "unbounded", setup=_fifo("fifo"), check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("unbounded: check --baseline is /dev/zero", ("check", "--quick", "--baseline", "/dev/zero", "--out", "{tmp}/o"),
         "unbounded", needle="character device", seconds=30),
    Case("unbounded: check --baseline --update-baseline is a FIFO",
         ("check", "--quick", "--baseline", "{tmp}/fifo", "--update-baseline", "--out", "{tmp}/o"),
         "output", setup=_fifo("fifo"), check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("unbounded: check's suite is a FIFO", ("check", "{tmp}/fifo", "--out", "{tmp}/o"), "unbounded",
         setup=_fifo("fifo"), check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("unbounded: check's suite is /dev/zero", ("check", "/dev/zero", "--out", "{tmp}/o"), "unbounded",
         needle="character device", seconds=30),
    Case("unbounded: replay of a FIFO", ("replay", "{tmp}/fifo"), "unbounded", setup=_fifo("fifo"),
         check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("unbounded: replay of /dev/zero", ("replay", "/dev/zero"), "unbounded", needle="character device",
         seconds=30),
    Case("unbounded: replay of a folder", ("replay", "{tmp}/d"), "unbounded", setup=_into("d"), needle="directory"),
    Case("unbounded: sweep file is a FIFO", ("sweep", "{tmp}/fifo", "--seeds", "1"), "unbounded",
         setup=_fifo("fifo"), check=_is_fifo("fifo"), needle="FIFO", seconds=30),
    Case("unbounded: sweep file is /dev/zero", ("sweep", "/dev/zero", "--seeds", "1"), "unbounded",
         needle="character device", seconds=30),
]
