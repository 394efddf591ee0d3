"""Shared fixtures: the raw-data mirror (env STRUCTPRED_MIRROR, else ../shared/data/raw)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def mirror_root() -> Path:
    env = os.environ.get("STRUCTPRED_MIRROR")
    return Path(env).resolve() if env else (REPO.parent / "shared" / "data" / "raw").resolve()


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The raw-data mirror; tests needing it are skipped when it is absent."""
    root = mirror_root()
    if not root.is_dir():
        pytest.skip(f"raw-data mirror not found at {root} (set STRUCTPRED_MIRROR)")
    return root
