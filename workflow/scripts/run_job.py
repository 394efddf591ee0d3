import pandas as pd

from structpred.experiments.registry import get
from structpred.experiments.results import make_rows, write_csv
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    wc = snakemake.wildcards  # noqa: F821
    rows, history = get(wc.experiment).run(
        dict(snakemake.input), snakemake.params.settings, seed=snakemake.params.seed,  # noqa: F821
        dataset=wc.dataset, method=wc.method, split=int(wc.split), threads=snakemake.threads)  # noqa: F821
    write_csv(pd.DataFrame() if history is None else history, snakemake.output.history)  # noqa: F821
    write_csv(make_rows(rows), snakemake.output.rows)  # noqa: F821
