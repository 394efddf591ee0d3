import pandas as pd

from structpred.papers.registry import get
from structpred.tables.results import write_csv
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    wc = snakemake.wildcards  # noqa: F821
    records = get(wc.experiment).select(dict(snakemake.input), snakemake.params.settings,  # noqa: F821
                                        seed=snakemake.params.seed, dataset=wc.dataset, method=wc.method)  # noqa: F821
    write_csv(pd.DataFrame.from_records(records), snakemake.output[0])  # noqa: F821
