"""Departure texts whose numbers come from the tables they sit beside, not from the hand that wrote them.

A departure (a config block's ``departures``) is text.  A placeholder in it is replaced, when the
report is rendered, by a range computed over the rows of a table that carry a paper value
(``reference``):

* ``{delta: <filters>}``: ours − paper, as ``"0.04 to 0.11 above the paper"`` (or ``below``, or
  ``"0.01 below to 0.03 above the paper"`` when the signs differ);
* ``{ratio: <filters>}``: ours / paper, as ``"1.3 to 2.6 times the paper's"``;
* ``{within: <filters>}``: the largest |ours − paper|, rounded up, as ``"within 0.02 of the paper"``.

``<filters>`` are ``column=value`` pairs joined by ``;``; a value ``a|b`` matches either, a value
with ``*`` is a glob (``metric=weighted_*``).  Three keys are not columns: ``table=<experiment>``
reads another table of the report (default: the one the departure sits beside), ``scale=100`` with
``unit= points`` writes fractions as percentage points, ``digits=N`` the decimals (default 2, or 1
when scaled).  A placeholder that matches no row renders as ``n/a (no row with a paper value
matches ...)``: a smoke run's shrunken table says so instead of repeating the paper run's numbers.
"""

from __future__ import annotations

import fnmatch
import math
import re

import pandas as pd

from structpred.errors import ConfigError

PLACEHOLDER = re.compile(r"\{(delta|ratio|within):\s*([^{}]*)\}")
OPTIONS = ("table", "scale", "unit", "digits")


def parse_filters(spec: str) -> tuple[dict, dict]:
    """``"dataset=ocr; scale=100"`` -> (column filters, options)."""
    filters, options = {}, {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"departure placeholder: '{part}' is not column=value (in '{spec}')")
        (options if key.strip() in OPTIONS else filters)[key.strip()] = value.strip()
    return filters, options


def matching_rows(table: pd.DataFrame, filters: dict) -> pd.DataFrame:
    """The rows with a paper value whose columns match every filter."""
    rows = table[table["reference"].notna()] if "reference" in table else table.iloc[:0]
    for column, value in filters.items():
        if column not in rows:
            return rows.iloc[:0]
        cells = rows[column].astype(str)
        keep = pd.Series(False, index=rows.index)
        for alternative in value.split("|"):
            keep |= cells.map(lambda c, a=alternative: fnmatch.fnmatchcase(c, a))
        rows = rows[keep]
    return rows


def _span(a: float, b: float, digits: int) -> str:
    x, y = f"{a:.{digits}f}", f"{b:.{digits}f}"
    return x if x == y else f"{x} to {y}"


def render_range(kind: str, values: pd.Series, options: dict) -> str:
    """The words for a range of deltas or ratios (already computed from the rows)."""
    scale = float(options.get("scale", 1))
    digits = int(options.get("digits", 2 if scale == 1 else 1))
    unit = f" {options['unit']}" if options.get("unit") else ""
    lo, hi = float(values.min()), float(values.max())
    if kind == "ratio":
        return f"{_span(lo, hi, digits)} times the paper's"
    if kind == "within":  # rounded up, so that the bound stays true
        bound = math.ceil(max(abs(lo), abs(hi)) * scale * 10**digits) / 10**digits
        return f"within {bound:.{digits}f}{unit} of the paper"
    lo, hi = lo * scale, hi * scale
    if hi <= 0:
        return f"{_span(-hi, -lo, digits)}{unit} below the paper"
    if lo >= 0:
        return f"{_span(lo, hi, digits)}{unit} above the paper"
    return f"{-lo:.{digits}f}{unit} below to {hi:.{digits}f}{unit} above the paper"


def fill(text: str, table: pd.DataFrame | None, tables: dict[str, pd.DataFrame]) -> str:
    """``text`` with every placeholder replaced from ``table`` (or ``tables[<table=...>]``)."""

    def one(match: re.Match) -> str:
        kind, spec = match.group(1), match.group(2)
        filters, options = parse_filters(spec)
        source = tables.get(options["table"]) if "table" in options else table
        rows = matching_rows(source, filters) if source is not None else pd.DataFrame()
        if rows.empty:
            return f"n/a (no row with a paper value matches {spec.strip()})"
        values = rows["mean"] / rows["reference"] if kind == "ratio" else rows["mean"] - rows["reference"]
        return render_range(kind, values, options)

    return PLACEHOLDER.sub(one, text)
