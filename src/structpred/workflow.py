"""What every Snakemake rule script shares: logging to the rule's log, and expected errors as one line.

A rule script is ``with rule_script(snakemake) as log: ...``.  An expected error (a
:class:`StructpredError`: missing data, a checksum mismatch, a bad config) is written as one
line to the console and to the rule's log, and the script exits with status 1: no Python
traceback.  Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

from structpred.errors import StructpredError


@contextlib.contextmanager
def rule_script(snakemake):
    """Log to stderr and to the rule's log file; turn a :class:`StructpredError` into one line."""
    handlers = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger(f"rule.{snakemake.rule}")
    try:
        yield log
    except StructpredError as exc:
        log.error("%s", exc)
        logging.shutdown()
        sys.exit(1)
