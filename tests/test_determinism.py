"""Determinism: the same scenario and seed give a byte-identical trace in any process and
under any PYTHONHASHSEED, and the recorded actions replay the same trace with no simpy."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from toolcall_sim.world.replay import replay_actions, trace_lines
from toolcall_sim.world.run import build, run_scenario
from toolcall_sim.world.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
SMOKE = ROOT / "scenarios" / "smoke_retry.toml"


VARIANTS = ("today", "contract")
# One child per hash seed runs both variants through the command line's own code path
# (toolcall_sim.cli.main.main with --json), as `toolcall-sim run` would: a process start costs a
# second of imports, two per hash seed cost twice that.
_CHILD = (f"import sys\nfrom toolcall_sim.cli.main import main\n"
          f"for variant in {VARIANTS!r}:\n"
          f"    assert main(['run', {str(SMOKE)!r}, '--variant', variant, '--json']) in (0, 1)\n")


def _hashes_in_subprocess(hashseed: str) -> list[str]:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, env=env, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr.decode()
    decoder, text, hashes = json.JSONDecoder(), out.stdout.decode().strip(), []
    while text:  # one JSON document per variant, one after the other
        doc, end = decoder.raw_decode(text)
        hashes.append(doc["trace_sha256"])
        text = text[end:].strip()
    return hashes


@pytest.mark.slow
def test_same_seed_same_trace_across_processes_and_hash_seeds():
    """Two separate processes with different PYTHONHASHSEED produce the same trace hash,
    and so does this process."""
    here = [run_scenario(load(SMOKE), variant).trace_sha256 for variant in VARIANTS]
    assert here[0] != here[1]  # the variants tell two stories: two hashes to agree on
    assert _hashes_in_subprocess("0") == here
    assert _hashes_in_subprocess("4242") == here


def test_different_seed_changes_the_trace():
    """The seed matters: another seed draws other latencies (guards against a constant hash)."""
    sc = load(SMOKE)
    assert run_scenario(sc, "contract", seed=1).trace_sha256 != run_scenario(sc, "contract", seed=2).trace_sha256


def test_recorded_actions_replay_the_same_trace_without_simpy():
    """The world's action list, applied to the pure System, rebuilds the trace exactly."""
    sc = load(SMOKE)
    result = run_scenario(sc, "contract")
    config, _ = build(sc, "contract")
    rep = replay_actions(config, result.world.actions, header=result.world.trace[0])
    assert rep.mismatch is None
    assert trace_lines(rep.trace) == result.world.trace_lines()


def test_replay_names_the_step_that_no_longer_fits():
    """A replay of actions that do not fit stops at the first misfit and says why."""
    sc = load(SMOKE)
    result = run_scenario(sc, "contract")
    config, _ = build(sc, "contract")
    actions = list(result.world.actions)
    victim = next(i for i, a in enumerate(actions) if type(a).__name__ == "Deliver")
    actions.insert(victim + 1, actions[victim])  # the same message cannot arrive twice
    rep = replay_actions(config, actions)
    assert rep.mismatch is not None and rep.mismatch.startswith(f"step {victim + 2} (")
    assert "no message" in rep.mismatch


def test_check_determinism_command(capsys):
    """--check-determinism runs twice in separate processes and reports identical traces."""
    from toolcall_sim.cli.main import main

    assert main(["run", str(SMOKE), "--check-determinism"]) == 0
    assert "deterministic:" in capsys.readouterr().out
