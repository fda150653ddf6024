"""The equivalent mutants of the mutation run (sim/ci/mutation.py): what
``docs/mutation_equivalents.toml`` argues, and which of a module's mutants each entry names.

Theory of operation
-------------------
An entry names one cosmic-ray mutant by its operator, the stripped text of its line and
its rank among that operator's mutants on lines of that text (``Key``), so lines added
above it leave it in place; a class (``[[equivalent_class]]``) is argued once and found
in the module's syntax tree (``class_spans``). Binary operator replacements other than
the operator's sibling are deselected here too (``deselected``). The sessions' side
(sim/ci/mutation.py) marks what these name as skipped and counts it equivalent.
"""

from __future__ import annotations

import ast
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

EQUIVALENTS = Path("docs/mutation_equivalents.toml")
@dataclass(frozen=True)
class Equivalent:
    module: str
    operator: str
    code: str  # the mutated line's text, stripped of indentation
    nth: int  # which of the operator's mutants on lines reading `code` (0 first); -1: a family, all of them
    line: int  # where the line was when the entry was argued: for the reader, matching ignores it
    why: str


# The classes of mutants the equivalents file may argue once (``[[equivalent_class]]``),
# each a test of the mutant's position in the module's syntax tree.
CLASSES = ("annotation", "cached_repr")


# Selective mutation of binary operators (Offutt et al., "An experimental determination
# of sufficient mutant operators", 1996): cosmic-ray replaces each binary operator by
# every other one (11 mutants per ``+``); a test that executes the line kills nearly all
# of them or none, so each operator keeps its sibling only (``+`` with ``-``, ``*`` with
# ``/``, ``|`` with ``&``, ...): a fifth of all mutants, with comparisons, booleans,
# numbers and the rest kept whole. The others are marked skipped and left out of the
# table's counts.
BINARY_SIBLING = {"Add": "Sub", "Sub": "Add", "Mul": "Div", "Div": "Mul", "FloorDiv": "Mul", "Mod": "FloorDiv",
                  "Pow": "Mul", "LShift": "RShift", "RShift": "LShift", "BitOr": "BitAnd", "BitAnd": "BitOr",
                  "BitXor": "BitOr"}


def deselected(operator: str) -> bool:
    """A binary operator replacement other than the operator's sibling (not run)."""
    name = operator.rsplit("/", 1)[-1]
    if not name.startswith("ReplaceBinaryOperator_"):
        return False
    _, src, dst = name.split("_", 2)
    return BINARY_SIBLING.get(src) != dst


def load_classes(path: Path = EQUIVALENTS) -> dict[str, str]:
    """The classes the file argues (name -> why); an unknown name or no argument fails."""
    if not path.exists():
        return {}
    out = {}
    for row in tomllib.loads(path.read_text()).get("equivalent_class", []):
        if row.get("name") not in CLASSES or not str(row.get("why", "")).strip():
            raise SystemExit(f"{path}: equivalent_class {row.get('name')!r} is not one of {', '.join(CLASSES)} "
                             "or has no argument (why)")
        out[row["name"]] = row["why"]
    return out


