"""The check report's pictures: placeholder; replaced by the figures package at merge.

Theory of operation
-------------------
Only the API the check report calls (issue 15), each returning a tiny valid SVG with its
title as text, the same bytes for the same arguments, so the report writers and their
tests run before the real pictures (matplotlib) arrive in this package.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence
from xml.sax.saxutils import escape


def _svg(title: str, text: str) -> str:
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="480" height="40" viewBox="0 0 480 40">'
            f'<title>{escape(title)}</title>'
            f'<text x="4" y="16" font-size="12">{escape(title)}</text>'
            f'<text x="4" y="32" font-size="10">{escape(text)}</text></svg>\n')


def sequence_svg(trace: list[dict], *, title: str = "", highlight: Iterable[int] = ()) -> str:
    """A counterexample's (or failed scenario's) sequence diagram."""
    return _svg(title, f"{len(trace)} records, {len(list(highlight))} highlighted")


def timeline_svg(trace: list[dict], *, title: str = "") -> str:
    """The timeline per tool call of a scenario run."""
    return _svg(title, f"{len(trace)} records")


def depth_svg(states_per_depth: Sequence[int], violations: Sequence[tuple[str, int]] = (), *, title: str = "") -> str:
    """An exploration's states per depth and where each violation was found."""
    return _svg(title, f"{sum(states_per_depth)} states, {len(states_per_depth)} depths, {len(violations)} violations")


def swarm_svg(per_variant: Mapping[str, Mapping[str, int]], unknown_share: Mapping[str, float] = {}, *,
              title: str = "") -> str:
    """Residual risks and the unknown-result share per variant of a swarm."""
    return _svg(title, ", ".join(f"{v}: {sum(c.values())}" for v, c in sorted(per_variant.items())))
