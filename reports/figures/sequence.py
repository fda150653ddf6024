"""The sequence diagram of one run or one counterexample: who said what to whom, what
really ran, what the user was told, and which records prove the violation.

Theory of operation
-------------------
One vertical lane per node, left to right: the world (faults and the user), the
database, each replica, the agent (its incarnations named where each boots: ``agent
#2``), then one thin column per process (a bar from its start to its exit or kill; a bar
that reaches the bottom was still running), then the probe when it sent anything. The
vertical axis is the trace's order with time in the left margin (``_rows``: one row per
record worth drawing; long idle gaps, repeated cycles and, last, excess rows folded, so
the figure stays under ``MAX_HEIGHT_IN`` inches whatever the run's length).

Marks, one per drawn record:

- a message is an arrow from its send row to its deliver row: blue a request, green an
  answer, grey a database notification; a lost one is dashed orange and ends in a cross
  on the lane that never got it; one still in flight at the end is dotted to the bottom.
  It is labelled at its source (route, tool call, status) and, when it took more than a
  second, with its latency;
- a committed result is a diamond on the database lane, coloured by its kind and
  labelled ``toolu_01: unknown``; a dotted line leads to the replica that committed it;
- faults with a duration are bands on the lanes they hit (agent down, database down,
  replica down, heartbeats paused; a partition spans its two lanes); instant faults and
  skipped faults are stars on the world lane; a lane whose clock differs from true time
  says so in its header (``clock -30s``);
- the decisions worth reading (``note`` records but bookkeeping) are grey text on their
  node's lane;
- every highlighted record (a violation's evidence, indexes into the trace) gets a red
  background across the page, the word ``evidence`` in the margin and red marks, and its
  SVG group the id ``evidence-<index>``; a fold that hides highlighted records says how
  many, in red.
"""

from __future__ import annotations

from typing import Iterable

from matplotlib.patches import Rectangle

from . import _rows, _style
from ._read import AGENT, DB, PROBE, WORLD, read, t_of

MAX_HEIGHT_IN = 40.0
LEFT_IN = 1.05
LANE_IN = 1.6
PROC_COL_IN = 0.16
MAX_PROC_COLS = 8
TOP_IN = 0.85
NOTE_TEXT = {
    "acquired": lambda r: "acquired the chat", "batch_started": lambda r: f"batch (generation {r.get('generation_attempt', '?')})",
    "attempt_timeout": lambda r: "attempt timed out", "task_retry": lambda r: "task retried",
    "runner_dropped": lambda r: f"runner dropped ({r.get('reason', '?')})", "turn_finished": lambda r: f"turn finished ({r.get('status', '?')})",
    "assistant_committed": lambda r: f"assistant message ({r.get('calls', '?')} calls)", "refused": lambda r: f"refused {r.get('code', r.get('reason', ''))}",
}


def _short(value) -> str:
    """UUIDs and long IDs shortened to their first 8 characters."""
    text = str(value)
    return text[:8] if len(text) == 36 and text.count("-") == 4 else text


def _param(key: str, value, chat_names: dict) -> str:
    """A fault's parameter as a reader wants it: durations in units, chats by name."""
    if key in ("duration", "downtime", "pause", "by", "offset") and isinstance(value, int) and not isinstance(value, bool):
        return _style.duration(value)
    if isinstance(value, list):
        return "|".join(":".join(map(str, v)) if isinstance(v, list) else _short(v) for v in value)
    return _short(chat_names.get(value, value) if isinstance(value, str) else value)


def _lanes(nodes: list[str], has_probe: bool, proc_cols: int) -> tuple[dict[str, float], list[float], float]:
    x: dict[str, float] = {}
    pos = LEFT_IN + 0.55
    for n in nodes:
        if n in (AGENT, PROBE):
            continue
        x[n] = pos
        pos += LANE_IN
    x[AGENT] = pos
    cols = [pos + 0.3 + c * PROC_COL_IN for c in range(proc_cols)]
    pos = (cols[-1] if cols else pos) + 1.9  # the agent's labels, right of its process columns
    if has_probe:
        x[PROBE] = pos + 0.4
        pos += 0.4 + 1.0
    return x, cols, pos + 0.3


