from pathlib import Path

from structpred.experiments.results import write_csv
from structpred.report.claims import ledger
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    out = Path(snakemake.output[0])  # noqa: F821  (<report dir>/tables/claims.csv)
    write_csv(ledger(snakemake.input.checks, out.parent.parent), out)  # noqa: F821
