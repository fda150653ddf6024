"""The timeline of a run per tool call: what chatd asked, what really ran, what the user
was told.

Theory of operation
-------------------
One row per tool call (chat, provider ID), in the order the trace first names them, each
in three sub-rows so that marks at the same instant never cover each other:

- requests (top): each start, edit or write request (an attempt: a blue triangle,
  labelled ``r2.a1``, replica 2's first attempt, from its request ID while there are at
  most 12), each cancel (a red
  cross), each output poll (a grey tick), each message of the call that was lost (an
  orange x);
- processes (middle): one bar per process the call started, from its start to its exit
  or kill (labelled ``exit 0``, ``killed (cancel)`` while there are at most 3; more
  are counted, ``36 processes``); a bar that reaches the right edge
  was still running; each edit the agent applied for the call is a green plus there;
- results (bottom): each committed result, a diamond coloured by its kind and labelled
  with it (``unknown``, ``canceled``...).

Which call a record belongs to comes from ``_read`` (a request's chat is its task's; a
process's request is its ``cause``). The axis is true time, to scale (a timeline is for
durations: a 15-minute attempt and a 12-hour process must look like what they are), with
ticks at round durations. A trace whose calls' records all happen at three instants or
fewer (the explorer's counterexamples) is drawn in trace order instead, and the axis says
so. At most ``MAX_CALLS`` rows are drawn; the figure says how many more there were.
"""

from __future__ import annotations

from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from . import _style
from ._read import PROBE, read, t_of

ROW_IN = 0.62
MAX_CALLS = 40
NICE_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000,
           300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000,
           86_400_000)
ATTEMPT_ROUTES = ("start", "edit", "write")


def _attempt_no(req: str) -> str:
    """``replica-2-w1/t2/a1/c0:r1`` -> ``r2.a1``: which replica, which of its attempts."""
    parts = str(req).split("/")
    attempt = next((p for p in parts if len(p) > 1 and p[0] == "a" and p[1:].isdigit()), "")
    who = parts[0].split("-")
    replica = f"r{who[1]}." if len(who) > 1 and who[0] == "replica" and who[1].isdigit() else ""
    return replica + attempt if attempt else ""


def calls_of(trace: list[dict]) -> dict[tuple, dict]:
    """(chat, provider ID) -> {"requests": [(x index, route, label)], "processes": [...],
    "results": [index], "lost": [index]}, in the order the trace first names them."""
    rd = read(trace)
    calls: dict[tuple, dict] = {}

    def call(chat, tool_call):
        return calls.setdefault((chat or "", str(tool_call)),
                                {"requests": [], "processes": [], "results": [], "lost": [], "edits": []})
    for m in rd.messages:
        if m.tool_call is None or m.answer or m.src == PROBE or m.start is None:
            continue
        req = str(trace[m.start].get("req", ""))
        c = call(rd.req_chat.get(req), m.tool_call)
        c["requests"].append((m.start, m.route, _attempt_no(req)))
        if m.lost and m.end is not None:
            c["lost"].append(m.end)
    for p in rd.processes:
        if p.tool_call is not None:
            call(p.chat_id, p.tool_call)["processes"].append(p)
    for i, rec in enumerate(trace):
        if rec.get("kind") != "truth":
            continue
        if rec.get("truth") == "result_committed":
            call(rec.get("chat_id"), rec.get("provider_id"))["results"].append(i)
        elif rec.get("truth") == "edit_applied" and rd.req_tool_call.get(str(rec.get("cause", ""))):
            call(rec.get("cause_chat"), rd.req_tool_call[str(rec.get("cause"))])["edits"].append(i)
    first = {k: min([i for i, _, _ in v["requests"]] + [p.start for p in v["processes"]] + v["results"] + v["edits"],
                    default=0) for k, v in calls.items()}
    return {k: calls[k] for k in sorted(calls, key=lambda k: (first[k], k))}


def _ticks(span_ms: int) -> list[int]:
    step = next((s for s in NICE_MS if span_ms / s <= 8), NICE_MS[-1])
    return list(range(0, span_ms + 1, step))


def timeline_svg(trace: list[dict], *, title: str = "", chat_names: dict | None = None,
                 time_unit_ms: int = 1) -> str:
    """The per-tool-call timeline of ``trace`` as SVG text (see the module's theory).
    ``chat_names``: chat UUID -> name, for the row labels; ``time_unit_ms``: as
    ``sequence_svg``'s."""
    with _style.context():
        fig = timeline_figure(trace, title=title, chat_names=chat_names, time_unit_ms=time_unit_ms)
        return _style.to_svg(fig, "timeline", title, len(trace), _style.digest(trace))


