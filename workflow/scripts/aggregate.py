import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.report.aggregate import aggregate_files  # noqa: E402

aggregate_files(snakemake.input, snakemake.params.references,  # noqa: F821
                snakemake.output.table, snakemake.output.tests)  # noqa: F821
