"""The workflow end to end: paper-config dry run, the smoke run, schema rejection, determinism."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import project_copy, snakemake


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return project_copy(tmp_path_factory.mktemp("project"))


def test_snakemake_report_on_the_paper_config_from_the_committed_tables(workdir):
    """On a fresh copy, `snakemake --report` bundles the committed tables and figures; the
    experiments with no table yet (VOC's data is missing here, unfinished runs) are left out and
    named, instead of failing the report."""
    out = snakemake(["--report", "reports/report.html"], workdir)
    assert re.search(r"--report: left out, no table yet: .*casimir_voc", out.stderr)
    page = (workdir / "reports" / "report.html").read_text(errors="replace")
    assert len(page) > 100_000 and "m4n_table1.csv" in page and "claims.csv" in page
    (workdir / "reports" / "report.html").unlink()


def test_paper_config_drysnakemake(workdir):
    out = snakemake(["-n", "--cores", "2"], workdir).stdout
    # one training job per (experiment, dataset, method, split) of the paper config
    n_table1 = 12 * 3 * 14 + 5 * 2 * 14 + 3 * 14  # mc + ord with 3 methods, rankings with M3N and M4N, OCR
    n_table2 = 2 * 8 * 14
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    # Casimir: Fig. 2 (3 c x 5 methods x 10 seeds) and Fig. 5a-d (3 seeds each)
    n_casimir = 3 * 5 * 3 + 3 * (2 * 6 + 1 * 4 + 2 * 6 + 1 * 6)
    # QS: robust regression (5 n x 3 methods x 10 blocks of 10 repetitions), USPS (2 methods x 10 runs),
    # MovieLens (5 methods and the popularity reference x 10 trials), USPS's bandwidth sensitivity (KDE at 4
    # output bandwidths and QS x 10 runs)
    n_qs = 5 * 3 * 10 + 2 * 10 + 6 * 10 + 5 * 10 + 5 * 3 * 10   # and robust regression on wider grids
    # the sensitivity tables: Table 1's 10-bin ordinal rows again (3 sets x 3 methods x 14 splits), the
    # emotion table's AGM and SSVM again (2 x 20 splits)
    n_sensitivity = 3 * 3 * 14 + 2 * 20
    # Table 1's multi-class and ordinal rows at certified convergence (12 sets x 3 methods x 14 splits),
    # the emotion table at certified convergence (AGM, SSVM, CRF x 20 splits)
    n_converged = 12 * 3 * 14 + 3 * 20
    # Casimir VOC Fig. 3: 20 classes x 5 methods x 9 seeds, on one candidate file per class; the
    # non-convex Figs. 4, 6, 7a-c: 20 classes x (4 + 2 + 3 + 4 + 3 runs) x 3 seeds on the same files
    n_voc = 20 * 5 * 9 + 20 * 16 * 3
    # the M4N tables under the authors' code protocol: Table 1's mc, ord and OCR rows (13 sets x 3
    # methods x 14 splits; no ranking script exists) and Table 2 again
    n_code = 13 * 3 * 14 + n_table2
    # Casimir NER tuned by §7.3: the grids (3 c x 125 points, one seed), then Fig. 2 and 5a-d at 10 seeds
    n_tuned = 3 * 125 + 10 * (15 + 12 + 4 + 12 + 6)
    # one generic job rule: the audit (24 views), the M4N tables, AGM's 4 x 20 splits and 4 SRL methods,
    # Casimir's runs, QS
    # AGM SRL over 5 class orders and with the final fits on the whole training set, each with the
    # paper's 3 methods (M4N, an extra column, stays in agm_srl)
    n_orders = 5 * 3 + 3
    # the departures' causes: Table 1's machine row under 7 protocols (3 methods x 14 splits), 2 of them on
    # wisconsin, stocks, auto (3 methods) and abalone (M3N), qs_robust's and qs_movielens's jobs rescored (150,
    # 60), the SRL CRF fits decoded (7)
    n_causes = 7 * 3 * 14 + 2 * (3 * 3 + 1) * 14 + 150 + 60 + 7
    # beyond the papers: 7 methods on Table 1's 17 mc, ord and ranking sets and OCR (no CRF on the 5 ranking
    # ones), 5 splits
    # M4N Table 1's 18 sets at 5 splits (no CRF on rankings), AGM Table 1's 20 splits, Table 2's one job,
    # the NER column's 7 jobs, read from casimir_ner_heldout's 7 (a method each)
    n_matrix = (18 * 7 - 5) * 5 + 7 * 20 + 7 + 7
    n_heldout = 7   # casimir_ner_heldout: the 7 methods on NER at their testa lambda
    assert counts["run_job"] == (n_table1 + n_table2 + 24 + 4 * 20 + 4 + n_casimir + n_qs + n_sensitivity + n_converged
                                 + n_voc + n_code + n_tuned + n_orders + n_causes + n_heldout + n_matrix)
    assert counts["box_features"] == 20 and counts["voc_devkit"] == 1
    # the emotion tables' lambda selection, once per method (the matrix's: its 4 methods agm_emotion lacks)
    assert counts["select_model"] == 4 + 2 + 3 + 4
    # history figures: Casimir's Fig. 2, 5a-d (script settings and tuned), one Fig. 3 panel per VOC class
    # and one per (figure, class) of the non-convex figures, QS's USPS digit grids (Table 2, sensitivity)
    assert counts["curve_table"] == 6 and counts["curve_figure"] == 6 + 5 + 1 + 20 + 5 * 20
    assert counts["html_report"] == 1
    # OCR jobs fit each lambda as a one-core job of its own (lambda_jobs: [ocr], which the code-protocol
    # table built over m4n_table1 inherits: its 5 lambdas), and so do the held-out NER jobs (their grids:
    # 5 lambdas for M3N, AGM, SGD and Casimir-SVRG, 4 for CRF, M4N and QS)
    assert counts["fit_lambda"] == 3 * 14 * 10 + 3 * 14 * 5 + 4 * 5 + 3 * 4
    assert "logs/jobs/casimir_ner_heldout/conll2003/M4N/split0.lambda3.log" in out
    assert re.search(r"experiment=casimir_ner_heldout, dataset=conll2003, method=M4N, split=0\n\s+resources:", out)
    for method in ("M3N", "CRF", "M4N"):
        assert f"logs/jobs/m4n_table1/ocr/{method}/split0.lambda9.log" in out, method
        assert re.search(rf"experiment=m4n_table1, dataset=ocr, method={method}, split=0\n\s+resources:", out)
    # the rankings fit theirs in parallel: the task's threads (4), scaled down to --cores
    assert re.search(r"experiment=m4n_table1, dataset=rnk_vowel, method=M4N, split=0\n\s+threads: 2\n", out)
    assert not re.search(r"experiment=m4n_table1, dataset=iris, method=M4N, split=0\n\s+threads:", out)
    # the matrix's cells fitted here too; one it reads from m4n_table1's runs asks for one core
    assert re.search(r"experiment=matrix, dataset=iris, method=QS, split=0\n\s+threads: 2\n", out)
    assert not re.search(r"experiment=matrix, dataset=iris, method=M3N, split=0\n\s+threads:", out)
    # AGM's full-set SRL fit runs AdaGrad's dense step on its threads (4, scaled down); the CRF's fit on one
    assert re.search(r"experiment=agm_srl_full, dataset=conll2005, method=AGM, split=0\n\s+threads: 2\n", out)
    assert not re.search(r"experiment=agm_srl_full, dataset=conll2005, method=CRF, split=0\n\s+threads:", out)


def test_schema_rejects_typo(workdir):
    bad = workdir / "bad.yaml"
    bad.write_text("m4n_table1:\n  n_pases: 5\n")
    proc = snakemake(["-n", "--cores", "1", "--configfile", "bad.yaml"], workdir, check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "config error at m4n_table1: Additional properties are not allowed ('n_pases' was unexpected)" in out
    assert len(out.splitlines()) < 15                       # the key and what is allowed, not the schema
    (workdir / "bad_mirror.yaml").write_text("data:\n  mirror: /nonexistent\n")
    proc = snakemake(["-n", "--cores", "1", "--configfile", "bad_mirror.yaml"], workdir, check=False)
    assert proc.returncode != 0
    assert "data.mirror names /nonexistent, which is not a folder" in proc.stdout + proc.stderr


def test_unknown_dataset_is_a_clear_error(workdir):
    bad = workdir / "bad_ds.yaml"
    bad.write_text("datasets:\n  views: [iris, irsi]\n")
    proc = snakemake(["-n", "--cores", "1", "--configfile", "bad_ds.yaml"], workdir, check=False)
    assert proc.returncode != 0
    assert "irsi" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_smoke_workflow_end_to_end(smoke_local):
    workdir = smoke_local.path
    # the smoke report has its own folder: every committed paper report file is left as it was
    committed = Path(__file__).resolve().parents[1] / "reports"
    for path in committed.rglob("*"):
        if path.is_file() and "smoke" not in path.relative_to(committed).parts:
            assert (workdir / "reports" / path.relative_to(committed)).read_bytes() == path.read_bytes(), path
    index = workdir / "reports" / "smoke" / "index.html"
    assert index.is_file()
    # the report is a site: the index, a page per paper and the data audit's, each table on its paper's page
    pages = sorted((workdir / "reports" / "smoke").glob("*.html"))
    assert [p.name for p in pages] == ["agm.html", "beyond.html", "casimir.html", "data.html", "index.html", "m4n.html",
                                       "qs.html"]
    html = "\n".join(p.read_text() for p in pages)
    for link in ["tables/datasets.csv", "tables/m4n_table1.csv", "tables/m4n_table2.csv",
                 "tables/agm_emotion.csv", "figures/m4n_table1.png", "figures/agm_emotion.png",
                 "tables/casimir_ner.csv", "tables/casimir_ner_curves.csv", "figures/casimir_ner/fig2.png",
                 "figures/casimir_ner/fig5d.png", "tables/qs_robust.csv", "figures/qs_robust.png",
                 "tables/qs_usps.csv", "figures/qs_usps/digits.png", "tables/qs_movielens.csv",
                 "figures/qs_movielens.png", "tables/agm_srl.csv", "figures/agm_srl.png",
                 "tables/m4n_binning.csv", "tables/agm_emotion_unnormalised.csv", "tables/agm_emotion_converged.csv", "tables/casimir_voc.csv",
                 "tables/casimir_voc_curves.csv", "figures/casimir_voc/aeroplane.png", "figures/casimir_voc/bicycle.png",
                 "tables/casimir_voc_nonconvex.csv", "figures/casimir_voc_nonconvex/fig4_aeroplane.png",
                 "figures/casimir_voc_nonconvex/fig7c_bicycle.png", "tables/matrix.csv", "figures/matrix.png"]:
        assert link in html

    # the headline verdicts open the report, computed from the smoke tables by the claims rule
    assert index.read_text().index("<section id=headlines>") < index.read_text().index("<section id=claims>")
    assert "<section id='datasets'>" in (workdir / "reports" / "smoke" / "data.html").read_text()
    ledger = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "claims.csv")
    assert set(ledger["paper"]) == {"M4N", "AGM", "Casimir", "QS"}
    assert ledger["verdict"].str.match("reproduced|not reproduced|cannot check").all()
    # every table has its grid-edge companion: the smoke grid's two lambdas, each an edge
    selection = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "m4n_table1_selection.csv")
    assert (selection["grid_size"] == 2).all() and (selection["n_at_min"] + selection["n_at_max"] == 2).all()

    audit = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "datasets.csv")
    assert list(audit.columns[:8]) == ["task", "dataset", "method", "metric", "mean", "std",
                                       "n_splits", "reference"]
    views = set(audit["dataset"])
    assert len(views) == 24
    checks = audit[audit["metric"] == "checksum_ok"]
    assert len(checks) == 24 and (checks["mean"] == 1).all()
    iris = audit[(audit["dataset"] == "iris")].set_index("metric")
    assert (iris.loc["d", "mean"], iris.loc["n", "mean"], iris.loc["k", "mean"]) == (4, 150, 3)

    table1 = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "m4n_table1.csv")
    losses = table1[table1["metric"] == "test_loss"]
    assert set(losses["method"]) == {"M3N", "CRF", "M4N"}
    assert set(losses[losses["task"] == "rnk"]["method"]) == {"M3N", "M4N"}
    assert (losses["n_splits"] == 2).all()
    assert losses["mean"].between(0, 9).all()
    # iris is easy: every method must beat chance (2/3 error) by far even in the smoke run
    assert (losses[losses["dataset"] == "iris"]["mean"] < 0.25).all()
    assert losses["reference"].notna().all()
    ocr = losses[losses["dataset"] == "ocr"]
    assert set(ocr["method"]) == {"M3N", "CRF", "M4N"} and (ocr["task"] == "seq").all()
    # OCR's lambdas ran as jobs of their own (lambda_jobs): a record each, whose CPU the job's record adds
    job = workdir / "results" / "m4n_table1" / "ocr" / "M4N" / "split1"
    fits = [json.loads((job.with_suffix(".fits") / f"lambda{i}.json").read_text()) for i in range(2)]
    assert [f["lam"] for f in fits] == [0.125, 0.0078125] and all(f["cpu_seconds"] > 0 for f in fits)
    record = json.loads(job.with_suffix(".numerics.json").read_text())
    assert record["cpu_seconds"] > sum(f["cpu_seconds"] for f in fits) and not record["cpu_partial"]
    assert ocr["mean"].between(0.0, 0.96).all()  # below chance (25/26) on 60 words

    # beyond the papers: every method on every task, the cells a paper table runs read from its runs
    matrix = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "matrix.csv").query("metric == 'test_loss'")
    methods = {"M3N", "CRF", "M4N", "AGM", "QS", "SGD", "Casimir-SVRG"}
    by_task = matrix.groupby("task")["method"].agg(set)
    assert set(by_task.index) == {"mc", "ord", "rnk", "seq", "emo", "srl", "ner"} and matrix["mean"].between(0, 9).all()
    assert by_task["rnk"] == methods - {"CRF"}                                             # CRF: #P-hard
    assert by_task["ner"] == methods and by_task["srl"] == methods
    assert all(by_task[t] == methods for t in ("mc", "ord", "seq", "emo"))
    table1 = matrix[matrix["task"].isin(["mc", "ord", "rnk", "seq"])]
    assert (table1["n_splits"] == 2).all()
    borrowed = table1[table1["method"].isin(["M3N", "CRF", "M4N"])].set_index(["dataset", "method"])["mean"]
    np.testing.assert_allclose(borrowed, losses.set_index(["dataset", "method"])["mean"].reindex(borrowed.index),
                               rtol=0, atol=1e-12)
    # AGM Table 1's column: a row per loss over its 2 splits, its SSVM the matrix's M3N
    emo = matrix[matrix["task"] == "emo"].set_index(["dataset", "method"])
    assert set(emo.index.get_level_values(0)) == {"ck:absolute", "ck:weighted_squared"} and (emo["n_splits"] == 2).all()
    agm = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_emotion.csv").set_index(["metric", "method"])["mean"]
    assert emo.loc[("ck:absolute", "M3N"), "mean"] == agm[("absolute", "SSVM")]
    assert emo.loc[("ck:weighted_squared", "AGM"), "mean"] == agm[("weighted_squared", "AGM")]
    # AGM Table 2's column: the mean over the test propositions (30 here), as agm_srl's tree_loss
    srl = matrix[matrix["task"] == "srl"].set_index("method")
    assert (srl["dataset"] == "conll2005:tree_loss").all() and (srl["n_splits"] == 30).all()
    tree = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_srl.csv").query("metric == 'tree_loss'")
    assert srl.loc["CRF", "mean"] == tree.set_index("method").loc["CRF", "mean"]
    # the NER column: casimir_ner_heldout's rows, the mean over testb's sentences (40 here)
    ner = matrix[matrix["task"] == "ner"].set_index("method")
    assert (ner["dataset"] == "conll2003:token_error").all() and (ner["n_splits"] == 40).all()
    held = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "casimir_ner_heldout.csv")
    np.testing.assert_array_equal(ner["mean"], held.query("metric == 'token_error'").set_index("method")["mean"]
                                  .reindex(ner.index))
    assert held.query("metric == 'entity_f1'")["mean"].between(0, 1).all()
    beyond = (workdir / "reports" / "smoke" / "beyond.html").read_text()
    assert "#P-hard" in beyond and "lowest mean test loss" in beyond

    emotion = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_emotion.csv")
    assert set(emotion["method"]) == {"AGM", "CRF", "SSVM", "M4N"}
    base = {"zero_one", "absolute", "squared", "weighted_zero_one", "weighted_absolute", "weighted_squared"}
    assert set(emotion["metric"]) == base | {f"{m}_nodewise" for m in base}  # per sequence and pooled
    assert (emotion["n_splits"] == 2).all() and (emotion["task"] == "emotion").all()
    assert emotion["mean"].between(0, 4).all()  # squared loss over labels 0..2 is at most 4
    tests = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_emotion_tests.csv")
    assert tests["bold"].any()
    # the sensitivity tables: the same contract, the base experiment's paper numbers beside them
    unnorm = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_emotion_unnormalised.csv")
    assert set(unnorm["method"]) == {"AGM"} and unnorm.loc[unnorm["metric"] == "zero_one", "reference"].eq(0.34).all()
    conv = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_emotion_converged.csv").set_index(["method", "metric"])
    assert set(conv.index.get_level_values(0)) == {"AGM", "SSVM", "CRF"} and conv.loc[("AGM", "zero_one"), "reference"] == 0.34
    caps = {"AGM": 20, "SSVM": 40, "CRF": 40}      # config/smoke.yaml
    for (method, metric), row in conv.iterrows():
        if metric.endswith("_passes"):
            assert 10 <= row["mean"] <= caps[method]
            assert conv.loc[(method, metric.replace("_passes", "_rel_gap")), "mean"] >= 0
    binning = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "m4n_binning.csv")
    assert set(binning["dataset"]) == {"machine"} and binning["reference"].notna().any()

    ner = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "casimir_ner.csv", keep_default_na=False)
    assert list(ner.columns) == ["figure", "c", "method", "variant", "metric", "mean", "std", "n_seeds", "reference"]
    fig2 = ner[ner["figure"] == "fig2"]
    assert set(fig2["method"]) == {"SGD", "BCFW", "SVRG", "Casimir-SVRG-const", "Casimir-SVRG-adapt"}
    assert (fig2["variant"] == "").all() and (fig2["n_seeds"] == 2).all()
    assert set(ner.loc[ner["figure"] == "fig5d", "variant"]) == {"K=2", "K=10"}
    calls = fig2[fig2["metric"] == "oracle_calls_per_n"].set_index("method")["mean"]
    assert calls["SGD"] == 2 and calls["BCFW"] == 2 and calls["Casimir-SVRG-adapt"] == 4
    start = fig2[fig2["metric"] == "initial_train_objective"]
    assert start["reference"].astype(float).eq(14.5).all() and start["mean"].nunique() == 1
    f1 = ner[ner["metric"].str.endswith("_f1")]["mean"]
    assert f1.between(0, 1).all()
    curves = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "casimir_ner_curves.csv")
    assert set(curves["pass"]) == {0, 1, 2}
    job = pd.read_csv(workdir / "results" / "casimir_ner" / "fig2_c1" / "SGD" / "split0.csv", keep_default_na=False)
    assert (job.loc[job["metric"] == "seconds", "detail"] != "").all()     # the CPU behind the recorded time
    # tuned by §7.3 (config/smoke.yaml's 2-point grids): each figure run carries the point its grid chose
    tuned = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "casimir_ner_tuned.csv", keep_default_na=False)
    grid = tuned[tuned["figure"] == "tune"].pivot_table(index=["method", "variant"], columns="metric", values="mean")
    sgd = grid.loc["SGD"]
    best = sgd[sgd["testa_token_f1"] >= 0.99 * sgd["testa_token_f1"].max()]["train_objective"].idxmin()
    chosen = tuned[(tuned["figure"] == "fig2") & (tuned["method"] == "SGD")].set_index("metric")["mean"]
    assert chosen["eta0"] == sgd.loc[best, "eta0"] and chosen["t0"] == 150000
    assert "tables/casimir_ner_tuned.csv" in html and "figures/casimir_ner_tuned/fig2.png" in html
    # Fig. 5d's K = 5 run is Fig. 2's (same settings and seed): copied, under its own names
    fig = lambda f, v: tuned[(tuned["figure"] == f) & (tuned["method"] == "Casimir-SVRG-const")  # noqa: E731
                             & (tuned["variant"] == v)].set_index("metric")["mean"]
    copied, original = fig("fig5d", "K=5"), fig("fig2", "")
    assert copied.equals(original) and len(fig("fig5d", "K=2")) > 0   # the table has no seconds rows
    # a job that reads other jobs' rows keeps their digests (structpred runs status: stale once they move)
    from structpred.runs.archive import result_digest
    records = {p: json.loads(p.read_text()) for p in (workdir / "results" / "casimir_ner_tuned").rglob("*.numerics.json")}
    inputs = {k: v for r in records.values() for k, v in r.get("inputs", {}).items()}
    assert inputs and all(v == result_digest(workdir / "results" / k) for k, v in inputs.items())

    # Casimir VOC Fig. 3 on the synthetic folder (random AlexNet): the whole path ran, labelled synthetic
    voc = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "casimir_voc.csv")
    assert set(voc["dataset"]) == {"aeroplane", "bicycle"} and (voc["n_seeds"] == 2).all()
    assert (voc["task"] == "localisation (synthetic)").all() and "synthetic VOC-format folder" in html
    scores = voc[voc["metric"].isin(["held_corloc", "held_ap", "train_corloc"])]["mean"]
    assert scores.between(0, 1).all()
    end = voc[voc["metric"] == "train_objective"].set_index(["dataset", "method"])["mean"]
    start = voc[voc["metric"] == "initial_train_objective"].set_index(["dataset", "method"])["mean"]
    assert (end < start).all()   # every method lowers the objective in 3 epochs
    nonconvex = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "casimir_voc_nonconvex.csv")
    assert set(nonconvex["method"]) == {"PL-Casimir-SVRG", "SGD-const", "SGD-sqrt", "SGD-linear",
                                        "PL-Casimir-SVRG_warm_start=prox-centre", "PL-Casimir-SVRG_warm_start=prev-iterate"}
    assert (nonconvex["task"] == "localisation (synthetic)").all()
    end = nonconvex[nonconvex["metric"] == "train_objective"].set_index(["dataset", "method"])["mean"]
    start = nonconvex[nonconvex["metric"] == "initial_train_objective"].set_index(["dataset", "method"])["mean"]
    assert (end <= start).all()   # prox-linear never goes up; SGD's two passes go down here

    robust = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "qs_robust.csv")
    assert set(robust["dataset"]) == {"n50", "n100"} and set(robust["method"]) == {"QS", "RNW", "KRR"}
    assert (robust["metric"] == "test_error").all() and (robust["n_splits"] == 4).all()
    assert robust["reference"].notna().all() and (robust["mean"] > 0).all()
    usps = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "qs_usps.csv")
    assert set(usps["metric"]) == {"gaussian", "hellinger", "recognition"} and (usps["n_splits"] == 2).all()
    assert usps["mean"].between(0, 2).all()
    recognition = usps[usps["metric"] == "recognition"]["mean"]
    assert (recognition < 0.6).all()  # reconstructions are far better than chance (0.9) for the classifier
    bandwidth = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "qs_usps_bandwidth.csv").set_index(["method", "metric"])
    assert set(bandwidth.index.get_level_values(0)) == {"KDE_output_sigma=0.05", "KDE_output_sigma=0.2", "QS"}
    # the same runs and images: KDE at qs_usps's bandwidth and QS are qs_usps's rows again
    again = usps.set_index(["method", "metric"])
    assert bandwidth.loc[("KDE_output_sigma=0.2", "recognition"), "mean"] == again.loc[("KDE", "recognition"), "mean"]
    assert bandwidth.loc[("QS", "hellinger"), "mean"] == again.loc[("QS", "hellinger"), "mean"]
    movies = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "qs_movielens.csv")
    assert set(movies["method"]) == {"QS", "Linear", "Hinge", "Logistic", "SVM-Struct", "Popularity"}
    assert (movies["metric"] == "rank_loss").all() and (movies["n_splits"] == 2).all()
    assert movies["mean"].between(0.2, 0.6).all()  # a random ranking scores about 0.5
    assert movies.loc[movies["method"] != "Popularity", "reference"].notna().all()

    full = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_srl_full.csv")
    assert set(full["method"]) == {"AGM", "CRF"}
    job = pd.read_csv(workdir / "results" / "agm_srl_full" / "conll2005" / "AGM" / "split0.csv")
    assert job.loc[job["metric"] == "refit_train_propositions", "value"].tolist() == [120.0]
    orders = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_srl_orders.csv")
    assert set(orders["dataset"]) == {"order0", "order1"} and set(orders["method"]) == {"AGM", "CRF"}
    assert "figures/agm_srl_orders.png" in html
    srl = pd.read_csv(workdir / "reports" / "smoke" / "tables" / "agm_srl.csv")
    assert set(srl["method"]) == {"AGM", "CRF", "SSVM", "M4N"} and set(srl["metric"]) == {
        "tree_loss", "node_loss", "tree_loss_brown", "node_loss_brown"}   # Brown: an extra row
    trees = srl[srl["metric"] == "tree_loss"]
    assert (trees["n_splits"] == 30).all()  # one row per test proposition
    assert trees["mean"].between(0, 8).all()  # ranks 0..8
    assert trees.loc[trees["method"] != "M4N", "reference"].notna().all()

    # Snakemake's own self-contained report bundles the tables and figures with captions
    snakemake(["--report", "reports/smoke/report.html", "--configfile", "config/smoke.yaml"], workdir)
    assert (workdir / "reports" / "smoke" / "report.html").stat().st_size > 10_000

    # determinism: rebuild one job from scratch, the tables must not change by a byte
    before = (workdir / "reports" / "smoke" / "tables" / "m4n_table1.csv").read_bytes()
    (workdir / "results" / "m4n_table1" / "iris" / "M4N" / "split0.csv").unlink()
    snakemake(["--cores", "2", "--configfile", "config/smoke.yaml"], workdir)
    assert (workdir / "reports" / "smoke" / "tables" / "m4n_table1.csv").read_bytes() == before


def test_lint_is_clean(workdir):
    for args in (["--lint"], ["--lint", "--configfile", "config/smoke.yaml"]):
        out = snakemake(args, workdir)
        assert "Congratulations, your workflow is in a good condition" in out.stdout + out.stderr


def test_rule_script_expected_error_is_one_line(tmp_path, capsys):
    """A StructpredError in a rule script: one line on the console and in the rule's log,
    exit status 1, no traceback; other exceptions keep theirs."""
    from types import SimpleNamespace

    from structpred.errors import DataError
    from structpred.workflow import rule_script

    log = tmp_path / "logs" / "rule.log"
    smk = SimpleNamespace(log=[str(log)], rule="fetch_source")
    with pytest.raises(SystemExit) as exit_info:
        with rule_script(smk):
            raise DataError("iris.data missing: https://example.org/iris.data (sha256 abc)")
    assert exit_info.value.code == 1
    text = log.read_text()
    assert text.count("\n") == 1 and "iris.data missing" in text and "Traceback" not in text
    assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(RuntimeError):
        with rule_script(smk):
            raise RuntimeError("a bug")


@pytest.mark.slow
def test_an_interrupted_run_resumes_with_the_plain_command(tmp_path, smoke_local):
    """Ctrl-C a smoke run while a job runs, rerun the README's plain command: it resumes
    (profiles/default, which Snakemake reads by itself, sets rerun-incomplete) and the table is
    byte for byte the uninterrupted run's."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import yaml

    from tests.conftest import mirror_root

    work = project_copy(tmp_path)
    profile = yaml.safe_load((work / "profiles" / "default" / "config.yaml").read_text())
    assert profile == {"rerun-incomplete": True, "show-failed-logs": True}
    table = "reports/smoke/tables/qs_usps.csv"
    command = [table, "--cores", "1", "--configfile", "config/smoke.yaml"]
    env = {**os.environ, "STRUCTPRED_MIRROR": str(mirror_root())}
    # a shell's background job (`cmd &` without job control) ignores SIGINT, and a child inherits
    # that: the run starts with the terminal's default, as a user's would
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", *command], cwd=work, env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    jobs, deadline = work / "logs" / "jobs" / "qs_usps", time.monotonic() + 900
    while not (jobs.is_dir() and any(jobs.rglob("*.log"))):
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before a job started"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)             # Ctrl-C in the terminal: the whole process group
    assert proc.wait() != 0
    assert any((work / ".snakemake" / "incomplete").iterdir())          # a job was cut off mid-way
    snakemake(command, work)
    assert (work / table).read_bytes() == (smoke_local.path / table).read_bytes()


@pytest.mark.slow
def test_missing_data_stops_the_main_job_before_any_job(tmp_path):
    """The mirror lacks VOC 2007 and the AlexNet weights: the main job lists the three files and
    starts nothing; with data.skip_missing the VOC experiments are left out of the plan."""
    work = project_copy(tmp_path)
    proc = snakemake(["--cores", "1"], work, check=False)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "3 raw file(s) this run needs cannot be had (no job was started)" in err
    for name in ("alexnet/alexnet-owt-7be5be79.pth", "voc2007/VOCtrainval_06-Nov-2007.tar",
                 "voc2007/VOCtest_06-Nov-2007.tar"):
        assert name in err
    assert not (work / "results").exists() and not (work / "data" / "raw").exists()
    (work / "skip.yaml").write_text("data:\n  skip_missing: true\n")
    out = snakemake(["-n", "--cores", "1", "--configfile", "skip.yaml"], work)
    assert "casimir_voc left out, its data is missing (alexnet, voc2007)" in out.stdout + out.stderr
    assert "box_features" not in out.stdout


@pytest.mark.slow
def test_a_failed_fetch_shows_its_cause_on_the_terminal(tmp_path):
    """A mirror file whose checksum is wrong: the fetch job fails and its one-line cause (file,
    expected and actual sha256, URL) reaches the terminal (profiles/default: show-failed-logs),
    not only logs/fetch/<source>.log."""
    import shutil

    from tests.conftest import mirror_root

    work = project_copy(tmp_path / "project")
    mirror = tmp_path / "mirror"
    shutil.copytree(mirror_root() / "iris", mirror / "iris")
    data = mirror / "iris" / "iris.data"
    data.chmod(0o644)
    data.write_text(data.read_text().replace("5.1,3.5", "5.2,3.5", 1))
    (work / "mirror.yaml").write_text(f"data:\n  mirror: {mirror}\n")   # the config's mirror wins over the env's
    proc = snakemake(["data/raw/iris/.verified", "--cores", "1", "--configfile", "mirror.yaml"], work, check=False)
    assert proc.returncode != 0
    assert "checksum mismatch for iris/iris.data" in proc.stdout + proc.stderr
