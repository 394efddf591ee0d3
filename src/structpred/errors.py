"""Exceptions that carry a message meant for the user (printed by the CLI without a traceback)."""


class StructpredError(ValueError):
    """Base class: every error the library raises on bad input or missing data (a ValueError,
    as scikit-learn and numpy users expect for bad arguments)."""


class StructpredTypeError(StructpredError, TypeError):
    """Input of a type the library cannot take (e.g. non-numeric features)."""


class DataError(StructpredError):
    """Missing raw file, checksum mismatch, malformed file or unknown dataset name."""


class ConfigError(StructpredError):
    """The workflow configuration does not match its schema or names unknown things."""
