"""CoNLL-2005 propositions on Xue-Palmer pruned parse trees, labelled with AGM's 9 classes (AGM §4.2).

A proposition is a target verb (a token whose first props column is its lemma, not ``-``) and
its arguments, the brackets ``(A0* ... *)`` of its own props column.  Its output tree:

* **Candidates** (Xue & Palmer 2004, §3.1): from the predicate's preterminal up to the root,
  every sister of the current node, and the children of every sister labelled PP.  Sisters
  coordinated with the predicate are kept (Xue-Palmer drop them; keeping them loses no
  argument).
* **Tree**: the candidates plus the path nodes (the predicate's preterminal and its
  ancestors, the root included) with the edges of the parse tree between them.  Every
  candidate's parse parent is in the set (a sister's parent is a path node, a PP child's
  parent a sister), so this is the parse tree restricted to these nodes, rooted at the
  parse root, as in Cohn & Blunsom's tree CRF (2005).  Nodes keep the parse's preorder, so
  ``parents[t] < t``: the layout of :class:`structpred.outputs.Tree`.
* **Gold labels**: the predicate's preterminal is ``V``; a non-V argument goes to the first
  node (in preorder) of the tree whose span equals the argument's span and that has no label
  yet, with its role mapped to :data:`SRL_CLASSES` by :func:`role_class`; every other node is
  ``O`` (non-arguments, path nodes, children of arguments).  An argument with no such node is
  *lost*: ``no_constituent`` when no node of the whole parse has its span (a parser error or
  a discontinuous piece), ``pruned`` when one has but the pruning dropped it (or it clashes
  with the predicate or another argument).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from structpred.data.syntax import ParseTree, parse_brackets
from structpred.errors import DataError

log = logging.getLogger(__name__)

#: AGM's 9 classes: O, V, the three most frequent core roles and their references, R = the rest
SRL_CLASSES = ("O", "V", "A0", "A1", "A2", "R-A0", "R-A1", "R-A2", "R")
O, V, R_OTHER = 0, 1, len(SRL_CLASSES) - 1
_CLASS_ID = {c: k for k, c in enumerate(SRL_CLASSES)}


def role_class(role: str) -> int:
    """The class id of a CoNLL-2005 argument role: its own class if listed (A0 ... R-A2), else R."""
    k = _CLASS_ID.get(role, R_OTHER)
    if k in (O, V):
        raise DataError(f"{role!r} is not an argument role")
    return k


def class_order(seed: int) -> tuple[np.ndarray, list[str]]:
    """A random order ``r`` of the classes drawn from ``seed`` (AGM §4.2): ``(r (9,), the class
    names in that order)``, ``r[k]`` the rank of class ``k``; the order is logged."""
    R = len(SRL_CLASSES)
    order = np.random.default_rng(seed).permutation(R)
    rank = np.empty(R, dtype=np.int64)
    rank[order] = np.arange(R)
    names = [SRL_CLASSES[k] for k in order]
    log.info("SRL ordinal loss, class order from seed %d: %s", seed, " < ".join(names))
    return rank, names


def ordinal_loss(seed: int) -> tuple[np.ndarray, list[str]]:
    """The absolute loss ``|r(i) - r(j)|`` after the random order ``r`` of :func:`class_order`:
    ``(C (9, 9), class names in that order)``."""
    rank, names = class_order(seed)
    return np.abs(rank[:, None] - rank[None, :]).astype(np.float64), names


@dataclass
class Proposition:
    """A target verb (``predicate`` token, ``lemma``), the span of its ``V`` bracket and its
    other arguments as ``(role, start, end)`` token spans (``end`` exclusive)."""

    predicate: int
    lemma: str
    verb: tuple[int, int]
    arguments: list[tuple[str, int, int]]


def propositions(props) -> list[Proposition]:
    """The propositions of one sentence from its props cells (``lemma col_1 ... col_k`` per token)."""
    rows = [str(c).split() for c in props]
    targets = [t for t, r in enumerate(rows) if r[0] != "-"]
    if any(len(r) != len(targets) + 1 for r in rows):
        raise DataError(f"{len(targets)} target verbs but props rows of {sorted({len(r) - 1 for r in rows})} columns")
    out = []
    for k, pred in enumerate(targets):
        spans, open_ = [], []
        for t, r in enumerate(rows):
            opens, star, closes = r[k + 1].partition("*")
            if not star:
                raise DataError(f"malformed props cell {r[k + 1]!r} at token {t}")
            open_ += [(role, t) for role in opens.split("(")[1:]]
            for _ in closes:
                if not open_:
                    raise DataError(f"props column {k + 1} closes an argument it never opened at token {t}")
                role, s = open_.pop()
                spans.append((role, s, t + 1))
        if open_:
            raise DataError(f"props column {k + 1} leaves {len(open_)} arguments open")
        verb = [(s, e) for role, s, e in spans if role == "V"]
        if len(verb) != 1 or not verb[0][0] <= pred < verb[0][1]:
            raise DataError(f"props column {k + 1}: the V bracket {verb} does not hold the target verb {pred}")
        out.append(Proposition(pred, rows[pred][0], verb[0], [a for a in spans if a[0] != "V"]))
    return out


@dataclass
class Sentence:
    """One sentence of the view: token columns, parse tree and propositions."""

    words: list[str]
    pos: list[str]
    tree: ParseTree
    propositions: list[Proposition]


def sentence(arrays, s: int) -> Sentence:
    """Sentence ``s`` of a ``conll2005`` view (:func:`structpred.data.text.parse_conll2005`)."""
    a, b = int(arrays["offsets"][s]), int(arrays["offsets"][s + 1])
    cols = {c: arrays[f"{c}_vocab"][arrays[c][a:b]].tolist() for c in ("words", "pos", "parse", "props")}
    try:
        return Sentence(cols["words"], cols["pos"], parse_brackets(cols["parse"], cols["pos"]),
                        propositions(cols["props"]))
    except DataError as err:
        raise DataError(f"conll2005 sentence {s}: {err}") from None


def proposition_index(arrays, part: str) -> np.ndarray:
    """``(n, 2)`` int64 rows ``(sentence, k)``: the propositions of ``part`` in document order."""
    sents = np.flatnonzero(np.asarray(arrays["part"]).astype(str) == part)
    if sents.size == 0:
        raise DataError(f"no sentences in part {part!r} (parts: {', '.join(dict.fromkeys(arrays['part']))})")
    first = arrays["props_vocab"][arrays["props"][arrays["offsets"][sents]]]
    counts = np.array([len(c.split()) - 1 for c in first], dtype=np.int64)
    rows = np.repeat(sents, counts)
    k = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.c_[rows, k].astype(np.int64)


def pruned_tree(tree: ParseTree, predicate: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Xue-Palmer tree of the predicate token: ``(nodes, parents, kinds)``, ``nodes`` the parse
    node ids in preorder, ``parents`` local indices (-1: root), ``kinds`` per node 0 = predicate,
    1 = ancestor, 2 = sister, 3 = child of a PP sister."""
    cur = tree.token_node[predicate]
    kind = {cur: 0}
    while tree.parent[cur] >= 0:
        par = tree.parent[cur]
        kind[par] = 1
        for sis in tree.children[par]:
            if sis != cur:
                kind[sis] = 2
                if tree.label[sis] == "PP":
                    kind.update((c, 3) for c in tree.children[sis])
        cur = par
    nodes = np.array(sorted(kind), dtype=np.int64)
    local = {n: t for t, n in enumerate(nodes.tolist())}
    parents = np.array([local.get(tree.parent[n], -1) for n in nodes.tolist()], dtype=np.int64)
    return nodes, parents, np.array([kind[n] for n in nodes.tolist()], dtype=np.int64)


