import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821 (snakemake injects it)
from _setup import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821

import pandas as pd  # noqa: E402

from structpred.data.store import load  # noqa: E402
from structpred.experiments.agm import run_split  # noqa: E402
from structpred.experiments.results import make_rows, write_csv  # noqa: E402

arrays, _ = load(snakemake.input.data)  # noqa: F821
cv = pd.read_csv(snakemake.input.cv)  # noqa: F821
chosen = dict(zip(cv.loc[cv["selected"], "loss"], cv.loc[cv["selected"], "lam"]))
rows = run_split(arrays, snakemake.wildcards.method, int(snakemake.wildcards.split), chosen,  # noqa: F821
                 snakemake.params.settings, snakemake.params.seed)  # noqa: F821
write_csv(make_rows(rows), snakemake.output[0])  # noqa: F821
