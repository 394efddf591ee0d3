"""The run archive's status in words, for the report and ``structpred runs status``: whether today's
code still computes an experiment's archived jobs (the committed ``tables/staleness.csv``, written by
``structpred runs status --write``, :mod:`structpred.runs.staleness`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_status(path) -> pd.DataFrame | None:
    """The committed status table, ``None`` when absent."""
    path = Path(path)
    return pd.read_csv(path, keep_default_na=False) if path.is_file() else None


def describe(row: dict) -> str:
    """One sentence for the report: what the status of an experiment's archive means."""
    if row["status"] == "fresh":
        return f"fresh: today's code reproduces the fingerprints of all {row['jobs']} archived jobs"
    if row["status"] == "stale":
        moved = f" (paths moved: {row['moved_paths']})" if row["moved_paths"] else ""
        since = f", archived at {row['since']}" if row["since"] else ""
        why = f" ({row['detail']})" if row["detail"] and not row["moved_paths"] else ""
        return (f"STALE: {row['stale']} of {row['jobs']} archived jobs are no longer what today's code "
                f"computes{moved}{since}{why}; the table is the archive's until they are rerun")
    if row["status"] == "verified":
        return (f"verified: {row['unknown']} of {row['jobs']} archived jobs carry no fingerprints ({row['detail']}); "
                "a sample of them, rerun from raw data, reproduced the table (`structpred runs verify`)")
    return (f"unknown: {row['unknown']} of {row['jobs']} archived jobs carry no fingerprints comparable "
            f"here ({row['detail']})")
