"""Saving the report's matplotlib figures (each experiment's report module draws its own), and the
conventions every figure follows so that people can read it on the report's pages:

- drawn at the size the page shows it: at most :data:`MAX_WIDTH_PX` pixels wide (the pages' text
  column at a 1280-pixel window), never scaled down, so that text of :data:`MIN_FONT_PT` points at
  :data:`DPI` dots per inch is at least 9 points on screen (``save_figure`` raises any smaller text
  to it, and warns of a figure drawn wider);
- the paper's value as :func:`paper_marker` (an open black diamond, named "paper" in the legend),
  never a dash that reads as an error bar's cap;
- legends outside the data (:func:`legend_outside`); log axes with a few round ticks
  (:func:`log_ticks`).
"""

from __future__ import annotations

import logging
import math

import importlib

import matplotlib

matplotlib.use("Agg")
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FixedLocator, FormatStrFormatter, MaxNLocator, NullLocator  # noqa: E402

from structpred.io import atomic_path  # noqa: E402

log = logging.getLogger(__name__)

PNG_METADATA = {"Software": None}  # no version stamp: equal inputs give equal bytes
DPI = 110
#: the widest figure the pages show unscaled (their text column at a 1280-pixel window)
MAX_WIDTH_PX = 1168
#: the smallest text of a figure, in points at :data:`DPI` (9.2 points on a 96-dpi screen)
MIN_FONT_PT = 8.0
#: the widest figure in inches, room left for the tight bounding box's margins
MAX_WIDTH_IN = 10.2

matplotlib.rcParams.update({"font.size": 9.5, "axes.titlesize": 10, "axes.labelsize": 9.5, "xtick.labelsize": 9,
                     "ytick.labelsize": 9, "legend.fontsize": 9, "figure.titlesize": 10.5,
                     "legend.title_fontsize": 9})


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` (the house style above applies), pyplot imported on the first
    figure: a job that only fits, as most workflow jobs do, never pays its import (about 0.3 s of
    the 2 to 3 s a job process spends starting up, measured 2026-11-29)."""
    return importlib.import_module("matplotlib.pyplot").subplots(*args, **kwargs)


def _readable(fig) -> None:
    """Raise every text of ``fig`` smaller than :data:`MIN_FONT_PT` to it (after a draw, so that
    the tick labels exist)."""
    fig.canvas.draw()
    for text in fig.findobj(Text):
        if text.get_text() and text.get_fontsize() < MIN_FONT_PT:
            text.set_fontsize(MIN_FONT_PT)


def save_figure(fig, path) -> None:
    """Write ``fig`` as a PNG atomically, with no version stamp (byte-identical reruns), its text
    at least :data:`MIN_FONT_PT` points; a figure wider than :data:`MAX_WIDTH_PX` is logged."""
    _readable(fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=DPI, bbox_inches="tight", metadata=PNG_METADATA)
        with open(tmp, "rb") as f:
            head = f.read(24)
    importlib.import_module("matplotlib.pyplot").close(fig)
    width = int.from_bytes(head[16:20], "big") if head[:4] == b"\x89PNG" else 0
    if width > MAX_WIDTH_PX:
        log.warning("%s is %d pixels wide, more than the %d the report shows unscaled", path, width, MAX_WIDTH_PX)


def paper_marker(ax, x, y, *, label: str | None = "paper", size: float = 34, **kw):
    """The paper's values: open black diamonds over the bars or points (never the dash of an
    error bar's cap), named ``label`` in the legend."""
    style = {"marker": "D", "s": size, "facecolor": "white", "edgecolor": "black", "linewidths": 1.3, "zorder": 5}
    return ax.scatter(x, y, label=label, **{**style, **kw})


def legend_outside(fig, axes=None, *, ncol: int | None = None, where: str = "upper center", **kw):
    """One legend for the whole figure, outside every axes (the figure's layout must be
    ``constrained``), with each label once, in the order the axes draw them, the paper's last."""
    axes = fig.axes if axes is None else list(axes)
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels and not label.startswith("_"):
                handles.append(h)
                labels.append(label)
    if not handles:
        return None
    order = sorted(range(len(labels)), key=lambda i: labels[i].startswith("paper"))   # the paper's last
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    if where.endswith("center") and not where.startswith(("right", "left")):   # a row above or below: as wide as the figure
        column = 8.4 * max(len(label) for label in labels) + 60       # pixels, at the legend's 9 points
        fits = max(1, int(0.98 * fig.get_figwidth() * DPI // column))
        ncol = min(ncol or len(labels), fits, len(labels))
    ncol = ncol or 1
    return fig.legend(handles, labels, loc=f"outside {where}", ncol=ncol, frameon=False, **kw)


def log_ticks(ax, axis: str = "y") -> None:
    """A log axis labelled at a few round values within its limits (1, 2, 5 per decade; where the
    range holds fewer than three, four evenly spaced round values), no minor labels: never a
    crowd of minor ticks."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    lo, hi = min(lo, hi), max(lo, hi)
    if not (lo > 0 and math.isfinite(hi)):
        return
    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    ticks = [m * 10.0 ** e for e in decades for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    if len(ticks) < 3:
        ticks = [t for t in MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if lo <= t <= hi and t > 0]
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FormatStrFormatter("%g"))
    target.set_minor_locator(NullLocator())


#: one colour per method in every figure (matplotlib's tab10 cycle by name; M4N never takes CRF's)
METHOD_COLOURS = {
    "M3N": "C0", "CRF": "C1", "M4N": "C2", "AGM": "C3", "SSVM": "C4", "AGM-SPMP": "C5",
    "SGD": "C0", "BCFW": "C1", "SVRG": "C2", "Casimir-SVRG-const": "C3", "Casimir-SVRG-adapt": "C4",
    "QS": "C3", "RNW": "C0", "KRR": "C1", "KDE": "C0",
    "Linear": "C0", "Hinge": "C1", "Logistic": "C2", "SVM-Struct": "C4", "Popularity": "C7",
}


def method_colour(method: str, fallback: int = 0) -> str:
    """The colour of ``method`` (its own, or ``C<fallback>`` for a name not listed, e.g. a variant)."""
    return METHOD_COLOURS.get(str(method), f"C{fallback % 10}")


def method_colours(methods) -> list[str]:
    """The colours of ``methods``: each its own (:data:`METHOD_COLOURS`), a name not listed, or one
    whose colour a method before it in ``methods`` took (SGD and M3N share C0 across the papers),
    the next colour no listed method of ``methods`` takes."""
    methods = [str(m) for m in methods]
    taken = {METHOD_COLOURS[m] for m in methods if m in METHOD_COLOURS}
    free = iter([c for c in (f"C{i}" for i in range(10)) if c not in taken] * 3)
    used, out = set(), []
    for m in methods:
        colour = METHOD_COLOURS.get(m)
        if colour is None or colour in used:
            colour = next(free, "C7")
        used.add(colour)
        out.append(colour)
    return out