"""Matplotlib figures of the report: one PNG per experiment, drawn by the experiment's hook."""

from __future__ import annotations

import logging

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from structpred.io import atomic_path  # noqa: E402

log = logging.getLogger(__name__)
PNG_METADATA = {"Software": None}  # no version stamp: equal inputs give equal bytes


def save_figure(fig, path) -> None:
    """Write ``fig`` as a PNG atomically, with no version stamp (byte-identical reruns)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata=PNG_METADATA)
    plt.close(fig)


def experiment_figure(experiment: str, table_path, path) -> None:
    """The figure of ``experiment`` (its registry hook) from its tidy table."""
    from structpred.experiments.registry import get

    get(experiment).figure(pd.read_csv(table_path), path)
    log.info("wrote %s", path)
