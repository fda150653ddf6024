"""MkDocs hook of the documentation site (docs/mkdocs.yml ``hooks:``).

It adds three kinds of pages to the ones written in docs/pages/, all at build time:

- the documents that live in docs/ itself (contract.md, architecture.md with
  architecture.svg, interfaces.md, performance.md, check-page.png, sweeps/), at the same
  relative paths in the site, so their links to each other resolve unchanged and every
  ``docs/contract.md`` citation in the code still names a file that exists;
- scenarios/README.md (shipped in the package beside the scenario files) as
  reference/scenario-files.md;
- the reference generated from the code (toolcall_sim.cli.docs_reference), so it cannot
  go stale and is never committed.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

from toolcall_sim.cli import docs_reference

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# What of docs/ the site shows (docs/pages/ is the docs_dir; this file and mkdocs.yml are not pages).
MOUNTED = ("*.md", "*.svg", "*.png", "sweeps/*/*")


def on_files(files: Files, config) -> Files:
    for pattern in MOUNTED:
        for path in sorted(DOCS.glob(pattern)):
            uri = path.relative_to(DOCS).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    scenarios = (ROOT / "scenarios" / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "reference/scenario-files.md", content=scenarios))
    for uri, text in docs_reference.pages().items():
        files.append(File.generated(config, uri, content=text))
    return files
