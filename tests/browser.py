"""A page as a browser draws it: a headless Chromium screenshot, and whether it is blank.

Theory of operation
-------------------
Issue 15 wants ``index.html`` seen the way a reviewer sees it, not only parsed: a page
whose CSS hides everything, whose embedded pictures do not decode, or which the browser
refuses, still parses. So a test renders the page in headless Chromium (Debian's
``chromium``; ``chromium-browser`` and Google's ``google-chrome`` are found too) with
``--headless --screenshot=FILE --window-size=W,H file://...`` and measures the PNG.

Rule 1. The browser is found on PATH (``find_browser``); a test calls ``require_browser``,
        which skips with the reason and the install command when there is none, except
        under CI (``CI`` set, as ``.ci/run`` and GitHub Actions run), where a missing
        browser is a failure: ``.ci/run`` installs ``chromium`` when it is missing, so a
        skip there would hide a broken install step.
Rule 2. Each screenshot gets its own throw-away profile (``--user-data-dir``): two tests
        or two pytest workers never share a profile lock. ``--no-sandbox`` because CI runs
        as root, where Chromium refuses its sandbox; the page is our own local file.
Rule 3. Blank is measured, not guessed (``measure``): the PNG is decoded (Pillow,
        matplotlib's own image library; its ``getcolors`` counts the colours in C, where
        a numpy sort of the 5 million pixels of a tall page took 0.2-0.4 s of CPU per
        screenshot), its most common colour is the background, and the
        page is blank when it has fewer than ``MIN_COLOURS`` distinct colours or less than
        ``MIN_INK`` of its pixels differ from the background. A page with one heading is
        over both thresholds (anti-aliased text alone brings dozens of colours); a white
        or single-colour page is under them.
Rule 4. No wall-clock assertion: the timeout only stops a hung browser, and then the
        test fails saying so.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = "apt-get install -y chromium"  # Debian's package; .ci/run runs it when the browser is missing
WINDOW = (1280, 2000)  # width, height in CSS pixels (the window)
MIN_COLOURS = 3
MIN_INK = 0.0005  # share of pixels unlike the background: 1280 of 1280x2000
TIMEOUT_S = 120  # only against a hung browser (Rule 4)


class BrowserError(Exception):
    """The browser ran and gave no screenshot: its exit code and the end of its stderr."""


def find_browser() -> str | None:
    """The first headless-capable browser on PATH, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser() -> str:
    """The browser, or skip (locally) / fail (under CI) with the reason (Rule 1)."""
    import pytest

    found = find_browser()
    if found:
        return found
    why = f"no headless browser on PATH (looked for {', '.join(BROWSERS)}); install one with `{INSTALL}`"
    if os.environ.get("CI"):
        pytest.fail(f"{why}: .ci/run should have installed it")
    pytest.skip(why)


def screenshot(page: Path, window: tuple[int, int] = WINDOW, browser: str | None = None) -> bytes:
    """The PNG bytes of ``page`` (a local HTML file) drawn in a ``window``-sized headless
    browser window (Rule 2)."""
    browser = browser or find_browser()
    if browser is None:
        raise BrowserError(f"no browser found ({', '.join(BROWSERS)})")
    with tempfile.TemporaryDirectory(prefix="toolcall-sim-browser-") as scratch:
        png = Path(scratch) / "page.png"
        argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                "--disable-extensions", "--disable-dev-shm-usage", f"--user-data-dir={Path(scratch) / 'profile'}",
                f"--screenshot={png}", f"--window-size={window[0]},{window[1]}",
                Path(page).resolve().as_uri()]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
                                  env=dict(os.environ, HOME=scratch))
        except subprocess.TimeoutExpired:
            raise BrowserError(f"{browser} drew no screenshot within {TIMEOUT_S} s (hung)") from None
        if not png.exists() or png.stat().st_size == 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise BrowserError(f"{browser} exited {proc.returncode} without a screenshot: {tail}")
        return png.read_bytes()


@dataclass(frozen=True)
class Picture:
    """What a screenshot shows, in numbers (Rule 3)."""

    width: int
    height: int
    colours: int  # distinct RGB colours
    background: tuple[int, int, int]  # the most common colour
    ink: float  # share of pixels unlike the background
    counts: dict = field(default_factory=dict, repr=False, compare=False)  # (r, g, b) -> pixels

    @property
    def blank(self) -> bool:
        return self.colours < MIN_COLOURS or self.ink < MIN_INK

    def has_colour(self, rgb: tuple[int, int, int], pixels: int = 100) -> bool:
        """Whether at least ``pixels`` pixels are exactly ``rgb``."""
        return self.counts.get(rgb, 0) >= pixels


def measure(png: bytes) -> Picture:
    """Decode ``png`` and count its colours and the share of non-background pixels. (The
    background is the most common colour; of two as common, the lower ``0xRRGGBB``.)"""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        rgb = image.convert("RGB")  # a palette, greyscale or alpha channel read as its RGB
    width, height = rgb.size
    colours = rgb.getcolors(maxcolors=width * height)  # [(pixels, (r, g, b))], every colour
    top, background = max(colours, key=lambda c: (c[0], -((c[1][0] << 16) | (c[1][1] << 8) | c[1][2])))
    table = {colour: pixels for pixels, colour in colours}
    return Picture(width, height, len(colours), background, 1.0 - top / (width * height), table)
