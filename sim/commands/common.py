"""What the subcommands share: the exit codes, bad flags, and how a scenario is named.

Theory of operation
-------------------
Exit codes mean one thing each (sim/cli.py's docstring lists them). Bad input is raised,
never printed here: ``BadFlag`` (a flag's value), ``sim.scenario.ScenarioError`` (a file)
and ``sim.output.OutputError`` (an output path) all become one line on stderr and exit 2 in
``sim.cli.main``. A scenario argument is a file or the name of a shipped scenario, with or
without ``.toml`` (``resolve_scenario``).
"""

from __future__ import annotations

from pathlib import Path

from ..scenario import ScenarioError, load

SCENARIO_DIR = Path(__file__).resolve().parent.parent.parent / "scenarios"

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_HARNESS, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130


class BadFlag(Exception):
    """One line: a flag's value that cannot mean anything (bad input, exit 2)."""


def one_line(err: BaseException) -> str:
    """An exception's message on one line (stderr gets one line per error)."""
    return " ".join(str(err).split()) or type(err).__name__


def check_variant(variant: str | None, flag: str = "--variant") -> None:
    """A variant flag that was given must name one (``--variant ""`` is not a default)."""
    from model import planted_bugs

    if variant is None:
        return
    if not variant.strip():
        raise BadFlag(f"{flag}: empty; name a variant (toolcall-sim list shows them)")
    try:
        planted_bugs.resolve(variant)
    except planted_bugs.UnknownVariant as err:
        raise BadFlag(f"{flag}: {err}") from None


def load_scenario(path: str):
    """``sim.scenario.load`` with every unreadable file as bad input, one line."""
    try:
        return load(path)
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {err.start}): a scenario file is UTF-8 TOML") from None
    except ValueError as err:  # e.g. a NUL byte in the path
        raise ScenarioError(f"{path}: cannot read: {err}") from None


def resolve_scenario(path: str) -> str:
    """A scenario argument: a file, or the name of a shipped scenario (with or without
    ``.toml``)."""
    try:
        p = Path(path)
        if not p.exists() and (SCENARIO_DIR / path).exists():
            return str(SCENARIO_DIR / path)
        if not p.exists() and (SCENARIO_DIR / f"{path}.toml").exists():
            return str(SCENARIO_DIR / f"{path}.toml")
    except (ValueError, OSError):
        pass  # a path the file system cannot even look up: load() says why
    return path
