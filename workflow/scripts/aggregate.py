from structpred.report.aggregate import aggregate_files
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    aggregate_files(snakemake.input, snakemake.params.references,  # noqa: F821
                    snakemake.output.table, snakemake.output.tests,  # noqa: F821
                    snakemake.output.selection, snakemake.params.config)  # noqa: F821
