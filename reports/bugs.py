"""The detection table as people and machines read it: ``toolcall-sim bugs``'s text.

Theory of operation
-------------------
sim/ci/bugs.py runs the planted bugs through the drivers and returns plain values (one
detection per bug and driver, a summary per driver). Everything a user reads about them
is written here: one line per detection as it finishes (``format_row``), the table
(``format_table``) and the JSON shape (``format_json``). Nothing here decides anything:
change a word here and no verdict changes.
"""

from __future__ import annotations

from .json_text import json_text

_WHERE_WIDTH = 72  # the text table cuts "where" (a story's summary can be long); the JSON keeps it whole
_COLUMNS = ("bug", "driver", "found", "budget used", "time", "length", "property", "where")


def format_header(drivers, budgets: dict, starts) -> str:
    parts = []
    for d in drivers:
        unit = {"explore": "states", "search": "programs", "swarm": f"seeds from each of {', '.join(map(str, starts))}"}[d]
        parts.append(f"{d} {budgets[d]} {unit}")
    return "bugs: every planted bug through each driver from its default settings; budgets: " + "; ".join(parts) + "\n"


def _cells(d: dict) -> list[str]:
    found = "found" if d["found"] else "NOT FOUND"
    if d["bug"] == "contract":
        found = "new finding!" if d["found"] else "clean"
    used = f"{d['used']}/{d['budget']} {d['unit']}"
    if d["driver"] == "swarm" and d["starts"]:
        used = "seeds " + ", ".join("-" if s["seeds"] is None else str(s["seeds"]) for s in d["starts"]) \
               + f" (of {d['budget']} each)"
    prop = (d["violated"] or "") + (" (its own)" if d["caught_by"] else "")
    where = d["where"] if len(d["where"]) <= _WHERE_WIDTH else d["where"][:_WHERE_WIDTH - 3] + "..."
    return [d["bug"], d["driver"], found, used, f"{d['seconds']:.1f}s", d["length"], prop, where]


def format_row(d: dict) -> str:
    """One detection as it finishes (stderr while the table runs)."""
    bug, driver, found, used, seconds, length, prop, _ = _cells(d)
    return f"  {driver:7} {bug:34} {found:10} {used:36} {seconds:>7} {prop}\n"


def format_table(doc: dict) -> str:
    rows = [_cells(d) for d in doc["detections"]]
    widths = [max(len(c) for c in col) for col in zip(_COLUMNS, *rows)]
    lines = ["  " + "  ".join(h.ljust(w) for h, w in zip(_COLUMNS, widths)).rstrip()]
    lines.append("  " + "  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    for driver, s in doc["summary"].items():
        clean = {None: "contract not run", True: "contract clean", False: "CONTRACT HAS A NEW FINDING"}[
            s["contract_clean"]]
        missed = f"; missed: {', '.join(s['missed'])}" if s["missed"] else ""
        lines.append(f"  {driver}: {s['found']} of {s['bugs']} bugs found within {s['budget']} {s['unit']} "
                     f"({s['seconds']}s for the bugs); {clean}{missed}")
    return "\n".join(lines) + "\n"


def format_json(doc: dict) -> str:
    return json_text(doc)


def format_interrupted() -> str:
    return "  interrupted (Ctrl-C): the rows finished so far are above (stderr)\n"
