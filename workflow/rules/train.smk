# One job = one (experiment, dataset, method, split): the experiment's run function (for the
# M4N tables the whole lambda grid and its model selection, a task's `threads` lambdas at a
# time). Experiments with a model-selection stage run it once per (dataset, method) first.


rule select_model:
    input:
        unpack(selection_inputs),
    output:
        "results/{experiment}/{dataset}/{method}/selection.csv",
    params:
        settings=job_settings,
        seed=config["seed"],
    log:
        "logs/select/{experiment}/{dataset}/{method}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=240,
    conda:
        ENV
    script:
        "../scripts/select_model.py"


rule run_job:
    input:
        unpack(job_inputs),
    output:
        rows="results/{experiment}/{dataset}/{method}/split{split}.csv",
        history="results/{experiment}/{dataset}/{method}/split{split}.history.csv",
    params:
        settings=job_settings,
        seed=config["seed"],
    log:
        "logs/jobs/{experiment}/{dataset}/{method}/split{split}.log",
    threads: job_threads
    resources:
        mem_mb=lambda wc, threads: 4000 * threads,
        runtime=240,
    conda:
        ENV
    script:
        "../scripts/run_job.py"