def timeline_figure(trace: list[dict], *, title: str = "", chat_names: dict | None = None, time_unit_ms: int = 1):
    trace = _style.in_real_ms(trace, time_unit_ms)
    names = chat_names or {}
    calls = calls_of(trace)
    shown = list(calls.items())[:MAX_CALLS]
    used = sorted({i for _, c in shown for i in _indexes(c)})
    times = sorted({t_of(trace[i]) for i in used})
    by_order = len(times) < 4 and len(used) > 3
    end_t = times[-1] if times else 0

    def xof(i: int | None) -> float:
        if i is None:  # still running: to the right edge
            return span * 1.04
        return used.index(i) if by_order else t_of(trace[i])
    span = max(len(used) if by_order else end_t, 1)
    height = 0.5 + ROW_IN * max(len(shown), 1) + 0.8
    fig = _style.new_figure(10.5, height)
    ax = fig.add_axes((2.0 / 10.5, 0.8 / height, 7.7 / 10.5, (height - 1.3) / height))
    ax.set_xlim(-0.01 * span, span * 1.1)
    ax.set_ylim(len(shown) - 0.5 + 0.001, -0.5)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"{_style_chat(names, chat)}  {tc}" for (chat, tc), _ in shown], fontsize=_style.FONT_SIZE_PT)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if by_order:
        ax.set_xticks([])
        ax.set_xlabel(f"records in trace order (all at t = {', '.join(_style.at(t) for t in times)})")
    else:
        ticks = _ticks(int(span))
        ax.set_xticks(ticks)
        ax.set_xticklabels([_style.at(t) for t in ticks])
        ax.set_xlabel("true time")
    if title:
        fig.text(0.1 / 10.5, 1 - 0.3 / height, title, fontsize=9.5, fontweight="bold", ha="left", va="center")
    for row, ((chat, tc), c) in enumerate(shown):
        if row % 2:
            ax.add_patch(Rectangle((-span, row - 0.5), 3 * span, 1, facecolor="#f5f5f5", edgecolor="none", zorder=0))
        _draw_call(ax, trace, row, c, xof, span, by_order)
    if len(calls) > len(shown):
        fig.text(0.5, 0.2 / height, f"{len(calls) - len(shown)} more tool calls not drawn", ha="center")
    _legend(ax)
    return fig


def _indexes(c: dict) -> list[int]:
    return ([i for i, _, _ in c["requests"]] + c["lost"] + c["results"] + c["edits"]
            + [p.start for p in c["processes"]] + [p.end for p in c["processes"] if p.end is not None])


def _style_chat(names: dict, chat: str) -> str:
    name = names.get(chat, chat)
    return name[:8] if len(name) == 36 and name.count("-") == 4 else (name or "?")


def _draw_call(ax, trace, row, c, xof, span, by_order):
    y_req, y_proc, y_res = row - 0.28, row, row + 0.28
    few = sum(1 for _, r, _ in c["requests"] if r in ATTEMPT_ROUTES) <= 12
    for i, route, attempt in c["requests"]:
        x = xof(i)
        if route in ATTEMPT_ROUTES:
            ax.plot([x], [y_req], marker="^", ms=5.5, color=_style.REQUEST, zorder=3, gid=f"attempt-{i}")
            if few and attempt:
                ax.text(x, y_req - 0.1, attempt, ha="center", va="bottom", fontsize=5.5, color=_style.REQUEST)
        elif route == "cancel":
            ax.plot([x], [y_req], marker="X", ms=6, color=_style.EVIDENCE, zorder=4, gid=f"cancel-{i}")
            ax.text(x, y_req - 0.1, "cancel", ha="center", va="bottom", fontsize=5.5, color=_style.EVIDENCE)
        else:
            ax.plot([x], [y_req], marker="|", ms=4, color=_style.GREY, zorder=2)
    for i in c["lost"]:
        ax.plot([xof(i)], [y_req], marker="x", ms=5, mew=1.4, color=_style.LOST, zorder=4, gid=f"lost-{i}")
    for n, p in enumerate(c["processes"]):
        x0, x1 = xof(p.start), xof(p.end)
        k = min(len(c["processes"]), 3)
        dy = (n % 3 - (k - 1) / 2) * 0.1
        bar = Rectangle((x0, y_proc + dy - 0.045), max(x1 - x0, span * 0.002), 0.09, facecolor=_style.PROCESS,
                        edgecolor="none", zorder=2)
        bar.set_gid(f"process-{p.start}")
        ax.add_patch(bar)
        if len(c["processes"]) <= 3:
            ax.text(x1 + span * 0.004, y_proc + dy, p.how or "running", fontsize=5.5, va="center", color=_style.INK)
    if len(c["processes"]) > 3:
        ax.text(xof(c["processes"][0].start), y_proc + 0.17, f"{len(c['processes'])} processes", fontsize=6,
                va="center", color=_style.INK, fontweight="bold")
    for i in c["edits"]:
        ax.plot([xof(i)], [y_proc], marker="P", ms=5, color=_style.ANSWER, zorder=3, gid=f"edit-{i}")
    for i in c["results"]:
        rec = trace[i]
        kind = rec.get("result_kind")
        colour = _style.result_colour(kind, rec.get("is_error"))
        ax.plot([xof(i)], [y_res], marker="D", ms=5.5, color=colour, zorder=4, gid=f"result-{i}")
        label = str(kind) + (" (error)" if rec.get("is_error") else "")
        ax.text(xof(i) + span * 0.006, y_res, label, fontsize=6, va="center", color=colour, fontweight="bold")
    if not c["results"]:
        ax.text(span * 1.09, y_res, "no result", fontsize=5.5, va="center", ha="right", color=_style.GREY)


def _legend(ax):
    handles = [
        Line2D([], [], marker="^", ls="", color=_style.REQUEST, label="attempt rN.aK (replica N, its attempt K)"),
        Line2D([], [], marker="X", ls="", color=_style.EVIDENCE, label="cancel"),
        Line2D([], [], marker="|", ls="", color=_style.GREY, label="output poll"),
        Line2D([], [], marker="x", ls="", color=_style.LOST, label="lost message"),
        Line2D([], [], lw=4, color=_style.PROCESS, label="process lifetime"),
        Line2D([], [], marker="P", ls="", color=_style.ANSWER, label="edit applied"),
        Line2D([], [], marker="D", ls="", color=_style.INK, label="committed result"),
    ]
    ax.figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=7, frameon=False,
                     fontsize=6.5)
