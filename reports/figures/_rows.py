"""The sequence diagram's vertical axis: which records get a row, and how a long run is
folded so that nine simulated hours still fit a page.

Theory of operation
-------------------
The axis is the trace's order, not time: one row per record worth drawing, top to bottom
(``drawn``), so the explorer's counterexamples, where every step happens at the same
small time, read as well as a 9-hour scenario. Time is written in the margin wherever it
moves. A message is drawn from its send row to its deliver row, so a message overtaken by
others is a slanted arrow across their rows. What gets no row: ``action`` records (their
effects are drawn), timers (a loop's firing changes nothing a reader sees; the idle ones
are not in a batched trace at all, see ``sim/world/simulation.py`` ``without_idle_steps``), and the
notes of ``NOTE_SKIPPED`` (bookkeeping). A record the caller highlights always gets a row.
Database notifications delivered one after the other share one row.

Three folds keep the page bounded, in this order:

1. Idle gap: between two rows more than ``gap_ms`` of simulated time apart, a
   broken-axis marker with the skipped duration (``14m 58s``).
2. Repeated cycles: the rows between idle gaps form segments; a unit of 1 to
   ``MAX_UNIT`` consecutive segments repeated at least 3 times in a row, identically
   (``signature``: kinds, nodes, routes, statuses and outcomes, not times nor IDs), is
   drawn once at its start and once at its end, with one marker between them saying
   ``× 36`` and how long the folded repetitions lasted. Of the candidate units at a
   position, the one that covers the most segments wins (ties: the shorter unit).
3. Elision: if the figure is still taller than its budget, the rows far from the first
   and last ones and from every highlighted record, with the gaps and folds between
   them, are replaced by one marker per run ("N records not drawn"), fewer rows kept
   until it fits, so the figure never grows past its height budget.

``process_columns`` gives each drawn process a column beside the agent lane (the first
one free at its start); a process started inside a fold gets none (the fold counts it).

``layout`` returns the items top to bottom and the row (y, in inches) of every trace
index it drew or folded: a folded record's y is its marker's, so an arrow from a drawn
row into a fold ends on the marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._read import AGENT, t_of

ROW_IN = 0.155
GAP_IN = 0.30
FOLD_IN = 0.42
MAX_UNIT = 6
MIN_REPEATS = 3

# Notes that are bookkeeping, not a decision a reader follows.
NOTE_SKIPPED = frozenset((
    "stale_timer", "chattool_wait_again", "published", "run_pending", "task_started", "task_done",
    "dialed", "chattool_attach", "chattool_snapshot", "chattool_result", "chattool_legacy_wait",
    "cancels_selected", "cancel_waiting", "waiting", "chat_created", "chattool_cancel_sent",
    "chattool_cancel_answer", "replica_booted",
))
DRAWN_KINDS = frozenset((
    "send", "reply", "deliver", "lost", "truth", "fault", "fault_skipped", "agent_down", "agent_up",
    "db_down", "db_up", "healed", "probe_answer",
))


@dataclass
class Item:
    kind: str  # row, gap, fold, elided
    indexes: list[int] = field(default_factory=list)  # the records it stands for
    y: float = 0.0
    height: float = ROW_IN
    label: str = ""
    repeats: int = 0
    duration_ms: int = 0


def drawn(trace: list[dict], i: int, span_ends: set[int]) -> bool:
    rec = trace[i]
    kind = rec.get("kind")
    if kind == "note":
        return rec.get("note") not in NOTE_SKIPPED or i in span_ends
    if kind == "timer":
        return i in span_ends
    if kind == "agent_up":  # the first incarnation's boot is the lane's header
        return not (rec.get("incarnation") == 1 and t_of(rec) == 0)
    return kind in DRAWN_KINDS


def _is_publish(rec: dict) -> bool:
    return rec.get("kind") == "deliver" and rec.get("route") == "publish"


def rows_of(trace: list[dict], highlight: set[int], span_ends: set[int]) -> list[Item]:
    rows: list[Item] = []
    for i, rec in enumerate(trace):
        if not (drawn(trace, i, span_ends) or i in highlight):
            continue
        last = rows[-1] if rows else None
        if _is_publish(rec) and last is not None and _is_publish(trace[last.indexes[-1]]) \
                and t_of(trace[last.indexes[-1]]) == t_of(rec) and i not in highlight \
                and not any(j in highlight for j in last.indexes):
            last.indexes.append(i)
            continue
        rows.append(Item("row", [i], height=ROW_IN / 2 if _is_publish(rec) and i not in highlight else ROW_IN))
    return rows


def signature(trace: list[dict], row: Item) -> tuple:
    out = []
    for i in row.indexes:
        r = trace[i]
        out.append((r.get("kind"), r.get("node"), r.get("dst"), r.get("route"), r.get("note"), r.get("truth"),
                    r.get("fault"), r.get("status"), r.get("result_kind"), r.get("tool_call"), r.get("why"),
                    r.get("reason")))
    return tuple(out)


def _segments(trace: list[dict], rows: list[Item], gap_ms: int) -> list[list[Item]]:
    segs: list[list[Item]] = []
    for row in rows:
        if segs and t_of(trace[row.indexes[0]]) - t_of(trace[segs[-1][-1].indexes[-1]]) <= gap_ms:
            segs[-1].append(row)
        else:
            segs.append([row])
    return segs


def _fold_plan(sigs: list[tuple]) -> list[tuple]:
    """[("draw", a, b) | ("fold", a, b, repeats, unit)] over segment positions."""
    plan: list[tuple] = []
    i, n = 0, len(sigs)
    while i < n:
        best = None
        for k in range(1, min(MAX_UNIT, (n - i) // MIN_REPEATS) + 1):
            r = 1
            while i + (r + 1) * k <= n and sigs[i + r * k:i + (r + 1) * k] == sigs[i:i + k]:
                r += 1
            if r >= MIN_REPEATS and (best is None or k * r > best[0] * best[1]):
                best = (k, r)
        if best is None:
            plan.append(("draw", i, i + 1))
            i += 1
            continue
        k, r = best
        plan += [("draw", i, i + k), ("fold", i + k, i + (r - 1) * k, r, k), ("draw", i + (r - 1) * k, i + r * k)]
        i += r * k
    return plan


def _with_gaps(trace: list[dict], items: list[Item], gap_ms: int) -> list[Item]:
    out: list[Item] = []
    for item in items:
        if out and item.kind == "row" and out[-1].kind == "row":
            dt = t_of(trace[item.indexes[0]]) - t_of(trace[out[-1].indexes[-1]])
            if dt > gap_ms:
                out.append(Item("gap", [], height=GAP_IN, duration_ms=dt))
        out.append(item)
    return out


def _elide_once(trace: list[dict], items: list[Item], highlight: set[int], max_rows: int) -> list[Item]:
    """Keep the first and last rows and the rows around each highlighted record, about
    ``max_rows`` in all; each run of the others, with the gaps and folds between them,
    becomes one marker."""
    rows = [n for n, it in enumerate(items) if it.kind == "row"]
    keep: set[int] = set()
    marked = [n for n in rows if any(i in highlight for i in items[n].indexes)]
    if len(marked) > max_rows // 2:  # too many to keep them all: the first and last ones
        marked = marked[:max_rows // 4] + marked[-(max_rows // 4):]
    budget = max_rows - len(marked)
    radius = max(1, budget // (2 * (len(marked) + 2))) if budget > 0 else 0
    ends = max(radius, 2) * 2
    keep.update(rows[:ends] + rows[-ends:])
    for m in marked:
        p = rows.index(m)
        keep.update(rows[max(0, p - radius):p + radius + 1])
    # A gap or fold stays only between two kept rows; elsewhere the marker swallows it.
    prev_kept, kept_after = False, [False] * len(items)
    nxt = False
    for n in range(len(items) - 1, -1, -1):
        if items[n].kind == "row":
            nxt = n in keep
        kept_after[n] = nxt
    out: list[Item] = []
    for n, it in enumerate(items):
        if it.kind == "row":
            prev_kept = n in keep
        stays = n in keep if it.kind == "row" else (prev_kept and kept_after[n])
        if stays:
            out.append(it)
        elif out and out[-1].kind == "elided":
            out[-1].indexes += it.indexes
        else:
            out.append(Item("elided", list(it.indexes), height=FOLD_IN))
    for it in out:
        if it.kind == "elided" and it.indexes:
            it.duration_ms = t_of(trace[it.indexes[-1]]) - t_of(trace[it.indexes[0]])
    return out


def _elide(trace: list[dict], items: list[Item], highlight: set[int], budget_in: float) -> list[Item]:
    """``_elide_once`` with fewer rows until the items fit ``budget_in`` inches."""
    if sum(it.height for it in items) <= budget_in:
        return items
    max_rows = int(budget_in / ROW_IN)
    while True:
        out = _elide_once(trace, items, highlight, max_rows)
        if sum(it.height for it in out) <= budget_in or max_rows <= 12:
            return out
        max_rows = int(max_rows * 0.85)


def layout(trace: list[dict], highlight: set[int], span_ends: set[int], gap_ms: int, max_height_in: float,
           top_in: float) -> tuple[list[Item], dict[int, float], float]:
    """(items with their y, y of every drawn or folded trace index, bottom y)."""
    rows = rows_of(trace, highlight, span_ends)
    segs = _segments(trace, rows, gap_ms)
    sigs = [tuple(signature(trace, r) for r in seg) for seg in segs]
    items: list[Item] = []
    for step in _fold_plan(sigs):
        if step[0] == "draw":
            for seg in segs[step[1]:step[2]]:
                items += seg
            continue
        _, a, b, repeats, unit = step
        folded = [i for seg in segs[a:b] for row in seg for i in row.indexes]
        cycle_ms = t_of(trace[segs[a][0].indexes[0]]) - t_of(trace[segs[a - unit][0].indexes[0]])
        span_ms = t_of(trace[segs[b][0].indexes[0]]) - t_of(trace[segs[a][0].indexes[0]])
        items.append(Item("fold", folded, height=FOLD_IN, repeats=repeats, duration_ms=span_ms,
                          label=f"{cycle_ms}"))
    items = _with_gaps(trace, items, gap_ms)
    items = _elide(trace, items, highlight, max_height_in - top_in - 0.6)
    ys: dict[int, float] = {}
    y = top_in
    for it in items:
        it.y = y + it.height / 2
        for i in it.indexes:
            ys[i] = it.y
        y += it.height
    return items, ys, y


def agent_incarnations(trace: list[dict]) -> list[tuple[int, int]]:
    """(index, incarnation) of every agent boot."""
    return [(i, r.get("incarnation")) for i, r in enumerate(trace)
            if r.get("kind") == "agent_up" and r.get("node", AGENT) == AGENT]


def process_columns(processes, ys: dict[int, float], bottom: float, on_rows: set[int], max_cols: int) -> dict[int, int]:
    """Process index -> column: the first column free at its start (greedy interval
    colouring). A process started inside a fold gets no bar: the fold counts it."""
    ends: list[float] = []
    out: dict[int, int] = {}
    for n, p in enumerate(processes):
        if p.start not in on_rows:
            continue
        y0 = ys[p.start]
        y1 = ys.get(p.end, bottom) if p.end is not None else bottom
        free = [c for c, e in enumerate(ends) if e < y0]
        if free:
            c = free[0]
        elif len(ends) < max_cols:
            c = len(ends)
            ends.append(0.0)
        else:
            c = min(range(len(ends)), key=lambda k: ends[k])
        ends[c] = y1
        out[n] = c
    return out
