"""QS Table 1 on MovieLens (qs_movielens): the protocol (user split, halves, features), the rank
loss, QS against enumeration, the pairwise baselines' objectives and trainers, the smoke job."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.errors import ConfigError, DataError
from structpred.papers.qs import movielens as Q, pairwise_rankers as PR
from structpred.papers.registry import get
from structpred.tables.seeding import rng_for
from structpred.outputs import PairwiseRanking

AGE_BINS = [18, 25, 35, 45, 50, 56]


def toy_view(n_users=40, n_items=25, lo=8, hi=16, seed=0) -> dict:
    """A MovieLens-shaped view: every user rates ``lo..hi`` random movies 1..5 (rows shuffled)."""
    rng = np.random.default_rng(seed)
    rows = [(u, j, rng.integers(1, 6), 880_000_000 + u)
            for u in range(n_users) for j in rng.choice(n_items, rng.integers(lo, hi + 1), replace=False)]
    ratings = np.asarray(rows, dtype=np.int64)
    rng.shuffle(ratings)
    return {"ratings": ratings, "user_age": rng.integers(10, 70, n_users),
            "user_gender": rng.choice(["F", "M"], n_users),
            "user_occupation": rng.choice(["artist", "doctor", "student"], n_users),
            "item_genres": np.zeros((n_items, 19), dtype=np.int64)}


def toy_settings(**kw) -> dict:
    return {"n_train": 25, "n_test": 10, "cv_folds": 2, "age_bins": AGE_BINS, "intercept": 1.0, "lbfgs_max_iter": 30,
            "lbfgs_tol": 1e-6, "ssvm_passes": 5, **kw}


def brute_rank_loss(r, y) -> float:
    """QS eq. 22 by its definition: rating-difference-weighted discordant rated pairs (rating > 0)
    over their sum."""
    num = den = 0.0
    for j, k in itertools.permutations(range(len(r)), 2):
        if r[j] > r[k] > 0:
            den += r[j] - r[k]
            num += (r[j] - r[k]) * (y[j] > y[k])
    return num / den if den > 0 else 0.0


# --- protocol ---------------------------------------------------------------------------------

def test_user_split_and_halves_are_deterministic_and_disjoint():
    view = toy_view()
    tr, te = Q.split_users(40, 25, 10, rng_for(0, "users", 3))
    tr2, te2 = Q.split_users(40, 25, 10, rng_for(0, "users", 3))
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2)
    assert (len(tr), len(te)) == (25, 10) and not set(tr) & set(te)
    assert not np.array_equal(tr, Q.split_users(40, 25, 10, rng_for(0, "users", 4))[0])

    P, T = Q.split_halves(view["ratings"], 40, 25, rng_for(0, "halves", 3))
    P2, T2 = Q.split_halves(view["ratings"][::-1], 40, 25, rng_for(0, "halves", 3))  # file order is irrelevant
    assert np.array_equal(P, P2) and np.array_equal(T, T2)
    assert not np.any((P > 0) & (T > 0))
    full = np.zeros((40, 25))
    full[view["ratings"][:, 0], view["ratings"][:, 1]] = view["ratings"][:, 2]
    np.testing.assert_array_equal(P + T, full)
    m = (full > 0).sum(axis=1)
    np.testing.assert_array_equal((P > 0).sum(axis=1), m // 2)
    np.testing.assert_array_equal((T > 0).sum(axis=1), m - m // 2)
    assert not np.array_equal(P, Q.split_halves(view["ratings"], 40, 25, rng_for(0, "halves", 4))[0])


def test_pearson_over_co_rated_movies():
    rng = np.random.default_rng(1)
    A = np.where(rng.uniform(size=(6, 12)) < 0.6, rng.integers(1, 6, (6, 12)), 0).astype(float)
    A[5] = np.where(A[5] > 0, 3.0, 0.0)  # constant: correlation 0
    S = Q.pearson(A, A[:4])
    for a, b in itertools.product(range(6), range(4)):
        both = (A[a] > 0) & (A[b] > 0)
        x, y = A[a, both], A[b, both]
        want = 0.0 if both.sum() < 2 or x.std() == 0 or y.std() == 0 else np.corrcoef(x, y)[0, 1]
        assert S[a, b] == pytest.approx(want, abs=1e-12)


def test_features_use_only_profiles_and_training_statistics():
    view = toy_view()
    data = Q.make_trial(view, toy_settings(), 0, 2)
    d = 3 + (len(AGE_BINS) + 1) + 1 + 25 + 1  # occupations, age bins, gender, similarities, constant
    assert data.X.shape == (40, d) and np.all(data.X[:, -1] == 1.0)
    Z = data.X[data.train, :-1]
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    assert np.all(np.isclose(Z.std(axis=0), 1.0) | np.isclose(Z.std(axis=0), 0.0))

    u = data.test[0]
    mine = view["ratings"][:, 0] == u
    target = mine & (data.target[u, view["ratings"][:, 1]] > 0)
    changed = {**view, "ratings": view["ratings"].copy()}
    changed["ratings"][target, 2] = 6 - changed["ratings"][target, 2]  # new target ratings
    again = Q.make_trial(changed, toy_settings(), 0, 2)
    np.testing.assert_array_equal(again.X, data.X)
    assert not np.array_equal(again.target[u], data.target[u])

    profile = mine & ~target
    changed["ratings"][profile, 2] = 6 - changed["ratings"][profile, 2]
    moved = Q.make_trial(changed, toy_settings(), 0, 2)
    diff = np.flatnonzero(np.any(moved.X != data.X, axis=1))
    assert list(diff) == [u]  # a test user's profile moves its own features only


def test_rank_loss_of_a_ranking_is_the_direct_computation():
    rng = np.random.default_rng(2)
    R = np.where(rng.uniform(size=(7, 15)) < 0.5, rng.integers(1, 6, (7, 15)), 0).astype(float)
    S = rng.normal(size=(7, 15))
    got = Q.rank_losses(R, Q.score_ranker(S))
    for q in range(7):
        items = np.flatnonzero(R[q])
        y = np.argsort(np.argsort(-S[q, items]))
        assert got[q] == pytest.approx(brute_rank_loss(R[q, items], y), abs=1e-12)
    assert np.all((got >= 0) & (got <= 1))


def _is_acyclic(D) -> bool:
    """Whether the arcs ``D[j, k] > 0`` have no cycle (then the FAS heuristic is exact)."""
    alive = list(range(len(D)))
    while alive:
        sinks = [u for u in alive if not any(D[u, k] > 0 for k in alive if k != u)]
        if not sinks:
            return False
        alive.remove(sinks[0])
    return True


def test_qs_equals_enumeration_on_a_tiny_instance():
    view = toy_view(n_users=30, n_items=9, lo=6, hi=9, seed=3)
    settings = toy_settings(n_train=20, n_test=10)
    data = Q.make_trial(view, settings, 0, 0)
    X, R = data.X[data.train], data.target[data.train]
    lam, n = 0.3, len(data.train)
    alpha = np.linalg.solve(X @ X.T + n * lam * np.eye(n), X @ data.X[data.test].T).T  # (K + n lam I)^-1 K_x
    losses = Q.held_out_losses("QS", data, 1.0, lam, settings, 0)
    exact = 0
    for q, u in enumerate(data.test):
        items = np.flatnonzero(data.target[u])
        space = PairwiseRanking(len(items))
        y = space.weighted_decode(alpha[q], R[:, items])

        def objective(yy):
            return sum(a * brute_rank_loss(r[items], yy) for a, r in zip(alpha[q], R))

        values = [objective(np.asarray(p)) for p in itertools.permutations(range(len(items)))]
        assert objective(y) >= min(values) - 1e-12
        if _is_acyclic(space.net_weights(alpha[q], R[:, items])):
            exact += 1
            assert objective(y) == pytest.approx(min(values), abs=1e-12)
        assert losses[q] == pytest.approx(brute_rank_loss(data.target[u, items], y), abs=1e-12)
    assert exact >= 5


# --- baselines ------------------------------------------------------------------------------

def toy_prefs(n=12, n_items=7, d=4, seed=4) -> PR.Preferences:
    rng = np.random.default_rng(seed)
    R = np.where(rng.uniform(size=(n, n_items)) < 0.6, rng.integers(1, 6, (n, n_items)), 0).astype(float)
    R[0, :3] = [5, 1, 3]  # at least one user with distinct ratings
    return PR.Preferences.from_ratings(rng.normal(size=(n, d)), R)


@pytest.mark.parametrize("surrogate", ["linear", "hinge", "logistic"])
def test_pairwise_objective_gradient_and_training(surrogate):
    prefs = toy_prefs()
    lam = 0.05
    w = np.random.default_rng(5).normal(size=prefs.n_items * prefs.X.shape[1])
    f, g = PR.pairwise_objective(w, prefs, lam, surrogate)
    eps = 1e-6
    fd = np.array([(PR.pairwise_objective(w + eps * e, prefs, lam, surrogate)[0]
                    - PR.pairwise_objective(w - eps * e, prefs, lam, surrogate)[0]) / (2 * eps)
                   for e in np.eye(len(w))])
    np.testing.assert_allclose(g, fd, atol=1e-6)
    # the definition, pair by pair
    W = w.reshape(prefs.n_items, -1)
    phi = {"linear": lambda t: -t, "hinge": lambda t: max(0.0, 1 - t), "logistic": lambda t: np.log1p(np.exp(-t))}
    want = 0.0
    for u in range(prefs.n):
        sl = slice(prefs.offs[u], prefs.offs[u + 1])
        s, r = W[prefs.items[sl]] @ prefs.X[u], prefs.ratings[sl]
        want += sum(prefs.zinv[u] * (r[j] - r[k]) * phi[surrogate](s[j] - s[k])
                    for j, k in itertools.permutations(range(len(r)), 2) if r[j] > r[k])
    assert f == pytest.approx(want / prefs.n + lam / 2 * w @ w, rel=1e-12)
    zero = PR.pairwise_objective(np.zeros_like(w), prefs, lam, surrogate)[0]
    trained = PR.fit_pairwise(prefs, surrogate, lam, 200, 1e-10)
    assert PR.pairwise_objective(trained.ravel(), prefs, lam, surrogate)[0] < zero - 1e-3


def test_linear_surrogate_has_the_closed_form_minimiser():
    prefs = toy_prefs()
    B = PR.pairwise_objective(np.zeros(prefs.n_items * prefs.X.shape[1]), prefs, 1.0, "linear")[1]
    for lam in (0.1, 2.0):
        W = PR.fit_pairwise(prefs, "linear", lam, 50, 1e-12)
        np.testing.assert_allclose(W.ravel(), -B / lam, atol=1e-8)


def test_lbfgs_solves_a_quadratic():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(30, 30))
    H, b = A @ A.T + np.eye(30), rng.normal(size=30)
    x, f, it = PR.lbfgs(lambda x: (0.5 * x @ H @ x - b @ x, H @ x - b), np.zeros(30), 500, 1e-15)
    np.testing.assert_allclose(x, np.linalg.solve(H, b), atol=1e-6)


def _psi_coef(y):
    m = len(y)
    return (m - 1 - 2.0 * np.asarray(y)) / (m * (m - 1) / 2)


def _truth_coef(r):
    m = len(r)
    return np.array([np.sum(r < v) - np.sum(r > v) for v in r]) / (m * (m - 1) / 2)


def test_loss_augmented_decoding_against_enumeration():
    rng = np.random.default_rng(7)
    for trial in range(20):
        m = 5
        r = rng.integers(1, 6, m).astype(float)
        if len(set(r)) < 2:
            continue
        zinv = 1.0 / PairwiseRanking(m).normalizer(r)
        s = rng.normal(scale=0.5, size=m) if trial else np.zeros(m)
        value = {p: brute_rank_loss(r, p) + s @ _psi_coef(p) for p in itertools.permutations(range(m))}
        y = PR.loss_augmented(s, r, zinv)
        got = brute_rank_loss(r, y) + s @ _psi_coef(y)
        assert got <= max(value.values()) + 1e-12
        if trial == 0:  # s = 0: the arcs follow the ratings, acyclic: the heuristic is exact
            assert got == pytest.approx(1.0)


def test_ssvm_lowers_its_exact_objective():
    prefs = toy_prefs(n=10, n_items=6, d=3)
    lam = 0.1

    def primal(W):  # (1/n) sum_u max_y [L + <W, Psi(y) - Psi(r)>] + lam/2 ||W||^2, by enumeration
        total = 0.0
        for u in range(prefs.n):
            sl = slice(prefs.offs[u], prefs.offs[u + 1])
            r, s = prefs.ratings[sl], W[prefs.items[sl]] @ prefs.X[u]
            if len(r) < 2:
                continue
            total += max(brute_rank_loss(r, p) + s @ (_psi_coef(p) - _truth_coef(r))
                         for p in itertools.permutations(range(len(r))))
        return total / prefs.n + lam / 2 * np.sum(W * W)

    W = PR.fit_ssvm(prefs, lam, 30, np.random.default_rng(0))
    again = PR.fit_ssvm(prefs, lam, 30, np.random.default_rng(0))
    np.testing.assert_array_equal(W, again)
    zero = primal(np.zeros_like(W))
    assert zero == pytest.approx(np.mean(prefs.zinv > 0))  # max loss 1 for every user with a preference
    assert primal(W) < zero - 0.05


# --- the experiment -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def paper_config():
    with open("config/config.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def smoke_settings(config, method):
    with open("config/smoke.yaml", encoding="utf-8") as fh:
        smoke = yaml.safe_load(fh)["qs_movielens"]
    merged = {**config, "qs_movielens": {**config["qs_movielens"], **smoke}}
    return merged, get("qs_movielens").settings(merged, "movielens", method)


def test_jobs_and_settings_of_the_paper_config(paper_config):
    exp = get("qs_movielens")
    jobs = exp.jobs(paper_config)
    assert len(jobs) == 6 * 10 == len(set(jobs)) and ("movielens", "SVM-Struct", 9) in jobs
    assert exp.settings(paper_config, "movielens", "Popularity")["lambdas"] == []  # nothing to select
    qs = exp.settings(paper_config, "movielens", "QS")
    assert (qs["n_train"], qs["n_test"], qs["cv_folds"]) == (643, 300, 5)
    assert "ssvm_passes" not in qs and "lbfgs_max_iter" not in qs
    assert qs["lambdas"] == paper_config["qs_movielens"]["lambdas"]["QS"]
    assert qs["intercepts"] == paper_config["qs_movielens"]["qs_intercepts"]        # QS's kernel constant, CV'd
    assert "intercepts" not in exp.settings(paper_config, "movielens", "Hinge")   # the baselines keep theirs
    assert exp.grids(paper_config, "movielens", "QS") == {"intercept": paper_config["qs_movielens"]["qs_intercepts"]}
    assert "ssvm_passes" in exp.settings(paper_config, "movielens", "SVM-Struct")


def test_errors_are_one_clear_line(paper_config, tmp_path):
    exp = get("qs_movielens")
    for call, err, text in [
        (lambda: exp.settings(paper_config, "movielens", "SVM"), ConfigError, "unknown qs_movielens method 'SVM'"),
        (lambda: Q.make_trial(toy_view(), toy_settings(n_train=35), 0, 0), ConfigError, "exceeds the 40 users"),
        (lambda: Q.make_trial({"ratings": np.zeros((1, 4))}, toy_settings(), 0, 0), DataError, "missing arrays"),
        (lambda: exp.run({"view": str(tmp_path / "none.npz")}, toy_settings(lambdas=[1.0]), seed=0,
                         dataset="movielens", method="QS", split=0), DataError, "cannot read prepared view"),
    ]:
        with pytest.raises(err, match=text) as info:
            call()
        assert "\n" not in str(info.value)


def _write_view(arrays, path):
    np.savez(path, meta=np.asarray(json.dumps({"view": "movielens"})), **arrays)
    return str(path)


def test_a_toy_job_writes_the_expected_rows(tmp_path):
    from structpred.tables.results import COLUMNS, make_rows

    view = _write_view(toy_view(), tmp_path / "toy.npz")
    exp = get("qs_movielens")
    lams = {"QS": [0.1, 10.0], "Linear": [1.0], "Hinge": [0.01, 0.1], "Logistic": [0.01, 0.1],
            "SVM-Struct": [0.01, 0.1]}
    for method in [m for m in Q.METHODS if m != "Popularity"]:
        rows, history = exp.run({"view": view}, toy_settings(lambdas=lams[method]), seed=0, dataset="movielens",
                                method=method, split=1)
        frame = make_rows(rows)
        assert history is None and list(frame.columns) == COLUMNS
        sel = frame[frame["selected"]]
        assert list(sel["metric"]) == ["rank_loss", "seconds"]
        assert set(frame["task"]) == {"ranking"} and set(frame["method"]) == {method}
        assert 0 <= sel["value"].iloc[0] <= 1 and sel["lam"].iloc[0] in lams[method]
        cv = frame[frame["metric"] == "cv_rank_loss"]
        assert list(cv["lam"]) == lams[method] and not cv["selected"].any()
        assert sel["lam"].iloc[0] == cv["lam"].iloc[int(np.argmin(cv["value"]))]
    # QS selects its kernel's constant c with lambda: the CV curve over (c, lam), c in the detail
    rows, _ = exp.run({"view": view}, toy_settings(lambdas=[0.1, 10.0], intercepts=[1.0, 10.0]), seed=0,
                      dataset="movielens", method="QS", split=1)
    frame = make_rows(rows)
    by = frame.set_index("metric")
    cv = frame[frame["metric"] == "cv_rank_loss"]
    assert list(cv["detail"]) == ["intercept=1", "intercept=1", "intercept=10", "intercept=10"]
    best = cv.iloc[int(np.argmin(cv["value"]))]
    assert (by.loc["intercept", "value"], by.loc["rank_loss", "lam"]) == (
        float(best["detail"].split("=")[1]), best["lam"])
    assert not by.loc["intercept", "selected"]            # read by the grid-edge check, not aggregated
    rows, _ = exp.run({"view": view}, toy_settings(lambdas=[]), seed=0, dataset="movielens", method="Popularity",
                      split=1)
    frame = make_rows(rows)
    assert list(frame["metric"]) == ["rank_loss", "seconds"] and frame["lam"].isna().all()


def test_the_smoke_job_on_movielens(mirror, tmp_path, paper_config):
    from structpred.data.store import prepare
    from structpred.tables.results import make_rows, read_results, write_csv

    prepare("movielens", mirror, tmp_path / "movielens.npz")
    exp = get("qs_movielens")
    for method in Q.METHODS:
        config, settings = smoke_settings(paper_config, method)
        assert len(exp.jobs(config)) == len(Q.METHODS) * config["qs_movielens"]["n_trials"]
        rows, _ = exp.run({"view": str(tmp_path / "movielens.npz")}, settings, seed=0, dataset="movielens",
                          method=method, split=0)
        write_csv(make_rows(rows), tmp_path / f"{method}.csv")
    table = read_results([tmp_path / f"{m}.csv" for m in Q.METHODS])
    sel = table[table["selected"]]
    assert list(sel["method"].unique()) == list(Q.METHODS)
    loss = sel[sel["metric"] == "rank_loss"].set_index("method")["value"]
    assert loss.between(0.2, 0.6).all()
    assert set(sel["metric"]) == {"rank_loss", "seconds"} and set(sel["dataset"]) == {"movielens"}
    assert set(table[table["metric"] == "intercept"]["method"]) == {"QS"}   # only QS selects its kernel constant


def test_report_hooks_table_tests_and_figure(tmp_path):
    from structpred.tables.results import make_rows, write_csv
    from structpred.report.aggregate import aggregate_files

    exp = get("qs_movielens")
    rng = np.random.default_rng(8)
    paths = []
    for j, method in enumerate(Q.METHODS):
        for trial in range(4):
            common = {"experiment": "qs_movielens", "task": "ranking", "dataset": "movielens", "method": method,
                      "split": trial, "lam": 1.0, "selected": True}
            rows = [{**common, "metric": "rank_loss", "value": 0.40 + 0.01 * j + 0.001 * rng.normal()},
                    {**common, "metric": "seconds", "value": 1.0},
                    {**common, "selected": False, "metric": "cv_rank_loss", "value": 0.5}]
            paths.append(tmp_path / f"{method}_{trial}.csv")
            write_csv(make_rows(rows), paths[-1])
    table = aggregate_files(paths, "config/references.yaml", tmp_path / "table.csv", tmp_path / "tests.csv")
    loss = table[table["metric"] == "rank_loss"].set_index("method")
    assert list(loss.index) == list(Q.METHODS) and set(loss["n_splits"]) == {4}
    assert loss.loc["QS", "reference"] == 0.396 and loss.loc["SVM-Struct", "reference"] == 0.451
    tests = pd.read_csv(tmp_path / "tests.csv")
    page = exp.render(table, tests, {})
    assert "unverified" in page and all(m in page for m in Q.METHODS) and page.count("<tr>") == 2
    assert "<b>" in page  # the best method is bold
    exp.figure(table, tmp_path / "fig.png", {})
    assert (tmp_path / "fig.png").stat().st_size > 0


def test_popularity_ranks_by_the_mean_training_rating():
    R = np.array([[5.0, 0.0, 1.0], [3.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(Q.popularity_scores(R), [4.0, 2.0, 1.0])
    assert Q.popularity_scores(np.array([[4.0, 0.0], [2.0, 0.0]]))[1] == pytest.approx(3.0)  # unrated: overall mean

