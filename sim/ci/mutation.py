"""Mutation score of the decision code and the checkers (issue 35), with cosmic-ray.

Theory of operation
-------------------
For each target module (``MODULE_TESTS``: model/agent/, model/chatd/, model/chattool/,
model/chatd_db.py, model/identity.py, model/properties/) cosmic-ray lists every mutant of
the file (``cosmic-ray init``: one job per operator x occurrence), and ``cosmic-ray exec``
writes each mutant into the file, runs the module's tests that execute the mutated
statement (``-x``, one process, stopped at the first failure, the ``slow`` ones last) and
puts the file back. A mutant is *killed* when a test fails, *survived* when all pass.

Three things bound a run. (1) The coverage map (``build_map``): each run starts by running
every module's test list once under coverage with one context per test and phase; a
mutant runs only the tests that execute its statement (sim/ci/mutant_tests.py, the command
cosmic-ray runs per mutant, ``select_tests``), as mutmut and
Stryker do, so most mutants run a handful of tests, not the list. (2) Selective mutation
of binary operators (``BINARY_SIBLING``): each keeps its sibling replacement only.
(3) ``--jobs N`` (below). The module's test lists are chosen by hand among the fast tests.

Before running, the jobs named in docs/mutation_equivalents.toml are marked skipped
(and the members of the classes it argues once, ``CLASSES``):
each entry names a mutant by module, operator, the text of its line (``code``) and which
of that operator's mutants on lines of that text it is (``nth``), and argues in one line
why no behaviour can tell it from the original. The text, not the line number, finds the
mutant, so an entry survives lines added above it (a probe call in a handler); ``line``
only says where it was argued. An entry that matches no mutant (its line was edited) is
reported and fails the run, so the list cannot silently hide survivors.

Why cosmic-ray, not mutmut 3: mutmut 3 runs the tests against a copy of the sources in
``mutants/``, which this checkout's package-dir mapping (toolcall_sim.model -> model/)
does not import; cosmic-ray mutates the file in place and runs any test command per
module, and its session database resumes an interrupted run where it stopped.

Results go to ``--out`` (default ``.mutation/``, a folder this command owns: it refuses a
folder it did not create), one ``<module>.sqlite`` session and ``<module>.toml`` config per
module, ``survivors.txt`` (each survivor's diff) and ``table.md``.

    python -m toolcall_sim.ci.mutation                       # every module
    python -m toolcall_sim.ci.mutation model/chattool/cancel.py model/agent/cancel.py
    python -m toolcall_sim.ci.mutation --survivors MODULE    # after new tests: rerun its survivors only
    python -m toolcall_sim.ci.mutation --list                # the modules, their tests; stale equivalents
    python -m toolcall_sim.ci.mutation --jobs 2              # two modules at a time, each in its own copy

``--jobs N`` runs N modules at a time. cosmic-ray writes each mutant into the file it
tests, so two sessions cannot share a checkout: each job slot gets its own copy of the
checkout's files in ``<out>/copies/K`` with its own virtual environment (over this one's
packages, the copy installed editable), made once and refreshed from the checkout on every
run. Sessions are handed out largest first (most mutants), so the slowest module does not
start last; each one's wall time is kept in ``<out>/<module>.minutes`` and shown in the
table, whose sum over two slots is the figure "about an hour on two cores" is judged by.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import site
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .mutant_tests import purge_bytecode
# the equivalents file and the mutants its entries name (re-exported: tests import them here)
from .mutation_equivalents import (  # noqa: F401
    CLASSES, EQUIVALENTS, Equivalent, Key, _db_keys, _key_of, _matches, annotation_spans, cached_repr_spans,
    class_spans, deselected, in_class, load_classes, load_equivalents, member_of, mutant_keys, source_lines,
)

MARKER = ".toolcall-sim-mutation"
# cosmic-ray's command line through this interpreter: its script lands beside the
# interpreter that installed it, which is not this one in a venv over system site-packages
COSMIC_RAY = [sys.executable, "-c", "import sys; from cosmic_ray.cli import main; sys.exit(main())"]
# Per mutant: a mutant that loops forever (or runs for ever longer) is killed by the
# timeout. The bound is the list's own time: TIMEOUT_FACTOR times what its unmutated run
# took under coverage (itself slower than a plain run), never under TIMEOUT_MIN_S;
# TIMEOUT_S without a map (--all-tests).
TIMEOUT_S = 120.0
TIMEOUT_FACTOR = 4.0
TIMEOUT_MIN_S = 30.0

_AGENT = ["tests/test_agent_rules.py", "tests/test_agent_conformance.py", "tests/test_agent_sdk.py"]
_CHATTOOL = ["tests/test_chattool.py", "tests/test_chatd_rules.py", "tests/test_chatd_groups.py"]
# the result tables, the classifier and the execute steps also say which row, class and
# branch a call took (the rule coverage probes, C4.2-C4.6, C5.1-C5.5), which only
# tests/test_chatd_probes.py reads
_CHATTOOL_ROWS = [*_CHATTOOL, "tests/test_chatd_probes.py"]
_CHATD = ["tests/test_chatd.py", "tests/test_chatd_rules.py", "tests/test_chatd_today.py"]
# and the task layer's own entry points, which the replica tests' worlds never hand a
# name that names nothing waiting (tests/test_chatd_replica.py), nor each dial answer,
# serial calls or a stale task name (tests/test_chatd_batch.py): the task layer's modules
# call each other, so each file serves every one of them
_CHATD_TASKS = [*_CHATD, "tests/test_chatd_retry_edges.py", "tests/test_chatd_probes.py", "tests/test_chatd_batch.py",
                "tests/test_chatd_replica.py"]
# tests/test_properties_edges.py: each check's branches and bounds (where it changes its mind)
_PROPS = ["tests/test_properties.py", "tests/test_classify.py", "tests/test_properties_edges.py"]

# module -> the fast tests that exercise it (the bound of the run: per mutant, only these)
MODULE_TESTS: dict[str, list[str]] = {
    # the cancel answers' rows also say which they took (C4.6, C5.3, C5.4), as probes only
    # tests/test_chatd_probes.py reads
    "model/chattool/cancel.py": _CHATTOOL_ROWS,
    # the cancel's and the store's A2.7 and A4.3 probes (a pending record a newer message
    # dropped, a clamped threshold), which only tests/test_agent_probes.py reads
    "model/agent/cancel.py": [*_AGENT, "tests/test_agent_probes.py"],
    "model/agent/wire.py": [*_AGENT, "tests/test_agent_wire.py"],
    # the state's shutdown (rule 7: what breaks, which timers end, the probes of A4.5) and
    # the agent's own process IDs
    "model/agent/state.py": [*_AGENT, "tests/test_agent_process_edges.py", "tests/test_agent_probes.py",
                             "tests/test_agent_rules_edges.py"],
    # the rules object: its bounds and defaults, and the old agent's routing
    "model/agent/rules.py": [*_AGENT, "tests/test_agent_routes.py", "tests/test_agent_rules_edges.py"],
    # which handler a method and path reach, an old agent's headers, timers and departures
    "model/agent/routes.py": [*_AGENT, "tests/test_agent_routes.py"],
    # the file handlers' answers to bad bodies, a missing file and no path are Go edges the
    # three files above do not reach; which A4.6 branch an edit counts (not found, ambiguous,
    # none written) only tests/test_agent_probes.py reads
    "model/agent/files.py": [*_AGENT, "tests/test_agent_edges.py", "tests/test_agent_file_edits.py",
                             "tests/test_agent_probes.py"],
    # the request decision and the process side: also the Go edges (panics, stopper, signal,
    # list and reaping, body decoding), which the three files above do not reach, and the
    # A2.5/A2.7 branches a panic or a dropped record counts (tests/test_agent_probes.py)
    **{f"model/agent/{m}.py": ["tests/test_agent_store.py", "tests/test_agent_middleware.py", *_AGENT,
                               "tests/test_agent_edges.py", "tests/test_agent_probes.py"]
       for m in ("middleware", "store")},
    "model/agent/processes.py": ["tests/test_agent_process_edges.py", *_AGENT, "tests/test_agent_edges.py",
                                 "tests/test_process_probes.py", "tests/test_agent_probes.py"],
    **{f"model/chattool/{m}.py": _CHATTOOL for m in
       ("args", "budget", "dial", "files", "interrupt")},
    # every finish says which result row the call took (C5.2-C5.4), as probes only
    # tests/test_chatd_probes.py reads
    "model/chattool/state.py": _CHATTOOL_ROWS,
    # the design variants' later attempts (first-attempt-only, ledger): their flaws are
    # tests/test_designs.py's, which the chattool files never run
    "model/chattool/lookup.py": [*_CHATTOOL, "tests/test_designs.py", "tests/test_chattool_lookup.py"],
    **{f"model/chattool/{m}.py": _CHATTOOL_ROWS for m in ("calls", "classifier", "execute", "results")},
    # the task layer's probes (C1.2-C3.2) and rule 3 on the traces of the scenarios that
    # cancel, retry or time out tasks (no timer outlives what it waits for), which the
    # replica tests never check
    **{f"model/chatd/{m}.py": _CHATD_TASKS for m in ("batch", "interrupt", "replica", "runner", "state", "tasks")},
    # the retry rule's own table, and the planted bugs whose hooks and zombie batch live here
    "model/chatd/retry.py": [*_CHATD_TASKS, "tests/test_retry_wrapper.py", "tests/test_planted_bugs.py"],
    "model/chatd/rules.py": [*_CHATD_TASKS, "tests/test_chatd_db_edges.py", "tests/test_planted_bugs.py"],
    # the database's own edges (each fence part, message IDs, copies, cleanup), the edit
    # transition (C3.6) and its rule coverage probes, which the replica tests never reach
    "model/chatd_db.py": [*_CHATD, "tests/test_chatd_db_edges.py", "tests/test_message_edit.py",
                          "tests/test_chatd_probes.py"],
    "model/identity.py": ["tests/test_identity.py", "tests/test_identity_edges.py"],
    **{f"model/properties/{m}.py": _PROPS for m in ("checks", "classify", "evidence", "risks")},
    # the incremental monitor against the whole history's verdicts, over explorations
    # (seconds): a checker mutant changes both sides alike, so only the monitor's own run it
    "model/properties/monitor.py": [*_PROPS, "tests/test_monitor.py"],
}
# Every module's state objects are frozen values (tests/test_model_values.py: milliseconds),
# which is what kills a `frozen=True` made False in any of them.
MODULE_TESTS = {m: [*tests, "tests/test_model_values.py"] for m, tests in MODULE_TESTS.items()}


# ---------------------------------------------------------------------------
# The coverage map: which tests run which lines. A mutant changes a few lines; a test
# that never executes them cannot tell the mutant from the original, so a mutant's run
# needs only the tests that execute its lines (mutmut's and Stryker's per-test coverage).
# ---------------------------------------------------------------------------

def build_map(modules: list[str], out: Path) -> Path:
    """Run each distinct test list once under coverage (dynamic contexts: test node ID
    and phase) and keep, per module, the tests that execute each line, and the source
    they ran; return the map's path. Built on every run, so tests added since count."""
    import coverage

    groups: dict[tuple[str, ...], list[str]] = {}
    for m in modules:
        groups.setdefault(tuple(MODULE_TESTS[m]), []).append(m)
    cov_dir = out / "coverage"
    cov_dir.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    for k, (tests, mods) in enumerate(sorted(groups.items())):
        data_file = cov_dir / f"list{k}.data"
        data_file.unlink(missing_ok=True)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        started = time.monotonic()
        got = subprocess.run([sys.executable, "-B", "-m", "coverage", "run", f"--data-file={data_file}",
                              f"--include={','.join(str(Path(m).resolve()) for m in mods)}",
                              "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", "-p", "toolcall_sim.ci.mutant_tests",
                              *tests], env=env, stdout=subprocess.DEVNULL)
        if got.returncode != 0:
            raise SystemExit(f"the unmutated tests fail ({' '.join(tests)}): fix them before a mutation run")
        seconds = time.monotonic() - started
        data = coverage.CoverageData(str(data_file))
        data.read()
        order = _collection_order(list(tests))
        for m in mods:
            by_line = data.contexts_by_lineno(str(Path(m).resolve()))
            result[m] = {"source": source_lines(m), "order": order, "seconds": seconds,
                         "lines": {str(n): sorted(c) for n, c in by_line.items()}}
    path = out / "coverage-map.json"
    path.write_text(json.dumps(result, sort_keys=True))
    return path


