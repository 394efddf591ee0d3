"""The claims ledger (config/claims.yaml -> tables/claims.csv) and the grid-edge tables behind it."""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from structpred.tables.results import csv_text, make_rows, write_csv
from structpred.report.claims import CANNOT, NOT_REPRODUCED, REPRODUCED, headlines, ledger, load_claims, summary
from structpred.report.selection import edge_notes, selection_table

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"alpha": 0.05, "tie": 0.01, "tolerance": {"abs": 0.01, "rel": 0.1}}


def _table(rows):
    return pd.DataFrame([dict(zip(["task", "dataset", "method", "metric", "mean", "std", "n_splits", "reference"], r))
                         for r in rows])


def _tests(rows):
    return pd.DataFrame([dict(zip(["task", "dataset", "metric", "method_a", "method_b", "n_splits", "mean_diff",
                                   "statistic", "p_value"], r)) for r in rows])


@pytest.fixture
def report(tmp_path):
    """A report folder: Table 1 with iris and wine, its tests and selections, a converged table, curves."""
    tables = tmp_path / "reports" / "tables"
    tables.mkdir(parents=True)
    write_csv(_table([
        ("mc", "iris", "M3N", "test_loss", 0.040, 0.01, 14, 0.0333),   # holds: |0.0067| <= 0.01
        ("mc", "iris", "M4N", "test_loss", 0.030, 0.01, 14, 0.0300),   # holds
        ("mc", "wine", "M3N", "test_loss", 0.080, 0.02, 14, 0.0256),   # fails here, holds converged
        ("mc", "wine", "M4N", "test_loss", 0.120, 0.02, 14, 0.0235),   # fails everywhere
        ("mc", "wine", "CRF", "test_loss", 0.050, 0.02, 14, None),     # no paper number: no value claim
    ]), tables / "m4n_table1.csv")
    write_csv(_tests([
        ("mc", "iris", "test_loss", "M4N", "M3N", 14, -0.010, 3.0, 0.004),  # M4N below M3N, significant
        ("mc", "wine", "test_loss", "M4N", "M3N", 14, 0.040, 5.0, 0.01),    # the paper's order reversed
    ]), tables / "m4n_table1_tests.csv")
    write_csv(pd.DataFrame([
        {"task": "mc", "dataset": "wine", "method": "M4N", "param": "lam", "scope": "", "grid_min": 0.0009765625,
         "grid_max": 0.5, "grid_size": 10, "n_runs": 14, "n_at_min": 14, "n_at_max": 0,
         "chosen": "0.0009765625:14"}]), tables / "m4n_table1_selection.csv")
    write_csv(_table([("mc", "wine", "M3N", "test_loss", 0.030, 0.01, 14, 0.0256),
                      ("mc", "wine", "M4N", "test_loss", 0.110, 0.01, 14, 0.0235)]),
              tables / "m4n_table1_converged.csv")
    curves = []
    for method, values in (("A", [10.0, 3.0, 1.0, 0.50, 0.40]), ("B", [10.0, 2.0, 1.5, 0.90, 0.80]),
                           ("C", [10.0, 3.0, 1.0, 0.79, 0.785])):
        for x, v in zip([0, 1, 2, 3, 4], values):
            curves.append({"figure": "fig2", "c": 1.0, "method": method, "variant": "", "pass": x,
                           "oracle_calls_per_n": x / 2 if method == "A" else x, "measure": "train_objective",
                           "mean": v, "std": 0.01, "n_seeds": 3})
    write_csv(pd.DataFrame(curves), tables / "casimir_ner_curves.csv")
    write_csv(pd.DataFrame([{"figure": "fig5a", "c": 1.0, "method": "X", "variant": f"mu={m}",
                             "metric": "train_objective", "mean": v, "std": s, "n_seeds": 3, "reference": None}
                            for m, v, s in ((2, 1.0, 0.01), (8, 1.2, 0.01), (32, 1.21, 0.02))]),
              tables / "casimir_ner.csv")
    claims = {
        **SETTINGS,
        "claims": [
            {"id": "t1.cell", "paper": "M4N", "where": "Table 1", "statement": "{method} on {dataset}",
             "check": {"kind": "value", "table": "m4n_table1", "metric": "test_loss"},
             "protocols": ["m4n_table1_converged"]},
            {"id": "t1.order", "paper": "M4N", "where": "Table 1", "statement": "{a} {relation} {b} on {dataset}",
             "check": {"kind": "order", "table": "m4n_table1", "a": "M4N", "b": "M3N", "metric": "test_loss",
                       "relation": "paper"}},
            {"id": "t1.missing", "paper": "M4N", "where": "Table 1", "statement": "a cell we do not have",
             "check": {"kind": "value", "table": "m4n_table1", "metric": "test_loss",
                       "match": {"dataset": "letter", "method": "M4N"}}},
            {"id": "voc", "paper": "Casimir", "where": "Fig. 3", "statement": "VOC",
             "unavailable": "data missing: VOC 2007", "check": {"kind": "value", "table": "casimir_voc"}},
            {"id": "fig2.{a}_{b}", "paper": "Casimir", "where": "Fig. 2", "statement": "{a} below {b}",
             "each": {"a": ["A", "C"], "b": ["B"]},
             "check": {"kind": "curve", "table": "casimir_ner", "metric": "train_objective",
                       "match": {"figure": "fig2", "c": 1}, "rows_a": {"method": "{a}"},
                       "rows_b": {"method": "{b}"}, "relation": "below"}},
            *({"id": f"fig5a.{d}", "paper": "Casimir", "where": "Fig. 5a", "statement": f"mu trend {d}",
               "check": {"kind": "trend", "table": "casimir_ner", "metric": "train_objective",
                         "match": {"figure": "fig5a", "c": 1, "method": "X"},
                         "rows": [{"variant": "mu=2"}, {"variant": "mu=8"}, {"variant": "mu=32"}],
                         "direction": d, "tolerance": {"std": True}}} for d in ("increasing", "flat")),
        ],
        "causes": [{"match": "t1.*wine*", "text": "wine is off", "evidence": "a departure"}],
    }
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False))
    return tmp_path


