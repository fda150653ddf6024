"""One mutant's test command, and the pytest plugin of the mutation run (issue 35).

Theory of operation
-------------------
cosmic-ray writes a mutant into its module and runs this file, as a file, so that no
package is imported before pytest is (a third of a second a mutant):

    python -B sim/ci/mutant_tests.py MODULE --tests TEST... [--map coverage-map.json]

It runs the tests that execute the mutated statement (``select_tests``, from the coverage
map that sim/ci/mutation.py builds at the start of a run; every test of ``--tests``
without a map), stopped at the first failure. Loaded into pytest with ``-p
toolcall_sim.ci.mutant_tests``, its hooks run the ``slow`` tests last and, under the
map's coverage run, name each test's lines and clear the project's memos between tests.

Only the standard library is imported here: this is the side of the run that executes
once per mutant. The sessions, the map's building, the equivalents and the table are
sim/ci/mutation.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def purge_bytecode(module: str) -> None:
    """Delete the module's cached bytecode. A mutant often has the original's size (``==``
    to ``<=``, ``1`` to ``2``), and a test that starts a subprocess writes its bytecode;
    a pyc records the source's size and mtime in whole seconds, so the next mutant written
    within that second would run the previous one's code (its survivors were not real)."""
    path = Path(module)
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink(missing_ok=True)


def _pytest(tests: list[str]) -> list[str]:
    return [sys.executable, "-B", "-m", "pytest", "-x", "-q", "-n0", "-p", "no:cacheprovider",
            "-p", "toolcall_sim.ci.mutant_tests", *tests]


def run_tests(module: str, tests: list[str], map_path: str | None = None) -> int:
    """The test command of one mutant: fresh bytecode, then the tests that run the mutated
    lines (``select_tests``; all of the module's tests without a map), stopped at the
    first failure, one process, no bytecode written, the tests marked ``slow`` last (this
    module is loaded as the pytest plugin that orders them)."""
    purge_bytecode(module)
    if map_path:
        chosen = select_tests(json.loads(Path(map_path).read_text())[module], Path(module).read_text())
        if chosen is not None and not chosen:
            print(f"no test of {module}'s list runs the mutated lines: survived without a run")
            return 0
        tests = chosen if chosen is not None else tests
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.call(_pytest(tests), env=env)


def pytest_collection_modifyitems(items) -> None:
    """Run the tests marked ``slow`` (explorations, seed sweeps: seconds each) after the
    others, each group in its own order. Most mutants are killed by some test; run with
    ``-x``, the first failure ends the run, so a mutant a quick test kills never waits for
    an exploration. Only the mutation run loads this hook (``-p`` above)."""
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("slow") is not None)


def pytest_runtest_setup(item) -> None:
    if _switch_context(f"{item.nodeid}|setup"):
        _clear_memos()


_MEMOS: list | None = None


def _clear_memos() -> None:
    """Under the map's run, forget every memo of the project's pure functions before each
    test (each ``functools`` cache, each object with a ``cache_clear``: the agent's body
    decoders). A test whose answer an earlier test had memoized would not execute the
    memoized function's lines, and the map would leave it out of those lines' tests: a
    mutant there would then skip a test that kills it when run alone."""
    global _MEMOS
    if _MEMOS is None:
        # The memos are module attributes (a cached function, a decoder object); the
        # garbage collector cannot list them here, since the suite freezes what
        # collection built (tests/conftest.py, gc.freeze).
        found = {}
        for name, module in list(sys.modules.items()):
            if not name.startswith("toolcall_sim") or module is None:
                continue
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)) and not isinstance(value, type):
                    found[id(value)] = value
        _MEMOS = list(found.values())
    for memo in _MEMOS:
        memo.cache_clear()


def pytest_runtest_call(item) -> None:
    _switch_context(f"{item.nodeid}|run")


def pytest_runtest_teardown(item) -> None:
    _switch_context(f"{item.nodeid}|teardown")


def _switch_context(name: str) -> bool:
    """Under ``coverage run`` (the map's run, ``build_map``) name the lines each test's
    phases execute; a no-op in a mutant's run, where coverage is not even imported."""
    cov = sys.modules.get("coverage")
    current = cov.Coverage.current() if cov is not None else None
    if current is not None:
        current.switch_context(name)
    return current is not None


def changed_lines(before: list[str], after: list[str]) -> set[int]:
    """The lines (from 1) of ``before`` that ``after`` changed, deleted, or inserted next to."""
    import difflib

    lines: set[int] = set()
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag != "equal":
            lines.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return lines


def _statement_lines(source: list[str], lines: set[int]) -> set[int]:
    """Widen each line to the innermost simple statement (or compound statement's header)
    holding it: coverage records a statement at some of its lines, a mutant may sit on any."""
    import ast

    spans = []
    for node in ast.walk(ast.parse("\n".join(source) + "\n")):
        if isinstance(node, ast.stmt):
            body = [getattr(node, f) for f in ("body", "orelse", "finalbody", "handlers") if getattr(node, f, None)]
            end = min((b[0].lineno - 1 for b in body), default=node.end_lineno)
            spans.append((node.lineno, max(end, node.lineno)))
    out = set(lines)
    for line in lines:
        inner = [s for s in spans if s[0] <= line <= s[1]]
        if inner:
            lo, hi = min(inner, key=lambda s: s[1] - s[0])
            out.update(range(lo, hi + 1))
    return out


def select_tests(entry: dict, mutated_text: str) -> list[str] | None:
    """The test node IDs that execute the mutated lines, in collection order; ``None``:
    run the module's whole list (a line ran outside any test: at import, in collection,
    or the change is not a line of the mapped source); ``[]``: no test runs them. A line a
    test ran while setting up (a module-wide fixture) brings every test of its file, since
    the fixture's value reaches them all."""
    source = entry["source"]
    lines = _statement_lines(source, changed_lines(source, mutated_text.splitlines()))
    if not lines:
        return None
    chosen, files = set(), set()
    for line in lines:
        for ctx in entry["lines"].get(str(line), []):
            if not ctx:
                return None  # at import or collection: every test depends on it
            nodeid, _, phase = ctx.rpartition("|")
            chosen.add(nodeid)
            if phase == "setup":
                files.add(nodeid.split("::", 1)[0])
    return [n for n in entry["order"] if n in chosen or n.split("::", 1)[0] in files]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sim/ci/mutant_tests.py", description="one mutant's test command")
    ap.add_argument("module")
    ap.add_argument("--tests", nargs="+", required=True, help="the module's test list")
    ap.add_argument("--map", help="the run's coverage map (default: run every test of the list)")
    args = ap.parse_args(argv)
    return run_tests(args.module, args.tests, args.map)


if __name__ == "__main__":
    sys.exit(main())
