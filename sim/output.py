"""Where the command line writes, and how: whole files under a folder the user chose.

Theory of operation
-------------------
Rule 1. Every file is written whole or not at all: to a temporary name in the target's
        own folder (so the rename cannot cross file systems), flushed and fsynced, then
        renamed over the target with ``os.replace``, which is atomic on POSIX and Windows.
        A Ctrl-C or a crash leaves the old file or the new one, never half of one, and at
        worst a ``.<name>.*.tmp`` file, which is removed when the write fails in Python.
Rule 2. Outputs go where the user runs the command: the default output folder is
        ``./reports/out/<command>`` under the current directory (``--out`` changes
        it), never a folder inside the installed package (after ``pip install .`` that
        would be site-packages). The command names the folder in its first line.
Rule 3. A target is checked before any work starts (``check_out_dir``,
        ``check_out_file``): a folder that is a file, or a file whose folder does not
        exist or which is a folder, is bad input (exit 2) found in a millisecond, not
        after a search of minutes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DEFAULT_OUT = Path("reports") / "out"  # relative: under the current directory


class OutputError(Exception):
    """One line: why an output path cannot be used (bad input, exit 2)."""


def default_out_dir(command: str) -> str:
    """The default ``--out`` of ``command``, relative to the current directory."""
    return str(DEFAULT_OUT / command)


def check_out_dir(path: str | Path, flag: str = "--out") -> Path:
    """``path`` as an output folder: it may not exist yet (it is created when the first
    file is written), but it may not be a file, nor lie below one."""
    p = Path(path)
    if str(path) == "":
        raise OutputError(f"{flag}: an empty folder name")
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            raise OutputError(f"{flag}: {q} is a file, not a folder")
        if q.exists():
            break
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputError(f"{flag}: {p}: not writable")
    return p


def check_out_file(path: str | Path, flag: str) -> Path:
    """``path`` as a file to (over)write: its folder must exist and it may not be a folder."""
    p = Path(path)
    if str(path) == "":
        raise OutputError(f"{flag}: an empty file name")
    if p.is_dir():
        raise OutputError(f"{flag}: {p} is a folder, not a file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{flag}: {p}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{flag}: {p}: the folder {parent} is not writable")
    return p


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all (Rule 1); creates missing folders."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


# Moved to sim/interrupt.py (Ctrl-C and SIGTERM, one rule); these names keep working here.
from .interrupt import sigint_deferred, sigint_flag  # noqa: E402,F401
