"""Data layer: registry of raw files (URL + sha256), acquisition (cache -> mirror ->
download, always verified), parsers to canonical arrays ("views"), and the on-disk store.

Public API::

    from structpred.data import SOURCES, VIEWS, fetch, status, prepare, load, summary
"""

from structpred.data.acquire import fetch, status
from structpred.data.discretize import equal_frequency_bins
from structpred.data.parsers import VIEWS, parse_view
from structpred.data.registry import SOURCES
from structpred.data.store import load, prepare, summary

__all__ = ["SOURCES", "VIEWS", "fetch", "status", "prepare", "load", "summary",
           "parse_view", "equal_frequency_bins"]
