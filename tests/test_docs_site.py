"""The documentation site builds, and every command it shows does what it shows.

Theory of operation
-------------------
The site (docs/mkdocs.yml) must build with ``mkdocs build --strict``: a broken link, a
page missing from the build or a hook that fails is an error. It is built into a
temporary folder, never into the repository.

Every command the README and the site's pages show is run here, in a convention the pages
follow (``transcripts``):

- A fenced block tagged ``console`` is a transcript. Each line starting with ``$ `` is a
  command, run by bash in a fresh temporary folder per page (the blocks of one page run in
  order, in the same folder, so a tutorial can build on its earlier steps), with the
  project's ``toolcall-sim`` and ``python`` first on the PATH. The lines up to the next
  ``$ `` line are what it prints on stdout. A command may end in ``# exit N``: the exit
  status it must give (0 when not said).
- Figures aside: numbers and hashes are compared as "a figure" (timings, state counts and
  trace hashes may change with the code; the words may not), and runs of spaces as one.
  In the expected output, a line that is only ``…`` stands for any number of lines, and
  ``…`` inside a line for any text.
- A fenced block with ``title="PATH"`` is a file the reader writes: it is written to PATH
  in the page's folder before the commands after it run.
- ``<!-- not run: REASON -->`` on the line before a block says the block is not run
  (a command too slow for the suite, or one that needs a cluster). The test lists them
  and their count is pinned (``NOT_RUN``), so a new one is a decision, not a drift.
- A block tagged ``sh`` or ``shell`` is not a transcript: it must carry the not-run
  marker, or hold only ``python -m pytest scenarios/...`` lines, which tests/test_docs.py
  runs from the checkout with the item counts their comments give.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = DOCS / "pages"
README_MAX_LINES = 150
# The blocks marked ``<!-- not run: ... -->``, by page: too slow for the suite or needing
# a cluster. A change here is a decision about what the docs may show without running it.
NOT_RUN = {
    "README.md": 2,  # the two set-up commands: the install, and the test suite itself
    "how-to/dask-cluster.md": 3,  # a scheduler and workers on machines of their own; an SSH tunnel to one;
    # a cluster whose workers are stopped mid-run (tests/test_cluster.py stops a LocalCluster's instead)
    "how-to/compare-designs.md": 1,  # the full comparison: about a minute of two cores
    "how-to/risk-sweeps.md": 1,  # the 16,800-run sweep: ten minutes of two cores
    "how-to/measure-the-search.md": 1,  # every bug through every driver: about a minute
    "how-to/explore-a-scenario.md": 1,  # every shipped scenario explored under two variants: minutes
    "how-to/mutation-score.md": 1,  # the mutation run: minutes a module, about an hour in all
    "how-to/drift.md": 1,  # drift needs a coder/coder checkout, which the suite does not have
    "tutorials/ci.md": 2,  # the shipped suite in full (about two minutes); a screenshot in headless Chromium
    "performance.md": 1,  # the full bench: 20-40 minutes with issue 36's rows, and it reads the wall clock
}
COMMAND_TIMEOUT_S = 300
MARK = "…"


@dataclass
class Command:
    line: str
    expect_exit: int
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: str
    lineno: int
    lang: str
    title: str | None
    body: str
    not_run: str | None


FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)$")
NOT_RUN_MARK = re.compile(r"^<!-- not run: (?P<why>.+?) -->$")


def documents() -> dict[str, pathlib.Path]:
    """Every Markdown page the README and the site show, by its name in the site (the
    README by its own name). The generated reference pages are not here: they show no
    commands, only ``--help`` texts taken from the parser."""
    pages = {"README.md": ROOT / "README.md"}
    pages.update({p.relative_to(PAGES).as_posix(): p for p in sorted(PAGES.rglob("*.md"))})
    pages.update({p.name: p for p in sorted(DOCS.glob("*.md"))})
    pages["reference/scenario-files.md"] = ROOT / "scenarios" / "README.md"
    return pages


def blocks(page: str, text: str) -> list[Block]:
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        info = m.group("info").strip()
        lang = info.split()[0] if info else ""
        title = re.search(r'title="([^"]+)"', info)
        prev = lines[i - 1].strip() if i else ""
        marker = NOT_RUN_MARK.match(prev)
        end = i + 1
        while end < len(lines) and lines[end].strip() != m.group("fence"):
            end += 1
        out.append(Block(page, i + 1, lang, title.group(1) if title else None, "\n".join(lines[i + 1:end]),
                         marker.group("why") if marker else None))
        i = end + 1
    return out


def commands(block: Block) -> list[Command]:
    cmds: list[Command] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            m = re.search(r"\s+#\s*exit (\d+)\s*$", line)
            cmds.append(Command(line[2:m.start()] if m else line[2:], int(m.group(1)) if m else 0))
        elif cmds:
            cmds[-1].expected.append(line)
        else:
            raise AssertionError(f"{block.page}:{block.lineno}: a console block starts with output, not a `$ ` line")
    return cmds


def all_blocks() -> list[Block]:
    return [b for name, path in documents().items() for b in blocks(name, path.read_text(encoding="utf-8"))]


def transcripts() -> dict[str, list[Block]]:
    """Per page, its console blocks and the files written before them (the blocks to run)."""
    out: dict[str, list[Block]] = {}
    for b in all_blocks():
        if b.not_run is None and (b.lang == "console" or b.title):
            out.setdefault(b.page, []).append(b)
    return {page: bs for page, bs in out.items() if any(b.lang == "console" for b in bs)}


_FIGURE = re.compile(r"\b[0-9a-f]{64}\b|\d+(?:[.,]\d+)*")


def normalise(line: str) -> str:
    """Figures aside: a number or hash is ``#``, runs of spaces one space."""
    return " ".join(_FIGURE.sub("#", line).split())


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` (normalised, with ``…`` lines and ``…`` inside lines) against ``actual``."""
    parts = []
    for line in expected:
        if line.strip() == MARK:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = [re.escape(normalise(p)) for p in line.split(MARK)]
            parts.append(r"[^\n]*?".join(pieces).replace(r"\ ", " ") + r"\n")
    pattern = "".join(parts)
    text = "".join(normalise(a) + "\n" for a in actual)
    return re.fullmatch(pattern, text) is not None


def run_page(page: str, bs: list[Block], folder: pathlib.Path) -> list[str]:
    """Run one page's transcripts in ``folder``; the mismatches, one message each."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLCALL_SIM_", "PYTEST_", "COV_"))}
    env["PATH"] = os.pathsep.join([str(pathlib.Path(sys.executable).parent), env.get("PATH", "")])
    env["COLUMNS"] = "80"
    env.pop("PYTHONPATH", None)
    failures = []
    for b in bs:
        if b.title:
            target = folder / b.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.body + "\n", encoding="utf-8")
        if b.lang != "console":
            continue
        for c in commands(b):
            proc = subprocess.run(["bash", "-c", c.line], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S, check=False)
            where = f"{page}:{b.lineno}: $ {c.line}"
            if proc.returncode != c.expect_exit:
                failures.append(f"{where}: exit {proc.returncode}, the page says {c.expect_exit}\n"
                                f"{proc.stderr.strip()[-2000:]}")
            if not matches(c.expected, proc.stdout.splitlines()):
                failures.append(f"{where}: prints\n{proc.stdout.rstrip()}\n--- the page shows\n"
                                + "\n".join(c.expected))
    return failures


# ---------------------------------------------------------------------------
# The convention itself
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("expected,actual,ok", [
    (["a 12 b"], ["a 7 b"], True),  # figures aside
    (["sha 01518bcde946bf7cdeb107d6bdb4e24c81d62ead7dc17f4af10007fd57719aec"], ["sha " + "f" * 64], True),
    (["exit  code"], ["exit code"], True),
    (["expectations met"], ["expectations not met"], False),  # the words count
    (["a", MARK, "z"], ["a", "b", "c", "z"], True),
    (["a", MARK, "z"], ["a", "z"], True),
    (["a", MARK], ["a", "b"], True),
    (["a"], ["a", "b"], False),  # nothing more than shown, unless ``…`` says so
    ([f"x {MARK} y"], ["x anything at all y"], True),
    ([f"x {MARK} y"], ["x anything", "y"], False),  # ``…`` in a line stays in the line
    ([], [], True),
])
def test_the_transcript_convention(expected, actual, ok):
    assert matches(expected, actual) is ok


def test_commands_and_exit_statuses_are_read_as_documented():
    b = Block("p", 1, "console", None, "$ toolcall-sim a   # exit 1\nout\n$ toolcall-sim b\n", None)
    got = [(c.line, c.expect_exit, c.expected) for c in commands(b)]
    assert got == [("toolcall-sim a", 1, ["out"]), ("toolcall-sim b", 0, [])]


def test_the_marker_is_read_and_a_block_needs_it():
    text = "x\n<!-- not run: too slow -->\n```sh\ntoolcall-sim sweep big\n```\n\n```console\n$ true\n```\n"
    got = [(b.lang, b.not_run) for b in blocks("p", text)]
    assert got == [("sh", "too slow"), ("console", None)]


# ---------------------------------------------------------------------------
# The pages
# ---------------------------------------------------------------------------


def test_the_readme_fits_one_screen_of_scrolling():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most {README_MAX_LINES}"


def test_every_link_of_the_readme_resolves():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "the README links into the docs"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to what is not there: {missing}"
    assert {"docs/contract.md", "docs/architecture.md"} <= set(local)


def test_every_written_page_is_in_the_nav():
    """Each hand-written page of the site is in the nav of docs/mkdocs.yml."""
    nav = (DOCS / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.M))
    written = {p.relative_to(PAGES).as_posix() for p in PAGES.rglob("*.md")}
    assert written <= listed, f"pages not in the nav: {sorted(written - listed)}"


def test_no_command_hides_in_a_block_the_tests_do_not_run():
    """A command is shown in a ``console`` transcript (run), or in a block marked not run,
    or is one of the ``python -m pytest scenarios/`` lines tests/test_docs.py runs. The
    not-run blocks are the ones ``NOT_RUN`` counts."""
    loose, not_run = [], {}
    for b in all_blocks():
        if b.not_run is not None:
            assert b.not_run.strip(), f"{b.page}:{b.lineno}: a not-run marker needs its reason"
            not_run[b.page] = not_run.get(b.page, 0) + 1
        elif b.lang in ("sh", "shell", "bash"):
            cmds = [ln for ln in b.body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
            if not all(ln.startswith("python -m pytest scenarios/") for ln in cmds):
                loose.append(f"{b.page}:{b.lineno}")
        elif b.lang in ("", "text") and re.search(r"^\$ ", b.body, re.M):
            loose.append(f"{b.page}:{b.lineno} (a transcript not tagged console)")
    assert not loose, "commands in blocks no test runs: " + ", ".join(loose)
    assert not_run == NOT_RUN


def test_the_pages_show_commands():
    """The convention is in use: the README and each tutorial run commands here."""
    pages = transcripts()
    assert {"README.md", "tutorials/first-race.md", "tutorials/exploring.md", "tutorials/ci.md"} <= set(pages)
    count = sum(len(commands(b)) for bs in pages.values() for b in bs if b.lang == "console")
    assert count >= 30, count


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(transcripts()))
def test_every_command_a_page_shows_prints_what_it_shows(page, tmp_path):
    """Each page's commands, run in order in a folder of their own: the exit status the
    page gives and the output it shows, figures aside."""
    failures = run_page(page, transcripts()[page], tmp_path)
    assert not failures, "\n\n".join(failures)


# ---------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------


def _mkdocs_or_fail():
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError as err:
        pytest.fail(f"the docs need MkDocs and mkdocs-material ({err.name} is missing): pip install -e \".[ci]\"",
                    pytrace=False)


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` into a temporary folder: no warning, every page there,
    the generated reference among them."""
    _mkdocs_or_fail()
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(DOCS / "mkdocs.yml"),
                           "-d", str(site)], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))  # (the theme's banner about its successor)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for page in ("index.html", "tutorials/first-race/index.html", "contract/index.html", "architecture.svg",
                 "reference/commands/index.html", "reference/vocabulary/index.html", "reference/exit-codes/index.html",
                 "reference/scenario-files/index.html", "performance/index.html"):
        assert (site / page).is_file(), page
    html = (site / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    assert "toolcall-sim explore" in html and "--max-in-flight" in html
    assert not (DOCS / "site").exists() and not (PAGES / "reference" / "commands.md").exists()


def test_the_generated_reference_is_the_same_in_another_process():
    """Byte for byte under another hash seed and another terminal width (Rule 1 of
    toolcall_sim.cli.docs_reference)."""
    from toolcall_sim.cli import docs_reference

    here = docs_reference.pages()
    code = ("import json, sys; from toolcall_sim.cli import docs_reference as d; "
            "sys.stdout.write(json.dumps(d.pages()))")
    env = dict(os.environ, PYTHONHASHSEED="123", COLUMNS="200")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(proc.stdout) == here


def test_the_generated_reference_covers_the_code():
    """Every subcommand, exit code, fault kind, property, planted bug, design and residual
    risk the code declares has its place on a generated page."""
    from toolcall_sim.cli import docs_reference, main
    from toolcall_sim.model import designs, planted_bugs, properties, vocabulary

    pages = docs_reference.pages()
    cmds = pages["reference/commands.md"]
    for name, _, _ in docs_reference._subcommands(main.parser()):
        assert f"## {name}\n" in cmds and f"usage: toolcall-sim {name}" in cmds, name
    codes = [c for c, _ in docs_reference.exit_codes()]
    assert codes == [main.EXIT_OK, main.EXIT_VIOLATION, main.EXIT_BAD_INPUT, main.EXIT_DOES_NOT_FIT,
                     main.EXIT_HARNESS, main.EXIT_NO_WORKERS, main.EXIT_INTERRUPTED]
    for name in [*vocabulary.FAULTS, *vocabulary.WORLD_KEYS, *vocabulary.TRIGGER_EVENTS]:
        assert f"| `{name}` |" in pages["reference/vocabulary.md"], name
    for p in properties.PROPERTIES:
        assert f"| `{p.name}` | {p.kind} |" in pages["reference/properties.md"], p.name
    for name in [*(b.name for b in planted_bugs.PLANTED_BUGS), *(d.name for d in designs.DESIGNS)]:
        assert f"| `{name}` |" in pages["reference/variants.md"], name
    for name in [*properties.RESIDUAL_RISKS, *properties.KNOWN_FINDINGS]:
        assert f"| `{name}` |" in pages["reference/residual-risks.md"], name


def test_the_generator_writes_its_pages_into_a_folder(tmp_path, capsys):
    from toolcall_sim.cli import docs_reference

    assert docs_reference.main([str(tmp_path)]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md"))
    assert written == sorted(docs_reference.pages())
    assert docs_reference.main([]) == 2 and docs_reference.main(["--help"]) == 2
    assert "usage" in capsys.readouterr().err


def test_the_site_needs_no_copy_of_what_docs_holds():
    """The documents cited by path stay in docs/ (docstrings cite ``docs/contract.md``);
    the site mounts them, so docs/pages/ holds no second copy to drift apart."""
    for name in ("contract.md", "architecture.md", "interfaces.md", "performance.md", "architecture.svg"):
        assert (DOCS / name).is_file(), name
        assert not list(PAGES.rglob(name)), f"docs/pages/ has a copy of {name}"
    assert shutil.which("bash"), "the transcripts run in bash"
