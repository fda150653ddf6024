"""Screenshots of a check report's page, as a reviewer's browser draws it.

    python -m toolcall_sim.ci.screenshots OUT_DIR REPORT_DIR [--height PX] [--sweep SWEEP_DIR]

Theory of operation
-------------------
Issue 37 wants the report judged by how it looks, so this script takes the pictures a
reviewer would see: the top of ``REPORT_DIR/index.html`` (the answer and the table of
contents), a finding opened by a direct link (``index.html#<its id>``), the design
comparison (``#compare``) and the double-run plot (``#sweep``), each a PNG
``WIDTH_PX`` wide and ``--height`` high in ``OUT_DIR``. Each is one run of Debian's
``chromium`` (``--headless --screenshot``); the ids are the page's own
(reports/page_nav.py Rule 1), read from the page, and a part the report does not have
is skipped with a line that says so. The double-run plot of ``toolcall-sim sweep
--report SWEEP_DIR`` (its SVG file, reports/sweep.py ``PLOT_DOUBLE_RUNS``) is taken
from ``--sweep SWEEP_DIR`` when the page has none.

Rule 1. No browser, no pictures, no failure: without ``chromium`` on PATH the script
        says so in one line (and how to install it) and exits 0, so a machine without
        it can run the same steps.
Rule 2. A link is drawn as a browser shows it once scrolled: headless Chromium's
        ``--screenshot`` of a page scrolled to a fragment comes out blank (measured:
        a single colour, for any page), so a linked part is loaded in a full-window
        ``<iframe>`` of a small page written to a temporary folder; the frame scrolls to
        the fragment and runs the page's own script (which opens a folded finding), and
        the window itself is never scrolled.
Rule 3. Each browser gets a throw-away profile (``--user-data-dir``), so two runs never
        share a profile lock; ``--no-sandbox`` because CI runs as root. A browser that
        writes no PNG within ``TIMEOUT_S`` fails the script (exit 1) with the end of its
        stderr; a folder that holds no ``index.html``, or a ``--sweep`` folder that holds
        no double-run plot, is bad input (exit 2).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from html import escape
from pathlib import Path

BROWSER = "chromium"
INSTALL = "apt-get install -y chromium"
WIDTH_PX = 1400
HEIGHT_PX = 1000
TIMEOUT_S = 120  # only against a hung browser
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-extensions", "--disable-dev-shm-usage")
# (file stem, the page id it shows, what it shows); the finding's id is read from the page
SHOTS = (("top", None, "the top of the page"),
         ("finding", "", "a finding, opened by a direct link"),
         ("compare", "compare", "the design comparison"),
         ("double-runs", "sweep", "the double-run plot"))
PICTURE = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html, body {{ margin: 0; }} "
           "img {{ width: 100%; display: block; }}</style></head><body><img src=\"{src}\" alt=\"\"></body></html>\n")
FRAME = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html, body {{ margin: 0; overflow: hidden; }} "
         "iframe {{ border: 0; width: 100vw; height: 100vh; display: block; }}</style></head>"
         "<body><iframe src=\"{src}\"></iframe></body></html>\n")


def first_finding(html: str) -> str | None:
    """The id of the page's first finding: a new one if there is one, else the first."""
    start = html.find('id="findings"')
    if start < 0:
        return None
    found = re.findall(r'<details class="fold" id="([^"]+)"( open)?><summary><h3><span class="new">',
                       html[start:])
    if found:
        return found[0][0]
    first = re.search(r'<details class="fold" id="([^"]+)"', html[start:])
    return first.group(1) if first else None


