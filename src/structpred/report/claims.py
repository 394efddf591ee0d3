"""The claims ledger: every checkable claim of the four papers with a verdict computed from the
committed tables (``config/claims.yaml`` -> ``<report dir>/tables/claims.csv``, the report's first
section, ``structpred claims``).

A claim is a statement over one experiment's tables: its tidy table ``tables/<table>.csv``, its
paired tests ``<table>_tests.csv``, its grid-edge table ``<table>_selection.csv`` and its curves
``<table>_curves.csv``. Kinds of check:

* ``value``: a cell within tolerance of the paper's number, ``|ours - paper| <= max(abs, rel |paper|)``
  (``std: true`` adds our standard deviation over splits to the bound);
* ``order``: method ``a`` against ``b`` by the two-sided Wilcoxon test of the test table:
  ``below`` = mean difference < 0 and p < alpha, ``tie`` = p >= alpha, ``not_worse`` = not
  (difference > 0 and p < alpha); ``paper`` = the order of the paper's own numbers (a tie when
  they differ by at most ``tie`` times the larger: the papers print three digits). Quantifier
  ``most``: ``a``'s mean below ``b``'s on more than half of the table's datasets; ``each``: the
  relation holds by the paired test on every dataset of the table;
* ``best``: the method is bold, best or not significantly worse than the best (AGM's rule);
* ``trend``: the means of ``rows``, in order, ``increasing`` / ``decreasing`` (every step by more
  than the tolerance), ``flat`` (max - min within the tolerance; ``std``: every pair within the
  larger of their standard deviations) or ``not_flat``;
* ``curve``: two curves of mean and spread over seeds against oracle calls per n, each read as
  what a run has after ``x`` calls (its last evaluation at or before ``x``): ``below`` = a's mean
  is at most b's at every common budget from some budget on, and below it at the last common
  budget by more than both spreads or by the table's paired test over seeds (p < alpha, when the
  experiment's tests table pairs the two runs: task = figure, dataset = c); ``not_worse`` = at the last common budget, a is no worse than
  b by more than the tolerance (``better``: lower or higher values are better).

Headlines (``headlines:``): a paper's central claims, each decided from the ledger claims it
names (id patterns) by its rule (``all`` / ``most`` / ``any`` of the checkable ones hold) under its
``protocols`` (``paper``: only ``reproduced`` counts; ``any``: ``reproduced under`` any table too;
or a list of those tables): :func:`headlines`, the report's first screen and ``structpred claims``.

Verdicts: ``reproduced``; ``reproduced under <table>`` (fails on the claim's table, holds on one
of its ``protocols``: sensitivity or converged tables, or the same table read on another metric,
e.g. a selection rule's; a protocol with ``decides: false`` is shown, never decides); ``not
reproduced``; ``cannot check``
(the table or the cell is not there, or the data cannot be had: ``unavailable``).
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import yaml

from structpred.errors import ConfigError
from structpred.report.archive_status import read_status
from structpred.report.selection import edge_notes

REPRODUCED, NOT_REPRODUCED, CANNOT = "reproduced", "not reproduced", "cannot check"
UNDER = "reproduced under"
COLUMNS = ["id", "paper", "where", "statement", "kind", "table", "verdict", "ours", "paper_value", "test",
           "tolerance", "protocols", "grid_edges", "cause", "evidence", "archive"]
VALUE_COLUMNS = ("mean", "std", "reference", "detail")


# --- loading ----------------------------------------------------------------------------------

def load_claims(path) -> dict:
    """``config/claims.yaml`` validated by its schema: one line naming the first bad claim."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no claims file {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    schema = yaml.safe_load(resources.files("structpred.report").joinpath("claims.schema.yaml").read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = list(err.absolute_path)
        name = ""
        if len(where) >= 2 and where[0] in ("claims", "headlines") and isinstance(data, dict):
            kind = where[0][:-1]
            claim = data[where[0]][where[1]]
            name = f"{kind} {claim.get('id', '#' + str(where[1]))!r}" if isinstance(claim, dict) else f"{kind} #{where[1]}"
            where = where[2:]
        at = ".".join(str(w) for w in where)
        raise ConfigError(f"{path}: {name or 'top level'}{' at ' + at if at else ''}: {err.message}")
    ids = [c["id"] for c in data["claims"]]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ConfigError(f"{path}: claim id {dup[0]!r} appears more than once")
    ids = [h["id"] for h in data.get("headlines", [])]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ConfigError(f"{path}: headline id {dup[0]!r} appears more than once")
    return data


