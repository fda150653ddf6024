"""``summary.md`` of ``toolcall-sim check``, and the few lines it prints on a terminal.

Theory of operation
-------------------
sim/ci/check.py hands over the report as data (``report.json``'s document); this module
writes it as GitHub-flavoured Markdown that fits a CI job summary. The answer comes
first: the headline in words (``headline_text``: what became of the tool calls of the
incident, or of a report's one scenario, from sim/ci/headline.py's data), the verdict and
why, a row of counts per scenario run (``counts_table``); then the suite's counts, a table of properties x variants (one cell per pair: holds, holds
exhaustively, residual risk, violated, violated as the named scenarios expect (never
worded or coloured as a failure), not checked), what is new against the baseline,
every finding with the commands that reproduce it, what the baseline lists that is gone,
the planted-bug sweep with its mutation score per driver, the design comparison (a
design x property matrix, each cell judged against the suite's expected verdict, the
costs, each design's flaw with its counterexample apart from what it inherits from
today's chatd), the detection table (every planted bug through each driver from its
default settings), the rule coverage section (reports/coverage.py ``coverage_markdown``:
unreached probes first) and, with ``--coder PATH``, the Go drift section
(reports/drift.py ``drift_markdown``: the counts and the rules whose Go code changed;
informational). Commands name files
relative to the report folder (``toolcall-sim replay counterexamples/X.json`` run from
it), so the text is the same wherever the report was written.

Under ``--quick`` the line under the title says what the quick part ran (``ran_text``,
counted from the report's sections), then the suite's own summary as the whole suite's.

GitHub shows at most 1 MiB of a job's step summary, and CI appends ``summary.md`` to it:
a summary over ``SUMMARY_LIMIT_BYTES`` of UTF-8 is ``trimmed``: at most
``REASONS_WHEN_TRIMMED`` reasons listed, a line over ``LINE_LIMIT_BYTES`` cut, then the
lines in their order until the budget ends (the headline, the counts, the properties
table and what is new come first), an open ``<details>`` closed, and a last line that
says it was trimmed and points to ``index.html`` and ``report.json``. It depends on the
report alone, so the same report gives the same bytes.

One run's report (``toolcall-sim run|explore|replay --report DIR``, sim/ci/check.py Rule 6)
is the same document with ``one_run`` (which command, about what) and, for a replay,
``replay``: ``title`` and ``pass_text`` name the command instead of the suite, and there
is no baseline to be new against, so its findings are listed as found.
"""

from __future__ import annotations

CELL = {
    "holds": "holds",
    "holds exhaustively": "holds exhaustively",
    "residual risk": "residual risk",
    "violated": "**violated**",
    "expected violation": "violated, as expected",
    "not checked": "-",
}
LEGEND = ("holds: no run of the variant violated it; holds exhaustively: and an explorer search that checked it "
          "ended exhausted; residual risk: only documented residual risks (docs/contract.md D7); violated, as expected: "
          "the scenarios named in the cell expect it in their [expect.<variant>] (today's chatd reproducing the "
          "incident, an old agent's world, a known finding): an expectation met, not a failure; violated: a "
          "finding accepted in the baseline or new.")
STATUS = {"new": "NEW", "accepted": "accepted (baseline)", "expected": "expected (scenario)",
          "residual_risk": "residual risk"}


PASS_TEXT = {
    "check": "nothing new against the baseline, every expectation met, every planted bug caught",
    "run": "every expectation of the scenario met",
    "explore": "no violation but documented residual risks and known findings",
    "replay": "the violation no longer reproduces: every action applied and the trace is clean of it",
    "compare": "the contract shows nothing but documented residual risks and known findings",
}


def title(report: dict) -> str:
    """The page's title: the suite's, or the one run's (its command and what it ran)."""
    one = report.get("one_run")
    if one is not None:
        return f"toolcall-sim {one['command']}: {one['title']}"
    s = report["suite"]
    return f"toolcall-sim check: {s['name']}" + (" (quick)" if s["quick"] else "")


def _grouped(pairs: list[tuple[str, str]]) -> str:
    """``[(name, variant), ...]`` as ``name (v1, v2), other (v1)``, in the report's order."""
    by: dict[str, list[str]] = {}
    for name, variant in pairs:
        by.setdefault(name, []).append(variant)
    return ", ".join(f"{name} ({', '.join(vs)})" for name, vs in by.items())


