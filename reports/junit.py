"""``junit.xml`` of ``toolcall-sim check``: the report as the JUnit XML that CI tools read.

Theory of operation
-------------------
The common JUnit schema CI tools expect (Jenkins, GitLab, GitHub test reporters):
``<testsuites>`` holding one ``<testsuite name tests failures errors skipped time>`` per
driver, each holding ``<testcase classname name time>``s; a failing case holds one
``<failure message type>`` whose text is the violation, its evidence (the finding's
detail and counterexample) and the commands that reproduce it. The cases:

- ``scenarios``: one per scenario x variant; fails when its expectation is not met, or
  when it shows a new finding;
- ``explore``: one per property x explorer run (world entry x variant); fails on a new
  finding of that property there;
- ``swarm``: one per property x swarm window x variant; fails on a new finding;
- ``planted``: one per planted bug x driver; fails when the driver no longer catches it;
- ``compare``: one per design x property of a judged design comparison; fails when the
  verdict is not the one the suite expects (a design's expected flaw passes);
- ``detection``: one per planted bug x driver of the detection table (and the plain
  contract per driver); fails when the driver no longer finds the bug from its defaults
  within its budget, or finds something under the plain contract;
- ``coverage``: one per declared probe (model/probes.py); fails when a suite that
  requires coverage reached it under no variant where its branch exists and
  ``UNREACHABLE`` does not list it.

An accepted finding, an expected violation and a residual risk pass, and say so in the
case's ``<system-out>``. A failure's ``message`` names every finding and unmet
expectation of its case, not only the first (a CI tool's list of failures shows the
message alone); its text adds each one's evidence and reproduce commands.

Times are wall seconds, measured apart from the report (sim/ci/check_jobs.py
``job_seconds``): a scenario or planted-bug or detection case gets its run's time; the
cases of one explorer run, one swarm window or one design share its time evenly, since
one search or one run checks all their properties at once (so a suite's cases add up to
the time its jobs took); a coverage case, counted from the other runs, takes 0. A test
suite's time is the sum of its cases'. This makes junit.xml the one file of a report that
differs from run to run; ``report.json``, ``summary.md``, ``index.html`` and the pictures
read no clock. Without times (``seconds`` None) every time is 0.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

FAILURE_TYPE = {"scenario": "ExpectationNotMet", "finding": "NewFinding", "planted": "PlantedBugMissed",
                "compare": "VerdictChanged", "detection": "PlantedBugMissed", "control": "NewFinding",
                "coverage": "RuleUnreached"}


def _time(seconds: float) -> str:
    """A ``time`` attribute: seconds with millisecond resolution."""
    return f"{seconds:.3f}" if seconds else "0"


def _case(suite: ET.Element, classname: str, name: str, failure: tuple[str, str, str] | None = None,
          out: list[str] = (), seconds: float = 0.0) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time=_time(seconds))
    if failure is not None:
        message, kind, text = failure
        ET.SubElement(case, "failure", message=message, type=kind).text = text
    if out:
        ET.SubElement(case, "system-out").text = "\n".join(out)


def _finding_text(f: dict) -> str:
    lines = [f"{f['property']} under {f['variant']} in {f['driver']} {f['where']}: {f['detail']}",
             f"finding {f['id']} ({f['steps']} steps)"]
    if f.get("counterexample"):
        lines.append(f"counterexample: {f['counterexample']}")
    lines += [f"reproduce: {cmd}" for cmd in f["reproduce"]]
    return "\n".join(lines)


def _note(f: dict) -> str:
    what = {"accepted": "accepted in the baseline", "expected": "expected by the scenario",
            "residual_risk": ("known finding" if f.get("class") == "known_finding" else "residual risk")
            + f" {f['residual_risk']}"}[f["status"]]
    return f"{f['property']}: {what}: {f['detail']}"


def _named(f: dict) -> str:
    """A new finding in a failure's message: its property, where, and its detail."""
    return f"{f['property']} ({f['driver']} {f['where']}): {f['detail']}"


