import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.data.store import prepare  # noqa: E402

prepare(snakemake.wildcards.view, Path(snakemake.input.stamp).parent, Path(snakemake.output[0]))  # noqa: F821
