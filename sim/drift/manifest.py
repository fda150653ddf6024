"""The drift manifest (docs/drift-manifest.toml): which Go code each rule of docs/contract.md
follows, and digests of that code at the coder/coder commit it was last verified against.

Theory of operation
-------------------
The manifest is data, facts about the Go code: names, digests, commits; never Go source.

Rule 1. ``[rules."ID"]``: one table per heading of docs/contract.md (``### A4.2 The stop
        rule`` is ``A4.2``), in the contract's order, each exactly one of
        ``follows = ["FILE:SYMBOL", ...]`` (the Go declarations the rule follows, named as
        sim/drift/goparse.py names them), ``none = "why"`` (the rule follows no Go code:
        design text, a list of Go tests, an overview) or ``unmapped = "why"`` (the rule
        follows Go code the contract names only by package or behaviour; no declaration
        is cited yet, so drift cannot watch it: a gap, listed on every run). A rule may
        add ``note``. tests/test_drift.py checks every heading has an entry and every
        entry names a heading.
Rule 2. ``[symbols."FILE:SYMBOL"]``: ``kind`` and ``digest`` (goparse.py Rule 2). An empty
        digest is *unverified*: the declaration was not in the tree the manifest was last
        built from (a file left out of a partial tree); drift lists it and never counts it
        as a change.
Rule 3. ``[files."FILE"]``: the ``commit`` the file was last verified at (empty: unknown,
        with a ``note`` saying why), and ``items``, what the file held then
        (goparse.py Rule 4), from which drift tells a new item from an old one. A
        package in ``[manifest] complete_packages`` was inventoried whole, so a file of it
        the manifest does not list is new; for any other package such a file is only
        counted as not inventoried.
Rule 4. ``[manifest]``: ``packages``, the modelled packages (sim/drift/checkout.py
        ``PACKAGES``; a manifest of another set is refused, not read as if it were of this
        one), and ``complete_packages``, those of them inventoried whole (Rule 3).
Rule 5. The file is written sorted and stable (``dump``): rules in the contract's order,
        symbols and files by name, items sorted; loading then dumping gives the same
        bytes. Anything malformed is bad input (``ManifestError``, exit 2).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from toolcall_sim.world.inputs import BadFlag

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_MANIFEST = REPO / "docs" / "drift-manifest.toml"
CONTRACT = REPO / "docs" / "contract.md"
HEADING = re.compile(r"^### (\S+) ", re.M)
ENTRY_KINDS = ("follows", "none", "unmapped")

HEADER = """\
# The drift manifest (issue 38): for every rule of docs/contract.md, the Go declarations of
# coder/coder it follows, and a digest of each at the commit it was last verified against.
# Data only: names, digests (SHA-256 of the declaration's tokens without comments and
# whitespace, sim/drift/goparse.py) and commits; no Go source. Read and written by
# `toolcall-sim drift` (sim/drift/manifest.py says what each table means); after the rules
# were re-verified against a checkout: `toolcall-sim drift --update --coder PATH`.
"""


class ManifestError(BadFlag):
    """A manifest that cannot be read as one (bad input, exit 2)."""


@dataclass
class Manifest:
    packages: list[str]
    complete_packages: list[str]
    rules: dict[str, dict]  # id -> {"follows": [...]} | {"none": why} | {"unmapped": why}, + "note"
    symbols: dict[str, dict]  # "FILE:SYMBOL" -> {"kind", "digest"}
    files: dict[str, dict] = field(default_factory=dict)  # FILE -> {"commit", "items", "note"?}

    def cited(self) -> list[str]:
        """Every symbol a rule follows, each once, in the manifest's order."""
        seen: dict[str, None] = {}
        for entry in self.rules.values():
            for key in entry.get("follows", ()):
                seen.setdefault(key, None)
        return list(seen)


def split_key(key: str) -> tuple[str, str]:
    path, _, name = key.partition(":")
    return path, name


def contract_headings(path: Path = CONTRACT) -> list[str]:
    """The rule IDs of docs/contract.md, in order (Rule 1)."""
    return HEADING.findall(path.read_text(encoding="utf-8"))


def contract_sections(path: Path = CONTRACT) -> dict[str, str]:
    """rule ID -> the text of its section (heading to the next heading)."""
    text = path.read_text(encoding="utf-8")
    marks = [(m.group(1), m.start()) for m in HEADING.finditer(text)]
    return {rule: text[start:(marks[i + 1][1] if i + 1 < len(marks) else len(text))]
            for i, (rule, start) in enumerate(marks)}


