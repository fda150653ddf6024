"""The text, JSON and Markdown of ``toolcall-sim compare`` (issue 16), from the data
``toolcall_sim.ci.compare.compare`` returns.

Theory of operation
-------------------
The data is a matrix (design x property, one cell each) and a cost row per design; this
module only renders it, in three forms: the terminal text (a compact matrix whose cells
are codes, a legend, the details of every violated or residual cell, the costs), the JSON
(the data itself, plus where the counterexamples went) and the Markdown table
``--report DIR`` writes beside the page (the same matrix with whole words, the costs, the
details); the page itself and the CI report's section are ``toolcall-sim check``'s writers
(reports/check_html.py, reports/check_markdown.py, which reuse the cell words and the cost
columns defined here). Nothing here reads
the wall clock: the same data renders to the same bytes.

Each design's split (sim/ci/compare.py "The flaw and the inherited") is rendered in the
same words everywhere (``flaw_words``, ``entry_words``, ``INHERITED_HEAD``, ``own_head``):
the flaw its design section names first, with its counterexample (or where else it was
found, or that it is a cost); then, apart, what it inherits from today, and its own
other new findings, each with its shortest counterexample in that world.
"""

from __future__ import annotations

from .json_text import json_text

# Matrix cell codes of the terminal text.
CODES = {
    "violated": "FAIL",
    "known_finding": "known",
    "residual_risk": "risk",
    "holds_exhaustively": "exh",
    "holds": "ok",
}
LEGEND = ("FAIL n: violated, shortest counterexample n steps (FAIL swarm / FAIL scen: found by the swarm",
          "  or a scenario); risk: only documented residual risks; known: a known finding (and maybe risks);",
          "  exh: holds exhaustively in the explorer worlds and in every sampled run; ok: holds in every sampled run")

COST_COLUMNS = (
    ("durable_writes_per_call", "durable writes/call"),
    ("records_held_max", "records max"),
    ("records_held_long_run", "records long run"),
    ("starts_per_execute", "starts/execute"),
    ("unknown_share", "unknown share"),
    ("interrupt_latency_median_s", "interrupt median s"),
    ("interrupt_latency_p99_s", "interrupt p99 s"),
    ("requests_per_call", "requests/call"),
)


def _code(cell: dict) -> str:
    code = CODES[cell["verdict"]]
    if cell["verdict"] == "violated":
        where = cell["where"]
        return f"{code} {cell['steps']}" if "steps" in cell else f"{code} {'swarm' if where.startswith('swarm') else 'scen'}"
    return code


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def progress(design: str) -> str:
    """The stderr line when a design begins."""
    return f"... {design}"


def interrupted(data: dict, designs: int, why: str = "Ctrl-C") -> str:
    """Said before the matrix of a comparison stopped by Ctrl-C or SIGTERM (``data``:
    the designs finished)."""
    return f"interrupted ({why}) after {len(data['rows'])} of {designs} designs: the matrix so far\n"


def first_line(out_dir) -> str:
    return f"compare: counterexamples go to {out_dir}\n"


def _worlds_text(data: dict) -> list[str]:
    lines = []
    for w in data["worlds"]:
        b = w["bounds"]
        budgets = ", ".join(f"{k} {b[k]}" for k in ("agent_restarts", "ownership_changes", "interrupts",
                                                   "lost_responses", "task_retries"))
        lines.append(f"  {w['name']}: {w['summary']} (world {w['world']}, max in flight {b['max_in_flight_ms']}s, "
                     f"budgets: {budgets}; at most {w['max_states']} states)")
    return lines


def _named(cell: dict) -> str:
    """A cell's known findings and residual risks, by name."""
    parts = []
    if cell["known"]:
        parts.append("known finding " + ", ".join(cell["known"]))
    if cell["risks"]:
        parts.append("residual risk " + ", ".join(cell["risks"]))
    return "; ".join(parts)


def _details(data: dict) -> list[str]:
    lines = []
    for row in data["rows"]:
        for prop, cell in row["matrix"].items():
            if cell["verdict"] == "violated":
                if "steps" in cell:
                    lines.append(f"  {row['design']} {prop}: {cell['steps']} steps in {cell['where']}: "
                                 f"{cell['detail']}" + (f" ({cell['file']})" if cell.get("file") else ""))
                else:
                    lines.append(f"  {row['design']} {prop}: {cell['where']}")
            elif cell["verdict"] in ("residual_risk", "known_finding"):
                lines.append(f"  {row['design']} {prop}: {_named(cell)}")
    return lines


INHERITED_HEAD = "inherited from today (today has a new finding of the same property in the same world)"


def own_head(row: dict) -> str:
    flaw = row["split"]["flaw"]
    return "its own new findings" + (" besides the flaw" if flaw is not None and flaw["property"] else "")


def _plain(name: str) -> str:
    return name


def flaw_words(row: dict, code=_plain) -> str:
    """A design's flaw and where its counterexample is, in words; ``code`` marks up a
    property's name (Markdown's backticks; none in the text)."""
    flaw = row["split"]["flaw"]
    if flaw is None:
        return "no named flaw (not a rejected design)"
    if flaw["property"] is None:
        return f"its flaw, {flaw['name']}, is a cost (the costs), not a violation"
    head = f"its flaw, {flaw['name']} ({code(flaw['property'])})"
    x = flaw["counterexample"]
    if x is not None:
        return f"{head}: {x['steps']} steps in {x['world']}"
    if flaw["where"] is not None:
        return f"{head}: violated in {flaw['where']}, not in the explorer worlds"
    return f"{head}: not found in these runs"


