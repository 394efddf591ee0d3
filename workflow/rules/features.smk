# Per-split features: a random train/val/test split, Nystrom Gaussian features fitted on train.


rule split_features:
    input:
        f"{PROCESSED_DIR}/{{dataset}}.npz",
    output:
        "data/features/{experiment}/{dataset}/split{split}.npz",
    params:
        settings=lambda wc: get(wc.experiment).feature_settings(config, wc.dataset),
    log:
        "logs/features/{experiment}/{dataset}/split{split}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        ENV
    script:
        "../scripts/split_features.py"
