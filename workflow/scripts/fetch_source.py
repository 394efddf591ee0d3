from pathlib import Path

from structpred.data.acquire import fetch
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    fetch(snakemake.wildcards.source, Path(snakemake.output.stamp).parent,  # noqa: F821
          mirror=snakemake.params.mirror)  # noqa: F821
