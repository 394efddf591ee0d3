import json
from pathlib import Path

import numba
import pandas as pd

from structpred.runs.numerics import write_record
from structpred.papers.registry import get
from structpred.tables.results import make_rows, write_csv
from structpred.runs.archive import cpu_model, job_commit, result_digest
from structpred.runs.job_cpu import process_tree_cpu_seconds
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    wc = snakemake.wildcards  # noqa: F821
    # numba's parallel loops (AdaGrad's dense step at hashed sizes) on the job's cores, not the machine's
    numba.set_num_threads(min(snakemake.threads, numba.config.NUMBA_NUM_THREADS))  # noqa: F821
    spec = get(wc.experiment)
    # a resumable job keeps its finished fits beside its output, e.g. results/.../split3.fits/
    resume = {"checkpoint": snakemake.output.rows.removesuffix(".csv") + ".fits"} if spec.resumable else {}  # noqa: F821
    # fits kept from an earlier, stopped run of this job: their CPU is not this process's; the fits of
    # its lambda jobs (rule fit_lambda) each recorded theirs
    lambda_fits = [json.loads(Path(f).read_text(encoding="utf-8"))
                   for f in dict(snakemake.input).get("lambda_fits", [])]  # noqa: F821
    resumed = (any(f["cpu_partial"] for f in lambda_fits) if lambda_fits else
               bool(resume) and Path(resume["checkpoint"]).is_dir() and any(Path(resume["checkpoint"]).iterdir()))
    rows, history = spec.run(
        dict(snakemake.input), snakemake.params.settings, seed=snakemake.params.seed,  # noqa: F821
        dataset=wc.dataset, method=wc.method, split=int(wc.split), threads=snakemake.threads, **resume)  # noqa: F821
    # the job's cost, however busy the machine (the rows' seconds are wall)
    cpu_seconds = process_tree_cpu_seconds() + sum(f["cpu_seconds"] for f in lambda_fits)
    write_csv(pd.DataFrame() if history is None else history, snakemake.output.history)  # noqa: F821
    rows = make_rows(rows)
    timing = rows["metric"] == "seconds"   # the CPU the time was measured on (structpred runs cost)
    rows["detail"] = rows["detail"].astype(object).where(~timing | rows["detail"].notna(), cpu_model())
    write_csv(rows, snakemake.output.rows)  # noqa: F821
    # beside it: the commit, the machine class and the fingerprints of the numerics paths the job ran
    # (structpred runs status compares them with today's code)
    # and the digests of the other jobs' rows it read (a rerun of one of those makes it stale) and
    # of its settings (a change of its config block does)
    runs = dict(snakemake.input).get("runs", [])  # noqa: F821
    inputs = {f.removeprefix("results/"): result_digest(f) for f in ([runs] if isinstance(runs, str) else runs)}
    write_record(snakemake.output.rows, spec.numeric_paths(snakemake.config, wc.dataset, wc.method),  # noqa: F821
                 job_commit(), cpu_seconds=cpu_seconds, cpu_partial=resumed, inputs=inputs,
                 settings=snakemake.params.settings,  # noqa: F821
                 fit_threads=numba.get_num_threads() if spec.threaded_fits else 1)  # noqa: F821
