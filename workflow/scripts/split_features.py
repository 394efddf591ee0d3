import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.data.store import load  # noqa: E402
from structpred.experiments.splits import build_split_features, save_split  # noqa: E402

s = snakemake.params.settings  # noqa: F821
dataset, split = snakemake.wildcards.dataset, int(snakemake.wildcards.split)  # noqa: F821
arrays, meta = load(snakemake.input[0])  # noqa: F821
features = build_split_features(arrays, view=dataset, split=split, seed=s["seed"],
                                fractions=s["fractions"], n_components=s["n_components"], whiten=s["whiten"],
                                subsample=s["subsample"])
save_split(snakemake.output[0], features,  # noqa: F821
           {"dataset": dataset, "split": split, "n_labels": int(meta["parsed"][2]), **s})