def ran_text(report: dict) -> str:
    """What this run ran, counted from the report's own sections (so it is what ran, not
    what the suite file says the whole suite is): said under ``--quick``, where the
    suite's summary describes more than the quick part ran."""
    parts = []
    scenarios = report["scenarios"]
    if scenarios:
        files = len({x["scenario"] for x in scenarios})
        parts.append(f"{len(scenarios)} scenario run(s) of {files} scenario file(s)")
    if report["explore"]:
        parts.append("the explorer on " + _grouped([(x["name"], x["variant"]) for x in report["explore"]]))
    for x in report["swarm"]:
        parts.append(f"{x['seeds']} swarm seed(s) under {x['variant']} from seed {x['first_seed']}")
    if report["planted"] is not None:
        parts.append(f"{len(report['planted']['bugs'])} planted bug(s) by {', '.join(report['planted']['drivers'])}")
    if report.get("compare") is not None:
        parts.append(f"the design comparison of {', '.join(report['compare']['designs'])}")
    if report.get("detection") is not None:
        parts.append(f"the detection table by {', '.join(report['detection']['drivers'])}")
    return "; ".join(parts) or "nothing"


def description(report: dict) -> str:
    """The line under the title: the suite's summary, and under ``--quick`` what the
    quick part ran first (the summary describes the whole suite)."""
    s = report["suite"]
    if not s["quick"]:
        return s["summary"]
    whole = f" The whole suite: {s['summary']}" if s["summary"] else ""
    return f"Quick part (--quick) of the suite; it ran {ran_text(report)}.{whole}"


def pass_text(report: dict) -> str:
    """What a passing verdict means for this report's command."""
    return PASS_TEXT[report.get("one_run", {}).get("command", "check")]


def replay_lines(report: dict) -> list[str]:
    """A replay's outcome in words (a replay's one-run report only)."""
    r = report["replay"]
    out = [f"Replayed `{r['file']}` under `{r['variant']}`: {r['outcome'].replace('_', ' ')}; "
           f"{r['applied']}/{r['steps']} actions applied."]
    if r["mismatch"]:
        out.append(f"It stopped fitting at {_cell(r['mismatch'])}, so it says nothing about the violation.")
    same = "the same as" if r["expected_sha256"] == r["trace_sha256"] else "unlike"
    out.append(f"Trace sha256 `{r['trace_sha256']}`, {same} the one the file records.")
    return out


def _cell(text: str) -> str:
    """A value in a table cell: pipes escaped, on one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def expected_where(report: dict, variant: str, prop: str) -> str:
    """Who expects a violation the table marks expected: the scenarios whose
    ``[expect.<variant>]`` names it (sim/ci/headline.py Rule 4), at most three by name."""
    names = report.get("headline", {}).get("expected_by", {}).get(variant, {}).get(prop, [])
    if not names:
        return ""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"expected by the [expect.{variant}] of {shown}"


def table_cell(report: dict, variant: str, prop: str) -> str:
    """A properties-table cell in words; an expected violation says who expects it."""
    level = report["table"][variant][prop]
    who = expected_where(report, variant, prop) if level == "expected violation" else ""
    return f"violated, {who}" if who else CELL[level]


def table(report: dict) -> list[str]:
    """The properties x variants table (GFM)."""
    variants = report["variants"]
    lines = ["| property | " + " | ".join(f"`{v}`" for v in variants) + " |",
             "|---|" + "---|" * len(variants)]
    for p in report["properties"]:
        lines.append(f"| `{p}` | " + " | ".join(_cell(table_cell(report, v, p)) for v in variants) + " |")
    return lines


def duration(ms: int) -> str:
    """Simulated time in the headline's words: hours from an hour on, else minutes or seconds."""
    if ms >= 3_600_000:
        return f"{round(ms / 3_600_000, 1):g} h"
    if ms >= 60_000:
        return f"{round(ms / 60_000, 1):g} min"
    return f"{round(ms / 1000, 1):g} s"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


COMMITTED_SHOWN = 3  # a clause names this many results; the counts table has them all


