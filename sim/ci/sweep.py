"""Risk sweeps: how often each residual risk happens per million tool calls, over a grid
of world parameters, per design variant.

Theory of operation
-------------------
The contract's residual risks are documented in words (docs/contract.md D7: "a request
delayed longer than the margin right after an agent restart can run a second time");
whether a fix is worth its cost depends on a number: how many double runs or false
unknowns per million tool calls, at our latency tail and restart rate. A sweep file
(``SWEEP.toml``, read by ``load``) names

- a grid: ``[axes]`` lists values of world parameters (``PARAMS``: the latency's median
  and p99, rare stalls, agent restart, ownership change and interrupt rates, the share of
  commands that outlive an attempt, the agent's age margin, loss), ``[fixed]`` sets
  others for every point, the rest keep their defaults;
- the design variants to compare (``today``, ``contract``, any name the variant
  registry knows: ``toolcall_sim.model.planted_bugs.resolve``);
- ``seeds`` per point and variant, and the ``[workload]``: chats, turns per chat and
  tool calls per turn of one seed's long mixed workload, drawn by the swarm's generator
  (sim/world/stories.py ``draw_long_workload``: the same tool-call draws, faults as Poisson
  processes at the swept rates).

Each (point, variant, seed) is one run (``run_item``): the workload of the seed with the
point's world (``scenario_of``), run with ``toolcall_sim.world.run.run_scenario`` under the variant, and
counted (``count_run``): tool calls (the calls of committed assistant messages), of them
execute calls and file calls (edit_files, write_file), execute calls that started more
than one process (double runs), file calls applied more than once (edits applied twice),
false unknowns (the residual risk ``false_unknown_after_agent_start``: unknown, agent
restarted, and nothing ever ran), committed results and unknown ones, and every other
violation by property and class. The runs are numbered point-major, then variant, then
seed, and run through sim/backends/__init__.py ``map_seeds`` (this process, local workers
or a Dask cluster); their counts are summed per (point, variant) in that order, so the
report is the same on every backend (``fold``). Estimates (``estimate``) are rates per
million with exact 95% Clopper-Pearson intervals (sim/ci/intervals.py, for every count:
Wilson's approximation put one event in 35,000 calls at a lower bound of 5 per million
where the exact bound is 0.7; for a zero count the upper bound is 1 - 0.025^(1/n), about
the "rule of three" 3.7/n). Each risk is a rate per million tool calls (the table's
columns) and per million calls of the kind it can happen to: double runs per execute
call, edits applied twice per file call (the picture's panels); and the unknown-result
share with its own interval.

What the interval does not say: the tool calls of one seed share a world (a restart
affects every call in flight), so they are not independent trials; the interval is
that of independent calls and is too narrow when events cluster. More seeds, not more
calls per seed, narrow it honestly.

Rule 1. Every key of a sweep file is used by a run: an unknown key, a parameter both
        fixed and swept, an empty axis, or a parameter that no point uses (a stall range
        with no stall probability, a downtime with no restarts) is one line, exit 2.
Rule 2. Same file, same report, byte for byte: on any backend, with any number of
        workers, in any process (the runs are deterministic and folded in order).
"""

from __future__ import annotations

import itertools
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcall_sim.ci.intervals import METHOD, clopper_pearson
from toolcall_sim.io import input_file
from toolcall_sim.model.chattool.constants import EXECUTE, FILE_TOOLS
from toolcall_sim.scenarios import SHIPPED_DIR
from toolcall_sim.world.scenario import ScenarioError, format_duration, from_dict, parse_duration

_H = 3_600_000


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # duration | number | share
    default: Any  # as written in a sweep file
    meaning: str


