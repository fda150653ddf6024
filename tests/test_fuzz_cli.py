"""The command-line flag fuzzer (issue 32): argv built from the parser itself.

Theory of operation
-------------------
Rule 1. The flags come from ``toolcall_sim.cli.main.parser()``: every subcommand, every action it
        declares (a flag, a positional, an append, a switch), so a flag added later is
        fuzzed without this file changing. Hypothesis draws, for each subcommand, a few of
        its flags (repeats allowed), each with a value that is valid and small, or bad:
        negative, zero, huge, empty, not a number, odd bytes, an unknown name; sometimes
        an unknown flag too.
Rule 2. Runs stay cheap: a work-size flag's valid values are small (``SMALL``), and a
        command whose default work is long gets small sizes for the flags the draw left
        out (``QUIET``), appended so a drawn value (parsed first) is overridden only when
        it was not drawn at all. Paths a command writes are drawn below ``out/`` or are
        the defaults (``reports/`` under the current folder).
Rule 3. Hypothesis only builds the argv lists (``derandomize=True``, a fixed number per
        subcommand): ``search`` runs hypothesis itself, which must not run inside a
        ``@given``. Each argv then runs in-process in a fresh folder holding a scenario, a
        counterexample, a trace, a user's file and a folder, under a SIGALRM watchdog.
Rule 4. Every outcome is exit 0, 1 or 2 (130 never: nothing interrupts), never 70 and no
        traceback; exit 2 is exactly one line on stderr; no file outside ``out/`` and
        ``reports/`` changes (tests/hostile.py ``snapshot``). A failure names its argv,
        which is its reproducer.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import Hang, snapshot, watchdog

GOOD = b"""name = "ok"
until = "1m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" } ]
"""
WRITES = ("out", "reports")  # where a run may write (Rule 4)
WATCHDOG_S = 60  # a bound against a hang, far above any example's run

BAD_INTS = ("-1", "0", "-9223372036854775809", "9223372036854775808", "18446744073709551616", "1000000000",
            "1" + "0" * 40, "", "x", "1.5", "0x10", "1e3", "\x00", "\udcff")
BAD_TEXT = ("", " ", "\x00", "\udcff", "\x1b[31m", "nope", "-1", "a" * 300, "--", "\n")
DURATIONS = ("1s", "0s", "30s", "-1s", "1ms", "9999999h", "169h", "1", "soon", "")
VARIANTS = ("contract", "today", "contract+no-age-margin", "contract+no-age-margin+no-age-margin", "contract+",
            "+", "tomorrow", "CONTRACT", "contract+nope")
# Where a command may write: below out/ (checked by Rule 4), or nowhere it can (a file in
# a folder that is missing, a user's folder as a file). Folders are created with parents.
OUT_DIRS = ("out", "out/sub", "out/new/deeper", "keep.txt", "")
OUT_FILES = ("out/a.dot", "out/t.jsonl", "out/g.graphml", "missing/f", "d", "")
# Files the folder holds (``_populate``) and names that are not there: none is an input
# of its flag (a folder, a user's text, NaN, 5,000-deep JSON).
BAD_IN = ("keep.txt", "d", "missing.toml", "", "\x00", "deep.json", "nan.json")

# Rule 2: the valid values of a work-size flag, all small; a flag not here draws from the
# kind of its action (an int, a duration, a variant, a path, free text).
SMALL = {
    "--seeds": ("1", "2"), "--first-seed": ("0", "1", "9223372036854775807"), "--seed": ("0", "3", "9223372036854775807"),
    "--max-states": ("1", "20"), "--examples": ("1", "2"), "--steps": ("1", "3"), "--shrink-runs": ("0", "1"),
    "--workers": ("1",), "--agent-restarts": ("0", "1"), "--ownership-changes": ("0", "1"), "--interrupts": ("0", "1"),
    "--lost-responses": ("0", "1"), "--task-retries": ("0", "1"),
    "--designs": ("contract", "today", "contract,", ",", "nope"), "--worlds": ("below-margin", "", "mars"),
    "--budget": ("explore=2", "search=1", "swarm=1", "2", "explore=0", "explore=x", "mars=1", "=1"),
    "--bug": ("contract", "no-age-margin", "nope", ""), "--property": ("at_most_once", "nope", ""),
    "--cluster": ("", "nope", "tcp://", "tcp://host:notaport", "\x00"),
    "--until": DURATIONS, "--horizon": DURATIONS, "--max-in-flight": DURATIONS,
    "--variant": VARIANTS,
    "--out": OUT_DIRS, "--report": OUT_DIRS, "--trace": OUT_FILES, "--graph": OUT_FILES,
    "--scenario": ("s.toml",) + BAD_IN, "--baseline": ("cx.json",) + BAD_IN,
    "scenario": ("s.toml", "codagt757_incident"), "file": ("cx.json", "t.jsonl"), "sweep": ("age_margin",),
    "suite": BAD_IN,  # check's suite is never a valid one: the CI suite runs for minutes
}
POSITIONAL_BAD = BAD_IN
# Rule 2: sizes a command gets for the flags the draw left out (its default work is long).
QUIET = {
    "explore": ("--max-states", "20"), "swarm": ("--seeds", "2"), "search": ("--examples", "2"),
    "sweep": ("--seeds", "1"), "compare": ("--seeds", "1", "--designs", "contract", "--worlds", "below-margin"),
    "bench": ("--tiny",), "coverage": ("--max-states", "20"),
}
EXAMPLES = {"bench": 3, "compare": 8, "sweep": 8, "check": 15}  # per subcommand; others DEFAULT_EXAMPLES
DEFAULT_EXAMPLES = 100


def subcommands() -> dict[str, argparse.ArgumentParser]:
    from toolcall_sim.cli.main import parser

    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _actions(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if not isinstance(a, argparse._HelpAction) and a.dest != "debug"]


def _value(action: argparse.Action, name: str):
    """Rule 1: a value for ``action``: a valid small one (most often, so runs get past the
    checks too) or a bad one."""
    if name in SMALL:
        good = st.sampled_from(SMALL[name])
    elif action.choices:
        good = st.sampled_from(list(action.choices))
    else:
        good = st.sampled_from(BAD_TEXT)
    if not action.option_strings:
        return st.one_of(good, good, st.sampled_from(POSITIONAL_BAD))
    if action.type is int:
        return st.one_of(good, good, st.sampled_from(BAD_INTS))  # free text could be a valid huge size
    if name in ("--out", "--report", "--trace", "--graph"):
        # Odd names below out/ only (Rule 2: a run writes where it is told); no NUL byte,
        # which sim/io/output.py takes for a folder name today (reported to its owner).
        return st.one_of(good, good, st.sampled_from(("out/ ", "out/\udcff", "out/\x1b[31m", "out/-")))
    # Free text without digits: odd characters, never a size that would run long.
    return st.one_of(good, good, st.sampled_from(BAD_TEXT),
                     st.text(st.characters(blacklist_categories=("Nd",)), max_size=8))


def argv_of(command: str, sub: argparse.ArgumentParser):
    """Rule 1 and 2: one argv for ``command``."""
    actions = _actions(sub)
    flags = [a for a in actions if a.option_strings]
    positionals = [a for a in actions if not a.option_strings]

    @st.composite
    def build(draw):
        argv = [command]
        for pos in positionals:
            if pos.nargs == "?" and command != "check" and draw(st.booleans()):
                continue  # check's default suite is the whole CI suite: always name one
            argv.append(draw(_value(pos, pos.dest)))
        drawn: dict[str, str | None] = {}
        for action in draw(st.lists(st.sampled_from(flags), max_size=4)) if flags else []:
            flag = action.option_strings[-1]
            if action.nargs == 0:
                drawn[flag] = None
                argv.append(flag)
                continue
            drawn[flag] = value = draw(_value(action, flag))
            argv += [flag, value] if draw(st.booleans()) else [f"{flag}={value}"]
        if draw(st.integers(0, 9)) == 0:
            argv.append(draw(st.sampled_from(("--nope", "-x", "--seeds", "--", "extra"))))
        quiet = QUIET.get(command, ())
        for i in range(0, len(quiet), 2):
            if quiet[i] not in drawn and quiet[i] != "--tiny":
                argv += list(quiet[i:i + 2])
        if command == "bench":  # --quick takes seconds: with --tiny it is refused at once
            argv.append("--tiny")
        if command == "bugs":  # every measured driver a tiny budget, after the drawn ones
            driver = drawn.get("--driver", "explore")
            argv += [] if "--driver" in drawn else ["--driver", "explore"]
            for d in ("explore", "search", "swarm"):
                if driver in (d, "all"):
                    argv += ["--budget", f"{d}=1"]
        if command == "search" and "--world" not in drawn and "--shrink-runs" not in drawn:
            argv += ["--shrink-runs", "1"]
        return argv

    return build()


def _collect(command: str, sub: argparse.ArgumentParser, examples: int | None = None) -> list[list[str]]:
    """Rule 3: the argv lists, drawn with a fixed seed and number."""
    seen: list[list[str]] = []

    @settings(max_examples=examples or EXAMPLES.get(command, DEFAULT_EXAMPLES), derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(argv_of(command, sub))
    def draw(argv):
        if argv not in seen:  # each distinct argv runs once
            seen.append(argv)
    draw()
    return seen


_FILES: dict[str, bytes] = {}


def _fixtures() -> dict[str, bytes]:
    """The inputs every example's folder holds: made once (a counterexample and a trace
    of real runs, so replay's valid paths are fuzzed too)."""
    if not _FILES:
        from toolcall_sim.cli.main import main

        with tempfile.TemporaryDirectory() as tmp, redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            (Path(tmp) / "s.toml").write_bytes(GOOD)
            main(["run", f"{tmp}/s.toml", "--trace", f"{tmp}/t.jsonl"])
            main(["explore", "--world", "default", "--variant", "today", "--property", "at_most_once",
                  "--out", f"{tmp}/o", "--quiet"])
            cx = sorted(Path(tmp, "o").glob("*.json"))[0]
            _FILES.update({"s.toml": GOOD, "t.jsonl": (Path(tmp) / "t.jsonl").read_bytes(), "cx.json": cx.read_bytes(),
                           "keep.txt": b"a user's file\n", "deep.json": b"[" * 5000 + b"]" * 5000,
                           "nan.json": cx.read_bytes().replace(b'"steps": ', b'"steps": NaN, "x": ', 1)})
    return _FILES


