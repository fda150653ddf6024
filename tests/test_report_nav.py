"""Reports a reviewer reads in one minute (issue 37): the check page's table of contents,
stable ids and folded detail (reports/page_nav.py), summary.md's table of contents, and
the screenshots script (sim/ci/screenshots.py).

One check of a small suite (one explorer world under today, its findings accepted by
``--update-baseline``: folded, each with its sequence diagram) is the page under test;
the design comparison's ids are tested on tests/test_check_sections.py's page.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from page_links import assert_navigable, navigation

from toolcall_sim.ci import screenshots
from toolcall_sim.cli.main import main
from toolcall_sim.reports import check_markdown
from toolcall_sim.reports import page_nav as nav

SUITE = 'name = "nav"\nsummary = "one explorer world under today"\n[[explore]]\nworld = "two-messages"\nvariants = ["today"]\n'
EVIDENCE_BG = (255, 227, 234)  # reports/figures/_style.py EVIDENCE_BG: the band behind a violation's records


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("nav")
    (root / "nav.toml").write_text(SUITE)
    assert main(["check", str(root / "nav.toml"), "--out", str(root / "out"), "--baseline", str(root / "b.json"),
                 "--update-baseline", "--quiet"]) == 0
    return root / "out"


def test_every_link_has_its_id_and_every_part_and_finding_is_linked(report):
    html = (report / "index.html").read_text()
    doc = json.loads((report / "report.json").read_text())
    assert len(doc["findings"]) == 3 and {f["status"] for f in doc["findings"]} == {"accepted"}
    n = assert_navigable(html, doc)
    # the table of contents comes right after the answer (the headline, the verdict)
    main_part = html[html.index("<main>"):]
    assert main_part.index('id="verdict"') < main_part.index('<nav id="toc">') < main_part.index("<h2>Properties")
    # a finding's id is its identity (stable from run to run), folded when it is accepted
    for f in doc["findings"]:
        assert f["id"] in n.toc_hrefs and f'<details class="fold" id="{f["id"]}"><summary><h3>' in html
    assert {"properties", "findings", "explore"} <= set(n.part_ids)


def test_ids_are_names_made_url_safe_and_unique_in_page_order():
    ids = nav.Anchors()
    assert ids.of("scenario", "a b/c#d") == "scenario-a_b_c_d"
    assert ids.of("scenario-a b/c#d") == "scenario-a_b_c_d-2"  # the same name again: numbered
    assert ids.of("replay:x:contract+bug:at_most_once:ab12") == "replay:x:contract+bug:at_most_once:ab12"
    assert ids.of("") == "part"


def test_a_long_list_in_the_contents_shows_the_important_and_folds_the_rest():
    items = [nav.Entry(f"f{i}", f"finding {i}", important=i == 5) for i in range(nav.TOC_SHOWN + 1)]
    html = nav.toc_html([nav.Entry("findings", "Findings", items=items)])
    n = navigation(html)
    assert n.toc_hrefs == ["findings", "f5", *[f"f{i}" for i in range(nav.TOC_SHOWN + 1) if i != 5]]
    shown = html[:html.index("<details>")]
    assert 'href="#f5"' in shown and 'href="#f0"' not in shown and f"{nav.TOC_SHOWN} more" in html
    few = nav.toc_html([nav.Entry("findings", "Findings", items=items[:nav.TOC_SHOWN])])
    assert "<details>" not in few


def test_summary_md_has_a_contents_line_of_its_sections_with_githubs_anchors(report):
    lines = (report / "summary.md").read_text().splitlines()
    (toc,) = [line for line in lines if line.startswith(check_markdown.TOC_PREFIX)]
    headings = [line[3:] for line in lines if line.startswith("## ")]
    links = re.findall(r"\[([^\]]+)\]\(#([^)]+)\)", toc)
    assert [text for text, _ in links] == headings
    assert lines.index(toc) < lines.index(f"## {headings[0]}")
    assert nav.github_anchor("Detection table (planted bugs from each driver's defaults)") == \
        "detection-table-planted-bugs-from-each-drivers-defaults"
    assert nav.markdown_toc(["## A b", "## A b"]) == "Contents: [A b](#a-b) · [A b](#a-b-1)"


def test_a_trimmed_summary_links_only_to_the_sections_it_kept(report):
    doc = json.loads((report / "report.json").read_text())
    full = check_markdown.summary(doc)
    cut = check_markdown.summary(doc, limit_bytes=len(full.encode()) // 3)
    lines = cut.splitlines()
    (toc,) = [line for line in lines if line.startswith(check_markdown.TOC_PREFIX)]
    kept = {nav.github_anchor(line[3:]) for line in lines if line.startswith("## ")}
    assert set(re.findall(r"\]\(#([^)]+)\)", toc)) == kept and len(cut.encode()) <= len(full.encode()) // 3


def test_a_long_counts_table_is_folded_in_both_reports():
    rows = [[f"s{i}", "contract", "1 s", "1", "1", "0", "met" if i else "NOT met"]
            for i in range(check_markdown.COUNTS_SHOWN + 1)]
    said = check_markdown.counts_fold(rows)
    assert said == f"Counts per scenario run: {len(rows)} runs, 1 expectation(s) NOT met"
    assert check_markdown.counts_fold(rows[:check_markdown.COUNTS_SHOWN]) is None


# ---------------------------------------------------------------------------
# sim/ci/screenshots.py
# ---------------------------------------------------------------------------


def test_screenshots_skip_in_one_line_without_chromium(report, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(screenshots.shutil, "which", lambda name: None)
    assert screenshots.main([str(tmp_path / "shots"), str(report)]) == 0
    assert capsys.readouterr().out == ("screenshots: skipped: no chromium on PATH (install it with "
                                       "`apt-get install -y chromium`)\n")
    assert not (tmp_path / "shots").exists()
    assert screenshots.main([str(tmp_path / "shots"), str(tmp_path)]) == 2  # no index.html there
    # a --sweep folder with no plot would leave the plot out without a word: refused
    assert screenshots.main([str(tmp_path / "shots"), str(report), "--sweep", str(tmp_path / "nowhere")]) == 2
    assert "--sweep" in capsys.readouterr().err and not (tmp_path / "shots").exists()


@pytest.mark.xdist_group("browser")  # the tests that start a browser, in one worker (tests/browser.py)
def test_screenshots_are_1400_px_wide_and_a_linked_finding_is_drawn_open(report, tmp_path, capsys):
    if shutil.which("chromium") is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium)")
    from PIL import Image

    sweep = tmp_path / "sweep"  # a sweep report's double-run plot (reports/sweep.py PLOT_DOUBLE_RUNS)
    sweep.mkdir()
    (sweep / "double_runs_vs_p99.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">'
                                                  '<rect width="400" height="300" fill="#3366cc"/></svg>')
    assert screenshots.main([str(tmp_path / "shots"), str(report), "--height", "900", "--sweep", str(sweep)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert sorted(p.name for p in (tmp_path / "shots").iterdir()) == ["double-runs.png", "finding.png", "top.png"]
    for name in ("top.png", "finding.png", "double-runs.png"):
        assert screenshots.png_size((tmp_path / "shots" / name).read_bytes()) == (1400, 900)
    # the page has no comparison nor sweep: each skipped in a line that says which
    assert any(line.startswith("screenshots: compare: skipped: the page has no #compare") for line in said)
    # The finding is folded on the page; its direct link opened it: its sequence
    # diagram's evidence band is on the screen (the window is not blank, Rule 2).
    picture = Image.open(tmp_path / "shots" / "finding.png").convert("RGB")
    assert picture.getcolors(1 << 24) and any(rgb == EVIDENCE_BG for _, rgb in picture.getcolors(1 << 24))
    plot = Image.open(tmp_path / "shots" / "double-runs.png").convert("RGB")
    assert plot.getpixel((1399, 0)) == (51, 102, 204)  # the picture is drawn as wide as the window
    top = Image.open(tmp_path / "shots" / "top.png").convert("RGB")
    assert not any(rgb == EVIDENCE_BG for _, rgb in top.getcolors(1 << 24))  # folded at the top: not drawn
