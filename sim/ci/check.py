"""``toolcall-sim check``'s driver: run a suite with the existing drivers, judge it
against a baseline, and hand back plain data (no rendering: that is ``toolcall_sim.reports.check_*``).

Theory of operation
-------------------
A suite (sim/ci/suite.py) becomes a list of jobs, one per scenario run, explorer run, swarm
chunk and planted-bug check. Each job calls the driver that exists for it
(``toolcall_sim.world.run.run_scenario``, ``toolcall_sim.model.explore.explore``, ``toolcall_sim.drivers.swarm.iter_outcomes`` and
``run_seed``) and returns plain values; this module only folds them into a report.

Rule 1. Jobs run in a pool of ``workers`` processes (forked where safe, as sim/drivers/swarm.py
        does: ``swarm._pool_context``) and are folded in job order, whatever order they
        finish in, so the report is the same bytes for any ``workers``. Nothing in the
        report reads a clock: no time, no path outside the report folder, no worker
        count (``report.json`` and the pictures of two runs are identical). Each job's
        wall time travels beside the report (``CheckResult.seconds``) for junit.xml's
        ``time`` attributes alone: CI tools show test durations, and junit.xml is the
        one file of the report that is not the same bytes twice.
Rule 2. A finding is a violation with its identity: driver, where (scenario, explorer
        entry, swarm seed), variant, property, residual risk or known finding, and a
        fingerprint of its counterexample (``fingerprint``: the property and the
        counterexample's action labels without message sequence numbers, so it does not
        depend on machine, path, time or worker count). Each finding has one status:
        ``residual_risk`` (a documented residual risk, docs/contract.md D7, or a known
        finding about the contract, model/properties/risks.py: listed by name, never
        fails), ``expected`` (a scenario's own ``[expect.<variant>]`` names it: the
        scenario's verdict covers it), ``accepted`` (in the baseline) or ``new`` (fails).
Rule 3. The run fails (exit 1) on a new finding, a scenario expectation that is not met,
        a planted bug a named driver no longer catches, or (a suite that requires it) a
        probe no run reached (Rule 9); else it passes (exit 0).
        A baseline entry of a run that ran and was not seen again is ``fixed``; one of a
        run this suite (or ``--quick``) did not run is kept as it is (``not_run``), and
        ``--update-baseline`` keeps it too.
Rule 4. Every finding but an expected or a scenario's residual risk gets a counterexample
        in the replay format (sim/drivers/counterexample.py ``save``; its trace is replayed
        through the pure model here, so the file replays to the hash it records) and a
        sequence diagram of that trace with the records proving it; a failed scenario
        gets one of its run. Traces travel beside the report (``CheckResult.traces``),
        never in it: they are the counterexample files' business.
Rule 5. Each trace travels with its world's chat names (``chat_names``: UUID -> the
        scenario's or the explorer world's name), so the pictures read ``chat-1``, not
        a UUID prefix; the names are the world's, so two runs still draw the same bytes.
Rule 6. One run is a report too (sim/ci/one_run.py ``one_run``): ``toolcall-sim run``,
        ``explore`` and ``replay`` with ``--report DIR`` fold the output of their one job
        (``scenario_output``, ``explore_output``, one_run.py's ``replay_output``, the very
        shapes the suite's jobs return) with no baseline, and the check writers render it
        (sim/cli/commands/check.py ``write_report``): one renderer for a suite and for one
        race. The verdict is the command's own exit code, which the flag never changes;
        the report says which command it is (``one_run``), and a replay's adds its
        outcome (``replay``). A suite's report has neither key.
Rule 7. The design comparison (``[compare]``, sim/ci/compare.py) runs as a job per design
        and world (the explorer) and one per design (swarm seeds, scenarios, long run);
        the fold builds each design's row with ``toolcall_sim.ci.compare.row``, judges each cell
        against the suite's expected verdict (sim/ci/suite.py Rule 4: a design's flaw is
        expected, a verdict that changes fails the run) and keeps, as a file and a
        sequence diagram, each design's flaw (sim/ci/compare.py ``drawn``: the shortest
        explorer counterexample of the property its design section names, else its
        shortest, a new finding before a residual risk); each new finding its row's
        ``split`` lists apart (inherited from today, its own) is kept as a file too, with
        the command that replays it. A design built on today's chatd whose reference is
        not compared gets today's explorer jobs (``references``), and no row for it.
        ``toolcall-sim compare --report`` folds its own data the same way
        (``compare_output``) with no expectations: its exit code is its own.
Rule 8. The detection table (``[detection]``, sim/ci/bugs.py) runs a job per bug x driver
        (and the plain contract, the control row, per driver); the rows are folded in the
        suite's order (drivers x bugs), without their times (report.json stays the same
        bytes). A bug a driver no longer finds from its defaults within its budget fails
        the run, and so does a new finding under the plain contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from toolcall_sim.model import properties as props

from toolcall_sim.io import input_file, json_input
from toolcall_sim.ci import headline
from toolcall_sim.ci import suite as suites
from toolcall_sim.ci.check_jobs import (  # noqa: F401  (the jobs, and names other modules take from here)
    SWARM_CHUNK_SEEDS,
    _file_stem,
    _jobs,
    _kind_of,
    _replayed,
    _worker_init,
    chat_names,
    explore_bounds,
    explore_output,
    finding_id,
    fingerprint,
    job_compare_explore,
    job_compare_runs,
    job_detection,
    job_explore,
    job_planted,
    job_seconds,
    job_scenario,
    job_swarm,
    run_jobs,
    scenario_output,
)

SCHEMA = "toolcall-sim/check/1"
BASELINE_SCHEMA = "toolcall-sim/baseline/1"
STATUSES = ("new", "accepted", "expected", "residual_risk")
# A table cell's levels, the first that applies wins: a violation that is new or accepted,
# one a scenario expects (an old agent's world, a known finding), a residual risk, or a
# property every run of the variant checked and found holding (exhaustively: in an
# explorer run that was exhausted).
CELL_ORDER = ("violated", "expected violation", "residual risk", "holds exhaustively", "holds", "not checked")


class BadBaseline(suites.SuiteError):
    """One line: what is wrong with the baseline file (bad input, exit 2)."""


@dataclass
class Counterexample:
    """A finding's counterexample as ``toolcall_sim.drivers.counterexample.save`` writes it."""

    file: str  # relative to the report folder: counterexamples/<name>.json
    world: dict
    property: str
    residual_risk: str | None
    actions: list
    trace_sha256: str
    driver: str
    detail: str


