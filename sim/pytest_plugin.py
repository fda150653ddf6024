"""Races as tests: a pytest plugin that runs scenario files and lends tests the harness.

Theory of operation
-------------------
Registered by the package's ``pytest11`` entry point (pyproject.toml), so it is on in
every pytest run once toolcall-sim is installed; ``-p toolcall_sim.pytest_plugin`` loads it from a
checkout whose installed metadata predates it (the entry point has that same name, so
the two never register it twice), ``-p no:toolcall_sim.pytest_plugin`` turns it off.

Scenario files become test items. A ``*.toml`` file is collected when it sits under a
folder named ``scenarios`` (``scenarios/**/*.toml``) or under a folder the ini option
``toolcall_scenarios`` names, *and* it is a scenario: its top level has ``turns``, the
one table every scenario has (sim/world/scenario.py ``_read_head``) and no other TOML of the
project does (``scenarios/suites/*.toml``, pyproject files). A file that is not valid
TOML is collected too and fails with its syntax error: in a scenario folder it is a
broken scenario until shown otherwise. A scenario file that does not load is a
collection error whose text is the loader's one line (``<file>: <field>: <reason>``).
When pytest runs its ``testpaths`` (no paths on the command line), the
``toolcall_scenarios`` folders are run too.

Each scenario gives one item per variant that has an ``[expect.<variant>]``, named
``file.toml::contract``; a scenario without any runs once under its own ``variant`` and
passes when nothing is violated (``toolcall-sim run``'s rule). ``--toolcall-variant``
keeps only the named variants; ``--toolcall-seeds 1-5`` runs each item at those seeds
instead of the file's own (``file.toml::contract[seed=3]``), to see whether a story
holds beyond the seed it was written at; a variant whose expectations say ``seeds =
"pinned"`` (they hold at the file's seed only: model/vocabulary.py ``EXPECT_SEEDS``) is
run at the file's seed alone, as ``file.toml::contract[seed=1713,pinned]``, and the
terminal summary lists such items, so none is multiplied or dropped in silence. An item
runs ``toolcall_sim.world.run.run_scenario`` and checks ``RunResult.expectation_failures`` (what
``toolcall-sim run`` checks); when the ini option ``toolcall_trace_hashes`` names a
JSON file of pinned trace hashes (keys ``<file stem>/<variant>``), the file's own seed
must also give its pinned hash, and ``TOOLCALL_SIM_REPIN=1`` writes this run's hash
instead. A failure prints
reports/scenario_test.py's ``failure_report``: the story, what happened, the unmet
expectations, each violation with its evidence records, the reproduce command and the
sequence diagram's path. ``-k`` matches the file name, the variant and the scenario's
``name``; ``-m toolcall_scenario`` selects the items; ``-x`` and ``--junitxml`` work as
for any item (the junit ``properties`` carry the variant, seed, trace hash and the
reproduce command; a test's ``toolcall_run`` calls add the same properties per run, and
``toolcall_explore`` a ``toolcall-sim replay`` command per counterexample).

Fixtures: ``toolcall_run`` (sim/api.py's ``run``; a builder is also written to the
test's tmp_path, so a failing test prints a reproduce command for it; a fault that did
nothing, never fired or raced nothing fails the test unless the keyword
``allow_noop_faults`` or the marker ``toolcall_allow_noop_faults`` allows it),
``toolcall_explore`` (an exhaustive search of a small world: verdicts and
counterexample files) and ``toolcall_swarm`` (swarm seeds, by default
``--toolcall-seeds``). ``HYPOTHESIS_PROFILE`` names the hypothesis profile
(sim/drivers/stateful.py's ``ci`` or ``long``), as tests/test_stateful.py reads it.

Items run one scenario each in whatever process collects them, so they run under
pytest-xdist like any test: a run depends only on the scenario, variant and seed.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from toolcall_sim.reports import scenario_test as text

# What the configuration parsed once, for every hook and fixture of the session.
_SETTINGS = pytest.StashKey["_Settings"]()
REPIN_ENV = "TOOLCALL_SIM_REPIN"
SCENARIO_FOLDER = "scenarios"  # a folder of this name holds scenario files
DEFAULT_SWARM_SEEDS = (1, 2, 3, 4, 5)  # toolcall_swarm's seeds without --toolcall-seeds


@dataclass(frozen=True)
class _Settings:
    variants: tuple[str, ...]  # () = every variant a scenario expects
    seeds: tuple[int, ...]  # () = each scenario's own seed
    folders: tuple[Path, ...]  # the toolcall_scenarios folders
    hashes: Path | None  # the pinned trace hashes file


class ScenarioFailed(Exception):
    """A scenario item whose run did not go as expected; the message is the report."""


def pytest_addoption(parser) -> None:
    group = parser.getgroup("toolcall-sim", "toolcall-sim scenarios")
    group.addoption("--toolcall-variant", action="append", default=[], metavar="VARIANT",
                    help="run scenario files only under this variant (repeatable, or comma-separated)")
    group.addoption("--toolcall-seeds", default=None, metavar="SEEDS",
                    help="run each scenario item at these seeds instead of the file's own, and the toolcall_swarm "
                         "fixture's default seeds: 1-20, or 3,7,9")
    parser.addini("toolcall_scenarios", type="paths", default=[],
                  help="folders of scenario files (besides any folder named scenarios), run with the testpaths")
    parser.addini("toolcall_trace_hashes", type="string", default="",
                  help="JSON file of pinned trace hashes (<file stem>/<variant>) that scenario items must give")


def parse_seeds(value: str, where: str = "--toolcall-seeds") -> tuple[int, ...]:
    """``"1-5"`` -> (1, 2, 3, 4, 5); ``"3,7"`` -> (3, 7); refused with one line."""
    seeds: list[int] = []
    for part in value.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            lo, hi = int(first), int(last) if dash else int(first)
        except ValueError:
            raise pytest.UsageError(f"{where}: not seeds {value!r} (use e.g. 1-20 or 3,7,9)") from None
        if lo < 0 or hi < lo:
            raise pytest.UsageError(f"{where}: {part.strip()!r} is no range of seeds (use e.g. 1-20)")
        seeds.extend(range(lo, hi + 1))
    return tuple(dict.fromkeys(seeds))


def _variants(config) -> tuple[str, ...]:
    names = [v.strip() for given in config.getoption("--toolcall-variant") for v in given.split(",")]
    if not names:
        return ()
    from toolcall_sim.model import planted_bugs  # the model's tables: only when a variant is named

    for name in names:
        if not name:
            raise pytest.UsageError("--toolcall-variant: empty; name a variant (toolcall-sim list shows them)")
        try:
            planted_bugs.resolve(name)
        except planted_bugs.UnknownVariant as err:
            raise pytest.UsageError(f"--toolcall-variant: {err}") from None
    return tuple(dict.fromkeys(names))


def _hypothesis_profile() -> None:
    """``HYPOTHESIS_PROFILE`` (sim/drivers/stateful.py registers ``ci`` and ``long``)."""
    name = os.environ.get("HYPOTHESIS_PROFILE")
    if not name:
        return
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    from toolcall_sim.drivers import stateful  # noqa: F401 - registers the profiles

    try:
        settings.load_profile(name)
    except InvalidArgument:
        raise pytest.UsageError(f"HYPOTHESIS_PROFILE: no profile {name!r} (sim/drivers/stateful.py has ci and long)") from None


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "toolcall_scenario: a scenario file run under one variant (toolcall_sim.pytest_plugin)")
    config.addinivalue_line("markers", f"{ALLOW_NOOP_MARKER}(*indexes): this test's toolcall_run runs may have faults "
                                       "that do nothing, never fire or race nothing (all, or those indexes)")
    seeds = config.getoption("--toolcall-seeds")
    hashes = config.getini("toolcall_trace_hashes")
    base = config.inipath.parent if config.inipath else config.rootpath
    settings = _Settings(_variants(config), parse_seeds(seeds) if seeds is not None else (),
                         tuple(Path(p).resolve() for p in config.getini("toolcall_scenarios")),
                         (base / hashes).resolve() if hashes else None)
    config.stash[_SETTINGS] = settings
    if settings.seeds:
        config.pluginmanager.register(_PinnedItems(), "toolcall-sim-pinned-items")
    _hypothesis_profile()
    # Plain ``pytest`` runs the testpaths: the scenario folders join them. Paths given on
    # the command line are run as given.
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        shown = {Path(a).resolve() for a in config.args}
        config.args = list(config.args) + [str(p) for p in settings.folders if p not in shown and p.is_dir()]


# ---------------------------------------------------------------------------
# Collection
# ---------------------------------------------------------------------------


def _in_scenario_folder(path: Path, config) -> bool:
    try:
        parts = path.relative_to(config.rootpath).parts[:-1]
    except ValueError:
        parts = path.parts[:-1]
    if SCENARIO_FOLDER in parts:
        return True
    return any(path.is_relative_to(folder) for folder in config.stash[_SETTINGS].folders)


def is_scenario_file(path: Path) -> bool:
    """A TOML file whose top level has ``turns`` (every scenario has; no other TOML of the
    project does), or one that is not valid TOML (reported, not skipped)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    return "turns" in data


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".toml" and _in_scenario_folder(file_path, parent.config) and is_scenario_file(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _shown(path: Path, config) -> str:
    """``path`` as the person typing the reproduce command sees it: relative to where
    pytest was started when it lies below it."""
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)


