"""Progress of a long command: a bar on a terminal, nothing extra anywhere else.

Theory of operation
-------------------
A long command (``explore``, ``swarm``, ``search`` and ``check``) shows
that it moves through one object, ``Progress``, which its driver sees only as a callback
``on_progress(done, total, what)``: the drivers (``model/explore.py``, ``sim/drivers/swarm.py``,
``sim/drivers/stateful.py``) count, this module draws. ``model/`` never imports it
(tests/test_purity.py keeps ``model/`` free of I/O), and nothing drawn here reaches a
file, the JSON or the text on stdout: the bar lives on stderr, so ``--json`` stays one
object and the same seed still writes the same bytes (tests/test_progress.py compares a
run with the bar drawn and one without).

Rule 1. One of three displays, chosen once per command (``choose_mode``):
        ``bar``: a live bar (rich) redrawn in place, for a person at a terminal;
        ``lines``: one plain line every ``every`` units, for a log that should show the
        run is alive (the lines the commands printed before the bar existed);
        ``off``: nothing.
        By default the bar is drawn when stderr is a terminal (not ``TERM=dumb``) and
        nothing is drawn otherwise, so a CI log stays clean. ``--quiet`` always means
        ``off``. The environment variable ``TOOLCALL_SIM_PROGRESS`` (``auto``, ``bar``,
        ``lines``, ``off``) overrides the default; any other value is bad input (exit 2),
        never ignored. (``FORCE_COLOR`` and rich's other variables do not decide: a CI that
        sets them for coloured logs still gets no bar.)
Rule 2. Notes (``note``): a line that stays, such as "seed 7 FAIL ..., its files were
        written". They are printed in every display but ``--quiet``'s, above the bar on a
        terminal: they say what happened, not how far along the run is.
Rule 3. Cheap to call. The explorer calls back after every state, so an update that
        changes nothing visible returns at once: the bar redraws at most
        ``REDRAWS_PER_SECOND`` times a second (the wall clock is read here, for the
        display only; it never enters a run), the lines mode every ``every`` units.
Rule 4. No thread. rich's bar is redrawn by the callback itself (``auto_refresh=False``):
        swarm and ``explore --workers`` fork worker processes, and forking a process with
        a second thread is what ``sim/drivers/swarm.py`` ``_pool_context`` refuses to do. The price:
        the elapsed time stands still while one long step (a swarm seed's minimization)
        runs.
Rule 5. ``finish()`` makes the bar reach its end: a search that exhausts its world below
        ``--max-states`` (or stops one state past it) ends at 100 %, with the count it
        reached as the total. An interrupted run is not finished: its bar stays where the
        run stopped.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, TextIO

from toolcall_sim.io.errors import ScenarioError

ENV = "TOOLCALL_SIM_PROGRESS"
MODES = ("auto", "bar", "lines", "off")
REDRAWS_PER_SECOND = 10

LineFormat = Callable[[int, "int | None", str], str]


def is_terminal(stream: TextIO) -> bool:
    """A stream a bar can be redrawn on: a terminal, and not a dumb one."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
    return bool(tty) and os.environ.get("TERM", "") != "dumb"


def choose_mode(stream: TextIO, quiet: bool = False, env: dict | None = None) -> str:
    """``bar``, ``lines`` or ``off`` for a command writing its progress to ``stream``
    (Rule 1). The variable is checked even under ``--quiet``: a wrong value is said."""
    env = os.environ if env is None else env
    wanted = env.get(ENV, "").strip() or "auto"
    if wanted not in MODES:
        raise ScenarioError(f"{ENV}={wanted!r}: must be one of {', '.join(MODES)} (or unset)")
    if quiet:
        return "off"
    if wanted != "auto":
        return wanted
    return "bar" if is_terminal(stream) else "off"


