"""Constituency trees from CoNLL bracket columns, with head words by Collins' head rules.

A CoNLL-2005 parse column gives each token a string ``(S1(S(NP*`` / ``*)`` : the phrases the
token opens, ``*`` for the token, and the phrases it closes.  :func:`parse_brackets` turns a
sentence's column and POS tags into a :class:`ParseTree`: nodes in preorder (parents before
children, children left to right), every token a preterminal node labelled with its POS tag,
spans ``[start, end)`` over tokens, and each node's head token.

Heads follow the head table of Collins (1999, App. A; the NP rule of its §A.2), with
Charniak's ``AUX`` / ``AUXG`` verb tags added to the VP rule: a rule is a direction and a
priority list; the head child is the first child, scanning in that direction, with the
list's first category present, else with the second, ...; with no match, the first child in
that direction.  NP (and NX) scan right to left for any of ``NN NNP NNPS NNS NX POS JJR``,
then left to right for ``NP``, then right to left for any of ``$ ADJP PRN``, then ``CD``, then
``JJ JJS RB QP``; else the last child.  Labels without a rule (``S1``, ``X``, ...) take the
first child.
"""

from __future__ import annotations

from dataclasses import dataclass

from structpred.errors import DataError

_TABLE = {
    "ADJP": "l NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB",
    "ADVP": "r RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN",
    "CONJP": "r CC RB IN",
    "FRAG": "r",
    "INTJ": "l",
    "LST": "r LS :",
    "NAC": "l NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW",
    "PP": "r IN TO VBG VBN RP FW",
    "PRN": "l",
    "PRT": "r RP",
    "QP": "l $ IN NNS NN JJ RB DT CD NCD QP JJR JJS",
    "RRC": "r VP NP ADVP ADJP PP",
    "S": "l TO IN VP S SBAR ADJP UCP NP",
    "SBAR": "l WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG",
    "SBARQ": "l SQ S SINV SBARQ FRAG",
    "SINV": "l VBZ VBD VBP VB MD VP S SINV ADJP NP",
    "SQ": "l VBZ VBD VBP VB MD VP SQ",
    "UCP": "r",
    "VP": "l TO VBD VBN MD VBZ VB VBG VBP AUX AUXG VP ADJP NN NNS NP",
    "WHADJP": "l CC WRB JJ ADJP",
    "WHADVP": "r CC WRB",
    "WHNP": "l WDT WP WP$ WHADJP WHPP WHNP",
    "WHPP": "r IN TO FW",
}
#: label -> (direction, priority list): "l" scans left to right, "r" right to left
HEAD_RULES = {k: (v.split()[0], tuple(v.split()[1:])) for k, v in _TABLE.items()}

#: the NP rule: (direction, any of these categories), tried in order; else the last child
NP_RULE = (("r", frozenset("NN NNP NNPS NNS NX POS JJR".split())), ("l", frozenset({"NP"})),
           ("r", frozenset("$ ADJP PRN".split())), ("r", frozenset({"CD"})),
           ("r", frozenset("JJ JJS RB QP".split())))


def head_child(label: str, children: list[str]) -> int:
    """Index of the head among ``children`` (their labels) of a phrase labelled ``label``."""
    n = len(children)
    if label in ("NP", "NX"):
        for direction, cats in NP_RULE:
            order = range(n) if direction == "l" else range(n - 1, -1, -1)
            for k in order:
                if children[k] in cats:
                    return k
        return n - 1
    direction, priority = HEAD_RULES.get(label, ("l", ()))
    order = list(range(n)) if direction == "l" else list(range(n - 1, -1, -1))
    for cat in priority:
        for k in order:
            if children[k] == cat:
                return k
    return order[0]


@dataclass
class ParseTree:
    """Nodes in preorder: ``label``, ``parent`` (-1: root), ``start`` / ``end`` token spans,
    ``children`` (left to right), ``head`` token; ``token_node[t]``: the preterminal of token t."""

    label: list[str]
    parent: list[int]
    start: list[int]
    end: list[int]
    children: list[list[int]]
    head: list[int]
    token_node: list[int]

    def __len__(self) -> int:
        return len(self.label)

    def is_preterminal(self, n: int) -> bool:
        return not self.children[n]


def parse_brackets(column, pos) -> ParseTree:
    """The tree of one sentence from its bracket column (``(S1(S(NP*``, ``*)``, ...) and POS tags."""
    label, parent, start, end, children = [], [], [], [], []
    token_node, stack = [], []

    def node(lab, t):
        label.append(lab)
        parent.append(stack[-1] if stack else -1)
        start.append(t)
        end.append(t + 1)
        children.append([])
        if stack:
            children[stack[-1]].append(len(label) - 1)
        return len(label) - 1

    for t, (cell, tag) in enumerate(zip(column, pos)):
        opens, star, closes = str(cell).partition("*")
        if not star or closes.strip(")") or (opens and not opens.startswith("(")):
            raise DataError(f"malformed parse cell {cell!r} at token {t}")
        for lab in opens.split("(")[1:]:
            if not stack and label:
                raise DataError(f"a second root opens at token {t}: {cell!r}")
            stack.append(node(lab, t))
        if not stack:
            raise DataError(f"token {t} ({cell!r}) lies outside every phrase")
        token_node.append(node(str(tag), t))
        for _ in closes:
            if not stack:
                raise DataError(f"token {t} closes more phrases than are open: {cell!r}")
            end[stack.pop()] = t + 1
    if stack:
        raise DataError(f"{len(stack)} phrases are left open at the end of the sentence")
    head = [0] * len(label)
    for n in range(len(label) - 1, -1, -1):
        kids = children[n]
        head[n] = start[n] if not kids else head[kids[head_child(label[n], [label[k] for k in kids])]]
    return ParseTree(label, parent, start, end, children, head, token_node)


__all__ = ["HEAD_RULES", "NP_RULE", "ParseTree", "head_child", "parse_brackets"]