def _populate(tmp: Path) -> None:
    for name, data in _fixtures().items():
        (tmp / name).write_bytes(data)
    (tmp / "d").mkdir()
    (tmp / "d" / "inside.txt").write_bytes(b"kept\n")


@contextmanager
def _watchdog(argv: list[str], seconds: int = WATCHDOG_S):
    """Rule 3's bound against a hang (hostile.watchdog), reported with the argv that hung."""
    try:
        with watchdog(seconds):
            yield
    except Hang:
        raise AssertionError(f"{argv!r}: still running after {seconds} s (a hang)") from None


def _exit_code(argv: list[str]) -> int:
    from toolcall_sim.cli.main import main

    try:
        return main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        return exit_.code if isinstance(exit_.code, int) else 2


def run_argv(argv: list[str], tmp: Path) -> tuple[int, str]:
    """Rule 3 and 4 for one argv in the folder ``tmp``: (exit code, stderr)."""
    _populate(tmp)
    before = snapshot(tmp, WRITES)
    err = io.StringIO()
    cwd, saved_stdout = os.getcwd(), sys.stdout
    os.chdir(tmp)
    try:
        with _watchdog(argv), redirect_stdout(io.StringIO()), redirect_stderr(err):
            code = _exit_code(argv)
    finally:
        os.chdir(cwd)
        sys.stdout = saved_stdout
    stderr = err.getvalue()
    assert code in (0, 1, 2), f"{argv!r}: exit {code}; stderr {stderr!r}"
    assert "Traceback" not in stderr, f"{argv!r}: {stderr!r}"
    if code == 2:
        assert len(stderr.strip().splitlines()) == 1, f"{argv!r}: bad input must be one line, got {stderr!r}"
    after = snapshot(tmp, WRITES)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"{argv!r}: changed outside {WRITES}: {changed}"
    return code, stderr


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_fuzzed_flags_end_in_0_1_or_2(command, tmp_path):
    sub = subcommands()[command]
    codes = []
    for i, argv in enumerate(_collect(command, sub)):
        folder = tmp_path / str(i)
        folder.mkdir()
        codes.append(run_argv(argv, folder)[0])
        if os.environ.get("FUZZ_SHOW"):
            print(command, codes[-1], argv)
        shutil.rmtree(folder, ignore_errors=True)
    # The draws reach both sides: some bad input refused, and (but for check, which is
    # always handed a bad suite) some accepted.
    assert 2 in codes, (command, codes)


def test_the_fuzzer_draws_every_flag_of_the_parser():
    """Rule 1: a flag added to a command is drawn without this file changing: the flags
    drawn from are the parser's own, each with a value strategy."""
    for command, sub in subcommands().items():
        declared = [a for a in sub._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
        fuzzed = _actions(sub)
        assert all(a in fuzzed for a in declared if a.dest != "debug"), command
        for action in fuzzed:
            _value(action, action.option_strings[-1] if action.option_strings else action.dest)
