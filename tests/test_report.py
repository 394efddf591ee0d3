"""Aggregation over splits, references, paired tests, HTML rendering."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from structpred.papers.agm.report import EMOTION_LOSSES, render_emotion
from structpred.papers.m4n.report import m4n_pairs, render_losses, warm_cold_pairs
from structpred.tables.results import make_rows, read_results, write_csv
from structpred.report.aggregate import aggregate, aggregate_files
from structpred.report.references import load_references
from structpred.tables.significance import best_tests, paired_tests, wilcoxon_pvalue


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


def test_an_experiment_may_key_its_table_on_its_own_columns(tmp_path):
    """Casimir's table: figure, c, method, variant per row, counted over seeds; its own result
    columns survive make_rows and its references are keyed the same way."""
    key = ("figure", "c", "method", "variant", "metric")
    rows = [dict(experiment="casimir_ner", task="ner", dataset="conll2003", method=m, split=seed,
                 selected=True, metric="train_objective", value=v + seed, figure="fig2", c=c,
                 variant=variant)
            for m, c, variant, v in [("SGD", 1, "", 1.0), ("Casimir-SVRG-adapt", 1, "mu0=2", 0.5)]
            for seed in range(3)]
    results = make_rows(rows)
    assert list(results.columns[-3:]) == ["figure", "c", "variant"]
    path = tmp_path / "refs.yaml"
    path.write_text("casimir_ner:\n  - {figure: fig2, c: 1, method: SGD, variant: '', metric: train_objective,"
                    " value: 1.9}\n")
    refs = load_references(path, "casimir_ner", key)
    table = aggregate(results, refs, key, "n_seeds")
    assert list(table.columns) == [*key, "mean", "std", "n_seeds", "reference"]
    sgd = table[table["method"] == "SGD"].iloc[0]
    assert (sgd["mean"], sgd["n_seeds"], sgd["reference"]) == (2.0, 3, 1.9)
    with pytest.raises(Exception, match="lacks"):
        load_references(path, "casimir_ner", ("figure", "seed", "method", "metric"))
    # through the files: the empty variant (read back as NaN) still keys its row
    write_csv(results, tmp_path / "r.csv")
    back = aggregate(read_results([tmp_path / "r.csv"]), refs, key, "n_seeds")
    assert len(back) == 2 and back["mean"].tolist() == [2.0, 1.5] and back["reference"].iloc[0] == 1.9


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
    tests = paired_tests(results, m4n_pairs)
    assert len(tests) == 1
    row = tests.iloc[0]
    assert (row["method_a"], row["method_b"]) == ("M4N", "M3N")
    assert row["p_value"] == pytest.approx(wilcoxon(a, b, zero_method="zsplit").pvalue)
    assert row["mean_diff"] == pytest.approx(np.mean(np.subtract(a, b)))


def test_wilcoxon_all_equal_is_not_significant():
    assert wilcoxon_pvalue(np.ones(5), np.ones(5))[1] == 1.0


def test_method_pairs():
    assert m4n_pairs(["M3N", "CRF", "M4N"]) == [("M4N", "M3N"), ("M4N", "CRF")]
    assert m4n_pairs(["M3N", "CRF"]) == []
    configurations = {"M4N-K10-warm": (10, True), "M4N-K10-cold": (10, False), "M4N-K30-warm": (30, True)}
    pairs = warm_cold_pairs(configurations)
    assert pairs(["M4N-K10-warm", "M4N-K10-cold", "M4N-K30-warm"]) == [("M4N-K10-warm", "M4N-K10-cold")]
    assert pairs(["M4N-K30-warm", "M4N-K10-warm"]) == []


def test_render_bolds_the_lower_of_m3n_and_m4n():
    table = pd.DataFrame({"task": ["mc", "mc"], "dataset": ["iris", "iris"], "method": ["M3N", "M4N"],
                          "metric": ["test_loss"] * 2, "mean": [0.05, 0.03], "std": [0.01, 0.01],
                          "n_splits": [3, 3], "reference": [0.0333, 0.0333]})
    html = render_losses(table, pd.DataFrame(columns=["task", "dataset", "method_a", "method_b", "p_value"]), {"mc"})
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
    pages = write_index(out, config=config, tables=[table], tests=[tests], figures=[figure],
                        stamps=[stamp], references=refs, results=[results])
    assert [p.name for p in pages] == ["index.html", "m4n.html", "casimir.html", "qs.html", "agm.html"]
    page = (tmp_path / "m4n.html").read_text()   # the table is on its paper's page
    assert "href='tables/m4n_table1.csv'" in page and "src='figures/m4n_table1.png'" in page
    assert "centres fitted on train only" in page
    assert "paper 3.33%" in page
    assert "<section id='m4n_table1'><h2>" in page and "href='#top'" in page
    # the workflow's results: no numerics record beside them, so the commit is unknown, and said so
    assert "the commit its runs were computed at is unknown" in page
    index = out.read_text()
    assert "6f608b71" in index and "unit" in index          # provenance: raw checksums, configuration
    assert "href='m4n.html#m4n_table1'" in index            # the contents link the table's section
    assert "Rendered at commit" in index


# ---- AGM Table 1 (agm_emotion): best-or-not-significantly-worse tests, table, figure ----

SPLITS = np.arange(20)
AGM_VALUES = 0.30 + 0.005 * SPLITS
WORSE = AGM_VALUES + 0.05 + 0.001 * SPLITS  # worse on every split: exact p = 2 / 2**20
# differences -1, +2, -3, ..., +20 (x 0.001): worse on average by 0.0005, W = 100, p = 0.869
NEAR_TIE = AGM_VALUES + 0.001 * np.arange(1, 21) * np.where(SPLITS % 2 == 0, -1, 1)


def _emotion_rows(values, method, metric="zero_one"):
    return [dict(experiment="agm_emotion", task="emotion", dataset="ck", method=method, split=split,
                 lam=0.01, selected=True, metric=metric, value=v) for split, v in enumerate(values)]


def _emotion_results():
    rows = (_emotion_rows(AGM_VALUES, "AGM") + _emotion_rows(WORSE, "CRF")
            + _emotion_rows(NEAR_TIE, "SSVM")
            # on the absolute loss CRF is the best and AGM clearly worse
            + _emotion_rows(WORSE, "AGM", "absolute") + _emotion_rows(AGM_VALUES, "CRF", "absolute"))
    return make_rows(rows)


def test_best_tests_bold_is_best_or_not_significantly_worse():
    tests = best_tests(_emotion_results())
    assert list(tests.columns) == ["task", "dataset", "metric", "method_a", "method_b", "n_splits",
                                   "mean_diff", "statistic", "p_value", "bold"]
    vs_best = tests[tests["bold"].notna()]
    by = vs_best.set_index(["metric", "method_a"])
    assert set(vs_best.loc[vs_best["metric"] == "zero_one", "method_b"]) == {"AGM"}
    best = by.loc[("zero_one", "AGM")]
    assert (best["p_value"], bool(best["bold"]), best["mean_diff"], best["n_splits"]) == (1.0, True, 0.0, 20)
    worse = by.loc[("zero_one", "CRF")]
    assert worse["p_value"] == pytest.approx(2 / 2**20)
    assert worse["mean_diff"] == pytest.approx(0.05 + 0.001 * 9.5)
    assert not worse["bold"]
    tie = by.loc[("zero_one", "SSVM")]
    assert tie["p_value"] == pytest.approx(0.8694877624511719)
    assert tie["p_value"] == pytest.approx(wilcoxon(NEAR_TIE, AGM_VALUES, zero_method="zsplit").pvalue)
    assert tie["mean_diff"] == pytest.approx(0.0005)
    assert tie["statistic"] == pytest.approx(100.0)
    assert bool(tie["bold"])
    # the best is chosen per metric
    assert by.loc[("absolute", "CRF"), "method_b"] == "CRF" and bool(by.loc[("absolute", "CRF"), "bold"])
    assert by.loc[("absolute", "AGM"), "method_b"] == "CRF" and not by.loc[("absolute", "AGM"), "bold"]
    assert len(vs_best) == 5
    # then every other pair, bold empty: on zero-one CRF against SSVM, in the data's method order
    pairs = tests[tests["bold"].isna()]
    assert list(zip(pairs["metric"], pairs["method_a"], pairs["method_b"])) == [("zero_one", "CRF", "SSVM")]
    pair = pairs.iloc[0]
    assert pair["p_value"] == pytest.approx(wilcoxon(WORSE, NEAR_TIE, zero_method="zsplit").pvalue)
    assert pair["mean_diff"] == pytest.approx(float(np.mean(WORSE - NEAR_TIE)))
    # and bold_of reads only the rows against the best
    from structpred.tables.cells import bold_of
    assert not bold_of(tests)[("emotion", "ck", "zero_one", "CRF")]
    assert bold_of(tests)[("emotion", "ck", "zero_one", "SSVM")]


def test_best_tests_pairs_only_common_splits():
    results = make_rows(_emotion_rows(AGM_VALUES, "AGM") + _emotion_rows(WORSE[:6], "CRF"))
    row = best_tests(results).set_index("method_a").loc["CRF"]
    assert row["n_splits"] == 6
    assert row["p_value"] == pytest.approx(wilcoxon(WORSE[:6], AGM_VALUES[:6]).pvalue)  # 2 / 2**6
    assert row["p_value"] == pytest.approx(0.03125)
    assert not row["bold"]


def _emotion_table():
    rows = []
    for metric in EMOTION_LOSSES:
        rows.append(dict(method="M4N", metric=metric, mean=0.31, std=0.02, reference=np.nan))
        rows.append(dict(method="CRF", metric=metric, mean=0.40, std=0.03, reference=0.32))
        rows.append(dict(method="AGM", metric=metric, mean=0.30, std=0.01, reference=0.33))
    table = pd.DataFrame(rows).assign(task="emotion", dataset="ck", n_splits=20)
    tests = pd.DataFrame([dict(task="emotion", dataset="ck", metric=metric, method_a=m, method_b="AGM",
                               p_value=p, bold=bold)
                          for metric in EMOTION_LOSSES
                          for m, p, bold in [("AGM", 1.0, True), ("M4N", 0.2, True),
                                             ("CRF", 0.01 if metric != "squared" else 0.3,
                                              metric == "squared")]])
    return table, tests


def test_render_emotion_layout_bold_average_and_count():
    table, tests = _emotion_table()
    page = render_emotion(table, tests)
    labels = ["zero-one, unweighted", "absolute, unweighted", "squared, unweighted",
              "zero-one, weighted", "absolute, weighted", "squared, weighted"]
    positions = [page.index(f"<td class=l>{label}</td>") for label in labels]
    assert positions == sorted(positions)  # the paper's row order
    assert "<th>AGM</th><th>CRF</th><th>M4N</th>" in page  # paper's column order, SSVM absent
    assert page.count("<b>0.300 ± 0.010</b>") == 6 and page.count("<b>0.310 ± 0.020</b>") == 6
    assert page.count("<b>0.400 ± 0.030</b>") == 1  # CRF only on the squared loss
    assert page.count("0.400 ± 0.030") == 6
    assert "paper 0.330</span> <span class=diff>Δ −0.030</span>" in page
    squared = page.split("<td class=l>squared, unweighted</td>")[1].split("</tr>")[0]
    assert "<b>0.400 ± 0.030</b>" in squared
    assert ("<tr><td class=l>average</td><td>0.300<br><span class=paper>paper 0.330</span> "
            "<span class=diff>Δ −0.030</span></td><td>0.400<br><span class=paper>paper 0.320</span> "
            "<span class=diff>Δ +0.080</span></td><td>0.310</td></tr>") in page
    assert "<tr><td class=l># bold</td><td>6</td><td>1</td><td>6</td></tr>" in page
    assert "M4N is an extra column (not in the paper)" in page and "GBCFW" in page


def test_render_emotion_without_tests_or_all_losses():
    table, _ = _emotion_table()
    table = table[~((table["method"] == "CRF") & (table["metric"] == "weighted_squared"))]
    page = render_emotion(table, pd.DataFrame())
    assert "<b>" not in page
    assert "<tr><td class=l># bold</td><td>–</td><td>–</td><td>–</td></tr>" in page
    average = page.split("<td class=l>average</td>")[1].split("</tr>")[0]
    assert average.count("<td>–</td>") == 1  # CRF lacks one loss: no average


def _emotion_refs(tmp_path):
    path = tmp_path / "refs.yaml"
    path.write_text("agm_emotion:\n"
                    "  - {task: emotion, dataset: ck, method: AGM, metric: zero_one, value: 0.34}\n"
                    "  - {task: emotion, dataset: ck, method: CRF, metric: zero_one, value: 0.32}\n")
    return path


def test_aggregate_files_writes_best_tests_for_agm_emotion(tmp_path):
    results = _emotion_results()
    paths = []
    for method, part in results.groupby("method", sort=False):
        path = tmp_path / f"{method}.csv"
        write_csv(part, path)
        paths.append(path)
    table_path, tests_path = tmp_path / "agm_emotion.csv", tmp_path / "agm_emotion_tests.csv"
    aggregate_files(paths, _emotion_refs(tmp_path), table_path, tests_path)
    tests = pd.read_csv(tests_path)
    assert tests["bold"].isna().sum() == 1  # the one pair without the best (CRF, SSVM on zero-one)
    tests = tests[tests["bold"].notna()]
    assert set(tests["bold"]) == {True, False}
    by = tests.set_index(["metric", "method_a"])
    assert by.loc[("zero_one", "AGM"), ["method_b", "p_value", "bold"]].tolist() == ["AGM", 1.0, True]
    assert by.loc[("zero_one", "CRF"), "p_value"] == pytest.approx(2 / 2**20)
    assert not by.loc[("zero_one", "CRF"), "bold"]
    assert by.loc[("zero_one", "SSVM"), "bold"]
    assert by.loc[("absolute", "AGM"), ["method_b", "bold"]].tolist() == ["CRF", False]
    table = pd.read_csv(table_path).set_index(["metric", "method"])
    assert table.loc[("zero_one", "AGM"), "mean"] == pytest.approx(AGM_VALUES.mean())
    assert table.loc[("zero_one", "CRF"), "reference"] == pytest.approx(0.32)
    assert table.loc[("zero_one", "AGM"), "n_splits"] == 20


def test_index_renders_agm_emotion_with_its_renderer(tmp_path):
    from structpred.report.html import write_index

    results = tmp_path / "results.csv"
    write_csv(_emotion_results(), results)
    table, tests = tmp_path / "tables" / "agm_emotion.csv", tmp_path / "tables" / "agm_emotion_tests.csv"
    refs = _emotion_refs(tmp_path)
    aggregate_files([results], refs, table, tests)
    out = tmp_path / "index.html"
    write_index(out, config={"name": "unit"}, tables=[table], tests=[tests], figures=[], stamps=[],
                references=refs)
    page = (tmp_path / "agm.html").read_text()
    assert "AGM (NeurIPS 2018) Table 1: facial emotion intensity, average test loss over 20 splits" in page
    assert "<td class=l>zero-one, unweighted</td>" in page
    # AGM best on zero-one only, CRF best on absolute only, SSVM ties on zero-one
    assert "<tr><td class=l># bold</td><td>1</td><td>1</td><td>1</td></tr>" in page


def test_emotion_figure_is_deterministic(tmp_path):
    from structpred.report.experiment_figures import experiment_figure
    table, _ = _emotion_table()
    csv = tmp_path / "agm_emotion.csv"
    table.to_csv(csv, index=False)
    experiment_figure("agm_emotion", csv, tmp_path / "a.png")
    experiment_figure("agm_emotion", csv, tmp_path / "b.png")
    data = (tmp_path / "a.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data == (tmp_path / "b.png").read_bytes()


def test_report_index_command_links_the_tables_present(tmp_path, monkeypatch):
    """``structpred report index`` rebuilds the page from the report folder: experiments with a
    table are linked (with their figures and history figures), the others are named as missing."""
    import yaml

    from structpred.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports" / "tables").mkdir(parents=True)
    (tmp_path / "reports" / "figures" / "qs_usps").mkdir(parents=True)
    rows = [{"task": "reconstruction", "dataset": "usps", "method": m, "metric": "hellinger", "mean": v, "std": 0.01,
             "n_splits": 10, "reference": r} for m, v, r in (("KDE", 0.28, 0.736), ("QS", 0.24, 0.647))]
    write_csv(pd.DataFrame(rows), tmp_path / "reports" / "tables" / "qs_usps.csv")
    (tmp_path / "reports" / "figures" / "qs_usps.png").write_bytes(b"png")
    write_csv(pd.DataFrame([{"task": "reconstruction", "dataset": "usps", "method": "QS", "param": "lam", "scope": "",
                             "grid_min": 1e-5, "grid_max": 0.1, "grid_size": 5, "n_runs": 10, "n_at_min": 3,
                             "n_at_max": 0, "chosen": "1e-05:3 0.0001:7"}]),
              tmp_path / "reports" / "tables" / "qs_usps_selection.csv")
    (tmp_path / "reports" / "figures" / "qs_usps" / "digits.png").write_bytes(b"png")
    (tmp_path / "refs.yaml").write_text("qs_usps: []\n")
    config = {"name": "paper", "experiments": ["qs_robust", "qs_usps"], "report": {"dir": "reports",
              "references": "refs.yaml"}, "data": {"raw_dir": "data/raw"},
              "qs_usps": {"departures": ["a choice"], "methods": ["KDE", "QS"], "n_runs": 10}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(["report", "index", "--config", "config.yaml"]) == 0
    index = (tmp_path / "reports" / "index.html").read_text()
    page = (tmp_path / "reports" / "qs.html").read_text()
    assert "tables/qs_usps.csv" in page and "figures/qs_usps.png" in page and "figures/qs_usps/digits.png" in page
    assert "Test digits and their reconstructions" in page        # a readable heading, not the file's name
    assert "a choice" in page and "0.647" in page
    # the raw files' checksums come from the data registry (no raw file here), never from this machine
    assert "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16" in index and "zip.test.gz" in index
    assert "usps QS: lam at the grid&#x27;s smallest value 1e-05 in 3 of 10 runs" in page
    assert "href='tables/qs_usps_selection.csv'" in page
    assert "tables/qs_robust.csv" not in page
    # no run archive here: the section says the commit is unknown
    assert "the commit its runs were computed at is unknown: runs/README.md names none" in page
    # a configured experiment without a table is named on the index and its page, not silently left out
    assert "Not in this report" in index and "(<code>qs_robust</code>)" in index
    assert "Not on this page" in page and "(<code>qs_robust</code>)" in page
    assert main(["report", "index", "--config", "config.yaml", "--archive", "nowhere"]) == 0
    assert main(["report", "index", "--config", "missing.yaml"]) == 2


def test_report_update_recomputes_the_groups_given_and_keeps_the_other_rows(tmp_path, monkeypatch, capsys):
    """``structpred report update``: a rerun of one dataset, spliced into the table built from every
    file, gives the bytes of a table built from every (new) file; the other rows keep theirs."""
    import yaml

    from structpred.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "refs.yaml").write_text("m4n_table1:\n  - {task: mc, dataset: wine, method: M3N, metric: "
                                        "test_loss, value: 0.0333}\n")
    config = {"name": "paper", "experiments": ["m4n_table1"],
              "report": {"dir": "reports", "references": "refs.yaml"},
              "m4n_table1": {"tasks": {"mc": {"datasets": ["iris", "wine", "glass"]}}, "methods": ["M3N", "M4N"],
                             "n_splits": 3}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    values = {"iris": ([0.1, 0.2, 0.3], [0.0, 0.1, 0.25]), "wine": ([0.3, 0.1, 0.2], [0.2, 0.2, 0.1]),
              "glass": ([0.5, 0.4, 0.6], [0.3, 0.45, 0.5])}

    def files(folder, changed=()):
        """One file per job, at the workflow's path <dataset>/<method>/split<k>.csv."""
        paths = []
        for dataset, (a, b) in values.items():
            for method, v in (("M3N", a), ("M4N", b)):
                v = [x + 0.0123 for x in v] if dataset in changed else v
                for k, x in enumerate(v):
                    path = tmp_path / folder / dataset / method / f"split{k}.csv"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_csv(make_rows([dict(r, split=k) for r in _rows([x], method, dataset)]), path)
                    paths.append(path)
        return paths

    old = files("old")
    tables = tmp_path / "reports" / "tables"
    aggregate_files(old, tmp_path / "refs.yaml", tables / "m4n_table1.csv", tables / "m4n_table1_tests.csv")
    before = (tables / "m4n_table1.csv").read_text().splitlines()
    new = files("new", changed={"wine"})
    aggregate_files(new, tmp_path / "refs.yaml", tmp_path / "all.csv", tmp_path / "all_tests.csv")
    wine = [str(p) for p in new if p.parent.parent.name == "wine"][::-1]  # any order: rows go in job order
    assert main(["report", "update", "m4n_table1", *wine, "--config", "config.yaml"]) == 0
    assert (tables / "m4n_table1.csv").read_bytes() == (tmp_path / "all.csv").read_bytes()
    assert (tables / "m4n_table1_tests.csv").read_bytes() == (tmp_path / "all_tests.csv").read_bytes()
    after = (tables / "m4n_table1.csv").read_text().splitlines()
    changed = [a for a, b in zip(before, after) if a != b]
    assert len(changed) == 2 and all(",wine," in line for line in changed)  # the wine rows, in place
    assert (tmp_path / "reports" / "figures" / "m4n_table1.png").read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    # every method of a group, from one experiment, into an existing table: else one error line
    m4n_only = [w for w in wine if "/M4N/" in w]
    assert main(["report", "update", "m4n_table1", *m4n_only, "--config", "config.yaml"]) == 2
    assert "mc/wine: the table also has M3N" in capsys.readouterr().err
    other = tmp_path / "other" / "wine" / "M3N" / "split0.csv"
    other.parent.mkdir(parents=True)
    write_csv(make_rows([dict(r, experiment="m4n_table2") for r in _rows([0.1], "M3N", "wine")]), other)
    assert main(["report", "update", "m4n_table1", str(other), "--config", "config.yaml"]) == 2
    assert "result files of m4n_table2 given to update m4n_table1" in capsys.readouterr().err
    vowel = tmp_path / "other" / "vowel" / "M3N" / "split0.csv"
    vowel.parent.mkdir(parents=True)
    write_csv(make_rows(_rows([0.1], "M3N", "vowel")), vowel)
    assert main(["report", "update", "m4n_table1", str(vowel), "--config", "config.yaml"]) == 2
    assert "vowel M3N split 0 is not a job of m4n_table1" in capsys.readouterr().err
    (tmp_path / "other.csv").write_bytes(vowel.read_bytes())
    assert main(["report", "update", "m4n_table1", str(tmp_path / "other.csv"), "--config", "config.yaml"]) == 2
    assert "not a result file <dataset>/<method>/split<k>.csv" in capsys.readouterr().err
    assert main(["report", "update", "m4n_table1", "nope.csv", "--config", "config.yaml"]) == 2
    assert "no result file nope.csv" in capsys.readouterr().err
    assert (tables / "m4n_table1.csv").read_bytes() == (tmp_path / "all.csv").read_bytes()


