"""SRL pipeline (AGM §4.2): bracket parsing and head rules, Xue-Palmer pruning, the 9 classes
and lost arguments on hand-written sentences; hashed features; the tree_hashed joint map
against a dense reference and as its adjoint; tiny fits; a real-data smoke run."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from structpred.data.srl import (
    SRL_CLASSES,
    Proposition,
    gold_labels,
    ordinal_loss,
    proposition_index,
    propositions,
    pruned_tree,
    role_class,
)
from structpred.data.syntax import head_child, parse_brackets
from structpred.errors import DataError, StructpredError
from structpred.estimators import AGM, CRF, M3N, M4N
from structpred.features.joint import JOINT_MAPS
from structpred.features.srl import _path, _SentenceFeatures, feature_hash, proposition_features, voice
from structpred.features.tree_hashed import TreeFeatures, TreeHashedJoint
from structpred.outputs import Tree, TreeArray
from structpred.solvers import check_problem
from structpred.surrogates import Hinge, LogLoss

C = {c: k for k, c in enumerate(SRL_CLASSES)}

# "The man sold the car to his friend ." with the props of "sell"
ACTIVE = [("The", "DT", "(S1(S(NP*", "- (A0*"), ("man", "NN", "*)", "- *)"), ("sold", "VBD", "(VP*", "sell (V*)"),
          ("the", "DT", "(NP*", "- (A1*"), ("car", "NN", "*)", "- *)"), ("to", "TO", "(PP*", "- (A2*"),
          ("his", "PRP$", "(NP*", "- *"), ("friend", "NN", "*)))", "- *)"), (".", ".", "*))", "- *")]
# "The car was sold by the man ."
PASSIVE = [("The", "DT", "(S1(S(NP*"), ("car", "NN", "*)"), ("was", "AUX", "(VP*"), ("sold", "VBN", "(VP*"),
           ("by", "IN", "(PP*"), ("the", "DT", "(NP*"), ("man", "NN", "*))))"), (".", ".", "*))")]


def tree_of(rows):
    return parse_brackets([r[2] for r in rows], [r[1] for r in rows])


# --- parse trees ---------------------------------------------------------------------------------

def test_brackets_give_labels_spans_parents_and_heads():
    tr = tree_of(ACTIVE)
    assert tr.label == ["S1", "S", "NP", "DT", "NN", "VP", "VBD", "NP", "DT", "NN", "PP", "TO", "NP",
                        "PRP$", "NN", "."]
    assert tr.parent == [-1, 0, 1, 2, 2, 1, 5, 5, 7, 7, 5, 10, 10, 12, 12, 1]
    assert list(zip(tr.start, tr.end)) == [(0, 9), (0, 9), (0, 2), (0, 1), (1, 2), (2, 8), (2, 3), (3, 5), (3, 4),
                                           (4, 5), (5, 8), (5, 6), (6, 8), (6, 7), (7, 8), (8, 9)]
    assert tr.token_node == [3, 4, 6, 8, 9, 11, 13, 14, 15]
    assert tr.children[5] == [6, 7, 10]
    # heads: NP -> noun, VP -> verb, PP -> preposition, S and S1 -> the verb
    assert tr.head == [2, 2, 1, 0, 1, 2, 2, 4, 3, 4, 5, 5, 7, 6, 7, 8]
    passive = tree_of(PASSIVE)
    assert passive.head[passive.token_node[3] - 1] == 3  # inner VP -> sold
    assert passive.head[0] == 2  # VP -> AUX was (Collins' VP rule takes the auxiliary)


@pytest.mark.parametrize("cells, why", [
    (["(S1(NP*", "*)"], "left open"),
    (["(S1*", "*))"], "more phrases"),
    (["(S1*)", "(S1*)"], "second root"),
    (["(S1*", "NP*))"], "malformed"),
    (["*", "*"], "outside"),
])
def test_bad_brackets(cells, why):
    with pytest.raises(DataError, match=why):
        parse_brackets(cells, ["NN"] * len(cells))


@pytest.mark.parametrize("label, children, head", [
    ("NP", ["DT", "JJ", "NN", "POS"], 3), ("NP", ["DT", "NNP", "NNP"], 2), ("NP", ["NP", "PP"], 0),
    ("NP", ["NP", ",", "NP"], 0), ("NP", ["DT", "CD"], 1), ("NP", ["DT", "JJ"], 1), ("NP", ["DT", "DT"], 1),
    ("VP", ["AUX", "VP"], 0), ("VP", ["ADVP", "VBD", "NP"], 1), ("VP", ["VP", "CC", "VP"], 0),
    ("PP", ["IN", "NP"], 0), ("PP", ["RB", "IN", "NP"], 1), ("S", ["NP", "VP", "."], 1),
    ("SBAR", ["WHNP", "S"], 0), ("SBAR", ["IN", "S"], 0), ("ADJP", ["RB", "JJ"], 1), ("ADVP", ["RB", "RB"], 1),
    ("QP", ["$", "CD", "CD"], 0), ("S1", ["S"], 0), ("X", ["NN", "NN"], 0), ("UCP", ["NN", "CC", "JJ"], 2),
])
def test_head_rules(label, children, head):
    assert head_child(label, children) == head


# --- propositions, pruning, labels ---------------------------------------------------------------

def test_propositions_from_props_cells():
    (p,) = propositions([r[3] for r in ACTIVE])
    assert (p.predicate, p.lemma, p.verb) == (2, "sell", (2, 3))
    assert p.arguments == [("A0", 0, 2), ("A1", 3, 5), ("A2", 5, 8)]
    two = propositions(["- (A0*) *", "say (V*) (A1*", "- * *)", "go * (V*)"])
    assert [(q.predicate, q.lemma, q.verb, q.arguments) for q in two] == [
        (1, "say", (1, 2), [("A0", 0, 1)]), (3, "go", (3, 4), [("A1", 1, 3)])]
    with pytest.raises(DataError, match="target verbs"):
        propositions(["- (A0*)", "say (V*)", "go (V*)"])
    with pytest.raises(DataError, match="V bracket"):
        propositions(["- (V*)", "say *"])


def test_role_classes():
    assert [role_class(r) for r in ("A0", "A1", "A2", "R-A0", "R-A1", "R-A2")] == [2, 3, 4, 5, 6, 7]
    assert {role_class(r) for r in ("A3", "A4", "AM-TMP", "AM-MOD", "C-A1", "R-AM-LOC", "C-V", "AA")} == {C["R"]}
    with pytest.raises(DataError):
        role_class("V")
    assert len(SRL_CLASSES) == 9 and SRL_CLASSES[0] == "O" and SRL_CLASSES[1] == "V"


def test_xue_palmer_pruning_and_gold_labels():
    tr = tree_of(ACTIVE)
    nodes, parents, kinds = pruned_tree(tr, 2)
    # the predicate's sisters NP, PP (and the PP's children TO, NP), then the VP's sisters NP, .
    assert nodes.tolist() == [0, 1, 2, 5, 6, 7, 10, 11, 12, 15]
    assert parents.tolist() == [-1, 0, 1, 1, 3, 3, 3, 6, 6, 1]
    assert kinds.tolist() == [1, 1, 2, 1, 0, 2, 2, 3, 3, 2]
    (prop,) = propositions([r[3] for r in ACTIVE])
    got = gold_labels(tr, nodes, prop)
    assert [SRL_CLASSES[k] for k in got.labels] == ["O", "O", "A0", "O", "V", "A1", "A2", "O", "O", "O"]
    assert (got.n_arguments, got.no_constituent, got.pruned) == (3, 0, 0)


def test_lost_arguments():
    tr = tree_of(ACTIVE)
    nodes, _, _ = pruned_tree(tr, 2)
    # "The" is a constituent (DT inside the subject NP) but pruned; "man sold" is no constituent;
    # "his friend" is a PP child (kept); "." is a sister; a second A1 on "the car" clashes
    prop = Proposition(2, "sell", (2, 3), [("A0", 0, 1), ("AM-TMP", 1, 3), ("R-A1", 6, 8), ("AM-LOC", 8, 9),
                                           ("A1", 3, 5), ("A1", 3, 5)])
    got = gold_labels(tr, nodes, prop)
    assert [SRL_CLASSES[k] for k in got.labels] == ["O", "O", "O", "O", "V", "A1", "O", "O", "R-A1", "R"]
    assert (got.n_arguments, got.no_constituent, got.pruned) == (6, 1, 2)


def test_ordinal_loss_after_a_seeded_order(caplog):
    with caplog.at_level(logging.INFO, logger="structpred.data.srl"):
        Cm, order = ordinal_loss(3)
    assert " < ".join(order) in caplog.text
    assert sorted(order) == sorted(SRL_CLASSES)
    rank = {c: order.index(c) for c in SRL_CLASSES}
    for a in SRL_CLASSES:
        for b in SRL_CLASSES:
            assert Cm[C[a], C[b]] == abs(rank[a] - rank[b])
    assert np.array_equal(ordinal_loss(3)[0], Cm) and ordinal_loss(4)[1] != order
    assert Cm.max() == 8 and np.array_equal(Cm, Cm.T)


# --- features --------------------------------------------------------------------------------------

def test_voice_and_paths():
    words = [r[0] for r in PASSIVE]
    tr = tree_of(PASSIVE)
    assert voice(tr, words, 3) == "passive"
    assert voice(tree_of(ACTIVE), [r[0] for r in ACTIVE], 2) == "active"
    perfect = parse_brackets(["(S1(S(NP*)", "(VP*", "(VP*", "(NP*)))", "*))"], ["PRP", "AUX", "VBN", "NN", "."])
    assert voice(perfect, ["He", "has", "sold", "cars", "."], 2) == "active"
    reduced = parse_brackets(["(S1(NP(NP*", "*)", "(VP*", "(NP*))))"], ["DT", "NN", "VBN", "NN"])
    assert voice(reduced, ["the", "car", "sold", "yesterday"], 2) == "passive"
    chain = [tr.token_node[3]]
    while tr.parent[chain[-1]] >= 0:
        chain.append(tr.parent[chain[-1]])
    at = {m: k for k, m in enumerate(chain)}
    assert _path(tr, 2, at, chain) == ("NP^S!VP!VP!VBN", "NP^S", 4)
    assert _path(tr, 9, at, chain) == ("PP^VP!VBN", "PP^VP", 2)
    assert _path(tr, 5, at, chain) == ("VP!VP!VBN", "VP", 2)
    assert _path(tr, 1, at, chain) == ("S!VP!VP!VBN", "S", 3)


def test_feature_hashing_is_deterministic():
    assert feature_hash("pt=NP") == 4069483941 and feature_hash("b") == 1908338681
    tr = tree_of(ACTIVE)
    (prop,) = propositions([r[3] for r in ACTIVE])
    nodes, _, kinds = pruned_tree(tr, 2)
    words, pos = [r[0] for r in ACTIVE], [r[1] for r in ACTIVE]
    nf, ef = proposition_features(_SentenceFeatures(tr, words, pos), prop, nodes, kinds)
    again = proposition_features(_SentenceFeatures(tr, words, pos), prop, nodes, kinds)
    assert (nf, ef) == again
    car = nodes.tolist().index(7)  # NP "the car"
    for f in ("pt=NP", "hw=car", "hp=NN", "fw=the", "lw=car", "par=VP", "ls=VBD", "rs=PP", "lem=sell",
              "voice=active", "sub=VP>VBD_NP_PP", "path=NP^VP!VBD", "pp=NP^VP", "len=2", "pos=after",
              "kind=sister", "lem|hw=sell|car", "pt|pos|voice=NP|after|active", "b"):
        assert feature_hash(f) in nf[car], f
    assert len(nf[car]) == 25 and len(set(nf[car])) == 25
    pp = nodes.tolist().index(10)
    assert feature_hash("ppo=friend") in nf[pp]
    assert ef[0] == [] and ef[car] == [feature_hash(f) for f in ("eb", "ep=VP", "ec=NP")]


# --- the joint map ---------------------------------------------------------------------------------

def random_features(rng, sizes, n_bits=7):
    """TreeFeatures of random trees with random hashes (few bits: collisions happen)."""
    parents = [np.r_[-1, [rng.integers(0, t) for t in range(1, T)]] for T in sizes]
    N = sum(sizes)
    nlen = rng.integers(0, 4, N)
    elen = rng.integers(0, 3, N)
    roots = np.r_[0, np.cumsum(sizes)[:-1]]
    elen[roots] = 0
    return TreeFeatures(np.r_[0, np.cumsum(sizes)], np.concatenate(parents), np.r_[0, np.cumsum(nlen)],
                        rng.integers(0, 2**32, nlen.sum()), np.r_[0, np.cumsum(elen)],
                        rng.integers(0, 2**32, elen.sum()), n_bits)


def dense_psi(X, i, R):
    """Explicit ``Psi_i`` of shape ``(dim, T R + (T-1) R^2)``: the index ``(506447 + 961 j + 31 f + b) mod dim``."""
    a, b = X.offsets[i], X.offsets[i + 1]
    T, dim = b - a, X.dim
    P = np.zeros((dim, T * R + (T - 1) * R * R))
    for t in range(T):
        for f in X.node_ids[X.node_ptr[a + t]: X.node_ptr[a + t + 1]]:
            for y in range(R):
                P[(506447 + 31 * int(f) + y) % dim, t * R + y] += 1
        if t:
            for e in X.edge_ids[X.edge_ptr[a + t]: X.edge_ptr[a + t + 1]]:
                for pc in range(R * R):
                    P[(506447 + 961 + 31 * int(e) + pc) % dim, T * R + (t - 1) * R * R + pc] += 1
    return P


def test_joint_map_scores_match_a_dense_reference_and_add_is_its_adjoint():
    rng = np.random.default_rng(0)
    R = 3
    X = random_features(rng, [1, 2, 5, 7])
    fmap = TreeHashedJoint(X, R)
    assert JOINT_MAPS["tree_hashed"] is TreeHashedJoint
    assert (fmap.n, fmap.n_features, fmap.weight_shape) == (4, 128, (128,))
    W = rng.normal(size=128)
    for i, v in enumerate(fmap.scores(W)):
        P = dense_psi(X, i, R)
        assert isinstance(v, TreeArray) and np.array_equal(v.parents, X.trees[i])
        np.testing.assert_allclose(v, P.T @ W, rtol=0, atol=1e-12)
        G = rng.normal(size=v.shape[0])
        G[rng.random(G.shape[0]) < 0.3] = 0.0
        acc = W.copy()
        fmap.add(i, acc, TreeArray(G, X.trees[i]))
        np.testing.assert_allclose(acc - W, P @ G, rtol=0, atol=1e-12)
        assert abs(float(v @ G) - float(W @ (acc - W))) < 1e-10
        assert abs(fmap.norm2(i, G) - float(np.sum((P @ G) ** 2))) < 1e-9
        assert not fmap._scratch.any()


def test_tree_features_checks():
    ok = dict(offsets=[0, 2], parents=[-1, 0], node_ptr=[0, 1, 2], node_ids=[5, 6], edge_ptr=[0, 0, 1],
              edge_ids=[7], n_bits=4)
    assert TreeFeatures(**ok).n == 1
    for bad, match in (({"parents": [-1, -1]}, "forests"), ({"edge_ptr": [0, 1, 1]}, "root"),
                       ({"node_ptr": [0, 2]}, "node_ptr"), ({"offsets": [0, 1]}, "offsets"),
                       ({"node_ids": [-1, 6]}, "non-negative"), ({"n_bits": 0}, "n_bits")):
        with pytest.raises(StructpredError, match=match):
            TreeFeatures(**{**ok, **bad})
    with pytest.raises(StructpredError, match="TreeFeatures"):
        TreeHashedJoint(np.zeros((2, 2)), 3)


def separable_problem(rng, n=12):
    """Random trees whose node labels are a function of one node feature (learnable)."""
    X = random_features(rng, rng.integers(2, 7, n).tolist(), n_bits=10)
    y, ids = [], X.node_ids.copy()
    for i in range(X.n):
        a, b = X.offsets[i], X.offsets[i + 1]
        lab = rng.integers(0, 3, b - a)
        for t in range(b - a):
            s, e = X.node_ptr[a + t], X.node_ptr[a + t + 1]
            if e > s:
                ids[s] = 1000 + lab[t]  # the first feature names the label
        y.append(TreeArray(lab, X.trees[i]))
    X = TreeFeatures(X.offsets, np.concatenate(X.trees), X.node_ptr, ids, X.edge_ptr, X.edge_ids, X.n_bits)
    return X, y


@pytest.mark.parametrize("Est, surrogate", [(M3N, Hinge), (CRF, LogLoss), (M4N, None), (AGM, None)])
def test_tiny_fits_on_per_example_trees_decrease_the_objective(Est, surrogate):
    X, y = separable_problem(np.random.default_rng(1))
    space = Tree(3, "absolute", joint_map="tree_hashed")
    est = Est(loss=space, lam=1e-2, n_passes=8, random_state=0).fit(X, y)
    primal = est.history_["primal"].to_numpy()
    assert primal[-1] < primal[0]
    if surrogate is not None:
        pb = check_problem(space, X, y, 1e-2)
        s = surrogate(space)
        assert pb.primal(s, est.coef_) < pb.primal(s, np.zeros(X.dim))
    pred = est.predict(X)
    assert all(isinstance(p, TreeArray) and np.array_equal(p.parents, t.parents) for p, t in zip(pred, y))
    assert est.task_loss(X, y) < np.mean(space.loss(y, [TreeArray(np.ones_like(t), t.parents) for t in y]))


# --- real data ---------------------------------------------------------------------------------------

def test_first_train_propositions_of_conll2005(mirror):
    from structpred.data.parsers import parse_view
    from structpred.features.srl import srl_examples

    arrays = parse_view("conll2005", mirror / "conll2005")
    assert proposition_index(arrays, "train").shape == (90750, 2)
    ex = srl_examples(arrays, "train", range(50), n_bits=18)
    assert ex.X.n == 50 and ex.X.dim == 2**18 and ex.index[:3].tolist() == [[0, 0], [0, 1], [0, 2]]
    assert [int(v) for v in np.flatnonzero(ex.y[0])] == [15, 16] and ex.y[0][15] == C["V"]
    assert all(int((t == C["V"]).sum()) == 1 for t in ex.y)
    assert all(np.array_equal(t.parents, p) for t, p in zip(ex.y, ex.X.trees))
    st = ex.stats
    assert (st["propositions"], st["nodes_max"], st["arguments"]) == (50, 42, 135)
    assert (st["lost_no_constituent"], st["lost_pruned"]) == (5, 5)
    assert st["class_counts"] == {"O": 731, "V": 50, "A0": 35, "A1": 46, "A2": 3, "R-A0": 3, "R-A1": 0,
                                  "R-A2": 0, "R": 38}
    assert st["nodes_mean"] == pytest.approx(906 / 50)
    assert sum(st["class_counts"].values()) == 906
