"""Saving the report's matplotlib figures (each experiment's report module draws its own)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from structpred.io import atomic_path  # noqa: E402

PNG_METADATA = {"Software": None}  # no version stamp: equal inputs give equal bytes


def save_figure(fig, path) -> None:
    """Write ``fig`` as a PNG atomically, with no version stamp (byte-identical reruns)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata=PNG_METADATA)
    plt.close(fig)
