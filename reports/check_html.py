"""``index.html`` of ``toolcall-sim check``: one self-contained page with the pictures.

Theory of operation
-------------------
sim/ci/check.py hands over the report (``report.json``'s document) and, beside it, the
traces the pictures are drawn from (a counterexample's replayed trace with the indexes
of the records that prove its violation; a scenario run's trace). This module draws each
picture with ``toolcall_sim.reports.figures`` and writes the page: inline CSS, every picture embedded
as a ``data:`` URI of its SVG (an ``<img>``: inlined ``<svg>`` elements would share their
element ids), no network, and one inline script of a few lines that opens what a link
names (reports/page_nav.py Rule 2). Its ``<main>`` opens with the answer
(check_markdown.py's words): the headline, the verdict, the table of contents (every
part and finding, by stable ids: reports/page_nav.py), a row of counts per scenario run
(folded when long); then, each in a ``<section class="part">`` laid out as it nears the
window, the properties x variants table (an expected violation in its own colour,
never the failure's), one fold per finding (its sequence diagram; a new one open), one
per explorer run (its depth chart), the swarm chart, the planted-bug
sweep, the design comparison (a heat map of design x property, cells coloured by
verdict and outlined when not as the suite expects, the costs coloured by a scale per
column, each design's flaw drawn as a sequence diagram, what it inherits from today apart), the detection
table, the rule coverage section (``#coverage``, reports/coverage.py) and a fold per
scenario run with its timeline (and, failed, its sequence diagram; open). The same SVGs
are returned by name, so
the report folder holds them as files too (``figures/*.svg``), byte-identical between runs.
"""

from __future__ import annotations

import base64
from html import escape

from toolcall_sim.model.explore import Bounds