def _collection_order(tests: list[str]) -> list[str]:
    # addopts cleared: its -q with this one would print counts per file, not node IDs
    got = subprocess.run([sys.executable, "-B", "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                          "--co", *tests], capture_output=True, text=True)
    return [line for line in got.stdout.splitlines() if "::" in line]


def _timeout_s(module: str, map_path: Path | None) -> float:
    if map_path is None:
        return TIMEOUT_S
    seconds = json.loads(map_path.read_text())[module]["seconds"]
    return max(TIMEOUT_MIN_S, round(TIMEOUT_FACTOR * seconds, 1))


def _config(module: str, python: str, map_path: Path | None = None, tests_of: str | None = None) -> str:
    # the file, not the module: a mutant's command then imports no package before pytest
    # does (a third of a second each, about a fifth of a quick mutant's run). tests_of names
    # the target whose list it is when module is a stand-in (check_equivalents' copy)
    cmd = (f"{shlex.quote(python)} -B sim/ci/mutant_tests.py {module} --tests "
           + " ".join(shlex.quote(t) for t in MODULE_TESTS[tests_of or module]))
    if map_path is not None:
        cmd += f" --map {shlex.quote(str(map_path.resolve()))}"
    return (
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {_timeout_s(module, map_path)}\n"
        "excluded-modules = []\n"
        f"test-command = {cmd!r}\n".replace("'", '"') +
        "\n[cosmic-ray.distributor]\nname = \"local\"\n"
    )


def _own(out: Path) -> None:
    if out.exists() and not (out / MARKER).exists():
        raise SystemExit(f"{out} exists and is not a mutation folder of this command; name another with --out")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("made by python -m toolcall_sim.ci.mutation\n")


def _source_of(db_path: Path) -> Path:
    return db_path.with_suffix(".source")


def session_is_stale(db_path: Path, module: str) -> bool:
    """A session's mutants name lines and columns of the text it was made from; once the
    module changes they would mutate other code, and its keys no longer find the
    equivalents' lines. The text is kept beside the session (``<module>.source``); a
    session without one predates the check and is trusted."""
    kept = _source_of(db_path)
    return kept.exists() and kept.read_text() != "\n".join(source_lines(module)) + "\n"


def forget_survivors(db_path: Path) -> int:
    """Make the session's survivors pending again (``--survivors``): after new tests, only
    they need a rerun, not the module's killed mutants; return how many."""
    import sqlite3

    with sqlite3.connect(db_path) as con:  # cosmic-ray's work_results table: one row per finished job
        return con.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount


def _mark_equivalents(db_path: Path, module: str, equivalents: list[Equivalent]) -> list[Equivalent]:
    """Mark the listed equivalent mutants skipped (on every run, so an entry added since
    the session began applies on resume); return the entries that matched no mutant."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    mine = [e for e in equivalents if e.module == module]
    unmatched = list(mine)
    classes = load_classes()
    spans = class_spans(source_lines(module), classes)
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        keys = _db_keys(db, module)
        for item in db.work_items:
            for spec in item.mutations:
                if deselected(spec.operator_name):
                    # an entry arguing it still names a mutant (not stale), though none runs
                    for e in [e for e in unmatched if _matches(_key_of(keys, spec), e)]:
                        unmatched.remove(e)
                    db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                                          output="not selected: a binary operator's other replacements"))
                    continue
                member = member_of(spec, spans)
                if member is not None:
                    db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                                          output=f"equivalent: {classes[member]}"))
                for e in mine:
                    if _matches(_key_of(keys, spec), e):
                        db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                                              output=f"equivalent: {e.why}"))
                        if e in unmatched:
                            unmatched.remove(e)
    return unmatched


@dataclass
class Row:
    module: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    equivalent: int = 0
    pending: int = 0
    minutes: float = 0.0  # wall time of the session's last exec (a --survivors rerun: only that)

    @property
    def score(self) -> str:
        judged = self.mutants - self.equivalent - self.pending
        return "-" if judged <= 0 else f"{100.0 * self.killed / judged:.1f}%"


def tally(db_path: Path, module: str, survivors: list[str], equivalents: list[Equivalent]) -> Row:
    """Count the session's results. A mutant skipped as equivalent whose entry has since
    left the list counts as pending: ``--fresh`` runs it."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    row = Row(module)
    spans = class_spans(source_lines(module), load_classes())
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        keys = _db_keys(db, module)
        row.mutants = db.num_work_items
        done = 0
        for item, result in db.completed_work_items:
            if deselected(item.mutations[0].operator_name):
                row.mutants -= 1
                continue
            done += 1
            key = _key_of(keys, item.mutations[0])
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                if member_of(item.mutations[0], spans) or any(_matches(key, e) for e in equivalents
                                                              if e.module == module):
                    row.equivalent += 1
                else:
                    done -= 1
            elif result.worker_outcome == WorkerOutcome.NORMAL and result.test_outcome == TestOutcome.SURVIVED:
                row.survived += 1
                spec = item.mutations[0]
                survivors.append(f"## {module}:{spec.start_pos[0]} {spec.operator_name} nth {key[2]}\n"
                                 f"# module = {json.dumps(module)}\n# line = {spec.start_pos[0]}\n"
                                 f"# operator = {json.dumps(spec.operator_name)}\n# code = {json.dumps(key[1])}\n"
                                 f"# nth = {key[2]}\n{result.diff or ''}\n")
            else:  # killed, incompetent (the mutant does not import) or timed out: a test noticed
                row.killed += 1
        row.pending = row.mutants - done
    spent = db_path.with_suffix(".minutes")
    row.minutes = float(spent.read_text()) if spent.exists() else 0.0
    return row


def table(rows: list[Row]) -> str:
    lines = ["| module | mutants | killed | survived | equivalent | pending | score | minutes |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    tot = Row("total")
    for r in rows:
        lines.append(f"| {r.module} | {r.mutants} | {r.killed} | {r.survived} | {r.equivalent} | {r.pending} | "
                     f"{r.score} | {r.minutes:.1f} |")
        for k in ("mutants", "killed", "survived", "equivalent", "pending", "minutes"):
            setattr(tot, k, getattr(tot, k) + getattr(r, k))
    lines.append(f"| **total** | {tot.mutants} | {tot.killed} | {tot.survived} | {tot.equivalent} | {tot.pending} | "
                 f"{tot.score} | {tot.minutes:.1f} |")
    return "\n".join(lines) + "\n"


def _name(module: str) -> str:
    return module.replace("/", "_").removesuffix(".py")


def check_equivalents(modules: list[str]) -> int:
    """List the mutants of each module with an entry (``cosmic-ray init`` into a throwaway
    folder: seconds, no test runs) and report the entries that match none; 1 if any. The
    committed text is listed, not the file, which a running session may hold a mutant in."""
    import tempfile

    equivalents = load_equivalents()
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in sorted({e.module for e in equivalents} & set(modules)):
            cfg, db, copy = (Path(tmp) / f"{_name(m)}{ext}" for ext in (".toml", ".sqlite", ".py"))
            copy.write_text("\n".join(source_lines(m)) + "\n")
            cfg.write_text(_config(str(copy), sys.executable, tests_of=m))
            subprocess.run([*COSMIC_RAY, "init", str(cfg), str(db)], check=True)
            stale += _mark_equivalents(db, m, equivalents)
    return _report_stale(stale)


def _report_stale(stale: list[Equivalent]) -> int:
    for e in stale:
        print(f"stale equivalent (matches no mutant): {e.module}:{e.line} {e.operator} nth {e.nth} on "
              f"{e.code!r}", file=sys.stderr)
    return 1 if stale else 0


def _refresh_copy(out: Path, dst: Path) -> Path:
    """Make ``dst`` a copy of this checkout's files (tracked and untracked, not ignored,
    nothing under ``out``) with a virtual environment of its own in which ``toolcall_sim``
    is the copy (installed editable, no dependencies: they come from this interpreter's
    packages); return the copy's interpreter. The environment is made once; the files are
    copied again on every run, so the copy runs the tests as they are now."""
    names = subprocess.run(["git", "ls-files", "-z", "-c", "-o", "--exclude-standard"], capture_output=True,
                           text=True, check=True).stdout.split("\0")
    out_rel = os.path.relpath(out.resolve(), Path.cwd().resolve())
    dst = dst.resolve()  # its interpreter runs with the copy as working folder
    if dst.exists():
        for child in dst.iterdir():
            if child.name != ".venv":
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = Path(name)
        if not name or not src.is_file() or name == out_rel or name.startswith(out_rel + "/"):
            continue
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / name)
    python = dst / ".venv" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(dst / ".venv")], check=True)
        # this interpreter's packages (cosmic-ray, pytest, the dependencies, pip and its
        # setuptools, which must build the editable install offline) as plain paths:
        # a venv's --system-site-packages reaches only the base interpreter's, and plain paths
        # run no .pth file, so the checkout's own editable install does not shadow the copy's
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        Path(purelib, "_toolcall_sim_outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e",
                        str(dst)], check=True, stdout=subprocess.DEVNULL)
    where = subprocess.run([str(python), "-c", "import toolcall_sim; print(toolcall_sim.__file__)"],
                           capture_output=True, text=True, cwd=dst).stdout.strip()
    if not Path(where).resolve().is_relative_to(dst.resolve()):
        raise SystemExit(f"{dst}: its environment imports toolcall_sim from {where or '(nowhere)'}, not the copy")
    return python


