from structpred.report.experiment_figures import experiment_figure
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    experiment_figure(snakemake.wildcards.experiment, snakemake.input[0], snakemake.output[0],  # noqa: F821
                      snakemake.params.config)  # noqa: F821
