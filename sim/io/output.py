"""Where the command line writes, and how: whole files under a folder the user chose,
never over anything it did not write.

Theory of operation
-------------------
Rule 1. Every file is written whole or not at all: to a temporary name in the target's
        own folder (so the rename cannot cross file systems), flushed and fsynced, then
        renamed over the target with ``os.replace``, which is atomic on POSIX and Windows.
        A Ctrl-C, a full disk or a crash leaves the old file or the new one, never half of
        one, and at worst a ``.<name>.*.tmp`` file, which is removed when the write fails
        in Python. Files that belong together (a counterexample's scenario and its
        ``.json``) are written by ``write_together``: all to temporaries, then renamed;
        when any write fails none of them is left (the new ones are removed).
Rule 2. Outputs go where the user runs the command: the default output folder is
        ``./reports/out/<command>`` under the current directory (``--out`` changes
        it), never a folder inside the installed package (after ``pip install .`` that
        would be site-packages). The command names the folder in its first line.
Rule 3. A target is checked before any work starts (``check_out_dir``,
        ``check_out_file``, ``check_replaceable_dir``): a folder that is a file, a file
        whose folder does not exist or which is a folder, or a place where nothing can be
        made (tried: permission bits do not bind root, a read-only mount does) is bad
        input (exit 2) found in a millisecond, not after a search of minutes. A file
        whose caller makes its folders (``check_out_file(..., make_folders=True)``: the
        baseline ``check --update-baseline`` writes, in a fresh repository with no
        ``reports/`` yet) may name missing folders; each that exists on the way must be a
        folder (not a file, nor a symlink to nothing), and the nearest must take a new
        entry. They are made when the file is written, with the umask's mode (Rule 5).
Rule 4. The atomic rename replaces only a regular file or a new name. A device node, a
        FIFO, a socket or a folder at the target is refused (``OutputError``), so
        ``--trace /dev/null`` run as root never replaces ``/dev/null`` with a file. A
        symlink is written through: its final target is written (atomically, next to the
        target) and the link stays, as ``>`` in a shell does; ``check_out_file`` says so
        in one line on stderr. Writing through, not refusing: a link such as
        ``latest.jsonl -> run-7.jsonl`` is how users point at an output on purpose.
Rule 5. Outputs get the user's umask, as every ordinary tool's do: a new file
        ``0o666 & ~umask``, a new folder ``0o777 & ~umask`` (mkstemp and mkdtemp would
        give 0600 and 0700). The umask is read once, at import, from
        ``/proc/self/status`` (no race with threads), else by setting and restoring it.
        A file that is overwritten keeps its own mode, as ``cp`` and ``>`` keep it.
Rule 6. A folder replaced whole (a report: ``check --out``, ``--report DIR``) is replaced
        only when it is one of ours (it holds the marker file ``MARKER``, which
        ``mark_ours`` writes into every report) or is empty; a folder that holds anything
        else is refused before any work, as are ``/``, the home folder, the current folder
        and any folder above it, whatever they hold. Folders written before the marker
        existed are refused too: the one line says to remove them or pick another.
Rule 7. Any OSError while writing (``ENOSPC``, a read-only file system, a folder that
        vanished) is the user's path failing: ``OutputError``, one line naming the path,
        exit 2; never a harness error, and what was there before stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

DEFAULT_OUT = Path("reports") / "out"  # relative: under the current directory
MARKER = ".toolcall-sim-report"  # Rule 6: inside every folder we replace whole
MARKER_TEXT = "written by toolcall-sim: this folder is replaced whole by the next report written here\n"


class OutputError(Exception):
    """One line: why an output path cannot be used (bad input, exit 2)."""


def _read_umask() -> int:
    """Rule 5: the process's umask, without changing it where Linux can tell."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)  # at import: before the command starts any thread
    os.umask(old)
    return old


UMASK = _read_umask()


def file_mode() -> int:
    """The mode of a new file (Rule 5)."""
    return 0o666 & ~UMASK


def dir_mode() -> int:
    """The mode of a new folder (Rule 5)."""
    return 0o777 & ~UMASK


def _why(err: OSError) -> str:
    return err.strerror or str(err)


def default_out_dir(command: str) -> str:
    """The default ``--out`` of ``command``, relative to the current directory."""
    return str(DEFAULT_OUT / command)


def _probe(base: Path, name: str) -> None:
    """Rule 3: make a folder in ``base`` and remove it, or raise the OSError."""
    os.rmdir(tempfile.mkdtemp(prefix=f".{name or 'out'}.probe-", dir=base))


