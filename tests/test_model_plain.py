"""The model's protocol modules read like the Go code they model (issue 33).

model/agent/, model/chatd/, model/chattool/, model/chatd_db.py, model/identity.py and
model/properties/ are what an engineer holds against the Go code, so they keep no
speed-only constructs: no instance dict filled by hand (``__dict__``), no
``object.__setattr__`` past a frozen guard, no ``object.__new__`` without ``__init__``, no
``__init__`` written out in a frozen dataclass, no comment counting instructions. Such
tricks, where they pay, live in the machinery behind the plain dataclasses (model/core.py,
model/system.py, model/builder.py, the explorer's modules, model/idle.py,
model/interning.py), each with a comment saying what it buys (docs/performance.md,
"The model reads like the code").
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

MODEL = Path(__file__).resolve().parent.parent / "model"
PROTOCOL = ("agent", "chatd", "chattool", "chatd_db.py", "identity.py", "properties")

# A comment that measures code by the machine's work rather than saying what it models.
_SPEED_COMMENT = re.compile(r"\binstructions?\b|callgrind|cachegrind|perf stat", re.IGNORECASE)


def protocol_files() -> list[Path]:
    files: list[Path] = []
    for name in PROTOCOL:
        path = MODEL / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def _is_frozen_dataclass(cls: ast.ClassDef) -> bool:
    for dec in cls.decorator_list:
        if isinstance(dec, ast.Call) and getattr(dec.func, "id", getattr(dec.func, "attr", None)) == "dataclass":
            if any(kw.arg == "frozen" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                   for kw in dec.keywords):
                return True
    return False


def speed_constructs(source: str, name: str = "<source>") -> list[str]:
    """Each speed-only construct of ``source``, as ``name:line: what``."""
    found: list[str] = []
    tree = ast.parse(source, name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr == "__dict__":
                found.append(f"{name}:{node.lineno}: reads or fills an instance's __dict__")
            elif node.attr in ("__setattr__", "__new__") and isinstance(node.value, ast.Name) \
                    and node.value.id == "object":
                found.append(f"{name}:{node.lineno}: object.{node.attr}")
        elif isinstance(node, ast.ClassDef) and _is_frozen_dataclass(node):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    found.append(f"{name}:{item.lineno}: __init__ written out in the frozen dataclass {node.name}")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and _SPEED_COMMENT.search(tok.string):
            found.append(f"{name}:{tok.start[0]}: comment counting the machine's work: {tok.string.strip()}")
    for node in ast.walk(tree):  # docstrings too
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and _SPEED_COMMENT.search(doc):
                found.append(f"{name}:{getattr(node, 'lineno', 1)}: docstring counting the machine's work")
    return found


def test_the_protocol_modules_have_no_speed_only_constructs():
    files = protocol_files()
    assert len(files) > 30  # the scan sees the packages, not an empty glob
    found = [hit for path in files for hit in speed_constructs(path.read_text(), str(path.relative_to(MODEL.parent)))]
    assert not found, "speed-only constructs in the model's protocol modules:\n" + "\n".join(found)


def test_the_scan_can_fail():
    """Each construct the scan forbids, planted in a source string, is found."""
    planted = '''
from dataclasses import dataclass


@dataclass(frozen=True, repr=False)
class Record:
    a: int
    b: int = 0

    def __init__(self, a, b=0):
        d = self.__dict__  # filling the dict is some 4,000 instructions (callgrind)
        d["a"], d["b"] = a, b


def copy(rec, **changes):
    new = object.__new__(Record)
    object.__setattr__(new, "__dict__", {**rec.__dict__, **changes})
    return new
'''
    found = speed_constructs(planted)
    assert any("__init__ written out in the frozen dataclass Record" in hit for hit in found)
    assert any("object.__new__" in hit for hit in found)
    assert any("object.__setattr__" in hit for hit in found)
    assert sum("__dict__" in hit for hit in found) == 2  # self.__dict__ and rec.__dict__
    assert any("callgrind" in hit for hit in found)
    # The plain form of the same class passes.
    plain = '''
from dataclasses import dataclass, replace


@dataclass(frozen=True, repr=False)
class Record:
    a: int
    b: int = 0


def copy(rec, **changes):
    return replace(rec, **changes)
'''
    assert speed_constructs(plain) == []