@dataclass
class CheckResult:
    report: dict  # everything as data: report.json
    counterexamples: list[Counterexample] = field(default_factory=list)
    # figure name -> (trace, evidence indexes, chat UUID -> name) for the pictures
    traces: dict = field(default_factory=dict)
    baseline: dict = field(default_factory=dict)  # the baseline --update-baseline writes
    # Wall time per run (sim/ci/check_jobs.py ``job_seconds``), beside the report, never in
    # it (Rule 1): junit.xml's times, the one output that is not the same bytes twice.
    seconds: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 0 if self.report["verdict"]["ok"] else 1




# ---------------------------------------------------------------------------
# Baseline
# ---------------------------------------------------------------------------


IDENTITY = ("driver", "where", "variant", "property", "residual_risk", "fingerprint")


def load_baseline(path: str | Path | None) -> list[dict]:
    """The accepted findings of a baseline file (Rule 2's identity each); None: none."""
    if path is None:
        return []
    p = Path(path)
    try:  # a regular file of at most 10 MB; no NaN, bounded nesting (issue 32)
        doc = json_input.loads(input_file.read_capped(p, str(p), 10 * input_file.MB, "a baseline file").decode("utf-8"))
    except input_file.InputFileError as err:
        raise BadBaseline(str(err)) from None
    except (UnicodeDecodeError, ValueError) as err:
        raise BadBaseline(f"{p}: not a JSON baseline file: {err}") from None
    if not isinstance(doc, dict) or doc.get("schema") != BASELINE_SCHEMA:
        raise BadBaseline(f"{p}: schema: expected {BASELINE_SCHEMA!r}")
    entries = doc.get("accepted")
    if not isinstance(entries, list):
        raise BadBaseline(f"{p}: accepted: expected a list of findings")
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or any(k not in e for k in IDENTITY):
            raise BadBaseline(f"{p}: accepted[{i}]: expected an object with {', '.join(IDENTITY)}")
        for k in IDENTITY:
            if not (isinstance(e[k], str) or (k == "residual_risk" and e[k] is None)):
                raise BadBaseline(f"{p}: accepted[{i}].{k}: expected a string, got {e[k]!r}")
    return entries


