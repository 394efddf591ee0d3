import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.experiments.m4n import run_job  # noqa: E402
from structpred.experiments.results import make_rows, write_csv  # noqa: E402
from structpred.experiments.splits import load_split  # noqa: E402

wc = snakemake.wildcards  # noqa: F821
split, meta = load_split(snakemake.input[0])  # noqa: F821
rows, history = run_job(split, meta, experiment=wc.experiment, dataset=wc.dataset,
                        method=wc.method, split_index=int(wc.split),
                        settings=snakemake.params.settings, seed=snakemake.params.seed,  # noqa: F821
                        n_jobs=snakemake.threads)  # noqa: F821
write_csv(history, snakemake.output.history)  # noqa: F821
write_csv(make_rows(rows), snakemake.output.rows)  # noqa: F821
