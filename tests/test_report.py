"""Aggregation over splits, references, paired tests, HTML rendering."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from structpred.experiments.results import make_rows, read_results, write_csv
from structpred.report.aggregate import aggregate, aggregate_files
from structpred.report.html import render_losses
from structpred.report.references import load_references
from structpred.report.significance import method_pairs, paired_tests, wilcoxon_pvalue


def _rows(values, method, dataset="iris", lam_selected=0.5):
    rows = []
    for split, v in enumerate(values):
        for lam in (0.5, 0.25):
            sel = lam == lam_selected
            rows.append(dict(experiment="m4n_table1", task="mc", dataset=dataset, method=method,
                             split=split, lam=lam, selected=sel, metric="test_loss",
                             value=v if sel else 9.0))
            rows.append(dict(experiment="m4n_table1", task="mc", dataset=dataset, method=method,
                             split=split, lam=lam, selected=sel, metric="seconds", value=1.0 + split))
    return rows


@pytest.fixture
def refs(tmp_path):
    path = tmp_path / "refs.yaml"
    path.write_text("m4n_table1:\n  - {task: mc, dataset: iris, method: M3N, metric: test_loss, value: 0.0333}\n")
    return path


def test_aggregate_uses_selected_lambda_and_sample_std(refs):
    results = make_rows(_rows([0.1, 0.2, 0.3], "M3N") + _rows([0.0, 0.1, 0.2], "M4N"))
    table = aggregate(results, load_references(refs, "m4n_table1"))
    m3n = table[table["method"] == "M3N"].iloc[0]
    assert m3n["mean"] == pytest.approx(0.2)
    assert m3n["std"] == pytest.approx(np.std([0.1, 0.2, 0.3], ddof=1))
    assert m3n["n_splits"] == 3
    assert m3n["reference"] == pytest.approx(0.0333)
    assert pd.isna(table[table["method"] == "M4N"].iloc[0]["reference"])
    assert "seconds" not in set(table["metric"])  # timings would break byte-identical tables


def test_aggregate_files_roundtrip_is_byte_identical(tmp_path, refs):
    paths = []
    for method, vals in [("M3N", [0.1, 0.2, 0.3]), ("M4N", [0.05, 0.1, 0.25])]:
        p = tmp_path / f"{method}.csv"
        write_csv(make_rows(_rows(vals, method)), p)
        paths.append(p)
    out1, out2 = tmp_path / "t1.csv", tmp_path / "t2.csv"
    aggregate_files(paths, refs, out1, tmp_path / "s1.csv")
    aggregate_files(paths, refs, out2, tmp_path / "s2.csv")
    assert out1.read_bytes() == out2.read_bytes()
    assert list(pd.read_csv(out1).columns) == ["task", "dataset", "method", "metric", "mean",
                                               "std", "n_splits", "reference"]
    assert len(read_results(paths)) == 2 * 3 * 2 * 2


def test_paired_tests_match_scipy():
    a = [0.1, 0.2, 0.3, 0.25, 0.4, 0.35]
    b = [0.15, 0.22, 0.31, 0.3, 0.41, 0.33]
    results = make_rows(_rows(a, "M4N") + _rows(b, "M3N"))
    results = results[results["selected"]]
    tests = paired_tests(results)
    assert len(tests) == 1
    row = tests.iloc[0]
    assert (row["method_a"], row["method_b"]) == ("M4N", "M3N")
    assert row["p_value"] == pytest.approx(wilcoxon(a, b, zero_method="zsplit").pvalue)
    assert row["mean_diff"] == pytest.approx(np.mean(np.subtract(a, b)))


def test_wilcoxon_all_equal_is_not_significant():
    assert wilcoxon_pvalue(np.ones(5), np.ones(5))[1] == 1.0


def test_method_pairs():
    assert method_pairs(["M3N", "CRF", "M4N"]) == [("M4N", "M3N"), ("M4N", "CRF")]
    assert method_pairs(["M4N-K10-warm", "M4N-K10-cold"]) == [("M4N-K10-warm", "M4N-K10-cold")]


def test_render_bolds_the_lower_of_m3n_and_m4n():
    table = pd.DataFrame({"task": ["mc", "mc"], "dataset": ["iris", "iris"], "method": ["M3N", "M4N"],
                          "metric": ["test_loss"] * 2, "mean": [0.05, 0.03], "std": [0.01, 0.01],
                          "n_splits": [3, 3], "reference": [0.0333, 0.0333]})
    html = render_losses(table, pd.DataFrame(columns=["task", "dataset", "method_a", "method_b", "p_value"]))
    assert "<b>3.00% ± 1.00%</b>" in html
    assert "<b>5.00%" not in html
    assert "paper 3.33%" in html


def test_references_reject_duplicates(tmp_path):
    from structpred.errors import ConfigError

    path = tmp_path / "r.yaml"
    row = "  - {task: mc, dataset: iris, method: M3N, metric: test_loss, value: 0.1}\n"
    path.write_text("m4n_table1:\n" + row + row)
    with pytest.raises(ConfigError, match="duplicate"):
        load_references(path, "m4n_table1")


def test_index_links_tables_figures_and_prints_departures(tmp_path, refs):
    import json

    from structpred.report.html import write_index

    results = tmp_path / "split0.csv"
    write_csv(make_rows(_rows([0.1], "M3N") + _rows([0.05], "M4N")), results)
    table, tests = tmp_path / "tables" / "m4n_table1.csv", tmp_path / "tables" / "m4n_table1_tests.csv"
    aggregate_files([results], refs, table, tests)
    figure = tmp_path / "figures" / "m4n_table1.png"
    figure.parent.mkdir()
    figure.write_bytes(b"png")
    stamp = tmp_path / "raw" / "iris" / ".verified"
    stamp.parent.mkdir(parents=True)
    stamp.write_text(json.dumps({"iris.data": "6f608b71"}))
    config = {"name": "unit", "m4n_table1": {"departures": ["centres fitted on train only"]}}
    out = tmp_path / "index.html"
    write_index(out, config=config, tables=[table], tests=[tests], figures=[figure],
                stamps=[stamp], references=refs, results=[results])
    page = out.read_text()
    assert "href='tables/m4n_table1.csv'" in page and "src='figures/m4n_table1.png'" in page
    assert "centres fitted on train only" in page
    assert "6f608b71" in page and "unit" in page
    assert "paper 3.33%" in page
