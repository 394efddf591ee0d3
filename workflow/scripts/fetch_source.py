import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.data.acquire import fetch  # noqa: E402

source = snakemake.wildcards.source  # noqa: F821
fetch(source, Path(snakemake.output.stamp).parent, mirror=snakemake.params.mirror)  # noqa: F821