def test_verdicts_from_synthetic_tables(report):
    out = ledger(report / "claims.yaml", report / "reports").set_index("id")
    assert out.loc["t1.cell.mc.iris.M3N", "verdict"] == REPRODUCED
    assert out.loc["t1.cell.mc.iris.M3N", "test"] == "Δ = +0.0067, bound 0.01"
    assert out.loc["t1.cell.mc.wine.M3N", "verdict"] == "reproduced under m4n_table1_converged"
    assert out.loc["t1.cell.mc.wine.M4N", "verdict"] == NOT_REPRODUCED
    assert "t1.cell.mc.wine.CRF" not in out.index            # no paper number, no claim
    assert out.loc["t1.missing", "verdict"] == CANNOT
    assert "no row" in out.loc["t1.missing", "test"]
    assert out.loc["voc", "verdict"] == CANNOT and out.loc["voc", "test"] == "data missing: VOC 2007"
    # the order claims take the paper's order: M4N below M3N on iris (holds, p = 0.004), on wine too (reversed)
    assert out.loc["t1.order.mc.iris", "statement"] == "M4N below M3N on iris"
    assert out.loc["t1.order.mc.iris", "verdict"] == REPRODUCED
    assert out.loc["t1.order.mc.wine", "verdict"] == NOT_REPRODUCED
    assert "Wilcoxon p = 0.01" in out.loc["t1.order.mc.wine", "test"]
    # grid edges and causes ride along on the rows they concern
    assert out.loc["t1.cell.mc.wine.M4N", "grid_edges"] == (
        "m4n_table1: wine M4N: lam at the grid's smallest value 0.0009766 in 14 of 14 runs")
    assert out.loc["t1.cell.mc.iris.M4N", "grid_edges"] == ""
    assert out.loc["t1.cell.mc.wine.M4N", "cause"] == "wine is off"
    assert out.loc["t1.cell.mc.iris.M4N", "cause"] == ""        # reproduced: no cause attached
    # curves, compared up to the shorter one's budget (A: half a call per n and pass): A is at or below
    # B from the start and apart at 2 calls/n; C is below B from 2 calls/n on, but not apart at the end
    assert out.loc["fig2.A_B", "verdict"] == REPRODUCED
    assert out.loc["fig2.A_B", "ours"] == "at 2 calls/n: A 0.4 ± 0.01, B 1.5 ± 0.01"
    assert out.loc["fig2.A_B", "test"].startswith("A at or below B from 0 calls/n on")
    assert out.loc["fig2.C_B", "test"].startswith("C at or below B from 2 calls/n on")
    assert out.loc["fig2.C_B", "verdict"] == NOT_REPRODUCED
    # trends: 1.0 -> 1.2 -> 1.21 increases; it is not flat within the stds
    assert out.loc["fig5a.increasing", "verdict"] == REPRODUCED
    assert out.loc["fig5a.flat", "verdict"] == NOT_REPRODUCED
    counts = summary(out.reset_index()).set_index("paper")
    assert counts.loc["M4N"].tolist() == [3, 1, 2, 1, 7]
    assert counts.loc["Casimir"].tolist() == [2, 0, 2, 1, 5]


