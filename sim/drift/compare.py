"""``toolcall-sim drift``'s judgement: each rule's Go code now against the manifest (or
against an earlier commit), and the new things in the modelled packages.

Theory of operation
-------------------
Rule 1. Each cited symbol (``FILE:SYMBOL``) is one of: ``unchanged`` (same file, same
        digest), ``changed`` (its digest differs; where it now is, if in another file of
        its package), ``moved`` (same digest, another file of its package), ``gone`` (no
        file of its package declares it; when another declaration of the package is the
        same but for its name, that name is given as ``renamed_to``), or ``unverified`` (the manifest holds no digest
        for it: listed, never a change). A rule takes the worst of its symbols
        (gone > changed > moved > unverified > unchanged); a rule with ``none`` is
        ``no code``, one with ``unmapped`` is ``unmapped``.
Rule 2. Against the manifest (the default) the baseline is each symbol's digest and each
        file's inventory (sim/drift/manifest.py Rules 2-3). With ``--since COMMIT`` it is
        the checkout itself at COMMIT: each cited symbol as declared there (its file, or
        another of its package; one not declared there is unverified) and every item of
        the modelled packages there. So ``--since`` answers "which rules did the Go
        changes since COMMIT touch", whatever the manifest's digests say.
Rule 3. A changed symbol's unified diff is its source at the baseline commit (the file's
        verified commit, or ``--since``'s) against its source now, when the checkout is a
        git work tree holding that commit; otherwise the result says why there is none.
Rule 4. New items: an item (goparse.py Rule 4) of a modelled package that the baseline's
        inventory of that package does not hold and that no cited symbol names.
Rule 5. For every rule whose code changed, moved or is gone (``CHANGES``; not an
        unverified one), what covers it in this project, read from
        the repository (no run): the rule's probes (model/probes.py ``PROBES`` and a
        story's ``STORY_PROOFS``), the test files (but ``META_TESTS``, which name rules
        as data) and scenario files that cite the rule by ID or name one of its probes,
        and the Go tests the rule's section of
        docs/contract.md names. The coverage table of ``toolcall-sim coverage`` gives
        witnesses only after running every scenario; this is its static half.
Rule 6. Nothing here reads a clock, nor a path outside the checkout and this repository
        (Rule 5's files): the result is the same for the same checkout, manifest and
        repository (``--json`` is deterministic).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from toolcall_sim.drift.checkout import PACKAGES, Checkout, Snapshot, package_of
from toolcall_sim.drift.goparse import GoParseError, digest_of, parse
from toolcall_sim.drift.manifest import REPO, Manifest, contract_sections, split_key

ORDER = ("gone", "changed", "moved", "unverified", "unchanged")
CHANGES = ("gone", "changed", "moved")


def compare(m: Manifest, co: Checkout, since: str | None = None) -> dict:
    cited = m.cited()
    extra = tuple(sorted({split_key(k)[0] for k in cited}))
    now = co.snapshot(extra)
    old = co.snapshot(extra, commit=since) if since else None
    symbols = {key: _judge(key, m, now, old, co, since) for key in cited}
    rules = []
    for rule, entry in m.rules.items():
        row = {"rule": rule}
        if "none" in entry:
            row.update(status="no code", reason=entry["none"])
        elif "unmapped" in entry:
            row.update(status="unmapped", reason=entry["unmapped"])
        else:
            row["symbols"] = list(entry["follows"])
            row["status"] = min((symbols[k]["status"] for k in entry["follows"]), key=ORDER.index)
        rules.append(row)
    new, not_inventoried = _new_items(m, now, old)
    touched = [r["rule"] for r in rules if r["status"] in CHANGES]
    sections = contract_sections() if touched else {}
    for r in rules:
        if r["status"] in CHANGES:
            r["covered_by"] = covered_by(r["rule"], sections.get(r["rule"], ""))
    counts = {s: sum(1 for v in symbols.values() if v["status"] == s) for s in ORDER}
    rule_counts = {s: sum(1 for r in rules if r["status"] == s) for s in ORDER + ("no code", "unmapped")}
    return {"since": since, "symbols": symbols, "rules": rules, "new": new, "not_inventoried": not_inventoried,
            "counts": {"symbols": counts, "rules": rule_counts, "new": len(new)},
            "changed": bool(touched or new)}  # (a changed symbol's rule is touched: a rule is its worst)


def _baseline(key: str, m: Manifest, old: Snapshot | None) -> tuple[str, str, str] | None:
    """(file, digest, commit) the symbol is judged against (Rule 2), or None: unverified."""
    path, name = split_key(key)
    if old is None:
        digest = m.symbols[key]["digest"]
        return (path, digest, m.files[path]["commit"]) if digest else None
    f = old.locate(path, name)
    return (f.path, f.symbols[name].digest, "") if f is not None else None


def _judge(key: str, m: Manifest, now: Snapshot, old: Snapshot | None, co: Checkout, since: str | None) -> dict:
    path, name = split_key(key)
    found = now.locate(path, name)
    row: dict = {"symbol": key, "now": f"{found.path}:{found.symbols[name].line}" if found else None}
    base = _baseline(key, m, old)
    if base is None:
        row["status"] = "unverified"
        row["reason"] = (f"not declared at {since}" if since else
                         m.files[path].get("note") or "no digest: not verified against a checkout yet")
        return row
    base_path, digest, commit = base
    if found is None:
        row["status"] = "gone"
        renamed = _renamed(now, path, name, digest)
        if renamed:
            row["renamed_to"] = renamed
    elif found.symbols[name].digest == digest:
        row["status"] = "unchanged" if found.path == base_path else "moved"
    else:
        row["status"] = "changed"
        row.update(_diff(co, since or commit, base_path, name, found))
    if found is not None and found.path != base_path:
        row["from"] = base_path
    return row


def _renamed(now: Snapshot, path: str, name: str, digest: str) -> str | None:
    """A gone symbol's likely new name: a declaration of its package whose normalized text,
    with its own name put back to the old one, has the old digest (a rename and nothing
    else; Rule 1's hint, never a status of its own)."""
    short = name.rsplit(".", 1)[-1]
    receiver = name.rsplit(".", 1)[0] if "." in name else None
    for p, f in sorted(now.files.items()):
        if package_of(p) != package_of(path):
            continue
        for other, sym in sorted(f.symbols.items()):
            if other == name or (receiver is not None) != ("." in other):
                continue
            if receiver is not None and other.rsplit(".", 1)[0] != receiver:
                continue
            mine = other.rsplit(".", 1)[-1]
            back = " ".join(short if t == mine else t for t in sym.normalized.split(" "))
            if digest_of(back) == digest:
                return f"{p}:{other}"
    return None


def _diff(co: Checkout, commit: str, path: str, name: str, found) -> dict:
    """Rule 3: the unified diff of one changed symbol, or why there is none."""
    if not commit:
        return {"diff": None, "no_diff": f"{path} was verified at no known commit"}
    if not co.git:
        return {"diff": None, "no_diff": f"the checkout is no git work tree, so {commit[:12]} cannot be read"}
    source = co.show(commit, path) if co.resolve(commit) else None
    if source is None:
        return {"diff": None, "no_diff": f"{path} at {commit[:12]} is not in the checkout "
                                         f"(git fetch origin {commit} to see the diff)"}
    try:
        before = parse(path, source).symbols.get(name)
    except GoParseError:
        before = None
    if before is None:
        return {"diff": None, "no_diff": f"{path} at {commit[:12]} does not declare {name}"}
    after = found.symbols[name]
    lines = difflib.unified_diff(before.source.splitlines(), after.source.splitlines(),
                                 f"{path}@{commit[:12]}", found.path, lineterm="")
    return {"diff": "\n".join(lines)}


def _new_items(m: Manifest, now: Snapshot, old: Snapshot | None) -> tuple[list[dict], list[str]]:
    """Rule 4: items of the modelled packages the baseline did not hold and no rule cites."""
    cited = {(package_of(p), n) for p, n in map(split_key, m.cited())}
    if old is not None:
        known = {(package_of(p), i) for p, f in old.files.items() for i in f.items}
        watched = set(now.files)
        not_inventoried: list[str] = []
    else:
        known = {(package_of(p), i) for p, f in m.files.items() for i in f.get("items", ())}
        complete = set(m.complete_packages)
        watched = {p for p in now.files if p in m.files or _within(package_of(p), complete)}
        # (every file read but a modelled one is a cited one, and a cited file is in m.files)
        not_inventoried = sorted(p for p in now.files if p not in watched)
    new = []
    for path in sorted(watched):
        pkg = package_of(path)
        for item in sorted(now.files[path].items):
            name = item.rsplit(" ", 1)[-1]
            if (pkg, item) in known or (item.split(" ", 1)[0] != "route" and (pkg, name) in cited):
                continue
            new.append({"file": path, "item": item})
    return new, not_inventoried


def _within(pkg: str, packages) -> bool:
    """``pkg`` is one of ``packages`` or a subpackage of one."""
    return any(pkg == p or pkg.startswith(p + "/") for p in packages)


# -- Rule 5: what covers a rule --------------------------------------------------------

_GO_TEST = re.compile(r"\bTest[A-Z]\w*")
# Tests that name rules as data (citations, the probe table, drift's own fixtures), not
# tests of the rule's behaviour: listing them under every rule would say nothing.
META_TESTS = ("tests/test_docs.py", "tests/test_probes.py", "tests/test_drift.py")


def _cites(rule: str) -> re.Pattern:
    return re.compile(r"(?<![\w.-])" + re.escape(rule) + r"(?![\w-]|\.\d)")


def covered_by(rule: str, section: str, repo: Path = REPO) -> dict:
    """Rule 5, from the repository's files."""
    from toolcall_sim.model import probes

    own = probes.probed_rules().get(rule, []) + list(probes.STORY_PROOFS.get(rule, ()))
    cite = _cites(rule)
    wanted = [cite] + [re.compile(re.escape(f'"{p}"')) for p in own]

    def citing(folder: str, pattern: str) -> list[str]:
        found = []
        for f in sorted((repo / folder).glob(pattern)):
            if f.relative_to(repo).as_posix() in META_TESTS:
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            if any(w.search(text) for w in wanted):
                found.append(f.relative_to(repo).as_posix())
        return found

    return {"probes": own, "tests": citing("tests", "test_*.py"), "scenarios": citing("scenarios", "*.toml"),
            "go_tests": sorted(set(_GO_TEST.findall(section)))}


# -- --update ------------------------------------------------------------------------

def update(m: Manifest, co: Checkout, commit: str, partial: bool = False) -> tuple[Manifest, list[str]]:
    """The manifest re-verified against ``co`` (``drift --update``): every cited symbol's
    digest and file as they are now, every file's ``commit`` (the one the tree is) and
    items. A symbol no file declares is a refusal (returned as the list of them), unless
    ``partial`` (the tree holds only some files, or versions of them other than the one
    the rule follows): then it keeps what the manifest had."""
    cited = m.cited()
    now = co.snapshot(tuple(sorted({split_key(k)[0] for k in cited})))
    renamed: dict[str, str] = {}
    symbols: dict[str, dict] = {}
    gone = []
    for key in cited:
        path, name = split_key(key)
        found = now.locate(path, name)
        if found is not None:
            sym = found.symbols[name]
            new_key = f"{found.path}:{name}"
            renamed[key] = new_key
            symbols[new_key] = {"kind": sym.kind, "digest": sym.digest}
        elif partial:  # a file absent from the tree, or a version of it without the declaration
            symbols[key] = dict(m.symbols[key])
        else:
            gone.append(key)
    if gone:
        return m, gone
    rules = {r: ({**e, "follows": list(dict.fromkeys(renamed.get(k, k) for k in e["follows"]))} if "follows" in e
                 else dict(e)) for r, e in m.rules.items()}
    files: dict[str, dict] = {}
    for path, f in now.files.items():
        files[path] = {"commit": commit, "items": sorted(f.items)}
    for key in symbols:  # a partial tree's absent file keeps its entry (and its unverified symbols)
        path = split_key(key)[0]
        if path not in files:
            files[path] = dict(m.files[path])
        elif not symbols[key]["digest"] and m.files.get(path, {}).get("note"):
            files[path]["note"] = m.files[path]["note"]
    present = sorted({package_of(p) for p in now.files})
    complete = [] if partial else sorted(p for p in PACKAGES if any(_within(q, (p,)) for q in present))
    return Manifest(packages=list(PACKAGES), complete_packages=complete, rules=rules, symbols=symbols,
                    files=files), []