def clause(c: dict) -> str:
    """One variant's clause: its process starts and what became of the call (the first
    results committed, each with its kind and time), else that none came in the time run."""
    starts = _plural(c["process_starts"], "process start")
    committed = c["committed"]
    if not committed:
        return f"{c['variant']}: {starts} in {duration(c['sim_ms'])}, no result"
    said = ", ".join(f"{x['kind']} at {duration(x['t_ms'])}" for x in committed[:COMMITTED_SHOWN])
    more = f" and {len(committed) - COMMITTED_SHOWN} more result(s)" if len(committed) > COMMITTED_SHOWN else ""
    return f"{c['variant']}: {starts}, {said}{more}"


def headline_text(report: dict) -> str | None:
    """The headline in words (sim/ci/headline.py Rules 1-2), or None when the report has
    no subject (many scenarios: their counts table opens it instead)."""
    h = (report.get("headline") or {}).get("subject")
    if h is None:
        return None
    who = f"The CODAGT-757 incident ({', '.join(h['scenarios'])})" if h["incident"] else h["scenarios"][0]
    return f"{who}: " + "; ".join(clause(c) for c in h["clauses"]) + "."


COUNTS_HEAD = ("scenario", "variant", "simulated", "process starts", "results", "unknown results", "expectations")


def counts_rows(report: dict) -> list[list[str]]:
    """The counts table's cells, a row per scenario run (sim/ci/headline.py Rule 3)."""
    return [[r["scenario"], r["variant"], duration(r["sim_ms"]), str(r["process_starts"]), str(r["results"]),
             str(r["unknown_results"]), "met" if r["ok"] else "NOT met"]
            for r in (report.get("headline") or {}).get("runs", [])]


# A counts table of more scenario runs than this is folded (here and in index.html): the
# headline says the incident's, the verdict the failures; a suite's hundred rows would
# push the rest off the first screen.
COUNTS_SHOWN = 12


def counts_fold(rows: list[list[str]]) -> str | None:
    """The line a folded counts table is summed up in, or None when it is not folded."""
    if len(rows) <= COUNTS_SHOWN:
        return None
    missed = sum(1 for r in rows if r[-1] != "met")
    return (f"Counts per scenario run: {len(rows)} runs, "
            + ("every expectation met" if not missed else f"{missed} expectation(s) NOT met"))


def counts_table(report: dict) -> list[str]:
    """The counts table (GFM), or nothing when the report ran no scenario; folded in a
    ``<details>`` when it has more than COUNTS_SHOWN rows."""
    rows = counts_rows(report)
    if not rows:
        return []
    table = (["| " + " | ".join(COUNTS_HEAD) + " |", "|---" * len(COUNTS_HEAD) + "|"]
             + [f"| `{r[0]}` | `{r[1]}` | " + " | ".join(r[2:6]) + f" | {r[6] if r[6] == 'met' else '**NOT met**'} |"
                for r in rows])
    folded = counts_fold(rows)
    return table if folded is None else [f"<details><summary>{folded}</summary>", "", *table, "", "</details>"]


def status_label(report: dict, f: dict) -> str:
    """A finding's status in words; one run has no baseline, so nothing is "new" there. A
    known finding about the contract has the residual risks' status (never fails) and
    its own name."""
    if f["status"] == "residual_risk" and f.get("class") == "known_finding":
        return "known finding"
    if f["status"] == "expected":  # what was expected and where: an expectation met, not a failure
        return f"expected by its scenario's [expect.{f['variant']}]"
    return "FOUND" if f["status"] == "new" and "one_run" in report else STATUS[f["status"]]


def _finding(f: dict, label: str) -> list[str]:
    where = f"{f['driver']} {f['where']}"
    cls = f" ({f['residual_risk']})" if f["residual_risk"] else ""
    lines = [f"- **{label}** `{f['property']}`{cls} under `{f['variant']}` in {where}: "
             f"{_cell(f['detail'])}"]
    lines += [f"  - reproduce: `{cmd}`" for cmd in f["reproduce"]]
    return lines


# GitHub shows at most 1 MiB (1,048,576 bytes) of a step's summary and drops the rest
# with an error; the margin leaves room for a line or two the workflow adds.
SUMMARY_LIMIT_BYTES = 1_000_000
REASONS_WHEN_TRIMMED = 50  # a trimmed summary lists this many reasons (report.json: all)
LINE_LIMIT_BYTES = 4_000  # a trimmed summary cuts a longer line (a huge detail) to this
FOOTER = "Commands run from the report folder; `report.json` holds all of it as data."


