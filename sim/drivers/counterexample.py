"""Counterexamples: one file format for every driver, and replay through the pure model.

A counterexample is JSON: the world it happened in (an explorer world of
``model/worlds.py`` by name, with its variant and bounds; a scenario explored on the
explorer's clock, ``explore-scenario``, with the scenario embedded, rebuilt by
sim/world/explore_scenario.py; or a scenario file with variant and seed), the property it violates, and the labelled actions that lead there from the
initial state. Labels, not positions: each delivery names its message ("start toolu_fg
replica-1 -> agent"), each timer its node and name, each fault its kind, so a replay that
stops fitting after the code changed says at which step and why. A recorded trace
(``toolcall-sim run --trace``) replays too: its ``action`` records are the same labelled
actions.

``replay`` rebuilds the world, applies the actions through ``toolcall_sim.model.system.apply`` (no
simpy, no randomness), evaluates the properties, and says whether the violation
reproduces and with which trace hash. Its text and JSON shape are rendered by
``toolcall_sim.reports.replay``.

A file edited by hand must not pass as "fixed" (issue 32). A file is read strictly
(``toolcall_sim.io.json_input``: no NaN, no duplicate keys, bounded nesting), and one that contradicts
itself is bad input (exit 2): an action whose ``label`` is not the label of its fields, a
counterexample whose ``steps`` is not its number of actions. A recorded trace holds every
record its actions gave, so its replay must rebuild it record for record: one that
rebuilds other records and shows no violation did not replay that run (the file was
edited, or the code changed) and is ``does_not_fit`` (exit 3) at the first record where
the two part, never "not reproduced". A counterexample holds only its actions and the
hash of their trace when written; a code change (a fix) changes that trace, so there a
differing hash is reported next to the verdict, not refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from toolcall_sim.model import properties as props
from toolcall_sim.model import system as msys
from toolcall_sim.model import worlds

from toolcall_sim.io import input_file, json_input
from toolcall_sim.io.output import write_atomic
from toolcall_sim.world.replay import replay_actions, trace_lines
from toolcall_sim.world.replay import trace_sha256  # noqa: F401  (re-exported: counterexample files carry it)

FORMAT = "toolcall-sim/counterexample/1"


class BadInput(Exception):
    """One line: what is wrong with the file."""


# A counterexample is a page; a recorded trace of the largest scenario the loader accepts
# (tests/caps_scenario.py) is tens of MB: 256 MB is far above both, and far below what
# would exhaust memory (a log or /dev/zero named by mistake).
MAX_INPUT_BYTES = 256 * input_file.MB


def world_of(spec, base: Path | None = None, scenario_file: str | None = None) -> msys.WorldConfig:
    """Rebuild the world a counterexample names. An explorer world is named by ``name``
    (files written before there were several name none: the default world). A scenario
    world is the scenario itself (``scenario``, as swarm embeds it), or a scenario found
    by its name and content digest (``find_scenario``), or, in files written before
    scenarios were named by content, a ``path`` (relative to the file's folder ``base``)."""
    from toolcall_sim.model import planted_bugs

    from toolcall_sim.world.run import build
    from toolcall_sim.world.scenario import ScenarioError, from_dict, load

    if not isinstance(spec, dict):
        raise BadInput(f"world: expected an object, got {type(spec).__name__}")
    kind = spec.get("kind")
    variant = spec.get("variant", "contract")
    if not isinstance(variant, str) or not variant:
        raise BadInput(f"world.variant: expected a variant name, got {variant!r}")
    if scenario_file is not None and kind != "scenario":
        raise BadInput(f"--scenario: only a scenario world takes a scenario file; this one is {kind!r}")
    try:
        if kind == "explore":
            second = spec.get("second", "background")
            if second not in ("background", "edit"):
                raise BadInput(f"world.second: expected 'background' or 'edit', got {second!r}")
            try:
                return worlds.build(spec.get("name", "default"), variant, second)
            except worlds.UnknownWorld as err:
                raise BadInput(f"world.name: {err}") from None
        if kind == "explore-scenario":
            from toolcall_sim.world import explore_scenario

            if not isinstance(spec.get("scenario"), dict):
                raise BadInput("world.scenario: an explored scenario's world embeds its scenario (an object)")
            faults = spec.get("faults", "anywhere")
            return explore_scenario.build(from_dict(spec["scenario"], "world.scenario"), variant, faults).config
        if kind == "scenario":
            if scenario_file is not None:
                scenario = load(scenario_file)
            elif isinstance(spec.get("scenario"), dict):
                scenario = from_dict(spec["scenario"], "world.scenario")
            elif isinstance(spec.get("sha256"), str):
                scenario = find_scenario(spec.get("name"), spec["sha256"], base)
            elif isinstance(spec.get("path"), str):
                path = Path(spec["path"])
                if not path.is_absolute() and base is not None and (base / path).exists():
                    path = base / path
                scenario = load(path)
            else:
                raise BadInput("world: a scenario world needs 'scenario', 'sha256' or 'path'")
            config, _ = build(scenario, variant)
            return config
    except ScenarioError as err:
        raise BadInput(str(err)) from None
    except (planted_bugs.UnknownVariant, ValueError, TypeError) as err:
        raise BadInput(f"world: {err}") from None
    raise BadInput(f"world.kind: unknown world kind {kind!r} (known: explore, explore-scenario, scenario)")


def scenario_dirs(base: Path | None = None) -> list[Path]:
    """Where a scenario named by content is looked for, in order: the counterexample's or
    trace's own folder, the current folder and its ``scenarios/``, and the scenarios
    shipped with the package."""
    import toolcall_sim.scenarios as shipped

    dirs = [base] if base is not None else []
    dirs += [Path("."), Path("scenarios"), Path(shipped.__file__).resolve().parent]
    out: list[Path] = []
    for d in dirs:
        if d.is_dir() and all(d.resolve() != o.resolve() for o in out):
            out.append(d)
    return out


def find_scenario(name, digest: str, base: Path | None = None):
    """The scenario whose name and content digest (``toolcall_sim.world.run.scenario_digest``) match,
    from ``scenario_dirs``; BadInput naming where it looked when there is none."""
    from toolcall_sim.world.run import scenario_digest
    from toolcall_sim.world.scenario import ScenarioError, load

    dirs = scenario_dirs(base)
    for d in dirs:
        for path in sorted(d.glob("*.toml")):
            try:
                scenario = load(path)
            except ScenarioError:
                continue
            if scenario.name == name and scenario_digest(scenario) == digest:
                return scenario
    looked = ", ".join(str(d) for d in dirs)
    raise BadInput(f"no scenario {name!r} with sha256 {digest[:12]}... in {looked}; "
                   "pass the scenario file with --scenario FILE")


def document(world: dict, prop: str, residual_risk, actions, trace_hash: str, driver: str, detail: str = "") -> str:
    """A counterexample file's text (``save`` writes it; ``write_pair`` writes it with its
    scenario)."""
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
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def save(path: str | Path, world: dict, prop: str, residual_risk, actions, trace_hash: str, driver: str,
         detail: str = "") -> None:
    write_atomic(path, document(world, prop, residual_risk, actions, trace_hash, driver, detail))


def explore_world(name: str, variant: str, bounds, second: str = "background") -> dict:
    """The world spec of an explorer world, as counterexample files record it."""
    return {"kind": "explore", "name": name, "variant": variant, "second": second,
            "bounds": {k: getattr(bounds, k) for k in bounds.__dataclass_fields__}}


def actions_document(world: dict, prop: str, residual_risk, actions, driver: str, detail: str = "") -> str:
    """A counterexample of any driver with the hash of the trace its actions replay to in
    ``world`` (as ``replay`` will compute it), as the file's text."""
    trace, _ = explore_trace(world_of(world), actions)
    return document(world, prop, residual_risk, actions, trace_sha256(trace), driver, detail)


def save_actions(path: str | Path, world: dict, prop: str, residual_risk, actions, driver: str,
                 detail: str = "") -> Path:
    """``actions_document`` written to ``path``."""
    return write_atomic(path, actions_document(world, prop, residual_risk, actions, driver, detail))


def write_pair(toml_path: Path, scenario_text: str, variant: str, prop: str, driver: str, detail: str = "") -> tuple[Path, Path]:
    """A simpy run's failure (a swarm or story world) as its two files, together or not at
    all (sim/io/output.py Rule 1): the scenario ``scenario_text`` at ``toml_path`` and, next
    to it as ``.json``, the counterexample of its run under ``variant``: the actions the
    run recorded in its trace, with the scenario itself embedded (no path: the file
    replays from any folder). The scenario is run from the text, not read back from the
    file, so nothing is on disk until both are ready."""
    import tomllib

    from toolcall_sim.io.output import write_together
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict

    toml_path = Path(toml_path)
    scenario = tomllib.loads(scenario_text)
    result = run_scenario(from_dict(scenario, str(toml_path)), variant)
    world = {"kind": "scenario", "scenario": scenario, "variant": variant}
    actions = _actions([r for r in result.world.trace if r.get("kind") == "action"])
    json_path = toml_path.with_suffix(".json")
    write_together({toml_path: scenario_text,
                    json_path: actions_document(world, prop, None, actions, driver, detail)})
    return toml_path, json_path


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

    @property
    def outcome(self) -> str:
        """``reproduced`` (exit 1), ``not_reproduced`` (every action applied and the
        violation is gone: exit 0) or ``does_not_fit`` (an action stopped applying, so
        the replay says nothing about the violation: exit 3)."""
        if self.mismatch is not None:
            return "does_not_fit"
        return "reproduced" if self.reproduced else "not_reproduced"


def _actions(records) -> list:
    """Labelled actions from JSON values, each checked: one bad entry is bad input
    naming its index, never a traceback."""
    if not isinstance(records, list):
        raise BadInput(f"actions: expected a list, got {type(records).__name__}")
    out = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise BadInput(f"actions[{i}]: expected an object, got {type(rec).__name__}")
        data = {k: v for k, v in rec.items() if k not in ("label", "t_ms") and not (k == "kind" and v == "action")}
        if "at_ms" not in data and "t_ms" in rec:
            data["at_ms"] = rec["t_ms"]
        at_ms = data.get("at_ms")
        if isinstance(at_ms, bool) or not isinstance(at_ms, int) or at_ms < 0:
            raise BadInput(f"actions[{i}].at_ms: expected a whole number of ms >= 0, got {at_ms!r}")
        if data.get("action") not in msys.ACTION_TYPES:
            raise BadInput(f"actions[{i}].action: expected one of {', '.join(msys.ACTION_TYPES)}, "
                           f"got {data.get('action')!r}")
        try:
            action = msys.action_from_json(data)
            label = action.label()
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise BadInput(f"actions[{i}]: not an action ({type(err).__name__}: {err})") from None
        if "label" in rec and rec["label"] != label:
            # Every writer labels an action from its fields: a label that says otherwise
            # was edited by hand, and which of the two is meant cannot be told.
            raise BadInput(f"actions[{i}]: its label {rec['label']!r} is not its fields' {label!r}: edited by hand?")
        out.append(action)
    return out


def load_any(path: str | Path) -> tuple[dict, list, dict]:
    """(world spec, actions, expectations) from a counterexample or a recorded trace."""
    p = Path(path)
    try:  # only a regular file, at most MAX_INPUT_BYTES (sim/io/input_file.py: nothing hangs)
        raw = input_file.read_capped(p, repr(str(path)) if "\0" in str(path) else str(p), MAX_INPUT_BYTES,
                                     "a counterexample or a trace")
    except input_file.InputFileError as err:
        raise BadInput(str(err)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"{p}: not UTF-8 text (byte {err.start}): neither a counterexample nor a trace") from None
    try:
        doc = json_input.loads(text)
    except json_input.NotJSON:
        doc = None  # JSON lines: a recorded trace
    except json_input.JSONRefused as err:
        raise BadInput(f"{p}: {err}") from None
    if isinstance(doc, dict) and doc.get("kind") != "header" and "format" in doc:
        if doc.get("format") != FORMAT:
            raise BadInput(f"{p}: format: expected {FORMAT!r}, got {doc.get('format')!r}")
        if not isinstance(doc.get("world"), dict):
            raise BadInput(f"{p}: world: expected an object, got {type(doc.get('world')).__name__}")
        for key in ("property", "residual_risk", "trace_sha256"):
            if doc.get(key) is not None and not isinstance(doc[key], str):
                raise BadInput(f"{p}: {key}: expected a string, got {doc[key]!r}")
        actions = _actions(doc.get("actions", []))
        steps = doc.get("steps", len(actions))
        if isinstance(steps, bool) or not isinstance(steps, int) or steps != len(actions):
            raise BadInput(f"{p}: steps: the file says {steps!r} but holds {len(actions)} action(s): "
                           "edited by hand?")
        return doc["world"], actions, doc
    if doc is not None and not isinstance(doc, dict):
        raise BadInput(f"{p}: a JSON {type(doc).__name__}: neither a counterexample nor a trace")
    # A recorded trace: JSON lines with a header naming the scenario.
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json_input.loads(line)
        except json_input.NotJSON:
            raise BadInput(f"{p}:{n}: not a JSON line") from None
        except json_input.JSONRefused as err:
            raise BadInput(f"{p}:{n}: {err}") from None
        if not isinstance(rec, dict):
            raise BadInput(f"{p}:{n}: a trace record must be an object, got {type(rec).__name__}")
        records.append(rec)
    header = next((r for r in records if r.get("kind") == "header"), None)
    if header is None:
        raise BadInput(f"{p}: neither a counterexample nor a trace with a header record")
    world = {"kind": "scenario", "variant": header.get("variant")}
    if "scenario_sha256" in header:
        world.update(name=header.get("scenario"), sha256=header["scenario_sha256"])
    else:  # traces written before scenarios were named by content
        world["path"] = header.get("scenario_path")
    acts = [r for r in records if r.get("kind") == "action"]
    return world, _actions(acts), {"trace_sha256": trace_sha256(records), "property": None, "header": header,
                                   "records": records}


def replay(path: str | Path, scenario_file: str | None = None) -> Replayed:
    """Replay a counterexample or trace file; ``scenario_file`` names the scenario of a
    scenario world when it is not found by content (``find_scenario``)."""
    world, actions, doc = load_any(path)
    config = world_of(world, Path(path).parent, scenario_file)
    result = replay_actions(config, actions, doc.get("header"))
    wanted = doc.get("property")
    # The explorer judges eventually-properties only in the terminal state a path ends in,
    # so only a counterexample of one is judged by them.
    eventually = {p.name for p in props.PROPERTIES if p.kind == "eventually"}
    explored = world.get("kind") in ("explore", "explore-scenario")
    kinds = ("always",) if explored and wanted not in eventually else ("always", "eventually")
    report = props.evaluate(result.trace, result.final, kinds)
    risk = doc.get("residual_risk")
    hits = [v for v in report.violations if wanted is None or (v.property == wanted and v.residual_risk == risk)]
    mismatch = result.mismatch
    if mismatch is None and not hits and "records" in doc:
        mismatch = _parting(doc["records"], result.trace)
    return Replayed(
        reproduced=bool(hits) and mismatch is None,
        property=hits[0].property if hits else wanted,
        residual_risk=hits[0].residual_risk if hits else risk,
        trace_sha256=trace_sha256(result.trace),
        expected_sha256=doc.get("trace_sha256"),
        applied=result.applied,
        steps=len(actions),
        mismatch=mismatch,
        violations=report.violations,
    )


def _parting(recorded: list[dict], replayed: list[dict]) -> str | None:
    """Where a recorded trace and its replay part (None: record for record the same).
    A trace holds every record its actions gave, so a replay that rebuilds other records
    and shows no violation has not rebuilt that run: the file was edited or the code
    changed, and "not reproduced" would pass either as fixed (this module's docstring)."""
    ours, theirs = trace_lines(recorded), trace_lines(replayed)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return f"record {i + 1} of the trace (the replay rebuilds another record: the file was edited or the code changed)"
    if len(ours) != len(theirs):
        return (f"record {min(len(ours), len(theirs)) + 1} of the trace (the file holds {len(ours)} records, "
                f"the replay rebuilds {len(theirs)}: the file was edited or the code changed)")
    return None


def explore_trace(config: msys.WorldConfig, actions) -> tuple[list[dict], msys.System]:
    """The full trace of a counterexample's actions (as ``replay`` computes it, with no
    header record)."""
    result = replay_actions(config, actions)
    return result.trace, result.final
