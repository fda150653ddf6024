"""A page as a browser draws it: a headless Chromium screenshot, and whether it is blank.

Theory of operation
-------------------
Issue 15 wants ``index.html`` seen the way a reviewer sees it, not only parsed: a page
whose CSS hides everything, whose embedded pictures do not decode, or which the browser
refuses, still parses. So a test renders the page in headless Chromium (Debian's
``chromium``; ``chromium-browser`` and Google's ``google-chrome`` are found too) and
measures the PNG: the page is opened (``Page.navigate``), and once it has loaded
(``Page.loadEventFired``) the window is captured (``Page.captureScreenshot``), through the
DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages ended by a NUL
byte, the browser reading fd 3 and writing fd 4), as ``--headless --screenshot`` does
inside the browser.

Rule 1. The browser is found on PATH (``find_browser``); a test calls ``require_browser``,
        which skips with the reason and the install command when there is none, except
        under CI (``CI`` set, as ``.ci/run`` and GitHub Actions run), where a missing
        browser is a failure: ``.ci/run`` installs ``chromium`` when it is missing, so a
        skip there would hide a broken install step.
Rule 2. One browser per test process, started at the first screenshot and kept for
        the next ones (``_Chromium``): a start is about 0.9 s of CPU (a dozen processes),
        a page in a running browser about 0.1 s, and a suite takes four screenshots. Each
        page is loaded into the same tab, so nothing of the page before is left to draw.
        The browser has its own throw-away profile (``--user-data-dir``): two pytest
        workers never share a profile lock. It is closed at exit, and it ends by itself
        when its pipe closes (measured: within a second after this process is killed).
        ``--no-sandbox`` because CI runs as root, where Chromium refuses its sandbox;
        the page is our own local file.
Rule 3. Blank is measured, not guessed (``measure``): the PNG is decoded (Pillow,
        matplotlib's own image library; its ``getcolors`` counts the colours in C, where
        a numpy sort of the 5 million pixels of a tall page took 0.2-0.4 s of CPU per
        screenshot), its most common colour is the background, and the
        page is blank when it has fewer than ``MIN_COLOURS`` distinct colours or less than
        ``MIN_INK`` of its pixels differ from the background. A page with one heading is
        over both thresholds (anti-aliased text alone brings dozens of colours); a white
        or single-colour page is under them.
Rule 4. No wall-clock assertion: the timeout only stops a hung browser, and then the
        test fails saying so (and the next screenshot starts a new browser).
"""

from __future__ import annotations

import atexit
import base64
import io
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = "apt-get install -y chromium"  # Debian's package; .ci/run runs it when the browser is missing
WINDOW = (1280, 2000)  # width, height in CSS pixels (the window)
MIN_COLOURS = 3
MIN_INK = 0.0005  # share of pixels unlike the background: 1280 of 1280x2000
TIMEOUT_S = 120  # only against a hung browser (Rule 4)
XDIST_GROUP = "browser"  # the tests that take screenshots, in one worker (Rule 2)


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
    running = _RUNNING.get(browser)
    if running is None:
        running = _RUNNING[browser] = _Chromium(browser)
    try:
        return running.screenshot(Path(page).resolve().as_uri(), window)
    except BrowserError:
        _RUNNING.pop(browser, None)
        running.close()
        raise


# browser path -> the browser this process keeps running for its screenshots (Rule 2)
_RUNNING: dict = {}


@atexit.register
def _close_all() -> None:
    while _RUNNING:
        _RUNNING.popitem()[1].close()


# Puts the browser's ends of the two pipes at fd 3 and 4, where --remote-debugging-pipe
# reads and writes, then becomes the browser (a fresh interpreter for a few milliseconds:
# subprocess can keep descriptors open but cannot number them).
_AT_3_AND_4 = ("import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
               "os.execv(sys.argv[3], sys.argv[3:])")


class _Chromium:
    """A headless Chromium driven over its DevTools pipe: one tab, one page at a time."""

    def __init__(self, path: str):
        self.path = path
        self.scratch = tempfile.TemporaryDirectory(prefix="toolcall-sim-browser-")
        to_browser, self.to_browser = os.pipe()
        self.from_browser, from_this = os.pipe()
        argv = [sys.executable, "-c", _AT_3_AND_4, str(to_browser), str(from_this), path,
                "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                "--disable-extensions", "--disable-dev-shm-usage", f"--user-data-dir={Path(self.scratch.name) / 'profile'}",
                "--remote-debugging-pipe", "about:blank"]
        # Its stderr goes to a file, not a pipe nobody reads while it runs (a full pipe would
        # stop it mid-page); the end of it is quoted when it fails.
        self.stderr = Path(self.scratch.name) / "stderr.txt"
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(argv, pass_fds=(to_browser, from_this), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err,
                                         env=dict(os.environ, HOME=self.scratch.name))
        os.close(to_browser)
        os.close(from_this)
        self.received = b""
        self.last_id = 0
        self.events: list[dict] = []
        self.tab = None

    def screenshot(self, url: str, window: tuple[int, int]) -> bytes:
        deadline = time.monotonic() + TIMEOUT_S
        if self.tab is None:
            target = self.call("Target.createTarget", deadline, url="about:blank")["targetId"]
            self.tab = self.call("Target.attachToTarget", deadline, targetId=target, flatten=True)["sessionId"]
            self.call("Page.enable", deadline, self.tab)
        self.call("Emulation.setDeviceMetricsOverride", deadline, self.tab, width=window[0], height=window[1],
                  deviceScaleFactor=1, mobile=False)
        self.events.clear()  # a load event from before this navigation is not this page's
        self.call("Page.navigate", deadline, self.tab, url=url)
        self.wait_for("Page.loadEventFired", deadline)
        return base64.b64decode(self.call("Page.captureScreenshot", deadline, self.tab, format="png")["data"])

    def call(self, method: str, deadline: float, session: str | None = None, **params) -> dict:
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        try:
            os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        except OSError as err:
            raise self.failed(f"took no {method} ({err})") from None
        while True:
            answer = self.receive(deadline, method)
            if answer.get("id") == self.last_id:
                if "error" in answer:
                    raise BrowserError(f"{self.path}: {method} failed: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def wait_for(self, event: str, deadline: float) -> None:
        while not any(e.get("method") == event and e.get("sessionId") == self.tab for e in self.events):
            self.events.append(self.receive(deadline, event))

    def receive(self, deadline: float, waiting_for: str) -> dict:
        while b"\0" not in self.received:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise BrowserError(f"{self.path} drew no screenshot within {TIMEOUT_S} s (hung at {waiting_for})")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise self.failed(f"closed its pipe at {waiting_for}")
            self.received += chunk
        message, self.received = self.received.split(b"\0", 1)
        return json.loads(message)

    def failed(self, what: str) -> BrowserError:
        """The browser ended: its exit code and the end of its stderr."""
        try:
            code = self.proc.wait(5)
            tail = "\n".join(self.stderr.read_text(errors="replace").strip().splitlines()[-5:])
        except subprocess.TimeoutExpired:
            code, tail = "(still running)", ""
        return BrowserError(f"{self.path} {what}, exited {code} without a screenshot: {tail}")

    def close(self) -> None:
        for fd in (self.to_browser, self.from_browser):  # the browser ends on its closed pipe
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.scratch.cleanup()


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
