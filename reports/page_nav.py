"""How a reader finds their way in a report: stable ids, a table of contents, folded detail.

Theory of operation
-------------------
A check report's page (reports/check_html.py) runs to megabytes: a sequence diagram per
finding, a timeline per scenario run. Issue 37 wants it read in a minute, so the page
opens with the answer, then a table of contents (``toc_html``) that links to every part
and every finding; the long detail is folded (``fold``: a ``<details>``), and each part
is laid out only when it comes near the window (``NAV_CSS``: ``content-visibility:
auto``), so a browser draws the top of a long page at once. summary.md gets a one-line
table of contents of its ``##`` sections (``markdown_toc``, GitHub's heading anchors).

Rule 1. Ids are stable: ``Anchors.of`` makes one from the names of what it marks (a
        finding's identity, a scenario run's, a part's name), never from a position or a
        count that another run could shift, keeping only ``[A-Za-z0-9_.:+-]`` so that
        ``#id`` is a URL fragment as it is written; a name seen twice gets ``-2``, ``-3``
        in page order. The same report gives the same ids, so the page stays the same bytes.
Rule 2. A direct link renders what it names. The id of a folded item is on its
        ``<details>``; ``OPENER_SCRIPT`` (a few lines inline, no network) opens the
        ``<details>`` a ``location.hash`` names or holds, on load and on every hash change,
        and scrolls it into view. Without script a link still lands on the item's
        summary line (and browsers that open a ``<details>`` holding a fragment's target
        do it themselves).
Rule 3. The table of contents shows every part and, under each, its items; a list of
        more than ``TOC_SHOWN`` items shows the important ones (a new finding, a failed
        scenario) and folds the rest, so it stays a screen high while every item keeps
        its link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TOC_SHOWN = 8  # a part's list of items longer than this folds all but the important ones

NAV_CSS = """
nav#toc { border: 1px solid #ddd; background: #fafafa; padding: .3em 1em .5em 1em; margin: 1em 0; }
nav#toc h2 { margin-top: .3em; font-size: 1.1em; border: none; }
nav#toc ul { margin: .2em 0; padding-left: 1.2em; } nav#toc > ul > li { margin: .15em 0; }
nav#toc ul ul { columns: 2; column-gap: 2em; font-size: .9em; } nav#toc li li { break-inside: avoid; }
nav#toc details > summary { cursor: pointer; color: #555; font-size: .9em; }
section.part { content-visibility: auto; contain-intrinsic-size: auto 900px; }
details.fold { margin: .6em 0; border-left: 3px solid #ddd; padding-left: .6em; scroll-margin-top: .6em; }
section.part > section { scroll-margin-top: .6em; }
details.fold > summary { cursor: pointer; } details.fold > summary h3 { display: inline; font-size: 1.05em; }
details.fold[open] > summary { margin-bottom: .4em; }
"""

# Rule 2: open the <details> that the URL's fragment names or holds, then show it.
OPENER_SCRIPT = """<script>
function openLinked(scroll) {
  var id = location.hash.slice(1); try { id = decodeURIComponent(id); } catch (e) {}
  var target = id && document.getElementById(id);
  for (var e = target; e; e = e.parentElement) { if (e.tagName === "DETAILS") { e.open = true; } }
  if (target && scroll) { target.scrollIntoView(); }
}
openLinked(true);
addEventListener("hashchange", function () { openLinked(true); });
</script>"""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:+-]+")


class Anchors:
    """The page's ids (Rule 1): each made from names, unique in page order."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def of(self, *names: str) -> str:
        base = _UNSAFE.sub("_", "-".join(n for n in names if n)).strip("_") or "part"
        anchor, n = base, 1
        while anchor in self.seen:
            n += 1
            anchor = f"{base}-{n}"
        self.seen.add(anchor)
        return anchor


@dataclass
class Entry:
    """A line of the table of contents: the id it links to, its text (HTML), whether it
    is important (shown when its list is folded: Rule 3) and its items."""

    anchor: str
    html: str
    important: bool = False
    items: list["Entry"] = field(default_factory=list)


def _link(e: Entry) -> str:
    return f'<a href="#{e.anchor}">{e.html}</a>'


def toc_html(entries: list[Entry]) -> str:
    """The table of contents (Rule 3): a part per line, its items below it."""
    lines = []
    for e in entries:
        sub = ""
        if e.items:
            if len(e.items) <= TOC_SHOWN:
                sub = "<ul>" + "".join(f"<li>{_link(x)}</li>" for x in e.items) + "</ul>"
            else:
                shown = [x for x in e.items if x.important]
                rest = [x for x in e.items if not x.important]
                sub = ("<ul>" + "".join(f"<li>{_link(x)}</li>" for x in shown) + "</ul>" if shown else "")
                if rest:
                    sub += (f"<details><summary>{f'{len(rest)} more' if shown else f'all {len(rest)}'}</summary><ul>"
                            + "".join(f"<li>{_link(x)}</li>" for x in rest) + "</ul></details>")
        lines.append(f"<li>{_link(e)}{sub}</li>")
    return f'<nav id="toc"><h2>Contents</h2><ul>{"".join(lines)}</ul></nav>'


def fold(anchor: str, summary: str, body: str, opened: bool) -> str:
    """A folded item (Rule 2): its summary line always shown, ``body`` when opened."""
    return (f'<details class="fold" id="{anchor}"{" open" if opened else ""}><summary>{summary}</summary>'
            f"{body}</details>")


def part(anchor: str | None, body: str) -> str:
    """A part of the page, laid out when it nears the window (``NAV_CSS``)."""
    said = f' id="{anchor}"' if anchor else ""
    return f'<section class="part"{said}>{body}</section>'


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation but ``-`` and
    ``_`` dropped, spaces to hyphens (its code spans' backticks go with the punctuation)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def markdown_toc(lines: list[str]) -> str:
    """summary.md's table of contents: its ``## `` headings on one line, each a link to
    GitHub's anchor for it (a heading seen again gets ``-1``, ``-2``, as GitHub numbers it)."""
    seen: dict[str, int] = {}
    links = []
    for line in lines:
        if not line.startswith("## "):
            continue
        text = line[3:].strip()
        anchor = github_anchor(text)
        n = seen.get(anchor, 0)
        seen[anchor] = n + 1
        links.append(f"[{text.replace('`', '')}](#{anchor}{f'-{n}' if n else ''})")
    return "Contents: " + " · ".join(links) if links else ""  # check_markdown.TOC_PREFIX