def _exec_session(m: str, cfg: Path, db: Path, python: str, cwd: Path, log: Path | None,
                  map_path: Path | None) -> None:
    """One module's ``cosmic-ray exec`` in the checkout (or copy) at ``cwd``, timed."""
    cfg.write_text(_config(m, python, map_path))  # the test command runs the copy's interpreter, so its tests import the copy
    started = time.monotonic()
    cmd = [python, *COSMIC_RAY[1:], "exec", str(cfg.resolve()), str(db.resolve())]
    try:
        if log is None:
            subprocess.run(cmd, check=True, cwd=cwd)
        else:
            with log.open("w") as f:
                subprocess.run(cmd, check=True, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    finally:
        purge_bytecode(str(cwd / m))  # no mutant's bytecode outlives the run
    db.with_suffix(".minutes").write_text(f"{(time.monotonic() - started) / 60:.1f}\n")


def _run_parallel(jobs: list[tuple[str, Path, Path]], out: Path, slots: int, map_path: Path | None) -> list[str]:
    """Run the sessions ``slots`` at a time, each slot in its own copy; largest session
    first. Return the modules whose session failed."""
    from cosmic_ray.work_db import WorkDB, use_db

    def size(job) -> int:
        with use_db(str(job[2]), WorkDB.Mode.open) as db:
            return db.num_work_items - sum(1 for _ in db.completed_work_items)

    queue = sorted(jobs, key=size, reverse=True)
    lock, failed = threading.Lock(), []
    pythons = [str(_refresh_copy(out, out / "copies" / str(k + 1))) for k in range(slots)]

    def slot(k: int) -> None:
        while True:
            with lock:
                if not queue:
                    return
                m, cfg, db = queue.pop(0)
            print(f"mutating {m} in copy {k + 1} (log: {db.with_suffix('.log')}) ...", file=sys.stderr, flush=True)
            try:
                _exec_session(m, cfg, db, pythons[k], out / "copies" / str(k + 1), db.with_suffix(".log"), map_path)
            except subprocess.CalledProcessError:
                with lock:
                    failed.append(m)
            print(f"done {m} ({db.with_suffix('.minutes').read_text().strip()} min)", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=slot, args=(k,)) for k in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolcall_sim.ci.mutation", description=__doc__.split("\n")[0])
    ap.add_argument("modules", nargs="*", help="target modules (paths from the checkout's root); default: all")
    ap.add_argument("--out", default=".mutation", help="results folder this command owns (default .mutation/)")
    ap.add_argument("--fresh", action="store_true", help="start each module's session anew (else resume it)")
    ap.add_argument("--survivors", action="store_true",
                    help="rerun only the survivors of each module's session (after adding tests)")
    ap.add_argument("--report-only", action="store_true", help="print the table of the sessions as they are")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="run N modules at a time, each in its own copy of the checkout (default 1: in place)")
    ap.add_argument("--all-tests", action="store_true",
                    help="run each mutant against its module's whole test list, not only the tests that "
                         "execute its lines (slower; the check of the selection)")
    ap.add_argument("--list", action="store_true",
                    help="print each module and its tests and check the equivalents still match a mutant; run nothing")
    args = ap.parse_args(argv)

    if not Path("model/agent").is_dir():
        raise SystemExit("run from the checkout's root (model/ must be here: cosmic-ray mutates the files in place)")
    modules = args.modules or list(MODULE_TESTS)
    unknown = [m for m in modules if m not in MODULE_TESTS]
    if unknown:
        raise SystemExit(f"no test selection for {', '.join(unknown)} (sim/ci/mutation.py MODULE_TESTS)")
    if args.list:
        for m in modules:
            print(f"{m}: {' '.join(MODULE_TESTS[m])}")
        return check_equivalents(modules)
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *modules], capture_output=True, text=True).stdout
    if dirty.strip() and not args.report_only:
        raise SystemExit(f"uncommitted changes in the target modules (a killed run leaves a mutant in place: "
                         f"`git checkout -- FILE` puts it back):\n{dirty}")
    out = Path(args.out)
    _own(out)
    equivalents = load_equivalents()
    stale: list[Equivalent] = []
    if args.jobs < 1:
        raise SystemExit("--jobs needs at least 1")
    rows, survivors, parallel = [], [], []
    map_path = None
    if not args.report_only and not args.all_tests:
        print("mapping which tests run which lines ...", file=sys.stderr, flush=True)
        map_path = build_map(modules, out)
    for m in modules:
        cfg, db = out / f"{_name(m)}.toml", out / f"{_name(m)}.sqlite"
        if not args.report_only:
            cfg.write_text(_config(m, sys.executable))
            if args.fresh or not db.exists():
                db.unlink(missing_ok=True)
                subprocess.run([*COSMIC_RAY, "init", str(cfg), str(db)], check=True)
                _source_of(db).write_text("\n".join(source_lines(m)) + "\n")
            elif session_is_stale(db, m):
                raise SystemExit(f"{m} changed since its session in {out} began (its mutants name the old "
                                 f"lines): run it with --fresh")
            elif args.survivors:
                print(f"{m}: {forget_survivors(db)} survivors to run again", file=sys.stderr)
            stale += _mark_equivalents(db, m, equivalents)
            if args.jobs == 1:
                print(f"mutating {m} ...", file=sys.stderr, flush=True)
                _exec_session(m, cfg, db, sys.executable, Path.cwd(), None, map_path)
            else:
                parallel.append((m, cfg, db))
    failed = _run_parallel(parallel, out, args.jobs, map_path) if parallel else []
    for m in modules:
        db = out / f"{_name(m)}.sqlite"
        if db.exists():
            if session_is_stale(db, m):
                print(f"{m}: changed since its session began; its row is of the old text (--fresh runs it anew)",
                      file=sys.stderr)
            rows.append(tally(db, m, survivors, equivalents))
    text = table(rows)
    (out / "table.md").write_text(text)
    (out / "survivors.txt").write_text("\n".join(survivors))
    print(text, end="")
    print(f"survivors' diffs: {out / 'survivors.txt'}")
    for m in failed:
        print(f"{m}: its session failed (see {out / _name(m)}.log)", file=sys.stderr)
    return _report_stale(stale) or (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
