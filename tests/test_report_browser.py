"""The committed report in a real browser: every page rendered by headless Chromium at 1280 x 800
(:mod:`structpred.report.browser`) has nothing wider than the window, every image loaded and shown
at the size it was drawn, every local link resolving, at most 12 screens of height, and the index
its headline verdicts inside the first screen. Skipped, with the reason, where Chromium is absent
(Debian: ``apt-get install chromium``; ``.ci/run`` installs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from structpred.report.browser import broken_links, find_browser, measure
from structpred.report.html import site_pages

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports"
WIDTH, HEIGHT, SCREENS = 1280, 800, 12
PAGES = sorted(p.name for p in REPORT.glob("*.html"))

needs_chromium = pytest.mark.skipif(find_browser() is None,
                                    reason="Chromium is not installed (Debian: apt-get install chromium)")


def test_the_report_is_the_site_its_configuration_names():
    import yaml

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert PAGES == sorted(site_pages(config["experiments"]))


@pytest.fixture(scope="module")
def measured():
    return {name: measure(REPORT / name, WIDTH, HEIGHT) for name in PAGES}


@needs_chromium
@pytest.mark.parametrize("name", PAGES)
def test_every_page_fits_the_window_loads_its_images_and_links(measured, name):
    m = measured[name]
    assert m["viewport"][0] == WIDTH
    assert m["scroll_width"] <= WIDTH and not m["wide"], f"{name}: wider than the window: {m['wide'][:3]}"
    assert m["height"] <= SCREENS * HEIGHT, f"{name}: {m['height']} px, {m['height'] / HEIGHT:.1f} screens"
    assert all(i["loaded"] for i in m["images"]), [i["src"] for i in m["images"] if not i["loaded"]]
    # figures are shown at the size they were drawn (their text is then at least 9 points on screen)
    shrunk = [(i["src"], i["natural"], i["shown"]) for i in m["images"] if i["rendered"] and i["shown"][0] < i["natural"][0] - 1]
    assert not shrunk, f"{name}: figures scaled down: {shrunk}"
    assert not broken_links(REPORT / name, m["links"]), broken_links(REPORT / name, m["links"])
    # every section has an id, a heading and a way back to the top; no heading outside a section
    assert "top" in m["ids"] and m["sections"] and not m["orphan_headings"], m["orphan_headings"]
    assert all(s["heading"] and (s["back_to_top"] or s["top"] < HEIGHT) for s in m["sections"]), m["sections"]


@needs_chromium
def test_the_index_shows_every_papers_headlines_in_its_first_screen(measured):
    m = measured["index.html"]
    # from the top of the page: the first 800 pixels at a 1280-pixel width
    assert m["headlines"] is not None and 0 <= m["headlines"]["top"] and m["headlines"]["bottom"] <= HEIGHT
    assert {f"hl-{paper}" for paper in ("M4N", "Casimir", "QS", "AGM")} <= set(m["ids"])
    # the navigation reaches every page
    assert {p for p in PAGES if p != "index.html"} <= {link.split("#")[0] for link in m["links"]}


def test_broken_links_finds_missing_files_and_fragments(tmp_path):
    (tmp_path / "a.html").write_text("<p id=here>x</p><a href='b.html#there'>b</a>")
    (tmp_path / "b.html").write_text("<h2 id='there'>b</h2>")
    links = ["b.html#there", "#here", "b.html#nowhere", "c.html", "https://example.org/x"]
    bad = broken_links(tmp_path / "a.html", links)
    assert len(bad) == 2 and bad[0].startswith("b.html#nowhere: no id") and bad[1].startswith("c.html: no file")
