"""``toolcall-sim drift --coder PATH``: which modelled rules the Go code of a coder/coder
checkout changed (issue 38).

Theory of operation
-------------------
Only the flags and the exit code live here: reading the checkout is sim/drift/checkout.py,
the judgement sim/drift/compare.py, the manifest sim/drift/manifest.py, the text and JSON
reports/drift.py. Every flag is checked before a Go file is parsed (bad input: one line,
exit 2): ``--coder`` must be a coder/coder checkout, ``--since`` a commit of it (so the
checkout must be a git work tree), ``--commit`` and ``--partial`` only with ``--update``,
and ``--since`` and ``--json`` never with it (it prints its one line). A Go file that does not parse is bad input with its file and
line. Exit code: 0 nothing changed, 1 a cited declaration changed, moved or is gone, or a
new item appeared, 2 bad input.

``--update`` rewrites the manifest after the rules were re-verified against the
checkout: every cited declaration's digest and place, every file's commit (``HEAD``, or
``--commit``) and items. A cited declaration no file declares is refused (exit 2): edit
the manifest to cite what replaced it first. ``--partial`` is for a tree holding only some
of the files (a sparse checkout): a cited declaration no file declares keeps what the
manifest had (an unverified one stays unverified), and no package is marked inventoried
whole.
"""

from __future__ import annotations

import re

from toolcall_sim.world.inputs import EXIT_OK, EXIT_VIOLATION, BadFlag

NAME = "drift"
HELP = "which rules of docs/contract.md the Go code of a coder/coder checkout changed (docs/drift-manifest.toml)"
_SHA = re.compile(r"^[0-9a-f]{40}$")


def add_arguments(parser) -> None:
    parser.add_argument("--coder", metavar="PATH", required=True, help="a coder/coder checkout (its go.mod folder)")
    parser.add_argument("--manifest", metavar="FILE", default=None,
                        help="the drift manifest (default: docs/drift-manifest.toml of this repository)")
    parser.add_argument("--since", metavar="COMMIT", default=None,
                        help="judge against the checkout at COMMIT instead of the manifest's digests (needs a git "
                             "work tree holding COMMIT)")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the manifest's digests, places, commits and items from the checkout (after "
                             "re-verifying the rules)")
    parser.add_argument("--commit", metavar="SHA", default=None,
                        help="with --update: the 40-hex commit to record (default: the checkout's HEAD; required "
                             "when the checkout is no git work tree)")
    parser.add_argument("--partial", action="store_true",
                        help="with --update: the tree holds only some files; a cited declaration no file declares "
                             "keeps what the manifest had")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def load_manifest(path: str | None):
    """(the manifest, its path): ``--manifest``'s file, else this repository's."""
    from toolcall_sim.drift import manifest

    if path is None and not manifest.DEFAULT_MANIFEST.is_file():
        raise BadFlag("drift: no docs/drift-manifest.toml beside this installation: give --manifest FILE")
    path = path if path is not None else str(manifest.DEFAULT_MANIFEST)
    return manifest.load(path), path


def run_drift(coder: str, manifest_path: str | None = None, since: str | None = None):
    """(result, checkout, manifest path): the comparison ``drift`` and ``check --coder`` print.
    Bad input (the checkout, the manifest, ``since``, a Go file) raises ``BadFlag``."""
    from toolcall_sim.drift.checkout import Checkout
    from toolcall_sim.drift.compare import compare
    from toolcall_sim.drift.goparse import GoParseError

    co = Checkout(coder)
    m, path = load_manifest(manifest_path)
    full = None
    if since is not None:
        if not co.git:
            raise BadFlag(f"--since: {coder} is not a git work tree, so it has no commits to compare with")
        full = co.resolve(since)
        if full is None:
            raise BadFlag(f"--since {since}: not a commit of {coder}")
    try:
        result = compare(m, co, full)
    except GoParseError as err:
        raise BadFlag(f"--coder {coder}: {err}") from None
    return result, co, path


def main(args, out) -> int:
    from toolcall_sim.reports.drift import drift_json, format_drift

    if args.commit is not None and not args.update:
        raise BadFlag("--commit: only with --update (it is the commit --update records)")
    if args.partial and not args.update:
        raise BadFlag("--partial: only with --update")
    if args.update:
        if args.since is not None:
            raise BadFlag("--since: not with --update (--update records the checkout as it is now)")
        if args.json:
            raise BadFlag("--json: not with --update (it writes the manifest and says so in one line)")
        return _update(args, out)
    result, co, path = run_drift(args.coder, args.manifest, args.since)
    out.write(drift_json(result) if args.json else format_drift(result, path, args.coder, co.head()))
    return EXIT_VIOLATION if result["changed"] else EXIT_OK


def _update(args, out) -> int:
    from toolcall_sim.drift import manifest as mf
    from toolcall_sim.drift.checkout import Checkout
    from toolcall_sim.drift.compare import update
    from toolcall_sim.drift.goparse import GoParseError
    from toolcall_sim.io.output import write_atomic
    from toolcall_sim.reports.drift import updated

    co = Checkout(args.coder)
    if args.commit is not None and not _SHA.match(args.commit):
        raise BadFlag(f"--commit {args.commit}: a commit is 40 lowercase hex digits")
    commit = args.commit or co.head()
    if commit is None:
        raise BadFlag(f"--update: {args.coder} is not a git work tree: give --commit SHA, the commit its files are")
    m, path = load_manifest(args.manifest)
    try:
        new, gone = update(m, co, commit, partial=args.partial)
    except GoParseError as err:
        raise BadFlag(f"--coder {args.coder}: {err}") from None
    if gone:
        raise BadFlag(f"--update: {len(gone)} cited declaration(s) are gone ({', '.join(gone[:3])}"
                      f"{' ...' if len(gone) > 3 else ''}): edit {path} to cite what replaced them, then --update")
    write_atomic(path, mf.dump(new, mf.contract_headings() if mf.CONTRACT.is_file() else None))
    out.write(updated(path, new, commit))
    return EXIT_OK
