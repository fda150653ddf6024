"""What the subcommands share: the exit codes, bad flags, and how a scenario is named.

Theory of operation
-------------------
Exit codes mean one thing each (sim/cli/main.py's docstring lists them). Bad input is raised,
never printed here: ``BadFlag`` (a flag's value), ``toolcall_sim.world.scenario.ScenarioError`` (a file)
and ``toolcall_sim.io.output.OutputError`` (an output path) all become one line on stderr and exit 2 in
``toolcall_sim.cli.main.main``. A scenario argument is a file or the name of a shipped scenario, with or
without ``.toml`` (``resolve_scenario``).

Every integer flag has a range (issue 32): a floor where zero or a negative number means
nothing, and a documented cap (the constants below, named in each flag's ``--help``) so a
typo of a few zeros is one line and exit 2, not minutes of work or a harness error
(``check_range``). Every seed flag lies in the one seed range of model/vocabulary.py,
``SEED_MIN..SEED_MAX``, with the last seed a count implies (``check_seeds``).
"""

from __future__ import annotations

from pathlib import Path

from toolcall_sim.scenarios import SHIPPED_DIR
from toolcall_sim.world.scenario import ScenarioError, load

SCENARIO_DIR = SHIPPED_DIR
# The incident's shipped scenarios, by file stem (each file's ``name`` is its stem with
# hyphens): what ``toolcall-sim incident`` runs and what a report's headline tells first.
INCIDENT_SCENARIOS = ("codagt757_incident", "codagt757_incident_past_timeout")

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_HARNESS, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130
# A --cluster run whose scheduler had no worker for the whole grace time (sim/backends/dask_cluster.py
# ``NoWorkers``): stopped as on Ctrl-C, with what finished; 75 is sysexits' "temporary failure".
EXIT_NO_WORKERS = 75


# The caps of the size flags (each flag's --help names its cap). Far above any run the
# docs show (the README's swarm runs 100,000 seeds), far below a run that cannot end.
MAX_SEEDS = 10_000_000  # swarm, compare and sweep --seeds
MAX_WORKERS = 256  # --workers of every command: processes, not threads
MAX_STATES = 100_000_000  # explore --max-states, bugs --budget explore=N
MAX_FAULT_BUDGET = 100  # each explore fault budget (--agent-restarts, ...)
MAX_EXAMPLES = 1_000_000  # search --examples, bugs --budget search=N
MAX_STEPS = 10_000  # search --steps (actions of one --world program)
MAX_SHRINK_RUNS = 1_000_000  # search --shrink-runs


class BadFlag(Exception):
    """One line: a flag's value that cannot mean anything (bad input, exit 2)."""


def shown_int(value: int) -> str:
    """An integer for a one-line message: a huge one is abbreviated, not 4,000 digits."""
    text = str(value)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def check_range(value: int | None, flag: str, low: int, high: int) -> int | None:
    """``value`` (None: the flag was not given) within ``low..high``, else BadFlag."""
    if value is None:
        return None
    if value < low:
        floor = "must not be negative" if low == 0 else f"must be at least {low}"
        raise BadFlag(f"{flag}: {floor}, got {shown_int(value)}")
    if value > high:
        raise BadFlag(f"{flag}: must be at most {high} (its cap), got {shown_int(value)}")
    return value


def check_duration(text: str, flag: str, above_zero: bool = False) -> int:
    """A duration flag in ms, at most the longest simulated run (model/vocabulary.py
    ``MAX_UNTIL_MS``, the cap of a scenario's ``until``: ``check_until``); ``above_zero``:
    0 is refused too."""
    from toolcall_sim.world.scenario import check_until, parse_duration

    ms = parse_duration(text, flag)
    return check_until(ms, flag) if ms > 0 or above_zero else ms


def check_seeds(first: int | None, count: int = 1, flag: str = "--seed") -> None:
    """A seed flag, and the last seed ``count`` seeds from it imply, in the one seed range
    (model/vocabulary.py ``SEED_MIN..SEED_MAX``)."""
    from toolcall_sim.model.vocabulary import SEED_MAX, SEED_MIN

    if first is None:
        return
    if not SEED_MIN <= first <= SEED_MAX:
        raise BadFlag(f"{flag}: a seed is {SEED_MIN}..{SEED_MAX}, got {shown_int(first)}")
    if first + count - 1 > SEED_MAX:
        raise BadFlag(f"{flag}: the last seed {shown_int(first + count - 1)} ({count} seeds from {first}) is past "
                      f"{SEED_MAX}, the largest seed")


def one_line(err: BaseException) -> str:
    """An exception's message on one line (stderr gets one line per error)."""
    return " ".join(str(err).split()) or type(err).__name__


def check_variant(variant: str | None, flag: str = "--variant") -> None:
    """A variant flag that was given must name one (``--variant ""`` is not a default)."""
    from toolcall_sim.model import planted_bugs

    if variant is None:
        return
    if not variant.strip():
        raise BadFlag(f"{flag}: empty; name a variant (toolcall-sim list shows them)")
    try:
        planted_bugs.resolve(variant)
    except planted_bugs.UnknownVariant as err:
        raise BadFlag(f"{flag}: {err}") from None


def load_scenario(path: str):
    """``toolcall_sim.world.scenario.load`` with every unreadable file as bad input, one line."""
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
