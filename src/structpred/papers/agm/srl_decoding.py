"""AGM (NeurIPS 2018) Table 2's CRF under three decodings and five cost orders: the sensitivity
table ``agm_srl_decoding``.

The paper's CRF predicts by Bayes-optimal decoding for the cost matrix (AGM §4.2), as ours does
(``agm_srl``'s CRF, SDCA); the usual alternatives take the argmax of each node's marginal or the
MAP labelling (the argmax of the potentials, max-product).  The archived tables keep the fits'
losses, not their weights, so a job refits one archived CRF (:data:`FIT_KEYS`: the table it comes
from, whose name seeds its sample order as there, its class order, training propositions and
chosen lambda) and decodes its test trees (WSJ section 23) each way:

* ``bayes``: ``argmin_b sum_a m_t(a) C[a, b]`` per node, for the cost order scored;
* ``marginal``: ``argmax_a m_t(a)`` per node (Bayes decoding for the 0-1 node loss);
* ``map``: the labelling of largest potential (max-product).

Each is scored by the tree loss of every cost order in the fit's ``cost_orders``: the ordinal cost
``|r(i) - r(j)|`` after the random class order drawn with that seed (``agm_srl_orders``'s), the
fit's labels mapped through the classes.  A fit trained on order ``k`` and scored on order ``k``
by ``bayes`` is its table's own number (rows per test proposition, as ``agm_srl``).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from structpred.data.srl import class_order
from structpred.data.store import load
from structpred.errors import ConfigError
from structpred.outputs import Tree
from structpred.papers.agm.srl import DATASET, PARTS, TASK, estimator, examples, tree_losses
from structpred.papers.registry import Experiment, block_over, register
from structpred.tables.fit_cache import FitCache
from structpred.tables.seeding import int_seed
from structpred.tables.sensitivity import figure_by, render_by, tests_by

log = logging.getLogger(__name__)

DECODINGS = ("bayes", "marginal", "map")
#: what identifies an archived CRF fit
FIT_KEYS = ("source", "class_order_seed", "train", "lam", "cost_orders")
SOURCES = ("agm_srl", "agm_srl_full", "agm_srl_orders")


def order_map(train_seed: int, cost_seed: int) -> np.ndarray:
    """``p[a]``: the rank under the class order of ``cost_seed`` of the class ranked ``a`` under the
    order of ``train_seed`` (the identity when they are equal)."""
    rank_train, _ = class_order(train_seed)
    rank_cost, _ = class_order(cost_seed)
    order_train = np.argsort(rank_train)   # class at each training rank
    return rank_cost[order_train]


def cost_space(train_seed: int, cost_seed: int, n_labels: int):
    """The tree space, on the fit's labels (ranks of ``train_seed``'s order), whose node loss is
    the ordinal cost of ``cost_seed``'s order (``agm_srl``'s per-tree mean node loss)."""
    p = order_map(train_seed, cost_seed).astype(np.float64)
    return Tree(n_labels, np.abs(p[:, None] - p[None, :]), joint_map="tree_hashed")


def decode_all(model, space, X, train_seed: int, cost_orders) -> dict[tuple[str, int], list]:
    """``(decoding, cost order) -> predicted trees`` of a fitted CRF on ``X``."""
    marginals = model.predict_proba(X)
    argmax = Tree(space.n_labels, "hamming", joint_map="tree_hashed").bayes_decode(marginals)
    mapped = space.decode(model.scores(X))
    out = {}
    for cost in cost_orders:
        out[("bayes", cost)] = cost_space(train_seed, cost, space.n_labels).bayes_decode(marginals)
        out[("marginal", cost)] = argmax
        out[("map", cost)] = mapped
    return out


@register
class SrlDecoding(Experiment):
    """AGM Table 2's CRF fits (full set, subsample, class orders) decoded three ways, per cost order."""

    name = "agm_srl_decoding"
    title = ("AGM (NeurIPS 2018) Table 2: the CRF decoded by Bayes-optimal decoding, marginal argmax and MAP, "
             "under five cost orders (sensitivity)")
    needs = ("view",)
    references_of = "agm_srl"
    key = ("task", "dataset", "method", "fit", "decoding", "cost_order", "metric")
    reference_key = ("task", "dataset", "method", "metric")
    resumable = True   # the full-set fit keeps its solver state after every pass

    def fits(self, config) -> dict[str, dict]:
        fits = config[self.name]["fits"]
        for name, spec in fits.items():
            if spec["source"] not in SOURCES:
                raise ConfigError(f"{self.name}: fit {name} names unknown source {spec['source']!r}; "
                                  f"known: {', '.join(SOURCES)}")
        return fits

    def jobs(self, config):
        return [(name, "CRF", 0) for name in self.fits(config)]

    def view(self, config, dataset):
        return "conll2005"

    def numeric_paths(self, config, dataset, method):
        return ("tree.CRF",)

    def settings(self, config, dataset, method):
        fits = self.fits(config)
        if dataset not in fits:
            raise ConfigError(f"{self.name}: unknown fit {dataset!r}; known: {', '.join(fits)}")
        if method != "CRF":
            raise ConfigError(f"{self.name}: only the CRF is decoded, not {method!r}")
        spec = fits[dataset]
        base = block_over(config, "agm_srl", spec["source"]) if spec["source"] != "agm_srl" else config["agm_srl"]
        return {"n_bits": base["n_bits"], "n_passes": base["n_passes"], "adagrad_step": base["adagrad_step"],
                "game": base["game"], "oracle_iterations": base["oracle_iterations"],
                "subsample": {**(base.get("subsample") or {}),
                              "train": None if spec["train"] == "all" else int(spec["train"])},
                **{k: spec[k] for k in FIT_KEYS}, "decodings": list(DECODINGS)}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1, checkpoint=None):
        arrays, _ = load(inputs["view"])
        train_seed = int(settings["class_order_seed"])
        rank, order = class_order(train_seed)
        space = Tree(len(order), "absolute", joint_map="tree_hashed")
        train = examples(arrays, PARTS["train"], settings, seed, rank)
        test = examples(arrays, PARTS["test"], settings, seed, rank)
        lam = float(settings["lam"])
        cache = None if checkpoint is None else FitCache(
            checkpoint, {"experiment": self.name, "dataset": dataset, "method": method, "seed": seed,
                         "settings": settings}, [inputs["view"]])
        kept = None if cache is None else cache.load(lam)
        if kept is None:
            start = time.perf_counter()
            model = estimator("CRF", space, lam, settings, int_seed(seed, settings["source"], "CRF")).fit(
                train.X, train.y, checkpoint=None if cache is None else cache.in_progress(lam))
            seconds = time.perf_counter() - start + model.resumed_seconds_
            preds = decode_all(model, space, test.X, train_seed, settings["cost_orders"])
            record = {"lam": lam, "seconds": seconds, "train_propositions": len(train.y),
                      "losses": {f"{d}:{c}": [float(v) for v in tree_losses(cost_space(train_seed, c, len(order)),
                                                                            test.y, pred)[0]]
                                 for (d, c), pred in preds.items()}}
            kept = (record, model.history_)
            if cache is not None:
                cache.save(lam, *kept)
        record, history = kept
        common = {"experiment": self.name, "task": TASK, "dataset": DATASET, "method": method, "lam": lam,
                  "fit": dataset}
        rows = []
        for name, losses in record["losses"].items():
            decoding, cost = name.split(":")
            log.info("%s %s, cost order %s: test tree loss %.4f", dataset, decoding, cost, np.mean(losses))
            rows += [{**common, "split": i, "selected": True, "metric": "tree_loss", "decoding": decoding,
                      "cost_order": int(cost), "value": v} for i, v in enumerate(losses)]
        rows += [{**common, "split": 0, "selected": True, "metric": "seconds", "value": float(record["seconds"])},
                 {**common, "split": 0, "selected": False, "metric": "train_propositions",
                  "value": float(record["train_propositions"])}]
        return rows, history

    def render(self, table, tests, config):
        return render_by(table.assign(method=table["decoding"]), rows=["fit", "cost_order"], metric="tree_loss", note=(
            "Test tree loss (WSJ section 23; mean ± std over its 5267 propositions) of each archived CRF fit, refit "
            "here at its table's lambda and seed: full = agm_srl_full's (all 90,750 propositions, class order 0), "
            "subsample = agm_srl's (2000 propositions, order 0), order<k> = agm_srl_orders' (2000, order k); "
            "columns: Bayes-optimal decoding for the cost scored (the paper's CRF, and ours), the argmax of each "
            "node's marginal, the MAP labelling; rows: the cost order scored (a fit trained on order k and scored "
            "on order k by bayes is its table's number). The paper's CRF: 0.19 beneath every cell."))

    def figure(self, table, path, config):
        data = table[table["metric"] == "tree_loss"]
        data = data.assign(method=data["decoding"], panel="CRF",
                           column=data["fit"] + " / order " + data["cost_order"].astype(int).astype(str))
        figure_by(data, path, panel="panel", column="column", metric="tree_loss", ylabel="test tree loss",
                  title="AGM Table 2: the CRF per fit and cost order, by decoding")

    def tests(self, selected, config):
        sel = selected[selected["metric"] == "tree_loss"]   # cost orders read back from CSV as floats
        sel = sel.assign(method=sel["decoding"], cell=sel["fit"] + "/" + sel["cost_order"].astype(int).astype(str))
        return tests_by(sel, "cell")