def entry_words(x: dict, code=_plain) -> str:
    """One new finding of a split: property, length, world, what happened."""
    return f"{code(x['property'])}: {x['steps']} steps in {x['world']}: {x['detail']}"


def _file(x: dict) -> str:
    return f" ({x['file']})" if x.get("file") else ""


def split_items(rows: list[dict], code=_plain) -> list[tuple[int, str, dict | None]]:
    """Each design's split as (depth, words, the counterexample the words name or None):
    the text and the Markdown indent and locate them each their own way."""
    items: list[tuple[int, str, dict | None]] = []
    for row in rows:
        s = row["split"]
        x = s["flaw"]["counterexample"] if s["flaw"] is not None else None
        items.append((0, f"{code(row['design'])}: {flaw_words(row, code)}" + (f": {x['detail']}" if x else ""), x))
        groups = ([(INHERITED_HEAD, s["inherited"])] if s["inherited_from"] is not None else []) + [
            (own_head(row), s["own"])]
        for head, entries in groups:
            items.append((1, f"{head}:" + ("" if entries else " none"), None))
            items += [(2, entry_words(e, code), e) for e in entries]
    return items


def _explored(data: dict) -> list[str]:
    lines = []
    for row in data["rows"]:
        parts = [f"{w['world']} {w['states']} states{'' if w['exhausted'] else ' (not exhausted)'}"
                 for w in row["explorer"]]
        lines.append(f"  {row['design']}: {'; '.join(parts)}; swarm {row['swarm']['runs']} runs; "
                     f"scenarios {row['scenarios']['runs']} runs")
    return lines


def text(data: dict) -> str:
    designs = data["designs"]
    widths = [max(len(d), 10) for d in designs]
    prop_w = max(len(p) for p in data["properties"])
    lines = [f"{'property':{prop_w}}  " + "  ".join(f"{d:{w}}" for d, w in zip(designs, widths))]
    for prop in data["properties"]:
        cells = [_code(row["matrix"][prop]) for row in data["rows"]]
        lines.append(f"{prop:{prop_w}}  " + "  ".join(f"{c:{w}}" for c, w in zip(cells, widths)))
    lines += LEGEND
    lines.append("worlds:")
    lines += _worlds_text(data)
    lines.append(f"runs ({data['seeds']} swarm seeds from {data['first_seed']}, the scenario suite, a long run of "
                 f"{data['long_run_calls']} tool calls):")
    lines += _explored(data)
    lines.append("violations and residual risks:")
    lines += _details(data)
    lines.append("each design's flaw, apart from what it inherits from today (the explorer's new findings):")
    lines += ["  " + "  " * depth + words + (_file(x) if x else "") for depth, words, x in split_items(data["rows"])]
    lines.append("costs (measured in the swarm runs; records long run: at the end of the long run):")
    design_w = max(len(d) for d in designs)
    heads = [h for _, h in COST_COLUMNS]
    lines.append(f"  {'design':{design_w}}  " + "  ".join(heads))
    for row in data["rows"]:
        vals = [_number(row["costs"][k]) for k, _ in COST_COLUMNS]
        lines.append(f"  {row['design']:{design_w}}  " + "  ".join(f"{v:>{len(h)}}" for v, h in zip(vals, heads)))
    return "\n".join(lines) + "\n"


def _md_cell(cell: dict) -> str:
    verdict = cell["verdict"]
    if verdict == "violated":
        if "steps" in cell:
            return f"**violated**: {cell['steps']} steps ({cell['where']})"
        return f"**violated** ({cell['where']})"
    if verdict in ("residual_risk", "known_finding"):
        return _named(cell)
    if verdict == "holds_exhaustively":
        return f"holds exhaustively ({', '.join(cell['where'])}) and in {cell['runs']} runs"
    return f"holds in {cell['runs']} runs"


def markdown(data: dict) -> str:
    designs = data["designs"]
    lines = ["# Comparing designs", "",
             "`toolcall-sim compare`: each design's verdict per property (issue 16).", "",
             "| property | " + " | ".join(designs) + " |",
             "|---|" + "---|" * len(designs)]
    for prop in data["properties"]:
        lines.append(f"| {prop} | " + " | ".join(_md_cell(row["matrix"][prop]) for row in data["rows"]) + " |")
    lines += ["", "## Costs", "",
              "| design | " + " | ".join(h for _, h in COST_COLUMNS) + " |",
              "|---|" + "---|" * len(COST_COLUMNS)]
    for row in data["rows"]:
        lines.append(f"| {row['design']} | " + " | ".join(_number(row["costs"][k]) for k, _ in COST_COLUMNS) + " |")
    lines += ["", "## Worlds and runs", ""]
    lines += [f"- {line.strip()}" for line in _worlds_text(data) + _explored(data)]
    lines += ["", "## Violations and residual risks", ""]
    lines += [f"- {line.strip()}" for line in _details(data)]
    lines += ["", "## Each design's flaw, apart from what it inherits from today", ""]
    lines += split_markdown(data["rows"], lambda x: [f"`{x['file']}`"] if x.get("file") else [])
    return "\n".join(lines) + "\n"


def json_doc(data: dict, out_dir: str) -> str:
    return json_text({**data, "out": out_dir})



def split_markdown(rows: list[dict], where) -> list[str]:
    """Each design's split as a Markdown list; ``where(x)``: what locates a counterexample
    (its file; in a report, the command that replays it)."""
    return ["  " * depth + f"- {words}" + ("".join(f" ({w})" for w in where(x)) if x else "")
            for depth, words, x in split_items(rows, lambda name: f"`{name}`")]