def junit(report: dict, seconds: dict | None = None) -> str:
    """The whole of junit.xml; ``seconds``: each run's wall time (``CheckResult.seconds``)."""
    took = seconds or {}
    n_props = max(1, len(report["properties"]))
    one = report.get("one_run")
    name = f"toolcall-sim {one['command']} {one['title']}" if one else f"toolcall-sim check {report['suite']['name']}"
    root = ET.Element("testsuites", name=name)
    findings = report["findings"]

    def of(driver: str, where: str, variant: str) -> list[dict]:
        return [f for f in findings if (f["driver"], f["where"], f["variant"]) == (driver, where, variant)]

    suites = []
    s = ET.Element("testsuite", name="scenarios")
    for x in report["scenarios"]:
        mine = of("scenario", x["scenario"], x["variant"])
        new = [f for f in mine if f["status"] == "new"]
        failure = None
        if x["failures"] or new:
            text = [f"expectation not met: {r}" for r in x["failures"]] + [_finding_text(f) for f in new]
            text += [f"reproduce: {cmd}" for cmd in x["reproduce"]]
            said = [f"expectation not met: {r}" for r in x["failures"]]
            if new:
                said.append(f"{len(new)} new finding(s): " + "; ".join(_named(f) for f in new))
            failure = ("; ".join(said), FAILURE_TYPE["scenario"], "\n".join(text))
        _case(s, f"scenarios.{x['scenario']}", x["variant"], failure, [_note(f) for f in mine if f["status"] != "new"],
              took.get(("scenario", x["scenario"], x["variant"]), 0.0))
    suites.append(s)

    s = ET.Element("testsuite", name="explore")
    for x in report["explore"]:
        mine = of("explore", x["name"], x["variant"])
        share = took.get(("explore", x["name"], x["variant"]), 0.0) / n_props
        for p in report["properties"]:
            _property_case(s, f"explore.{x['name']}.{x['variant']}", p, [f for f in mine if f["property"] == p],
                           share)
    suites.append(s)

    s = ET.Element("testsuite", name="swarm")
    for x in report["swarm"]:
        last = x["first_seed"] + x["seeds"] - 1
        mine = [f for f in findings if f["driver"] == "swarm" and f["variant"] == x["variant"]
                and x["first_seed"] <= f["seed"] <= last]
        share = took.get(("swarm", x["variant"], x["first_seed"], x["seeds"]), 0.0) / n_props
        for p in report["properties"]:
            _property_case(s, f"swarm.{x['variant']}.seeds-{x['first_seed']}-{last}", p,
                           [f for f in mine if f["property"] == p], share)
    suites.append(s)

    if report["planted"] is not None:
        s = ET.Element("testsuite", name="planted")
        for b in report["planted"]["bugs"]:
            for d in report["planted"]["drivers"]:
                r = b["drivers"][d]
                failure = None
                if not r["caught"]:
                    failure = (f"{b['bug']} no longer caught by {d}", FAILURE_TYPE["planted"],
                               f"{b['caught_by']} should catch {b['variant']} in {d} {r['where']}: {r['detail']}")
                _case(s, f"planted.{d}", b["bug"], failure,
                      [f"caught: {b['caught_by']} in {r['where']}: {r['detail']}"] if r["caught"] else [],
                      took.get(("planted", d, b["bug"]), 0.0))
        suites.append(s)

    compared = report.get("compare")
    if compared is not None and compared["judged"]:
        from .check_markdown import VERDICT_WORDS, compare_cell

        s = ET.Element("testsuite", name="compare")
        for row in compared["rows"]:
            share = took.get(("compare", row["design"]), 0.0) / max(1, len(compared["properties"]))
            for p in compared["properties"]:
                cell = row["matrix"][p]
                failure = None
                if not cell["as_expected"]:
                    failure = (f"{row['design']} {p}: {VERDICT_WORDS[cell['verdict']]}, expected "
                               f"{VERDICT_WORDS[cell['expected']]}", FAILURE_TYPE["compare"],
                               f"{compare_cell(cell)}\nexpected by the suite's compare.expect.{row['design']}")
                _case(s, f"compare.{row['design']}", p, failure, [f"{VERDICT_WORDS[cell['verdict']]}: "
                                                                  f"{compare_cell(cell)}"], share)
        suites.append(s)
    detected = report.get("detection")
    if detected is not None:
        from .check_markdown import detection_cell

        s = ET.Element("testsuite", name="detection")
        for row in detected["rows"]:
            failure = None
            if row["control"] and row["found"]:
                failure = (f"the plain contract has a new finding under {row['driver']}", FAILURE_TYPE["control"],
                           f"{row['violated']} ({row['where']}, {row['length']})")
            elif not row["control"] and not row["found"]:
                failure = (f"{row['bug']} no longer found by {row['driver']} from its defaults",
                           FAILURE_TYPE["detection"], f"not found within {row['budget']} {row['unit']}")
            _case(s, f"detection.{row['driver']}", row["bug"], failure,
                  [] if failure else [detection_cell(row).replace("**", "") + (f" ({row['where']})" if row["where"]
                                                                               else "")],
                  took.get(("detection", row["driver"], row["bug"]), 0.0))
        suites.append(s)
    coverage = report.get("coverage")
    if coverage is not None:
        s = ET.Element("testsuite", name="coverage")
        failing = set(coverage["unreached"]) if coverage["required"] else set()
        for r in coverage["probes"]:
            failure = None
            if r["probe"] in failing:
                failure = (f"probe {r['probe']} reached by no run under {'/'.join(r['unreached_in'])}",
                           FAILURE_TYPE["coverage"], f"{r['rule']}: {r['branch']}; not listed in model/probes.py "
                                                     "UNREACHABLE")
            elif r["unreached_in"]:
                note = r["unreachable"] or "not required by this suite"
                out = [f"unreached under {'/'.join(r['unreached_in'])}: {note}"]
            else:
                out = ["reached"]
            _case(s, f"coverage.{r['rule']}", r["probe"], failure, [] if failure else out)
        suites.append(s)

    for s in suites:
        cases = s.findall("testcase")
        s.set("tests", str(len(cases)))
        s.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        s.set("errors", "0")
        s.set("skipped", "0")
        # the sum of the times as written, so a reader that adds the cases gets the suite's
        s.set("time", _time(sum(float(c.get("time")) for c in cases)))
        root.append(s)
    root.set("tests", str(sum(int(s.get("tests")) for s in suites)))
    root.set("failures", str(sum(int(s.get("failures")) for s in suites)))
    root.set("errors", "0")
    root.set("time", _time(sum(float(s.get("time")) for s in suites)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _property_case(s: ET.Element, classname: str, prop: str, mine: list[dict], seconds: float = 0.0) -> None:
    new = [f for f in mine if f["status"] == "new"]
    failure = None
    if len(new) == 1:
        failure = (f"new finding: {prop}: {new[0]['detail']}", FAILURE_TYPE["finding"], _finding_text(new[0]))
    elif new:
        failure = (f"{len(new)} new findings of {prop}: " + "; ".join(f"{f['where']}: {f['detail']}" for f in new),
                   FAILURE_TYPE["finding"], "\n\n".join(_finding_text(f) for f in new))
    _case(s, classname, prop, failure, [_note(f) for f in mine if f["status"] != "new"], seconds)