def test_the_committed_report_rerenders_byte_identical_from_the_run_archive(tmp_path, capsys):
    """structpred report rerender: every table, grid-edge table, test table, figure and curve of an
    experiment whose jobs are all archived, rebuilt from runs/ without a job, equals the committed
    file byte for byte."""
    import yaml

    from structpred.cli import main

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    config["report"] = {**config["report"], "dir": str(tmp_path / "reports"),
                        "references": str(root / config["report"]["references"]),
                        "claims": str(root / config["report"]["claims"])}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))   # job order = config order
    assert main(["report", "rerender", "--archive", str(root / "runs"), "--config", str(tmp_path / "config.yaml")]) == 0
    out = capsys.readouterr().out
    rebuilt = [line.split(":")[0] for line in out.splitlines() if "rebuilt from" in line]
    assert {"m4n_table1", "m4n_table1_code", "casimir_ner", "qs_movielens", "agm_emotion", "agm_srl"} <= set(rebuilt)
    made = [p for p in (tmp_path / "reports").rglob("*") if p.is_file() and p.suffix != ".html" and p.name != "claims.csv"]
    assert len(made) > 40
    for path in made:
        committed = root / "reports" / path.relative_to(tmp_path / "reports")
        assert path.read_bytes() == committed.read_bytes(), committed