def sequence_svg(trace: list[dict], *, title: str = "", highlight: Iterable[int] = (),
                 gap_ms: int = 5_000, chat_names: dict | None = None, time_unit_ms: int = 1) -> str:
    """The sequence diagram of ``trace`` as SVG text (see the module's theory).
    ``gap_ms``: idle gaps longer than this (real ms) are folded; ``chat_names``: chat
    UUID -> name, for labels; ``time_unit_ms``: the real ms one trace ms stands for (an
    explorer counterexample's clock: ``toolcall_sim.model.explore.Bounds().scale``)."""
    with _style.context():
        highlight = sorted(set(highlight), key=repr)
        fig = sequence_figure(trace, title=title, highlight=highlight, gap_ms=gap_ms, chat_names=chat_names,
                              time_unit_ms=time_unit_ms)
        return _style.to_svg(fig, "sequence", title, len(trace), _style.digest(trace), highlight)


def sequence_figure(trace: list[dict], *, title: str = "", highlight: Iterable[int] = (),
                    gap_ms: int = 5_000, chat_names: dict | None = None, time_unit_ms: int = 1):
    """The matplotlib ``Figure`` behind ``sequence_svg`` (call it inside
    ``_style.context()``), for a PNG preview."""
    trace = _style.in_real_ms(trace, time_unit_ms)
    if isinstance(gap_ms, bool) or not isinstance(gap_ms, int) or gap_ms < 0:
        raise ValueError(f"gap_ms: expected a whole number of ms >= 0, got {gap_ms!r}")
    marked = {i for i in highlight if isinstance(i, int) and 0 <= i < len(trace)}
    rd = read(trace)
    span_ends = {s.end for s in rd.spans if s.end is not None}
    nodes = [n for n in rd.nodes if n != PROBE or any(m.src == PROBE or m.dst == PROBE for m in rd.messages)]
    items, ys, bottom = _rows.layout(trace, marked, span_ends, gap_ms, MAX_HEIGHT_IN - 0.5, TOP_IN + (0.25 if title else 0))
    on_rows = {i for it in items if it.kind == "row" for i in it.indexes}
    cols = _rows.process_columns(rd.processes, ys, bottom, on_rows, MAX_PROC_COLS)
    x, col_x, width = _lanes(nodes, PROBE in nodes, min(MAX_PROC_COLS, max(cols.values(), default=-1) + 1))
    height = bottom + 0.55
    fig = _style.new_figure(width, height)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    draw = _Drawer(ax, trace, rd, x, ys, marked, bottom, chat_names or {})
    draw.col_x = col_x
    draw.header(title, nodes, width)
    draw.lanes(items, nodes, col_x)
    draw.spans()
    draw.items(items, width)
    draw.processes(cols, col_x)
    draw.records(items)
    draw.legend(height - 0.3)
    return fig