def add_quiet_flag(parser) -> None:
    """``--quiet``, the same on every long command."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar and no progress notes on stderr (by default a bar is drawn only "
                             f"when stderr is a terminal; {ENV}=auto|bar|lines|off overrides that)")


def _default_line(progress: "Progress") -> LineFormat:
    def line(done: int, total: int | None, what: str) -> str:
        of = f" of {total}" if total is not None else ""
        return f"  ... {progress.description}: {done}{of} {progress.unit}" + (f", {what}" if what else "") + "\n"
    return line


class Progress:
    """How far a long command is, drawn as its mode says (Rule 1). Use it as a context
    manager and call it as ``on_progress(done, total, what)``::

        with Progress.for_command(args, "swarm", total=100, unit="seeds") as progress:
            for i in ...:
                progress(i + 1, 100, "0 failure(s)")
            progress.finish()

    ``total`` None means not known (the bar pulses); ``what`` is a short status shown
    after the count (and in a line). ``line`` renders a line of the ``lines`` mode (the
    ``reports`` package's text, so a command keeps its own wording)."""

    def __init__(self, description: str, total: int | None = None, *, mode: str = "off",
                 stream: TextIO | None = None, unit: str = "", every: int = 1, line: LineFormat | None = None,
                 console=None, quiet: bool = False):
        if mode not in ("bar", "lines", "off"):
            raise ValueError(f"progress mode {mode!r}: bar, lines or off")
        self.description = description
        self.total = total
        self.mode = mode
        self.unit = unit
        self.every = max(1, every)
        self.quiet = quiet
        self.done = 0
        self.what = ""
        self._stream = stream
        self._line = line or _default_line(self)
        self._console = console  # a rich Console to draw on (tests force a terminal with one)
        self._lined_at = 0  # ``done`` at the last line (lines mode)
        self._drawn_at = float("-inf")  # wall clock of the last redraw (bar mode)
        self._bar = None
        self._task = None

    @classmethod
    def for_command(cls, args, description: str, total: int | None = None, *, stream: TextIO | None = None,
                    **kwargs) -> "Progress":
        """The progress of a command whose flags are ``args`` (``--quiet``, Rule 1)."""
        stream = stream if stream is not None else sys.stderr
        quiet = bool(getattr(args, "quiet", False))
        return cls(description, total, mode=choose_mode(stream, quiet), stream=stream, quiet=quiet, **kwargs)

    # -- the context -----------------------------------------------------------------

    def __enter__(self) -> "Progress":
        if self.mode == "bar":
            self._start_bar()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing; the last state of the bar stays on the terminal."""
        if self._bar is not None:
            self._redraw()
            self._bar.stop()
            self._bar = None

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

        console = self._console or Console(file=self._stream or sys.stderr, force_terminal=True)
        self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn(escape(self.unit)), TextColumn("{task.fields[what]}"), TimeElapsedColumn(),
                        console=console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False,
                        transient=False)
        self._task = self._bar.add_task(escape(self.description), total=self.total, what="")
        self._bar.start()
        self._redraw()

    # -- the callback ------------------------------------------------------------------

    def __call__(self, done: int, total: int | None = None, what: str = "") -> None:
        """``on_progress(done, total, what)``: ``done`` units of ``total`` (None: keep the
        total given before), ``what`` a short status. Cheap when nothing shows (Rule 3)."""
        self.done = done
        if total is not None:
            self.total = total
        self.what = what
        if self.mode == "lines":
            if done - self._lined_at >= self.every and (self.total is None or done < self.total):
                self._lined_at = done
                self._write(self._line(done, self.total, what))
        elif self.mode == "bar":
            now = time.monotonic()
            if now - self._drawn_at >= 1 / REDRAWS_PER_SECOND or (self.total is not None and done >= self.total):
                self._drawn_at = now
                self._redraw()

    def set_description(self, description: str, total: int | None = None, unknown_total: bool = False) -> None:
        """A new phase (hypothesis's shrinking, say): a new label, and a new total or
        none (``unknown_total``: the bar pulses)."""
        self.description = description
        if total is not None:
            self.total = total
        if unknown_total:
            self.total = None
        self._lined_at = 0  # a phase counts from 0 again
        if self._bar is not None:
            from rich.markup import escape

            self._bar.update(self._task, description=escape(description))
            self._bar.tasks[0].total = self.total  # public Task field; update() cannot set None
            self._redraw()

    def finish(self) -> None:
        """The run is over: the bar reaches its end (Rule 5)."""
        self.total = self.done  # where the run ended, below a bound or a step past it
        if self._bar is not None:
            self._redraw()

    def note(self, text: str) -> None:
        """A line that stays (Rule 2): above the bar on a terminal; not under --quiet."""
        if self.quiet:
            return
        if self._bar is not None:
            from rich.text import Text

            self._bar.console.print(Text(text.rstrip("\n")), soft_wrap=True)
            self._bar.refresh()
        else:
            self._write(text)

    # -- drawing -------------------------------------------------------------------

    def _redraw(self) -> None:
        from rich.markup import escape

        task = self._bar.tasks[0]
        task.total = self.total
        self._bar.update(self._task, completed=self.done, what=escape(self.what))
        self._bar.refresh()

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(text)
        stream.flush()
