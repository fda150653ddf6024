"""What ``toolcall-sim coverage`` prints, and check's coverage section: the rule coverage
table (issue 35).

Theory of operation
-------------------
sim/drivers/coverage.py ``coverage_table`` gives plain values; this module only renders
them. The text (``format_coverage``): one row per declared probe (hits per driver and
variant, the smallest witness), then per rule the variants it exists in and was not
reached in, the user stories' proofs, the headings with a branch and no probe yet, the
swarm gaps, the probes only a swarm seed or the explorer reaches (a scenario to write),
and last the probes never reached (model/probes.py's reason, or NOT LISTED:
what makes the command exit 1). ``coverage_markdown`` and ``coverage_html`` are check's
section (reports/check_markdown.py, reports/check_html.py): what fails first, then the
totals per driver and variant, the full per-probe table folded. Nothing here reads a
clock, so a report is the same bytes for the same runs.
"""

from __future__ import annotations

from html import escape

from toolcall_sim.reports.json_text import json_text

_SHORT = {"today": "T", "contract": "C"}
DRIVERS = ("scenarios", "swarm", "explore")
NOT_LISTED = "NOT LISTED as unreachable (model/probes.py UNREACHABLE)"
NO_GAP_REASON = "NO REASON LISTED (model/probes.py SWARM_GAPS)"


def format_coverage(table: dict) -> str:
    lines = ["rule coverage (model/probes.py):"]
    for d in table["drivers"]:
        lines.append(f"  {d['driver']}: {d['ran']}")
    drivers = _drivers(table)
    head = f"  {'probe':<24} " + " ".join(f"{d + ' T/C':>17}" for d in drivers) + "  first reached by"
    lines += ["", head]
    for r in table["probes"]:
        cells = " ".join(f"{_pair(r['hits'].get(d, {})):>17}" for d in drivers)
        lines.append(f"  {r['probe']:<24} {cells}  {_witness(r)}")
    lines.append("")
    lines.append(f"  {table['reached']} of {table['declared']} probes reached"
                 + "".join(f"; {d}: {_reached_by(table, d)}" for d in drivers))
    probed = [r for r in table["rules"] if r["status"] == "probed"]
    lines.append(f"  rules: {sum(1 for r in probed if not r['unreached_in'])} of {len(probed)} probed rules reached "
                 f"under every variant where they exist; {table['not_a_branch']} headings are no branch; "
                 f"{len(table['no_probe_yet'])} have a branch and no probe yet")
    for r in probed:
        if r["unreached_in"]:
            lines.append(f"    rule {r['rule']} (exists under {'/'.join(r['variants'])}): reached by no run under "
                         f"{', '.join(r['unreached_in'])}")
    if table["no_probe_yet"]:
        lines.append(f"  no probe yet: {', '.join(table['no_probe_yet'])}")
    for s in table["stories"]:
        lines.append(f"  story {s['story']}: {_story(s)}")
    if table["swarm_gaps"]:
        lines.append("  swarm gaps (a scenario reaches it, the swarm's default mix does not):")
        for g in table["swarm_gaps"]:
            lines.append(f"    {g['probe']} ({g['variant']}; {g['scenario']}): {g['reason'] or NO_GAP_REASON}")
    if table["scenario_gaps"]:
        lines.append("  reached, but by no shipped scenario: " + ", ".join(
            f"{g['probe']} ({g['variant']}; {'/'.join(g['reached_by'])})" for g in table["scenario_gaps"]))
    never = [r for r in table["probes"] if r["unreached_in"]]
    if never:
        lines.append("  never reached (under the variants where the branch exists):")
        for r in never:
            lines.append(f"    {r['probe']} ({r['rule']}: {r['branch']}) under {'/'.join(r['unreached_in'])}: "
                         f"{r['unreachable'] or NOT_LISTED}")
    if table["undeclared_hits"]:
        lines.append(f"  probes hit but not declared: {', '.join(table['undeclared_hits'])}")
    return "\n".join(lines) + "\n"


def coverage_json(table: dict) -> str:
    return json_text(table)


def unexplained_gaps(table: dict) -> list[dict]:
    """Swarm gaps ``SWARM_GAPS`` gives no reason for (``--strict-swarm`` fails on them)."""
    return [g for g in table["swarm_gaps"] if g["reason"] is None]


# -- check's section -----------------------------------------------------------------


