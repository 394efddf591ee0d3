import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.report.figures import experiment_figure  # noqa: E402

experiment_figure(snakemake.wildcards.experiment, snakemake.input[0], snakemake.output[0])  # noqa: F821