def test_each_table_names_the_commits_its_runs_were_computed_at(tmp_path):
    """runs/README.md's `- code:` lines (parenthesised asides not read) and the jobs' numerics
    records name the commits; where neither does, the commit is unknown, and said so."""
    import json

    from structpred.report.run_commits import archive_records, computed_at, readme_commits, record_commits

    readme = tmp_path / "runs" / "README.md"
    readme.parent.mkdir()
    readme.write_text("# Run archive\n\nat commit deadbee0 nothing.\n\n"
                      "## exp_a, first rows, complete\n\n- code: commit f4a98cd (a fix, 4e1d51c, included), config "
                      "`config/config.yaml`; the rest ran at 47dd667, whose paths are f4a98cd's\n- machine: 2 cores, "
                      "commit 1234abc is not a code line\n\n## exp_a, other rows\n\n- code: commits a166985 and "
                      "f4a98cd\n\n## exp_b (a table)\n\n- state: complete\n")
    assert readme_commits(readme) == {"exp_a": ["f4a98cd", "47dd667", "a166985"]}   # exp_b: no code line
    job = tmp_path / "runs" / "exp_a" / "iris" / "M3N"
    job.mkdir(parents=True)
    for k, commit in enumerate(["abc1234", "abc1234", "def5678+dirty"]):
        (job / f"split{k}.csv").write_text("x\n")
        (job / f"split{k}.numerics.json").write_text(json.dumps({"commit": commit}))
    records = record_commits(archive_records(tmp_path / "runs", "exp_a"))
    assert records == {"abc1234": 2, "def5678+dirty": 1}
    assert computed_at(readme_commits(readme)["exp_a"], records, 3, "runs/README.md") == (
        "computed at commits f4a98cd, 47dd667, a166985 (the code lines of runs/README.md); 3 of 3 jobs "
        "carry a numerics record naming the commit they ran at", "abc1234 (2), def5678+dirty (1)")
    assert computed_at([], record_commits([]), 3, "runs/README.md") == (
        "the commit its runs were computed at is unknown: runs/README.md names none and no job carries a "
        "numerics record", "")


