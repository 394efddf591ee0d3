"""Method labels of M4N Table 2's configurations (``M4N-K10-warm``): K SP-MP iterations per oracle
call, warm or cold started; shared by the experiment (its jobs) and its report page."""

from __future__ import annotations

import re

from structpred.errors import ConfigError

_TABLE2_METHOD = re.compile(r"^M4N-K(?P<k>\d+)-(?P<ws>warm|cold)$")


def table2_method(n_iter: int, warm: bool) -> str:
    """Method label of one Table 2 configuration, e.g. ``M4N-K10-warm``."""
    return f"M4N-K{n_iter}-{'warm' if warm else 'cold'}"


def parse_table2_method(name: str) -> tuple[int, bool]:
    """Inverse of :func:`table2_method`."""
    match = _TABLE2_METHOD.match(name)
    if not match:
        raise ConfigError(f"not a Table 2 method label: {name!r} (expected e.g. 'M4N-K10-warm')")
    return int(match["k"]), match["ws"] == "warm"
