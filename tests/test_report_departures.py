"""Departure texts' numbers computed from the table beside them (structpred.report.departures)."""

import pandas as pd
import pytest

from structpred.errors import ConfigError
from structpred.report.departures import fill

TABLE = pd.DataFrame({
    "dataset": ["ocr", "ocr", "ocr", "iris", "iris"],
    "method": ["M3N", "CRF", "M4N", "M3N", "CRF"],
    "metric": ["test_loss", "test_loss", "test_loss", "weighted_a", "weighted_b"],
    "mean": [0.127, 0.1145, 0.125, 0.33, 0.30],
    "reference": [0.162, 0.163, 0.162, 0.30, 0.31],
})


def test_delta_below_above_and_mixed_signs():
    assert fill("OCR {delta: dataset=ocr; scale=100; unit=points}.", TABLE, {}) == \
        "OCR 3.5 to 4.9 points below the paper."
    assert fill("{delta: dataset=iris; method=M3N}", TABLE, {}) == "0.03 above the paper"
    assert fill("{delta: dataset=iris}", TABLE, {}) == "0.01 below to 0.03 above the paper"


def test_ratio_within_globs_alternatives_and_other_tables():
    assert fill("{ratio: method=M3N|M4N; dataset=ocr; digits=3}", TABLE, {}) == "0.772 to 0.784 times the paper's"
    # within rounds up: 0.0485 -> 0.05, so the stated bound holds
    assert fill("{within: dataset=ocr}", None, {}) .startswith("n/a")
    assert fill("{within: table=other; dataset=ocr}", None, {"other": TABLE}) == "within 0.05 of the paper"
    assert fill("{delta: metric=weighted_*; method=CRF}", TABLE, {}) == "0.01 below the paper"


def test_no_matching_row_says_so_and_bad_filters_are_errors():
    assert fill("x {delta: dataset=letter} y", TABLE, {}) == \
        "x n/a (no row with a paper value matches dataset=letter) y"
    assert fill("{delta: nosuchcolumn=1}", TABLE, {}).startswith("n/a")
    assert fill("shell braces {m3n,crf}_cv.sh stay", TABLE, {}) == "shell braces {m3n,crf}_cv.sh stay"
    with pytest.raises(ConfigError, match="'dataset' is not column=value"):
        fill("{delta: dataset}", TABLE, {})