def png_size(data: bytes) -> tuple[int, int] | None:
    """A PNG's width and height from its header, or None when it is not a PNG."""
    if len(data) < 24 or not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def shoot(browser: str, url: str, out: Path, height_px: int, scratch: Path) -> None:
    """One screenshot of ``url`` into ``out`` (Rule 3), or RuntimeError saying why not."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=scratch)
    argv = [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH_PX},{height_px}",
            f"--screenshot={out}", url]
    out.unlink(missing_ok=True)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{browser} wrote no screenshot of {url} within {TIMEOUT_S} s") from None
    if not out.is_file():
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"{browser} wrote no screenshot of {url} (exit {done.returncode}): {tail}")


def take(out_dir: Path, report_dir: Path, height_px: int = HEIGHT_PX, browser: str | None = None,
         say=print, sweep_dir: Path | None = None) -> list[Path]:
    """Every screenshot the report has a part for (``SHOTS``), written into ``out_dir``;
    the double-run plot from ``sweep_dir`` when the page has none."""
    from toolcall_sim.reports.sweep import PLOT_DOUBLE_RUNS

    page = report_dir / "index.html"
    plot = None if sweep_dir is None else sweep_dir / PLOT_DOUBLE_RUNS
    html = page.read_text(encoding="utf-8")
    browser = browser or shutil.which(BROWSER)
    if browser is None:
        say(f"screenshots: skipped: no {BROWSER} on PATH (install it with `{INSTALL}`)")
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="toolcall-sim-shots-") as tmp:
        scratch = Path(tmp)
        for stem, anchor, what in SHOTS:
            if anchor == "":
                anchor = first_finding(html)
            url = page.resolve().as_uri()
            if anchor == "sweep" and f'id="{anchor}"' not in html and plot is not None and plot.is_file():
                anchor = None  # the sweep report's own picture, as wide as the window
                what += f" ({plot})"
                wrapper = scratch / f"{stem}.html"
                wrapper.write_text(PICTURE.format(src=escape(plot.resolve().as_uri())), encoding="utf-8")
                url = wrapper.as_uri()
            elif stem != "top" and (anchor is None or f'id="{anchor}"' not in html):
                say(f"screenshots: {stem}: skipped: the page has no {f'#{anchor}' if anchor else 'finding'} ({what})")
                continue
            if anchor is not None:  # Rule 2: the linked part in a frame, the window not scrolled
                frame = scratch / f"{stem}.html"
                frame.write_text(FRAME.format(src=escape(f"{url}#{anchor}")), encoding="utf-8")
                url = frame.as_uri()
            out = out_dir / f"{stem}.png"
            shoot(browser, url, out, height_px, scratch)
            width, height = png_size(out.read_bytes()) or (0, 0)
            say(f"screenshots: {out} ({width}x{height}): {what}" + (f" (#{anchor})" if anchor else ""))
            written.append(out)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolcall_sim.ci.screenshots",
                                     description="screenshots of a check report's page (needs chromium)")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="where the PNG files go (made if missing)")
    parser.add_argument("report_dir", metavar="REPORT_DIR", help="a report folder holding index.html")
    parser.add_argument("--height", type=int, default=HEIGHT_PX, help=f"window height in pixels (default {HEIGHT_PX})")
    parser.add_argument("--sweep", metavar="SWEEP_DIR", default=None,
                        help="a `toolcall-sim sweep --report` folder: its double-run plot, when the page has none")
    args = parser.parse_args(argv)
    report = Path(args.report_dir)
    if not (report / "index.html").is_file():
        print(f"screenshots: {report}: no index.html (a report folder of toolcall-sim check, or --report DIR)",
              file=sys.stderr)
        return 2
    if not 100 <= args.height <= 20_000:
        print(f"screenshots: --height: expected 100 to 20000 pixels, got {args.height}", file=sys.stderr)
        return 2
    if args.sweep is not None:  # a mistyped folder would otherwise leave the plot out without a word
        from toolcall_sim.reports.sweep import PLOT_DOUBLE_RUNS

        if not (Path(args.sweep) / PLOT_DOUBLE_RUNS).is_file():
            print(f"screenshots: --sweep {args.sweep}: no {PLOT_DOUBLE_RUNS} (a toolcall-sim sweep --report folder)",
                  file=sys.stderr)
            return 2
    try:
        take(Path(args.out_dir), report, args.height, sweep_dir=None if args.sweep is None else Path(args.sweep))
    except RuntimeError as err:
        print(f"screenshots: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