def test_the_render_commit_is_the_last_that_changed_anything_outside_the_report(tmp_path):
    """A commit that only adds the re-rendered report leaves the page's commit true: a fresh
    clone re-renders the same page."""
    import subprocess

    from structpred.report.provenance import source_commit

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "reports").mkdir()
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-qm", "code")
    code = git("rev-parse", "HEAD")
    (tmp_path / "reports" / "index.html").write_text(f"rendered at {code}\n")
    git("add", ".")
    git("commit", "-qm", "the report")
    assert source_commit(tmp_path, ignore=[tmp_path / "reports"]) == code
    (tmp_path / "reports" / "index.html").write_text("again\n")
    assert source_commit(tmp_path, ignore=[tmp_path / "reports"]) == code
    (tmp_path / "code.py").write_text("x = 2\n")
    assert source_commit(tmp_path, ignore=[tmp_path / "reports"]) == code + "+dirty"


def test_methods_in_one_figure_never_share_a_colour():
    """Each method keeps its colour across figures, unless a method before it in the same figure
    has it (SGD and M3N share C0 across the papers): then it takes a colour no method there uses."""
    from structpred.tables.figures import METHOD_COLOURS, method_colours

    assert method_colours(["M3N", "CRF"]) == [METHOD_COLOURS["M3N"], METHOD_COLOURS["CRF"]]
    colours = method_colours(["M3N", "CRF", "M4N", "AGM", "SGD", "Casimir-SVRG"])
    assert len(set(colours)) == 6 and colours[:4] == [METHOD_COLOURS[m] for m in ("M3N", "CRF", "M4N", "AGM")]
    assert colours[4] not in colours[:4] and colours[5] not in colours[:5]


def test_a_long_list_of_run_commits_is_folded_below_the_runs_line():
    """A section names its jobs' commits inline up to ``INLINE_COMMITS``; a longer list (m4n_table1's
    archive: runs at more than three commits) is counted on the runs line and folded just below it."""
    import re

    from structpred.report.html import INLINE_COMMITS

    page = (Path(__file__).resolve().parents[1] / "reports" / "m4n.html").read_text(encoding="utf-8")
    section = page[page.index("<section id='m4n_table1'>"):]
    runs = re.search(r"Runs: [^<]*naming the commit they ran at \((\d+) commits, below\)\.", section)
    assert runs and int(runs.group(1)) > INLINE_COMMITS
    folded = re.search(rf"<details class=meta><summary>The {runs.group(1)} commits its jobs' numerics records name "
                       r"\(jobs each\)</summary><p class=meta>([^<]*)\.</p></details>", section)
    assert folded and folded.start() < section.index("Departures from the paper")
    assert len(re.findall(r"\b[0-9a-f]{40}(?:\+dirty)? \(\d+\)", folded.group(1))) == int(runs.group(1))