class ScenarioFile(pytest.File):
    """One scenario file: an item per variant it expects (or its own variant)."""

    def collect(self):
        from toolcall_sim.world.scenario import ScenarioError, load

        try:
            scenario = load(self.path, _shown(self.path, self.config))
        except ScenarioError as err:
            raise self.CollectError(str(err)) from None
        settings = self.config.stash[_SETTINGS]
        variants = [v for v, _ in scenario.expect] or [scenario.variant]
        if settings.variants:
            variants = [v for v in variants if v in settings.variants]
        pinned = {v for v, e in scenario.expect if e.seeds == "pinned"}
        if scenario.replay is not None:  # its steps draw nothing: one run, whatever the seeds (sim/world/scenario_replay.py)
            pinned = set(variants)
        for variant in variants:
            if settings.seeds and variant in pinned:
                # Its expectations hold at the file's seed only: run there, once, named so
                # (the terminal summary lists it), not at each --toolcall-seeds seed.
                yield ScenarioItem.from_parent(self, name=f"{variant}[seed={scenario.seed},pinned]",
                                               scenario=scenario, variant=variant, seed=None, pinned=True)
                continue
            for seed in settings.seeds or (None,):
                name = variant if seed is None else f"{variant}[seed={seed}]"
                yield ScenarioItem.from_parent(self, name=name, scenario=scenario, variant=variant, seed=seed)