# The world parameters a sweep may fix or sweep (Rule 1: each changes the run).
PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("latency_median", "duration", "20ms", "median one-way latency of a message (lognormal shape)"),
    Param("latency_p99", "duration", "200ms", "99th percentile of the latency: the tail"),
    Param("stall_probability", "share", 0.0, "chance that a message stalls on top of its latency (0: never)"),
    Param("stall_min", "duration", "1s", "shortest stall (a GC pause, a TCP retransmit)"),
    Param("stall_max", "duration", "3s", "longest stall"),
    Param("agent_restarts_per_hour", "number", 0.5, "agent restarts per hour (a Poisson process)"),
    Param("agent_downtime_max", "duration", "10s", "an agent restart is down for 0 up to this"),
    Param("ownership_changes_per_hour", "number", 0.25, "chats changing owner replica per hour, over all chats"),
    Param("interrupts_per_hour", "number", 0.25, "user interrupts per hour, over all chats"),
    Param("long_commands", "share", 0.33, "share of foreground commands that outlive the 15 min attempt timeout"),
    Param("age_margin", "duration", "2s", "the agent's age margin (world.age_margin)"),
    Param("loss", "share", 0.0, "chance that a message is lost"),
)}

TOP_KEYS = {"name", "summary", "variants", "seeds", "first_seed", "workload", "fixed", "axes"}
# The workload's defaults. ``chat_start``: the chats begin after the agent has been up a
# minute, as in production, so the first calls are not refused inside the age margin
# (that is the cost of a margin right after an agent start, which restarts measure).
WORKLOAD_KEYS = {"chats": 6, "turns": 8, "tool_calls": [1, 3], "until": "12h", "replicas": 2, "chat_start": "1m"}
MAX_RUNS = 10_000_000  # points x variants x seeds: a bigger ask is surely a typo


@dataclass(frozen=True)
class Workload:
    chats: int
    turns: int
    calls: tuple[int, int]
    until_ms: int
    replicas: int
    chat_start_ms: int


@dataclass(frozen=True)
class Sweep:
    name: str
    summary: str
    variants: tuple[str, ...]
    seeds: int
    first_seed: int
    workload: Workload
    fixed: tuple[tuple[str, Any], ...]  # name -> value as written
    axes: tuple[tuple[str, tuple[Any, ...]], ...]  # name -> values as written, in file order

    def points(self) -> list[dict]:
        """Every point of the grid (axis values as written), the last axis fastest."""
        names = [name for name, _ in self.axes]
        return [dict(zip(names, values)) for values in itertools.product(*(v for _, v in self.axes))]

    def params_of(self, point: dict) -> dict:
        """Every parameter's value at ``point`` in plain units (ms, floats)."""
        written = {name: p.default for name, p in PARAMS.items()}
        written.update(dict(self.fixed))
        written.update(point)
        return {name: _value(PARAMS[name], v, name) for name, v in written.items()}

    @property
    def runs(self) -> int:
        return len(self.points()) * len(self.variants) * self.seeds

    def with_seeds(self, seeds: int) -> "Sweep":
        from dataclasses import replace

        return replace(self, seeds=seeds)


# ---------------------------------------------------------------------------
# Reading a sweep file
# ---------------------------------------------------------------------------