def test_a_curve_claim_within_the_spreads_holds_by_the_paired_test_over_seeds(report):
    """C is below B from 2 calls/n on but within the spreads at the end: the experiment's paired
    test over seeds (task = figure, dataset = c) decides it, significant or not."""
    tests = report / "reports" / "tables" / "casimir_ner_tests.csv"
    for p, verdict in ((0.002, REPRODUCED), (0.25, NOT_REPRODUCED)):
        write_csv(_tests([("fig2", "1", "train_objective", "B", "C", 10, 0.015, 0.0, p),
                          ("fig2", "0.1", "train_objective", "B", "C", 10, 0.015, 0.0, 0.5)]), tests)
        out = ledger(report / "claims.yaml", report / "reports").set_index("id")
        assert out.loc["fig2.C_B", "verdict"] == verdict
        assert out.loc["fig2.C_B", "test"].endswith(f"paired Wilcoxon over 10 seeds at the end p = {p:.2g}")
        assert out.loc["fig2.A_B", "verdict"] == REPRODUCED   # no pair A-B in the tests: the spreads decide


def test_a_protocol_on_another_metric_is_read_and_shown_without_deciding(report):
    """A ``protocols`` entry naming a metric reads the same table on it (the authors' table rule's
    ``test_loss_optimistic`` rows); with ``decides: false`` it never turns a verdict."""
    tables = report / "reports" / "tables"
    code = _table([("mc", "wine", "M3N", "test_loss", 0.060, 0.01, 14, 0.0256),             # off by 0.034
                   ("mc", "wine", "M3N", "test_loss_optimistic", 0.030, 0.01, 14, 0.0256),  # within 0.01
                   ("mc", "wine", "M4N", "test_loss_optimistic", 0.028, 0.01, 14, 0.0235)])
    write_csv(code, tables / "m4n_code.csv")
    data = yaml.safe_load((report / "claims.yaml").read_text())
    rule = {"table": "m4n_code", "metric": "test_loss_optimistic", "rule": "selected on test"}
    data["claims"][0]["protocols"] = ["m4n_code", {**rule, "decides": False}]
    data["claims"].append({**data["claims"][0], "id": "t1.deciding", "protocols": [rule]})
    (report / "claims.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    out = ledger(report / "claims.yaml", report / "reports").set_index("id")
    row = out.loc["t1.cell.mc.wine.M3N"]
    assert row["verdict"] == NOT_REPRODUCED             # the shown rule holds, but does not decide
    assert row["protocols"] == (
        "m4n_code: not reproduced (0.06 ± 0.01 (n=14); Δ = +0.0344, bound 0.01); "
        "m4n_code [test_loss_optimistic; selected on test; shown, not a verdict]: reproduced "
        "(0.03 ± 0.01 (n=14); Δ = +0.0044, bound 0.01)")
    assert out.loc["t1.cell.mc.wine.M4N", "verdict"] == NOT_REPRODUCED
    assert "m4n_code [test_loss_optimistic; selected on test; shown, not a verdict]: reproduced" in (
        out.loc["t1.cell.mc.wine.M4N", "protocols"])
    assert out.loc["t1.deciding.mc.wine.M3N", "verdict"] == "reproduced under m4n_code"
    data["claims"][0]["protocols"] = [{"table": "m4n_code", "decides": False}]   # a metric is required
    (report / "claims.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(Exception, match="t1.cell"):
        load_claims(report / "claims.yaml")


def test_an_order_on_each_dataset_holds_only_if_it_holds_on_all(tmp_path):
    tables = tmp_path / "reports" / "tables"
    tables.mkdir(parents=True)
    write_csv(_table([("srl", f"order{k}", m, "tree_loss", 0.1, 0.01, 50, None)
                      for k in range(3) for m in ("AGM", "CRF")]), tables / "srl.csv")
    write_csv(_tests([("srl", "order0", "tree_loss", "AGM", "CRF", 50, -0.02, 1.0, 0.001),
                      ("srl", "order1", "tree_loss", "CRF", "AGM", 50, 0.03, 1.0, 0.01),    # either way round
                      ("srl", "order2", "tree_loss", "AGM", "CRF", 50, -0.01, 9.0, 0.2)]), tables / "srl_tests.csv")
    claims = {**SETTINGS, "claims": [
        {"id": f"each.{r}", "paper": "AGM", "where": "Table 2", "statement": f"AGM {r} CRF",
         "check": {"kind": "order", "table": "srl", "a": "AGM", "b": "CRF", "metric": "tree_loss", "relation": r,
                   "quantifier": "each"}} for r in ("below", "not_worse")]}
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False))
    out = ledger(tmp_path / "claims.yaml", tmp_path / "reports").set_index("id")
    assert out.loc["each.below", "verdict"] == NOT_REPRODUCED                  # order2 is a tie (p = 0.2)
    assert out.loc["each.below", "ours"] == "AGM below CRF on 2 of 3 datasets"
    assert out.loc["each.below", "test"] == ("order0: diff -0.02, p = 0.001; order1: diff -0.03, p = 0.01; "
                                             "order2: diff -0.01, p = 0.2")
    assert out.loc["each.not_worse", "verdict"] == REPRODUCED