from . import figures
from . import page_nav as nav
from .check_markdown import (
    COUNTS_HEAD,
    LEGEND,
    counts_fold,
    counts_rows,
    description,
    headline_text,
    pass_text,
    replay_lines,
    status_label,
    table_cell,
    title as title_of,
)

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { border: 1px solid #ccc; padding: .25em .6em; }
th { background: #f3f3f3; text-align: left; }
.verdict { font-size: 1.2em; padding: .5em 1em; display: inline-block; border-radius: 4px; }
.pass { background: #dff5df; } .fail { background: #fbdcdc; }
.holds { background: #eef8ee; } .holds-exhaustively { background: #cdebcd; } .residual-risk { background: #fff2cc; }
.violated { background: #f8caca; font-weight: bold; } .not-checked { color: #999; }
.expected-violation { background: #dde9f7; } /* an expectation met: never the failure colour */
.headline { font-size: 1.25em; font-weight: bold; margin: .5em 0; }
.new { color: #b00; font-weight: bold; } code { background: #f5f5f5; padding: 0 .2em; }
section { margin: 1em 0 2em 0; } img { max-width: 100%; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: .5em; white-space: pre-wrap; }
.known-finding { background: #fde3d0; } .unexpected { outline: 3px solid #b00; outline-offset: -3px; }
.heat { table-layout: fixed; width: 100%; } .heat tr:first-child th:first-child { width: 17em; }
.heat td { font-size: .85em; overflow-wrap: anywhere; } .heat th code { overflow-wrap: anywhere; }
"""
# The heat map's verdict classes (sim/ci/compare.py's verdicts -> the table's colours above).
VERDICT_CLASS = {"violated": "violated", "known_finding": "known-finding", "residual_risk": "residual-risk",
                 "holds_exhaustively": "holds-exhaustively", "holds": "holds"}


EXPLORER_SCALE = Bounds().scale  # real ms per explorer ms


def _img(svg: str, alt: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/svg+xml;base64,{data}">'


def _draw(task: tuple) -> str:
    """One picture: (figure function name, positional arguments, keyword arguments).
    Module level, so a process pool can draw it."""
    name, args, kwargs = task
    return getattr(figures, name)(*args, **kwargs)


def figure_tasks(report: dict, traces: dict) -> dict[str, tuple]:
    """What each picture of the report is drawn from: figures/<name>.svg -> a ``_draw`` task.
    ``traces``: figure name -> (trace, evidence indexes[, chat UUID -> name]); with the
    names, the pictures label chats as the scenario or world names them, not by UUID."""
    def of(path: str) -> tuple[list, list, dict]:
        trace, evidence, *names = traces[path[len("figures/"):-len(".svg")]]
        return trace, evidence, (names[0] if names else {})

    out: dict[str, tuple] = {}
    for f in report["findings"]:
        if f.get("sequence"):
            trace, evidence, names = of(f["sequence"])
            out[f["sequence"]] = ("sequence_svg", (trace,), {
                "title": f"{f['property']} under {f['variant']} ({f['driver']} {f['where']})", "highlight": evidence,
                "chat_names": names,
                # An explorer trace counts small ms (model/explore.py Rule 1): label real time.
                **({"time_unit_ms": EXPLORER_SCALE} if f.get("explorer_clock", f["driver"] == "explore") else {})})
    for x in report["scenarios"]:
        trace, _, names = of(x["timeline"])
        out[x["timeline"]] = ("timeline_svg", (trace,), {"title": f"{x['scenario']} under {x['variant']}",
                                                         "chat_names": names})
        if x["sequence"]:
            out[x["sequence"]] = ("sequence_svg", (trace,), {
                "title": f"{x['scenario']} under {x['variant']}" + ("" if x["ok"] else ": expectation not met"),
                "highlight": of(x["sequence"])[1], "chat_names": names})
    replay = report.get("replay")
    if replay is not None:
        unit = {"time_unit_ms": EXPLORER_SCALE} if replay["explorer_clock"] else {}
        trace, _, names = of(replay["timeline"])
        out[replay["timeline"]] = ("timeline_svg", (trace,), {"title": f"replay of {replay['file']}",
                                                              "chat_names": names, **unit})
        if replay["sequence"]:
            out[replay["sequence"]] = ("sequence_svg", (trace,), {
                "title": f"replay of {replay['file']}: {replay['outcome'].replace('_', ' ')}", "chat_names": names,
                **unit})
    for row in (report.get("compare") or {}).get("rows", []):
        if row["sequence"]:
            trace, evidence, names = of(row["sequence"])
            x = row["counterexample"]
            risk = f" ({x['residual_risk']})" if x["residual_risk"] else ""
            out[row["sequence"]] = ("sequence_svg", (trace,), {
                "title": f"{x['property']}{risk} under {row['design']} (compare {x['world']})",
                "highlight": evidence, "chat_names": names, "time_unit_ms": EXPLORER_SCALE})
    for x in report["explore"]:
        marks = [(v["property"] + (f" ({v['residual_risk']})" if v["residual_risk"] else ""), v["depth"])
                 for v in x["violations"] if v["depth"] is not None]
        out[x["depth_chart"]] = ("depth_svg", (x["states_per_depth"], marks),
                                 {"title": f"explore {x['name']} under {x['variant']}"})
    if report["swarm"]:
        per_variant: dict[str, dict[str, int]] = {}
        results: dict[str, list[int]] = {}
        for x in report["swarm"]:
            counts = per_variant.setdefault(x["variant"], {})
            for name, n in {**x["residual_risks"], **x["known_findings"]}.items():
                counts[name] = counts.get(name, 0) + n
            r = results.setdefault(x["variant"], [0, 0])
            r[0] += x["unknown_results"]
            r[1] += x["results"]
        share = {v: (u / n if n else 0.0) for v, (u, n) in results.items()}
        out["figures/swarm.svg"] = ("swarm_svg", (per_variant, share),
                                    {"title": "swarm: residual risks and unknown results"})
    return out


def figures_of(report: dict, traces: dict, mapper=map) -> dict[str, str]:
    """Every picture of the report: figures/<name>.svg -> SVG text. ``mapper`` draws the
    tasks (``map``; a process pool's ``map`` draws them on several cores, in order)."""
    tasks = figure_tasks(report, traces)
    return dict(zip(tasks, mapper(_draw, list(tasks.values()))))


def _table(report: dict) -> str:
    head = "".join(f"<th>{escape(v)}</th>" for v in report["variants"])
    rows = []
    for p in report["properties"]:
        # the colour says violated: no Markdown emphasis (**) in the page
        cells = "".join(f'<td class="{report["table"][v][p].replace(" ", "-")}">'
                        f'{escape(table_cell(report, v, p).replace("**", ""))}</td>' for v in report["variants"])
        rows.append(f"<tr><th><code>{escape(p)}</code></th>{cells}</tr>")
    return f"<table><tr><th>property</th>{head}</tr>{''.join(rows)}</table>"


def _scale(value, low, high) -> str:
    """A cost cell's background: white at the column's lowest value, deeper orange
    towards its highest (every cost column is better low)."""
    if value is None or high == low:
        return ""
    share = (value - low) / (high - low)
    green_blue = round(255 - 120 * share)
    return f' style="background: rgb(255, {round(255 - 80 * share)}, {green_blue})"'


def _heat_text(cell: dict) -> str:
    """A heat map cell in few words (the colour says the verdict; the title the rest)."""
    verdict = cell["verdict"]
    if verdict == "violated":
        return f"violated: {cell['steps']} steps" if "steps" in cell else f"violated ({cell['where']})"
    if verdict in ("residual_risk", "known_finding"):
        return ", ".join([*cell["known"], *cell["risks"]])
    return "holds exhaustively" if verdict == "holds_exhaustively" else f"holds ({cell['runs']} runs)"


def _compare(c: dict, pictures: dict[str, str]) -> str:
    """The design comparison: the heat map, the costs, the counterexamples' pictures."""
    from .check_markdown import VERDICT_WORDS, compare_legend, expected_flaw
    from .compare import COST_COLUMNS, _md_cell, _number

    head = "".join(f"<th><code>{escape(d)}</code></th>" for d in c["designs"])
    rows = []
    for p in c["properties"]:
        cells = []
        for r in c["rows"]:
            cell = r["matrix"][p]
            flaw = expected_flaw(cell, r["design"])  # expected: its own colour, never the failure's
            cls = ("expected-violation" if flaw else VERDICT_CLASS[cell["verdict"]]) + (
                " unexpected" if cell.get("as_expected") is False else "")
            text = flaw + _heat_text(cell)
            if cell.get("as_expected") is False:
                text = f"UNEXPECTED (expected {VERDICT_WORDS[cell['expected']]}): {text}"
            tip = _md_cell(cell).replace("**", "")  # the whole of it on hover: worlds, runs
            cells.append(f'<td class="{cls}" title="{escape(tip)}">{escape(text)}</td>')
        rows.append(f"<tr><th><code>{escape(p)}</code></th>{''.join(cells)}</tr>")
    worlds = ", ".join(w["name"] for w in c["worlds"])
    body = [f"<h2>Design comparison</h2><p>Explorer worlds {escape(worlds)}; {c['seeds']} swarm seeds from "
            f"{c['first_seed']}; the scenario suite; a long run of {c['long_run_calls']} tool calls."
            + (f" {c['unexpected']} verdict(s) not as expected." if c["judged"] else "") + "</p>",
            f'<table class="heat"><tr><th>property</th>{head}</tr>{"".join(rows)}</table>',
            f"<p>{escape(compare_legend(c).replace('`', ''))}</p>"]
    ranges = {}
    for key, _ in COST_COLUMNS:
        values = [r["costs"][key] for r in c["rows"] if r["costs"][key] is not None]
        ranges[key] = (min(values), max(values)) if values else (None, None)
    cost_rows = "".join(
        f"<tr><th><code>{escape(r['design'])}</code></th>"
        + "".join(f"<td{_scale(r['costs'][k], *ranges[k])}>{escape(_number(r['costs'][k]))}</td>"
                  for k, _ in COST_COLUMNS) + "</tr>" for r in c["rows"])
    body.append("<h3>Costs</h3><table><tr><th>design</th>" + "".join(f"<th>{escape(h)}</th>" for _, h in COST_COLUMNS)
                + f"</tr>{cost_rows}</table>")
    body += [_compare_design(r, pictures) for r in c["rows"]]
    return "".join(body)


def _compare_design(r: dict, pictures: dict[str, str]) -> str:
    """One design's section: its flaw named in the heading and drawn (else its shortest
    counterexample, said so), then apart what it inherits from today and its own other
    new findings, each with the command that replays it."""
    from .compare import INHERITED_HEAD, entry_words, flaw_words, own_head

    x, s = r["counterexample"], r["split"]
    out = [f'<section id="compare-{escape(r["design"])}"><h3><code>{escape(r["design"])}</code>: '
           f"{escape(flaw_words(r))}</h3>"]
    if x is not None:
        if x["role"] == "shortest":
            risk = f" ({escape(x['residual_risk'])})" if x["residual_risk"] else ""
            out.append(f"<p>Drawn: its shortest counterexample, <code>{escape(x['property'])}</code>{risk}, "
                       f"{x['steps']} steps in {escape(x['world'])}.</p>")
        out.append(f"<p>{escape(x['detail'])}</p>" + _commands(x["reproduce"])
                   + _img(pictures[r["sequence"]], f"sequence diagram: {r['design']} {x['property']}"))
    groups = ([(INHERITED_HEAD, s["inherited"])] if s["inherited_from"] is not None else []) + [(own_head(r), s["own"])]
    for head, entries in groups:
        items = "".join(f"<li>{escape(entry_words(e))}" + "".join(f"<br>reproduce: <code>{escape(cmd)}</code>"
                                                                  for cmd in e["reproduce"]) + "</li>" for e in entries)
        out.append(f"<h4>{escape(head[0].upper() + head[1:])}</h4>"
                   + (f"<ul>{items}</ul>" if entries else "<p>None.</p>"))
    return "".join(out) + "</section>"


def _detection(d: dict) -> str:
    """The detection table: a cell per bug and driver, found (green) or not (red)."""
    from .check_markdown import detection_cell

    by: dict[str, dict[str, dict]] = {}
    for row in d["rows"]:
        by.setdefault(row["bug"], {})[row["driver"]] = row
    head = "".join(f"<th>{escape(x)} ({d['budgets'][x]} {escape(d['units'][x])})</th>" for x in d["drivers"])
    rows = []
    for bug, cells in by.items():
        tds = []
        for x in d["drivers"]:
            row = cells[x]
            bad = row["found"] == row["control"]
            tip = f' title="{escape(row["where"])}"' if row["where"] else ""
            tds.append(f'<td class="{"violated" if bad else "holds"}"{tip}>'
                       f"{escape(detection_cell(row).replace('**', ''))}</td>")
        rows.append(f"<tr><th><code>{escape(bug)}</code></th>{''.join(tds)}</tr>")
    total = "".join(f"<td>{d['summary'][x]['found']}/{d['summary'][x]['bugs']}</td>" for x in d["drivers"])
    return (f"<h2>Detection table (planted bugs from each driver's defaults)</h2><p>Swarm budgets are seeds from "
            f"each of {', '.join(map(str, d['swarm_starts']))}; times are not in the report (toolcall-sim bugs "
            f"prints them).</p><table><tr><th>bug</th>{head}</tr>{''.join(rows)}"
            f"<tr><th>found</th>{total}</tr></table>")


def _commands(cmds: list[str]) -> str:
    return "<pre>" + "\n".join(escape(c) for c in cmds) + "</pre>"


def _finding_line(report: dict, x: dict) -> str:
    """A finding's heading: its status, property, variant and where it was found."""
    cls = ' class="new"' if x["status"] == "new" else ""
    risk = f" ({escape(x['residual_risk'])})" if x["residual_risk"] else ""
    return (f"<span{cls}>{escape(status_label(report, x))}</span> <code>{escape(x['property'])}</code>{risk} under "
            f"<code>{escape(x['variant'])}</code> in {escape(x['driver'])} {escape(x['where'])}")


def _counts(report: dict) -> str:
    """A row of counts per scenario run; folded when there are many (check_markdown.py
    ``counts_fold``)."""
    rows = counts_rows(report)
    if not rows:
        return ""
    met = {True: "<td>met</td>", False: '<td class="violated">NOT met</td>'}
    table = ('<table id="counts"><tr>' + "".join(f"<th>{escape(h)}</th>" for h in COUNTS_HEAD) + "</tr>"
             + "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r[:-1]) + met[r[-1] == "met"]
                       + "</tr>" for r in rows) + "</table>")
    folded = counts_fold(rows)
    return table if folded is None else f'<details class="fold" id="runs"><summary>{folded}</summary>{table}</details>'


def page(report: dict, pictures: dict[str, str]) -> str:
    """The whole of index.html: the answer, the table of contents, then each part (a
    ``<section class="part">`` with a stable id, reports/page_nav.py), long detail folded."""
    v, c = report["verdict"], report["counts"]
    one = "one_run" in report
    title = title_of(report)
    ids = nav.Anchors()
    for fixed_id in ("headline", "verdict", "toc", "runs", "counts", "coverage"):  # the page's own ids
        ids.of(fixed_id)
    toc: list[nav.Entry] = []
    parts: list[str] = []

    def add(anchor: str, heading: str, body: str, items: list[nav.Entry] | None = None, label: str | None = None,
            own_heading: bool = False, marked: bool = True) -> None:
        """A part: in the table of contents (``label``, else ``heading``) and on the page
        (``own_heading``: ``body`` opens with its own ``<h2>``; ``marked``: the section
        has the id, else ``body`` holds it)."""
        toc.append(nav.Entry(anchor, escape(label or heading), items=items or []))
        parts.append(nav.part(anchor if marked else None,
                              body if own_heading else f"<h2>{escape(heading)}</h2>{body}"))

    # The answer first (<main> opens with it): the headline in words, the verdict, then
    # the table of contents and every scenario run's counts, before any detail.
    said = headline_text(report)
    top = [f'<p class="headline" id="headline">{escape(said)}</p>' if said else ""]
    if v["ok"]:
        text = "nothing new against the baseline" if not one else pass_text(report)
        top.append(f'<p class="verdict pass" id="verdict">PASS: {escape(text)}</p>')
    else:
        top.append(f'<p class="verdict fail" id="verdict">FAIL (exit {v["exit_code"]})</p><ul>'
                   + "".join(f"<li>{escape(r)}</li>" for r in v["reasons"]) + "</ul>")
    rest = [_counts(report)]
    if description(report):
        rest.append(f"<p>{escape(description(report))}</p>")
    f = c["findings"]
    if not one:  # one run's counts are its one section
        rest.append(f"<p>{c['scenario_runs']} scenario runs ({c['scenarios_failed']} failed), {c['explore_runs']} "
                    f"explorer runs ({c['explore_states']} states), {c['swarm_seeds']} swarm seeds. Findings: "
                    f"{f['new']} new, {f['accepted']} accepted, {f['expected']} expected, {f['residual_risk']} "
                    f"residual risks; {c['fixed']} fixed.</p>")
    if report["variants"]:
        add(ids.of("properties"), "Properties by variant", _table(report) + f"<p>{escape(LEGEND)}</p>")
    replay = report.get("replay")
    if replay is not None:
        pictures_of_replay = "".join(
            _img(pictures[replay[k]], f"{k}: replay of {replay['file']}") for k in ("sequence", "timeline")
            if replay[k])
        add(ids.of("replay"), "Replay", "".join(f"<p>{escape(line.replace('`', ''))}</p>"
                                                for line in replay_lines(report))
            + _commands(replay["reproduce"]) + pictures_of_replay)
    _findings(report, pictures, ids, add)
    fixed = report["baseline"]["fixed"]
    if fixed:
        add(ids.of("fixed"), "Fixed (in the baseline, not seen again)", "<ul>" + "".join(
            f"<li><code>{escape(e['property'])}</code> under <code>{escape(e['variant'])}</code> in "
            f"{escape(e['driver'])} {escape(e['where'])}</li>" for e in fixed) + "</ul>", label="Fixed")
    if report["explore"]:
        runs, items = [], []
        for x in report["explore"]:
            state = "exhausted" if x["exhausted"] else "not exhausted"
            anchor = ids.of("explore", x["name"], x["variant"])
            items.append(nav.Entry(anchor, f"{escape(x['name'])} under <code>{escape(x['variant'])}</code>"))
            runs.append(f'<section id="{anchor}"><h3>{escape(x["name"])} under <code>{escape(x["variant"])}</code></h3>'
                        f"<p>{x['states']} states, {x['transitions']} transitions, depth {x['depth']}, {state}; "
                        f"{len(x['violations'])} violation(s).</p>" + _commands(x["reproduce"])
                        + _img(pictures[x["depth_chart"]], f"states per depth: {x['name']}") + "</section>")
        add(ids.of("explore"), "Explorer runs", "".join(runs), items)
    if report["swarm"]:
        rows = []
        for x in report["swarm"]:
            risks = ", ".join(f"{k} {n}" for k, n in {**x["residual_risks"], **x["known_findings"]}.items()) or "none"
            rows.append(f"<tr><td>{escape(x['variant'])}</td><td>{x['first_seed']}..{x['first_seed'] + x['seeds'] - 1}"
                        f"</td><td>{len(x['failures'])}</td><td>{escape(risks)}</td>"
                        f"<td>{x['unknown_results']}/{x['results']}</td></tr>")
        add(ids.of("swarm"), "Swarm", "<table><tr><th>variant</th><th>seeds</th><th>failures</th>"
            "<th>residual risks</th><th>unknown results</th></tr>" + "".join(rows) + "</table>"
            + _img(pictures["figures/swarm.svg"], "swarm chart"))
    sweep = report["planted"]
    if sweep is not None:
        head = "".join(f"<th>{escape(d)}</th>" for d in sweep["drivers"])
        rows = "".join(
            f"<tr><td><code>{escape(b['bug'])}</code></td><td><code>{escape(b['caught_by'])}</code></td>"
            + "".join(f'<td class="{"holds" if b["drivers"][d]["caught"] else "violated"}" '
                      f'title="{escape(b["drivers"][d]["detail"])}">'
                      f'{"caught" if b["drivers"][d]["caught"] else "missed"}</td>' for d in sweep["drivers"])
            + "</tr>" for b in sweep["bugs"])
        score = "".join(f"<td>{sweep['score'][d]['caught']}/{sweep['score'][d]['swept']}</td>" for d in sweep["drivers"])
        add(ids.of("planted"), "Planted bugs", f"<table><tr><th>bug</th><th>caught by</th>{head}</tr>{rows}"
            f"<tr><th>mutation score</th><td></td>{score}</tr></table>")
    compared = report.get("compare")
    if compared is not None:
        # _compare writes its own heading and an id per design's counterexample (compare-<design>)
        items = [nav.Entry(f"compare-{r['design']}", f"<code>{escape(r['design'])}</code>: "
                           f"<code>{escape(r['counterexample']['property'])}</code>")
                 for r in compared["rows"] if r["counterexample"] is not None]
        for item in items:
            ids.of(item.anchor)
        add(ids.of("compare"), "Design comparison", _compare(compared, pictures), items, own_heading=True)
    if report.get("detection") is not None:
        add(ids.of("detection"), "Detection table", _detection(report["detection"]), own_heading=True)
    if report.get("coverage") is not None:
        from .coverage import coverage_html

        # its heading has the id (reports/coverage.py)
        add("coverage", "Rule coverage", coverage_html(report["coverage"]), own_heading=True, marked=False)
    _scenarios(report, pictures, ids, add)
    body = [f"<h1>{escape(title)}</h1>", "<main>", *top, nav.toc_html(toc) if toc else "", *rest, *parts,
            "<p>Commands run from the report folder; report.json holds all of it as data.</p></main>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{CSS}{nav.NAV_CSS}</style></head><body>\n"
            + "\n".join(b for b in body if b) + "\n" + nav.OPENER_SCRIPT + "\n</body></html>\n")


def _findings(report: dict, pictures: dict[str, str], ids: nav.Anchors, add) -> None:
    """The findings part: each one folded under its heading (a new one, or one run's,
    open), with its detail, the commands that reproduce it and its sequence diagram."""
    one = "one_run" in report
    items, body = [], []
    for x in report["findings"]:
        anchor = ids.of(x["id"])
        line = _finding_line(report, x)
        items.append(nav.Entry(anchor, line, important=x["status"] == "new"))
        body.append(nav.fold(anchor, f"<h3>{line}</h3>", f"<p>{escape(x['detail'])}</p>" + _commands(x["reproduce"])
                             + (_img(pictures[x["sequence"]], f"sequence diagram: {x['property']}")
                                if x.get("sequence") else ""), x["status"] == "new" or one))
    f = report["counts"]["findings"]
    counted = ", ".join(f"{f[s]} {w}" for s, w in (("new", "new"), ("accepted", "accepted"), ("expected", "expected"),
                                                    ("residual_risk", "residual risks")) if f.get(s))
    add(ids.of("findings"), "Findings", "".join(body) or "<p>None.</p>", items,
        label=f"Findings ({counted})" if counted else "Findings")


def _scenarios(report: dict, pictures: dict[str, str], ids: nav.Anchors, add) -> None:
    """The scenario runs part: each folded under its name and verdict (a failed one, or
    one run's, open), with its commands, its sequence diagram and its timeline."""
    if not report["scenarios"]:
        return
    one = "one_run" in report
    items, body = [], []
    for x in report["scenarios"]:
        anchor = ids.of(f"scenario-{x['id']}")
        # the summary line says "met"; what was not met is said in full when it is opened
        unmet = "" if x["ok"] else f"<p>{escape('expectation NOT met: ' + '; '.join(x['failures']))}</p>"
        line = f"{escape(x['scenario'])} under <code>{escape(x['variant'])}</code>"
        items.append(nav.Entry(anchor, line + ("" if x["ok"] else ": NOT met"), important=not x["ok"]))
        seq = _img(pictures[x["sequence"]], f"sequence diagram: {x['scenario']}") if x["sequence"] else ""
        met = "expectation met" if x["ok"] else '<span class="new">expectation NOT met</span>'
        body.append(nav.fold(anchor, f"<h3>{line}</h3> {met}",
                             unmet + _commands(x["reproduce"]) + seq
                             + _img(pictures[x["timeline"]], f"timeline: {x['scenario']}"), not x["ok"] or one))
    runs, failed = len(report["scenarios"]), sum(1 for x in report["scenarios"] if not x["ok"])
    add(ids.of("scenarios"), "Scenarios", "".join(body), items,
        label=f"Scenarios ({runs} run{'' if runs == 1 else 's'}, {failed} failed)")
