from pathlib import Path

from structpred.vision.voc_localization import make_devkit
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    dest = Path(snakemake.output[0]).parent  # noqa: F821
    raw = Path(snakemake.input.stamp).parent if "stamp" in snakemake.input.keys() else None  # noqa: F821
    folder = make_devkit(snakemake.wildcards.devkit, dest, raw=raw, synthetic=snakemake.params.synthetic)  # noqa: F821
    log.info("VOC devkit %s in %s", snakemake.wildcards.devkit, folder)  # noqa: F821
