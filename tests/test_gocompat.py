"""The layering of the tool layer's split (issue 13): Go compatibility sits below every
layer, the loader reads durations without chatd's tool layer, and ``toolcall_sim.model.chattool`` is
the one way into the tool layer (every public name of its parts is re-exported)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import toolcall_sim.model.chattool as chattool
import toolcall_sim.model.gocompat as gocompat

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports, relative ones resolved to ``toolcall_sim.model.<...>``."""
    package = ".".join(("toolcall_sim",) + path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            out.add(".".join(base + ([node.module] if node.module else [])))
    return out


def test_gocompat_imports_only_the_standard_library_and_itself():
    files = sorted((ROOT / "model" / "gocompat").glob("*.py"))
    assert len(files) >= 3  # __init__, duration, encoding, decode: the walk is not vacuous
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            assert name.startswith("toolcall_sim.model.gocompat") or top in sys.stdlib_module_names or name == "__future__", (
                f"{path.name} imports {name}")


def test_the_loader_reads_durations_without_the_tool_layer():
    loader = ("scenario.py", "scenario_spec.py", "scenario_faults.py", "scenario_toml.py")
    imports = set().union(*(_imports(ROOT / "sim" / "world" / name) for name in loader))
    assert "toolcall_sim.model.gocompat.duration" in imports
    assert not any(name.startswith("toolcall_sim.model.chattool") for name in imports), imports


def test_chattool_reexports_every_public_name_of_its_parts():
    parts = [m.name for m in pkgutil.iter_modules(chattool.__path__)]
    assert {"args", "calls", "cancel", "classifier", "execute", "state"} <= set(parts)
    for part in parts:
        module = importlib.import_module(f"toolcall_sim.model.chattool.{part}")
        tree = ast.parse((Path(chattool.__path__[0]) / f"{part}.py").read_text())
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        defined |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
        for name in sorted(n for n in defined if not n.startswith("_")):
            assert getattr(chattool, name, None) is getattr(module, name), f"toolcall_sim.model.chattool.{name} ({part}.py)"


def test_durations_and_go_json_keep_their_old_import_paths():
    from toolcall_sim.model.gocompat import decode, duration, encoding

    assert chattool.parse_duration_ms is duration.parse_duration_ms
    assert chattool.DurationError is duration.DurationError
    assert chattool.go_json is encoding.go_json
    assert gocompat.__doc__ and "Theory of operation" in gocompat.__doc__