def coverage_markdown(table: dict) -> list[str]:
    """check's ``## Rule coverage`` (GFM): the unreached first, then totals per driver and
    variant, then stories and swarm gaps; the per-probe table folded in ``<details>``."""
    drivers, variants = _drivers(table), table["variants"]
    required = "an unreached probe not listed fails the run" if table.get("required") else \
        "informational: this suite does not require coverage"
    out = ["## Rule coverage", "",
           f"{table['reached']} of {table['declared']} probes (model/probes.py) reached by this run's "
           f"{', '.join(drivers) or 'no driver'} ({required}); {table['not_a_branch']} headings of "
           f"docs/contract.md are no branch, {len(table['no_probe_yet'])} have a branch and no probe yet.", ""]
    rules = [r for r in table["rules"] if r["status"] == "probed" and r["unreached_in"]]
    out.append("Rules reached by no run: " + ", ".join(f"{r['rule']} ({'/'.join(r['unreached_in'])})" for r in rules)
               + "." if rules else "Every probed rule reached under every variant where it exists.")
    never = [r for r in table["probes"] if r["unreached_in"]]
    failing = [r for r in never if r["unreachable"] is None]
    listed = [r for r in never if r["unreachable"] is not None]
    out.append("")
    if failing:
        out += ["| unreached probe | rule | under | why |", "|---|---|---|---|"]
        for r in failing:
            out.append(f"| `{r['probe']}` | {r['rule']}: {_md(r['branch'])} | {'/'.join(r['unreached_in'])} | "
                       "**not listed** |")
        out += ["", "*not listed*: model/probes.py `UNREACHABLE` gives no reason; write a scenario that reaches "
                    "it or list it there."]
    else:
        out.append("Every probe reached under every variant where its branch exists, or listed as unreachable.")
    if listed:
        out += ["", f"{len(listed)} probe(s) listed as unreachable, each with its reason (below): "
                + ", ".join(f"`{r['probe']}`" for r in listed) + "."]
    out += ["", "| driver | " + " | ".join(f"`{v}`" for v in variants) + " |", "|---|" + "---|" * len(variants)]
    for d in drivers:
        out.append(f"| {d} | " + " | ".join(f"{_reached_by(table, d, v)}/{_exists_in(table, v)}" for v in variants)
                   + " |")
    out.append("| any | " + " | ".join(f"{_reached_by(table, None, v)}/{_exists_in(table, v)}" for v in variants)
               + " |")
    out += ["", "Probes reached / probes whose branch exists under the variant."]
    if table["stories"]:
        out += [""] + [f"- story {s['story']}: {_md(_story(s))}" for s in table["stories"]]
    if table["scenario_gaps"]:
        out += ["", "Reached, but by no scenario: " + ", ".join(
            f"`{g['probe']}` ({g['variant']}; {'/'.join(g['reached_by'])})" for g in table["scenario_gaps"])]
    gaps = table["swarm_gaps"]
    if gaps:
        bare = sum(1 for g in gaps if g["reason"] is None)
        out += ["", f"Swarm gaps (a scenario reaches it, this run's swarm does not): {len(gaps)}, {bare} without a "
                    "reason in model/probes.py `SWARM_GAPS` (below)."]
    out += ["", f"<details><summary>every probe ({table['declared']}): hits per driver, today/contract, its "
                f"smallest witness; the listed unreachable; the swarm gaps</summary>", "",
            "| probe | " + " | ".join(drivers) + " | first reached by |", "|---|" + "---|" * (len(drivers) + 1)]
    for r in table["probes"]:
        out.append(f"| `{r['probe']}` | " + " | ".join(_pair(r["hits"].get(d, {})) for d in drivers)
                   + f" | {_md(_witness(r))} |")
    if listed:
        out += ["", "| listed unreachable | under | why |", "|---|---|---|"]
        out += [f"| `{r['probe']}` | {'/'.join(r['unreached_in'])} | {_md(r['unreachable'])} |" for r in listed]
    if gaps:
        out += ["", "| swarm gap | variant | scenario | why the swarm misses it |", "|---|---|---|---|"]
        out += [f"| `{g['probe']}` | {g['variant']} | {_md(g['scenario'])} | {_md(g['reason'] or NO_GAP_REASON)} |"
                for g in gaps]
    out += ["", "</details>"]
    return out