def test_claims_cli_prints_and_writes_the_ledger(report, monkeypatch, capsys):
    from structpred.cli import main

    monkeypatch.chdir(report)
    config = {"report": {"dir": "reports", "references": "refs.yaml", "claims": "claims.yaml"}}
    (report / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(["claims", "--paper", "Casimir", "--write", "--config", "config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "fig2.A_B  [reproduced]  Fig. 2" in out and "t1.cell" not in out
    written = pd.read_csv(report / "reports" / "tables" / "claims.csv")
    assert len(written) == 12
    assert main(["claims", "--paper", "Nope", "--config", "config.yaml"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


@pytest.mark.parametrize("change, message", [
    (lambda c: c["claims"][0]["check"].update(kind="median"), "claim 't1.cell' at check.kind"),
    (lambda c: c["claims"][1]["check"].pop("relation"), "claim 't1.order' at check: 'relation' is a required"),
    (lambda c: c["claims"][2].pop("statement"), "claim 't1.missing': 'statement' is a required property"),
    (lambda c: c["claims"].append(dict(c["claims"][0])), "claim id 't1.cell' appears more than once"),
    (lambda c: c.update(alpha=2), "top level at alpha"),
])
def test_schema_rejects_a_malformed_claim_in_one_line(report, change, message, monkeypatch, capsys):
    from structpred.cli import main

    claims = yaml.safe_load((report / "claims.yaml").read_text())
    change(claims)
    (report / "claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False))
    monkeypatch.chdir(report)
    (report / "config.yaml").write_text(yaml.safe_dump({"report": {"dir": "reports", "claims": "claims.yaml"}}))
    assert main(["claims", "--config", "config.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_the_committed_ledger_is_the_one_the_committed_tables_give():
    """Regenerating the ledger from the committed tables is byte-identical, and it covers all four papers."""
    table = ledger(ROOT / "config" / "claims.yaml", ROOT / "reports")
    assert csv_text(table) == (ROOT / "reports" / "tables" / "claims.csv").read_text()
    assert set(table["paper"]) == {"M4N", "AGM", "Casimir", "QS"}
    assert table["id"].is_unique
    # every claim of the config expands to at least one row
    ids = [c["id"].split("{")[0] for c in load_claims(ROOT / "config" / "claims.yaml")["claims"]]
    assert all(any(i.startswith(p) for i in table["id"]) for p in ids)


def test_committed_index_opens_with_the_headlines():
    """The index opens with each paper's headline verdicts, in the papers' order, as the committed
    ledger decides them; each paper's page holds its ledger."""
    page = (ROOT / "reports" / "index.html").read_text()
    first = page.index("<section")
    assert page[first:].startswith("<section id=headlines>")
    positions = [page.index(f"<p id='hl-{paper}'>") for paper in ("M4N", "Casimir", "QS", "AGM")]
    assert positions == sorted(positions)
    heads = headlines(ROOT / "config" / "claims.yaml", ledger(ROOT / "config" / "claims.yaml", ROOT / "reports"))
    assert len(heads) >= 12 and set(heads["paper"]) == {"M4N", "Casimir", "QS", "AGM"}
    assert heads.groupby("paper").size().between(3, 6).all()
    for _, h in heads.iterrows():
        assert f"href='{h['paper'].lower()}.html#h-{h['id']}'" in page
        assert html.escape(h["statement"]) in page
    for paper in ("m4n", "casimir", "qs", "agm"):
        paper_page = (ROOT / "reports" / f"{paper}.html").read_text()
        assert "<section id=ledger>" in paper_page and "<section id=headlines>" in paper_page
    assert "+dirty" not in page


def _headline_claims(report, headlines_):
    data = yaml.safe_load((report / "claims.yaml").read_text())
    data["headlines"] = headlines_
    (report / "claims.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return report / "claims.yaml"


def test_headlines_are_decided_from_the_claims_they_name_by_their_rule(report):
    """all / most / any of the checkable named claims, under the protocols named; the decisive
    claim is the first that fails where the headline fails, else the first that holds (one resting
    on a protocol first); the cause is the headline's own, else the decisive claim's."""
    def h(id_, claims, rule, protocols, **kw):
        return {"id": id_, "paper": "M4N", "statement": id_, "claims": claims, "rule": rule, "protocols": protocols,
                **kw}

    path = _headline_claims(report, [
        h("cells.all", ["t1.cell.*"], "all", "any"),
        h("cells.most.paper", ["t1.cell.*"], "most", "paper"),
        h("cells.most.any", ["t1.cell.*"], "most", "any"),
        h("cells.most.listed", ["t1.cell.*"], "most", ["m4n_table1_converged"]),
        h("cells.most.other", ["t1.cell.*"], "most", ["m4n_binning"]),
        h("curves.any", ["fig2.*"], "any", "paper"),
        h("missing", ["voc", "t1.missing"], "all", "any"),
        h("nothing", ["nope.*"], "all", "any"),
        h("trend", ["fig5a.*"], "all", "any", cause="a cause of our own"),
    ])
    out = headlines(path, ledger(path, report / "reports")).set_index("id")
    assert out.loc["cells.all", "verdict"] == NOT_REPRODUCED
    assert out.loc["cells.all", ["held", "checked", "cannot"]].tolist() == [3, 4, 0]
    assert out.loc["cells.all", "decisive"] == "t1.cell.mc.wine.M4N" and out.loc["cells.all", "cause"] == "wine is off"
    assert out.loc["cells.all", "decisive_label"] == "mc.wine.M4N"
    assert out.loc["cells.most.paper", "verdict"] == NOT_REPRODUCED          # 2 of 4 plain: not more than half
    for name in ("cells.most.any", "cells.most.listed"):
        assert out.loc[name, "verdict"] == "reproduced under m4n_table1_converged"
        assert out.loc[name, "decisive"] == "t1.cell.mc.wine.M3N" and out.loc[name, "cause"] == ""
        assert out.loc[name, "numbers"].startswith("on m4n_table1_converged: 0.03")
    assert out.loc["cells.most.other", "verdict"] == NOT_REPRODUCED
    assert out.loc["curves.any", "verdict"] == REPRODUCED and out.loc["curves.any", "decisive"] == "fig2.A_B"
    assert out.loc["curves.any", "numbers"] == "at 2 calls/n: A 0.4, B 1.5; below from 0 calls/n on, apart by more than the spreads at the end"
    assert out.loc["missing", "verdict"] == CANNOT and out.loc["missing", "cannot"] == 2
    assert out.loc["missing", "numbers"] == "no row dataset=letter, method=M4N, metric=test_loss in m4n_table1"
    assert out.loc["nothing", "verdict"] == CANNOT and out.loc["nothing", "numbers"] == "no claim of the ledger matches"
    assert out.loc["trend", "verdict"] == NOT_REPRODUCED and out.loc["trend", "cause"] == "a cause of our own"
    assert out.loc["trend", "decisive"] == "fig5a.flat"


def test_headline_schema_names_the_bad_headline(report, monkeypatch, capsys):
    from structpred.cli import main

    _headline_claims(report, [{"id": "h1", "paper": "M4N", "statement": "s", "claims": ["t1.*"], "rule": "some",
                               "protocols": "any"}])
    monkeypatch.chdir(report)
    (report / "config.yaml").write_text(yaml.safe_dump({"report": {"dir": "reports", "claims": "claims.yaml"}}))
    assert main(["claims", "--config", "config.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "headline 'h1' at rule" in err, err


def test_claims_prints_the_headlines_by_default_and_the_ledger_with_all(report, monkeypatch, capsys):
    from structpred.cli import main

    _headline_claims(report, [{"id": "h.cells", "paper": "M4N", "statement": "Table 1's cells reproduce",
                               "claims": ["t1.cell.*"], "rule": "all", "protocols": "any"}])
    monkeypatch.chdir(report)
    (report / "config.yaml").write_text(yaml.safe_dump({"report": {"dir": "reports", "claims": "claims.yaml"}}))
    assert main(["claims", "--config", "config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "[not reproduced] Table 1's cells reproduce" in out and "Cause: wine is off" in out
    assert "M4N: 7 claims, 3 reproduced, 1 under a protocol, 2 not reproduced, 1 cannot check" in out
    assert "t1.order.mc.iris" not in out
    assert main(["claims", "--all", "--config", "config.yaml"]) == 0
    assert "t1.order.mc.iris  [reproduced]  Table 1" in capsys.readouterr().out


def test_the_committed_headlines_fit_forty_lines():
    from structpred.report.claims_cli import headline_text

    text = headline_text(ROOT / "config" / "claims.yaml", ledger(ROOT / "config" / "claims.yaml", ROOT / "reports"),
                         width=120)
    lines = text.splitlines()
    assert len(lines) <= 40 and max(map(len, lines)) <= 120
    assert [line.split(":")[0] for line in lines if not line.startswith(" ")][:4] == ["M4N", "Casimir", "QS", "AGM"]


# --- grid edges -------------------------------------------------------------------------------

def _job_rows(method, lams_by_split, grid=(0.5, 0.25, 0.125), metrics=("val_loss", "test_loss")):
    rows = []
    for split, chosen in enumerate(lams_by_split):
        for lam in grid:
            for metric in metrics:
                pick = chosen[metric] if isinstance(chosen, dict) else chosen
                rows.append(dict(experiment="m4n_table1", task="mc", dataset="iris", method=method, split=split,
                                 lam=lam, selected=lam == pick, metric=metric, value=0.1))
    return rows


def test_selection_table_counts_choices_at_each_edge():
    results = make_rows(_job_rows("M3N", [0.5, 0.25, 0.125, 0.125]) + _job_rows("CRF", [0.25, 0.25])
                        + _job_rows("M4N", [{"val_loss": 0.5, "test_loss": 0.125}]))
    table = selection_table(results, ("task", "dataset", "method", "metric"), lambda d, m: {})
    by = table.set_index(["method", "scope"])
    assert by.loc[("M3N", ""), ["n_runs", "n_at_min", "n_at_max", "grid_size"]].tolist() == [4, 2, 1, 3]
    assert by.loc[("M3N", ""), "chosen"] == "0.125:2 0.25:1 0.5:1"
    assert by.loc[("CRF", ""), ["n_at_min", "n_at_max"]].tolist() == [0, 0]
    # a lambda chosen per metric: one row per group of metrics with the same choices
    assert by.loc[("M4N", "val_loss"), "n_at_max"] == 1 and by.loc[("M4N", "test_loss"), "n_at_min"] == 1
    notes = edge_notes(table, {"method": "M3N"})
    assert notes == ["iris M3N: lam at the grid's smallest value 0.125 in 2 of 4 runs",
                     "iris M3N: lam at the grid's largest value 0.5 in 1 of 4 runs"]


def test_selection_table_reads_declared_grids_and_counts_one_selection_once():
    rows = []
    for rep, (lam, sigma) in enumerate([(0.1, 0.2), (0.1, 0.05), (0.01, 0.2)]):
        common = dict(experiment="qs_robust", task="robust", dataset="n50", method="QS", split=rep, lam=lam)
        rows += [dict(common, selected=True, metric="test_error", value=0.3),
                 dict(common, selected=False, metric="sigma", value=sigma)]
    grids = {"lam": [0.1, 0.01, 0.001], "sigma": [0.05, 0.1, 0.2]}
    table = selection_table(make_rows(rows), ("task", "dataset", "method", "metric"), lambda d, m: grids)
    by = table.set_index("param")
    assert by.loc["lam", ["n_runs", "n_at_max", "n_at_min"]].tolist() == [3, 2, 0]
    assert by.loc["sigma", ["n_at_max", "n_at_min"]].tolist() == [2, 1]
    single = selection_table(make_rows(rows), ("task", "dataset", "method", "metric"), lambda d, m: grids, True)
    assert single.set_index("param").loc["lam", "n_runs"] == 2  # distinct choices, not splits
    # a grid of one value selects nothing: no row
    assert selection_table(make_rows(rows), ("task", "dataset", "method", "metric"),
                           lambda d, m: {"lam": [0.1], "sigma": [0.2]}).empty


def test_committed_selection_tables_flag_the_known_edges():
    tables = ROOT / "reports" / "tables"
    srl = pd.read_csv(tables / "agm_srl_selection.csv").set_index("method")
    assert srl.loc["CRF", "n_at_min"] == 1 and srl.loc["AGM", "n_at_max"] == 1
    movielens = pd.read_csv(tables / "qs_movielens_selection.csv").set_index(["method", "param"])
    assert movielens.loc[("QS", "lam"), ["n_runs", "n_at_max"]].tolist() == [10, 0]        # the widened grid
    assert movielens.loc[("QS", "intercept"), ["n_runs", "n_at_max"]].tolist() == [10, 1]  # c = 1000 in 1 of 10
    robust = pd.read_csv(tables / "qs_robust_selection.csv").set_index(["dataset", "method", "param"])
    assert robust.loc[("n1000", "RNW", "sigma"), "n_at_min"] == 100


def test_report_provenance_ignores_the_report_folder(tmp_path):
    from structpred.report.provenance import git_commit

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "t.csv").write_text("a\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (tmp_path / "reports" / "t.csv").write_text("b\n")
    assert not git_commit(tmp_path, ignore=[tmp_path / "reports"]).endswith("+dirty")
    assert git_commit(tmp_path).endswith("+dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_commit(tmp_path, ignore=[tmp_path / "reports"]).endswith("+dirty")


def test_evidence_links_the_tables_it_names():
    from structpred.report.html import _link_evidence

    out = _link_evidence("agm_emotion departures; table agm_emotion_unnormalised; tables/agm_srl_selection.csv",
                         {"agm_emotion", "agm_emotion_unnormalised", "agm_srl"})
    assert out == ("<a href='#agm_emotion'>agm_emotion</a> departures; table "
                   "<a href='#agm_emotion_unnormalised'>agm_emotion_unnormalised</a>; "
                   "<a href='tables/agm_srl_selection.csv'>tables/agm_srl_selection.csv</a>")
    # across pages: each name to its page's section
    out = _link_evidence("see qs_usps and agm_srl", {"qs_usps": "qs.html#qs_usps", "agm_srl": "agm.html#agm_srl"})
    assert out == "see <a href='qs.html#qs_usps'>qs_usps</a> and <a href='agm.html#agm_srl'>agm_srl</a>"


def test_the_readme_counts_are_the_committed_ledgers():
    """The README's 'What holds' bullets give each paper's verdict counts as the committed ledger
    has them, so the first screen cannot drift from reports/tables/claims.csv."""
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    ledger = pd.read_csv(ROOT / "reports" / "tables" / "claims.csv")
    for paper, rows in ledger.groupby("paper"):
        found = re.search(rf"\*\*{paper}\*\*(?:(?!\*\*).)*?of (\d+) claims, (\d+) reproduced, (\d+) more under a named "
                          rf"protocol, (\d+) not reproduced, (\d+) cannot check", text)
        assert found, f"README has no 'What holds' bullet for {paper}"
        verdict = rows["verdict"]
        assert tuple(map(int, found.groups())) == (
            len(rows), int((verdict == "reproduced").sum()), int(verdict.str.startswith("reproduced under").sum()),
            int((verdict == "not reproduced").sum()), int((verdict == "cannot check").sum())), paper


def test_claims_cli_takes_any_case_and_refuses_an_unknown_paper_or_verdict_in_one_line(report, monkeypatch, capsys):
    """--paper casimir is --paper Casimir; --verdict is matched from its start in any case; an
    unknown paper or verdict is one line on stderr and exit status 2."""
    from structpred.cli import main

    monkeypatch.chdir(report)
    (report / "config.yaml").write_text(yaml.safe_dump({"report": {"dir": "reports", "claims": "claims.yaml"}}))
    assert main(["claims", "--paper", "Casimir", "--config", "config.yaml"]) == 0
    exact = capsys.readouterr().out
    assert main(["claims", "--paper", "cASIMIR", "--config", "config.yaml"]) == 0
    assert capsys.readouterr().out == exact and "fig2.A_B  [reproduced]  Fig. 2" in exact and "t1.cell" not in exact
    assert main(["claims", "--paper", "m4n", "--verdict", "NOT", "--config", "config.yaml"]) == 0
    ids = re.findall(r"^(\S+)  \[(.+?)\]", capsys.readouterr().out, re.M)
    assert ids and {v for _, v in ids} == {NOT_REPRODUCED} and {i.split(".")[0] for i, _ in ids} == {"t1"}
    for args, message in ((["--paper", "qs"], "structpred: error: no claims of paper 'qs'; papers: M4N, Casimir"),
                          (["--verdict", "foo"], "structpred: error: unknown verdict 'foo'; verdicts: reproduced, "
                                                 "reproduced under, not reproduced, cannot check")):
        assert main(["claims", *args, "--config", "config.yaml"]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith(message), captured.err
