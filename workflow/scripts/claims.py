from pathlib import Path

from structpred.tables.results import write_csv
from structpred.report.claims import ledger
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    out = Path(snakemake.output[0])  # noqa: F821  (<report dir>/tables/claims.csv)
    # the workflow's tables come from its own fresh results, not from the run archive: no archive status
    write_csv(ledger(snakemake.input.checks, out.parent.parent, staleness=None), out)  # noqa: F821
