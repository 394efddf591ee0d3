from structpred.data.store import load
from structpred.tables.splits import SplitFeatures, build_split_features, save_split
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    s = snakemake.params.settings  # noqa: F821
    dataset, split = snakemake.wildcards.dataset, int(snakemake.wildcards.split)  # noqa: F821
    arrays, meta = load(snakemake.input[0])  # noqa: F821
    features = build_split_features(arrays, SplitFeatures.from_settings(s), view=dataset, split=split)
    save_split(snakemake.output[0], features,  # noqa: F821
               {"dataset": dataset, "split": split, "n_labels": int(meta["parsed"][2]), **s})
