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
