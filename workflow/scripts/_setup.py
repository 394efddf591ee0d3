"""Shared start of every rule script: put src/ on the path and log to the rule's log file."""

import logging
import sys
from pathlib import Path


def setup(snakemake) -> logging.Logger:
    sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))
    handlers = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return logging.getLogger(f"rule.{snakemake.rule}")
