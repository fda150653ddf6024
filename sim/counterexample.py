"""Counterexamples: one file format for every driver, and replay through the pure model.

A counterexample is JSON: the world it happened in (an explorer world of
``model/worlds.py`` by name, with its variant and bounds, or a scenario file with variant
and seed), the property it violates, and the labelled actions that lead there from the
initial state. Labels, not positions: each delivery names its message ("start toolu_fg
replica-1 -> agent"), each timer its node and name, each fault its kind, so a replay that
stops fitting after the code changed says at which step and why. A recorded trace
(``toolcall-sim run --trace``) replays too: its ``action`` records are the same labelled
actions.

``replay`` rebuilds the world, applies the actions through ``model.system.apply`` (no
simpy, no randomness), evaluates the properties, and says whether the violation
reproduces and with which trace hash.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from model import properties as props
from model import system as msys
from model import worlds

from .replay import replay as replay_actions
from .replay import trace_sha256  # noqa: F401  (re-exported: counterexample files carry it)

FORMAT = "toolcall-sim/counterexample/1"


class BadInput(Exception):
    """One line: what is wrong with the file."""


def world_of(spec: dict) -> msys.WorldConfig:
    """Rebuild the world a counterexample names. An explorer world is named by ``name``
    (files written before there were several name none: the default world)."""
    kind = spec.get("kind")
    if kind == "explore":
        try:
            return worlds.build(spec.get("name", "default"), spec.get("variant", "contract"),
                                spec.get("second", "background"))
        except worlds.UnknownWorld as err:
            raise BadInput(f"world.name: {err}") from None
    if kind == "scenario":
        from .run import build
        from .scenario import load

        config, _ = build(load(spec["path"]), spec.get("variant", "contract"))
        return config
    raise BadInput(f"world.kind: unknown world kind {kind!r} (known: explore, scenario)")


def save(path: str | Path, world: dict, prop: str, residual_risk, actions, trace_hash: str, driver: str,
         detail: str = "") -> None:
    doc = {
        "format": FORMAT,
        "driver": driver,
        "world": world,
        "property": prop,
        "residual_risk": residual_risk,
        "detail": detail,
        "trace_sha256": trace_hash,
        "steps": len(actions),
        "actions": [msys.action_to_json(a) | {"label": a.label()} for a in actions],
    }
    Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def explore_world(name: str, variant: str, bounds, second: str = "background") -> dict:
    """The world spec of an explorer world, as counterexample files record it."""
    return {"kind": "explore", "name": name, "variant": variant, "second": second,
            "bounds": {k: getattr(bounds, k) for k in bounds.__dataclass_fields__}}


def save_actions(path: str | Path, world: dict, prop: str, residual_risk, actions, driver: str,
                 detail: str = "") -> Path:
    """Save a counterexample of any driver with the hash of the trace its actions replay
    to in ``world`` (as ``replay`` will compute it)."""
    trace, _ = explore_trace(world_of(world), actions)
    save(path, world, prop, residual_risk, actions, trace_sha256(trace), driver, detail)
    return Path(path)


def save_run(path: str | Path, scenario_path: str | Path, variant: str, trace: list[dict], prop: str,
             driver: str, detail: str = "") -> Path:
    """Save a simpy run's failure (a swarm world written as a scenario file) in the same
    format: the actions the run recorded in its trace."""
    world = {"kind": "scenario", "path": str(scenario_path), "variant": variant}
    actions = _actions([r for r in trace if r.get("kind") == "action"])
    return save_actions(path, world, prop, None, actions, driver, detail)


@dataclass
class Replayed:
    reproduced: bool
    property: str | None
    residual_risk: str | None
    trace_sha256: str
    expected_sha256: str | None
    applied: int
    steps: int
    mismatch: str | None
    violations: list

    def to_json(self) -> dict:
        out = asdict(self)
        out["violations"] = [v.to_json() for v in self.violations]
        return out


def _actions(records: list[dict]) -> list:
    out = []
    for i, rec in enumerate(records):
        data = {k: v for k, v in rec.items() if k not in ("label", "t_ms") and not (k == "kind" and v == "action")}
        if "at_ms" not in data and "t_ms" in rec:
            data["at_ms"] = rec["t_ms"]
        try:
            out.append(msys.action_from_json(data))
        except (KeyError, TypeError) as err:
            raise BadInput(f"actions[{i}]: not an action ({err})") from None
    return out


def load_any(path: str | Path) -> tuple[dict, list, dict]:
    """(world spec, actions, expectations) from a counterexample or a recorded trace."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise BadInput(f"{p}: cannot read: {err.strerror or err}") from None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None  # JSON lines: a recorded trace
    if isinstance(doc, dict) and doc.get("kind") != "header" and "format" in doc:
        if doc.get("format") != FORMAT:
            raise BadInput(f"{p}: format: expected {FORMAT!r}, got {doc.get('format')!r}")
        return doc["world"], _actions(doc.get("actions", [])), doc
    # A recorded trace: JSON lines with a header naming the scenario.
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            raise BadInput(f"{p}:{n}: not a JSON line") from None
    header = next((r for r in records if r.get("kind") == "header"), None)
    if header is None:
        raise BadInput(f"{p}: neither a counterexample nor a trace with a header record")
    world = {"kind": "scenario", "path": header["scenario_path"], "variant": header["variant"]}
    acts = [r for r in records if r.get("kind") == "action"]
    return world, _actions(acts), {"trace_sha256": trace_sha256(records), "property": None, "header": header}


def replay(path: str | Path) -> Replayed:
    world, actions, doc = load_any(path)
    config = world_of(world)
    result = replay_actions(config, actions, doc.get("header"))
    wanted = doc.get("property")
    # The explorer judges eventually-properties only in the terminal state a path ends in,
    # so only a counterexample of one is judged by them.
    eventually = {p.name for p in props.PROPERTIES if p.kind == "eventually"}
    kinds = ("always",) if world.get("kind") == "explore" and wanted not in eventually else ("always", "eventually")
    report = props.evaluate(result.trace, result.final, kinds)
    risk = doc.get("residual_risk")
    hits = [v for v in report.violations if wanted is None or (v.property == wanted and v.residual_risk == risk)]
    return Replayed(
        reproduced=bool(hits) and result.mismatch is None,
        property=hits[0].property if hits else wanted,
        residual_risk=hits[0].residual_risk if hits else risk,
        trace_sha256=trace_sha256(result.trace),
        expected_sha256=doc.get("trace_sha256"),
        applied=result.applied,
        steps=len(actions),
        mismatch=result.mismatch,
        violations=report.violations,
    )


def explore_trace(config: msys.WorldConfig, actions) -> tuple[list[dict], msys.System]:
    """The full trace of a counterexample's actions (as ``replay`` computes it, with no
    header record)."""
    result = replay_actions(config, actions)
    return result.trace, result.final
