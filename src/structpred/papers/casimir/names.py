"""Names shared by Casimir's experiments and their report pages: the methods, the per-epoch
measures of a run (in the order the curve tables give them) and how ``c`` (``lam = c / n``) reads."""

from __future__ import annotations

METHODS = ("SGD", "BCFW", "SVRG", "Casimir-SVRG-const", "Casimir-SVRG-adapt")
#: NER (Figures 2, 5): per-epoch measures
NER_MEASURES = ("train_objective", "testa_objective", "testa_token_f1", "testa_entity_f1",
                "testb_objective", "testb_token_f1", "testb_entity_f1")
#: VOC localisation (Figures 3, 4, 6, 7): per-epoch measures
VOC_MEASURES = ("train_objective", "held_objective", "held_corloc", "held_ap", "held_mean_iou", "train_corloc")


def c_label(c) -> str:
    """``1``, ``0.1``, ``0.01``: how ``c`` reads in job names and tables."""
    return f"{float(c):g}"