def summary(report: dict, limit_bytes: int = SUMMARY_LIMIT_BYTES) -> str:
    """The whole of summary.md: every section when it fits in ``limit_bytes`` of UTF-8,
    else ``trimmed``. Either is a function of the report alone (the same bytes for the
    same report)."""
    lines = with_toc(_summary_lines(report, None))
    text = "\n".join(lines) + "\n"
    if len(text.encode("utf-8")) <= limit_bytes:
        return text
    return trimmed(with_toc(_summary_lines(report, REASONS_WHEN_TRIMMED)), report, limit_bytes)


TOC_PREFIX = "Contents: "


def with_toc(lines: list[str]) -> list[str]:
    """``lines`` with a one-line table of contents of their ``##`` sections (GitHub's
    heading anchors, reports/page_nav.py ``markdown_toc``) above the first of them: the
    answer, the verdict and the counts stay first."""
    from .page_nav import markdown_toc

    first = next((i for i, line in enumerate(lines) if line.startswith("## ")), None)
    toc = markdown_toc(lines)
    if first is None or not toc:
        return lines
    return lines[:first] + [toc, ""] + lines[first:]


def trim_notice(report: dict) -> list[str]:
    """The last lines of a trimmed summary.md: that it was trimmed, and where it all is."""
    return ["", f"**Trimmed**: this summary stops here to stay under GitHub's 1 MiB step summary limit "
                f"({len(report['findings'])} finding(s) in all).",
            "The whole report is `index.html` (the page) and `report.json` (all of it as data) in the report folder."]


def trimmed(lines: list[str], report: dict, limit_bytes: int) -> str:
    """``lines`` cut to fit ``limit_bytes`` with ``trim_notice`` at the end. Sections keep
    their order, so the headline, the counts, the properties table and what is new come
    first; the cut falls between lines (a line longer than ``LINE_LIMIT_BYTES`` is cut
    first), a ``<details>`` block left open is closed, and nothing depends on anything
    but the report."""
    tail = trim_notice(report)
    room = limit_bytes - sum(len(t.encode("utf-8")) + 1 for t in tail) - len("</details>\n".encode("utf-8"))
    kept: list[str] = []
    open_details = False
    for line in lines:
        raw = line.encode("utf-8")
        if len(raw) > LINE_LIMIT_BYTES:
            line = raw[:LINE_LIMIT_BYTES].decode("utf-8", "ignore") + " … (cut: report.json has it whole)"
            raw = line.encode("utf-8")
        if len(raw) + 1 > room:
            break
        room -= len(raw) + 1
        kept.append(line)
        if line.startswith("<details>"):
            open_details = True
        elif line == "</details>":
            open_details = False
    if open_details:
        kept += ["", "</details>"] if kept[-1] else ["</details>"]
    # The table of contents links only to the sections kept (a shorter line: it still fits).
    from .page_nav import markdown_toc

    kept = [markdown_toc(kept) if line.startswith(TOC_PREFIX) else line for line in kept]
    return "\n".join(kept + tail) + "\n"


