"""The compiled passes on a chain's oracles for the hashed window map (``outputs/_chain_oracles.py``) against
the generic path (the rules' per-sample steps through the surrogates): bitwise the same weights,
histories and evaluations for every method of the casimir_ner experiment."""

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.papers.casimir import ner as casimir
from structpred.features.hashed import WindowTokens
from structpred.outputs import Chain
from structpred.outputs._chain_oracles import HashedChainOracles
from structpred.solvers import Problem, check_problem, run
from structpred.solvers._compiled_passes import bcfw_move
from structpred.surrogates import EntropySmoothedHinge, Hinge, TopKSmoothedHinge

TAGS = ["O", "I-PER", "I-LOC", "B-LOC"]
SVRG = {"lr": 0.02, "mu": 1, "K": 5}
CONST = {"L": 32, "mu": 1, "K": 5, "mu_schedule": "const", "warm_start": "prev-iterate"}
ADAPT = {"lr": 0.02, "mu": 2, "K": 5, "mu_schedule": "expo", "warm_start": "extrapolation"}
#: every (method, settings) of casimir_ner's figures: Fig. 2, the mu sweep, smooth vs
#: non-smooth, the warm starts, K
RUNS = [("SGD", {"eta0": 0.04, "t0": 50}), ("BCFW", {}), ("SVRG", SVRG), ("Casimir-SVRG-const", CONST),
        ("Casimir-SVRG-adapt", ADAPT), ("Casimir-SVRG-const", {**CONST, "mu": 8}),
        ("SVRG", {**SVRG, "smoothing": "nonsmooth"}), ("Casimir-SVRG-const", {**CONST, "smoothing": "nonsmooth"})]
RUNS += [(m, {**hp, "warm_start": w}) for m, hp in (("Casimir-SVRG-const", CONST), ("Casimir-SVRG-adapt", ADAPT))
         for w in ("prox-centre", "extrapolation", "prev-iterate")]
RUNS += [(m, {**hp, "K": K}) for m, hp in (("Casimir-SVRG-const", CONST), ("Casimir-SVRG-adapt", ADAPT))
         for K in (2, 10)]


def tagging(seed, n):
    """Toy sentences of 1 to 8 tokens whose tags mostly follow the words."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, size=n)
    words = rng.integers(1, 30, size=lengths.sum())
    X = WindowTokens(np.c_[words, rng.integers(0, 5, words.size), rng.integers(0, 3, words.size)],
                     np.r_[0, np.cumsum(lengths)])
    tags = np.where(rng.random(words.size) < 0.8, words % 4, rng.integers(0, 4, words.size))
    return X, np.split(tags, np.cumsum(lengths)[:-1])


@pytest.fixture
def generic(monkeypatch):
    """Switch the compiled passes off: the rules step through the surrogates, BCFW runs the
    generic loop."""
    def use_generic():
        monkeypatch.setattr(Problem, "compiled", property(lambda self: None))
    return use_generic


def space():
    return Chain(len(TAGS), "hamming", normalize=False, joint_map="hashed_window")


def train(method, hp, X, y):
    sp = space()
    problem = check_problem(sp, X, y, 0.1 / X.n)
    rule = casimir.make_rule(method, hp, sp)
    res = run(rule, problem, n_passes=3, random_state=np.random.default_rng(3))
    return res, rule


def same_history(a, b):
    assert [sorted(h) for h in a] == [sorted(h) for h in b]
    for key in a[0]:
        if key != "seconds":
            assert np.array_equal([h[key] for h in a], [h[key] for h in b]), key


@pytest.mark.parametrize(("method", "hp"), RUNS)
def test_passes_are_bitwise_those_of_the_generic_steps(method, hp, generic):
    X, y = tagging(0, 40)
    fast, fast_rule = train(method, hp, X, y)
    generic()
    slow, slow_rule = train(method, hp, X, y)
    if method == "BCFW":
        assert isinstance(fast_rule.kernels.corner.__self__, HashedChainOracles)
        assert fast_rule.kernels.toward.func is bcfw_move
        assert slow_rule.kernels.corner.__self__ is slow_rule.kernels
        assert np.array_equal(np.concatenate(fast.mu), np.concatenate(slow.mu))
    else:
        assert isinstance(fast_rule.kernels.space_oracles, HashedChainOracles) and slow_rule.kernels is None
    assert np.array_equal(fast.W, slow.W)
    assert np.array_equal(fast_rule.W, slow_rule.W)
    same_history(fast.history, slow.history)
    assert fast.history[-1]["oracle_calls"] == slow.history[-1]["oracle_calls"]


@pytest.mark.parametrize("method", ["SGD", "Casimir-SVRG-adapt"])
def test_experiment_records_are_bitwise_those_of_the_generic_path(method, generic):
    parts = {"train": tagging(0, 30), "testa": tagging(1, 20), "testb": tagging(2, 20)}
    hp = dict(RUNS[0][1] if method == "SGD" else ADAPT, n_passes=2)
    job = casimir.NerJob(figure="fig2", c=0.1, method=method, variant="", hyper=hp, word_threshold=0, eval_every=1)
    fast = casimir.train_run(parts, TAGS, job, np.random.default_rng(0))
    generic()
    slow = casimir.train_run(parts, TAGS, job, np.random.default_rng(0))
    same_history(fast, slow)
    assert fast[0]["train_objective"] == pytest.approx(np.mean([len(s) for s in parts["train"][1]]))


@pytest.mark.parametrize("surrogate", [lambda sp: Hinge(sp), lambda sp: TopKSmoothedHinge(sp, mu=0.7, K=3)])
def test_evaluation_is_bitwise_that_of_value_grad_and_decode(surrogate):
    X, y = tagging(4, 50)
    sp = space()
    sur = surrogate(sp)
    problem = check_problem(sp, X, y, 0.01)
    W = np.random.default_rng(0).normal(size=problem.fmap.weight_shape)
    assert problem.primal_kernels(sur) is problem.compiled is not None
    values, pred = problem.evaluate(sur, W)
    V = problem.fmap.scores(W)
    assert np.array_equal(values, sur.value_grad(V, problem.y)[0])
    assert all(np.array_equal(a, b) for a, b in zip(pred, sp.decode(V)))
    W[:] = np.nan
    with pytest.raises(StructpredError, match="NaN or infinite"):
        problem.evaluate(sur, W)


def test_only_the_hashed_map_and_the_compiled_oracles_take_the_compiled_path():
    X, y = tagging(0, 10)
    sp = space()
    problem = check_problem(sp, X, y, 0.1)
    assert problem.primal_kernels(EntropySmoothedHinge(sp)) is None
    seq = Chain(len(TAGS))
    other = check_problem(seq, [np.ones((len(s), 2)) for s in y], y, 0.1)
    # the dense sequence map compiles the dual passes only (outputs/_sequence_oracles.py)
    assert other.compiled.oracles == () and other.primal_kernels(Hinge(seq)) is None
