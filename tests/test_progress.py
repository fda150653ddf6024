"""The progress of long commands (sim/io/progress.py, issue 15 "Around it"): a bar on a
terminal that reaches its total, nothing extra in a log, ``--quiet`` on every long
command, and never a byte of difference in what a run writes or prints on stdout.

A terminal is faked two ways: a text stream whose ``isatty()`` says yes (what the
automatic choice looks at), and ``TOOLCALL_SIM_PROGRESS=bar`` for a command run under
pytest's capture (which is no terminal). Nothing here measures time.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from toolcall_sim.io import progress as pg
from toolcall_sim.cli.main import main, parser
from toolcall_sim.io.progress import Progress
from toolcall_sim.world.scenario import ScenarioError

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BUGGY = "contract+records-lost-on-new-message"  # swarm seed 7 fails at once (tests/test_outputs.py)
LONG_COMMANDS = ("explore", "swarm", "search")


class FakeTTY(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _plain(text: str) -> str:
    """What a terminal would show last on each line: escape codes out, redraws split."""
    return ANSI.sub("", text).replace("\r", "\n")


@pytest.fixture
def no_override(monkeypatch):
    monkeypatch.delenv(pg.ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


# ---------------------------------------------------------------------------
# Which display (Rule 1)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tty, quiet, env, mode", [
    (True, False, {}, "bar"),
    (False, False, {}, "off"),  # a CI log: nothing
    (True, True, {}, "off"),  # --quiet
    (True, True, {pg.ENV: "bar"}, "off"),  # --quiet wins over the variable
    (False, False, {pg.ENV: "bar"}, "bar"),
    (False, False, {pg.ENV: "lines"}, "lines"),
    (True, False, {pg.ENV: "off"}, "off"),
    (False, False, {pg.ENV: "auto"}, "off"),
    (True, False, {pg.ENV: ""}, "bar"),  # set but empty: the default
])
def test_the_display_is_chosen_by_terminal_quiet_and_variable(tty, quiet, env, mode, no_override):
    stream = FakeTTY() if tty else io.StringIO()
    assert pg.choose_mode(stream, quiet, env) == mode


def test_a_dumb_terminal_gets_no_bar(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    assert pg.choose_mode(FakeTTY(), False, {}) == "off"


@pytest.mark.parametrize("quiet", [False, True])
def test_an_unknown_variable_value_is_bad_input_even_when_quiet(quiet):
    with pytest.raises(ScenarioError, match=pg.ENV):
        pg.choose_mode(io.StringIO(), quiet, {pg.ENV: "sparkly"})


@pytest.mark.parametrize("command", LONG_COMMANDS)
def test_an_unknown_variable_value_exits_2_in_one_line(command, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(pg.ENV, "sparkly")
    argv = {"explore": ["explore", "--max-states", "5"], "swarm": ["swarm", "--seeds", "1"],
            "search": ["search", "--examples", "1"]}[command]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and pg.ENV in err and "sparkly" in err


# ---------------------------------------------------------------------------
# What each display draws
# ---------------------------------------------------------------------------


def test_off_draws_nothing_but_notes(no_override):
    stream = io.StringIO()
    with Progress.for_command(None, "swarm", 3, stream=stream, unit="seeds") as progress:
        assert progress.mode == "off"
        for done in range(1, 4):
            progress(done, 3, "")
        progress.note("  ... seed 2 FAIL p: a.toml, a.json\n")
        progress.finish()
    assert stream.getvalue() == "  ... seed 2 FAIL p: a.toml, a.json\n"


def test_quiet_draws_nothing_at_all(no_override):
    class Args:
        quiet = True

    stream = FakeTTY()
    with Progress.for_command(Args(), "swarm", 3, stream=stream) as progress:
        progress(3, 3, "")
        progress.note("a note\n")
    assert stream.getvalue() == ""


def test_the_bar_is_drawn_on_a_terminal_and_reaches_its_total(no_override):
    stream = FakeTTY()
    with Progress.for_command(None, "explore contract", 200, stream=stream, unit="states") as progress:
        assert progress.mode == "bar"
        for done in range(1, 201):
            progress(done, 200, "")
    last = [line for line in _plain(stream.getvalue()).splitlines() if line.strip()][-1]
    assert "explore contract" in last and "200/200 states" in last, last
    assert "━" in last  # the bar itself, not only the count


def test_the_bar_on_a_forced_console_reaches_the_count_finish_gives_it(no_override):
    """A search that exhausts its world below --max-states ends at 100 % (Rule 5), and a
    note stands above the bar as text."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    with Progress("explore contract", 5000, mode="bar", console=console, unit="states") as progress:
        for done in range(1, 1235):
            progress(done)
        progress.note("[not markup] a note\n")
        progress.finish()
    last = [line for line in _plain(buffer.getvalue()).splitlines() if line.strip()][-1]
    assert "1234/1234 states" in last, last
    assert "[not markup] a note" in _plain(buffer.getvalue())


