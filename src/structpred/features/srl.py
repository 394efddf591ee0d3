"""SRL node and edge features of Xue & Palmer (2004) / Cohn & Blunsom (2005), hashed (AGM §4.2).

For a proposition's pruned tree (:mod:`structpred.data.srl`), each node ``n`` (predicate ``p``)
gets the feature strings (``template=value``; words lower-cased):

* the constituent: ``pt`` phrase type, ``hw`` / ``hp`` head word and its POS (Collins' head
  rules), ``fw`` / ``fp`` / ``lw`` / ``lp`` first and last word and POS, ``par`` parent's
  phrase type, ``ls`` / ``rs`` left and right sisters' phrase types in the parse, ``ppo`` the
  head word of a PP's last child (its object), ``hw|pt``;
* the predicate: ``lem`` its lemma (its word if the lemma is missing), ``voice`` (passive: a
  VBN under a chain of VPs one of which has an earlier be / get form among its children, or
  whose chain hangs from an NP: a reduced relative), ``sub`` subcategorisation (the rule
  expanding the predicate's parent, ``VP>VBD_NP_PP``);
* the relation: ``path`` the parse path from ``n`` up to the lowest common ancestor and down
  to ``p`` (``NP^S!VP!VBD``), ``pp`` partial path (up to the ancestor), ``len`` path length,
  ``pos`` position before / after / over the predicate, ``kind`` predicate / ancestor / sister
  / PP child (:func:`~structpred.data.srl.pruned_tree`);
* conjunctions: ``lem|pt``, ``lem|hw``, ``lem|path``, ``voice|pos``, ``pt|pos|voice``;
* a bias ``b``.

Each edge (parent -> child) gets a bias and the two phrase types.  Strings are hashed by
CRC-32 (deterministic across runs and machines) and tensored with the labels by
:class:`~structpred.features.tree_hashed.TreeHashedJoint` into ``2^n_bits`` weights.
:func:`srl_examples` builds ``(X, y)`` for a part of the ``conll2005`` view.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass

import numpy as np

from structpred.data.srl import SRL_CLASSES, gold_labels, proposition_index, pruned_tree, sentence
from structpred.data.syntax import ParseTree
from structpred.features.tree_hashed import TreeFeatures
from structpred.features.tree_array import TreeArray

log = logging.getLogger(__name__)

PASSIVE_AUX = frozenset("be am is are was were been being 's 're 'm get gets got gotten getting".split())
KINDS = ("predicate", "ancestor", "sister", "pp_child")


def feature_hash(s: str) -> int:
    """CRC-32 of the UTF-8 string: the hash of a feature string."""
    return zlib.crc32(s.encode("utf-8"))


def voice(tree: ParseTree, words, predicate: int) -> str:
    """``passive`` or ``active`` for the predicate token (module docstring)."""
    cur = tree.token_node[predicate]
    if tree.label[cur] != "VBN":
        return "active"
    while tree.parent[cur] >= 0 and tree.label[tree.parent[cur]] == "VP":
        par = tree.parent[cur]
        for k in tree.children[par]:
            if k == cur:
                break
            if tree.is_preterminal(k) and words[tree.start[k]].lower() in PASSIVE_AUX:
                return "passive"
        cur = par
    return "passive" if tree.parent[cur] >= 0 and tree.label[tree.parent[cur]] == "NP" else "active"


class _SentenceFeatures:
    """Per-sentence cache of the hashed predicate-independent features of parse nodes."""

    def __init__(self, tree: ParseTree, words, pos):
        self.tree, self.words, self.pos = tree, [w.lower() for w in words], pos
        self.cache: dict[int, list[int]] = {}

    def constituent(self, n: int) -> list[int]:
        out = self.cache.get(n)
        if out is None:
            tr, w, p = self.tree, self.words, self.pos
            par = tr.parent[n]
            sis = tr.children[par] if par >= 0 else [n]
            k = sis.index(n)
            feats = [f"pt={tr.label[n]}", f"hw={w[tr.head[n]]}", f"hp={p[tr.head[n]]}",
                     f"fw={w[tr.start[n]]}", f"fp={p[tr.start[n]]}", f"lw={w[tr.end[n] - 1]}",
                     f"lp={p[tr.end[n] - 1]}", f"par={tr.label[par] if par >= 0 else '-'}",
                     f"ls={tr.label[sis[k - 1]] if k > 0 else '-'}",
                     f"rs={tr.label[sis[k + 1]] if k + 1 < len(sis) else '-'}",
                     f"hw|pt={w[tr.head[n]]}|{tr.label[n]}", "b"]
            if tr.label[n] == "PP" and len(tr.children[n]) > 1:
                feats.append(f"ppo={w[tr.head[tr.children[n][-1]]]}")
            out = self.cache[n] = [feature_hash(f) for f in feats]
        return out


def _path(tree: ParseTree, n: int, pred_chain: dict[int, int], chain: list[int]) -> tuple[str, str, int]:
    """(path, partial path, length) from parse node ``n`` to the predicate (``chain``: the
    predicate's node and its ancestors, ``pred_chain``: node -> position in it)."""
    up = [n]
    while up[-1] not in pred_chain:
        up.append(tree.parent[up[-1]])
    down = chain[: pred_chain[up[-1]]][::-1]
    partial = "^".join(tree.label[m] for m in up)
    path = partial + "".join("!" + tree.label[m] for m in down)
    return path, partial, len(up) + len(down) - 1


def proposition_features(sf: _SentenceFeatures, prop, nodes, kinds) -> tuple[list[list[int]], list[list[int]]]:
    """Hashed node features and parent-edge features of one proposition's pruned tree."""
    tree = sf.tree
    pnode = tree.token_node[prop.predicate]
    chain = [pnode]
    while tree.parent[chain[-1]] >= 0:
        chain.append(tree.parent[chain[-1]])
    at = {m: k for k, m in enumerate(chain)}
    lemma = prop.lemma if prop.lemma not in ("", "-") else sf.words[prop.predicate]
    vc = voice(tree, sf.words, prop.predicate)
    ppar = tree.parent[pnode]
    sub = tree.label[ppar] + ">" + "_".join(tree.label[k] for k in tree.children[ppar]) if ppar >= 0 else "-"
    shared = [feature_hash(f) for f in (f"lem={lemma}", f"voice={vc}", f"sub={sub}")]
    node_feats, edge_feats = [], []
    for n, kind in zip(nodes.tolist(), kinds.tolist()):
        path, partial, length = _path(tree, n, at, chain)
        where = ("before" if tree.end[n] <= prop.predicate else
                 "after" if tree.start[n] > prop.predicate else "over")
        pt, hw = tree.label[n], sf.words[tree.head[n]]
        rel = [f"path={path}", f"pp={partial}", f"len={length}", f"pos={where}", f"kind={KINDS[kind]}",
               f"lem|pt={lemma}|{pt}", f"lem|hw={lemma}|{hw}", f"lem|path={lemma}|{path}",
               f"voice|pos={vc}|{where}", f"pt|pos|voice={pt}|{where}|{vc}"]
        node_feats.append(sf.constituent(n) + shared + [feature_hash(f) for f in rel])
        par = tree.parent[n]
        edge_feats.append([] if par < 0 else
                          [feature_hash(f) for f in ("eb", f"ep={tree.label[par]}", f"ec={pt}")])
    return node_feats, edge_feats


@dataclass
class SrlExamples:
    """Propositions of one part: ``X`` (the ``tree_hashed`` map's input), ``y`` gold labels as
    TreeArrays on each proposition's tree, ``index`` ``(n, 2)`` (sentence, proposition within
    it), ``nodes`` the parse node ids of each tree, ``stats`` counts (:func:`srl_examples`)."""

    X: TreeFeatures
    y: list
    index: np.ndarray
    nodes: list
    stats: dict


def srl_examples(arrays, part: str, indices=None, n_bits: int = 20) -> SrlExamples:
    """Features and gold trees of the propositions ``indices`` (positions in
    :func:`~structpred.data.srl.proposition_index` of ``part``; all if None) of a ``conll2005``
    view, hashed into ``2^n_bits`` weights.  ``stats``: ``propositions``, ``nodes`` (mean and
    max per tree), ``class_counts`` (per class name), ``arguments``, ``lost_no_constituent``,
    ``lost_pruned``, ``lost_fraction``; logged."""
    index = proposition_index(arrays, part)
    if indices is not None:
        index = index[np.asarray(indices, dtype=np.int64)]
    parents, offsets, node_ids, node_len, edge_ids, edge_len = [], [0], [], [], [], []
    y, nodes_of = [], []
    counts = np.zeros(len(SRL_CLASSES), dtype=np.int64)
    n_args = no_const = pruned = 0
    cur, sent, sf = -1, None, None
    for s, k in index.tolist():
        if s != cur:
            cur, sent = s, sentence(arrays, s)
            sf = _SentenceFeatures(sent.tree, sent.words, sent.pos)
        prop = sent.propositions[k]
        nodes, par, kinds = pruned_tree(sent.tree, prop.predicate)
        gold = gold_labels(sent.tree, nodes, prop)
        nf, ef = proposition_features(sf, prop, nodes, kinds)
        node_ids.append(np.array([h for f in nf for h in f], dtype=np.int64))
        edge_ids.append(np.array([h for f in ef for h in f], dtype=np.int64))
        node_len += map(len, nf)
        edge_len += map(len, ef)
        parents.append(par)
        offsets.append(offsets[-1] + len(nodes))
        y.append(gold.labels)
        nodes_of.append(nodes)
        counts += np.bincount(gold.labels, minlength=len(SRL_CLASSES))
        n_args, no_const, pruned = n_args + gold.n_arguments, no_const + gold.no_constituent, pruned + gold.pruned
    X = TreeFeatures(offsets, np.concatenate(parents), np.r_[0, np.cumsum(node_len)], np.concatenate(node_ids),
                     np.r_[0, np.cumsum(edge_len)], np.concatenate(edge_ids), n_bits)
    sizes = X.lengths
    stats = {"part": part, "propositions": X.n, "nodes_mean": float(sizes.mean()), "nodes_max": int(sizes.max()),
             "class_counts": dict(zip(SRL_CLASSES, counts.tolist())), "arguments": n_args,
             "lost_no_constituent": no_const, "lost_pruned": pruned,
             "lost_fraction": (no_const + pruned) / max(n_args, 1)}
    log.info("SRL %s: %d propositions, %.1f nodes per tree (max %d), %d arguments, lost %d (%.2f%%: %d without "
             "a constituent, %d pruned); classes %s", part, X.n, stats["nodes_mean"], stats["nodes_max"], n_args,
             no_const + pruned, 100 * stats["lost_fraction"], no_const, pruned, stats["class_counts"])
    return SrlExamples(X, [TreeArray(lab, tr) for lab, tr in zip(y, X.trees)], index, nodes_of, stats)


__all__ = ["KINDS", "SrlExamples", "feature_hash", "proposition_features", "srl_examples", "voice"]
