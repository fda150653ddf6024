"""The one look of every figure, and the settings that make its SVG the same bytes
everywhere.

Theory of operation
-------------------
A figure is drawn inside ``context()``: a ``matplotlib.rc_context`` that fixes everything
an SVG's bytes could depend on. No pyplot and no global backend: figures are
``matplotlib.figure.Figure`` objects saved by the SVG canvas, so importing this package
changes nothing for a caller that uses matplotlib itself. The settings:

- ``svg.hashsalt`` fixed (per figure, a digest of its kind and input, so two figures
  inlined into one HTML page do not share their generated ``id``s by accident): matplotlib names
  clip paths and markers by a hash salted with it, a random salt otherwise;
- ``svg.fonttype = 'none'``: text stays ``<text>`` (small, searchable, selectable);
  the layout is measured with DejaVu Sans, which ships with matplotlib, so it is the same
  on every machine;
- ``metadata`` without Date, Creator (it carries matplotlib's version), Format or Type.

Everything a figure iterates over is sorted or in trace order by its callers; nothing
here reads the clock or the environment. ``to_svg`` returns the text.

Colours name meanings, not nodes: one colour per result kind (``RESULT_COLOURS``), one
per message fate, one for evidence. Durations are written as people say them:
``14m 58s``, ``2.143s``, ``8h 30m`` (``duration``).
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings
from contextlib import contextmanager

import matplotlib
from matplotlib.figure import Figure

FONT_FAMILY = "DejaVu Sans"
FONT_SIZE_PT = 7.0
SMALL_PT = 6.0

RC = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": [FONT_FAMILY],
    "font.size": FONT_SIZE_PT,
    "axes.titlesize": 9.0,
    "axes.labelsize": FONT_SIZE_PT,
    "xtick.labelsize": SMALL_PT + 0.5,
    "ytick.labelsize": SMALL_PT + 0.5,
    "legend.fontsize": SMALL_PT + 0.5,
    "axes.unicode_minus": False,
    "path.simplify": True,
    "svg.image_inline": True,
}
# No Date (it changes every run), no Creator (it names matplotlib's version).
METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}

# Colours (the Okabe-Ito palette: safe for colour-blind readers).
INK = "#222222"
GREY = "#8a8a8a"
LIGHT = "#d9d9d9"
LANE = "#b0b0b0"
REQUEST = "#0072b2"   # a request on its way
ANSWER = "#009e73"    # an answer on its way
PUBLISH = "#b8b8b8"   # a database notification
LOST = "#d55e00"      # a message that never arrived
EVIDENCE = "#cc0033"  # the records that prove a violation
EVIDENCE_BG = "#ffe3ea"
FAULT_BG = "#fbe7c6"
DOWN_BG = "#e6e6e6"
PARTITION_BG = "#f6d2b5"
SKEW = "#cc79a7"
PROCESS = "#56b4e9"
RESULT_COLOURS = {
    "completed": "#009e73",
    "success": "#009e73",
    "canceled": "#e69f00",
    "interrupted": "#e69f00",
    "interrupted_generic": "#e69f00",
    "unknown": "#cc79a7",
    "timed_out": "#d55e00",
    "error": "#d55e00",
    "failed": "#d55e00",
}


def result_colour(kind: str | None, is_error: bool | None = None) -> str:
    if kind in RESULT_COLOURS:
        return RESULT_COLOURS[kind]
    return LOST if is_error else "#555555"


@contextmanager
def context():
    with matplotlib.rc_context(RC), warnings.catch_warnings():
        # A name in a script the font lacks is drawn as a box; saying so per glyph is noise.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        yield


def new_figure(width_in: float, height_in: float) -> Figure:
    return Figure(figsize=(round(width_in, 3), round(height_in, 3)), dpi=72)


def to_svg(fig: Figure, kind: str, *identity) -> str:
    """The figure's SVG text, the same bytes for the same drawing in any process. The
    hash salt is a digest of the figure's kind and input (``identity``), so two
    different figures inlined into one page do not share generated ``id``s."""
    text = json.dumps([kind, *identity], sort_keys=True, default=repr, separators=(",", ":"))
    salt = hashlib.sha256(text.encode()).hexdigest()[:16]
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"toolcall-sim/{salt}"}):
        fig.savefig(buf, format="svg", metadata=METADATA)
    return buf.getvalue()


def digest(trace) -> str:
    """A short content digest of a trace, for ``to_svg``'s salt."""
    h = hashlib.sha256()
    for rec in trace:
        try:
            h.update(json.dumps(rec, sort_keys=True, default=repr).encode())
        except (TypeError, ValueError):  # keys of mixed types: not a real record
            h.update(repr(rec).encode())
    return h.hexdigest()[:16]