def check_out_dir(path: str | Path, flag: str = "--out") -> Path:
    """``path`` as an output folder: it may not exist yet (it is created when the first
    file is written), but it may not be a file, nor lie below one, and its nearest
    existing folder must take a new entry (Rule 3)."""
    if str(path) == "":
        raise OutputError(f"{flag}: an empty folder name")
    p = Path(path)
    try:
        for q in (p, *p.parents):
            if q.exists() and not q.is_dir():
                raise OutputError(f"{flag}: {q} is {_kind(q)}, not a folder")
            if q.exists():
                break
        base = next((q for q in (p, *p.parents) if q.exists()), Path("."))
        _probe(base, p.name)
    except OSError as err:
        raise OutputError(f"{flag}: {p}: cannot write in {base}: {_why(err)}") from None
    except ValueError as err:  # a NUL byte in the name
        raise OutputError(f"{flag}: {path!r}: {err}") from None
    return p


def _kind(p: Path) -> str:
    """What is at ``p``, in words (not following a final symlink)."""
    try:
        mode = os.lstat(p).st_mode
    except OSError:
        return "missing"
    for test, words in ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symlink"),
                        (stat.S_ISCHR, "a device node"), (stat.S_ISBLK, "a device node"),
                        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def _target(path: str | Path) -> tuple[Path, int | None]:
    """Rule 4: where writing ``path`` lands (a symlink's final target) and the mode of the
    regular file there (None: a new name); OutputError for anything else."""
    p = Path(path)
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p, None
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {_why(err)}") from None
    if not stat.S_ISREG(st.st_mode):
        shown = str(path) if str(p) == str(path) else f"{path} (-> {p})"
        raise OutputError(f"{shown}: is {_kind(p)}, not a regular file; toolcall-sim writes only regular files")
    return p, stat.S_IMODE(st.st_mode)


def check_out_file(path: str | Path, flag: str, make_folders: bool = False) -> Path:
    """``path`` as a file to (over)write, before any work: a new name or a regular file
    (through a symlink, said on stderr: Rule 4) in a folder that exists and takes a new
    entry (Rule 3); with ``make_folders``, in missing folders that can be made there."""
    if str(path) == "":
        raise OutputError(f"{flag}: an empty file name")
    try:
        p = Path(path)
        if p.is_dir():
            raise OutputError(f"{flag}: {p} is a folder, not a file")
        if make_folders:  # a file in the way is named as such, not as a failed look-up below it
            _nearest_folder(p.parent, p, flag)
        try:
            target, _ = _target(p)
        except OutputError as err:
            raise OutputError(f"{flag}: {err}") from None
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir() and make_folders:
            parent = _nearest_folder(parent, p, flag)
        if not parent.is_dir():
            raise OutputError(f"{flag}: {p}: the folder {parent} does not exist")
        try:
            _probe(parent, target.name)
        except OSError as err:
            raise OutputError(f"{flag}: {p}: the folder {parent} is not writable: {_why(err)}") from None
    except ValueError as err:  # a NUL byte in the name
        raise OutputError(f"{flag}: {path!r}: {err}") from None
    if target != p:
        sys.stderr.write(f"toolcall-sim: {flag}: {p} is a symlink; writing its target {target}\n")
    return p


def _nearest_folder(missing: Path, path: Path, flag: str) -> Path:
    """Rule 3 for a file whose folders are made when it is written: the nearest existing
    folder above ``missing``; OutputError when something on the way is no folder (a file,
    a device, a symlink to nothing), which making the folders would trip on after the run."""
    for q in (missing, *missing.parents):
        if os.path.lexists(q):
            if not q.is_dir():
                what = "a symlink to nothing" if q.is_symlink() and not q.exists() else _kind(q)
                raise OutputError(f"{flag}: {path}: {q} is {what}, not a folder")
            return q
    return Path(".")


def _write_tmp(target: Path, raw: bytes, mode: int | None) -> str:
    """``raw`` in a temporary file beside ``target`` with the mode Rule 5 gives it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, file_mode() if mode is None else mode)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _mkdirs(p: Path) -> None:
    try:
        p.mkdir(parents=True, exist_ok=True)  # mkdir's own mode is 0o777 & ~umask (Rule 5)
    except OSError as err:
        raise OutputError(f"{p}: cannot make the folder: {_why(err)}") from None


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all (Rules 1, 4, 5, 7); creates missing
    folders. Returns ``path`` as given (a symlink stays the name the user knows)."""
    write_together({path: data})
    return Path(path)


