"""Whether rerun jobs reproduce the archive within tolerance and with the same verdicts.

The run archive's reproducibility contract has three tiers, each checked by code:

* **bitwise**: on the archive's machine class a rerun gives the archived bytes (numerics
  fingerprints, :mod:`structpred.runs.staleness`, and :func:`structpred.runs.archive.verify`);
* **tolerance**: on any machine, every table cell (a mean over splits or seeds) computed with the
  rerun jobs in place of the archived ones is within its metric's bound of the archived cell,

  .. math::

     |\\bar x_{\\mathrm{rerun}} - \\bar x| \\le \\min\\bigl(\\max(a, f\\,s/\\sqrt{n}, r|\\bar x|),\\;
     \\max(a_L, r_L|\\bar x|)\\bigr)

  with :math:`s` the archived cell's standard deviation over its :math:`n` splits, :math:`(a, f, r)`
  the metric's rule in ``config/reproducibility.yaml`` and :math:`(a_L, r_L)` the claims ledger's
  own tolerance (never looser than it);
* **verdicts**: the claims ledger computed with those cells gives every claim its archived verdict.

:func:`check` compares one experiment's rerun jobs on all three and says which tier they reached.
Cells are recomputed for the (task, dataset) groups the rerun jobs belong to, from the archived
files of the group with the rerun files in place, and spliced into the committed tables for the
ledger (the same splice, of the archived files, gives the reference ledger, so only the reruns
differ between the two).
"""

from __future__ import annotations

import fnmatch
import json
import math
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.errors import ConfigError
from structpred.io import atomic_open
from structpred.papers.registry import get
from structpred.report.aggregate import GROUP, _as_text, _splice, _table_and_tests, selections
from structpred.report.claims import ledger, load_claims
from structpred.runs.archive import job_path, result_text
from structpred.tables.results import read_results, write_csv

RULES_FILE = Path("config/reproducibility.yaml")
#: beside an experiment's archived jobs: how its reruns reproduced, per machine class (:func:`record`)
RECORD = "reproduction.json"
#: the tiers, strictest first; ``differs``: not even the verdicts hold
TIERS = ("bitwise", "tolerance", "verdicts", "differs")