def load(path: str | Path) -> Manifest:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as err:
        raise ManifestError(f"--manifest {path}: cannot read it: {err.strerror or err}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ManifestError(f"--manifest {path}: not TOML: {err}") from None
    unknown = set(data) - {"manifest", "rules", "symbols", "files"}
    if unknown:
        raise ManifestError(f"--manifest {path}: unknown table(s) {', '.join(sorted(unknown))}")
    head = _head(data.get("manifest", {}), str(path))
    m = Manifest(packages=list(head.get("packages", [])), complete_packages=list(head.get("complete_packages", [])),
                 rules=dict(data.get("rules", {})), symbols=dict(data.get("symbols", {})),
                 files=dict(data.get("files", {})))
    _check(m, str(path))
    return m


def _head(head, where: str) -> dict:
    """Rule 4: ``[manifest]`` names this version's modelled packages and a few of them."""
    from toolcall_sim.drift.checkout import PACKAGES

    if not isinstance(head, dict) or set(head) - {"packages", "complete_packages"}:
        raise ManifestError(f"{where}: [manifest]: packages and complete_packages only")
    if head.get("packages", list(PACKAGES)) != list(PACKAGES):
        raise ManifestError(f"{where}: [manifest] packages: this version models {', '.join(PACKAGES)}, "
                            "not the packages the manifest names")
    complete = head.get("complete_packages", [])
    if not isinstance(complete, list) or any(p not in PACKAGES for p in complete):
        raise ManifestError(f"{where}: [manifest] complete_packages: a list of the modelled packages")
    return head


def _check(m: Manifest, where: str) -> None:
    for rule, entry in m.rules.items():
        kinds = [k for k in ENTRY_KINDS if k in entry]
        extra = set(entry) - set(ENTRY_KINDS) - {"note"}
        if len(kinds) != 1 or extra:
            raise ManifestError(f"{where}: rule {rule}: exactly one of follows, none, unmapped (and an optional note)")
        if kinds[0] == "follows":
            if not entry["follows"] or not all(isinstance(k, str) and ":" in k for k in entry["follows"]):
                raise ManifestError(f"{where}: rule {rule}: follows must list \"FILE:SYMBOL\" names")
            missing = [k for k in entry["follows"] if k not in m.symbols]
            if missing:
                raise ManifestError(f"{where}: rule {rule} follows {missing[0]}, which [symbols] does not list")
        elif not isinstance(entry[kinds[0]], str) or not entry[kinds[0]].strip():
            raise ManifestError(f"{where}: rule {rule}: {kinds[0]} needs its reason")
    unused = sorted(set(m.symbols) - set(m.cited()))
    if unused:
        raise ManifestError(f"{where}: symbol {unused[0]} is followed by no rule")
    for key, sym in m.symbols.items():
        if set(sym) - {"kind", "digest"} or not isinstance(sym.get("digest", None), str):
            raise ManifestError(f"{where}: symbol {key}: kind and digest only")
        if split_key(key)[0] not in m.files:
            raise ManifestError(f"{where}: symbol {key}: its file has no [files] entry (its commit)")
    for path, f in m.files.items():
        if set(f) - {"commit", "items", "note"} or not isinstance(f.get("commit", None), str):
            raise ManifestError(f"{where}: file {path}: commit, items and an optional note only")


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's


def _array(values: list[str], indent: str = "") -> str:
    if not values:
        return "[]"
    return "[\n" + "".join(f"{indent}    {_s(v)},\n" for v in values) + f"{indent}]"


def dump(m: Manifest, order: list[str] | None = None) -> str:
    """Rule 5: the manifest as its file's text (rules in ``order``, else as they are)."""
    rules = sorted(m.rules, key=lambda r: (order.index(r) if r in order else len(order), r)) if order else list(m.rules)
    out = [HEADER, "[manifest]", f"packages = {_array(m.packages)}",
           f"complete_packages = {_array(sorted(m.complete_packages))}", ""]
    for rule in rules:
        entry = m.rules[rule]
        out.append(f"[rules.{_s(rule)}]")
        for kind in ENTRY_KINDS:
            if kind == "follows" and kind in entry:
                out.append(f"follows = {_array(list(entry['follows']))}")
            elif kind in entry:
                out.append(f"{kind} = {_s(entry[kind])}")
        if "note" in entry:
            out.append(f"note = {_s(entry['note'])}")
        out.append("")
    for key in sorted(m.symbols):
        sym = m.symbols[key]
        out += [f"[symbols.{_s(key)}]", f"kind = {_s(sym['kind'])}", f"digest = {_s(sym['digest'])}", ""]
    for path in sorted(m.files):
        f = m.files[path]
        out += [f"[files.{_s(path)}]", f"commit = {_s(f['commit'])}"]
        if f.get("note"):
            out.append(f"note = {_s(f['note'])}")
        out += [f"items = {_array(sorted(f.get('items', [])))}", ""]
    return "\n".join(out).rstrip("\n") + "\n"
