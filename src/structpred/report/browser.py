"""The report as a browser lays it out: each page rendered by headless Chromium at a window size,
measured by a script run in the page (its height, anything wider than the window, every image
loaded and at what size, every link, every id, where the headline section ends).

Only Debian's ``chromium`` package is needed: the page is copied with a ``<base>`` pointing at its
folder (its relative links resolve as they do in place) and a measuring script, and Chromium's
``--dump-dom`` returns the document after the script has written its measurements into it.
``tests/test_report_browser.py`` asserts on them; ``python -m structpred.report.browser PAGE...``
prints them.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Debian's package installs ``chromium``; other distributions name it otherwise
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

MEASURE = r"""
<script>
window.addEventListener('load', function () { setTimeout(function () {
  var W = window.innerWidth, H = window.innerHeight, out = {};
  out.viewport = [W, H];
  out.height = document.documentElement.scrollHeight;
  out.scroll_width = document.documentElement.scrollWidth;
  out.wide = [];
  document.querySelectorAll('body *').forEach(function (e) {
    if (e.checkVisibility && !e.checkVisibility()) return;   // inside a closed <details>: not shown
    var r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > W + 0.5 || r.left < -0.5) && out.wide.length < 50)
      out.wide.push({tag: e.tagName.toLowerCase(), id: e.id || '', cls: e.className || '',
                     left: Math.round(r.left), right: Math.round(r.right),
                     text: (e.textContent || '').trim().slice(0, 60)});
  });
  out.images = Array.prototype.map.call(document.images, function (i) {
    var r = i.getBoundingClientRect();
    return {src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0,
            natural: [i.naturalWidth, i.naturalHeight], shown: [Math.round(r.width), Math.round(r.height)],
            rendered: r.width > 0 && (!i.checkVisibility || i.checkVisibility())};
  });
  out.links = Array.prototype.map.call(document.querySelectorAll('a[href]'), function (a) {
    return a.getAttribute('href');
  });
  out.ids = Array.prototype.map.call(document.querySelectorAll('[id]'), function (e) { return e.id; });
  var head = document.getElementById('headlines');
  out.headlines = head ? (function (r) { return {top: r.top, bottom: r.bottom}; })(head.getBoundingClientRect()) : null;
  out.sections = Array.prototype.map.call(document.querySelectorAll('section[id]'), function (s) {
    var r = s.getBoundingClientRect();
    return {id: s.id, top: Math.round(r.top + window.scrollY), height: Math.round(r.height),
            heading: (s.querySelector('h2') || {textContent: ''}).textContent.trim(),
            back_to_top: !!s.querySelector("a[href='#top']")};
  });
  out.orphan_headings = Array.prototype.filter.call(document.querySelectorAll('h2'), function (h) {
    return !h.closest('section[id]');
  }).map(function (h) { return h.textContent.trim(); });
  var pre = document.createElement('pre');
  pre.id = '__measure__';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 300); });
</script>
"""


def find_browser() -> str | None:
    """The path of a Chromium executable, ``None`` when none is installed."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _instrumented(page: Path) -> str:
    """The page's text with a ``<base>`` at its folder (links resolve as in place) and the script."""
    text = page.read_text(encoding="utf-8")
    base = f"<base href='{page.resolve().parent.as_uri()}/'>"
    text = re.sub(r"<head>", "<head>" + base, text, count=1) if "<head>" in text else base + text
    return text.replace("</body>", MEASURE + "</body>") if "</body>" in text else text + MEASURE


def measure(page, width: int = 1280, height: int = 800, browser: str | None = None, timeout: float = 120) -> dict:
    """Render ``page`` in headless Chromium in a ``width`` x ``height`` window and return the
    measurements (``viewport``; ``height``: the document's height in CSS pixels; ``wide``: elements
    reaching past the window; ``images``: each image, loaded or not, its natural and shown size;
    ``links``, ``ids``; ``headlines``: the box of the element ``#headlines`` from the top of the
    page, or None; ``sections``; ``orphan_headings``). The layout depends on the width only (no
    page uses the window's height), which is what the viewport reports reliably."""
    browser = browser or find_browser()
    if browser is None:
        raise FileNotFoundError("no Chromium executable (" + ", ".join(BROWSERS) + ")")
    return _measure(Path(page), width, height, browser, timeout)


def _measure(page: Path, width: int, height: int, browser: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="structpred-browser-") as tmp:
        copy = Path(tmp) / "page.html"
        copy.write_text(_instrumented(page), encoding="utf-8")
        cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
               "--no-first-run", "--no-default-browser-check", "--disable-extensions",
               "--allow-file-access-from-files", f"--user-data-dir={Path(tmp) / 'profile'}",
               f"--window-size={width},{height}", "--virtual-time-budget=10000", "--dump-dom", copy.as_uri()]
        env = {**os.environ, "HOME": tmp}
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    found = re.search(r"<pre id=\"__measure__\">(.*?)</pre>", done.stdout, re.S)
    if not found:
        raise RuntimeError(f"{page}: Chromium returned no measurements (exit {done.returncode}): "
                           f"{done.stderr.strip()[-400:]}")
    return json.loads(html.unescape(found.group(1)))


def broken_links(page, links, ids_of=None) -> list[str]:
    """The local links of ``page`` that do not resolve: a file that is not there, or a ``#fragment``
    no element of the target page has (``ids_of``: page path -> its ids, for the report's pages;
    a fragment into another file is checked by its ``id=`` attributes)."""
    page = Path(page).resolve()
    ids_of = ids_of or {}
    bad = []
    for link in links:
        parts = urlsplit(link)
        if parts.scheme or parts.netloc:     # an external address: not checked here
            continue
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not target.is_file():
            bad.append(f"{link}: no file {target}")
            continue
        if parts.fragment:
            ids = ids_of.get(target)
            if ids is None:
                ids = set(re.findall(r"\bid=['\"]?([^'\" >]+)", target.read_text(encoding="utf-8", errors="replace")))
                ids_of[target] = ids
            if unquote(parts.fragment) not in ids:
                bad.append(f"{link}: no id {parts.fragment!r} in {target.name}")
    return bad


def main(argv=None) -> int:
    """Print each page's height in screens, its overflow, its images and broken links."""
    argv = sys.argv[1:] if argv is None else argv
    width, height = 1280, 800
    for page in argv:
        m = measure(page, width, height)
        shrunk = [i for i in m["images"] if i["rendered"] and i["shown"][0] < i["natural"][0] - 1]
        print(f"{page}: {m['height']} px = {m['height'] / height:.1f} screens at {width} x {height}; "
              f"scroll width {m['scroll_width']}; {len(m['wide'])} elements wider than the window; "
              f"images {sum(i['loaded'] for i in m['images'])}/{len(m['images'])} loaded, {len(shrunk)} shrunk; "
              f"headlines {m['headlines']}")
        for w in m["wide"][:10]:
            print(f"   wide: {w}")
        for i in shrunk:
            print(f"   shrunk: {i['src']} {i['natural']} -> {i['shown']}")
        for s in m["sections"]:
            print(f"   section {s['id']}: top {s['top']}, {s['height']} px")
        for b in broken_links(page, m["links"]):
            print(f"   broken: {b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
