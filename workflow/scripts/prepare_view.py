from pathlib import Path

from structpred.data.store import prepare
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    prepare(snakemake.wildcards.view, Path(snakemake.input.stamp).parent, Path(snakemake.output[0]))  # noqa: F821
