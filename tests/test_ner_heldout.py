"""casimir_ner_heldout, the matrix's NER column: each chain method's lambda chosen on testa, its
testb rows one per sentence, its fits kept and read back, and the matrix reading every cell."""

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.errors import ConfigError
from structpred.metrics import entity_f1
from structpred.papers.casimir import ner_heldout
from structpred.papers.casimir.ner_heldout import METHODS, HeldOutJob, ner_space
from structpred.papers.matrix.methods import estimator
from structpred.papers.registry import get
from structpred.tables.seeding import int_seed
from tests.conftest import REPO
from tests.test_casimir_experiment import _toy_parts

CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())


def _settings(method, lambdas=(1.0, 0.01)):
    budget = {"kernel": "linear"} if method == "QS" else {"n_passes": 3}
    return {"method": method, "lambdas": list(lambdas), "budget": budget, "word_threshold": 0, "subsample": None}


@pytest.fixture
def toy_view(tmp_path, monkeypatch):
    parts, tags = _toy_parts()
    monkeypatch.setattr(ner_heldout, "load_parts", lambda *a, **k: (parts, tags))
    view = tmp_path / "conll2003.npz"
    view.write_bytes(b"the fit cache hashes its input file")
    return parts, tags, {"view": str(view)}


@pytest.mark.parametrize("method", ["M3N", "QS"])
def test_the_chosen_lambdas_fit_is_scored_on_every_testb_sentence(toy_view, tmp_path, method):
    parts, tags, inputs = toy_view
    exp = get("casimir_ner_heldout")
    rows, history = exp.run(inputs, _settings(method), seed=0, dataset="conll2003", method=method, split=0,
                            checkpoint=tmp_path / "fits")
    df = pd.DataFrame(rows)
    val = df[df["metric"] == "val_loss"].set_index("lam")["value"]
    assert list(val.index) == [1.0, 0.01] and not df.loc[df["metric"] == "val_loss", "selected"].any()
    chosen = val.index[int(np.argmin(val.to_numpy()))]
    test = df[df["metric"] == "token_error"]
    Xb, yb = parts["testb"]
    assert list(test["split"]) == list(range(Xb.n)) and (test["lam"] == chosen).all() and test["selected"].all()
    est = estimator(method, ner_space(len(tags)), chosen, _settings(method)["budget"],
                    int_seed(0, "casimir_ner_heldout", method)).fit(*parts["train"])
    pred = est.predict(Xb)
    np.testing.assert_allclose(test["value"], [np.mean(np.asarray(a) != np.asarray(b)) for a, b in zip(yb, pred)])
    assert df.loc[df["metric"] == "entity_f1", "value"].item() == entity_f1(yb, pred, tags)
    assert len(history) == (0 if method == "QS" else 3)
    seconds = df[df["metric"] == "seconds"]   # each lambda's fit time, the chosen one's selected
    assert list(seconds["lam"]) == [1.0, 0.01] and (seconds["value"] > 0).all()
    assert list(seconds["selected"]) == [lam == chosen for lam in (1.0, 0.01)]
    # a second run reads both kept fits: the same rows, timings included
    again, _ = exp.run(inputs, _settings(method), seed=0, dataset="conll2003", method=method, split=0,
                       checkpoint=tmp_path / "fits")
    assert again == rows


def test_the_lambdas_fitted_side_by_side_give_the_same_rows(toy_view):
    """A job's threads fit its lambdas in separate processes: the rows do not depend on them."""
    _, _, inputs = toy_view
    runs = [pd.DataFrame(get("casimir_ner_heldout").run(inputs, _settings("SGD"), seed=0, dataset="conll2003",
                                                        method="SGD", split=0, threads=n)[0]) for n in (1, 2)]
    untimed = [r[r["metric"] != "seconds"].reset_index(drop=True) for r in runs]
    pd.testing.assert_frame_equal(*untimed)
    assert get("casimir_ner_heldout").threads(CONFIG, "conll2003", "M4N") == CONFIG["casimir_ner_heldout"]["threads"]


