"""A job's settings as one object, built once where the job starts.

An experiment's ``settings(config, dataset, method)`` is a plain dict: Snakemake compares it
between runs (a rule's params) and a job's fit cache is keyed on it, so it stays the serialised
form.  The code that runs the job turns it into a frozen dataclass once, at the job's boundary
(:meth:`JobSettings.from_settings`, in ``Experiment.run``), where it is checked: a key the class
does not know or a field that no key gives is one :class:`~structpred.errors.ConfigError` line,
and a subclass checks its values in ``__post_init__``.  The object is then handed whole to the
functions that run the job and to the estimator factory, never relayed field by field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields

from structpred.errors import ConfigError


@dataclass(frozen=True)
class JobSettings:
    """Base of a job's settings object: a subclass is a frozen dataclass whose fields are the keys
    of its experiment's settings dict, and what the job adds to them (its labels' count, its
    seed).  A list among its values becomes a tuple; a subclass that checks its values in its own
    ``__post_init__`` calls this one first."""

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list):
                object.__setattr__(self, f.name, tuple(value))

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_settings(cls, settings: Mapping, **given):
        """The object of the experiment's ``settings`` and of ``given`` (what the job adds); an
        unknown key, or a field without a default that neither gives, is one ConfigError line."""
        data = {**settings, **given}
        known = cls.keys()
        unknown = [str(k) for k in data if k not in known]
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
        missing = [f.name for f in fields(cls)
                   if f.name not in data and f.default is MISSING and f.default_factory is MISSING]
        if missing:
            raise ConfigError(f"{cls.__name__}: missing setting(s) {', '.join(missing)}")
        return cls(**data)

    @classmethod
    def take(cls, settings: Mapping, **given) -> tuple[JobSettings, dict]:
        """``(the object of the keys of settings that are its fields, the other keys)``: for a job
        whose settings join several objects' (the split features' and the fits')."""
        known = cls.keys()
        own = {k: v for k, v in settings.items() if k in known}
        return cls.from_settings(own, **given), {k: v for k, v in settings.items() if k not in known}
