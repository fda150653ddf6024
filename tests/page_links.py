"""A report page's navigation, read as a browser reads it (issue 37: "a table of contents
and links to every section and finding; a direct link to a section must render").

``navigation(html)`` parses the page and gives, per id, the chain of elements that hold
it; ``assert_navigable`` checks what reports/page_nav.py promises: ids are unique, every
``href="#x"`` has its ``id="x"``, the table of contents links to every part and every
finding, and a link to a folded item lands on a ``<details>`` that the page's script
opens (it opens the target and every ``<details>`` holding it) or on nothing folded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

from toolcall_sim.reports import page_nav as nav

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Navigation:
    ids: list[str] = field(default_factory=list)  # in page order, repeats kept
    chains: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)  # id -> (tag, attrs) outermost first
    hrefs: list[str] = field(default_factory=list)  # every "#x" link's x
    toc_hrefs: list[str] = field(default_factory=list)  # those inside <nav id="toc">
    part_ids: list[str] = field(default_factory=list)  # each <section class="part">'s id, or its <h2>'s
    scripts: list[str] = field(default_factory=list)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.out = Navigation()
        self.stack: list[tuple[str, dict]] = []
        self.part_pending = False  # a part with no id of its own: its <h2>'s id names it
        self.in_script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag not in VOID:
            self.stack.append((tag, a))
        if a.get("id"):
            self.out.ids.append(a["id"])
            self.out.chains[a["id"]] = list(self.stack if tag not in VOID else [*self.stack, (tag, a)])
        href = a.get("href") or ""
        if tag == "a" and href.startswith("#"):
            self.out.hrefs.append(href[1:])
            if any(t == "nav" and x.get("id") == "toc" for t, x in self.stack):
                self.out.toc_hrefs.append(href[1:])
        if tag == "section" and a.get("class") == "part":
            if a.get("id"):
                self.out.part_ids.append(a["id"])
            else:
                self.part_pending = True
        if tag == "h2" and self.part_pending:
            self.out.part_ids.append(a.get("id") or "")
            self.part_pending = False
        self.in_script = tag == "script"

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        self.in_script = False

    def handle_data(self, data):
        if self.in_script:
            self.out.scripts.append(data)


def navigation(html: str) -> Navigation:
    reader = _Reader()
    reader.feed(html)
    return reader.out


def assert_navigable(html: str, report: dict) -> Navigation:
    """The promises of reports/page_nav.py, on a page and the report it shows."""
    n = navigation(html)
    assert len(n.ids) == len(set(n.ids)), sorted({i for i in n.ids if n.ids.count(i) > 1})
    assert set(n.hrefs) <= set(n.ids), f"links to no id: {sorted(set(n.hrefs) - set(n.ids))}"
    # every part and every finding is in the table of contents
    assert n.part_ids and all(n.part_ids) and set(n.part_ids) <= set(n.toc_hrefs), (n.part_ids, n.toc_hrefs)
    finding_ids = [i for i in n.toc_hrefs if n.chains[i][-1][1].get("class") == "fold"
                   and any(t == "section" and x.get("id") == "findings" for t, x in n.chains[i])]
    assert len(finding_ids) == len(report["findings"])
    # A direct link renders: the page's one script opens the linked element and every
    # <details> holding it, so a link to a folded finding lands on its <details> (opened)
    # and a link into a fold opens it; a part's own link is never inside a fold.
    assert [s.strip() for s in n.scripts] == [nav.OPENER_SCRIPT.removeprefix("<script>").removesuffix("</script>")
                                              .strip()]
    assert all(n.chains[i][-1][0] == "details" for i in finding_ids)
    for target in n.part_ids:
        assert not [t for t, _ in n.chains[target] if t == "details"], target
    return n