def coverage_html(table: dict) -> str:
    """check's rule coverage section: the same content as the Markdown, as HTML."""
    drivers, variants = _drivers(table), table["variants"]
    body = ['<h2 id="coverage">Rule coverage</h2>',
            f"<p>{table['reached']} of {table['declared']} probes reached by "
            f"{escape(', '.join(drivers) or 'no driver')}"
            + ("; an unreached probe not listed fails the run" if table.get("required") else
               "; informational: this suite does not require coverage") + ".</p>"]
    rules = [r for r in table["rules"] if r["status"] == "probed" and r["unreached_in"]]
    if rules:
        body.append("<p>Rules reached by no run: " + escape(", ".join(
            f"{r['rule']} ({'/'.join(r['unreached_in'])})" for r in rules)) + ".</p>")
    never = [r for r in table["probes"] if r["unreached_in"]]
    if never:
        rows = "".join(
            f'<tr><td><code>{escape(r["probe"])}</code></td><td>{escape(r["rule"])}: {escape(r["branch"])}</td>'
            f'<td>{escape("/".join(r["unreached_in"]))}</td>'
            f'<td class="{"residual-risk" if r["unreachable"] else "violated"}">'
            f'{escape(r["unreachable"] or NOT_LISTED)}</td></tr>' for r in never)
        body.append(f"<table><tr><th>unreached probe</th><th>rule</th><th>under</th><th>why</th></tr>{rows}</table>")
    head = "".join(f"<th>{escape(v)}</th>" for v in variants)
    rows = "".join(f"<tr><th>{escape(d or 'any')}</th>"
                   + "".join(f"<td>{_reached_by(table, d, v)}/{_exists_in(table, v)}</td>" for v in variants)
                   + "</tr>" for d in (*drivers, None))
    body.append(f"<table><tr><th>driver</th>{head}</tr>{rows}</table>")
    if table["stories"]:
        body.append("<ul>" + "".join(f"<li>story {escape(s['story'])}: {escape(_story(s))}</li>"
                                     for s in table["stories"]) + "</ul>")
    if table["scenario_gaps"]:
        body.append("<p>Reached, but by no scenario: " + escape(", ".join(
            f"{g['probe']} ({g['variant']}; {'/'.join(g['reached_by'])})" for g in table["scenario_gaps"])) + "</p>")
    if table["swarm_gaps"]:
        body.append("<p>Swarm gaps: " + escape("; ".join(f"{g['probe']} ({g['variant']}): {g['reason'] or NO_GAP_REASON}"
                                                         for g in table["swarm_gaps"])) + "</p>")
    heads = "".join(f"<th>{escape(d)} T/C</th>" for d in drivers)
    rows = "".join(f"<tr><td><code>{escape(r['probe'])}</code></td>"
                   + "".join(f"<td>{_pair(r['hits'].get(d, {}))}</td>" for d in drivers)
                   + f"<td>{escape(_witness(r))}</td></tr>" for r in table["probes"])
    body.append(f"<details><summary>every probe ({table['declared']})</summary><table><tr><th>probe</th>{heads}"
                f"<th>first reached by</th></tr>{rows}</table></details>")
    return "".join(body)


def _md(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _drivers(table: dict) -> list[str]:
    ran = {d["driver"] for d in table["drivers"]}
    return [d for d in DRIVERS if d in ran]


def _witness(r: dict) -> str:
    return r["witness"].get("scenarios") or r["witness"].get("swarm") or r["witness"].get("explore") or "-"


def _story(s: dict) -> str:
    if s["witnessed"]:
        return "proof witnessed by " + ", ".join(s["probes"])
    return "proof NOT witnessed; not reached: " + ", ".join(s["unreached"])


def _pair(per_variant: dict) -> str:
    return "/".join(str(per_variant.get(v, "-")) for v in ("today", "contract"))


def _reached_by(table: dict, driver: str | None, variant: str | None = None) -> int:
    """Probes ``driver`` (None: any) hit (under ``variant``, where their branch exists
    there; None: any variant)."""
    def hit(r: dict) -> bool:
        if variant is not None and variant not in r["variants"]:
            return False
        per = [r["hits"].get(driver, {})] if driver is not None else list(r["hits"].values())
        return any(n for p in per for v, n in p.items() if variant is None or v == variant)
    return sum(1 for r in table["probes"] if hit(r))


def _exists_in(table: dict, variant: str) -> int:
    return sum(1 for r in table["probes"] if variant in r["variants"])