def _entry_id(e: dict) -> str:
    return finding_id(e["driver"], e["where"], e["variant"], e["property"], e["residual_risk"], e["fingerprint"])


def baseline_doc(entries: list[dict]) -> dict:
    return {"schema": BASELINE_SCHEMA, "accepted": sorted(entries, key=_entry_id)}


# ---------------------------------------------------------------------------
# The fold
# ---------------------------------------------------------------------------


def _checked_properties() -> list[str]:
    return [p.name for p in props.PROPERTIES if p.kind in ("always", "eventually")]


def run_check(suite: suites.Suite, *, quick: bool = False, workers: int = 1, baseline: list[dict] | None = None,
              baseline_file: str | None = None, update_baseline: bool = False,
              on_progress: Callable[[int, int, str], None] | None = None, cluster=None) -> CheckResult:
    """Run ``suite`` (its quick part with ``quick``) and judge it against ``baseline``;
    the jobs run on ``workers`` processes or the Dask ``cluster`` (the same report)."""
    part = suite.part(quick)
    outputs = run_jobs(_jobs(part), workers, on_progress, cluster)
    seconds = job_seconds(outputs)  # out of the outputs before the fold: the report reads no clock
    result = fold(suite, part, quick, outputs, baseline or [], baseline_file, update_baseline)
    result.seconds = seconds
    return result