def annotation_spans(lines: list[str]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's annotations are ((line, col) from, to; lines from 1), if the
    module defers them (``from __future__ import annotations``); else none."""
    import ast

    tree = ast.parse("\n".join(lines) + "\n")
    deferred = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                   any(a.name == "annotations" for a in n.names) for n in tree.body)
    if not deferred:
        return []
    notes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            notes.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            notes.append(node.returns)
    return [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in notes]


def cached_repr_spans(lines: list[str]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where ``repr=False`` stands in the ``@dataclass(...)`` of a class that derives
    ``CachedRepr`` (model/core.py): the one value whose flip ``cached_repr`` argues."""
    import ast

    out = []
    for node in ast.walk(ast.parse("\n".join(lines) + "\n")):
        if not isinstance(node, ast.ClassDef) or not any(
                isinstance(b, ast.Name) and b.id == "CachedRepr" for b in node.bases):
            continue
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "dataclass":
                for kw in deco.keywords:
                    if kw.arg == "repr" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                        v = kw.value
                        out.append(((v.lineno, v.col_offset), (v.end_lineno, v.end_col_offset)))
    return out


def class_spans(lines: list[str], classes: dict[str, str]) -> dict[str, list]:
    """Each argued class's spans in the module's text."""
    finders = {"annotation": annotation_spans, "cached_repr": cached_repr_spans}
    return {name: finders[name](lines) for name in classes}


def member_of(spec, spans: dict[str, list]) -> str | None:
    """The argued class the mutant belongs to, if any (a ``cached_repr`` member is the
    flip of its ``False``, not another operator on that line)."""
    for name, found in spans.items():
        if name == "cached_repr" and not spec.operator_name.endswith("ReplaceFalseWithTrue"):
            continue
        if in_class(spec, found):
            return name
    return None


def in_class(spec, spans) -> bool:
    return any(start <= tuple(spec.start_pos) < end for start, end in spans)


def load_equivalents(path: Path = EQUIVALENTS) -> list[Equivalent]:
    if not path.exists():
        return []
    rows = tomllib.loads(path.read_text()).get("equivalent", [])
    out = []
    for row in rows:
        if not str(row.get("why", "")).strip():
            raise SystemExit(f"{path}: equivalent at {row.get('module')}:{row.get('line')} has no argument (why)")
        if "code" not in row or "nth" not in row:
            raise SystemExit(f"{path}: equivalent at {row.get('module')}:{row.get('line')} needs code and nth "
                             "(survivors.txt prints both)")
        out.append(Equivalent(row["module"], row["operator"], row["code"], int(row["nth"]), int(row.get("line", 0)),
                              row["why"]))
    return out


def source_lines(module: str) -> list[str]:
    """The committed text of the module: what the session's mutants were made from (a run
    refuses uncommitted target modules), and never a mutant that a running session has
    written into the file."""
    got = subprocess.run(["git", "show", f"HEAD:{module}"], capture_output=True, text=True)
    return (got.stdout if got.returncode == 0 else Path(module).read_text()).splitlines()


Key = tuple  # (operator, code, nth)


def mutant_keys(specs, lines: list[str]) -> dict:
    """Each mutation spec's ``(operator, code, nth)``: its line's stripped text and its
    rank among the operator's mutants on lines of that text, in file order. Lines added or
    removed elsewhere change neither (cosmic-ray's own ``occurrence`` counts across the
    module, so it shifts with any new ``==`` above)."""
    seen: dict = {}
    keys = {}
    for spec in sorted(specs, key=lambda s: (s.start_pos, s.operator_name, s.occurrence)):
        row = spec.start_pos[0] - 1
        code = lines[row].strip() if 0 <= row < len(lines) else ""
        nth = seen.get((spec.operator_name, code), 0)
        seen[(spec.operator_name, code)] = nth + 1
        keys[(spec.operator_name, spec.occurrence, spec.start_pos)] = (spec.operator_name, code, nth)
    return keys


def _key_of(keys: dict, spec) -> Key:
    return keys[(spec.operator_name, spec.occurrence, spec.start_pos)]


def _db_keys(db, module: str) -> dict:
    return mutant_keys([spec for item in db.work_items for spec in item.mutations], source_lines(module))


def _matches(key: Key, e: Equivalent) -> bool:
    """An entry names one mutant; ``operator = "core/X_*"`` with ``nth = -1`` names every
    operator of that family on lines reading ``code`` (e.g. each replacement of ``|`` in a
    type annotation), argued once."""
    operator, code, nth = key
    if code != e.code:
        return False
    if e.operator.endswith("*") and e.nth == -1:
        return operator.startswith(e.operator[:-1])
    return operator == e.operator and nth == e.nth
