"""A page drawn in headless Chromium is not blank (issue 15: "a test renders index.html in
headless Chromium ... and checks that the screenshot is not blank").

tests/browser.py takes the screenshot (in one browser per worker process, kept for the
next page) and measures it. The measure is tested on pictures
made here (a blank one must be called blank, or the check could not fail), then on what the
browser draws: a small self-contained page like the report's (inline CSS, an inline SVG
and a PNG embedded as a data URI) must come out drawn, its SVG's exact colours present,
and an empty page must come out blank. The report's own page (``toolcall-sim check``)
reuses ``browser.screenshot`` and ``browser.measure`` the same way. Last, ``.ci/browser``
(run by ``.ci/run``) installs Chromium when it is missing: run against fake tools on a
PATH of their own, so nothing is installed for real.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import browser

RED = (204, 51, 51)
BLUE = (51, 102, 204)


def _png(draw) -> bytes:
    """A 200x100 PNG: white, with ``draw(pixels)`` applied (pixels: float RGB, 0..1)."""
    import matplotlib.image
    import numpy as np

    pixels = np.ones((100, 200, 3))
    draw(pixels)
    out = io.BytesIO()
    matplotlib.image.imsave(out, pixels, format="png")
    return out.getvalue()


def test_a_single_colour_picture_is_blank():
    picture = browser.measure(_png(lambda p: None))
    assert (picture.width, picture.height, picture.colours, picture.background) == (200, 100, 1, (255, 255, 255))
    assert picture.blank


def test_a_picture_with_shapes_is_not_blank():
    def draw(p):
        p[10:40, 10:60] = [c / 255 for c in RED]
        p[50:90, 100:180] = [c / 255 for c in BLUE]
    picture = browser.measure(_png(draw))
    assert not picture.blank
    assert picture.has_colour(RED) and picture.has_colour(BLUE)
    assert picture.ink == pytest.approx((30 * 50 + 40 * 80) / (200 * 100))


def test_a_few_stray_pixels_are_still_blank():
    def draw(p):
        p[0, 0] = [0, 0, 0]
        p[0, 1] = [0.5, 0.5, 0.5]
    picture = browser.measure(_png(draw))
    assert picture.colours == 3 and picture.blank  # 2 pixels of 20,000: under MIN_INK


PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolcall-sim check</title>
<style>body {{ font-family: sans-serif; margin: 24px; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #999; padding: 4px 8px; }} .bad {{ background: #fdd; }}</style></head>
<body><h1>Invariants: contract</h1>
<table><tr><th>property</th><th>contract</th></tr>
<tr><td>at_most_once</td><td>holds</td></tr><tr class="bad"><td>truthful_result</td><td>violated</td></tr></table>
<svg xmlns="http://www.w3.org/2000/svg" width="600" height="240" viewBox="0 0 600 240">
<rect x="20" y="20" width="260" height="120" fill="rgb{RED}"/>
<circle cx="440" cy="120" r="90" fill="rgb{BLUE}"/>
<text x="20" y="200" font-size="24">agent</text></svg>
<p><img alt="embedded" src="data:image/png;base64,{{png}}"></p>
</body></html>
"""


# The tests that take screenshots here and in tests/test_one_run_report.py run in one
# worker process, so they share its one browser (tests/browser.py Rule 2) instead of
# starting one in each worker (tests/conftest.py: a module-wide fixture's group).
XDIST_GROUP = browser.XDIST_GROUP


@pytest.fixture(scope="module")
def chromium():
    return browser.require_browser()


def test_a_self_contained_page_is_drawn(chromium, tmp_path):
    embedded = base64.b64encode(_png(lambda p: p.__setitem__((slice(0, 100), slice(0, 200)), [0.2, 0.6, 0.2])))
    page = tmp_path / "index.html"
    page.write_text(PAGE.replace("{png}", embedded.decode()), encoding="utf-8")
    picture = browser.measure(browser.screenshot(page, browser=chromium))
    assert (picture.width, picture.height) == browser.WINDOW
    assert not picture.blank, picture
    assert picture.background == (255, 255, 255)
    # The inline SVG's shapes and the embedded PNG are drawn, not only the text.
    assert picture.has_colour(RED, 20_000) and picture.has_colour(BLUE, 20_000)
    assert picture.has_colour((51, 153, 51), 10_000)


def test_an_empty_page_is_blank(chromium, tmp_path):
    page = tmp_path / "empty.html"
    page.write_text("<!doctype html><html><body></body></html>", encoding="utf-8")
    picture = browser.measure(browser.screenshot(page, browser=chromium))
    assert picture.blank, picture


# ---------------------------------------------------------------------------
# .ci/browser: CI installs the browser when it is missing
# ---------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def _ci_browser(tmp_path, tools: dict[str, str]) -> tuple[int, str, list[str]]:
    """Run .ci/browser with a PATH of only ``tools`` (name -> bash body): fake apt-get and
    browsers that log their calls, so nothing is installed for real."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for name, body in tools.items():
        tool = bin_dir / name
        tool.write_text(f"#!{shutil.which('bash')}\n{body}\n")
        tool.chmod(0o755)
    env = {"PATH": str(bin_dir), "LOG": str(log), "HOME": str(tmp_path)}
    proc = subprocess.run([shutil.which("bash"), str(ROOT / ".ci" / "browser")], capture_output=True, text=True,
                          env=env, check=False, cwd=tmp_path)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, calls


APT = 'echo "apt-get $DEBIAN_FRONTEND $*" >> "$LOG"'


def test_ci_installs_chromium_when_no_browser_is_there(tmp_path):
    code, said, calls = _ci_browser(tmp_path, {"apt-get": APT})
    assert code == 0
    if os.geteuid() == 0:  # CI runs as root
        assert calls == ["apt-get noninteractive update -qq", "apt-get noninteractive install -y -qq chromium"]
        assert "installing Debian's chromium" in said
    else:  # no sudo on this PATH: said, nothing run
        assert calls == [] and "neither root nor sudo" in said


@pytest.mark.parametrize("name", browser.BROWSERS)
def test_ci_installs_nothing_when_a_browser_is_there(name, tmp_path):
    code, said, calls = _ci_browser(tmp_path, {"apt-get": APT, name: "exit 0"})
    assert (code, said, calls) == (0, "", [])


def test_ci_says_why_without_apt_get_and_still_runs_the_suite(tmp_path):
    code, said, calls = _ci_browser(tmp_path, {})
    assert code == 0 and "no apt-get" in said and calls == []


def test_ci_runs_the_browser_step_before_the_suite():
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index("bash .ci/browser") < run.index("python3 -m pytest")
    # the README's test command: the project with its `ci` extra (the docs site's MkDocs, the wheel builder)
    assert 'pip install --quiet --disable-pip-version-check -e ".[ci]"' in run
