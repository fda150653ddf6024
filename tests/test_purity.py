"""model/ is pure: no scheduler, clock, randomness, concurrency, network or file I/O, and
nothing that makes a run depend on object identity or hash seeds."""

from __future__ import annotations

import ast
import pathlib

import pytest

MODEL = pathlib.Path(__file__).resolve().parent.parent / "model"

FORBIDDEN_MODULES = {
    "simpy", "random", "time", "datetime", "threading", "asyncio", "socket", "subprocess",
    "multiprocessing", "secrets", "os", "io", "pathlib", "shutil", "tempfile",
    "rich",  # the progress bar is drawn by sim/io/progress.py; a driver in model/ only calls back
}
# Builtins that read the world or depend on the process: file and console I/O, object
# identity, and hash() (salted per process for str unless PYTHONHASHSEED is fixed).
FORBIDDEN_CALLS = {"open", "input", "print", "id", "hash", "exec", "eval", "__import__"}


def is_sim(name: str) -> bool:
    """A module of sim/ (the package's root, ``toolcall_sim``, less model/, reports/ and
    scenarios/): the world and its drivers, which the model never imports."""
    parts = name.split(".")
    return parts[0] == "toolcall_sim" and (len(parts) == 1 or parts[1] not in ("model", "reports", "scenarios"))


def violations(source: str, filename: str = "<module>") -> list[str]:
    """Every forbidden import or call in one module's source, as 'file:line what'."""
    found = []
    tree = ast.parse(source, filename)
    # hash() is allowed only to implement __hash__ (membership, never ordering).
    allowed = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "__hash__" for n in ast.walk(f)}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        for name in names:
            if name.split(".")[0] in FORBIDDEN_MODULES or is_sim(name):
                found.append(f"{filename}:{node.lineno} imports {name}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            if node.func.id == "hash" and id(node) in allowed:
                continue
            found.append(f"{filename}:{node.lineno} calls {node.func.id}()")
    return found


def model_modules() -> list[pathlib.Path]:
    return sorted(MODEL.rglob("*.py"))


def test_model_has_modules():
    """The purity walk sees the model's modules (it cannot pass vacuously)."""
    names = {p.relative_to(MODEL).as_posix() for p in model_modules()}
    assert {"core.py", "identity.py", "agent/__init__.py", "agent/store.py"} <= names


# The one exception: model/__init__.py looks, once at import, for compiled modules an older
# install left beside the sources (Python would run them instead). That is loading, before
# any state machine runs; these are all it may do.
LOADER = MODEL / "__init__.py"
LOADER_READS = {"imports os"}


@pytest.mark.parametrize("path", [p for p in model_modules() if p != LOADER], ids=lambda p: p.name)
def test_model_module_is_pure(path):
    """No module under model/ imports simpy, time, random, I/O or concurrency, or calls
    open/print/id/hash."""
    assert violations(path.read_text(), str(path.relative_to(MODEL.parent))) == []


def test_the_loader_only_reads_files():
    """model/__init__.py lists its folder (for leftover binaries) and does nothing
    else the walk forbids: no clock, randomness, printing or object identity."""
    found = {v.split(" ", 1)[1] for v in violations(LOADER.read_text(), "model/__init__.py")}
    assert found <= LOADER_READS, found


@pytest.mark.parametrize(
    "source",
    [
        "import random\n",
        "import time as t\n",
        "from datetime import datetime\n",
        "import simpy\n",
        "from toolcall_sim.world.simulation import Simulation\n",
        "import os.path\n",
        "def f():\n    import socket\n",
        "x = open('f').read()\n",
        "k = id(object())\n",
        "h = hash('x')\n",
    ],
)
def test_purity_check_catches_forbidden_code(source, tmp_path):
    """The checker fails on a temporary module with one forbidden import or call."""
    module = tmp_path / "bad.py"
    module.write_text(source)
    assert violations(module.read_text(), "bad.py")


def test_purity_check_allows_pure_code():
    """Relative imports and pure standard modules pass."""
    assert violations("from .core import FMap\nimport hashlib, json, uuid\n") == []