class Tables:
    """The report folder's tables, read once each (``None`` where a file is absent)."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self._cache: dict[str, pd.DataFrame | None] = {}

    def get(self, name: str, suffix: str = "") -> pd.DataFrame | None:
        key = f"{name}{suffix}"
        if key not in self._cache:
            path = self.folder / "tables" / f"{key}.csv"
            try:
                self._cache[key] = pd.read_csv(path) if path.is_file() else None
            except pd.errors.EmptyDataError:
                self._cache[key] = pd.DataFrame()
        return self._cache[key]

    def paths(self, names) -> list[Path]:
        """The files of ``names`` (tables and their tests, selections, curves) that exist."""
        out = []
        for name in names:
            for suffix in ("", "_tests", "_selection", "_curves"):
                p = self.folder / "tables" / f"{name}{suffix}.csv"
                if p.is_file():
                    out.append(p)
        return out


# --- expansion --------------------------------------------------------------------------------

def _fill(obj, values: dict):
    """``obj`` with ``{name}`` in every string replaced from ``values``."""
    if isinstance(obj, str):
        for k, v in values.items():
            obj = obj.replace("{" + k + "}", f"{v:g}" if isinstance(v, float) else str(v))
        return obj
    if isinstance(obj, dict):
        return {k: _fill(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fill(v, values) for v in obj]
    return obj


def _where(check: dict) -> dict:
    """The row filter of a check: its ``match`` and its ``metric``."""
    return {**check.get("match", {}), **({"metric": check["metric"]} if "metric" in check else {})}


def _match(frame: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Rows of ``frame`` equal to ``where`` on each of its columns (numbers compared as numbers)."""
    mask = np.ones(len(frame), bool)
    for k, v in where.items():
        if k not in frame:
            return frame.iloc[:0]
        col = frame[k]
        try:
            target = float(v)
        except (TypeError, ValueError):
            mask &= (col.astype(str) == str(v)).to_numpy()
            continue
        num = pd.to_numeric(col, errors="coerce").to_numpy(float)
        mask &= np.isclose(num, target, rtol=1e-9, atol=0.0)
    return frame[mask]


def _key_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c not in VALUE_COLUMNS and not c.startswith("n_")]


def _suffix(row: pd.Series, columns) -> str:
    return ".".join(str(row[c]) for c in columns)


def _paper_relation(pa: float, pb: float, tie: float) -> str:
    if abs(pa - pb) <= tie * max(abs(pa), abs(pb)):
        return "tie"
    return "below" if pa < pb else "above"


def expand(claim: dict, tables: Tables, settings: dict) -> list[dict]:
    """One claim per ``each`` combination, per referenced cell (``value`` without a row), per
    dataset (``order`` with ``relation: paper``), per best method of the paper (``best`` with
    ``method: paper``)."""
    each = claim.get("each") or {}
    combos = [dict(zip(each, vals)) for vals in itertools.product(*each.values())] if each else [{}]
    out = []
    for combo in combos:
        c = _fill({k: v for k, v in claim.items() if k != "each"}, combo)
        check = c["check"]
        table = tables.get(check["table"])
        if table is None or table.empty:
            out.append(c)
            continue
        where = _where(check)
        if check["kind"] == "value" and "method" not in where:
            rows = _match(table, where)
            rows = rows[rows["reference"].notna()]
            free = [k for k in _key_columns(table) if k not in where]
            for _, row in rows.iterrows():
                fields = {k: row[k] for k in _key_columns(table)}
                out.append({**_fill(c, fields), "id": f"{c['id']}.{_suffix(row, free)}",
                            "check": {**check, "match": {**check.get("match", {}), **{k: row[k] for k in free}}}})
        elif check["kind"] == "order" and check.get("relation") == "paper":
            rows = _match(table, where)
            groups = [k for k in ("task", "dataset") if k in table and k not in where]
            for values, group in rows.groupby(groups, sort=False):
                values = values if isinstance(values, tuple) else (values,)
                ref = group.set_index("method")["reference"]
                if not {check["a"], check["b"]} <= set(ref.dropna().index):
                    continue
                pa, pb = float(ref[check["a"]]), float(ref[check["b"]])
                rel = _paper_relation(pa, pb, settings["tie"])
                a, b = (check["b"], check["a"]) if rel == "above" else (check["a"], check["b"])
                rel = "below" if rel == "above" else rel
                fields = {**dict(zip(groups, values)), "a": a, "b": b,
                          "relation": "tied with" if rel == "tie" else "below"}
                out.append({**_fill(c, fields), "id": f"{c['id']}.{'.'.join(map(str, values))}",
                            "check": {**check, "a": a, "b": b, "relation": rel,
                                      "match": {**check.get("match", {}), **dict(zip(groups, values))}}})
        elif check["kind"] == "best" and check["method"] == "paper":
            rows = _match(table, where)
            rows = rows[rows["reference"].notna()]
            groups = [k for k in ("task", "dataset", "metric") if k in table and k not in where]
            for values, group in rows.groupby(groups, sort=False):
                values = values if isinstance(values, tuple) else (values,)
                low = group["reference"].min()
                for method in group.loc[group["reference"] <= low * (1 + settings["tie"]), "method"]:
                    fields = {**dict(zip(groups, values)), "method": method}
                    out.append({**_fill(c, fields), "id": f"{c['id']}.{'.'.join(map(str, values))}.{method}",
                                "check": {**check, "method": method,
                                          "match": {**check.get("match", {}), **dict(zip(groups, values))}}})
        else:
            out.append(c)
    return out