def duration(ms: float) -> str:
    """``950ms``, ``2.143s``, ``1m 2.1s``, ``14m 58s``, ``8h 30m``: the unit that reads
    best, never more than two parts; rounding never writes ``60s`` or ``60m``."""
    ms = int(round(ms))
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    if ms < 59_999:
        return f"{sign}{ms / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    tenths = round(ms / 100)
    if tenths < 6000:  # below 10 minutes: tenths of a second
        m, t = divmod(tenths, 600)
        text = f"{t / 10:.1f}".rstrip("0").rstrip(".")
        return f"{sign}{m}m {text}s" if t else f"{sign}{m}m"
    seconds = round(ms / 1000)
    if seconds < 3600:
        m, sec = divmod(seconds, 60)
        return f"{sign}{m}m {sec}s" if sec else f"{sign}{m}m"
    h, m = divmod(round(ms / 60_000), 60)
    return f"{sign}{h}h {m}m" if m else f"{sign}{h}h"


def at(ms: float) -> str:
    """A point in simulated time, as the time axis labels it (``t=0``, ``t=2.143s``)."""
    return "0" if ms == 0 else duration(ms)


# Fields that hold lists in real records; any other field is read as a scalar.
LIST_FIELDS = frozenset(("between", "replicas", "params"))
_CONTROL = dict.fromkeys([c for c in range(32) if c not in (9, 10)] + [0xFFFE, 0xFFFF])


def _clean_value(key, value):
    if isinstance(value, str):
        return value.translate(_CONTROL)  # XML 1.0 has no place for control characters
    if isinstance(value, (list, tuple)) and key in LIST_FIELDS:
        return [_clean_value(None, v) if isinstance(v, str) else v for v in value]
    if isinstance(value, (list, tuple, dict, set)):
        return str(value).translate(_CONTROL)  # a damaged record: shown, never hashed as a key
    return value


def in_real_ms(trace, time_unit_ms: int = 1) -> list[dict]:
    """The trace's records, cleaned for drawing (anything but a dict read as an empty
    record; control characters dropped from text; a list where a name belongs read as
    text), with ``t_ms`` and ``clock_ms`` in real milliseconds: an explorer trace counts
    ``time_unit_ms`` real ms per ms on both. Both, or a lane header would read the scaling
    as a clock skew (a skew-free explorer clock drawn as ``clock -9.99s..0ms``); scaled
    together, a node's clock minus true time is its real skew: none for the explorer's
    worlds, whose clocks are exact, and the skew in real ms for one that has some."""
    if isinstance(time_unit_ms, bool) or not isinstance(time_unit_ms, int) or time_unit_ms < 1:
        raise ValueError(f"time_unit_ms: expected a whole number >= 1, got {time_unit_ms!r}")
    out = []
    for r in trace:
        rec = {str(k): _clean_value(k, v) for k, v in r.items()} if isinstance(r, dict) else {}
        t = rec.get("t_ms")
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            rec["t_ms"] = 0
        elif time_unit_ms != 1:
            rec["t_ms"] = t * time_unit_ms
        clock = rec.get("clock_ms")
        if time_unit_ms != 1 and isinstance(clock, (int, float)) and not isinstance(clock, bool):
            rec["clock_ms"] = clock * time_unit_ms
        out.append(rec)
    return out
