from structpred.report.experiment_figures import write_curve_figure
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    write_curve_figure(snakemake.wildcards.experiment, snakemake.wildcards.panel,  # noqa: F821
                       snakemake.input[0], snakemake.output[0])  # noqa: F821
