"""The two summary charts: an exploration's states per depth, and a swarm's findings per
variant.

Theory of operation
-------------------
``depth_svg`` draws one bar per breadth-first depth (states first reached at that depth)
and, for each violation, a red dashed line at the depth where its shortest counterexample
ends, named at the top; names found at one depth share a line, and their labels are
stacked so that none covers another. A search stopped early shows where it stopped: the
last bar is the last depth it reached.

``swarm_svg`` draws, per variant, one bar per residual risk or finding kind (the count of
seeds that showed it; a kind a variant never showed draws no bar, and the chart says
"none" for a variant with nothing), and beside it the share of committed results that
were ``unknown`` per variant, as a percentage.

Both take plain numbers from the drivers and check them: a count that is not a whole
number >= 0, or a share outside [0, 1], is a ``ValueError`` naming it (the caller's bug,
said in one line). Variants and kinds are drawn in sorted order, so the same data in any
order draws the same bytes.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from . import _style

PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#555555")


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: expected a whole number >= 0, got {value!r}")
    return value


def depth_svg(states_per_depth: Sequence[int], violations: Sequence[tuple[str, int]] = (), *, title: str = "") -> str:
    """States per depth (bars) and the depth of each violation (named red lines)."""
    counts = [_count(v, f"states_per_depth[{d}]") for d, v in enumerate(states_per_depth)]
    found: dict[int, list[str]] = {}
    for n, item in enumerate(violations):
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(f"violations[{n}]: expected (property name, depth), got {item!r}")
        found.setdefault(_count(item[1], f"violations[{n}] depth"), []).append(item[0])
    with _style.context():
        width = min(14.0, max(6.0, 1.5 + 0.28 * max(len(counts), max(found, default=0) + 1)))
        fig = _style.new_figure(width, 3.6)
        ax = fig.add_axes((0.9 / width, 0.55 / 3.6, (width - 1.2) / width, 2.35 / 3.6))
        depths = list(range(len(counts)))
        for d, patch in zip(depths, ax.bar(depths, counts, color=_style.REQUEST, width=0.75, zorder=2)):
            patch.set_gid(f"depth-{d}")
        top = max(counts, default=0) or 1
        if len(counts) <= 40:
            for d, c in zip(depths, counts):
                ax.text(d, c + top * 0.01, f"{c:,}", ha="center", va="bottom", fontsize=5.5, color=_style.INK)
        ax.set_xlim(-0.7, max(len(counts), max(found, default=0) + 1) - 0.3)
        ax.set_ylim(0, top * (1.1 + 0.11 * len(found)))  # room above the bars for the names
        ax.set_xlabel("depth (actions from the initial state)")
        ax.set_ylabel("states first reached")
        ax.grid(axis="y", color=_style.LIGHT, lw=0.5, zorder=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        for row, depth in enumerate(sorted(found)):
            line = ax.axvline(depth, color=_style.EVIDENCE, ls="--", lw=1.0, zorder=3)
            line.set_gid(f"violation-depth-{depth}")
            names = ", ".join(sorted(found[depth]))
            right_half = depth > (len(counts) - 1) / 2
            ax.text(depth, top * (1.08 + 0.11 * (len(found) - row)), f" {names} (depth {depth}) " ,
                    color=_style.EVIDENCE, fontsize=6.5, fontweight="bold", ha="right" if right_half else "left",
                    va="top", zorder=4)
        total = sum(counts)
        fig.text(0.1 / width, 1 - 0.25 / 3.6, title or "states per depth", fontsize=9.5, fontweight="bold", va="center")
        fig.text(1 - 0.1 / width, 1 - 0.25 / 3.6, f"{total:,} states, depth {max(len(counts) - 1, 0)}, "
                 f"{sum(len(v) for v in found.values())} violation(s)", ha="right", va="center", color=_style.GREY)
        return _style.to_svg(fig, "depth", title, counts, sorted((d, sorted(n)) for d, n in found.items()))


def swarm_svg(per_variant: Mapping[str, Mapping[str, int]], unknown_share: Mapping[str, float] = {}, *,
              title: str = "") -> str:
    """Per variant: count of each residual risk / finding kind (grouped bars) and the
    share of unknown results."""
    table: dict[str, dict[str, int]] = {}
    for variant in sorted(per_variant):
        kinds = per_variant[variant]
        if not isinstance(kinds, Mapping):
            raise ValueError(f"per_variant[{variant!r}]: expected a mapping of kind -> count, got {kinds!r}")
        table[str(variant)] = {str(k): _count(kinds[k], f"per_variant[{variant!r}][{k!r}]") for k in sorted(kinds)}
    shares: dict[str, float] = {}
    for variant in sorted(unknown_share):
        v = unknown_share[variant]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"unknown_share[{variant!r}]: expected a share in [0, 1], got {v!r}")
        shares[str(variant)] = float(v)
    variants = sorted(set(table) | set(shares))
    kinds = sorted({k for v in table.values() for k, n in v.items() if n > 0})
    with _style.context():
        group = max(0.9, 0.22 * len(kinds) + 0.35)
        left_w = min(13.0, max(4.5, 0.6 + group * max(len(variants), 1)))
        width = left_w + 4.0
        height = 3.9 + 0.14 * ((len(kinds) + 2) // 3)
        fig = _style.new_figure(width, height)
        ax = fig.add_axes((0.75 / width, 1.05 / height, (left_w - 1.0) / width, (height - 1.6) / height))
        bar_w = 0.8 / max(len(kinds), 1)
        top = max([n for v in table.values() for n in v.values()], default=0) or 1
        for k, kind in enumerate(kinds):
            xs = [n + (k - (len(kinds) - 1) / 2) * bar_w for n in range(len(variants))]
            ys = [table.get(v, {}).get(kind, 0) for v in variants]
            bars = ax.bar(xs, ys, width=bar_w * 0.92, color=PALETTE[k % len(PALETTE)], label=kind, zorder=2)
            for v, patch in zip(variants, bars):
                patch.set_gid(f"kind-{kind}-{v}")
            for x, y in zip(xs, ys):
                if y:
                    ax.text(x, y + top * 0.01, str(y), ha="center", va="bottom", fontsize=5.5)
        for n, v in enumerate(variants):
            if not any(table.get(v, {}).values()):
                ax.text(n, top * 0.04, "none", ha="center", va="bottom", color=_style.GREY, fontstyle="italic")
        ax.set_xticks(range(len(variants)))
        ax.set_xticklabels(variants, rotation=20 if len(variants) > 4 else 0, ha="right" if len(variants) > 4 else "center")
        ax.set_xlim(-0.6, max(len(variants), 1) - 0.4)
        ax.set_ylim(0, top * 1.15)
        ax.set_ylabel("seeds showing it")
        ax.grid(axis="y", color=_style.LIGHT, lw=0.5, zorder=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if kinds:
            fig.legend(loc="lower left", bbox_to_anchor=(0.6 / width, 0.0), ncols=3, frameon=False, fontsize=6.5)
        _shares(fig, variants, shares, left_w, width, height)
        fig.text(0.1 / width, 1 - 0.25 / height, title or "swarm: findings per variant", fontsize=9.5, fontweight="bold",
                 va="center")
        return _style.to_svg(fig, "swarm", title, table, shares)


def _shares(fig, variants, shares, left_w, width, height):
    ax = fig.add_axes(((left_w + 1.7) / width, 1.05 / height, 2.0 / width, (height - 1.6) / height))
    ys = list(range(len(variants)))
    values = [shares.get(v, 0.0) * 100 for v in variants]
    bars = ax.barh(ys, values, color=_style.RESULT_COLOURS["unknown"], height=0.6, zorder=2)
    for v, patch in zip(variants, bars):
        patch.set_gid(f"unknown-share-{v}")
    for y, v, name in zip(ys, values, variants):
        ax.text(min(v, 100) + 2, y, f"{v:.1f}%" if name in shares else "n/a", va="center", fontsize=6)
    ax.set_yticks(ys)
    ax.set_yticklabels(variants, fontsize=6)
    ax.set_ylim(max(len(variants), 1) - 0.5, -0.5)
    ax.set_xlim(0, 125)
    ax.set_xticks([0, 50, 100])
    ax.set_xticklabels(["0", "50%", "100%"])
    ax.set_title("unknown results", fontsize=7.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
