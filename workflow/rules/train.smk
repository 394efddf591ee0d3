# One job = one (experiment, dataset, method, split): the experiment's run function (for the
# M4N tables the whole lambda grid and its model selection, a task's `threads` lambdas at a
# time). Experiments with a model-selection stage run it once per (dataset, method) first.
# On the datasets an experiment's `lambda_jobs` lists, each lambda of a job's grid is a job of its
# own first (fit_lambda, one core), kept in the job's fit cache (split<k>.fits/), which run_job reads.


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


rule fit_lambda:
    input:
        unpack(fit_inputs),
    output:
        "results/{experiment}/{dataset}/{method}/split{split}.fits/lambda{index}.json",
    params:
        settings=job_settings,
        seed=config["seed"],
    log:
        "logs/jobs/{experiment}/{dataset}/{method}/split{split}.lambda{index}.log",
    wildcard_constraints:
        split=r"\d+",
        index=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    conda:
        ENV
    script:
        "../scripts/fit_lambda.py"


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
