"""Sphinx directives that build the capability tables from the library itself, at build time.

``.. capability-table::``
    Rows: every output space that :mod:`structpred.outputs` exports (one row per example
    instance below: a space's parameters can rule a capability out); columns: the capabilities of
    :data:`structpred.outputs.base.CAPABILITIES`; a cell is what
    :func:`structpred.outputs.capabilities` answers for that instance.  A capability a space's
    class or instance declares ``unsupported`` shows its reason as a footnote.

``.. surrogate-requirements::``
    Rows: the surrogates of :mod:`structpred.surrogates`; the capabilities each ``requires``, and
    the spaces of the capability table that have all of them.

Nothing here is typed by hand but the example instances: an exported space class without one
is an error (the ``-W`` build fails), so a new space cannot be left out of the table.
"""

from __future__ import annotations

import inspect

import numpy as np
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective


def _examples():
    """``(label, instance)`` per row: the instances of each exported space class."""
    from structpred import outputs as O

    asym = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    return {
        "Multiclass": [("Multiclass.zero_one(k)", O.Multiclass.zero_one(3)),
                       ("Multiclass.ordinal(k)", O.Multiclass.ordinal(3)),
                       ("Multiclass(loss_matrix)", O.Multiclass(asym))],
        "Permutation": [("Permutation(M)", O.Permutation(3))],
        "Chain": [("Chain(R)", O.Chain(3)),
                  ("Chain(R, node_loss=matrix)", O.Chain(3, node_loss=asym))],
        "Tree": [("Tree(R)", O.Tree(3)),
                 ("Tree(R, node_loss=matrix)", O.Tree(3, node_loss=asym))],
        "Candidates": [("Candidates()", O.Candidates())],
        "Hellinger": [("Hellinger(d)", O.Hellinger(4))],
        "GaussianHistogram": [("GaussianHistogram(d, sigma)", O.GaussianHistogram(4, 0.5))],
        "Cauchy": [("Cauchy(c)", O.Cauchy(1.0))],
        "PairwiseRanking": [("PairwiseRanking(M)", O.PairwiseRanking(3))],
    }


def space_classes():
    """The concrete output-space classes :mod:`structpred.outputs` exports, by name."""
    from structpred import outputs as O

    out = {}
    for name in O.__all__:
        obj = getattr(O, name)
        if inspect.isclass(obj) and issubclass(obj, O.LossSpace) and not inspect.isabstract(obj):
            out[name] = obj
    return out


def rows():
    """``(class name, label, instance)`` for every row; an exported space without an example,
    or an example of a class not exported, is an error."""
    classes, examples = space_classes(), _examples()
    missing = sorted(set(classes) - set(examples))
    extra = sorted(set(examples) - set(classes))
    if missing or extra:
        raise ExtensionError(f"capability table: no example instance for {missing} / examples of unknown "
                             f"spaces {extra}: update docs/_ext/capability_table.py")
    return [(name, label, inst) for name in examples for label, inst in examples[name]]


def _reasons(space) -> dict:
    """``{capability class: reason}`` that ``space`` (class or instance) declares unsupported."""
    return dict(getattr(space, "unsupported", {}) or {})


def _cell(text: str) -> str:
    return text if text else " "


class CapabilityTable(SphinxDirective):
    """The output spaces' capability table (see the module docstring)."""

    has_content = False

    def run(self):
        from structpred.outputs import capabilities
        from structpred.outputs.base import CAPABILITIES, OutputSpace

        self.env.note_dependency(__file__)
        names = list(CAPABILITIES)
        lines = [".. list-table:: Capabilities of the output spaces (:func:`structpred.outputs.capabilities`)",
                 "   :header-rows: 1", "   :stub-columns: 1", "   :class: capability-table", "",
                 "   * - space", "     - kind"]
        lines += [f"     - :class:`{n} <structpred.outputs.{CAPABILITIES[n].__name__}>`" for n in names]
        notes: list[str] = []
        for cls_name, label, inst in rows():
            has = set(capabilities(inst))
            reasons = _reasons(inst)
            kind = "OutputSpace" if isinstance(inst, OutputSpace) else "LossSpace"
            lines += [f"   * - :class:`{label} <structpred.outputs.{cls_name}>`",
                      f"     - :class:`~structpred.outputs.{kind}`"]
            for n in names:
                cap = CAPABILITIES[n]
                if n in has:
                    lines.append("     - ✓")
                elif cap in reasons:
                    notes.append(f"``{label}`` has no {n}: {reasons[cap]}.")
                    lines.append(f"     - no [#cap{len(notes)}]_")
                else:
                    lines.append("     - —")
        lines.append("")
        for i, note in enumerate(notes, 1):
            lines += [f".. [#cap{i}] {note}", ""]
        return self._parse(lines)

    def _parse(self, lines):
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source="capability_table"), self.content_offset, node)
        return node.children


class SurrogateRequirements(SphinxDirective):
    """Each surrogate's required capabilities and the table's spaces that have them all."""

    has_content = False

    def run(self):
        from structpred import surrogates as S
        from structpred.outputs.base import CAPABILITIES, has

        self.env.note_dependency(__file__)
        by_class = {cls: name for name, cls in CAPABILITIES.items()}
        lines = [".. list-table:: Surrogates, the capabilities they require (their ``requires``) and the "
                 "spaces of the capability table that have them all",
                 "   :header-rows: 1", "   :stub-columns: 1", "   :widths: 20 35 45", "",
                 "   * - surrogate", "     - requires", "     - spaces"]
        table = rows()
        for name in S.__all__:
            cls = getattr(S, name)
            if inspect.isabstract(cls):
                continue
            req = tuple(getattr(cls, "requires", ()))
            fits = [label for _, label, inst in table if all(has(inst, c) for c in req)]
            lines += [f"   * - :class:`~structpred.surrogates.{name}`",
                      "     - " + (", ".join(by_class[c] for c in req) or "nothing"),
                      "     - " + (", ".join(f"``{f}``" for f in fits) or "none")]
        lines.append("")
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source="surrogate_requirements"), self.content_offset, node)
        return node.children


def setup(app):
    app.add_directive("capability-table", CapabilityTable)
    app.add_directive("surrogate-requirements", SurrogateRequirements)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
