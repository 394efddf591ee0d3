"""Exceptions that carry a message meant for the user (printed by the CLI without a traceback),
and the parameter check shared by every module."""

import math


class StructpredError(ValueError):
    """Base class: every error the library raises on bad input or missing data (a ValueError,
    as scikit-learn and numpy users expect for bad arguments)."""


class StructpredTypeError(StructpredError, TypeError):
    """Input of a type the library cannot take (e.g. non-numeric features)."""


class DataError(StructpredError):
    """Missing raw file, checksum mismatch, malformed file or unknown dataset name."""


class ConfigError(StructpredError):
    """The workflow configuration does not match its schema or names unknown things."""


def check_positive(value, what: str) -> float:
    """``value`` as a positive finite float, else one clear error naming ``what``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise StructpredError(f"{what} must be a positive number, got {value!r}") from None
    if not math.isfinite(out) or out <= 0:
        raise StructpredError(f"{what} must be a positive number, got {value!r}")
    return out


def check_positive_int(value, what: str) -> int:
    """``value`` as a positive int (``True``, ``2.5`` and strings refused), else one clear error
    naming ``what``."""
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise StructpredError(f"{what} must be a positive integer, got {value!r}") from None
    if isinstance(value, bool) or out != value or out < 1:
        raise StructpredError(f"{what} must be a positive integer, got {value!r}")
    return out


def check_choice(value, choices, what: str):
    """``value`` if it is one of ``choices``, else one clear error naming ``what`` and the choices."""
    if value not in choices:
        raise StructpredError(f"{what} must be one of {', '.join(choices)}, got {value!r}")
    return value