def _summary_lines(report: dict, max_reasons: int | None) -> list[str]:
    """summary.md's lines; ``max_reasons``: list at most this many reasons (a trimmed summary)."""
    s, v, c = report["suite"], report["verdict"], report["counts"]
    one = report.get("one_run") is not None
    out = [f"# {title(report)}", ""]
    # The answer first: the headline in words, then every scenario run's counts.
    said = headline_text(report)
    if said is not None:
        out += [f"**{said}**", ""]
    if v["ok"]:
        out.append(f"**PASS**: {pass_text(report)}.")
    else:
        out.append(f"**FAIL** (exit {v['exit_code']}):")
        shown = v["reasons"] if max_reasons is None else v["reasons"][:max_reasons]
        out += [""] + [f"- {_cell(r)}" for r in shown]
        if len(shown) < len(v["reasons"]):
            out.append(f"- … and {len(v['reasons']) - len(shown)} more (`report.json`: verdict.reasons)")
    if counts_table(report):
        out += [""] + counts_table(report)
    if description(report):
        out += ["", description(report)]
    if "replay" in report:
        out += [""] + replay_lines(report)
    f = c["findings"]
    if not one:  # one run's counts are its one section
        out += ["", f"{c['scenario_runs']} scenario runs ({c['scenarios_failed']} failed), {c['explore_runs']} "
                    f"explorer runs ({c['explore_states']} states), {c['swarm_seeds']} swarm seeds. Findings: "
                    f"{f['new']} new, {f['accepted']} accepted in the baseline, {f['expected']} expected by their "
                    f"scenario, {f['residual_risk']} residual risks; {c['fixed']} fixed since the baseline."]
    if "compare_unexpected" in c:
        out.append(f"Design comparison: {c['compare_unexpected']} verdict(s) not as expected.")
    if "detection_found" in c:
        out.append("Planted bugs found from each driver's defaults: "
                   + ", ".join(f"{d} {n}" for d, n in c["detection_found"].items()) + ".")
    if "probes_reached" in c:
        out.append(f"Rule coverage: {c['probes_reached']} probes reached, {c['probes_unreached']} unreached and not "
                   "listed (see Rule coverage).")
    if "planted_caught" in c:
        out.append("Planted bugs caught: " + ", ".join(f"{d} {c['planted_caught'][d]}" for d in report["planted"]["drivers"])
                   + ".")
    if report["variants"]:  # a suite of only a comparison or a detection table checks no variant itself
        out += ["", "## Properties by variant", ""] + table(report) + ["", LEGEND]
    new = [x for x in report["findings"] if x["status"] == "new"]
    # One run has no baseline: what it found is listed under its own name.
    out += ["", "## Findings (no baseline: one run)" if one else "## New against the baseline", ""]
    out += [line for x in new for line in _finding(x, status_label(report, x))] or ["Nothing new."]
    fixed = report["baseline"]["fixed"]
    if fixed:
        out += ["", "## Fixed (in the baseline, not seen again)", ""]
        out += [f"- `{e['property']}` under `{e['variant']}` in {e['driver']} {e['where']} ({e['fingerprint']})"
                for e in fixed]
    rest = [x for x in report["findings"] if x["status"] != "new"]
    if rest:
        # Folded (GFM renders <details>): what is accepted, expected or a documented risk
        # is listed in full but does not push the sweep and the failures off the page.
        out += ["", "## Accepted findings, expected violations and residual risks", "",
                f"<details><summary>{len(rest)} finding(s), none of them failing the run</summary>", ""]
        out += [line for x in rest for line in _finding(x, status_label(report, x))]
        out += ["", "</details>"]
    failed = [x for x in report["scenarios"] if not x["ok"]]
    if failed:
        out += ["", "## Failed scenarios", ""]
        for x in failed:
            out.append(f"- `{x['scenario']}` under `{x['variant']}`: " + _cell("; ".join(x["failures"])))
            out += [f"  - reproduce: `{cmd}`" for cmd in x["reproduce"]]
    sweep = report["planted"]
    if sweep is not None:
        drivers = sweep["drivers"]
        out += ["", "## Planted bugs", "", "| bug | caught by | " + " | ".join(drivers) + " |",
                "|---|---|" + "---|" * len(drivers)]
        for b in sweep["bugs"]:
            cells = ["caught" if b["drivers"][d]["caught"] else "**missed**" for d in drivers]
            out.append(f"| `{b['bug']}` | `{b['caught_by']}` | " + " | ".join(cells) + " |")
        out.append("| mutation score | | " + " | ".join(
            f"{sweep['score'][d]['caught']}/{sweep['score'][d]['swept']}" for d in drivers) + " |")
    if report.get("compare") is not None:
        out += [""] + compare_lines(report["compare"])
    if report.get("detection") is not None:
        out += [""] + detection_lines(report["detection"])
    if report.get("coverage") is not None:
        from .coverage import coverage_markdown

        out += [""] + coverage_markdown(report["coverage"])
    if report.get("drift") is not None:
        from .drift import drift_markdown

        out += [""] + drift_markdown(report["drift"])
    risks = sorted({x["residual_risk"] for x in report["findings"] if x["status"] == "residual_risk"})
    if risks:
        known = report.get("known_findings", {})
        out += ["", "## Residual risks and known findings seen (never fail the run)", ""]
        out += [f"- `{r}`: {report['residual_risks'][r]}" if r in report["residual_risks"]
                else f"- `{r}` (known finding): {known[r]}" for r in risks]
    out += ["", FOOTER]
    return out


VERDICT_WORDS = {"violated": "violated", "known_finding": "known finding", "residual_risk": "residual risk",
                 "holds_exhaustively": "holds exhaustively", "holds": "holds"}
