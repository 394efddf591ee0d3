"""M4N (ICML 2020) Table 1's ordinal rows under other protocols: the sensitivity table
``m4n_ordinal_protocol``.

Each *variant* changes one thing of ``m4n_table1``'s protocol for the ordinal sets and keeps every
other setting: how the regression target is cut into the k labels (``binning``: equal-width,
k-means or equal-frequency bins, on the target or its logarithm; :func:`~structpred.data.discretize.bin_target`),
the scale of the training loss (``loss_scale: normalised``: ``|i - j| / (k - 1)`` instead of the
unnormalised ``|i - j|``; the losses the table reports stay in ``|i - j|`` units), or the split
sizes (``split_fractions``).  The variant ``table1`` is ``m4n_table1``'s protocol itself, rerun
here with today's code beside the others.

A job's ``dataset`` is ``<view>@<variant>``; it reads the parsed view and builds its split's
features itself (Nystrom features of 209 to 4177 rows take well under a second), with
``m4n_table1``'s seeds, so every binning and loss-scale variant of a split sees the same rows and
the same Nystrom centres as Table 1's job (a split-size variant draws its own split).  Its rows
carry the view as ``dataset`` and the variant in the column ``variant``; the paper's number of
the (dataset, method) cell is set beside every variant (``reference_key``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from structpred.data.store import load
from structpred.errors import ConfigError
from structpred.outputs import Multiclass
from structpred.papers.m4n.tables import SPACE_OF_LOSS, M4NJob, run_job
from structpred.papers.registry import Experiment, get, register
from structpred.tables.job import JobSettings
from structpred.tables.sensitivity import figure_by, render_by, tests_by
from structpred.tables.splits import SplitFeatures, build_split_features

#: what a variant may change of ``m4n_table1``'s protocol
VARIANT_KEYS = ("binning", "loss_scale", "split_fractions")
LOSS_SCALES = ("absolute", "normalised")
SEP = "@"


def job_dataset(view: str, variant: str) -> str:
    """``machine@equal_width``: the job of ``view`` under ``variant``."""
    return f"{view}{SEP}{variant}"


def parse_dataset(dataset: str) -> tuple[str, str]:
    """``(view, variant)`` of a job's dataset."""
    view, sep, variant = dataset.partition(SEP)
    if not sep or not variant:
        raise ConfigError(f"m4n_ordinal_protocol: dataset {dataset!r} is not <view>{SEP}<variant>")
    return view, variant


@dataclass(frozen=True)
class Variant(JobSettings):
    """What a job's settings add to Table 1's fits and to its split features: the variant's name and
    the scale of the training loss (``normalised``: ``|i - j| / (k - 1)``)."""

    variant: str
    loss_scale: str = "absolute"

    def __post_init__(self):
        super().__post_init__()
        if self.loss_scale not in LOSS_SCALES:
            raise ConfigError(f"m4n_ordinal_protocol: unknown loss_scale {self.loss_scale!r}; known: "
                              f"{', '.join(LOSS_SCALES)}")


def scaled_rows(rows: list[dict], factor: float) -> list[dict]:
    """The job's rows with the task losses (``val_loss``, ``test_loss``) multiplied by ``factor``
    (a model trained and scored on ``|i - j| / (k - 1)`` reports ``|i - j|``)."""
    return [{**r, "value": r["value"] * factor} if r["metric"] in ("val_loss", "test_loss") else r for r in rows]


