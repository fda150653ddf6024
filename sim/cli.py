"""toolcall-sim: deterministic simulation and model checking of the CODAGT-757 tool call
contract between chatd and the workspace agent."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from . import demo
from .scenario import ScenarioError, load, parse_duration

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit status 2, like bad scenario input
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="toolcall-sim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("demo", help="replay a task retry and an agent restart against the agent model")
    run = sub.add_parser("run", help="run a scenario file")
    run.add_argument("scenario")
    run.add_argument("--variant")
    run.add_argument("--seed", type=int)
    run.add_argument("--until")
    run.add_argument("--json", action="store_true")
    run.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines")
    run.add_argument("--check-determinism", action="store_true",
                     help="run twice in separate processes and compare the traces")
    sub.add_parser("list", help="list scenarios, variants, fault kinds and properties")
    sub.add_parser("incident", help="replay the CODAGT-757 incident under today and under the contract")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return demo.main(sys.stdout)
        if args.command == "list":
            return _list(sys.stdout)
        if args.command == "incident":
            return _incident(sys.stdout)
        if args.command == "run":
            return _run(args, sys.stdout)
    except ScenarioError as err:
        print(f"toolcall-sim: {err}", file=sys.stderr)
        return 2
    return 2


def _resolve(path: str) -> str:
    p = Path(path)
    if not p.exists() and (SCENARIO_DIR / path).exists():
        return str(SCENARIO_DIR / path)
    if not p.exists() and (SCENARIO_DIR / f"{path}.toml").exists():
        return str(SCENARIO_DIR / f"{path}.toml")
    return path


def _run(args, out) -> int:
    from .report import story
    from .run import run_scenario

    scenario = load(_resolve(args.scenario))
    until_ms = parse_duration(args.until, "--until") if args.until else None
    if args.check_determinism:
        return _check_determinism(args, out)
    result = run_scenario(scenario, args.variant, args.seed, until_ms)
    if args.trace:
        Path(args.trace).write_bytes(result.trace_bytes)
    if args.json:
        out.write(json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
    else:
        out.write(story(result))
    return 1 if result.expectation_failures() else 0


def _check_determinism(args, out) -> int:
    """Run the same scenario and seed in two fresh processes with different hash seeds and
    name the first trace record where they part."""
    import tempfile

    traces = []
    with tempfile.TemporaryDirectory() as tmp:
        for hashseed in ("1", "2"):
            trace_path = Path(tmp) / f"trace-{hashseed}.jsonl"
            cmd = [sys.executable, "-m", "sim", "run", _resolve(args.scenario), "--trace", str(trace_path), "--json"]
            for flag in ("variant", "seed", "until"):
                value = getattr(args, flag)
                if value is not None:
                    cmd += [f"--{flag}", str(value)]
            env = dict(os.environ, PYTHONHASHSEED=hashseed)
            proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
            if proc.returncode == 2:
                out.write(proc.stderr.decode())
                return 2
            traces.append(trace_path.read_text().splitlines())
    a, b = traces
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            out.write(f"traces part at record {i}:\n  run 1: {x}\n  run 2: {y}\n")
            return 1
    if len(a) != len(b):
        out.write(f"traces part at record {min(len(a), len(b))}: one run has {len(a)} records, the other {len(b)}\n")
        return 1
    import hashlib

    digest = hashlib.sha256(("\n".join(a) + "\n").encode()).hexdigest()
    out.write(f"deterministic: {len(a)} records, identical in two processes (PYTHONHASHSEED=1, 2), sha256 {digest}\n")
    return 0


def _incident(out) -> int:
    """The README's main job: the incident under both variants, then past the timeout."""
    from .report import story
    from .run import run_scenario

    status = 0
    for name in ("codagt757_incident", "codagt757_incident_past_timeout"):
        scenario = load(_resolve(name))
        for variant in ("today", "contract"):
            result = run_scenario(scenario, variant)
            out.write(story(result) + "\n")
            status |= 1 if result.expectation_failures() else 0
    return status


def _list(out) -> int:
    from model import chatd, mutants
    from model import properties as props
    from model.system import FAULT_KINDS

    out.write("scenarios:\n")
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        try:
            sc = load(path)
            out.write(f"  {path.stem:32} {sc.summary}\n")
        except ScenarioError as err:
            out.write(f"  {path.stem:32} (invalid: {err})\n")
    out.write("variants:\n")
    for name in sorted(chatd.VARIANTS):
        out.write(f"  {name}\n")
    out.write("fault kinds:\n")
    out.write("  " + ", ".join(sorted(set(FAULT_KINDS) | {"lose", "delay"})) + "\n")
    out.write("properties:\n")
    for p in props.PROPERTIES:
        out.write(f"  {p.name:36} {p.kind:10} {p.story:14} {p.statement}\n")
    out.write("planted bugs (use as --variant contract+<bug>):\n")
    for m in mutants.MUTANTS:
        out.write(f"  {m.name:36} caught by {m.caught_by} in {m.scenario}\n      {m.summary}\n")
    out.write("residual risks (reported by name, not as new findings):\n")
    for name, text in props.RESIDUAL_RISKS.items():
        out.write(f"  {name:36} {text}\n")
    return 0
