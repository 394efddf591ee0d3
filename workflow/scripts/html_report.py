import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.report.html import write_index  # noqa: E402

write_index(snakemake.output[0], config=snakemake.params.config,  # noqa: F821
            tables=snakemake.input.tables, tests=snakemake.input.tests,  # noqa: F821
            figures=snakemake.input.figures, stamps=snakemake.input.stamps, results=snakemake.input.results,  # noqa: F821
            references=snakemake.params.references)  # noqa: F821