@pytest.mark.parametrize("method", [m for m in METHODS if m != "QS"])
def test_every_method_learns_the_toy_tags(toy_view, method):
    """The toy tags are a function of the word: each linear method beats tagging every token with
    the training set's commonest tag on testb (QS weights whole training sentences of the test
    sentence's length, of which the toy set has a handful: its weights are checked against the
    explicit kernel in test_qs_sequences.py)."""
    parts, tags, inputs = toy_view
    rows, _ = get("casimir_ner_heldout").run(inputs, _settings(method, (0.01,)), seed=0, dataset="conll2003",
                                             method=method, split=0)
    err = pd.DataFrame(rows).query("metric == 'token_error'")["value"].mean()
    common = np.bincount(np.concatenate(parts["train"][1])).argmax()
    baseline = np.mean([np.mean(np.asarray(y) != common) for y in parts["testb"][1]])
    assert err < 0.5 * baseline


def test_the_paper_config_and_the_matrix_reads_every_cell():
    exp, matrix = get("casimir_ner_heldout"), get("matrix")
    assert exp.jobs(CONFIG) == [("conll2003", m, 0) for m in CONFIG["casimir_ner_heldout"]["methods"]]
    m4n = exp.settings(CONFIG, "conll2003", "M4N")
    assert m4n["budget"] == {"n_passes": 50, "n_iter_oracle": 5} and exp.settings(CONFIG, "conll2003", "SGD")["budget"] == {
        "n_passes": 50}
    assert m4n["word_threshold"] == CONFIG["casimir_ner"]["word_threshold"]   # casimir_ner's features
    cells = [(m, k) for d, m, k in matrix.jobs(CONFIG) if d == "conll2003"]
    assert cells == [(m, 0) for m in CONFIG["matrix"]["methods"]]
    assert all(matrix.borrowed(CONFIG, "conll2003", m) for m, _ in cells)
    assert ("ner", "QS") not in matrix.impossible(CONFIG)
    assert exp.settings(CONFIG, "conll2003", "QS")["budget"] == {"kernel": "linear"}   # no passes
    assert matrix.grids(CONFIG, "conll2003:token_error", "M4N") == {"lam": CONFIG["casimir_ner_heldout"]["lambdas"]}
    with pytest.raises(ConfigError, match="unknown casimir_ner_heldout method 'SSVM'"):
        HeldOutJob.from_settings({**_settings("M3N"), "method": "SSVM"})


def test_a_widened_grid_fits_only_its_new_lambdas(toy_view, tmp_path, monkeypatch):
    """The fit cache is keyed without the grid: a fit at one lambda does not depend on the others."""
    _, _, inputs = toy_view
    exp, fitted = get("casimir_ner_heldout"), []
    fit = ner_heldout.fit_lambda
    monkeypatch.setattr(ner_heldout, "fit_lambda", lambda parts, tags, job, lam, *a, **k: (
        fitted.append(lam), fit(parts, tags, job, lam, *a, **k))[1])
    first, _ = exp.run(inputs, _settings("SGD"), seed=0, dataset="conll2003", method="SGD", split=0,
                       checkpoint=tmp_path / "fits")
    wide, _ = exp.run(inputs, _settings("SGD", (1.0, 0.01, 1e-4)), seed=0, dataset="conll2003", method="SGD",
                      split=0, checkpoint=tmp_path / "fits")
    assert fitted == [1.0, 0.01, 1e-4]
    val = pd.DataFrame(wide).query("metric == 'val_loss'")
    assert list(val["lam"]) == [1.0, 0.01, 1e-4]
    assert val["value"].iloc[:2].tolist() == pd.DataFrame(first).query("metric == 'val_loss'")["value"].tolist()


def test_a_method_takes_its_own_grid_from_method_lambdas():
    exp, block = get("casimir_ner_heldout"), CONFIG["casimir_ner_heldout"]
    for method in block["methods"]:
        grid = exp.settings(CONFIG, "conll2003", method)["lambdas"]
        assert grid == block.get("method_lambdas", {}).get(method, block["lambdas"])
    config = {**CONFIG, "casimir_ner_heldout": {**block, "method_lambdas": {"SGD": [1.0, 0.1]}}}
    assert exp.settings(config, "conll2003", "SGD")["lambdas"] == [1.0, 0.1]
    assert exp.settings(config, "conll2003", "CRF")["lambdas"] == block["lambdas"]
