# One job = one (experiment, dataset, method, split): the whole lambda grid and model selection
# (a task's `threads` lambdas fitted in parallel).


rule audit_dataset:
    input:
        processed=f"{PROCESSED_DIR}/{{dataset}}.npz",
        stamp=lambda wc: f"{RAW_DIR}/{VIEWS[wc.dataset].source}/.verified",
    output:
        "results/datasets/{dataset}/audit/split0.csv",
    params:
        raw_dir=RAW_DIR,
    log:
        "logs/datasets/{dataset}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/audit_dataset.py"


rule train:
    input:
        "data/features/{experiment}/{dataset}/split{split}.npz",
    output:
        rows="results/{experiment}/{dataset}/{method}/split{split}.csv",
        history="results/{experiment}/{dataset}/{method}/split{split}.history.csv",
    wildcard_constraints:
        experiment="m4n_table1|m4n_table2",
    params:
        settings=lambda wc: job_settings(config, wc.experiment, wc.dataset, wc.method),
        seed=config["seed"],
    log:
        "logs/train/{experiment}/{dataset}/{method}/split{split}.log",
    threads: train_threads
    resources:
        mem_mb=lambda wc, threads: 4000 * threads,
        runtime=240,
    conda:
        ENV
    script:
        "../scripts/train.py"
