"""``m4n_table1_converged``: Table 1's fits run to a certified relative duality gap, its settings,
per-fit records and the report page beside the paper-budget table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.papers.m4n.tables import M4NJob, fit_one_lambda
from structpred.papers.m4n.report import render_converged
from structpred.papers.registry import get

CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())


def toy_parts(seed=3, k=3):
    rng = np.random.default_rng(seed)
    parts = []
    for n in (80, 40, 40):
        y = rng.integers(0, k, size=n)
        parts.append((rng.normal(size=(n, 4)) + y[:, None], y))
    return tuple(parts)


def test_settings_reuse_table1_with_the_convergence_budget():
    t1, conv = get("m4n_table1"), get("m4n_table1_converged")
    own = CONFIG["m4n_table1_converged"]
    assert conv.references_of == conv.beside == "m4n_table1"
    want_datasets = [d for t in own["tasks"] for d in CONFIG["m4n_table1"]["tasks"][t]["datasets"]]
    assert list(dict.fromkeys(d for d, _, _ in conv.jobs(CONFIG))) == want_datasets
    assert len(conv.jobs(CONFIG)) == len(want_datasets) * 3 * CONFIG["m4n_table1"]["n_splits"]
    for method in ("M3N", "CRF", "M4N"):
        s, base = conv.settings(CONFIG, "abalone", method), t1.settings(CONFIG, "abalone", method)
        assert s["n_passes"] == own["max_passes"][method] and s["rtol"] == own["rtol"]
        assert s["eval_every"] == own["eval_every"]
        assert s.get("options") == own["options"].get(method)
        same = {k: v for k, v in s.items() if k not in ("n_passes", "rtol", "eval_every", "options")}
        assert same == {k: v for k, v in base.items() if k not in ("n_passes", "eval_every")}
        # the split features are Table 1's own: the same files serve both tables
        assert conv.feature_settings(CONFIG, "abalone") == t1.feature_settings(CONFIG, "abalone")


def test_a_converged_fit_stops_at_its_certified_gap_and_records_it():
    parts = toy_parts()
    kw = dict(task="mc", loss="zero_one", n_labels=3, lambdas=[0.05], oracle_iterations=20, warm_start=True,
              random_state=0, eval_every=5)
    for method, extra in (("M3N", {"options": {"steps": "pairwise", "sampling": "gap", "block_steps": 5}}),
                          ("CRF", {}), ("M4N", {"options": {"game": "exact", "step": "line_search", "sampling": "gap"}})):
        rec, hist = fit_one_lambda(parts, M4NJob(method=method, n_passes=3000, rtol=1e-3, **extra, **kw), 0.05)
        assert rec["rel_gap"] <= 1e-3 and rec["passes"] < 3000 and rec["passes"] % 5 == 0
        assert rec["passes"] == hist["pass"].iloc[-1]
        assert abs(rec["rel_gap"] - hist["gap"].iloc[-1] / hist["primal"].iloc[-1]) < 1e-15
        assert (hist["gap"].iloc[:-1] > 1e-3 * hist["primal"].iloc[:-1]).all()   # not earlier
        capped, _ = fit_one_lambda(parts, M4NJob(method=method, n_passes=5, rtol=1e-12, **extra, **kw), 0.05)
        assert capped["passes"] == 5 and capped["rel_gap"] > 1e-12    # the cap, recorded
    # without rtol: the paper-budget records are unchanged (no new metrics in its tables)
    plain, _ = fit_one_lambda(parts, M4NJob(method="M3N", n_passes=5, **kw), 0.05)
    assert set(plain) == {"lam", "val_loss", "test_loss", "seconds", "gap"}


def _table(rows, metric_values):
    return pd.DataFrame([{"task": "mc", "dataset": d, "method": m, "metric": metric, "mean": v, "std": 0.01,
                          "n_splits": 14, "reference": np.nan}
                         for d, m in rows for metric, v in metric_values(d, m).items()])


def test_report_page_sets_the_budget_beside_the_converged_losses():
    rows = [("iris", "M3N"), ("iris", "M4N"), ("wine", "M3N"), ("wine", "M4N")]
    conv = _table(rows, lambda d, m: {"test_loss": 0.111 if m == "M3N" else 0.122, "rel_gap": 9e-4, "passes": 310})
    budget = _table(rows, lambda d, m: {"test_loss": 0.333 if m == "M3N" else 0.344})
    tests = pd.DataFrame([{"task": "mc", "dataset": "iris", "method_a": "M4N", "method_b": "M3N", "p_value": 0.25}])
    old_tests = pd.DataFrame([{"task": "mc", "dataset": "iris", "method_a": "M4N", "method_b": "M3N",
                               "p_value": 0.75}])
    html = get("m4n_table1_converged").page(conv, tests, {"m4n_table1": (budget, old_tests)}, {})
    iris = html.split("<tr>")[2]
    for text in ("33.30%", "11.10% ± 1.00%", "34.40%", "12.20%", "9.0e-04", "310 passes", "0.750", "0.250"):
        assert text in iris
    assert "wine" in html.split("<tr>")[3] and html.split("<tr>")[3].count("–") == 2   # no tests for wine
    # the report without m4n_table1: the budget columns are empty
    alone = render_converged(conv, tests, None, None, frozenset({"mc"}))
    assert alone.split("<tr>")[2].count("<td>–</td>") == 3 and "11.10%" in alone   # 2 losses, 1 p-value


def test_convergence_note_under_a_cell():
    from structpred.tables.cells import convergence_note

    assert convergence_note(2.5e-6, 1.0) == "<br><span class=paper>gap/primal 2.5e-06, 1 pass</span>"   # the dual QP
    assert convergence_note(9.4e-4, 711.0).endswith("gap/primal 9.4e-04, 711 passes</span>")
    assert convergence_note(None, 3.0) == convergence_note(1e-3, None) == ""