def test_a_new_phase_without_a_total_pulses_and_still_ends(no_override):
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    with Progress("search contract", 10, mode="bar", console=console, unit="programs") as progress:
        progress(4, 10)
        progress.set_description("shrinking", unknown_total=True)
        assert progress.total is None
        progress(7, None, "at_most_once")
        progress.finish()
    shown = _plain(buffer.getvalue())
    assert "shrinking" in shown and "7/7 programs at_most_once" in shown


def test_lines_every_so_many_units_never_at_the_end():
    stream = io.StringIO()
    with Progress("swarm", 100, mode="lines", stream=stream, unit="seeds", every=25) as progress:
        for done in range(1, 101):
            progress(done, 100, "0 failure(s)")
    assert stream.getvalue() == "".join(f"  ... swarm: {n} of 100 seeds, 0 failure(s)\n" for n in (25, 50, 75))


def test_an_unknown_mode_is_a_programming_error():
    with pytest.raises(ValueError):
        Progress("x", mode="loud")


# ---------------------------------------------------------------------------
# The commands: --quiet everywhere, the bar changes no output
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", LONG_COMMANDS)
def test_quiet_is_a_flag_of_every_long_command(command):
    argv = {"explore": [], "swarm": ["--seeds", "1"], "search": []}[command]
    assert parser().parse_args([command, *argv, "--quiet"]).quiet is True
    assert parser().parse_args([command, *argv]).quiet is False


def _explore(tmp_path: Path, name: str, capsys, *extra: str) -> tuple[int, dict, str, dict]:
    code = main(["explore", "--world", "default", "--variant", "today", "--property", "at_most_once", "--json",
                 "--out", str(tmp_path / name), *extra])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    for key in ("states_per_s", "out"):  # a speed, and the folder asked for
        doc.pop(key)
    files = {p.name: p.read_bytes() for p in sorted((tmp_path / name).iterdir())}
    for v in doc["violations"]:
        v["counterexample"] = Path(v["counterexample"]).name
        v["scenario"] = Path(v["scenario"]).name  # (the scenario file beside it, in the same folder)
    return code, doc, captured.err, files


