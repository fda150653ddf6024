"""A Ctrl-C while ``toolcall-sim`` is still importing its commands is one line and exit
130, never a ``KeyboardInterrupt`` traceback from inside an import (sim/cli/launch.py)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The signal is delivered inside the guarded window, before toolcall_sim.cli.main is imported: the
# moment a user's Ctrl-C most often lands on a loaded machine (the imports take 1-2 s).
_CHILD = """
import os, signal, sys
from toolcall_sim.cli import launch
sys.exit(launch.main(["list"], _after_guard=lambda: os.kill(os.getpid(), signal.{signal})))
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])  # SIGTERM is Ctrl-C (sim/io/interrupt.py Rule 1)
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(signame):
    done = subprocess.run([sys.executable, "-c", _CHILD.replace("{signal}", signame)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr == "toolcall-sim: interrupted while starting\n"
    assert done.stdout == ""


def test_after_start_up_the_command_runs_with_python_s_handler_back():
    # The guard is gone once the command runs: toolcall_sim.cli.main's own rule (summary so far, exit
    # 130) needs KeyboardInterrupt, and the handler the caller had is restored.
    child = ("import signal, sys\nfrom toolcall_sim.cli import launch\n"
             "code = launch.main(['list'])\n"
             "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
             "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "scenarios:" in done.stdout


def test_the_console_script_and_python_m_sim_start_through_the_guard():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["toolcall-sim"] == "toolcall_sim.cli.launch:main"
    assert "from toolcall_sim.cli.launch import main" in (ROOT / "sim" / "__main__.py").read_text()


def test_the_command_line_is_built_without_hypothesis():
    """``toolcall-sim`` builds its whole command line (every subcommand's flags) without
    importing hypothesis: only a search imports it (sim/cli/commands/search.py declares the
    search's flags itself), and the folder its --world programs write to is toolcall_sim.drivers.stateful's."""
    child = ("import sys\nfrom toolcall_sim.cli import main as cli\ncli.parser()\n"
             "print('hypothesis' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    from toolcall_sim.drivers import stateful
    from toolcall_sim.cli.commands import search

    assert search.WORLD_OUT == stateful.OUT.as_posix()