class _Drawer:
    def __init__(self, ax, trace, rd, x, ys, marked, bottom, chat_names):
        self.ax, self.trace, self.rd, self.x, self.ys = ax, trace, rd, x, ys
        self.marked, self.bottom, self.chat_names = marked, bottom, chat_names
        self.proc_no = {p.start: n + 1 for n, p in enumerate(rd.processes)}
        self.by_start = {m.start: m for m in rd.messages if m.start is not None}
        self.by_end = {m.end: m for m in rd.messages if m.end is not None}
        self.proc_by_start = {p.start: p for p in rd.processes}
        self.proc_by_end = {p.end: p for p in rd.processes if p.end is not None}
        chats = sorted({str(r["chat_id"]) for r in trace if r.get("chat_id")})
        # With several chats, marks name theirs (same provider IDs may live in both).
        self.chat_of = (lambda c: f" [{_short(chat_names.get(c, c))}]" if c else "") if len(chats) > 1 else (lambda c: "")

    def text(self, x, y, s, gid=None, **kw):
        kw.setdefault("va", "center")
        kw.setdefault("fontsize", _style.SMALL_PT)
        t = self.ax.text(x, y, s, **kw)
        if gid:
            t.set_gid(gid)
        return t

    def header(self, title, nodes, width):
        if title:
            self.text(0.15, 0.22, title, fontsize=9.5, fontweight="bold", ha="left")
        top = TOP_IN - 0.35 + (0.25 if title else 0)
        for n in nodes:
            name = {WORLD: "world / user", DB: "database"}.get(n, n)
            self.text(self.x[n], top - 0.08, name, ha="center", fontsize=_style.FONT_SIZE_PT, fontweight="bold",
                      gid=f"lane-{n}")
            lo, hi = self.rd.skew_ms.get(n, (0, 0))
            if (lo, hi) != (0, 0):  # drift: from where it started to where it ended
                skew = _style.duration(lo) if hi - lo < 1000 else f"{_style.duration(lo)}..{_style.duration(hi)}"
                self.text(self.x[n], top + 0.08, f"clock {'+' if lo >= 0 else ''}{skew}", ha="center",
                          color=_style.SKEW, gid=f"skew-{n}")
        self.text(LEFT_IN - 0.1, top, "true time", ha="right", color=_style.GREY)

    def lanes(self, items, nodes, col_x):
        breaks = [(it.y - it.height / 2, it.y + it.height / 2) for it in items if it.kind != "row"]
        y0 = min([it.y - it.height / 2 for it in items], default=TOP_IN)
        pieces, start = [], y0 - 0.1
        for a, b in breaks:
            pieces.append((start, a))
            start = b
        pieces.append((start, self.bottom))
        for n in nodes:
            for a, b in pieces:
                self.ax.plot([self.x[n]] * 2, [a, b], color=_style.LANE, lw=1.0, zorder=1)
        for i, inc in _rows.agent_incarnations(self.trace):
            if i in self.ys and inc is not None:
                self.text(self.x[AGENT] + 0.05, self.ys[i] + 0.09, f"agent #{inc}", ha="left", color=_style.INK,
                          fontweight="bold")

    def spans(self):
        colours = {"partition": _style.PARTITION_BG, "heartbeats_paused": _style.FAULT_BG}
        for s in self.rd.spans:
            y0 = self.ys.get(s.start)
            if y0 is None:
                continue
            y1 = self.ys.get(s.end, self.bottom) if s.end is not None else self.bottom
            xs = [self.x[n] for n in s.nodes if n in self.x] or [self.x[WORLD]]
            left, right = min(xs) - 0.3, max(xs) + 0.3
            patch = Rectangle((left, y0), right - left, max(y1 - y0, 0.05), facecolor=colours.get(s.kind, _style.DOWN_BG),
                              edgecolor="none", alpha=0.8, zorder=0, hatch="///" if s.kind.endswith("down") else None)
            patch.set_gid(f"span-{s.kind}-{s.start}")
            self.ax.add_patch(patch)
            if s.kind not in ("agent_down", "db_down"):  # those start with a mark that says so
                self.text(left + 0.03, y0 + 0.06, s.label, ha="left", color="#7a4a00", fontstyle="italic")

    def items(self, items, width):
        for it in items:
            if it.kind == "row":
                if any(i in self.marked for i in it.indexes):
                    band = Rectangle((0.05, it.y - it.height / 2), width - 0.1, it.height, facecolor=_style.EVIDENCE_BG,
                                     edgecolor="none", zorder=0)
                    self.ax.add_patch(band)
                    i = next(i for i in it.indexes if i in self.marked)
                    self.text(0.1, it.y, "evidence", ha="left", color=_style.EVIDENCE, fontweight="bold",
                              gid=f"evidence-{i}")
                continue
            top, bot = it.y - it.height / 2, it.y + it.height / 2
            for lane_x in self.x.values():
                for yy in (top + 0.03, bot - 0.03):
                    self.ax.plot([lane_x - 0.05, lane_x + 0.05], [yy + 0.02, yy - 0.02], color=_style.GREY, lw=0.8)
            hidden = sum(1 for i in it.indexes if i in self.marked)
            if it.kind == "gap":
                self.text(LEFT_IN - 0.1, it.y, f"{_style.duration(it.duration_ms)} idle", ha="right",
                          color=_style.GREY, fontstyle="italic", gid=f"gap-{it.indexes[0] if it.indexes else int(it.y * 100)}")
                continue
            self.ax.add_patch(Rectangle((0.05, top + 0.06), width - 0.1, it.height - 0.12, facecolor="#eef4fb",
                                        edgecolor="#9ab", lw=0.5, zorder=0))
            starts = sum(1 for p in self.rd.processes if p.start in it.indexes)
            if it.kind == "fold":
                words = (f"\u27f3 \u00d7 {it.repeats} identical cycles of {_style.duration(int(it.label))}: "
                         f"{it.repeats - 2} folded here ({_style.duration(it.duration_ms)})")
            else:
                words = f"\u22ef {len(it.indexes)} records not drawn ({_style.duration(it.duration_ms)})"
            if starts:
                words += f"; {starts} process start{'s' if starts != 1 else ''} inside"
            self.text(LEFT_IN + 0.2, it.y, words, ha="left", fontsize=_style.FONT_SIZE_PT, color="#234",
                      gid=f"{it.kind}-{it.indexes[0] if it.indexes else round(it.y * 100)}")
            if hidden:
                self.text(0.1, it.y, f"{hidden} evidence", ha="left", color=_style.EVIDENCE, fontweight="bold",
                          gid=f"evidence-folded-{it.indexes[0] if it.indexes else round(it.y * 100)}")

    def processes(self, cols, col_x):
        for n, p in enumerate(self.rd.processes):
            if n not in cols or cols[n] >= len(col_x):
                continue
            y0 = self.ys[p.start]
            y1 = self.ys.get(p.end, self.bottom) if p.end is not None else self.bottom
            cx = col_x[cols[n]]
            red = p.start in self.marked or p.end in self.marked
            colour = _style.EVIDENCE if red else _style.PROCESS
            self.ax.add_patch(Rectangle((cx - 0.045, y0), 0.09, max(y1 - y0, 0.04), facecolor=colour, alpha=0.85,
                                        edgecolor="none", zorder=2))
            self.text(cx, y0 - 0.05, str(n + 1), ha="center", fontsize=5.5, color=colour)
            if p.end is None:
                self.text(cx, self.bottom + 0.07, "\u2193", ha="center", color=colour)

    def records(self, items):
        shown, last_y = None, -1.0
        for it in items:
            if it.kind != "row":
                shown = None  # after a break the time is written again
                continue
            t = _style.at(t_of(self.trace[it.indexes[0]]))
            if t != shown and it.y - last_y >= _rows.ROW_IN * 0.9:  # never two labels on one line
                self.text(LEFT_IN - 0.1, it.y, t, ha="right", color=_style.GREY)
                shown, last_y = t, it.y
            for i in it.indexes:
                self.record(i, it.y)

    def mark(self, node, y, marker, colour, label, i, side="right", size=4.5):
        red = i in self.marked
        c = _style.EVIDENCE if red else colour
        x = self.x.get(node, self.x[WORLD])
        self.ax.plot([x], [y], marker=marker, ms=size, color=c, zorder=4, gid=f"mark-{i}")
        if label:
            dx = 0.07 if side == "right" else -0.07
            if node == AGENT and side == "right" and self.col_x:
                dx = self.col_x[-1] + 0.12 - x  # right of the process columns
            self.text(x + dx, y, label, ha="left" if side == "right" else "right", color=c if red else _style.INK,
                      fontweight="bold" if red else "normal")

    def record(self, i, y):
        rec = self.trace[i]
        kind, node = rec.get("kind"), str(rec.get("node", WORLD))
        if kind in ("send", "reply"):
            m = self.by_start.get(i)
            if m is not None:
                self.arrow(m, i)
        elif kind in ("deliver", "lost"):
            m = self.by_end.get(i)
            if m is not None and m.start is None:
                self.arrow(m, i)
            elif m is not None and i in self.marked:
                self.mark(node, y, "o", _style.EVIDENCE, "", i)
        elif kind == "truth":
            self.truth(rec, i, y)
        elif kind == "note":
            note = str(rec.get("note"))
            text = NOTE_TEXT.get(note, lambda r: note.replace("_", " "))(rec) + self.chat_of(rec.get("chat_id"))
            self.mark(node, y, ".", _style.GREY, text, i)
        elif kind in ("fault", "fault_skipped"):
            params = ", ".join(f"{k}={_param(k, v, self.chat_names)}" for k, v in sorted(rec.items())
                               if k not in ("kind", "node", "t_ms", "clock_ms", "fault"))
            what = ("skipped " if kind == "fault_skipped" else "") + str(rec.get("fault"))
            self.mark(WORLD, y, "*", _style.LOST if kind == "fault_skipped" else "#b35900", f"{what} {params}".strip(), i, size=6)
        elif kind == "agent_up":
            self.mark(AGENT, y, "^", _style.INK, f"agent #{rec.get('incarnation', '?')} up", i)
        elif kind == "agent_down":
            self.mark(AGENT, y, "v", _style.INK, f"agent down ({rec.get('why', '?')})", i)
        elif kind in ("db_down", "db_up", "healed"):
            label = {"db_down": "database down", "db_up": "database up"}.get(kind, f"healed {' | '.join(map(str, rec.get('between') or ()))}")
            self.mark(node, y, "s", "#7a4a00", label, i)
        elif kind == "timer":
            name = str(rec.get("name", ""))
            what = f"{name.partition(':')[2]} heartbeats resume" if name.startswith("resume_heartbeats:") else f"timer {name}"
            self.mark(node, y, ".", _style.GREY, what, i)
        elif kind == "probe_answer":
            self.mark(PROBE, y, "<", _style.ANSWER, f"{rec.get('name', '?')}: {rec.get('status') or 'error'}", i)
        else:
            self.mark(node, y, "o", _style.GREY, f"{kind} {rec.get('truth') or rec.get('note') or ''}".strip(), i)

    def truth(self, rec, i, y):
        what = rec.get("truth")
        if what == "process_started":
            p = self.proc_by_start[i]
            self.mark(AGENT, y, ">", _style.PROCESS, f"process {self.proc_no[i]} started: {p.tool_call or p.command}"
                      + self.chat_of(p.chat_id), i)
        elif what in ("process_exited", "process_killed"):
            p = self.proc_by_end.get(i)
            n = self.proc_no.get(p.start, "?") if p else "?"
            self.mark(AGENT, y, "s", _style.PROCESS, f"process {n} {p.how if p else what}", i)
        elif what == "result_committed":
            kind = rec.get("result_kind")
            label = f"{rec.get('provider_id', '?')}{self.chat_of(rec.get('chat_id'))}: {kind}" + (" (error)" if rec.get("is_error") else "")
            if rec.get("exit_code") is not None:
                label += f" exit {rec['exit_code']}"
            src = self.x.get(str(rec.get("node")), self.x[DB])
            self.ax.plot([src, self.x[DB]], [y, y], ls=":", color=_style.GREY, lw=0.8, zorder=2)
            self.mark(DB, y, "D", _style.result_colour(kind, rec.get("is_error")), label, i, side="left", size=5.5)
        elif what == "edit_applied":
            self.mark(AGENT, y, "P", _style.ANSWER, f"edit applied: {rec.get('path', '?')}", i)
        else:
            self.mark(str(rec.get("node", AGENT)), y, "o", _style.GREY, str(what), i)

    def arrow(self, m, i):
        y0 = self.ys[m.start] if m.start is not None else self.ys[m.end]
        y1 = self.ys.get(m.end, self.bottom) if m.end is not None else self.bottom
        x0, x1 = self.x.get(m.src, self.x[WORLD]), self.x.get(m.dst, self.x[WORLD])
        red = i in self.marked or m.end in self.marked
        colour = _style.PUBLISH if m.route == "publish" else _style.ANSWER if m.answer else _style.REQUEST
        colour = _style.LOST if m.lost else colour
        colour = _style.EVIDENCE if red else colour
        style = "--" if m.lost else ":" if m.end is None else "-"
        lw = 0.6 if m.route == "publish" else 0.9
        line = self.ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=3,
                                arrowprops=dict(arrowstyle="-" if m.lost else "-|>", color=colour, lw=lw, ls=style,
                                                shrinkA=0, shrinkB=0, mutation_scale=6))
        line.set_gid(f"msg-{i}")
        if m.lost:
            self.ax.plot([x1], [y1], marker="x", ms=6, mew=1.6, color=colour, zorder=4, gid=f"lost-{m.end}")
        if m.route == "publish":
            return  # many, and alike: the arrow says enough
        label = f"{m.status if m.status is not None else 'error'} {m.route}" if m.answer else \
            f"{m.route} {m.tool_call}" if m.tool_call else m.route
        if not m.answer and m.start is not None:
            label += self.chat_of(self.rd.req_chat.get(str(self.trace[m.start].get("req", ""))))
        if m.lost:
            label += " \u2717 lost" + (f" ({m.why})" if m.why else "")
        elif m.end is None:
            label += " (in flight)"
        elif m.start is not None:
            took = t_of(self.trace[m.end]) - t_of(self.trace[m.start])
            if took >= 1000:
                label += f" (+{_style.duration(took)})"
        right = x1 >= x0
        self.text(x0 + (0.06 if right else -0.06), y0 - 0.045, label, ha="left" if right else "right",
                  fontsize=5.5, color=colour)

    def legend(self, y):
        entries = [("\u2192 request", _style.REQUEST), ("\u2192 answer", _style.ANSWER), ("\u2192 db notification", _style.PUBLISH),
                   ("\u2717 lost", _style.LOST), ("\u25c6 committed result", _style.INK), ("\u25ae process", _style.PROCESS),
                   ("\u2605 fault", "#b35900"), ("evidence", _style.EVIDENCE)]
        x = 0.15
        for text, colour in entries:
            self.text(x, y, text, ha="left", color=colour, fontsize=_style.FONT_SIZE_PT)
            x += 0.12 + 0.055 * len(text)
