import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

import pandas as pd  # noqa: E402

from structpred.data.store import load  # noqa: E402
from structpred.experiments.agm import cross_validate  # noqa: E402
from structpred.experiments.results import write_csv  # noqa: E402

arrays, _ = load(snakemake.input[0])  # noqa: F821
records = cross_validate(arrays, snakemake.wildcards.method, snakemake.params.settings,  # noqa: F821
                         snakemake.params.seed)  # noqa: F821
write_csv(pd.DataFrame.from_records(records), snakemake.output[0])  # noqa: F821