def _value(param: Param, value: Any, where: str):
    """A parameter's value in plain units, or ScenarioError (one line)."""
    if param.type == "duration":
        return parse_duration(value, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{where}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ScenarioError(f"{where}: must be a finite number of at least 0, got {value}")
    if param.type == "share" and value > 1:
        raise ScenarioError(f"{where}: a share must be between 0 and 1, got {value}")
    return value


def resolve_path(path: str) -> str:
    """A sweep argument: a file, or the name of a shipped sweep (scenarios/sweeps/)."""
    sweeps = SHIPPED_DIR / "sweeps"
    try:
        if not Path(path).exists():
            for candidate in (sweeps / path, sweeps / f"{path}.toml"):
                if candidate.exists():
                    return str(candidate)
    except (ValueError, OSError):
        pass
    return path


def load(path: str) -> Sweep:
    shown = path
    try:  # only a regular file, at most 10 MB (sim/io/input_file.py: nothing hangs)
        if not os.path.lexists(path):
            raise ScenarioError(f"{shown}: no such sweep file")
        text = input_file.read_capped(path, shown, 10 * input_file.MB, "a sweep file").decode("utf-8")
    except input_file.InputFileError as err:
        raise ScenarioError(" ".join(str(err).split())) from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ScenarioError(f"{shown}: cannot read: {' '.join(str(err).split())}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{shown}: syntax: {err}") from None
    return from_data(data, shown)


def from_data(data: dict, shown: str = "<sweep>") -> Sweep:
    """The sweep in ``data``, checked (Rule 1); errors name ``shown`` and the key."""
    from toolcall_sim.model import planted_bugs

    def fail(where: str, reason: str):
        raise ScenarioError(f"{shown}: {where}: {reason}")

    def table(value, where: str) -> dict:
        if not isinstance(value, dict):
            fail(where, f"expected a table, got {type(value).__name__}")
        return value

    def integer(value, where: str, low: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            fail(where, f"expected an integer, got {value!r}")
        if value < low:
            fail(where, f"must be at least {low}, got {value}")
        return value

    for key in data:
        if key not in TOP_KEYS:
            fail(key, f"unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    for key in ("name", "variants", "seeds", "axes"):
        if key not in data:
            fail(key, "required")
    name, summary = data["name"], data.get("summary", "")
    if not isinstance(name, str) or not name.strip():
        fail("name", f"expected a non-empty string, got {name!r}")
    if not isinstance(summary, str):
        fail("summary", f"expected a string, got {summary!r}")
    variants = data["variants"]
    if not isinstance(variants, list) or not variants:
        fail("variants", "expected a non-empty list of variant names")
    for i, variant in enumerate(variants):
        if not isinstance(variant, str):
            fail(f"variants[{i}]", f"expected a variant name, got {variant!r}")
        try:
            planted_bugs.resolve(variant)
        except planted_bugs.UnknownVariant as err:
            fail(f"variants[{i}]", str(err))
    if len(set(variants)) != len(variants):
        fail("variants", "a variant is named twice")
    seeds = integer(data["seeds"], "seeds", 1)
    first_seed = integer(data.get("first_seed", 1), "first_seed", 0)

    w = table(data.get("workload", {}), "workload")
    for key in w:
        if key not in WORKLOAD_KEYS:
            fail(f"workload.{key}", f"unknown key (allowed: {', '.join(sorted(WORKLOAD_KEYS))})")
    w = {**WORKLOAD_KEYS, **w}
    chats = integer(w["chats"], "workload.chats", 1)
    turns = integer(w["turns"], "workload.turns", 1)
    calls = w["tool_calls"]
    if (not isinstance(calls, list) or len(calls) != 2
            or any(isinstance(c, bool) or not isinstance(c, int) for c in calls) or not 1 <= calls[0] <= calls[1]):
        fail("workload.tool_calls", f"expected [min, max] tool calls per turn with 1 <= min <= max, got {calls!r}")
    replicas = integer(w["replicas"], "workload.replicas", 1)
    try:
        until_ms = parse_duration(w["until"], "workload.until")
        chat_start_ms = parse_duration(w["chat_start"], "workload.chat_start")
    except ScenarioError as err:
        raise ScenarioError(f"{shown}: {err}") from None
    if chat_start_ms >= until_ms:
        fail("workload.chat_start", f"must be before workload.until ({w['until']})")
    if until_ms <= 0:
        fail("workload.until", "must be longer than 0s")
    from toolcall_sim.model import vocabulary

    if until_ms > vocabulary.MAX_UNTIL_MS:
        fail("workload.until", f"is longer than the cap of {format_duration(vocabulary.MAX_UNTIL_MS)}")

    fixed = table(data.get("fixed", {}), "fixed")
    axes = table(data["axes"], "axes")
    if not axes:
        fail("axes", "name at least one parameter to sweep (a sweep of one point: give it one value)")
    for section, values in (("fixed", fixed), ("axes", axes)):
        for key, value in values.items():
            if key not in PARAMS:
                fail(f"{section}.{key}", f"unknown parameter (known: {', '.join(PARAMS)})")
            where = f"{section}.{key}"
            if section == "axes":
                if not isinstance(value, list) or not value:
                    fail(where, "expected a non-empty list of values")
                if len(set(map(repr, value))) != len(value):
                    fail(where, "a value is listed twice")
                for i, v in enumerate(value):
                    _checked(PARAMS[key], v, f"{where}[{i}]", shown)
            else:
                _checked(PARAMS[key], value, where, shown)
    both = sorted(set(fixed) & set(axes))
    if both:
        fail(f"fixed.{both[0]}", "also swept in [axes]: give it in one place")
    sweep = Sweep(name.strip(), summary, tuple(variants), seeds, first_seed,
                  Workload(chats, turns, (calls[0], calls[1]), until_ms, replicas, chat_start_ms),
                  tuple(fixed.items()), tuple((k, tuple(v)) for k, v in axes.items()))
    if sweep.runs > MAX_RUNS:
        fail("seeds", f"{sweep.runs} runs (points x variants x seeds) is above the cap of {MAX_RUNS}")
    _check_live(sweep, shown)
    return sweep


def _checked(param: Param, value, where: str, shown: str):
    try:
        return _value(param, value, where)
    except ScenarioError as err:
        raise ScenarioError(f"{shown}: {err}") from None


def _check_live(sweep: Sweep, shown: str) -> None:
    """Rule 1: a parameter the file names must change some run. The lognormal needs a
    p99 at or above its median at every point; a stall range needs a stall probability;
    a downtime needs restarts; an ownership change needs two replicas."""
    named = {k for k, _ in sweep.fixed} | {k for k, _ in sweep.axes}
    points = [sweep.params_of(p) for p in sweep.points()]
    for point in points:
        if point["latency_p99"] < point["latency_median"]:
            raise ScenarioError(f"{shown}: latency_p99: {format_duration(int(point['latency_p99']))} is below the "
                                f"median {format_duration(int(point['latency_median']))} at a point of the grid")
        if point["latency_median"] <= 0:
            raise ScenarioError(f"{shown}: latency_median: must be longer than 0s")
        if point["stall_probability"] > 0 and point["stall_max"] < point["stall_min"]:
            raise ScenarioError(f"{shown}: stall_max: below stall_min at a point of the grid")
        if point["stall_probability"] > 0 and point["stall_max"] <= 0:
            raise ScenarioError(f"{shown}: stall_max: must be longer than 0s")
    needs = (("stall_min", "stall_probability"), ("stall_max", "stall_probability"),
             ("agent_downtime_max", "agent_restarts_per_hour"))
    for key, gate in needs:
        if key in named and not any(p[gate] > 0 for p in points):
            raise ScenarioError(f"{shown}: {key}: not used: {gate} is 0 at every point")
    if "ownership_changes_per_hour" in named and sweep.workload.replicas < 2 and any(
            p["ownership_changes_per_hour"] > 0 for p in points):
        raise ScenarioError(f"{shown}: ownership_changes_per_hour: needs workload.replicas of at least 2")


# ---------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------


def scenario_of(sweep: Sweep, point: dict, seed: int) -> dict:
    """The scenario dict of one seed at one point: the seed's long workload (sim/world/stories.py)
    in the point's world."""
    from toolcall_sim.world.stories import draw_long_workload

    p = sweep.params_of(point)
    w = sweep.workload
    replicas = w.replicas
    rates = {"agent_restart": p["agent_restarts_per_hour"], "interrupt": p["interrupts_per_hour"],
             "ownership_change": p["ownership_changes_per_hour"] if replicas >= 2 else 0.0}
    data = draw_long_workload(seed, w.chats, w.turns, w.calls, p["long_commands"], w.until_ms, rates,
                              int(p["agent_downtime_max"]))
    world = data.setdefault("world", {})
    world["replicas"] = replicas
    if w.chat_start_ms:
        world["chat_start"] = format_duration(w.chat_start_ms)
    world["age_margin"] = format_duration(int(p["age_margin"]))
    network: dict = {"latency": {"shape": "lognormal", "median": format_duration(int(p["latency_median"])),
                                 "p99": format_duration(int(p["latency_p99"]))}}
    if p["loss"] > 0:
        network["loss"] = p["loss"]
    if p["stall_probability"] > 0:
        network["stalls"] = {"probability": p["stall_probability"], "min": format_duration(int(p["stall_min"])),
                             "max": format_duration(int(p["stall_max"]))}
    data["network"] = network
    data["name"] = f"{sweep.name}-{seed}"
    return data


COUNTS = ("tool_calls", "executes", "file_calls", "double_runs", "edits_twice", "false_unknowns", "results",
          "unknown_results", "sim_ms")


def count_run(result, tools: dict[str, str]) -> dict:
    """What one run counts (theory of operation); ``tools``: provider ID -> tool."""
    from toolcall_sim.model.properties.evidence import committed_calls

    calls = committed_calls(result.world.system)
    report = result.report
    doubled = {(v.uuid, tools.get(v.provider_id)) for v in report.violations if v.property == "at_most_once"}
    false_unknown = {v.uuid for v in list(report.violations) + list(report.informational)
                     if v.residual_risk == "false_unknown_after_agent_start"}
    other: dict[str, int] = {}
    for v in report.violations:
        if v.property == "at_most_once" or v.residual_risk == "false_unknown_after_agent_start":
            continue
        key = f"{v.property}:{v.residual_risk or 'new'}"
        other[key] = other.get(key, 0) + 1
    return {
        "tool_calls": len(calls),
        # the denominators of the per-kind rates: a double run can only happen to an
        # execute call, an edit applied twice only to a file call
        "executes": sum(1 for c in calls if c.tool == EXECUTE),
        "file_calls": sum(1 for c in calls if c.tool in FILE_TOOLS),
        "double_runs": sum(1 for _, tool in doubled if tool == EXECUTE),
        "edits_twice": sum(1 for _, tool in doubled if tool in FILE_TOOLS),
        "false_unknowns": len(false_unknown),
        "results": report.results,
        "unknown_results": report.unknown_results,
        "sim_ms": result.until_ms,
        "other": dict(sorted(other.items())),
    }


def decode(sweep: Sweep, index: int) -> tuple[int, int, int]:
    """Run ``index`` -> (point index, variant index, seed): point-major, then variant."""
    per_point = len(sweep.variants) * sweep.seeds
    point, rest = divmod(index, per_point)
    variant, seed_no = divmod(rest, sweep.seeds)
    return point, variant, sweep.first_seed + seed_no


def run_item(index: int, sweep: Sweep) -> dict:
    """Module level: what a worker runs for run ``index`` (sim/backends/__init__.py)."""
    from toolcall_sim.world.run import run_scenario

    p, v, seed = decode(sweep, index)
    point = sweep.points()[p]
    data = scenario_of(sweep, point, seed)
    scenario = from_dict(data, f"<{data['name']}>")
    tools = {tc.provider: tc.tool for turn in scenario.turns for tc in turn.tool_calls}
    try:
        result = run_scenario(scenario, sweep.variants[v])
    except Exception as err:  # noqa: BLE001 - the model must not crash: named, then a harness error
        raise RuntimeError(f"point {p} {point}, variant {sweep.variants[v]}, seed {seed}: "
                           f"{type(err).__name__}: {err}") from None
    return count_run(result, tools)


def _preload() -> None:
    from toolcall_sim.world import run  # noqa: F401 - imported once before a fork, not in each worker


def iter_counts(sweep: Sweep, workers: int = 1, cluster=None, on_progress=None):
    from toolcall_sim.backends import map_seeds

    yield from map_seeds(run_item, 0, sweep.runs, (sweep,), workers=workers, cluster=cluster,
                         on_progress=on_progress, preload=_preload, unit="run")


def fold(sweep: Sweep, counts: list[dict]) -> list[dict]:
    """Sum the runs' counts per (point, variant), in run order (Rule 2)."""
    cells: list[dict] = []
    points = sweep.points()
    for index, c in enumerate(counts):
        p, v, _ = decode(sweep, index)
        if index % sweep.seeds == 0:
            cells.append({"point": points[p], "variant": sweep.variants[v], "seeds": 0,
                          **{k: 0 for k in COUNTS}, "other": {}})
        cell = cells[-1]
        cell["seeds"] += 1
        for k in COUNTS:
            cell[k] += c[k]
        for k, n in c["other"].items():
            cell["other"][k] = cell["other"].get(k, 0) + n
    for cell in cells:
        cell["other"] = dict(sorted(cell["other"].items()))
    return cells


# ---------------------------------------------------------------------------
# Estimates
# ---------------------------------------------------------------------------


def estimate(k: int, n: int, scale: float) -> dict:
    """k events in n trials as a rate per ``scale`` trials with its exact 95% interval."""
    lo, hi = clopper_pearson(k, n)
    return {"count": k, "rate": round(k / n * scale, 4) if n else None,
            "ci95": [round(lo * scale, 4), round(hi * scale, 4)]}


MILLION = 1_000_000


def summarize(sweep: Sweep, counts: list[dict]) -> dict:
    """The sweep's report as plain values: per (point, variant), rates per million tool
    calls and per million calls of the risk's own kind, with exact 95% intervals, and the
    unknown-result share in percent."""
    rows = []
    axes = [name for name, _ in sweep.axes]
    for cell in fold(sweep, counts):
        n = cell["tool_calls"]
        values = sweep.params_of(cell["point"])
        rows.append({
            "point": cell["point"],
            "point_value": {a: values[a] for a in axes},  # in plain units: ms for durations
            "variant": cell["variant"],
            "seeds": cell["seeds"],
            "tool_calls": n,
            "executes": cell["executes"],
            "file_calls": cell["file_calls"],
            "results": cell["results"],
            "sim_hours": round(cell["sim_ms"] / _H, 3),
            "double_runs_per_million": estimate(cell["double_runs"], n, MILLION),
            "double_runs_per_million_executes": estimate(cell["double_runs"], cell["executes"], MILLION),
            "edits_twice_per_million": estimate(cell["edits_twice"], n, MILLION),
            "edits_twice_per_million_file_calls": estimate(cell["edits_twice"], cell["file_calls"], MILLION),
            "false_unknowns_per_million": estimate(cell["false_unknowns"], n, MILLION),
            "unknown_share_percent": estimate(cell["unknown_results"], cell["results"], 100),
            "other_violations": cell["other"],
        })
    return {
        "sweep": sweep.name,
        "summary": sweep.summary,
        "variants": list(sweep.variants),
        "seeds": sweep.seeds,
        "first_seed": sweep.first_seed,
        "workload": {"chats": sweep.workload.chats, "turns": sweep.workload.turns,
                     "tool_calls": list(sweep.workload.calls), "until": format_duration(sweep.workload.until_ms),
                     "replicas": sweep.workload.replicas,
                     "chat_start": format_duration(sweep.workload.chat_start_ms)},
        "fixed": dict(sweep.fixed),
        "fixed_value": {k: v for k, v in sweep.params_of({}).items() if k in dict(sweep.fixed)},  # plain units
        "axes": {k: list(v) for k, v in sweep.axes},
        "interval": f"{METHOD}, 95%",
        "runs": sweep.runs,
        "tool_calls": sum(r["tool_calls"] for r in rows),
        "rows": rows,
    }


def run_sweep(sweep: Sweep, workers: int = 1, cluster=None, on_progress=None) -> dict:
    return summarize(sweep, list(iter_counts(sweep, workers, cluster, on_progress)))
