"""One run's report: ``toolcall-sim run``, ``explore``, ``replay`` and ``compare`` with
``--report DIR`` write the page a suite gets, about their one run.

Theory of operation
-------------------
A command that ran one job (a scenario run, an explorer search, a replayed file, the
design comparison) shapes what it found as the suite's job of that kind returns it
(sim/ci/check_jobs.py ``scenario_output`` and ``explore_output``, sim/ci/check.py
``compare_output``, and ``replay_output`` here: a replayed counterexample or trace, its
finding when it reproduced, the trace it replays to either way), and ``one_run`` folds
that one output with sim/ci/check.py's ``fold``, as a suite of nothing else with no
baseline, so one renderer (sim/cli/commands/check.py) draws a suite and a race alike
(sim/ci/check.py Rule 6).

What one run's report changes in the folded report: the verdict is the command's own
exit code and reasons (the ``--report`` flag never changes the exit code, and the page
never says otherwise); a scenario always gets its sequence diagram (the race is what the
run is about); the command that reproduces an entry is the one that ran (a ``--seed``, a
``--stop-at-first``), not the fold's default; the report names its command
(``one_run``); and it has no rule coverage section (one race is not about the contract's
rules). The run's wall time travels beside the report, for junit.xml alone
(sim/ci/check.py Rule 1).

Its own module because the suite never runs it: only the commands do. It imports the
fold; sim/ci/check.py never imports it (issue 33: no import circle).
"""

from __future__ import annotations

from pathlib import Path

from toolcall_sim.ci import suite as suites
from toolcall_sim.ci.check import CheckResult, fold
from toolcall_sim.ci.check_jobs import _finding, _replayed, chat_names, job_seconds


def replay_output(file: str, world: dict, actions: list, config, replayed, every: bool = False) -> dict:
    """The output of one replayed counterexample or trace (``toolcall_sim.drivers.counterexample.replay``'s
    ``Replayed``), shaped as the jobs' outputs are: a finding when it reproduced (with
    the records that prove it), and the trace it replays to either way. ``every``: a
    finding per violation (a recorded trace names no property), else the file's own."""
    from toolcall_sim.drivers.counterexample import explore_trace
    from toolcall_sim.world.replay import trace_sha256

    variant = str(world.get("variant") or "contract")
    explorer_clock = world.get("kind") == "explore"
    findings = []
    if replayed.outcome == "reproduced":
        wanted = (replayed.property, replayed.residual_risk)
        seen: dict[tuple, object] = {}
        for v in replayed.violations:
            if every or (v.property, v.residual_risk) == wanted:
                seen.setdefault((v.property, v.residual_risk), v)
        for (prop, risk), v in sorted(seen.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            f = _finding("replay", Path(file).stem, variant, prop, risk, v.detail, world, actions,
                         {"explorer_clock": explorer_clock})
            f.update(_replayed(world, actions, prop, risk, config))
            findings.append(f)
    trace, _ = explore_trace(config, actions)
    return {"kind": "replay", "file": file, "variant": variant, "outcome": replayed.outcome,
            "applied": replayed.applied, "steps": replayed.steps, "mismatch": replayed.mismatch,
            "trace_sha256": trace_sha256(trace), "expected_sha256": replayed.expected_sha256,
            "explorer_clock": explorer_clock, "trace": trace, "chats": chat_names(config), "findings": findings}


def one_run(command: str, title: str, name: str, output: dict, exit_code: int, reasons: list[str] | None = None,
            reproduce: tuple[str, str] | None = None, seconds: float = 0.0) -> CheckResult:
    """The report of one job ``output`` (``scenario_output``, ``explore_output``,
    ``replay_output``; sim/ci/check.py Rule 6), folded as a suite's are, so the same
    writers render it. There is
    no baseline: the verdict is the command's own (its ``exit_code``, and ``reasons``, by
    default the fold's), so the page never says other than the exit code.
    ``reproduce``: (the command the fold writes, the one that ran) when they differ (a
    ``--seed``, ``--stop-at-first``). ``seconds``: the run's wall time, for junit.xml
    alone (``CheckResult.seconds``, sim/ci/check.py Rule 1)."""
    suite = suites.Suite(name, "", name, (), (), (), None)
    result = fold(suite, suite, False, [output], [], None)
    result.seconds = job_seconds([{**output, "_seconds": seconds}])
    report = result.report
    for x in report["scenarios"]:  # one run always gets its sequence diagram: the race is what it is about
        if x["sequence"] is None:
            trace, _, names = result.traces[f"timeline-{x['id']}"]
            x["sequence"] = f"figures/sequence-{x['id']}.svg"
            result.traces[f"sequence-{x['id']}"] = (trace, output["evidence"], names)
    if reproduce is not None:
        default, actual = reproduce
        for entry in (*report["scenarios"], *report["explore"], *report["findings"]):
            entry["reproduce"] = [actual if c == default else c for c in entry["reproduce"]]
    if reasons is None:
        reasons = report["verdict"]["reasons"] if exit_code else []
    report["verdict"] = {"ok": exit_code == 0, "exit_code": exit_code, "reasons": list(reasons)}
    report["one_run"] = {"command": command, "title": title}
    # One run is about one race, not the contract's rules: no coverage section (sim/ci/check.py Rule 9).
    report.pop("coverage", None)
    counts = report["counts"]
    counts.pop("probes_reached", None)
    counts.pop("probes_unreached", None)
    return result