@dataclass
class _Fold:
    """What the fold's steps share: the result being built, the findings in the order the
    outputs gave them, the reasons the run fails (in the order they are found), every
    (driver, where, variant) that ran (which baseline entries could be seen) and each
    (variant, property)'s best "holds" level (the table's cells)."""

    result: CheckResult
    findings: list[dict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    ran: set[tuple[str, str, str]] = field(default_factory=set)
    checked: dict[tuple[str, str], str] = field(default_factory=dict)

    def holds(self, variant: str, level: str) -> None:
        for p in _checked_properties():
            old = self.checked.get((variant, p), "not checked")
            self.checked[(variant, p)] = min(old, level, key=CELL_ORDER.index)


def fold(suite, part, quick, outputs, baseline, baseline_file, accept_all: bool = False) -> CheckResult:
    """The report of the jobs' ``outputs`` (in job order) against ``baseline``; with
    ``accept_all`` (``--update-baseline``) every finding this run sees is accepted. The
    steps below fold one section each, in this order (the order of the reasons, of the
    findings and of the counterexample names depends on it): the runs in job order
    (scenarios, explorer runs, a replay, swarm chunks gathered by run), the swarms, the
    findings' statuses and counterexamples, the table, the planted bugs, the design
    comparison, the detection table, the baseline comparison."""
    state = _Fold(CheckResult(report={}))
    scenarios, explores, planted, replay = [], [], [], None
    swarm_runs: dict[tuple[str, int, int], dict] = {}
    compare_parts: dict[tuple[str, str], list] = {}  # (kind, design) -> outputs, Rule 7
    compare_data, detections = None, []
    for out in outputs:
        kind = out["kind"]
        if kind in ("compare_explore", "compare_runs"):
            compare_parts.setdefault((kind, out["design"]), []).append(out)
        elif kind == "compare":
            compare_data = out["data"]
        elif kind == "detection":
            detections.append(out)
        elif kind == "scenario":
            scenarios.append(_fold_scenario(state, out))
        elif kind == "explore":
            explores.append(_fold_explore(state, out))
        elif kind == "swarm":
            _gather_swarm(swarm_runs, out)
        elif kind == "replay":
            replay = _fold_replay(state, out)
        else:
            planted.append(out)
    swarms = _fold_swarms(state, swarm_runs)
    _judge_findings(state, {_entry_id(e) for e in baseline}, accept_all)
    table = _table(state)
    sweep = None if part.planted is None else _fold_planted(part.planted, planted, state.reasons)
    if part.compare is not None:
        compare_data = _compare_data(part.compare, compare_parts)
    compared = None if compare_data is None else _fold_compare(compare_data, part.compare, state.result,
                                                                state.reasons)
    detected = None if part.detection is None else _fold_detection(part.detection, detections, state.reasons)
    coverage = _fold_coverage(part, outputs, state.reasons)
    fixed, not_run = _against_baseline(state, baseline)

    findings, reasons = state.findings, state.reasons
    counts = {"scenario_runs": len(scenarios), "scenarios_failed": sum(1 for s in scenarios if not s["ok"]),
              "explore_runs": len(explores), "explore_states": sum(e["states"] for e in explores),
              "swarm_seeds": sum(s["seeds"] for s in swarms),
              "findings": {s: sum(1 for f in findings if f["status"] == s) for s in STATUSES},
              "fixed": len(fixed)}
    if sweep is not None:
        counts["planted_caught"] = {d: f"{s['caught']}/{s['swept']}" for d, s in sweep["score"].items()}
    if compared is not None:
        counts["compare_unexpected"] = compared["unexpected"]
    if detected is not None:
        counts["detection_found"] = {d: f"{s['found']}/{s['bugs']}" for d, s in detected["summary"].items()}
    if coverage is not None:
        counts["probes_reached"] = f"{coverage['reached']}/{coverage['declared']}"
        counts["probes_unreached"] = len(coverage["unreached"])
    result = state.result
    result.report = {
        "schema": SCHEMA,
        "suite": {"name": suite.name, "summary": suite.summary, "file": Path(suite.path).name, "quick": quick},
        "verdict": {"ok": not reasons, "exit_code": 1 if reasons else 0, "reasons": reasons},
        "counts": counts,
        # The answer first (sim/ci/headline.py): the headline's clauses, a row of counts
        # per scenario run, and who expects each expected violation.
        "headline": {"subject": headline.headline(scenarios), "runs": headline.counts(scenarios),
                     "expected_by": headline.expected_by(findings)},
        "properties": _checked_properties(),
        "variants": list(table),
        "table": table,
        "findings": findings,
        "scenarios": scenarios,
        "explore": explores,
        "swarm": swarms,
        "planted": sweep,
        **({"compare": compared} if compared is not None else {}),
        **({"detection": detected} if detected is not None else {}),
        **({"coverage": coverage} if coverage is not None else {}),
        "baseline": {"file": Path(baseline_file).name if baseline_file else None, "accepted": len(baseline),
                     "updated": accept_all, "fixed": [dict(e) for e in fixed], "not_run": len(not_run)},
        "residual_risks": {name: text for name, text in sorted(props.RESIDUAL_RISKS.items())},
        "known_findings": {name: text for name, text in sorted(props.KNOWN_FINDINGS.items())},
    }
    if replay is not None:  # only a replay's one-run report has it (Rule 6)
        result.report["replay"] = replay
    keep = [{k: f[k] for k in (*IDENTITY, "detail")} for f in findings if f["status"] in ("accepted", "new")]
    result.baseline = baseline_doc(keep + [dict(e) for e in not_run])
    return result


def _fold_scenario(state: _Fold, out: dict) -> dict:
    """A scenario run's entry; its timeline (and, failed, its sequence diagram) to draw;
    an expectation not met is a reason (Rule 3); its findings join the run's."""
    run = out["run"]
    state.ran.add(("scenario", run.scenario, run.variant))
    state.holds(run.variant, "holds")
    sid = _file_stem(run.scenario, run.variant)
    failed = bool(out["failures"])
    entry = {"id": sid, "scenario": run.scenario, "file": run.shown, "variant": run.variant,
             "ok": not failed, "failures": out["failures"], "trace_sha256": out["trace_sha256"],
             "results": out["results"], "unknown_results": out["unknown_results"],
             "process_starts": out["process_starts"], "sim_ms": out["sim_ms"],
             "committed": [{"t_ms": t, "kind": k} for t, k in out["committed"]],
             "violations": [{"property": f["property"], "residual_risk": f["residual_risk"],
                             "expected": f["expected"]} for f in out["findings"]],
             "timeline": f"figures/timeline-{sid}.svg",
             "sequence": f"figures/sequence-{sid}.svg" if failed else None,
             "reproduce": [f"toolcall-sim run {run.shown} --variant {run.variant}"]}
    state.result.traces[f"timeline-{sid}"] = (out["trace"], [], out["chats"])
    if failed:
        state.result.traces[f"sequence-{sid}"] = (out["trace"], out["evidence"], out["chats"])
        state.reasons.append(f"scenario {run.scenario} under {run.variant}: expectation not met: "
                             + "; ".join(out["failures"]))
    for f in out["findings"]:
        f["reproduce"] = list(entry["reproduce"])
        state.findings.append(f)
    return entry


def _fold_explore(state: _Fold, out: dict) -> dict:
    """An explorer run's entry, with the command that repeats it; its findings join the run's."""
    run = out["run"]
    state.ran.add(("explore", run.name, run.variant))
    state.holds(run.variant, "holds exhaustively" if out["exhausted"] else "holds")
    eid = _file_stem(run.name, run.variant)
    budgets = dict(run.budgets)
    entry = {"id": eid, "name": run.name, "world": run.world, "variant": run.variant, "second": run.second,
             "bounds": {"max_in_flight": run.max_in_flight, "horizon": run.horizon,
                        "max_states": run.max_states, **budgets},
             "states": out["states"], "transitions": out["transitions"], "depth": out["depth"],
             "exhausted": out["exhausted"], "states_per_depth": out["states_per_depth"],
             "violations": [], "depth_chart": f"figures/depth-{eid}.svg",
             "reproduce": [run.command()]}
    for f in out["findings"]:
        entry["violations"].append({"property": f["property"], "residual_risk": f["residual_risk"],
                                    "depth": f["depth"], "finding": f["id"]})
        f["reproduce"] = list(entry["reproduce"])
        state.findings.append(f)
    return entry


def _gather_swarm(swarm_runs: dict, out: dict) -> None:
    """A swarm chunk's outcomes and findings, gathered under its run (variant, first
    seed, seeds); ``_fold_swarms`` folds each run once all its chunks are in."""
    run = out["run"]
    agg = swarm_runs.setdefault((run.variant, run.first_seed, run.seeds), {"run": run, "outcomes": [], "findings": []})
    agg["outcomes"] += out["outcomes"]
    for f in out["findings"]:
        f["reproduce"] = [f"toolcall-sim swarm --seeds 1 --first-seed {f['seed']} --variant {run.variant}"]
        agg["findings"].append(f)


def _fold_replay(state: _Fold, out: dict) -> dict:
    """A replay's one-run section (Rule 6); its findings join the run's, replayed by the
    copy in counterexamples/."""
    rid = _file_stem("replay", Path(out["file"]).stem)
    if out["outcome"] != "does_not_fit":  # a replay that stopped fitting judged nothing
        state.holds(out["variant"], "holds")
    replay = {"file": out["file"], "variant": out["variant"], "outcome": out["outcome"],
              "applied": out["applied"], "steps": out["steps"], "mismatch": out["mismatch"],
              "trace_sha256": out["trace_sha256"], "expected_sha256": out["expected_sha256"],
              "explorer_clock": out["explorer_clock"], "timeline": f"figures/timeline-{rid}.svg",
              "sequence": None if out["findings"] else f"figures/sequence-{rid}.svg",
              "reproduce": [f"toolcall-sim replay {out['file']}"]}
    state.result.traces[f"timeline-{rid}"] = (out["trace"], [], out["chats"])
    if not out["findings"]:
        state.result.traces[f"sequence-{rid}"] = (out["trace"], [], out["chats"])
    if out["findings"]:  # the finding's copy in counterexamples/ is the command that replays it
        replay["reproduce"] = []
    for f in out["findings"]:
        f["reproduce"] = []
        state.findings.append(f)
    return replay


def _fold_swarms(state: _Fold, swarm_runs: dict) -> list[dict]:
    """Each swarm run's entry (sim/drivers/swarm.py ``summarize`` of its outcomes); its findings
    join the run's after every other driver's."""
    from toolcall_sim.drivers import swarm as swarm_driver

    swarms = []
    for (variant, first, seeds), agg in swarm_runs.items():
        for seed in range(first, first + seeds):
            state.ran.add(("swarm", f"seed-{seed}", variant))
        state.holds(variant, "holds")
        summary = swarm_driver.summarize(agg["outcomes"], first, variant)
        wid = _file_stem("swarm", variant, f"{first}-{first + seeds - 1}")
        swarms.append({"id": wid, "variant": variant, "first_seed": first, "seeds": seeds,
                       "residual_risks": summary["residual_risks"], "known_findings": summary["known_findings"],
                       "results": summary["results"], "unknown_results": summary["unknown_results"],
                       "unknown_rate": summary["unknown_rate"], "sim_hours": summary["sim_hours"],
                       "failures": [f["id"] for f in agg["findings"]],
                       "reproduce": [f"toolcall-sim swarm --seeds {seeds} --first-seed {first} --variant {variant}"]})
        state.findings += agg["findings"]
    return swarms


def _judge_findings(state: _Fold, accepted: set[str], accept_all: bool) -> None:
    """Rule 2: each finding's status (a new one is a reason); Rule 4: its counterexample
    file and picture, named in the order the findings came (a clash gets ``_``); then
    the findings in the report's order."""
    names: set[str] = set()
    result = state.result
    for f in state.findings:
        if f["class"] in ("residual_risk", "known_finding"):
            # A known finding about the contract (model/properties/risks.py
            # KNOWN_FINDINGS) is named and listed with the residual risks, never new: as
            # the swarm and the search report it.
            f["status"] = "residual_risk"
        elif f.get("expected"):
            f["status"] = "expected"
        else:
            f["status"] = "accepted" if f["id"] in accepted or accept_all else "new"
        f.pop("expected", None)
        f["counterexample"] = f["sequence"] = None
        if "_world" in f:
            stem = _file_stem(f["driver"], f["where"], f["variant"], f["property"], f["residual_risk"] or "")
            while stem in names:
                stem += "_"
            names.add(stem)
            f["counterexample"] = f"counterexamples/{stem}.json"
            f["sequence"] = f"figures/sequence-{stem}.svg"
            f["reproduce"].append(f"toolcall-sim replay {f['counterexample']}")
            result.counterexamples.append(Counterexample(f["counterexample"], f.pop("_world"), f["property"],
                                                         f["residual_risk"], f.pop("_actions"),
                                                         f.pop("trace_sha256"), f["driver"], f["detail"]))
            result.traces[f"sequence-{stem}"] = (f.pop("trace"), f.pop("evidence"), f.pop("chats"))
        if f["status"] == "new":
            state.reasons.append(f"new finding: {f['property']} under {f['variant']} ({f['driver']} {f['where']}): "
                                 f"{f['detail']}")
    state.findings.sort(key=lambda f: (STATUSES.index(f["status"]), f["driver"], f["where"], f["variant"],
                                       f["property"], f["residual_risk"] or ""))


def _table(state: _Fold) -> dict[str, dict[str, str]]:
    """The table: variants x properties, the contract and today first; a cell is its
    best "holds" level unless a finding's status (Rule 2) says worse."""
    table: dict[str, dict[str, str]] = {}
    variants = sorted({v for v, _ in state.checked}, key=lambda v: (v != "contract", v != "today", v))
    for variant in variants:
        row = table.setdefault(variant, {})
        for p in _checked_properties():
            row[p] = state.checked.get((variant, p), "not checked")
    for f in state.findings:
        level = {"residual_risk": "residual risk", "expected": "expected violation"}.get(f["status"], "violated")
        row = table.setdefault(f["variant"], {p: "not checked" for p in _checked_properties()})
        if f["property"] in row:
            row[f["property"]] = min(row[f["property"]], level, key=CELL_ORDER.index)
    return table


def _fold_planted(section, outputs: list[dict], reasons: list[str]) -> dict:
    """The planted-bug sweep: each bug by each named driver, and a mutation score per
    driver; a bug a driver no longer catches is a reason (Rule 3)."""
    bugs: dict[str, dict] = {}
    for out in outputs:
        b = bugs.setdefault(out["bug"], {"bug": out["bug"], "variant": f"contract+{out['bug']}",
                                         "caught_by": out["caught_by"], "drivers": {}})
        b["drivers"][out["driver"]] = {"caught": out["caught"], "where": out["where"], "detail": out["detail"]}
        if not out["caught"]:
            reasons.append(f"planted bug {out['bug']} is no longer caught by {out['driver']} ({out['where']})")
    score = {d: {"caught": sum(1 for b in bugs.values() if b["drivers"][d]["caught"]), "swept": len(bugs)}
             for d in section.drivers}
    return {"drivers": list(section.drivers), "bugs": [bugs[b.name] for b in section.bugs], "score": score}


def _against_baseline(state: _Fold, baseline: list[dict]) -> tuple[list[dict], list[dict]]:
    """Rule 3: the baseline entries of runs that ran and were not seen again (``fixed``,
    sorted) and those of runs this suite did not run (``not_run``, kept as they are)."""
    seen = {f["id"] for f in state.findings if f["status"] in ("accepted", "new")}
    fixed = [e for e in baseline if _entry_id(e) not in seen and (e["driver"], e["where"], e["variant"]) in state.ran]
    not_run = [e for e in baseline if (e["driver"], e["where"], e["variant"]) not in state.ran]
    fixed.sort(key=_entry_id)
    return fixed, not_run


# ---------------------------------------------------------------------------
# The design comparison (Rule 7) and the detection table (Rule 8)
# ---------------------------------------------------------------------------


def _compare_data(section: suites.Compare, parts: dict) -> dict:
    """sim/ci/compare.py's data from the suite's compare jobs, in the suite's order."""
    from toolcall_sim.ci import compare as cmp

    rows = []
    for design in section.designs:
        explored = [o["explored"] for o in parts[("compare_explore", design)]]
        (runs,) = parts[("compare_runs", design)]
        ref = cmp.reference_of(design)  # explored by a job of its own when not compared (check_jobs._jobs)
        reference = None if ref is None else [o["explored"] for o in parts[("compare_explore", ref)]]
        rows.append(cmp.row(design, explored, runs["swarm"], runs["scenarios"], runs["long"], reference))
    return cmp.data(rows, [cmp.world_named(w) for w in section.worlds], section.seeds, section.first_seed)


def compare_output(data: dict, files: dict[str, tuple[dict, list]]) -> dict:
    """``toolcall-sim compare --report``'s one job output (Rule 6, Rule 7): its data, each
    explorer violation with the world and actions of the counterexample file it saved
    (``files``: that file's path as the data names it -> (world spec, actions))."""
    for row in data["rows"]:
        for w in row["explorer"]:
            for v in w["violations"]:
                if v.get("file") in files:
                    v["_world"], v["_actions"] = files[v["file"]]
    return {"kind": "compare", "data": data}


def _fold_compare(data: dict, section: suites.Compare | None, result: CheckResult, reasons: list[str]) -> dict:
    """Rule 7: the matrix judged against ``section``'s expectations (None: no judgment);
    each design's flaw (else its shortest counterexample) saved and drawn, and every
    new finding its split lists (inherited from today, its own) saved beside it with
    the command that replays it; no path outside the report."""
    from toolcall_sim.ci import compare as cmp

    unexpected = 0
    for row in data["rows"]:
        design = row["design"]
        pick = cmp.drawn(row)
        split = row["split"]
        listed = [*split["inherited"], *split["own"]]
        keep = {(x["world"], x["property"]) for x in listed}
        saved: dict[tuple, str] = {}  # (world, property, residual risk) -> file in the report
        row["counterexample"] = row["sequence"] = None
        for w in row["explorer"]:
            for v in w["violations"]:
                world, actions = v.pop("_world", None), v.pop("_actions", None)
                v["file"] = None
                chosen = pick is not None and v is pick[1]
                listed_here = v["residual_risk"] is None and (w["world"], v["property"]) in keep
                if actions is None or not (chosen or listed_here):
                    continue
                stem = _file_stem("compare", design, w["world"], v["property"], v["residual_risk"] or "")
                v["file"] = f"counterexamples/{stem}.json"
                saved[(w["world"], v["property"], v["residual_risk"])] = v["file"]
                replayed = _replayed(world, actions, v["property"], v["residual_risk"])
                result.counterexamples.append(Counterexample(v["file"], world, v["property"], v["residual_risk"],
                                                             actions, replayed["trace_sha256"], "compare",
                                                             v["detail"]))
                if not chosen:
                    continue
                result.traces[f"sequence-{stem}"] = (replayed["trace"], replayed["evidence"], replayed["chats"])
                row["counterexample"] = {"file": v["file"], "world": w["world"], "property": v["property"],
                                         "residual_risk": v["residual_risk"], "steps": v["steps"],
                                         "detail": v["detail"], "reproduce": [f"toolcall-sim replay {v['file']}"],
                                         "role": pick[2]}
                row["sequence"] = f"figures/sequence-{stem}.svg"
        flaw = split["flaw"]
        for x in listed + ([flaw["counterexample"]] if flaw is not None and flaw["counterexample"] else []):
            x["file"] = saved.get((x["world"], x["property"], None))
            x["reproduce"] = [f"toolcall-sim replay {x['file']}"] if x["file"] else []
        for prop, cell in row["matrix"].items():
            if "file" in cell:  # the cell's counterexample, saved when drawn or listed in the split
                cell["file"] = saved.get((cell["where"].removeprefix("explorer "), prop, None))
            if section is None:
                cell["expected"], cell["as_expected"] = None, None
                continue
            expected = section.expected(design, prop)
            ok = cell["verdict"] == expected or (expected == "holds" and cell["verdict"] == "holds_exhaustively")
            cell["expected"], cell["as_expected"] = expected, ok
            if not ok:
                unexpected += 1
                reasons.append(f"design {design}: {prop} is {cell['verdict'].replace('_', ' ')}, expected "
                               f"{expected.replace('_', ' ')} (the suite's compare.expect.{design})")
    return {**data, "judged": section is not None, "unexpected": unexpected}


def _fold_detection(section: suites.Detection, outputs: list[dict], reasons: list[str]) -> dict:
    """Rule 8: the table in the suite's order (drivers x bugs, the control last)."""
    from toolcall_sim.ci import bugs

    by = {(o["driver"], o["bug"]): o for o in outputs}
    names = [*section.bugs, *([bugs.CONTROL] if section.control else [])]
    rows, summary = [], {}
    for driver in section.drivers:
        mine = []
        for bug in names:
            o = {k: v for k, v in by[(driver, bug)].items() if k != "kind"}
            o["control"] = bug == bugs.CONTROL
            rows.append(o)
            mine.append(o)
            if o["control"] and o["found"]:
                reasons.append(f"the plain contract has a new finding under {driver}'s default settings: "
                               f"{o['violated']} ({o['where']})")
            elif not o["control"] and not o["found"]:
                reasons.append(f"planted bug {bug} is no longer caught by {driver} from its default settings "
                               f"(within {o['budget']} {o['unit']})")
        found = [o for o in mine if not o["control"]]
        clean = [o for o in mine if o["control"]]
        summary[driver] = {"found": sum(o["found"] for o in found), "bugs": len(found),
                           "missed": [o["bug"] for o in found if not o["found"]],
                           "contract_clean": None if not clean else not clean[0]["found"]}
    return {"drivers": list(section.drivers), "budgets": dict(section.budgets),
            "units": {d: bugs.UNITS[d] for d in section.drivers}, "swarm_starts": list(bugs.SWARM_STARTS),
            "control": section.control, "rows": rows, "summary": summary}


# ---------------------------------------------------------------------------
# Rule coverage (Rule 9)
# ---------------------------------------------------------------------------


def _fold_coverage(part, outputs: list[dict], reasons: list[str]) -> dict | None:
    """Rule 9: the probes this run's scenario, explorer and swarm jobs reached
    (sim/drivers/coverage.py ``coverage_table``); None when none of them ran. With the
    suite's ``[coverage] require``, each unreached probe model/probes.py does not list is
    a reason, and so is a probe hit that PROBES does not declare."""
    from toolcall_sim.drivers import coverage as cov

    counts = cov.Coverage()
    cov.add_check_outputs(counts, outputs)
    if not counts.hits:
        return None
    table = cov.coverage_table(counts)
    table["required"] = part.require_coverage
    if part.require_coverage:
        rows = {r["probe"]: r for r in table["probes"]}
        if table["unreached"]:
            reasons.append(f"rule coverage: {len(table['unreached'])} probe(s) reached by no run under a variant "
                           "where their branch exists, not listed in model/probes.py UNREACHABLE: " + ", ".join(
                               f"{pid} ({'/'.join(rows[pid]['unreached_in'])})" for pid in table["unreached"]))
        if table["undeclared_hits"]:
            reasons.append("rule coverage: probes hit that model/probes.py PROBES does not declare: "
                           + ", ".join(table["undeclared_hits"]))
    return table
