"""Reading a file the user names as input: only a regular file, and only so much of it.

Theory of operation
-------------------
Every file the command line reads (a scenario, a suite, a sweep, a baseline, a
counterexample or a trace) goes through ``read_capped`` (issue 32: nothing hangs, nothing
unbounded):

Rule 1. The path is stat'ed first: a FIFO (whose open waits for a writer for ever), a
        device (``/dev/zero`` never ends), a socket or a directory is refused in one line,
        never opened.
Rule 2. The file is opened with ``O_NONBLOCK`` (a FIFO put in its place after the stat
        cannot block the open) and checked again by its descriptor.
Rule 3. At most ``cap_bytes`` + 1 bytes are read: a file over its kind's cap (or one
        that grew past it meanwhile) is refused in one line, naming the cap.

The caller turns ``InputFileError`` into its own one-line error (ScenarioError,
SuiteError, ...), so each input keeps its own words.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MB = 1024 * 1024

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class InputFileError(Exception):
    """One line: why the file cannot be read as input (bad input, exit 2)."""


def not_regular(mode: int) -> str | None:
    """What a file of this mode is, in words, when it is not a regular file (None: it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_capped(path: str | Path, shown: str, cap_bytes: int, what: str) -> bytes:
    """The bytes of the regular file at ``path`` (Rules 1-3); ``shown`` names it and
    ``what`` says what it should have been ("a scenario file") in the one line."""
    too_big = f"{shown}: larger than the cap of {cap_bytes // MB} MB for {what}"
    raw = b""
    try:
        why = not_regular(os.stat(path).st_mode)
        if why is None:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                why = not_regular(st.st_mode)
                if why is None:
                    if st.st_size > cap_bytes:
                        raise InputFileError(too_big)
                    raw = f.read(cap_bytes + 1)
    except OSError as err:
        raise InputFileError(f"{shown}: cannot read: {err.strerror or err}") from None
    except ValueError as err:  # e.g. a NUL byte in the path
        raise InputFileError(f"{shown}: cannot read: {err}") from None
    if why is not None:
        raise InputFileError(f"{shown}: is {why}, not {what}")
    if len(raw) > cap_bytes:
        raise InputFileError(too_big)
    return raw