COMPARE_LEGEND = ("Each cell is the design's verdict (reports/compare.py's words); a design's flaw is expected "
                  "(the suite's `compare.expect`: marked expected, an expectation met, not a failure), and only a "
                  "verdict other than the expected one fails the run (marked UNEXPECTED). Costs are measured in the same swarm runs and the long run.")
COMPARE_LEGEND_ONE_RUN = ("Each cell is the design's verdict (reports/compare.py's words). Costs are measured in "
                          "the same swarm runs and the long run.")


def compare_legend(c: dict) -> str:
    """The legend under the matrix: a suite's judges each cell, one comparison does not."""
    return COMPARE_LEGEND if c["judged"] else COMPARE_LEGEND_ONE_RUN


def expected_flaw(cell: dict, design: str | None) -> str:
    """A judged violation the suite expects (the design's flaw, or today's chatd's): who
    expects it, so the cell reads as an expectation met, not as the design failing."""
    if cell.get("as_expected") and cell["verdict"] == "violated" and design is not None:
        return f"expected (compare.expect.{design}): "
    return ""


def compare_cell(cell: dict, design: str | None = None) -> str:
    """A matrix cell in Markdown: the verdict in words and, when judged against the
    suite, what was expected: not as expected, or a violation the suite expects."""
    from .compare import _md_cell

    text = _md_cell(cell)
    if cell.get("as_expected") is False:
        text = f"**UNEXPECTED** (expected {VERDICT_WORDS[cell['expected']]}): {text}"
    return _cell(expected_flaw(cell, design) + text)


def compare_lines(c: dict) -> list[str]:
    """The design comparison (sim/ci/check.py Rule 7) as Markdown."""
    from .compare import COST_COLUMNS, _number, split_markdown

    designs = c["designs"]
    worlds = ", ".join(w["name"] for w in c["worlds"])
    out = ["## Design comparison", "",
           f"Explorer worlds {worlds}; {c['seeds']} swarm seeds from {c['first_seed']}; the scenario suite; a long "
           f"run of {c['long_run_calls']} tool calls." + (f" {c['unexpected']} verdict(s) not as expected."
                                                          if c["judged"] else ""), "",
           "| property | " + " | ".join(f"`{d}`" for d in designs) + " |", "|---|" + "---|" * len(designs)]
    for p in c["properties"]:
        out.append(f"| `{p}` | " + " | ".join(compare_cell(r["matrix"][p], r["design"]) for r in c["rows"]) + " |")
    out += ["", compare_legend(c), "", "| design | " + " | ".join(h for _, h in COST_COLUMNS) + " |",
            "|---|" + "---|" * len(COST_COLUMNS)]
    for r in c["rows"]:
        out.append(f"| `{r['design']}` | " + " | ".join(_number(r["costs"][k]) for k, _ in COST_COLUMNS) + " |")
    out += ["", "Each design's flaw (the property its design section names) with its counterexample, apart from "
                "what it inherits from today's chatd and its own other new findings:", ""]
    out += split_markdown(c["rows"], lambda x: [f"reproduce: `{cmd}`" for cmd in x.get("reproduce", [])])
    drawn = [r for r in c["rows"] if r["counterexample"] is not None and r["counterexample"]["role"] == "shortest"]
    if drawn:
        out += ["", "Drawn where the explorer found no flaw: the shortest counterexample (a new finding before a "
                    "residual risk):", ""]
        for r in drawn:
            x = r["counterexample"]
            risk = f" ({x['residual_risk']})" if x["residual_risk"] else ""
            out.append(f"- `{r['design']}`: `{x['property']}`{risk}, {x['steps']} steps in {x['world']}: "
                       f"{_cell(x['detail'])}")
            out += [f"  - reproduce: `{cmd}`" for cmd in x["reproduce"]]
    return out


def detection_cell(row: dict) -> str:
    """A detection row's cell: found within how much of the budget, or not."""
    if row["control"]:
        return f"**new finding**: {row['violated']}" if row["found"] else f"clean ({row['used']} {row['unit']})"
    if not row["found"]:
        return f"**NOT FOUND** in {row['budget']} {row['unit']}"
    if row["driver"] == "swarm" and row["starts"]:
        used = "seeds " + ", ".join(str(s["seeds"]) for s in row["starts"])
    else:
        used = f"{row['used']} {row['unit']}"
    return f"found: {used}" + (" (its own)" if row["caught_by"] else "")


