"""One lambda of a job's grid as a job of its own (rule fit_lambda): the experiment's run under
``only_lambda``, which fits that lambda into the job's fit cache (split<k>.fits/); the output is a
small record of the fit (its lambda, seconds, CPU seconds) that run_job adds to the job's costs."""

import json
from pathlib import Path

import numba

from structpred.errors import ConfigError
from structpred.io import write_text
from structpred.papers.registry import get
from structpred.runs.job_cpu import process_tree_cpu_seconds
from structpred.tables.fit_cache import LambdaFitted, only_lambda
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    wc = snakemake.wildcards  # noqa: F821
    numba.set_num_threads(1)   # one core: the grid's other lambdas are other jobs
    spec = get(wc.experiment)
    inputs = dict(snakemake.input)  # noqa: F821
    try:
        with only_lambda(int(wc.index)):
            spec.run(inputs, snakemake.params.settings, seed=snakemake.params.seed, dataset=wc.dataset,  # noqa: F821
                     method=wc.method, split=int(wc.split), threads=1,
                     checkpoint=str(Path(snakemake.output[0]).parent))  # noqa: F821
    except LambdaFitted as done:
        log.info("lam=%g %s (its fit took %.1f s)", done.lam, "fitted" if done.whole else "resumed or read from the cache",
                 done.record["seconds"])
        write_text(snakemake.output[0], json.dumps(  # noqa: F821
            {"lam": done.lam, "seconds": done.record["seconds"], "cpu_seconds": process_tree_cpu_seconds(),
             "cpu_partial": not done.whole}) + "\n")
    else:
        raise ConfigError(f"{wc.experiment} does not fit its lambdas through fit_grid: it cannot take lambda_jobs")
