"""Check suites: the TOML file that says what ``toolcall-sim check`` runs.

Theory of operation
-------------------
A suite names four kinds of runs, each by the driver that already exists for it:

- ``[[scenarios]]``: scenario files x variants, each judged by the scenario's own
  ``[expect.<variant>]`` (sim/world/run.py ``run_scenario``);
- ``[[explore]]``: one explorer world (model/worlds.py) x variants x bounds, in the
  ``explore`` command's own words (real durations, budgets; model/explore.py);
- ``[[swarm]]``: a window of swarm seeds x variants (sim/drivers/swarm.py);
- ``[planted]``: the planted-bug sweep (model/planted_bugs.py): each bug must be caught by
  every driver the suite names: ``scenario`` (the bug's own scenario), ``explore`` (a
  small world and budgets per bug, as tests/test_explore_bugs.py finds them) and
  ``swarm`` (a pinned seed window per bug, as tests/test_swarm.py pins them);
- ``[compare]``: the design comparison (sim/ci/compare.py, issue 16): designs x the
  comparison worlds, swarm seeds, the scenario suite and the long run, judged against
  each design's expected verdicts (``[compare.expect.<design>]``, Rule 4);
- ``[detection]``: the detection table (sim/ci/bugs.py, issue 19): every planted bug through
  each driver from its default settings, within budgets; every bug must be found and
  the plain contract (the control row) must stay clean.

``load(path)`` returns a frozen ``Suite`` or raises ``SuiteError``, one line
``<file>: <field>: <reason>`` (exit 2, as for a scenario file). The rules are the
scenario files' (sim/world/scenario.py):

Rule 1. Every key is live: an unknown key, a value of the wrong type, a variant, world,
        bug or scenario that does not exist is an error, and so is a table that would be
        read and never used (a bug's explore world when the sweep runs no explorer).
Rule 2. ``--quick`` runs a part of the same suite, declared in the file: each entry's
        ``quick = true`` (the comparison's too), and the sweeps' ``quick_drivers`` (the
        planted-bug sweep's, the detection table's). A suite with nothing quick
        is refused by ``--quick`` (it would check nothing), not run empty.
Rule 3. Scenario files are shipped scenario names (``us02_interrupt_stops_foreground``,
        with or without ``.toml``), ``"*"`` for every shipped one, or paths relative to
        the suite file's folder. Explorer durations are real time, scaled to the
        explorer's clock as ``toolcall-sim explore`` scales them (``Bounds.scale``).
Rule 4. A design's flaw is what the comparison is for, not a failure: each design names
        its expected verdicts, ``violated``, ``known_finding``, ``residual_risk`` and
        ``holds_exhaustively`` lists of properties; a property it does not list must
        hold (``holds`` or ``holds exhaustively``). Only a verdict other than the one
        expected fails the run, both ways: a flaw no longer found is as suspect as a new
        one. The expectations are the suite's data because a verdict depends on what ran
        (a flaw only the swarm finds needs its seeds; "exhaustively" needs the worlds).
Rule 5. Every report has a rule coverage section (sim/drivers/coverage.py) counted from
        the suite's own scenario, explorer and swarm runs. ``[coverage] require = true``
        makes a probe unreached under a variant where its rule exists, and not listed in
        model/probes.py ``UNREACHABLE``, fail the run; a suite that runs a few scenarios
        leaves it out (it could not reach every rule), the shipped ``ci`` suite has it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcall_sim.scenarios import SHIPPED_DIR
from toolcall_sim.io import input_file
from toolcall_sim.world.scenario import ScenarioError, format_duration, parse_duration

SUITE_DIR = SHIPPED_DIR / "suites"
DEFAULT_SUITE = SUITE_DIR / "ci.toml"
DRIVERS = ("scenario", "explore", "swarm")
BUDGETS = ("agent_restarts", "ownership_changes", "interrupts", "lost_responses", "task_retries")

TOP_KEYS = ("name", "summary", "scenarios", "explore", "swarm", "planted", "compare", "detection", "coverage")
SCENARIO_KEYS = ("files", "variants", "quick")
EXPLORE_KEYS = ("name", "world", "variants", "second", "max_in_flight", "horizon", "max_states", *BUDGETS, "quick")
SWARM_KEYS = ("variants", "first_seed", "seeds", "quick")
PLANTED_KEYS = ("bugs", "drivers", "quick_drivers", "max_in_flight", "max_states", "bug")
BUG_KEYS = ("explore", "swarm")
BUG_EXPLORE_KEYS = ("world", *BUDGETS)
BUG_SWARM_KEYS = ("first_seed", "seeds")
COMPARE_KEYS = ("designs", "worlds", "seeds", "first_seed", "quick", "expect")
VERDICTS = ("violated", "known_finding", "residual_risk", "holds_exhaustively")  # Rule 4; unlisted: holds
DETECTION_KEYS = ("drivers", "quick_drivers", "bugs", "budgets", "control")
COVERAGE_KEYS = ("require",)


class SuiteError(ScenarioError):
    """One line: file, field and reason (bad input, exit 2)."""


@dataclass(frozen=True)
class ScenarioRun:
    """One scenario file under one variant."""

    scenario: str  # the scenario's name (its ``name`` key)
    path: str  # the file it was read from
    shown: str  # how a reproduce command names it (a shipped scenario by its stem)
    variant: str
    quick: bool


@dataclass(frozen=True)
class ExploreRun:
    """One explorer world under one variant with its bounds (small ms, as model/explore.py
    takes them; ``max_in_flight``/``horizon`` keep the words the file used)."""

    name: str  # the run's name in reports: the world's, unless the entry names itself
    world: str
    variant: str
    second: str
    max_in_flight: str
    horizon: str
    max_in_flight_ms: int  # on the explorer's clock
    horizon_ms: int  # on the explorer's clock
    max_states: int
    budgets: tuple[tuple[str, int], ...]
    quick: bool

    def command(self) -> str:
        """The ``toolcall-sim explore`` command that repeats this search (a report's
        explorer entry gives it; ``--second`` only where it is not the default)."""
        flags = [f"--world {self.world}", f"--variant {self.variant}", f"--max-in-flight {self.max_in_flight}",
                 f"--horizon {self.horizon}", f"--max-states {self.max_states}",
                 *(f"--{b.replace('_', '-')} {n}" for b, n in self.budgets)]
        if self.second != "background":
            flags.insert(1, f"--second {self.second}")
        return "toolcall-sim explore " + " ".join(flags)


@dataclass(frozen=True)
class SwarmRun:
    variant: str
    first_seed: int
    seeds: int
    quick: bool


@dataclass(frozen=True)
class PlantedBug:
    """One bug of the sweep and where each driver looks for it."""

    name: str
    explore_world: str | None
    explore_budgets: tuple[tuple[str, int], ...]
    swarm_first_seed: int | None
    swarm_seeds: int | None


@dataclass(frozen=True)
class Planted:
    drivers: tuple[str, ...]
    quick_drivers: tuple[str, ...]
    max_in_flight: str
    max_in_flight_ms: int  # on the explorer's clock
    max_states: int
    bugs: tuple[PlantedBug, ...]


@dataclass(frozen=True)
class Compare:
    """The design comparison: sim/ci/compare.py's runs, with each design's expected verdicts
    (Rule 4): ``expect`` is (design, ((property, verdict), ...)) with only the listed
    properties; every other property must hold."""

    designs: tuple[str, ...]
    worlds: tuple[str, ...]  # sim/ci/compare.py COMPARE_WORLDS names
    seeds: int
    first_seed: int
    quick: bool
    expect: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]

    def expected(self, design: str, prop: str) -> str:
        """The verdict expected of ``design`` for ``prop``: one of VERDICTS or "holds"."""
        return dict(dict(self.expect)[design]).get(prop, "holds")


@dataclass(frozen=True)
class Detection:
    """The detection table (sim/ci/bugs.py): ``bugs`` through each of ``drivers`` within
    ``budgets`` (driver -> units), and the plain contract too with ``control``."""

    drivers: tuple[str, ...]
    quick_drivers: tuple[str, ...]
    bugs: tuple[str, ...]
    budgets: tuple[tuple[str, int], ...]
    control: bool


@dataclass(frozen=True)
class Suite:
    name: str
    summary: str
    path: str
    scenarios: tuple[ScenarioRun, ...]
    explore: tuple[ExploreRun, ...]
    swarm: tuple[SwarmRun, ...]
    planted: Planted | None
    compare: Compare | None = None
    detection: Detection | None = None
    # Rule 5: an unreached probe no UNREACHABLE entry explains fails the run
    require_coverage: bool = False

    def part(self, quick: bool) -> "Suite":
        """The suite ``--quick`` runs (Rule 2), or the whole of it."""
        if not quick:
            return self
        planted = self.planted
        if planted is not None:
            planted = Planted(planted.quick_drivers, planted.quick_drivers, planted.max_in_flight,
                              planted.max_in_flight_ms, planted.max_states, planted.bugs)
            if not planted.drivers:
                planted = None
        compare = self.compare if self.compare is not None and self.compare.quick else None
        detection = self.detection
        if detection is not None:
            detection = Detection(detection.quick_drivers, detection.quick_drivers, detection.bugs,
                                  tuple((d, n) for d, n in detection.budgets if d in detection.quick_drivers),
                                  detection.control)
            if not detection.drivers:
                detection = None
        return Suite(self.name, self.summary, self.path, tuple(r for r in self.scenarios if r.quick),
                     tuple(r for r in self.explore if r.quick), tuple(r for r in self.swarm if r.quick), planted,
                     compare, detection, self.require_coverage)

    @property
    def empty(self) -> bool:
        return not (self.scenarios or self.explore or self.swarm or self.planted or self.compare or self.detection)


class _Reader:
    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, reason: str):
        raise SuiteError(f"{self.path}: {where}: {reason}")

    def table(self, value: Any, where: str, allowed) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected a table, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                self.fail(f"{where}.{key}" if where else key, f"unknown key (allowed: {', '.join(sorted(allowed))})")
        return value

    def tables(self, value: Any, where: str, allowed) -> list[dict]:
        if not isinstance(value, list):
            self.fail(where, f"expected an array of tables ([[{where}]]), got {type(value).__name__}")
        return [self.table(v, f"{where}[{i}]", allowed) for i, v in enumerate(value)]

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(where, f"expected a non-empty string, got {value!r}")
        return value

    def strings(self, value: Any, where: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            self.fail(where, f"expected a non-empty list of strings, got {value!r}")
        out = tuple(self.string(v, f"{where}[{i}]") for i, v in enumerate(value))
        for i, v in enumerate(out):
            if v in out[:i]:
                self.fail(f"{where}[{i}]", f"{v!r} is named twice")
        return out

    def integer(self, value: Any, where: str, least: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"expected an integer, got {value!r}")
        if value < least:
            self.fail(where, f"must be at least {least}, got {value}")
        return value

    def boolean(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {value!r}")
        return value

    def duration(self, value: Any, where: str) -> int:
        try:
            return parse_duration(value, where)
        except ScenarioError as err:
            self.fail(where, str(err).split(": ", 1)[1])

    def variants(self, value: Any, where: str) -> tuple[str, ...]:
        from toolcall_sim.model import planted_bugs

        names = self.strings(value, where)
        for i, name in enumerate(names):
            try:
                planted_bugs.resolve(name)
            except planted_bugs.UnknownVariant as err:
                self.fail(f"{where}[{i}]", str(err))
        return names


def load(path: str | Path) -> Suite:
    """Read and check a suite file (Rule 1); SuiteError names the first problem."""
    p = Path(path)
    try:  # only a regular file, at most 10 MB (sim/io/input_file.py: nothing hangs)
        raw = input_file.read_capped(p, str(p), 10 * input_file.MB, "a suite file")
    except input_file.InputFileError as err:
        raise SuiteError(str(err)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise SuiteError(f"{p}: not UTF-8 text (byte {err.start}): a suite file is UTF-8 TOML") from None
    except tomllib.TOMLDecodeError as err:
        raise SuiteError(f"{p}: not TOML: {err}") from None
    return from_dict(data, str(p), p.parent)


def from_dict(data: dict, shown: str = "<suite>", base: Path | None = None) -> Suite:
    r = _Reader(shown)
    r.table(data, "", TOP_KEYS)
    if "name" not in data:
        r.fail("name", "missing: a suite names itself (its report folder is named after it)")
    name = r.string(data["name"], "name")
    if any(ch in name for ch in "/\\") or name in (".", ".."):
        r.fail("name", f"a suite name is a folder name, got {name!r}")
    summary = r.string(data["summary"], "summary") if "summary" in data else ""
    scenarios = _read_scenarios(r, data.get("scenarios", []), base)
    explore = _read_explore(r, data.get("explore", []))
    swarm = _read_swarm(r, data.get("swarm", []))
    planted = _read_planted(r, data["planted"]) if "planted" in data else None
    compare = _read_compare(r, data["compare"]) if "compare" in data else None
    detection = _read_detection(r, data["detection"]) if "detection" in data else None
    require_coverage = False
    if "coverage" in data:
        t = r.table(data["coverage"], "coverage", COVERAGE_KEYS)
        require_coverage = r.boolean(t.get("require", False), "coverage.require")
    suite = Suite(name, summary, shown, scenarios, explore, swarm, planted, compare, detection, require_coverage)
    if suite.empty:
        r.fail("scenarios", "the suite runs nothing: name scenarios, explore worlds, swarm seeds, a planted sweep, "
                            "a design comparison or a detection table")
    return suite


def _scenario_files(r: _Reader, files: tuple[str, ...], where: str, base: Path | None) -> list[tuple[str, str]]:
    """(path, how a command names it) of each entry (Rule 3), in the order written;
    ``"*"`` is every shipped scenario in name order."""
    from toolcall_sim.world.inputs import SCENARIO_DIR

    out = []
    for i, f in enumerate(files):
        if f == "*":
            out += [(str(p), p.stem) for p in sorted(SCENARIO_DIR.glob("*.toml"))]
            continue
        stem = f[:-5] if f.endswith(".toml") else f
        local = (base / f) if base is not None else Path(f)
        if "/" not in f and (SCENARIO_DIR / f"{stem}.toml").is_file():
            out.append((str(SCENARIO_DIR / f"{stem}.toml"), stem))
        elif local.is_file():
            out.append((str(local), f))
        else:
            r.fail(f"{where}[{i}]", f"no such scenario {f!r} (a shipped scenario's name, \"*\", or a path relative "
                                    "to the suite file)")
    return out


def _read_scenarios(r: _Reader, value: Any, base: Path | None) -> tuple[ScenarioRun, ...]:
    from toolcall_sim.world.inputs import load_scenario

    runs: list[ScenarioRun] = []
    for i, entry in enumerate(r.tables(value, "scenarios", SCENARIO_KEYS)):
        where = f"scenarios[{i}]"
        if "files" not in entry:
            r.fail(f"{where}.files", "missing: name scenario files (\"*\" for every shipped one)")
        files = _scenario_files(r, r.strings(entry["files"], f"{where}.files"), f"{where}.files", base)
        variants = r.variants(entry["variants"], f"{where}.variants") if "variants" in entry else None
        quick = r.boolean(entry.get("quick", False), f"{where}.quick")
        for path, shown in files:
            try:
                scenario = load_scenario(path)
            except ScenarioError as err:
                r.fail(f"{where}.files", str(err))
            # Without ``variants``: each variant the scenario has an expectation for.
            for variant in variants if variants is not None else tuple(v for v, _ in scenario.expect):
                run = ScenarioRun(scenario.name, path, shown, variant, quick)
                if any((x.path, x.variant) == (path, variant) for x in runs):
                    r.fail(f"{where}.files", f"{shown} under {variant} is run twice in this suite")
                runs.append(run)
    return tuple(runs)


def _read_explore(r: _Reader, value: Any) -> tuple[ExploreRun, ...]:
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    scale = ex.Bounds().scale
    runs: list[ExploreRun] = []
    names: set[str] = set()
    for i, entry in enumerate(r.tables(value, "explore", EXPLORE_KEYS)):
        where = f"explore[{i}]"
        if "world" not in entry:
            r.fail(f"{where}.world", f"missing: name a world ({', '.join(worlds.names())})")
        world = r.string(entry["world"], f"{where}.world")
        if world not in worlds.names():
            r.fail(f"{where}.world", f"unknown world {world!r} (known: {', '.join(worlds.names())})")
        name = r.string(entry["name"], f"{where}.name") if "name" in entry else world
        if name in names:
            r.fail(f"{where}.name", f"{name!r} names another explore entry too; give each entry of one world its "
                                    "own name")
        names.add(name)
        if "variants" not in entry:
            r.fail(f"{where}.variants", "missing: name the variants to explore")
        variants = r.variants(entry["variants"], f"{where}.variants")
        second = entry.get("second", "background")
        if "second" in entry and world != "default":
            r.fail(f"{where}.second", "only the default world has a second tool call to choose")
        if second not in ("background", "edit"):
            r.fail(f"{where}.second", f"expected 'background' or 'edit', got {second!r}")
        max_in_flight = entry.get("max_in_flight", "0s")
        horizon = entry.get("horizon", "30s")
        in_flight_ms = r.duration(max_in_flight, f"{where}.max_in_flight") // scale
        horizon_ms = r.duration(horizon, f"{where}.horizon") // scale
        if horizon_ms < 1:
            r.fail(f"{where}.horizon", f"must be at least {format_duration(scale)} (one ms of the explorer's clock)")
        max_states = r.integer(entry.get("max_states", 200_000), f"{where}.max_states", 1)
        budgets = tuple((b, r.integer(entry.get(b, 1), f"{where}.{b}", 0)) for b in BUDGETS)
        quick = r.boolean(entry.get("quick", False), f"{where}.quick")
        for variant in variants:
            runs.append(ExploreRun(name, world, variant, second, max_in_flight, horizon, in_flight_ms, horizon_ms,
                                   max_states, budgets, quick))
    return tuple(runs)


def _read_swarm(r: _Reader, value: Any) -> tuple[SwarmRun, ...]:
    runs: list[SwarmRun] = []
    for i, entry in enumerate(r.tables(value, "swarm", SWARM_KEYS)):
        where = f"swarm[{i}]"
        for key in ("variants", "seeds"):
            if key not in entry:
                r.fail(f"{where}.{key}", "missing")
        variants = r.variants(entry["variants"], f"{where}.variants")
        first = r.integer(entry.get("first_seed", 1), f"{where}.first_seed", 0)
        seeds = r.integer(entry["seeds"], f"{where}.seeds", 1)
        quick = r.boolean(entry.get("quick", False), f"{where}.quick")
        for variant in variants:
            if any(x.variant == variant and x.first_seed < first + seeds and first < x.first_seed + x.seeds
                   for x in runs):
                r.fail(f"{where}.seeds", f"seeds {first}..{first + seeds - 1} under {variant} overlap another "
                                         "swarm entry's")
            runs.append(SwarmRun(variant, first, seeds, quick))
    return tuple(runs)


def _drivers_and_bugs(r: _Reader, t: dict, section: str, known_drivers) -> tuple[tuple, tuple, tuple]:
    """``drivers``, ``quick_drivers`` and ``bugs`` of ``[planted]`` and ``[detection]``,
    which name them alike: (drivers, the quick part's drivers, bug names; ``["*"]`` or no
    ``bugs`` is every planted bug). Each name is checked; errors name ``section``."""
    from toolcall_sim.model import planted_bugs

    drivers = r.strings(t["drivers"], f"{section}.drivers")
    for i, d in enumerate(drivers):
        if d not in known_drivers:
            r.fail(f"{section}.drivers[{i}]", f"unknown driver {d!r} (known: {', '.join(known_drivers)})")
    quick_drivers: tuple[str, ...] = ()
    if "quick_drivers" in t:
        if not isinstance(t["quick_drivers"], list):
            r.fail(f"{section}.quick_drivers", f"expected a list of drivers, got {t['quick_drivers']!r}")
        quick_drivers = tuple(r.string(d, f"{section}.quick_drivers[{i}]") for i, d in enumerate(t["quick_drivers"]))
        for i, d in enumerate(quick_drivers):
            if d not in drivers:
                r.fail(f"{section}.quick_drivers[{i}]", f"{d!r} is not one of {section}.drivers ({', '.join(drivers)})")
    known = planted_bugs.by_name()
    names = r.strings(t.get("bugs", ["*"]), f"{section}.bugs")
    if names == ("*",):
        names = tuple(known)
    for i, n in enumerate(names):
        if n not in known:
            r.fail(f"{section}.bugs[{i}]", f"unknown planted bug {n!r} (known: {', '.join(sorted(known))})")
    return drivers, quick_drivers, names


def _read_planted(r: _Reader, value: Any) -> Planted:
    from toolcall_sim.model import explore as ex
    from toolcall_sim.model import worlds

    t = r.table(value, "planted", PLANTED_KEYS)
    if "drivers" not in t:
        r.fail("planted.drivers", f"missing: name the drivers that must catch each bug ({', '.join(DRIVERS)})")
    drivers, quick_drivers, names = _drivers_and_bugs(r, t, "planted", DRIVERS)
    explores = "explore" in drivers
    if not explores:
        for key in ("max_in_flight", "max_states"):
            if key in t:
                r.fail(f"planted.{key}", "the sweep runs no explorer (add \"explore\" to planted.drivers)")
    scale = ex.Bounds().scale
    max_in_flight = t.get("max_in_flight", "1s")
    in_flight_ms = r.duration(max_in_flight, "planted.max_in_flight") // scale
    max_states = r.integer(t.get("max_states", 20_000), "planted.max_states", 1)
    per_bug = r.table(t.get("bug", {}), "planted.bug", names)
    bugs = []
    for name in names:
        spec = r.table(per_bug.get(name, {}), f"planted.bug.{name}", BUG_KEYS)
        world, budgets, first, seeds = None, (), None, None
        for driver in ("explore", "swarm"):
            if driver in drivers and driver not in spec:
                r.fail(f"planted.bug.{name}.{driver}", f"missing: the sweep runs {driver}, so each bug names where")
            if driver not in drivers and driver in spec:
                r.fail(f"planted.bug.{name}.{driver}", f"the sweep runs no {driver} (planted.drivers)")
        if "explore" in spec:
            w = f"planted.bug.{name}.explore"
            e = r.table(spec["explore"], w, BUG_EXPLORE_KEYS)
            if "world" not in e:
                r.fail(f"{w}.world", f"missing: name a world ({', '.join(worlds.names())})")
            world = r.string(e["world"], f"{w}.world")
            if world not in worlds.names():
                r.fail(f"{w}.world", f"unknown world {world!r} (known: {', '.join(worlds.names())})")
            # Budgets the entry does not name are 0: the fewest faults that find the bug.
            budgets = tuple((b, r.integer(e.get(b, 0), f"{w}.{b}", 0)) for b in BUDGETS)
        if "swarm" in spec:
            w = f"planted.bug.{name}.swarm"
            s = r.table(spec["swarm"], w, BUG_SWARM_KEYS)
            if "seeds" not in s:
                r.fail(f"{w}.seeds", "missing")
            first = r.integer(s.get("first_seed", 1), f"{w}.first_seed", 0)
            seeds = r.integer(s["seeds"], f"{w}.seeds", 1)
        bugs.append(PlantedBug(name, world, budgets, first, seeds))
    return Planted(drivers, quick_drivers, max_in_flight, in_flight_ms, max_states, tuple(bugs))


def _read_compare(r: _Reader, value: Any) -> Compare:
    from toolcall_sim.model import properties as props

    from toolcall_sim.ci import compare as cmp

    t = r.table(value, "compare", COMPARE_KEYS)
    designs = r.variants(t["designs"], "compare.designs") if "designs" in t else cmp.DEFAULT_DESIGNS
    known = [w.name for w in cmp.COMPARE_WORLDS]
    worlds = r.strings(t["worlds"], "compare.worlds") if "worlds" in t else tuple(known)
    for i, w in enumerate(worlds):
        if w not in known:
            r.fail(f"compare.worlds[{i}]", f"unknown comparison world {w!r} (known: {', '.join(known)})")
    seeds = r.integer(t.get("seeds", cmp.DEFAULT_SEEDS), "compare.seeds", 1)
    first = r.integer(t.get("first_seed", 1), "compare.first_seed", 0)
    quick = r.boolean(t.get("quick", False), "compare.quick")
    if "expect" not in t:
        r.fail("compare.expect", "missing: each design's expected verdicts ([compare.expect.<design>]; a design's "
                                 "flaw is expected, only a verdict change fails the run)")
    per_design = r.table(t["expect"], "compare.expect", designs)
    matrix = [p.name for p in props.PROPERTIES if p.kind in cmp.MATRIX_KINDS]
    expect = []
    for design in designs:
        w = f"compare.expect.{design}"
        if design not in per_design:
            r.fail(w, "missing: name the design's expected verdicts (an empty table: every property holds)")
        spec = r.table(per_design[design], w, VERDICTS)
        pairs: dict[str, str] = {}
        for verdict in VERDICTS:
            if verdict not in spec:
                continue
            names = r.strings(spec[verdict], f"{w}.{verdict}")
            for i, p in enumerate(names):
                if p not in matrix:
                    r.fail(f"{w}.{verdict}[{i}]", f"unknown property {p!r} (the matrix's: {', '.join(matrix)})")
                if p in pairs:
                    r.fail(f"{w}.{verdict}[{i}]", f"{p!r} is also expected {pairs[p]}")
                pairs[p] = verdict
        expect.append((design, tuple((p, pairs[p]) for p in matrix if p in pairs)))
    return Compare(tuple(designs), tuple(worlds), seeds, first, quick, tuple(expect))


def _read_detection(r: _Reader, value: Any) -> Detection:
    from toolcall_sim.ci import bugs as detect

    t = r.table(value, "detection", DETECTION_KEYS)
    if "drivers" not in t:
        r.fail("detection.drivers", f"missing: name the drivers to measure ({', '.join(detect.DRIVERS)})")
    drivers, quick_drivers, names = _drivers_and_bugs(r, t, "detection", detect.DRIVERS)
    given = r.table(t.get("budgets", {}), "detection.budgets", detect.DRIVERS)
    for d in given:
        if d not in drivers:
            r.fail(f"detection.budgets.{d}", f"{d} is not measured (detection.drivers)")
    budgets = tuple((d, r.integer(given.get(d, detect.DEFAULT_BUDGETS[d]), f"detection.budgets.{d}", 1))
                    for d in drivers)
    control = r.boolean(t.get("control", True), "detection.control")
    return Detection(drivers, quick_drivers, names, budgets, control)