def load_rules(path=RULES_FILE) -> dict:
    """The per-metric rules (``default`` and ``rules``) of ``config/reproducibility.yaml``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no reproducibility rules {path}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data.get("default"), dict) or not isinstance(data.get("rules", []), list):
        raise ConfigError(f"{path}: needs a `default` rule and a list of `rules`")
    return data


def rule_for(metric: str, rules: dict) -> dict:
    """The first rule whose ``metrics`` patterns match ``metric``, else the default."""
    for rule in rules.get("rules", []):
        if any(fnmatch.fnmatchcase(str(metric), p) for p in rule["metrics"]):
            return {**rules["default"], **rule}
    return rules["default"]


def cell_bound(metric: str, mean: float, std: float, n: int, rules: dict, ledger_tol: dict) -> float | None:
    """How far a rerun cell may be from the archived one (``None``: the metric is not compared)."""
    rule = rule_for(metric, rules)
    if rule.get("ignore"):
        return None
    se = std / math.sqrt(n) if n > 1 and np.isfinite(std) else 0.0
    mean = mean if np.isfinite(mean) else 0.0   # an empty cell: its rerun must be empty too (diff 0)
    own = max(rule.get("abs", 0.0), rule.get("se_fraction", 0.0) * se, rule.get("rel", 0.0) * abs(mean))
    return min(own, max(ledger_tol.get("abs", 0.0), ledger_tol.get("rel", 0.0) * abs(mean)))


def job_differences(archived, rerun) -> tuple[dict[str, float], list[str]]:
    """``({metric: largest |difference|}, selection flips)`` between one job's archived and rerun
    rows, timings excluded.  Rows are matched on every column but the value (a lambda only one side
    has counts as an infinite difference); a flip names the metric, the two lambdas and, where the
    rerun has a validation metric (``val_*``, ``cv_*``) at both, its margin between them."""
    a, b = (read_results([p]) for p in (archived, rerun))
    a, b = (f[f["metric"].astype(str) != "seconds"] for f in (a, b))
    ids = [c for c in a.columns if c not in ("value", "reference", "detail", "selected")]
    both = a.merge(b, on=ids, how="outer", suffixes=("_a", "_b"), indicator=True)
    diff = (both["value_a"] - both["value_b"]).abs()
    diff[both["value_a"].isna() & both["value_b"].isna() & (both["_merge"] == "both")] = 0.0
    diff = diff.fillna(np.inf)
    largest = {str(m): float(v) for m, v in diff.groupby(both["metric"].astype(str)).max().items()}
    flips = []
    keys = [c for c in ids if c != "lam"]
    # lambdas as text: a method without one (NaN) chose nothing, and NaN never equals NaN
    chosen = {name: f[f["selected"].astype(str).str.lower() == "true"].groupby(keys, dropna=False)["lam"].agg(
        lambda s: tuple(sorted(set(s.astype(str))))) for name, f in (("a", a), ("b", b))}
    val = next((m for m in dict.fromkeys(b["metric"].astype(str)) if m.startswith(("val", "cv"))), None)
    for key, lams in chosen["a"].items():
        new = chosen["b"].get(key)
        if new is None or new == lams:
            continue
        metric = dict(zip(keys, key if isinstance(key, tuple) else (key,)))["metric"]
        line = f"{metric}: lambda {'/'.join(map(str, lams))} -> {'/'.join(map(str, new))}"
        if val is not None and len(lams) == len(new) == 1:
            at = b[b["metric"].astype(str) == val].groupby(b["lam"].astype(str))["value"].first()
            if lams[0] in at.index and new[0] in at.index:
                line += f" (rerun's {val} margin {abs(at[lams[0]] - at[new[0]]):.3g})"
        flips.append(line)
    return largest, sorted(set(flips))


def worst_cell(cells: pd.DataFrame) -> pd.Series:
    """The cell nearest to (or farthest past) its bound: the largest move over bound (the largest
    move where every bound is zero)."""
    ratio = np.where(cells["diff"] == 0, 0.0, cells["diff"] / cells["bound"].where(cells["bound"] > 0, np.nan))
    ratio = np.nan_to_num(ratio, nan=np.inf)
    order = np.lexsort((-cells["diff"].to_numpy(), -ratio))
    return cells.iloc[order[0]]


@dataclass
class Outcome:
    """One experiment's reruns against the archive: the tier reached, the cells compared (with
    ``archived``, ``rerun``, ``diff``, ``bound``, ``within``), the claims whose verdict changed,
    per job the largest difference per metric and the selection flips."""

    experiment: str
    tier: str
    cells: pd.DataFrame
    verdicts: list[str] = field(default_factory=list)
    jobs: dict[str, dict[str, float]] = field(default_factory=dict)
    flips: dict[str, list[str]] = field(default_factory=dict)
    #: how many ledger claims rest on the experiment's table (as its own or a protocol table)
    claims: int = 0

    def lines(self) -> list[str]:
        """What a person reads: the tier, the largest cell move against its bound, what failed."""
        out = []
        head = f"{self.experiment}: {self.tier}: {len(self.jobs)} rerun job{'s' * (len(self.jobs) != 1)}"
        if len(self.cells) and self.cells["diff"].max() > 0:
            top = worst_cell(self.cells)
            out.append(f"{head}, {len(self.cells)} cells compared, closest to its bound {top['diff']:.3g} "
                       f"({top['cell']}, bound {top['bound']:.3g})")
        else:
            out.append(f"{head}, {len(self.cells)} cells compared, every one equal")
        for r in self.cells[~self.cells["within"]].itertuples():
            out.append(f"  cell out of tolerance: {r.cell}: archived {r.archived:.6g}, "
                       f"rerun {r.rerun:.6g} (|diff| {r.diff:.3g} > bound {r.bound:.3g})")
        if self.claims:
            out.append(f"  {self.claims} ledger claims rest on this table: "
                       + (f"{len(self.verdicts)} verdicts changed" if self.verdicts else "every verdict unchanged"))
        out += [f"  verdict changed: {v}" for v in self.verdicts]
        out += [f"  selection flipped in {job}: {f}" for job, fs in self.flips.items() for f in fs]
        return out


def _group_tables(experiment: str, files: list[Path], config: dict, references) -> dict[str, pd.DataFrame]:
    """The table, tests and grid-edge rows (as text) of the groups the result ``files`` hold."""
    results = read_results(files)
    table, tests = _table_and_tests(experiment, results, references, config)
    return {"": _as_text(table), "_tests": _as_text(tests), "_selection": _as_text(selections(experiment, results, config))}


def _spliced_ledger(claims, report_dir: Path, experiment: str, parts: dict[str, pd.DataFrame], groups: set,
                    where: Path) -> pd.DataFrame:
    """The ledger over a copy (in ``where``) of ``report_dir``'s tables with ``experiment``'s rows of
    ``groups`` replaced by ``parts``."""
    tables = where / "tables"
    shutil.copytree(Path(report_dir) / "tables", tables, dirs_exist_ok=True)
    for suffix, new in parts.items():
        path = tables / f"{experiment}{suffix}.csv"
        if not path.is_file():
            continue
        old = pd.read_csv(path, dtype=str, keep_default_na=False)
        if not set(GROUP) <= set(old.columns) or list(new.columns) != list(old.columns):
            continue   # a table in another shape: the verdicts then rest on the archived rows
        write_csv(_splice(old, new, groups), path)
    return ledger(claims, where, staleness=None)


def check(archive, experiment: str, reruns: dict[str, Path], config: dict, *, project=".",
          rules: dict | None = None) -> Outcome:
    """Compare ``reruns`` (``{archived job path relative to archive: its rerun's result file}``) of
    ``experiment`` with the archive on the three tiers (module docstring)."""
    archive, project = Path(archive), Path(project)
    rules = load_rules(project / RULES_FILE) if rules is None else rules
    claims_path = project / config["report"]["claims"]
    ledger_tol = load_claims(claims_path)["tolerance"]
    references = project / config["report"]["references"]
    spec = get(experiment)
    jobs, flips, identical = {}, {}, True
    for path, mine in reruns.items():
        jobs[path], flip = job_differences(archive / path, mine)
        if flip:
            flips[path] = flip
        identical &= result_text(archive / path) == result_text(mine)
    datasets = {Path(p).parts[1] for p in reruns}
    paths = [f"{experiment}/{d}/{m}/split{k}.csv" for d, m, k in spec.jobs(config) if d in datasets]
    archived = [archive / p for p in paths if (archive / p).is_file()]
    replaced = [Path(reruns[p]) if p in reruns else archive / p for p in paths if p in reruns or (archive / p).is_file()]
    before = _group_tables(experiment, archived, config, references)
    after = _group_tables(experiment, replaced, config, references)
    key = [k for k in spec.key if k in before[""].columns]
    number = {c: (lambda f, c=c: pd.to_numeric(f[c], errors="coerce")) for c in ("mean", "std", spec.count)}
    a = before[""].assign(**number)
    b = after[""].assign(mean=number["mean"])
    cells = a.merge(b[key + ["mean"]], on=key, how="outer", suffixes=("", "_rerun"))
    metrics = cells["metric"] if "metric" in cells else pd.Series("", index=cells.index)
    cells["bound"] = [cell_bound(m, x, s if s == s else 0.0, int(n) if n == n else 0, rules, ledger_tol)
                      for m, x, s, n in zip(metrics, cells["mean"], cells["std"], cells[spec.count])]
    cells = cells[cells["bound"].notna()].copy()
    cells["archived"], cells["rerun"] = cells["mean"], cells["mean_rerun"]
    cells["diff"] = (cells["archived"] - cells["rerun"]).abs()
    both_nan = cells["archived"].isna() & cells["rerun"].isna()
    cells.loc[both_nan, "diff"] = 0.0
    cells["diff"] = cells["diff"].fillna(np.inf)
    cells["within"] = cells["diff"] <= cells["bound"]
    cells["cell"] = ["/".join(str(v) for v in row) for row in cells[[k for k in key if k != "task"]].itertuples(index=False)]
    cells = cells[key + ["cell", "archived", "rerun", "diff", "bound", "within"]].reset_index(drop=True)
    changed, claims = [], 0
    if not identical:
        groups = set(before[""][GROUP].itertuples(index=False, name=None)) if set(GROUP) <= set(before[""]) else set()
        with tempfile.TemporaryDirectory(prefix="structpred-verdicts-") as tmp:
            old = _spliced_ledger(claims_path, project / config["report"]["dir"], experiment, before, groups,
                                  Path(tmp) / "archived")
            new = _spliced_ledger(claims_path, project / config["report"]["dir"], experiment, after, groups,
                                  Path(tmp) / "rerun")
        joined = old[["id", "verdict"]].merge(new[["id", "verdict"]], on="id", suffixes=("", "_rerun"))
        changed = [f"{r.id}: {r.verdict} -> {r.verdict_rerun}" for r in joined.itertuples() if r.verdict != r.verdict_rerun]
        claims = int(((old["table"] == experiment) | old["protocols"].fillna("").str.contains(experiment, regex=False)).sum())
    tier = ("bitwise" if identical else "tolerance" if cells["within"].all() and not changed
            else "verdicts" if not changed else "differs")
    return Outcome(experiment, tier, cells, changed, jobs, flips, claims)


def check_reruns(archive, result: pd.DataFrame, kept, config: dict, project=".") -> list[Outcome]:
    """:func:`check` for each experiment of ``result`` (:func:`structpred.runs.archive.verify`'s
    table, run with ``keep=kept``), over its jobs that finished (identical or differing)."""
    done = result[result["status"].isin(["identical", "differs"])]
    out = []
    for experiment, group in done.groupby("experiment", sort=True):
        paths = [job_path(r.experiment, r.dataset, r.method, r.split) for r in group.itertuples()]
        out.append(check(archive, experiment, {p: Path(kept) / p for p in paths}, config, project=project))
    return out


def required_met(tier: str, required: str) -> bool:
    """Whether ``tier`` is at least as strict as ``required`` (:data:`TIERS`, strictest first)."""
    return TIERS.index(tier) <= TIERS.index(required)


def read_record(archive, experiment: str) -> dict[str, dict]:
    """``{machine class: what its last verification found}`` for ``experiment`` (empty: none)."""
    path = Path(archive) / experiment / RECORD
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a reproduction record ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "tier" in v for v in data.values()):
        raise ConfigError(f"{path}: a reproduction record maps machine classes to outcomes with a tier")
    return data


def record(archive, outcome: Outcome, machine: str, commit: str) -> None:
    """Write ``outcome`` as ``machine``'s entry of the experiment's reproduction record (replacing
    that class's earlier one), atomically: the tier, the commit, the jobs, the largest cell move,
    the cell nearest its bound, what failed."""
    data = read_record(archive, outcome.experiment)
    cells = outcome.cells
    worst = worst_cell(cells) if len(cells) else None
    data[machine] = {
        "tier": outcome.tier, "commit": commit, "jobs": sorted(outcome.jobs),
        "cells": int(len(cells)), "cells_out": int((~cells["within"]).sum()) if len(cells) else 0,
        "largest_cell_move": float(cells["diff"].max()) if len(cells) else None,
        "largest_cell": cells.loc[cells["diff"].idxmax(), "cell"] if len(cells) else None,
        "closest_cell": None if worst is None else worst["cell"],
        "closest_cell_move": None if worst is None else float(worst["diff"]),
        "closest_cell_bound": None if worst is None else float(worst["bound"]),
        "largest_job_difference": {m: max(d.get(m, 0.0) for d in outcome.jobs.values())
                                   for m in sorted({m for d in outcome.jobs.values() for m in d})},
        "claims": outcome.claims, "verdicts_changed": outcome.verdicts, "selection_flips": outcome.flips}
    path = Path(archive) / outcome.experiment / RECORD
    with atomic_open(path, "w") as fh:
        fh.write(json.dumps(data, indent=1, sort_keys=True, default=float) + "\n")


def summary(archive, experiment: str) -> str:
    """One line: the tiers the experiment's reruns reached, per machine class (empty: never verified
    across classes)."""
    parts = []
    for machine, entry in sorted(read_record(archive, experiment).items()):
        what = {"bitwise": "bitwise", "tolerance": "within tolerance, same verdicts",
                "verdicts": "same verdicts (cells out of tolerance)", "differs": "NOT reproduced"}[entry["tier"]]
        move, bound = entry.get("closest_cell_move"), entry.get("closest_cell_bound")
        moved = f"; the cell nearest its bound, {entry['closest_cell']}, moved {move:.2g} of {bound:.2g}" if move else ""
        n = len(entry["jobs"])
        parts.append(f"{what} on {machine} ({n} job{'s' * (n != 1)} rerun{moved})")
    return "; ".join(parts)
