"""The compiled model (setup.py, model/__init__.py): the same results as its source, and a
binary never runs in place of a source edited since it was built."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import model

ROOT = Path(__file__).resolve().parent.parent

# What a run of the model gives, printed as JSON: the incident's and a story's trace
# hashes, a swarm's seeds under a planted bug (their failures minimized), the default
# world's search (its first 8,000 states: every kind of step and memo is met long before)
# and a planted bug's first counterexample.
PROBE = r"""
import json, sys
import model
from sim import bench, swarm
from sim.run import run_scenario
from sim.scenario import load
from model import planted_bugs
out = {}
for name in ("codagt757_incident", "us02_interrupt_stops_foreground"):
    out[name] = run_scenario(load(f"scenarios/{name}.toml")).trace_sha256
out["swarm"] = [swarm.run_seed(s, "contract+no-age-margin") for s in range(1, 9)]
result, _ = bench._explore("default", 0, 8_000)
out["default"] = [result.states, result.transitions, result.depth, sorted(v.property for v in result.violations)]
prop = {b.name: b.caught_by for b in planted_bugs.PLANTED_BUGS}["run-before-record"]
result, _ = bench._explore("default", 1, bench.WHOLE_SPACE, stop_on=lambda f: f.property == prop,
                           variant="contract+run-before-record")
out["bug"] = [result.states, [[f.property, [a.label() for a in f.path]] for f in result.violations]]
out["compiled"] = sorted(m for m, how in model.LOADED.items() if how == "compiled")
json.dump(out, sys.stdout)
"""


def _run(code: str, env: dict, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, check=False)


def _compiled() -> list[str]:
    """The model's modules this process loaded compiled (``model.LOADED`` records each as
    it is imported)."""
    return sorted(m for m, how in model.LOADED.items() if how == "compiled")


@pytest.mark.slow
def test_the_source_gives_what_the_compiled_model_gives():
    """The probe run by this install (compiled, where it is) and from source
    (``TOOLCALL_SIM_PURE=1``): the same traces, swarm outcomes and searches."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    here = _run(PROBE, env)
    source = _run(PROBE, dict(env, TOOLCALL_SIM_PURE="1"))
    assert here.returncode == 0 and source.returncode == 0, here.stderr + source.stderr
    here_out, source_out = json.loads(here.stdout), json.loads(source.stdout)
    assert source_out.pop("compiled") == []
    compiled = here_out.pop("compiled")
    assert here_out == source_out
    # The probe covers both halves of the model: the explorer's and the world's modules.
    if compiled:
        assert {"model.explore_context", "model.system", "model.idle", "model.chatd.replica"} <= set(compiled)


def test_ci_installs_the_model_compiled():
    """CI installs with ``pip install -e .`` (.ci/run), which compiles every module of
    model/ (setup.py Rule 1): there each one is loaded compiled, so the build works."""
    if not os.environ.get("CI"):
        pytest.skip("only where CI installed the project (CI is set)")
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(model.__path__, "model."):
        importlib.import_module(info.name)
    recorded = json.loads((ROOT / "model" / "_native.json").read_text())
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "model").rglob("*.py")
               if p.name != "__init__.py"}
    assert set(recorded) == modules
    assert _compiled() == sorted(modules)


LOADED_PROBE = r"""
import importlib, json, sys
import model
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError as e:
        model.LOADED[name] = type(e).__name__
print(json.dumps({n: model.LOADED.get(n) for n in sys.argv[1:]}))
"""


def test_a_binary_runs_only_while_its_source_is_the_one_it_was_built_from(tmp_path):
    """A copy of the compiled package: a module whose source was edited since the build
    loads from source, the others compiled; ``TOOLCALL_SIM_PURE`` loads all from source;
    without the build's record nothing loads compiled; a binary whose source is gone is
    no module."""
    import model.core  # noqa: F401  (imported here, so that LOADED says how)
    import model.timing  # noqa: F401

    compiled = _compiled()
    if "model.core" not in compiled or "model.timing" not in compiled:
        pytest.skip("model/ is not compiled in this install (TOOLCALL_SIM_PURE, or built without a compiler)")
    copy = tmp_path / "model"
    shutil.copytree(ROOT / "model", copy, ignore=shutil.ignore_patterns("__pycache__"))
    edited = copy / "world_config.py"
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("TOOLCALL_SIM_PURE", None)

    def loaded(*names, **extra):
        proc = subprocess.run([sys.executable, "-c", LOADED_PROBE, *names], capture_output=True, text=True,
                              cwd=tmp_path, env=dict(env, **extra), check=False)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    names = ("model.core", "model.timing", "model.world_config")
    assert loaded(*names) == {"model.core": "compiled", "model.timing": "compiled", "model.world_config": "source"}
    assert loaded(*names, TOOLCALL_SIM_PURE="1") == dict.fromkeys(names, "source")
    (copy / "timing.py").unlink()
    assert loaded("model.timing") == {"model.timing": "ModuleNotFoundError"}
    (copy / "_native.json").unlink()
    assert loaded("model.core") == {"model.core": "source"}