# --- checks -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    """The result of one check on one table: ``ok`` True / False, ``None`` = cannot check."""

    ok: bool | None
    ours: str = ""
    paper: str = ""
    test: str = ""
    tolerance: str = ""
    methods: list = field(default_factory=list)


def _g(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def _one(table: pd.DataFrame, where: dict, what: str) -> tuple[pd.Series | None, str]:
    rows = _match(table, where)
    if len(rows) != 1:
        desc = ", ".join(f"{k}={v}" for k, v in where.items())
        return None, f"{'no' if rows.empty else len(rows)} row{'s' if len(rows) > 1 else ''} {desc} in {what}"
    return rows.iloc[0], ""


def _tolerance(tol: dict) -> str:
    parts = [f"{tol['abs']:g}"] if tol.get("abs") else []
    parts += [f"{100 * tol['rel']:g}% of paper"] if tol.get("rel") else []
    parts += ["our std"] if tol.get("std") else []
    return "|Δ| ≤ max(" + ", ".join(parts) + ")" if len(parts) > 1 else f"|Δ| ≤ {parts[0] if parts else 0}"


def check_value(tables: Tables, name: str, check: dict, settings: dict) -> Outcome:
    table = tables.get(name)
    if table is None:
        return Outcome(None, test=f"no table {name}")
    where = _where(check)
    row, why = _one(table, where, name)
    if row is None:
        return Outcome(None, test=why)
    tol = {**settings["tolerance"], **check.get("tolerance", {})}
    if pd.isna(row.get("reference")):
        return Outcome(None, ours=_g(row["mean"]), test=f"no paper number beside {name}'s cell")
    paper = float(row["reference"])
    bound = max(tol.get("abs", 0.0), tol.get("rel", 0.0) * abs(paper), float(row["std"]) if tol.get("std") else 0.0)
    delta = float(row["mean"]) - paper
    count = next((c for c in row.index if c.startswith("n_")), None)
    ours = f"{_g(row['mean'])} ± {_g(row['std'])}" + (f" (n={int(row[count])})" if count else "")
    return Outcome(abs(delta) <= bound, ours, _g(paper), f"Δ = {delta:+.4g}, bound {bound:.4g}", _tolerance(tol),
                   [row.get("method")])


def _test_row(tests: pd.DataFrame | None, where: dict, a: str, b: str) -> tuple[float, float, int] | None:
    """``(mean_diff of a - b, p, n)`` from a test table, either way round."""
    if tests is None or tests.empty:
        return None
    rows = _match(tests, where)
    for x, y, sign in ((a, b, 1.0), (b, a, -1.0)):
        hit = rows[(rows["method_a"] == x) & (rows["method_b"] == y)]
        if len(hit):
            r = hit.iloc[0]
            return sign * float(r["mean_diff"]), float(r["p_value"]), int(r["n_splits"])
    return None


def _order_ok(relation: str, diff: float, p: float, alpha: float) -> bool:
    significant = p < alpha
    if relation == "below":
        return diff < 0 and significant
    if relation == "tie":
        return not significant
    return not (diff > 0 and significant)  # not_worse


def check_order(tables: Tables, name: str, check: dict, settings: dict) -> Outcome:
    table, tests = tables.get(name), tables.get(name, "_tests")
    if table is None:
        return Outcome(None, test=f"no table {name}")
    a, b, metric, alpha = check["a"], check["b"], check["metric"], settings["alpha"]
    where = dict(check.get("match", {}))
    if check.get("quantifier") == "most":
        rows = _match(table, {**where, "metric": metric})
        means = rows.pivot_table(index="dataset", columns="method", values="mean", sort=False)
        if not {a, b} <= set(means.columns):
            return Outcome(None, test=f"{name} lacks {a} or {b}")
        means = means[[a, b]].dropna()
        below = int((means[a] < means[b]).sum())
        sig_below = sig_above = 0
        for dataset in means.index:
            t = _test_row(tests, {**where, "dataset": dataset, "metric": metric}, a, b)
            if t and t[1] < alpha:
                sig_below += t[0] < 0
                sig_above += t[0] > 0
        return Outcome(below > len(means) / 2, f"{a} below {b} on {below} of {len(means)} datasets",
                       test=f"significantly below on {sig_below}, above on {sig_above} (Wilcoxon, α = {alpha:g})",
                       tolerance="more than half, by the means", methods=[a, b])
    if check.get("quantifier") == "each":
        return _order_on_each(table, tests, name, check, where, alpha)
    ra, why_a = _one(table, {**where, "method": a, "metric": metric}, name)
    rb, why_b = _one(table, {**where, "method": b, "metric": metric}, name)
    if ra is None or rb is None:
        return Outcome(None, test=why_a or why_b)
    paper = (f"{a} {_g(ra['reference'])}, {b} {_g(rb['reference'])}"
             if pd.notna(ra.get("reference")) and pd.notna(rb.get("reference")) else "")
    ours = f"{a} {_g(ra['mean'])}, {b} {_g(rb['mean'])}"
    t = _test_row(tests, {**where, "metric": metric}, a, b)
    if t is None:
        return Outcome(None, ours, paper, f"no paired test of {a} and {b} in {name}_tests")
    diff, p, n = t
    return Outcome(_order_ok(check["relation"], diff, p, alpha), ours, paper,
                   f"mean diff {diff:+.4g}, Wilcoxon p = {p:.2g} (n = {n})",
                   {"below": f"p < {alpha:g}", "tie": f"p ≥ {alpha:g}",
                    "not_worse": f"not significantly worse (α = {alpha:g})"}[check["relation"]], [a, b])


def _order_on_each(table, tests, name: str, check: dict, where: dict, alpha: float) -> Outcome:
    """``relation`` of ``a`` to ``b`` by the paired test on every dataset of the table (e.g. each
    class order of AGM's SRL table): holds when it holds on all of them."""
    a, b, metric, relation = check["a"], check["b"], check["metric"], check["relation"]
    datasets = list(dict.fromkeys(_match(table, {**where, "metric": metric})["dataset"]))
    results = []
    for dataset in datasets:
        t = _test_row(tests, {**where, "dataset": dataset, "metric": metric}, a, b)
        if t is None:
            return Outcome(None, test=f"no paired test of {a} and {b} on {dataset} in {name}_tests")
        results.append((dataset, *t))
    if not results:
        return Outcome(None, test=f"{name} has no {metric} rows")
    held = [d for d, diff, p, _ in results if _order_ok(relation, diff, p, alpha)]
    return Outcome(len(held) == len(results), f"{a} {relation} {b} on {len(held)} of {len(results)} datasets",
                   "", "; ".join(f"{d}: diff {diff:+.3g}, p = {p:.2g}" for d, diff, p, _ in results),
                   f"on every dataset (α = {alpha:g})", [a, b])


def check_best(tables: Tables, name: str, check: dict, settings: dict) -> Outcome:
    tests = tables.get(name, "_tests")
    if tests is None or tests.empty or "bold" not in tests:
        return Outcome(None, test=f"no best-method tests in {name}_tests")
    rows = _match(tests, check.get("match", {}))
    rows = rows[(rows["method_a"] == check["method"]) & rows["bold"].notna() & (rows["bold"].astype(str) != "")]
    if rows.empty:
        return Outcome(None, test=f"{check['method']} not in {name}_tests")
    r = rows.iloc[0]
    bold = str(r["bold"]).lower() == "true"
    best = r["method_b"]
    test = ("best" if best == check["method"] else
            f"{'not significantly' if bold else 'significantly'} worse than {best}: "
            f"diff {float(r['mean_diff']):+.4g}, Wilcoxon p = {float(r['p_value']):.2g} (n = {int(r['n_splits'])})")
    return Outcome(bold, "bold" if bold else "not bold", "best (bold)", test,
                   f"best or p ≥ {settings['alpha']:g}", [check["method"]])


def _spread_ok(means, stds, direction: str, tol: dict) -> tuple[bool, str]:
    means, stds = np.asarray(means, float), np.asarray(stds, float)
    steps = np.diff(means)
    if direction in ("increasing", "decreasing"):
        eps = tol.get("abs", 0.0)
        up = direction == "increasing"
        return bool(np.all((steps if up else -steps) > eps)), f"every step {'up' if up else 'down'} by more than {eps:g}"
    if tol.get("std"):
        flat = all(abs(means[i] - means[j]) <= max(stds[i], stds[j])
                   for i in range(len(means)) for j in range(i + 1, len(means)))
        text = "every pair within the larger std"
    else:
        bound = max(tol.get("abs", 0.0), tol.get("rel", 0.0) * float(np.mean(np.abs(means))))
        flat = float(means.max() - means.min()) <= bound
        text = f"max - min ≤ {bound:.3g}"
    return (flat if direction == "flat" else not flat), (text if direction == "flat" else f"not ({text})")


def check_trend(tables: Tables, name: str, check: dict, settings: dict) -> Outcome:
    table = tables.get(name)
    if table is None:
        return Outcome(None, test=f"no table {name}")
    base = _where(check)
    rows = []
    for filt in check["rows"]:
        row, why = _one(table, {**base, **filt}, name)
        if row is None:
            return Outcome(None, test=why)
        rows.append(row)
    means, stds = [float(r["mean"]) for r in rows], [float(r["std"]) for r in rows]
    ok, rule = _spread_ok(means, stds, check["direction"], check.get("tolerance", {}))
    label = lambda f: " ".join(str(v) for v in f.values())  # noqa: E731
    ours = ", ".join(f"{label(f)} {_g(m)}" for f, m in zip(check["rows"], means))
    refs = [r.get("reference") for r in rows]
    paper = ", ".join(_g(float(x)) for x in refs) if all(pd.notna(x) for x in refs) else ""
    return Outcome(ok, ours, paper, f"{check['direction']}: " + " → ".join(_g(m) for m in means), rule,
                   sorted({str(r["method"]) for r in rows if "method" in r}))


def _curve(curves: pd.DataFrame, where: dict, metric: str) -> pd.DataFrame:
    rows = _match(curves, {**where, "measure": metric})
    return rows.sort_values("oracle_calls_per_n")[["oracle_calls_per_n", "mean", "std"]].reset_index(drop=True)


def _at(curve: pd.DataFrame, x: float) -> tuple[float, float]:
    """The last evaluation at or before ``x`` oracle calls per n."""
    i = int(np.searchsorted(curve["oracle_calls_per_n"].to_numpy(float), x, side="right")) - 1
    return float(curve["mean"].iloc[i]), float(curve["std"].iloc[i])


def check_curve(tables: Tables, name: str, check: dict, settings: dict) -> Outcome:
    curves = tables.get(name, "_curves")
    if curves is None:
        return Outcome(None, test=f"no curve table {name}_curves")
    base = check.get("match", {})
    ca, cb = (_curve(curves, {**base, **check[k]}, check["metric"]) for k in ("rows_a", "rows_b"))
    la, lb = (" ".join(str(v) for v in check[k].values()) for k in ("rows_a", "rows_b"))
    if ca.empty or cb.empty:
        return Outcome(None, test=f"no {check['metric']} curve of {la if ca.empty else lb} in {name}_curves")
    lo = max(ca["oracle_calls_per_n"].min(), cb["oracle_calls_per_n"].min())
    hi = min(ca["oracle_calls_per_n"].max(), cb["oracle_calls_per_n"].max())
    grid = sorted({float(x) for c in (ca, cb) for x in c["oracle_calls_per_n"] if lo <= x <= hi})
    sign = -1.0 if check.get("better", "lower") == "higher" else 1.0
    ma, sa = _at(ca, hi)
    mb, sb = _at(cb, hi)
    ours = f"at {hi:g} calls/n: {la} {_g(ma)} ± {_g(sa)}, {lb} {_g(mb)} ± {_g(sb)}"
    if check["relation"] == "not_worse":
        tol = check.get("tolerance", {}).get("abs", 0.0)
        return Outcome(sign * (ma - mb) <= tol, ours, "", f"difference {ma - mb:+.4g}", f"no worse by more than {tol:g}")
    below = [sign * (_at(ca, x)[0] - _at(cb, x)[0]) <= 0 for x in grid]
    start = next((grid[i] for i in range(len(grid)) if all(below[i:])), None)
    separated = sign * (ma - mb) < -(sa + sb)
    paired = _paired_p(tables.get(name, "_tests"), base, check["rows_a"], check["rows_b"], check["metric"])
    significant = paired is not None and paired[1] < settings["alpha"]
    word = "below" if sign > 0 else "above"
    if start is None:
        test = f"{la} not {word} {lb} at the last common budget"
    else:
        test = (f"{la} at or {word} {lb} from {start:g} calls/n on; "
                + ("apart by more than the spreads at the end" if separated else "not apart by the spreads at the end"))
    if paired is not None:
        test += f"; paired Wilcoxon over {paired[0]} seeds at the end p = {paired[1]:.2g}"
    return Outcome(bool((separated or significant) and start is not None), ours, "", test,
                   f"from some budget on, and apart at the end (by the spreads, or paired p < {settings['alpha']:g})")


def _paired_p(tests: pd.DataFrame | None, base: dict, rows_a: dict, rows_b: dict, metric: str):
    """(seeds, p) of the paired test of two curve runs at the end of their budget, from the
    experiment's tests table (task = figure, dataset = c, method = method and variant), or None."""
    if tests is None or tests.empty or "figure" not in base or "c" not in base:
        return None

    def label(rows):
        return " ".join(str(rows[k]) for k in ("method", "variant") if rows.get(k) not in (None, ""))

    a, b = label({**base, **rows_a}), label({**base, **rows_b})
    same = tests[(tests["task"].astype(str) == str(base["figure"])) & (tests["metric"] == metric)
                 & (tests["dataset"].astype(float) == float(base["c"]))]
    pair = same[((same["method_a"] == a) & (same["method_b"] == b)) | ((same["method_a"] == b) & (same["method_b"] == a))]
    if pair.empty:
        return None
    return int(pair["n_splits"].iloc[0]), float(pair["p_value"].iloc[0])


CHECKS = {"value": check_value, "order": check_order, "best": check_best, "trend": check_trend,
          "curve": check_curve}


# --- the ledger -------------------------------------------------------------------------------

def _edges(tables: Tables, name: str, check: dict, methods) -> list[str]:
    selection = tables.get(name, "_selection")
    if selection is None or selection.empty:
        return []
    where = {k: v for k, v in check.get("match", {}).items() if k in ("task", "dataset")}
    metric = check.get("metric") or check.get("match", {}).get("metric")
    if metric and "scope" in selection:  # a choice made for other metrics says nothing of this one
        scopes = selection["scope"].astype(object).fillna("").astype(str)
        selection = selection[(scopes == "") | scopes.map(lambda s: metric in s.split())]
    notes = []
    for method in [m for m in methods if m]:
        notes += edge_notes(selection, {**where, "method": method})
    return [f"{name}: {n}" for n in notes]


def as_protocol(entry) -> dict:
    """A ``protocols`` entry as ``{table, metric, rule, decides}``: a bare name is that table, read
    on the claim's own metric, and decides the verdict (``reproduced under``); an entry naming a
    ``metric`` reads that metric instead (e.g. ``test_loss_optimistic``, the authors' table rule),
    and with ``decides: false`` it is shown beside the verdict without deciding it."""
    entry = {"table": entry} if isinstance(entry, str) else dict(entry)
    return {"metric": None, "rule": None, "decides": True, **entry}


def protocol_check(check: dict, protocol: dict) -> dict:
    """``check`` read on the protocol's metric (its own where the protocol names none)."""
    metric = protocol["metric"]
    if metric is None:
        return check
    if "metric" in check or "metric" not in check.get("match", {}):
        return {**check, "metric": metric}
    return {**check, "match": {**check["match"], "metric": metric}}


def protocol_label(protocol: dict) -> str:
    """How the ledger names a protocol: its table, and its metric and rule where it has them."""
    extra = [x for x in (protocol["metric"], protocol["rule"]) if x]
    if not protocol["decides"]:
        extra.append("shown, not a verdict")
    return protocol["table"] + (f" [{'; '.join(extra)}]" if extra else "")


def evaluate(claim: dict, tables: Tables, settings: dict, causes) -> dict:
    """One ledger row of an expanded claim."""
    check = claim["check"]
    run = CHECKS[check["kind"]]
    primary = run(tables, check["table"], check, settings)
    verdict, held = None, None
    alternatives = []
    for protocol in map(as_protocol, claim.get("protocols", [])):
        out = run(tables, protocol["table"], protocol_check(check, protocol), settings)
        if out.ok is None:
            continue
        alternatives.append(f"{protocol_label(protocol)}: {REPRODUCED if out.ok else NOT_REPRODUCED} "
                            f"({out.ours}; {out.test})")
        if out.ok and held is None and protocol["decides"]:
            held = protocol["table"]
    if claim.get("unavailable") and primary.ok is None:
        verdict = CANNOT
        primary.test = claim["unavailable"]
    elif primary.ok:
        verdict = REPRODUCED
    elif primary.ok is None:
        verdict = CANNOT if held is None else f"{UNDER} {held}"
    else:
        verdict = NOT_REPRODUCED if held is None else f"{UNDER} {held}"
    edges = _edges(tables, check["table"], check, primary.methods)
    if verdict.startswith(UNDER):
        edges += _edges(tables, held, check, primary.methods)
    found = [c for c in causes if fnmatch.fnmatchcase(claim["id"], c["match"])] if verdict != REPRODUCED else []
    return {"id": claim["id"], "paper": claim["paper"], "where": claim["where"], "statement": claim["statement"],
            "kind": check["kind"], "table": check["table"], "verdict": verdict, "ours": primary.ours,
            "paper_value": primary.paper, "test": primary.test, "tolerance": primary.tolerance,
            "protocols": "; ".join(alternatives), "grid_edges": "; ".join(edges),
            "cause": " ".join(c["text"] for c in found),
            "evidence": "; ".join(c["evidence"] for c in found if c.get("evidence"))}


def ledger(claims_path, report_dir, staleness="committed") -> pd.DataFrame:
    """Every expanded claim of ``claims_path`` with its verdict, from the tables in ``report_dir``.
    ``archive``: the status of the run archive behind each table the verdict rests on (its own and
    the protocol table that decided it), from ``staleness`` (default: the committed
    ``tables/staleness.csv`` of ``report_dir`` when there is one, written by ``structpred runs status
    --write``; ``None``: tables computed by the workflow from fresh results, no archive behind them)."""
    data = load_claims(claims_path)
    settings = {k: data[k] for k in ("alpha", "tie", "tolerance")}
    tables = Tables(report_dir)
    if isinstance(staleness, str) and staleness == "committed":
        staleness = read_status(Path(report_dir) / "tables" / "staleness.csv")
    status = {} if staleness is None else dict(zip(staleness["experiment"], staleness["status"]))
    rows = []
    for claim in data["claims"]:
        for c in expand(claim, tables, settings):
            row = evaluate(c, tables, settings, data.get("causes", []))
            held = row["verdict"].removeprefix(UNDER).strip() if row["verdict"].startswith(UNDER) else None
            row["archive"] = "; ".join(f"{t}: {status[t]}" for t in dict.fromkeys([row["table"], held])
                                       if t in status)
            rows.append(row)
    return pd.DataFrame.from_records(rows, columns=COLUMNS)


def verdict_class(verdict: str) -> str:
    """The verdict without its protocol (``reproduced under``)."""
    return UNDER if str(verdict).startswith(UNDER) else str(verdict)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per paper: the count of claims of each verdict class and in all."""
    classes = [REPRODUCED, UNDER, NOT_REPRODUCED, CANNOT]
    kinds = table["verdict"].map(verdict_class)
    out = pd.crosstab(table["paper"], kinds).reindex(columns=classes, fill_value=0)
    out = out.reindex(list(dict.fromkeys(table["paper"])))
    out["claims"] = out.sum(axis=1)
    return out.reset_index()


def claim_tables(claims_path) -> list[str]:
    """The tables (experiments) the claims read, primary and protocol alike."""
    data = load_claims(claims_path)
    names = [c["check"]["table"] for c in data["claims"]]
    names += [as_protocol(p)["table"] for c in data["claims"] for p in c.get("protocols", [])]
    return list(dict.fromkeys(names))


# --- headlines --------------------------------------------------------------------------------

HEADLINE_COLUMNS = ["id", "paper", "where", "statement", "rule", "protocols", "verdict", "held", "checked",
                    "cannot", "decisive", "decisive_label", "decisive_statement", "numbers", "cause", "claims"]


def _protocol_table(verdict: str) -> str | None:
    return verdict.removeprefix(UNDER).strip() if verdict.startswith(UNDER) else None


def _holds(verdict: str, protocols) -> bool:
    """Whether a ledger verdict counts as holding under a headline's ``protocols``."""
    if verdict == REPRODUCED:
        return True
    table = _protocol_table(verdict)
    if table is None or protocols == "paper":
        return False
    return protocols == "any" or table in protocols


def _rule_holds(rule: str, held: int, checked: int) -> bool:
    if checked == 0:
        return False
    return {"all": held == checked, "most": 2 * held > checked, "any": held >= 1}[rule]


def _protocol_numbers(protocols_text: str, table: str) -> str:
    """``ours; test`` of the protocol ``table`` that decided a claim, from the ledger's ``protocols``
    column (``<table>: reproduced (<ours>; <test>)``)."""
    key = f"{table}: {REPRODUCED} ("
    start = protocols_text.find(key)
    if start < 0:
        return ""
    i, depth = start + len(key), 1
    for j in range(i, len(protocols_text)):
        depth += {"(": 1, ")": -1}.get(protocols_text[j], 0)
        if depth == 0:
            return protocols_text[i:j]
    return protocols_text[i:]


def short_statement(statement: str) -> str:
    """A ledger statement without the paper's quotation that opens it (``'...': ``)."""
    text = str(statement)
    if text.startswith("'"):
        end = text.find("': ")
        if end > 0:
            text = text[end + 3:]
    return text


def short_test(test: str) -> str:
    """The decisive part of a ledger test: the p-value and its n where there is one; for a curve,
    from which budget it is below and whether it is apart at the end."""
    text = str(test)
    if "calls/n" in text or "last common budget" in text:
        parts = []
        start = re.search(r"from ([^ ]+) calls/n on", text)
        parts.append(f"below from {start.group(1)} calls/n on" if start else "not below at the last common budget")
        if "apart by more than the spreads" in text:
            parts.append("apart by more than the spreads at the end")
        seeds = re.search(r"paired Wilcoxon over (\d+) seeds at the end p = ([^ ;]+)", text)
        if seeds and "apart by more than the spreads" not in text:
            parts.append(f"paired Wilcoxon p = {seeds.group(2)} over {seeds.group(1)} seeds")
        return ", ".join(parts)
    found = re.search(r"Wilcoxon p = ([^ ;,)]+)(?: \(n = (\d+)\))?", text)
    if found:
        return f"Wilcoxon p = {found.group(1)}" + (f", n = {found.group(2)}" if found.group(2) else "")
    return text.split("; ")[0]


def _brief(ours: str) -> str:
    """Our numbers without their spreads and counts (``1.189 ± 0.001281 (n=3)`` -> ``1.189``)."""
    text = re.sub(r" ± [-+0-9.e]+", "", str(ours))
    return re.sub(r" \(n=\d+\)", "", text).strip()


def numbers_of(row: pd.Series) -> str:
    """A ledger row's numbers in one short phrase: ours (beside the paper's for a cell) and the
    test; for a claim that holds on a protocol table, that table's."""
    if row["verdict"] == CANNOT:
        return re.split(r" \(|; ", str(row["test"]))[0]
    table = _protocol_table(row["verdict"])
    if table is not None:
        ours, _, test = _protocol_numbers(str(row["protocols"]), table).partition("; ")
        prefix = f"on {table}: "
    else:
        ours, test, prefix = str(row["ours"]), str(row["test"]), ""
    ours = _brief(ours)
    if row.get("kind") == "value" and str(row["paper_value"]) and table is None:
        ours += f" (paper {row['paper_value']})"
    test = re.sub(r" \((Wilcoxon, )?α = [0-9.]+\)", "", short_test(test))
    if row.get("kind") == "trend" or not test or test in ours:
        return prefix + ours
    return f"{prefix}{ours}; {test}"


def wildcard_label(claim_id: str, patterns) -> str:
    """What tells a claim from the others a headline names: its id from the component where the
    first matching pattern's wildcard begins, less the pattern's fixed end in that component
    (``agm.s41.*_agm_below_crf`` -> ``absolute``, ``casimir.fig5*`` -> ``fig5a.c1.const_small_mu``);
    a pattern's trailing ``.*`` keeps the component before it where the headline has several
    patterns; an exact id, its last component."""
    for pattern in patterns:
        if not fnmatch.fnmatchcase(claim_id, pattern):
            continue
        wild = [i for i, ch in enumerate(pattern) if ch in "*?"]
        if not wild:
            break
        start = pattern.rfind(".", 0, wild[0]) + 1
        if len(patterns) > 1 and pattern.endswith(".*") and wild == [len(pattern) - 1]:
            start = pattern.rfind(".", 0, start - 1) + 1
        end = pattern[wild[-1] + 1:]
        stop = len(claim_id) - len(end) if end and "." not in end else len(claim_id)
        return claim_id[start:stop].strip("._") or claim_id
    return claim_id.rsplit(".", 1)[-1]


def _first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence (followed by a capital)."""
    text = str(text).strip()
    found = re.search(r"(?<=\.)\s+(?=[A-Z])", text)
    return text[:found.start()] if found else text


def headlines(claims_path, table: pd.DataFrame) -> pd.DataFrame:
    """Each headline of ``claims_path`` decided from the ledger ``table`` (:func:`ledger`): its
    verdict (``reproduced``, ``reproduced under <tables>``, ``not reproduced``, ``cannot check``),
    how many of its named claims hold of those checked, the decisive claim (the first that fails
    where it fails; else the first that holds, one resting on a protocol first) with its numbers,
    and where it fails its cause (the headline's own, else the first sentence of the decisive
    claim's)."""
    data = load_claims(claims_path)
    table = table.astype(object).fillna("")
    rows = []
    for h in data.get("headlines", []):
        named = table[table["id"].map(lambda i: any(fnmatch.fnmatchcase(i, p) for p in h["claims"]))]
        verdicts = named["verdict"].astype(str)
        checkable = named[verdicts != CANNOT]
        holds = checkable["verdict"].map(lambda v: _holds(v, h["protocols"])).astype(bool)
        plain = (checkable["verdict"] == REPRODUCED).astype(bool)
        n, k = len(checkable), int(holds.sum())
        if n == 0:
            verdict, decisive = CANNOT, (named.iloc[0] if len(named) else None)
        elif _rule_holds(h["rule"], int(plain.sum()), n):
            verdict, decisive = REPRODUCED, checkable[plain].iloc[0]
        elif _rule_holds(h["rule"], k, n):
            under = checkable[holds & ~plain]
            tables = list(dict.fromkeys(under["verdict"].map(_protocol_table)))
            verdict, decisive = f"{UNDER} {', '.join(tables)}", under.iloc[0]
        else:
            verdict, decisive = NOT_REPRODUCED, checkable[~holds].iloc[0]
        cause = ""
        if verdict in (NOT_REPRODUCED, CANNOT):
            cause = h.get("cause") or (_first_sentence(decisive["cause"]) if decisive is not None else "")
        protocols = h["protocols"] if isinstance(h["protocols"], str) else ", ".join(h["protocols"])
        rows.append({"id": h["id"], "paper": h["paper"], "where": h.get("where", ""), "statement": h["statement"],
                     "rule": h["rule"], "protocols": protocols, "verdict": verdict, "held": k, "checked": n,
                     "cannot": len(named) - n,
                     "decisive": "" if decisive is None else decisive["id"],
                     "decisive_label": "" if decisive is None else wildcard_label(decisive["id"], h["claims"]),
                     "decisive_statement": "" if decisive is None else short_statement(decisive["statement"]),
                     "numbers": "no claim of the ledger matches" if decisive is None else numbers_of(decisive),
                     "cause": cause, "claims": " ".join(named["id"])})
    return pd.DataFrame.from_records(rows, columns=HEADLINE_COLUMNS)


def rule_text(row) -> str:
    """How a headline was decided, in words: ``3 of 4 named claims hold (rule: all; protocols: any)``."""
    cannot = f", {row['cannot']} cannot be checked" if int(row["cannot"]) else ""
    return (f"{row['held']} of {row['checked']} named claims hold{cannot} "
            f"(rule: {row['rule']}; protocols: {row['protocols']})")
