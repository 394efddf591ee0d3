"""Casimir's non-convex box score and its solvers: the score's gradient (torch autograd) against
finite differences, the linearisation and its adjoint, the prox-linear subproblem's
reformulation, prox-linear accepting only decreasing steps, and the non-convex SGD step."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from structpred.errors import ConfigError, StructpredError  # noqa: E402
from structpred.features.joint import CandidateJoint  # noqa: E402
from structpred.outputs import Candidates  # noqa: E402
from structpred.solvers.driver import run  # noqa: E402
from structpred.solvers.problem import Problem  # noqa: E402
from structpred.solvers.prox_linear import NonConvexSGD, ProxLinear  # noqa: E402
from structpred.surrogates import Hinge  # noqa: E402
from structpred.vision.score_net import (  # noqa: E402
    N_PARAMS, ConvScore, ConvScoreMap, init_params, positions, split)

SP = Candidates()


def toy(n=6, seed=0):
    rng = np.random.default_rng(seed)
    A = [positions(rng.normal(size=(int(m), 2304)).astype(np.float32)) for m in rng.integers(3, 8, size=n)]
    y = [rng.uniform(size=len(a)) for a in A]
    return A, y


def test_score_and_its_autograd_gradient_against_finite_differences():
    A, _ = toy()
    net, w = ConvScore(), init_params(1)
    w1, w2 = split(w)
    Z = A[0].astype(np.float64) @ w1
    elu = np.where(Z > 0, Z, np.exp(np.minimum(Z, 0)) - 1)
    np.testing.assert_allclose(net.scores(A[0], w), (elu * w2).sum(axis=(1, 2)), rtol=1e-12)
    rng = np.random.default_rng(2)
    g = rng.normal(size=len(A[0]))
    grad = net.vjp(A[0], w, g)
    for _ in range(5):
        e = rng.normal(size=N_PARAMS)
        h = 1e-6
        fd = (net.scores(A[0], w + h * e) - net.scores(A[0], w - h * e)) @ g / (2 * h)
        assert abs(fd - grad @ e) < 1e-6 * max(1.0, abs(fd))


def test_candidates_are_copied_to_the_device_once_per_live_array():
    A, _ = toy(n=2)
    net, w = ConvScore(), init_params(1)
    first = net.scores(A[0], w)
    resident = net._candidates(A[0])
    net.vjp(A[0], w, np.ones(len(A[0])))
    assert net._candidates(A[0]) is resident and len(net._resident) == 1
    other = A[1].copy()                       # a new array is a new copy, and scores as itself
    np.testing.assert_array_equal(net.scores(other, w), ConvScore().scores(A[1], w))
    assert len(net._resident) == 2
    del other                                 # a dead array's copy is released with it
    assert len(net._resident) == 1
    np.testing.assert_array_equal(net.scores(A[0], w), first)


def test_linearisation_is_first_order_and_its_adjoint_is_exact():
    A, _ = toy()
    net, w = ConvScore(), init_params(3)
    rng = np.random.default_rng(4)
    u0 = 1e-3 * rng.normal(size=N_PARAMS)
    lin = ConvScoreMap(A, net).linearise(w, u0)
    for i in range(len(A)):
        z = rng.normal(size=N_PARAMS)
        # lin.score(i, z) = phi(w) + J (u0 + z): its error against phi(w + u0 + z) shrinks as |u0 + z|^2
        err = [np.abs(lin.score(i, h * z - u0) - net.scores(A[i], w + h * z)).max() for h in (1e-2, 1e-3)]
        assert err[1] < err[0] / 50 and np.abs(lin.score(i, -u0) - net.scores(A[i], w)).max() < 1e-12
        g = rng.normal(size=len(A[i]))
        G = np.zeros(N_PARAMS)
        lin.add(i, G, g)
        np.testing.assert_allclose(G, net.vjp(A[i], w, g), rtol=1e-9, atol=1e-12)
        v = lin.score(i, z) - lin.score(i, np.zeros(N_PARAMS))   # J z
        assert abs(g @ v - G @ z) < 1e-8 * (1 + abs(g @ v))
        assert lin.norm2(i, g) == pytest.approx(G @ G)


def test_subproblem_is_the_prox_linear_model_up_to_a_constant():
    A, y = toy()
    net, w, lam, eta = ConvScore(), init_params(5), 0.1, 2.0
    lam_eta = lam + 1 / eta
    u0 = -lam * w / lam_eta
    sub = Problem(SP, ConvScoreMap(A, net).linearise(w, u0), y, lam_eta)
    hinge, rng = Hinge(SP), np.random.default_rng(6)
    phi = [net.scores(a, w) for a in A]
    J = ConvScoreMap(A, net).linearise(w, np.zeros(N_PARAMS))
    diffs = []
    for _ in range(4):
        z = rng.normal(size=N_PARAMS) * 0.1
        u = u0 + z
        model = (np.mean(hinge.value_grad([p + J.score(i, u) - J.score(i, 0 * u) for i, p in enumerate(phi)], y)[0])
                 + lam / 2 * np.sum((w + u) ** 2) + np.sum(u ** 2) / (2 * eta))
        diffs.append(sub.primal(hinge, z) - model)
    assert np.ptp(diffs) < 1e-9


def test_prox_linear_accepts_only_decreasing_steps():
    A, y = toy(n=8, seed=7)
    pb = Problem(SP, ConvScoreMap(A, ConvScore()), y, 1 / 8)
    hinge = Hinge(SP)
    for eta, L0 in ((0.5, 1.0), (1e4, 1e-3)):      # a sane step, and one whose steps overshoot
        rule = ProxLinear(hinge, eta=eta, inner_passes=2, mu=1.0, L0=L0, K=3)
        rule.start = init_params(8)
        F0 = pb.primal(hinge, rule.start)
        res = run(rule, pb, n_passes=6, random_state=0)
        F = [F0] + [h["primal"] for h in res.history]
        assert all(b <= a for a, b in zip(F, F[1:]))                  # never goes up
        assert res.history[-1]["primal"] == pytest.approx(pb.primal(hinge, rule.W), rel=1e-12)
        accepted = [h["accepted"] for h in res.history]
        stays = [b == a for a, b in zip(F, F[1:])]
        assert [b - a for a, b in zip([0] + accepted, accepted)] == [0 if s else 1 for s in stays]
        assert res.history[-1]["oracle_calls"] == 6 * 2 * 2 * 8    # 2 inner epochs of 2 calls per step
        if eta == 0.5:   # some steps are refused, the accepted ones lower F by a third
            assert 0 < accepted[-1] < 6 and F[-1] < 0.7 * F0
        else:            # every step overshoots and is refused: the weights never move
            assert accepted[-1] == 0 and np.array_equal(rule.W, rule.start)
    with pytest.raises(StructpredError, match="linearisation"):
        run(ProxLinear(hinge), Problem(SP, CandidateJoint([np.ones((len(a), 2)) for a in A]), y, 0.1), n_passes=1)


def test_nonconvex_sgd_step_by_hand():
    A, y = toy(n=3, seed=9)
    net = ConvScore()
    pb = Problem(SP, ConvScoreMap(A, net), y, 0.5)
    w = init_params(10)
    for schedule, scale in (("const", 1.0), ("sqrt", 1 / np.sqrt(1 + 1 / 3)), ("linear", 1 / (1 + 1 / 3))):
        rule = NonConvexSGD(Hinge(SP), eta0=0.1, schedule=schedule)
        rule.start = w
        rule.init(pb)
        rule.step(0)
        W1 = rule.W.copy()
        v = net.scores(A[1], W1)
        j, star = int(np.argmax(v + y[1])), int(np.argmin(y[1]))
        g = np.zeros(len(v))
        g[j] += 1
        g[star] -= 1
        rule.step(1)                                   # the second step: t = 1
        want = W1 - 0.1 * scale * (net.vjp(A[1], W1, g) + 0.5 * W1)
        np.testing.assert_allclose(rule.W, want, rtol=1e-12, atol=1e-15)
    with pytest.raises(StructpredError, match="schedule"):
        NonConvexSGD(Hinge(SP), schedule="cosine")


def test_nonconvex_experiment_runs_on_a_candidate_file(tmp_path):
    from structpred.vision.voc_localization import build_candidate_file, make_devkit
    from structpred.papers.registry import get

    devkit = make_devkit("synthetic", tmp_path / "devkit",
                         synthetic={"classes": ["aeroplane", "bicycle"], "n_images": 24, "size": [96, 128], "seed": 1})
    path = tmp_path / "aeroplane.npz"
    build_candidate_file(devkit, "aeroplane", path, weights=None, device="cpu", cache_dir=tmp_path / "props", max_boxes=30)
    exp = get("casimir_voc_nonconvex")
    config = {"data": {"voc": {"devkit": "synthetic", "device": "cpu"}},
              "casimir_voc_nonconvex": {"c": 1, "eval_every": 1, "n_seeds": 1, "classes": ["aeroplane"],
                                        "methods": {"PL-Casimir-SVRG": {"n_passes": 3, "eta": 1, "inner_passes": 1, "mu": 10,
                                                                        "smoothing": "adapt", "L0": 1, "K": 10,
                                                                        "warm_start": "prox-centre"},
                                                    "SGD-sqrt": {"n_passes": 2, "eta0": 0.01}},
                                        "run": ["fig7a"], "figures": {"fig7a": {"sweep": "eta",
                                                                                "runs": {"PL-Casimir-SVRG": [0.1, 10]}}}}}
    assert exp.jobs(config) == [("fig7a_aeroplane", "PL-Casimir-SVRG_eta=0.1", 0), ("fig7a_aeroplane", "PL-Casimir-SVRG_eta=10", 0)]
    assert exp.voc_class(config, "fig7a_aeroplane") == "aeroplane"
    settings = exp.settings(config, "fig7a_aeroplane", "PL-Casimir-SVRG_eta=10")
    assert settings["hyper"]["eta"] == 10 and settings["hyper"]["inner_passes"] == 1
    rows, history = exp.run({"candidates": path}, settings, seed=0, dataset="fig7a_aeroplane",
                            method="PL-Casimir-SVRG_eta=10", split=0)
    F = list(history["train_objective"])
    assert len(F) == 4 and all(b <= a for a, b in zip(F, F[1:]))
    assert list(history["oracle_calls_per_n"]) == [0, 2, 4, 6]
    assert history["held_corloc"].between(0, 1).all() and history["held_ap"].between(0, 1).all()
    with pytest.raises(ConfigError, match="fig7a_aeroplane / Adam is not a run of casimir_voc_nonconvex"):
        exp.settings(config, "fig7a_aeroplane", "Adam")
    with pytest.raises(ConfigError, match="'fig7a_cat' is not a figure and class of casimir_voc_nonconvex"):
        exp.voc_class(config, "fig7a_cat")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU visible to torch")
def test_score_on_the_gpu_matches_the_cpu():
    A, _ = toy()
    w, g = init_params(11), np.arange(len(A[0]), dtype=float)
    cpu, gpu = ConvScore("cpu"), ConvScore("cuda")
    np.testing.assert_allclose(gpu.scores(A[0], w), cpu.scores(A[0], w), rtol=1e-10)
    np.testing.assert_allclose(gpu.vjp(A[0], w, g), cpu.vjp(A[0], w, g), rtol=1e-9, atol=1e-12)
