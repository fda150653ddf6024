"""The command line's layout (issue 13): ``sim/cli/main.py`` registers the subcommands of
``sim/cli/commands/``, the commands hand data to ``reports/``, and ``reports/`` renders only.

These are static checks over the source (like tests/test_purity.py), each shown to fail
on a module that breaks its rule; the output itself is compared byte for byte by the CLI
tests (test_outputs.py, test_explore.py, test_bad_input.py, ...).
"""

from __future__ import annotations

import ast
import io
import pathlib
from contextlib import redirect_stdout

import pytest

from toolcall_sim.cli import main as cli
from toolcall_sim.cli.commands import COMMANDS

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMAND_DIR = ROOT / "sim" / "cli" / "commands"
REPORTS = ROOT / "reports"


def imports_of_drivers(source: str) -> list[str]:
    """The imports of sim/ (``toolcall_sim`` less its model, reports and scenarios) or
    ``simpy`` in a module's source: a report that imports
    them would run or drive the world instead of rendering what it is handed."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        found += [f"{node.lineno}: imports {n}" for n in names
                  if n.split(".")[0] == "simpy" or (n.split(".")[0] == "toolcall_sim" and (
                      len(n.split(".")) == 1 or n.split(".")[1] not in ("model", "reports", "scenarios")))]
    return found


def literal_output(source: str) -> list[str]:
    """Text a command writes itself: ``print(...)`` or ``<x>.write(...)`` of an argument
    that holds a string literal or an f-string. A command's text belongs in ``reports``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        is_print = isinstance(node.func, ast.Name) and node.func.id == "print"
        is_write = isinstance(node.func, ast.Attribute) and node.func.attr == "write"
        if not (is_print or is_write):
            continue
        for arg in node.args:
            if any(isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, str))
                   for n in ast.walk(arg)):
                found.append(f"{node.lineno}: writes a literal")
    return found


def test_every_command_module_is_registered_once_in_help_order():
    """Each module of sim/cli/commands/ is one registered
    subcommand with its NAME, HELP, flags and main; ``--help`` lists them in that order."""
    modules = {p.stem for p in COMMAND_DIR.glob("*.py")} - {"__init__"}
    assert {c.__name__.rsplit(".", 1)[1] for c in COMMANDS} == modules
    for command in COMMANDS:
        assert command.__doc__ and command.NAME and command.HELP
        assert callable(command.add_arguments) and callable(command.main)
    choices = list(cli.parser()._subparsers._group_actions[0].choices)
    assert choices == [c.NAME for c in COMMANDS]
    text = io.StringIO()
    with redirect_stdout(text), pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "{" + ",".join(choices) + "}" in text.getvalue()


@pytest.mark.parametrize("path", sorted(COMMAND_DIR.glob("*.py")), ids=lambda p: p.name)
def test_commands_write_no_text_of_their_own(path):
    """A command hands its data to ``reports`` and writes what comes back."""
    assert literal_output(path.read_text()) == []


@pytest.mark.parametrize("path", sorted(REPORTS.rglob("*.py")), ids=lambda p: p.name)
def test_reports_render_and_never_drive(path):
    """No module of reports/ imports the drivers (sim) or the scheduler (simpy), and each
    opens with a docstring."""
    source = path.read_text()
    assert ast.get_docstring(ast.parse(source)), f"{path.name}: no module docstring"
    assert imports_of_drivers(source) == []


@pytest.mark.parametrize("source", ["import toolcall_sim.world.run\n", "from toolcall_sim.drivers.counterexample import replay\n",
                                    "def f():\n    import simpy\n"])
def test_driver_import_check_can_fail(source):
    assert imports_of_drivers(source)


@pytest.mark.parametrize("source", ["out.write('x')\n", "out.write(f'{n} states')\n", "print('done')\n",
                                    "out.write(story(r) + '\\n')\n", "sys.stderr.write(f'{n}\\n')\n"])
def test_literal_output_check_can_fail(source):
    assert literal_output(source)


def test_literal_output_check_lets_rendered_text_through():
    assert literal_output("out.write(report.summary(doc))\nout.write(message)\n") == []
