import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

from structpred.experiments.datasets_audit import audit_rows  # noqa: E402
from structpred.experiments.results import make_rows, write_csv  # noqa: E402

rows = audit_rows(snakemake.wildcards.dataset, snakemake.input.processed,  # noqa: F821
                  raw_dir=Path(snakemake.params.raw_dir))  # noqa: F821
write_csv(make_rows(rows), snakemake.output[0])  # noqa: F821