class ScenarioItem(pytest.Item):
    """One scenario under one variant (at one seed): its expectations hold."""

    def __init__(self, *, scenario, variant: str, seed: int | None, pinned: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.variant = variant
        self.seed = seed  # None: the file's own
        self.pinned = pinned  # run at the file's own seed in place of --toolcall-seeds
        self.extra_keyword_matches.add(scenario.name)
        self.add_marker("toolcall_scenario")

    def runtest(self) -> None:
        from toolcall_sim.api_results import Result
        from toolcall_sim.world.run import run_scenario

        result = run_scenario(self.scenario, self.variant, self.seed)
        shown = _shown(self.path, self.config)
        reproduce = text.reproduce(shown, self.variant, result.seed)
        for prop in (("scenario", self.scenario.name), ("variant", self.variant), ("seed", result.seed),
                     ("trace_sha256", result.trace_sha256), ("reproduce", reproduce)):
            self.user_properties.append(prop)
        if self.pinned:  # (a property, so the summary sees it from an xdist worker too)
            self.user_properties.append(("pinned", "the expectations hold at the file's seed only"))
        failures = result.expectation_failures()
        hash_problem = self._check_hash(result.trace_sha256) if self.seed is None else None
        if failures or hash_problem:
            api = Result(result, shown)
            calls = [{"row": c.row, "starts": c.starts} for c in api.calls()]
            doc = api.json()
            raise ScenarioFailed(text.failure_report(doc, self.scenario.summary, shown, failures,
                                                     result.world.trace, calls, hash_problem,
                                                     self._diagram(result, doc)))

    def _diagram(self, result, doc: dict) -> str | None:
        """Draw the failed run's sequence diagram, the records its violations cite
        highlighted, under ``reports/out/pytest/`` of the rootdir (where the commands
        write theirs); the path as the failure text shows it, or None when it cannot be
        written (the failure is reported either way)."""
        from toolcall_sim.reports import figures

        from toolcall_sim.ci.check import chat_names
        from toolcall_sim.io.output import write_atomic

        evidence = sorted({i for v in doc["violations"] + doc["residual_risks"] for i in v.get("evidence", ())})
        seed = "" if self.seed is None else f"-seed{self.seed}"
        path = self.config.rootpath / "reports" / "out" / "pytest" / f"{self.path.stem}-{self.variant}{seed}.svg"
        try:
            svg = figures.sequence_svg(result.world.trace, title=f"{self.scenario.name} under {self.variant}",
                                       highlight=evidence, chat_names=chat_names(result.world.system.config))
            write_atomic(path, svg)
        except (OSError, ValueError):
            return None
        return _shown(path, self.config)

    def _check_hash(self, sha256: str) -> str | None:
        hashes = self.config.stash[_SETTINGS].hashes
        if hashes is None:
            return None
        key = f"{self.path.stem}/{self.variant}"
        if os.environ.get(REPIN_ENV):
            repin(hashes, key, sha256)
            return None
        pinned = json.loads(hashes.read_text()).get(key) if hashes.exists() else None
        return None if pinned == sha256 else text.hash_moved(key, pinned, sha256, _shown(hashes, self.config))

    def repr_failure(self, excinfo, style=None):
        from toolcall_sim.world.scenario import ScenarioError

        if isinstance(excinfo.value, (ScenarioFailed, ScenarioError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{self.name} ({self.scenario.name} under {self.variant})"


def repin(hashes: Path, key: str, sha256: str) -> None:
    """Write one pinned hash. Items run in several pytest-xdist workers, each with its own
    share: each write re-reads the file under an exclusive lock and changes only its own
    key, so no worker writes back another's old hashes."""
    import fcntl

    hashes.parent.mkdir(parents=True, exist_ok=True)
    with open(hashes.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        pinned = json.loads(hashes.read_text()) if hashes.exists() else {}
        pinned[key] = sha256
        tmp = hashes.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
        tmp.replace(hashes)


class _PinnedItems:
    """Collects the pinned items that ran (from their reports' properties, so in the
    xdist controller too) and names them at the end of the terminal summary."""

    def __init__(self):
        self.ran: dict[str, int] = {}  # node id without the [seed=...] -> the file's seed

    def pytest_runtest_logreport(self, report) -> None:
        props = dict(report.user_properties)
        if report.when == "call" and "pinned" in props:
            self.ran[report.nodeid.rsplit("[", 1)[0]] = props["seed"]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.ran:
            terminalreporter.write_line(
                f"toolcall-sim: {len(self.ran)} scenario item(s) ran at their file's own seed only, not at "
                "--toolcall-seeds (their expectations say seeds = \"pinned\"): "
                + ", ".join(f"{node} (seed {seed})" for node, seed in sorted(self.ran.items())))


# ---------------------------------------------------------------------------
# What a test's own assertions print
# ---------------------------------------------------------------------------


def pytest_assertrepr_compare(config, op, left, right):
    """``assert result.call("toolu_01").process_starts == 1`` says what happened:
    ``toolu_01 started 2 processes (...); expected 1``."""
    import sys

    if op not in ("==", "!=") or "toolcall_sim.api_results" not in sys.modules:  # no Told value exists before it is imported
        return None
    from toolcall_sim.api_results import Told

    for value, other in ((left, right), (right, left)):
        if isinstance(value, Told) and not isinstance(other, Told):
            return [value.told(other) if op == "==" else f"{value.sentence}; expected anything else"]
    return None


_RUNS = pytest.StashKey[list]()  # the reproduce commands of a test's toolcall_run calls


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    runs = item.stash.get(_RUNS, None)
    if runs and report.failed and call.when == "call":
        report.sections.append(("toolcall-sim runs of this test", "\n".join(runs)))
    return report


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------


ALLOW_NOOP_MARKER = "toolcall_allow_noop_faults"


def _marked_allowance(node) -> "bool | list[int]":
    """What ``@pytest.mark.toolcall_allow_noop_faults`` lets a test's runs do: with no
    arguments every fault may do nothing, with indexes (``(0, 2)``) those faults."""
    marker = node.get_closest_marker(ALLOW_NOOP_MARKER)
    if marker is None:
        return False
    if marker.kwargs:
        raise pytest.UsageError(f"@pytest.mark.{ALLOW_NOOP_MARKER}: takes fault indexes, not {sorted(marker.kwargs)}")
    return list(marker.args) if marker.args else True


@pytest.fixture
def toolcall_run(request, tmp_path):
    """``toolcall_run(world, variant=None, seed=None, until=None, allow_noop_faults=None)``:
    run a builder (sim/api.py ``Scenario``), a scenario value or a scenario file; returns
    an ``toolcall_sim.api.Result``. A builder is written to the test's tmp_path first, so a
    failing test lists a command that runs it again. A fault that did nothing, never
    fired or raced nothing fails the test (sim/api.py ``FaultDidNothing``) unless
    ``allow_noop_faults`` (True, or fault indexes) or the test's
    ``@pytest.mark.toolcall_allow_noop_faults`` marker allows it; the keyword wins."""
    from toolcall_sim import api

    runs = request.node.stash.setdefault(_RUNS, [])
    marked = _marked_allowance(request.node)

    def run(world, variant: str | None = None, seed: int | None = None, until: str | None = None,
            allow_noop_faults: "bool | list[int] | None" = None) -> api.Result:
        __tracebackhide__ = True
        file = None
        if isinstance(world, api.Scenario):
            slug = "".join(ch if ch.isalnum() else "_" for ch in world.name)[:60] or "scenario"
            file = world.write(tmp_path / f"{slug}.toml")
        allowed = marked if allow_noop_faults is None else allow_noop_faults

        def record(result: api.Result) -> None:
            """The run's reproduce command for the failure text, and for --junitxml the
            properties a scenario item carries (one set per run of the test)."""
            shown = None if result.file is None else _shown(Path(result.file), request.config)
            reproduce = text.reproduce(shown, result.variant, result.seed) + (f" --until {until}" if until else "")
            runs.append(reproduce)
            for prop in (("scenario", result.scenario), ("variant", result.variant), ("seed", result.seed),
                         ("trace_sha256", result.trace_sha256), ("reproduce", reproduce)):
                request.node.user_properties.append(prop)

        try:
            result = api.run(file or world, variant, seed, until, allow_noop_faults=allowed)
        except api.FaultDidNothing as err:  # (the failure lists the run's command too)
            record(err.result)
            raise
        record(result)
        return result

    return run


@dataclass
class Explored:
    """An exhaustive search: how far it got, each property's verdict, and the
    counterexamples (one per violated property, the shortest, saved as files that
    ``toolcall-sim replay`` reads)."""

    states: int
    exhausted: bool
    verdicts: dict  # property -> "violated" | "residual risk <name>" | "holds" | "holds so far"
    counterexamples: list = field(default_factory=list)  # dicts: property, residual_risk, file, steps, actions

    def assert_holds(self, *properties: str) -> None:
        """No new finding (or none among ``properties``)."""
        bad = [c for c in self.counterexamples if c["residual_risk"] is None
               and (not properties or c["property"] in properties)]
        if bad:
            raise AssertionError("; ".join(f"{c['property']} violated in {c['steps']} steps "
                                           f"({', '.join(c['actions'])}): {c['detail']}; replay {c['counterexample']}"
                                           for c in bad))


@pytest.fixture
def toolcall_explore(request, tmp_path):
    """``toolcall_explore(world="default", variant="contract", max_states=20_000,
    horizon="30s", max_in_flight="0s", second="background", **budgets)``: an exhaustive
    breadth-first search of a small world of model/worlds.py (``toolcall-sim explore``);
    returns an ``Explored``. Counterexamples are written under the test's tmp_path."""

    def explore(world: str = "default", variant: str = "contract", max_states: int = 20_000,
                horizon: str = "30s", max_in_flight: str = "0s", second: str = "background",
                **budgets: int) -> Explored:
        from toolcall_sim.model import explore as ex
        from toolcall_sim.model import properties as props
        from toolcall_sim.model import worlds
        from toolcall_sim.cli.explore_search import save_counterexamples
        from toolcall_sim.drivers import counterexample as cx
        from toolcall_sim.world.scenario import parse_duration

        scale = ex.Bounds().scale
        bounds = ex.Bounds(max_in_flight_ms=parse_duration(max_in_flight, "max_in_flight") // scale,
                           horizon_ms=parse_duration(horizon, "horizon") // scale, **budgets)
        result = ex.explore(worlds.build(world, variant, second), bounds, max_states=max_states)
        found = save_counterexamples(result, tmp_path, f"{world}-", variant,
                                     cx.explore_world(world, variant, bounds, second))
        verdicts = {p.name: "holds" if result.exhausted else "holds so far" for p in props.PROPERTIES
                    if p.kind != "sometimes"}
        for c in found:
            verdicts[c["property"]] = f"residual risk {c['residual_risk']}" if c["residual_risk"] else "violated"
            # --junitxml: the command that replays it, as a check report's explorer case says
            request.node.user_properties.append(("reproduce", f"toolcall-sim replay {c['counterexample']}"))
        return Explored(result.states, result.exhausted, verdicts, found)

    return explore


@dataclass
class Swarmed:
    """A swarm: the report ``toolcall-sim swarm --json`` prints (``report``)."""

    report: dict

    @property
    def failures(self) -> list[dict]:
        return self.report["failures"]

    def assert_no_failures(self) -> None:
        if self.failures:
            raise AssertionError("; ".join(
                f"seed {f['seed']}: {f['property']} at {f['at_s']:g} s ({f['detail']}); rerun with toolcall-sim "
                f"swarm --first-seed {f['seed']} --seeds 1 --variant {self.report['variant']}" for f in self.failures))


@pytest.fixture
def toolcall_swarm(request):
    """``toolcall_swarm(seeds=None, variant="contract", minimize=True)``: run swarm
    seeds (default: ``--toolcall-seeds``, else 1-5) in this process; returns a
    ``Swarmed`` with the swarm's report."""
    settings = request.config.stash[_SETTINGS]

    def swarm(seeds=None, variant: str = "contract", minimize: bool = True) -> Swarmed:
        from toolcall_sim.drivers.swarm import run_seed, summarize

        chosen = tuple(seeds) if seeds is not None else settings.seeds or DEFAULT_SWARM_SEEDS
        outcomes = [run_seed(seed, variant, minimize) for seed in chosen]
        return Swarmed(summarize(outcomes, chosen[0] if chosen else 1, variant))

    return swarm
