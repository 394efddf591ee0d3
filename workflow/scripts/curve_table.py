from structpred.report.experiment_figures import write_curve_table
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    write_curve_table(snakemake.wildcards.experiment, snakemake.input, snakemake.output[0])  # noqa: F821