@register
class OrdinalProtocol(Experiment):
    """Table 1's ordinal rows under other binnings, loss scales and split sizes (sensitivity)."""

    name = "m4n_ordinal_protocol"
    title = ("M4N (ICML 2020) Table 1, ordinal rows under other binnings of the target, loss scales and "
             "split sizes (sensitivity)")
    needs = ("view",)
    references_of = "m4n_table1"
    key = ("task", "dataset", "method", "variant", "metric")
    reference_key = ("task", "dataset", "method", "metric")

    def runs(self, config) -> dict[str, dict]:
        """view -> {variants, methods} of the block, every variant known; a view that
        ``m4n_table1``'s ordinal task does not list (a shrunk config's, e.g. the smoke run's) is
        left out."""
        own = config[self.name]
        listed = set(config["m4n_table1"]["tasks"].get("ord", {}).get("datasets", []))
        out = {}
        for view, spec in own["runs"].items():
            if view not in listed:
                continue
            unknown = [v for v in spec["variants"] if v not in own["variants"]]
            if unknown:
                raise ConfigError(f"{self.name}: {view} asks for unknown variant(s) {unknown}; "
                                  f"known: {', '.join(own['variants'])}")
            out[view] = {"variants": list(spec["variants"]),
                         "methods": list(spec.get("methods", config["m4n_table1"]["methods"]))}
        return out

    def jobs(self, config):
        n_splits = config["m4n_table1"]["n_splits"]
        return [(job_dataset(view, v), m, k) for view, spec in self.runs(config).items()
                for v in spec["variants"] for m in spec["methods"] for k in range(n_splits)]

    def view(self, config, dataset):
        return parse_dataset(dataset)[0]

    def settings(self, config, dataset, method):
        view, variant = parse_dataset(dataset)
        own, base = config[self.name], config["m4n_table1"]
        if variant not in own["variants"]:
            raise ConfigError(f"{self.name}: unknown variant {variant!r}; known: {', '.join(own['variants'])}")
        spec = own["variants"][variant] or {}
        table1 = get("m4n_table1").settings(config, view, method)
        if table1["task"] != "ord":
            raise ConfigError(f"{self.name}: {view} is not an ordinal dataset of m4n_table1")
        scale = Variant(variant, spec.get("loss_scale", "absolute")).loss_scale   # checked there
        return {**table1, "variant": variant,
                "binning": spec.get("binning", (base.get("binning") or {}).get(view)),
                "loss_scale": scale,
                "fractions": list(spec.get("split_fractions", base["split_fractions"])),
                "n_components": base["nystrom"]["n_components"], "whiten": base["nystrom"]["whiten"],
                "subsample": (base.get("subsample") or {}).get(view)}

    def numeric_paths(self, config, dataset, method):
        s = self.settings(config, dataset, method)
        return (f"{SPACE_OF_LOSS[s['loss']]}.{s['method']}", "features.nystrom")

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        view, variant = parse_dataset(dataset)
        arrays, meta = load(inputs["view"])
        k = int(meta["parsed"][2])
        # the settings join the split features', the variant's and the fits' (Table 1's): one object each
        features, rest = SplitFeatures.take(settings, seed=seed)
        protocol, fits = Variant.take(rest)
        job = M4NJob.for_split(fits, n_labels=k, seed=seed, dataset=view, split=split)
        factor = 1.0
        if protocol.loss_scale == "normalised":
            factor = float(k - 1)
            job = replace(job, loss=Multiclass.ordinal(k).loss_matrix / factor)
        rows, history = run_job(build_split_features(arrays, features, view=view, split=split), job,
                                experiment=self.name, dataset=view, method=method, split_index=split, n_jobs=threads)
        return [{**r, "variant": variant} for r in scaled_rows(rows, factor)], history

    def render(self, table, tests, config):
        return render_by(table, rows=["dataset", "variant"], metric="test_loss", note=(
            "Test loss |i - j| (mean ± std over the splits; lambda on validation), the paper's Table 1 cell "
            "beneath every variant. table1 = m4n_table1's protocol rerun here (k-means bins for the 10-bin sets, "
            "equal-frequency for the 5-bin ones); each other variant changes one thing: the binning of the "
            "target, the training loss divided by k - 1 (reported in |i - j| units), or the split sizes."))

    def figure(self, table, path, config):
        figure_by(table, path, panel="dataset", column="variant", metric="test_loss", ylabel="test loss |i - j|",
                  title="M4N Table 1 ordinal rows per protocol variant")

    def tests(self, selected, config):
        return tests_by(selected[selected["metric"] == "test_loss"], "variant")