def detection_lines(d: dict) -> list[str]:
    """The detection table (sim/ci/check.py Rule 8) as Markdown."""
    drivers = d["drivers"]
    budgets = "; ".join(f"{x} {d['budgets'][x]} {d['units'][x]}" for x in drivers)
    out = ["## Detection table (planted bugs from each driver's defaults)", "",
           f"Budgets: {budgets} (the swarm: seeds from each of {', '.join(map(str, d['swarm_starts']))}). "
           "Times are not in the report (it stays the same bytes); `toolcall-sim bugs` prints them.", "",
           "| bug | " + " | ".join(drivers) + " |", "|---|" + "---|" * len(drivers)]
    cells: dict[str, dict[str, str]] = {}
    for row in d["rows"]:
        cells.setdefault(row["bug"], {})[row["driver"]] = detection_cell(row)
    for bug, by in cells.items():
        out.append(f"| `{bug}` | " + " | ".join(_cell(by[x]) for x in drivers) + " |")
    out.append("| found | " + " | ".join(f"{d['summary'][x]['found']}/{d['summary'][x]['bugs']}" for x in drivers)
               + " |")
    return out


def first_line(suite: str, quick: bool, jobs: int, out_dir) -> str:
    """Printed before the suite runs (stderr, on a terminal only)."""
    return f"check {suite}{' (quick)' if quick else ''}: {jobs} jobs; the report goes to {out_dir}\n"


def no_baseline(path) -> str:
    """Said on stderr when the default baseline file is not where the command looks."""
    return (f"check: no baseline at {path} under this folder: every finding counts as new; pass --baseline FILE "
            "or run from the project root\n")


def progress_line(done: int, total: int, what: str) -> str:
    """A finished job, for sim/io/progress.py's lines display (TOOLCALL_SIM_PROGRESS=lines)."""
    return f"  ... {done}/{total} {what}\n"


def interrupted(done: int, total: int, findings: list[dict], scenarios_failed: list[str], out_dir,
                why: str = "Ctrl-C") -> str:
    """The summary so far of an interrupted check (stdout): the jobs finished, the
    findings and failed scenarios they gave (not yet judged against the baseline), and
    that no report was written."""
    lines = [f"  INTERRUPTED ({why}): {done} of {total} jobs finished; "
             f"{len(findings)} finding(s) and {len(scenarios_failed)} failed scenario(s) so far, "
             "not judged against the baseline"]
    lines += [f"    {f['driver']} {f['where']} ({f['variant']}): {f['property']}" for f in findings]
    lines += [f"    scenario {name}: expectation not met" for name in scenarios_failed]
    lines.append(f"  report: not written; {out_dir} is left as it was")
    return "\n".join(lines) + "\n"


def closing(report: dict, out_dir, baseline_written: str | None) -> str:
    """The verdict on a terminal: the reasons, the counts and where the report is."""
    v, c = report["verdict"], report["counts"]
    lines = [f"  {'PASS' if v['ok'] else 'FAIL'}: " + (
        "nothing new against the baseline" if v["ok"] else f"{len(v['reasons'])} reason(s)")]
    lines += [f"    {r}" for r in v["reasons"]]
    f = c["findings"]
    lines.append(f"  findings: {f['new']} new, {f['accepted']} accepted, {f['expected']} expected, "
                 f"{f['residual_risk']} residual risks; {c['fixed']} fixed")
    if "compare_unexpected" in c:
        lines.append(f"  design comparison: {c['compare_unexpected']} verdict(s) not as expected")
    if "detection_found" in c:
        lines.append("  detection (defaults): " + ", ".join(f"{d} {n}" for d, n in c["detection_found"].items()))
    if (report.get("coverage") or {}).get("required"):  # a suite that does not require it: summary.md only
        lines.append(f"  rule coverage: {c['probes_reached']} probes reached, {c['probes_unreached']} unreached "
                     "and not listed")
    if "planted_caught" in c:
        lines.append("  planted bugs caught: " + ", ".join(f"{d} {c['planted_caught'][d]}" for d in report["planted"]["drivers"]))
    if report.get("drift") is not None:
        from .drift import counts_line

        lines.append(f"  go drift (informational): {counts_line(report['drift'])}")
    lines.append(f"  report: {out_dir}/index.html, summary.md, junit.xml, report.json")
    if baseline_written:
        lines.append(f"  baseline written: {baseline_written}")
    return "\n".join(lines) + "\n"