def write_together(files: dict) -> list[Path]:
    """Rule 1: every ``{path: data}`` written, or none of them: all go to temporaries
    first, then are renamed; when a write or a rename fails, the temporaries and the
    files already renamed are removed and OutputError names the path that failed."""
    staged: list[tuple[Path, Path, str]] = []  # (as given, target, temporary)
    done: list[Path] = []
    current = None
    try:
        for path, data in files.items():
            current = Path(path)
            target, mode = _target(current)
            _mkdirs(target.parent)
            raw = data.encode("utf-8") if isinstance(data, str) else data
            staged.append((current, target, _write_tmp(target, raw, mode)))
        for given, target, tmp in staged:
            current = given
            os.replace(tmp, target)
            done.append(target)
    except BaseException as err:
        for _, _, tmp in staged:
            _unlink(tmp)
        if len(staged) > 1:
            for target in done:  # a pair is whole or absent: the new halves go too
                _unlink(target)
        if isinstance(err, OSError):
            raise OutputError(f"{current}: cannot write: {_why(err)}") from None
        raise
    return [given for given, _, _ in staged]


def _forbidden(p: Path) -> str | None:
    """Rule 6: why ``p`` may never be replaced whole, whatever it holds (None: it may)."""
    real = p.resolve()
    if real == Path(real.anchor):
        return "the root folder"
    with contextlib.suppress(RuntimeError, KeyError, OSError):
        if real == Path.home().resolve():
            return "your home folder"
    cwd = Path.cwd().resolve()
    if real == cwd:
        return "the current folder"
    if real in cwd.parents:
        return "a folder above the current one"
    return None


def _replaceable(p: Path) -> bool:
    """Rule 6: ``p`` is absent, empty, or one of ours."""
    if not p.exists():
        return True
    marker = p / MARKER
    return (marker.is_file() and not marker.is_symlink()) or not any(p.iterdir())


def check_replaceable_dir(path: str | Path, flag: str) -> Path:
    """Rule 6 (and Rule 3): ``path`` can become a report folder, replaced whole, found
    before the run starts. A symlink to a folder is followed (its target is replaced);
    returns the folder that will be replaced."""
    p = check_out_dir(path, flag)
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    try:
        why = _forbidden(p)
        if why is not None:
            raise OutputError(f"{flag}: {path} is {why}, and a report folder is replaced whole; "
                              f"name a new folder for the report, e.g. {Path(path) / 'report'}")
        if not _replaceable(p):
            raise OutputError(f"{flag}: {path} holds files toolcall-sim did not write (no {MARKER} in it) and a "
                              "report folder is replaced whole; name a new or empty folder, or remove this one")
    except OSError as err:
        raise OutputError(f"{flag}: {path}: cannot read: {_why(err)}") from None
    return p


def new_report_dir(out_dir: Path) -> Path:
    """A fresh temporary folder beside ``out_dir`` (Rule 1) with the umask's mode (Rule 5)
    and the marker that makes it ours (Rule 6)."""
    _mkdirs(out_dir.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    except OSError as err:
        raise OutputError(f"{out_dir}: cannot write in {out_dir.parent}: {_why(err)}") from None
    try:
        os.chmod(tmp, dir_mode())
        (tmp / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, OSError):
            raise OutputError(f"{out_dir}: cannot write in {out_dir.parent}: {_why(err)}") from None
        raise
    return tmp


def replace_dir(tmp: Path, out_dir: Path) -> None:
    """Rule 1 and 6: the finished folder ``tmp`` replaces ``out_dir`` by renames, if
    ``out_dir`` is still absent, empty or ours (checked again: files may have been put
    there while the run ran); the old folder is removed only after the new one is in."""
    if not _replaceable(out_dir):
        raise OutputError(f"{out_dir}: files toolcall-sim did not write appeared in it during the run; "
                          f"the report is not written there")
    old = None
    try:
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            os.rmdir(old)
            os.replace(out_dir, old)
        os.replace(tmp, out_dir)
    except OSError as err:
        if old is not None and not out_dir.exists():
            with contextlib.suppress(OSError):
                os.replace(old, out_dir)  # put the old report back
        raise OutputError(f"{out_dir}: cannot write: {_why(err)}") from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# Moved to sim/io/interrupt.py (Ctrl-C and SIGTERM, one rule); these names keep working here.
from toolcall_sim.io.interrupt import sigint_deferred, sigint_flag  # noqa: E402,F401