@dataclass
class Labelled:
    """Gold labels of a pruned tree and what became of the proposition's arguments."""

    labels: np.ndarray
    n_arguments: int
    no_constituent: int
    pruned: int


def gold_labels(tree: ParseTree, nodes: np.ndarray, prop: Proposition) -> Labelled:
    """Labels of the pruned tree's ``nodes`` for ``prop`` (module docstring) and its lost arguments."""
    labels = np.zeros(len(nodes), dtype=np.int64)
    by_span: dict[tuple[int, int], list[int]] = {}
    for t, n in enumerate(nodes.tolist()):
        by_span.setdefault((tree.start[n], tree.end[n]), []).append(t)
        if n == tree.token_node[prop.predicate]:
            labels[t] = V
    spans = set(zip(tree.start, tree.end))
    no_constituent = pruned = 0
    for role, s, e in prop.arguments:
        free = [t for t in by_span.get((s, e), ()) if labels[t] == O]
        if free:
            labels[free[0]] = role_class(role)
        elif (s, e) in spans:
            pruned += 1
        else:
            no_constituent += 1
    return Labelled(labels, len(prop.arguments), no_constituent, pruned)


__all__ = ["O", "SRL_CLASSES", "V", "Labelled", "Proposition", "Sentence", "gold_labels", "ordinal_loss",
           "proposition_index", "propositions", "pruned_tree", "role_class", "sentence"]