def test_explore_with_the_bar_writes_and_prints_what_it_does_without(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(pg.ENV, "off")
    code_off, doc_off, err_off, files_off = _explore(tmp_path, "off", capsys)
    monkeypatch.setenv(pg.ENV, "bar")
    code_bar, doc_bar, err_bar, files_bar = _explore(tmp_path, "bar", capsys)
    assert (code_bar, doc_bar, files_bar) == (code_off, doc_off, files_off)
    assert code_off == 1 and files_off  # the comparison covers counterexample files
    assert err_off == ""
    states = doc_bar["states"]
    assert f"{states}/{states} states" in _plain(err_bar)  # finished: the bar reached its end
    _, _, err_quiet, _ = _explore(tmp_path, "quiet", capsys, "--quiet")
    assert err_quiet == ""  # --quiet beats the variable


def test_swarm_with_the_bar_writes_and_prints_what_it_does_without(tmp_path, capsys, monkeypatch):
    runs = {}
    for mode in ("off", "bar"):
        monkeypatch.setenv(pg.ENV, mode)
        out = tmp_path / mode
        code = main(["swarm", "--seeds", "2", "--first-seed", "7", "--variant", BUGGY, "--json", "--out", str(out)])
        captured = capsys.readouterr()
        doc = json.loads(captured.out)
        doc.pop("out")
        text = json.dumps(doc).replace(str(out), "OUT")
        runs[mode] = (code, text, {p.name: p.read_bytes() for p in sorted(out.iterdir())}, captured.err)
    assert runs["bar"][:3] == runs["off"][:3]
    assert runs["off"][0] == 1 and runs["off"][2]
    # The failure's note is in both; the bar only where asked, and it reached 2 of 2.
    assert "seed 7 FAIL" in runs["off"][3] and "seed 7 FAIL" in _plain(runs["bar"][3])
    assert "2/2 seeds" not in runs["off"][3]
    assert "2/2 seeds" in _plain(runs["bar"][3])
    monkeypatch.setenv(pg.ENV, "bar")
    assert main(["swarm", "--seeds", "1", "--first-seed", "7", "--variant", BUGGY, "--quiet",
                 "--out", str(tmp_path / "q")]) == 1
    assert capsys.readouterr().err == ""  # --quiet: neither the bar nor the note


def test_search_with_the_bar_prints_what_it_does_without(tmp_path, capsys, monkeypatch):
    runs = {}
    for mode in ("off", "bar"):
        monkeypatch.setenv(pg.ENV, mode)
        code = main(["search", "--world", "default", "--examples", "10", "--steps", "10", "--out", str(tmp_path / "o")])
        captured = capsys.readouterr()
        runs[mode] = (code, captured.out, captured.err)
    assert runs["bar"][:2] == runs["off"][:2]
    assert runs["off"][0] == 0 and runs["off"][2] == ""
    last = [line for line in _plain(runs["bar"][2]).splitlines() if line.strip()][-1]
    assert re.search(r"(\d+)/\1 programs", last), last  # finished: done equals total


def test_the_bar_runs_no_thread_of_its_own(no_override):
    """Rule 4: swarm and explore --workers fork only a process with one thread."""
    before = threading.active_count()
    with Progress.for_command(None, "swarm", 3, stream=FakeTTY()) as progress:
        progress(1, 3, "")
        assert progress.mode == "bar" and threading.active_count() == before


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals here")
def test_a_real_terminal_gets_the_bar_and_a_pipe_does_not(tmp_path, monkeypatch, capfd):
    """End to end, with no variable: stderr on a pseudo-terminal draws the bar (a child
    process whose stderr is one); the same command with stderr on a pipe (run here,
    where pytest's capture is the pipe) prints nothing there, and stdout is the same."""
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != pg.ENV}
    env.update(PYTHONPATH=str(root), TERM="xterm")
    argv = [sys.executable, "-m", "toolcall_sim", "explore", "--world", "default", "--variant", "today", "--property",
            "at_most_once", "--out", str(tmp_path / "o")]
    primary, secondary = os.openpty()
    try:
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=secondary)
        os.close(secondary)
        drawn = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal closed: the command is done
                break
            if not chunk:
                break
            drawn += chunk
        tty_out = proc.stdout.read()
        proc.wait()
    finally:
        os.close(primary)
    monkeypatch.delenv(pg.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    capfd.readouterr()
    assert not sys.stderr.isatty()
    code = main(argv[3:])
    piped = capfd.readouterr()
    assert proc.returncode == code == 1
    assert re.search(r"(\d+)/\1 states", _plain(drawn.decode("utf-8", "replace"))), drawn[-300:]
    assert piped.err == ""
    assert _without_speed(tty_out) == _without_speed(piped.out.encode())


def _without_speed(text: bytes) -> bytes:
    """explore's text with its one wall-clock figure (states/s) masked."""
    return re.sub(rb"\d+ states/s", b"N states/s", text)
