"""AGM (NeurIPS 2018) Table 2: semantic role labelling on CoNLL-2005 as tree-structured prediction (AGM §4.2).

Each proposition is a Xue-Palmer pruned parse tree whose nodes take one of 9 classes (A0, A1,
A2, R-A0, R-A1, R-A2, R, O, V; :mod:`structpred.data.srl`), with hashed node and edge features
(:mod:`structpred.features.srl`, the ``tree_hashed`` joint map) and the ordinal (absolute)
node loss after a seeded random order of the classes, as the paper: the labels are replaced by
their rank in that order, so the loss is the absolute loss on ranks (which the exact game solves).  Train on sections 02-21
(``subsample`` propositions drawn with the seed when set), lambda by the devel section
(24), test on section 23 (``test.wsj``).  With ``refit_train`` (a number of propositions, or
``all``), the model at the chosen lambda is fit again on that many training propositions and
tested: lambda chosen on a subsample, the final fit on the full set (each fit resumable per pass).

Methods: ``AGM`` (the adversarial game, solved exactly (``game``), AdaGrad, argmax prediction),
``CRF`` (SDCA, Bayes decoding for the loss), ``SSVM`` (the structured hinge with the loss, BCFW),
and ``M4N`` (GBCFW on the game surrogate; an extra column).  A job is one method.

Rows: one ``tree_loss`` row per test proposition (its mean node loss), with the proposition as
``split``, so the table's mean is the per-tree mean loss of the paper, its count the number of
test propositions, and the paired tests pair methods over propositions; one ``node_loss`` row
(every node's loss pooled) and the pruning statistics of each part; the same on the Brown test
set (``tree_loss_brown``, ``node_loss_brown``: an extra row, not in the paper).
"""

from __future__ import annotations

import html
import logging
import time

import numpy as np
import pandas as pd

from structpred.data.srl import class_order, proposition_index
from structpred.data.store import load
from structpred.errors import ConfigError
from structpred.features.srl import srl_examples
from structpred.outputs import Tree
from structpred.papers.agm.emotion import MATRIX_METHODS, method_estimator
from structpred.papers.qs.report import metric_bars, render_grid
from structpred.papers.registry import Experiment, register
from structpred.tables.figures import legend_outside, save_figure, subplots
from structpred.tables.fit_cache import FitCache
from structpred.tables.results import select_first_min
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.significance import best_tests

log = logging.getLogger(__name__)

METHODS = ("AGM", "CRF", "SSVM", "M4N")
TASK = "srl"
DATASET = "conll2005"
PARTS = {"train": "train", "val": "devel", "test": "test.wsj", "brown": "test.brown"}
#: the test parts a model is scored on, with the suffix of their metrics (Brown: an extra row)
TESTS = {"test": "", "brown": "_brown"}


def examples(arrays, part: str, settings: dict, seed: int, rank: np.ndarray):
    """The featurised propositions of ``part`` (``train`` subsampled when configured), labels
    replaced by their ``rank`` in the class order."""
    indices = None
    limit = (settings.get("subsample") or {}).get(part)
    if limit is not None:
        n = len(proposition_index(arrays, part))
        if limit < n:
            indices = np.sort(rng_for(seed, "agm_srl", part).choice(n, int(limit), replace=False))
    ex = srl_examples(arrays, part, indices, settings["n_bits"])
    for t in ex.y:  # in place: the labels keep their trees
        t[...] = rank[np.asarray(t)]
    return ex


def estimator(method: str, space, lam: float, settings: dict, seed: int):
    """The AGM paper's estimator of ``method`` (:func:`structpred.papers.agm.emotion.method_estimator`;
    the matrix's QS, SGD and Casimir-SVRG too)."""
    if method not in METHODS + MATRIX_METHODS:
        raise ConfigError(f"unknown agm_srl method {method!r}; known: {', '.join(METHODS + MATRIX_METHODS)}")
    return method_estimator(method, space, lam, settings, settings["n_passes"], seed)


def predict(method: str, model, space, X):
    """Argmax of the potentials, or Bayes decoding of the CRF's marginals for the loss."""
    if method == "CRF":
        return space.bayes_decode(model.predict_proba(X))
    return model.predict(X)


def tree_losses(space, y, pred) -> tuple[np.ndarray, float]:
    """Per-tree mean node losses and the node-wise mean (every node pooled)."""
    per_tree = np.asarray(space.loss(y, pred), dtype=np.float64)
    sizes = np.array([len(t) for t in y], dtype=np.float64)
    return per_tree, float(per_tree @ sizes / sizes.sum())


@register
class SemanticRoleLabelling(Experiment):
    """AGM Table 2: per-tree ordinal loss of AGM, CRF, SSVM (and M4N) on CoNLL-2005 section 23."""

    name = "agm_srl"
    title = "AGM (NeurIPS 2018) Table 2: semantic role labelling (CoNLL-2005, section 23), average tree loss"
    needs = ("view",)
    KEYS = ("subsample", "n_bits", "class_order_seed", "lambdas", "n_passes", "adagrad_step", "game",
            "oracle_iterations", "refit_train")

    single_selection = True  # one lambda per method for every test tree

    def jobs(self, config):
        return [(DATASET, m, 0) for m in self.block(config)["methods"]]

    def view(self, config, dataset):
        return "conll2005"

    def numeric_paths(self, config, dataset, method):
        return (f"tree.{method}",)

    def settings(self, config, dataset, method):
        block = self.block(config)
        settings = {k: block[k] for k in self.KEYS if k in block}
        extra = (block.get("extra_lambdas") or {}).get(method)
        if extra:   # a method's grid widened where the rule chose its edge; the others' jobs keep theirs
            settings["lambdas"] = [*settings["lambdas"], *extra]
        return settings

    @staticmethod
    def settings_grids(settings: dict, method: str) -> dict[str, list]:
        """The lambda grid a job with ``settings`` searches (its rows keep only the chosen one's test
        losses, so the matrix, which reads those, asks here)."""
        return {"lam": list(settings["lambdas"])}

    def threads(self, config, dataset, method):
        """The block's ``threads`` for AGM, whose AdaGrad runs its dense step at 2^20 weights on
        numba's threads (the job's; :func:`structpred.solvers._dense.adagrad_update_for`, the same
        bits); 1 for the other methods, whose fits run on one."""
        return self.block(config).get("threads", 1) if method == "AGM" else 1

    threaded_fits = True   # AGM's fits run AdaGrad's dense step on the job's threads (:meth:`threads`)
    resumable = True   # each lambda's fit is kept (its devel and test losses), and an unfinished one's
    # solver state after every pass: a stopped job resumes

    def space(self, config, dataset):
        """The tree space of the ordinal loss over the 9 classes."""
        return Tree(len(class_order(self.block(config)["class_order_seed"])[1]), "absolute", joint_map="tree_hashed")

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1, checkpoint=None):
        if method not in METHODS + MATRIX_METHODS:
            raise ConfigError(f"unknown agm_srl method {method!r}; known: {', '.join(METHODS + MATRIX_METHODS)}")
        arrays, _ = load(inputs["view"])
        rank, order = class_order(settings["class_order_seed"])
        space = Tree(len(order), "absolute", joint_map="tree_hashed")
        data = {key: examples(arrays, part, settings, seed, rank) for key, part in PARTS.items()}
        fit_seed = int_seed(seed, self.name, method)
        cache = None if checkpoint is None else FitCache(
            checkpoint, {"experiment": self.name, "dataset": dataset, "method": method, "seed": seed,
                         "settings": settings}, [inputs["view"]])
        def fit(train, lam, cache):
            """One fit at ``lam`` on ``train`` (or its kept result), with its devel and test losses."""
            kept = None if cache is None else cache.load(lam)
            if kept is None:
                start = time.perf_counter()   # a fit stopped midway resumes after its last pass
                model = estimator(method, space, lam, settings, fit_seed)
                if method == "QS":   # one kernel ridge solve per tree shape: no passes to resume
                    model.fit(train.X, train.y)
                    seconds, history = time.perf_counter() - start, pd.DataFrame({"pass": []})
                else:
                    model.fit(train.X, train.y, checkpoint=None if cache is None else cache.in_progress(lam))
                    seconds, history = time.perf_counter() - start + model.resumed_seconds_, model.history_
                val = float(np.mean(tree_losses(space, data["val"].y, predict(method, model, space, data["val"].X))[0]))
                record = {"lam": float(lam), "val_loss": val, "seconds": seconds}
                for part, suffix in TESTS.items():
                    per_tree, node = tree_losses(space, data[part].y, predict(method, model, space, data[part].X))
                    record[f"node_loss{suffix}"] = node
                    record[f"tree_losses{suffix}"] = [float(v) for v in per_tree]
                kept = (record, history)
                if cache is not None:
                    cache.save(lam, *kept)
            return kept

        records, histories = [], []
        for lam in settings["lambdas"]:
            record, history = fit(data["train"], lam, cache)
            log.info("%s lam=%g: devel tree loss %.4f (%.1fs)", method, lam, record["val_loss"], record["seconds"])
            records.append(record)
            histories.append(history)
        best = select_first_min([r["val_loss"] for r in records])
        final, final_history, refit_rows = records[best], histories[best], []
        if settings.get("refit_train") is not None:
            # lambda chosen on the (subsampled) training set above; the final model refit at it on more
            refit_settings = {**settings, "subsample": {**(settings.get("subsample") or {}),
                                                        "train": None if settings["refit_train"] == "all"
                                                        else int(settings["refit_train"])}}
            train = examples(arrays, PARTS["train"], refit_settings, seed, rank)
            refit_cache = None if cache is None else FitCache(
                checkpoint, {"experiment": self.name, "dataset": dataset, "method": method, "seed": seed,
                             "settings": settings, "refit": settings["refit_train"]}, [inputs["view"]])
            final, final_history = fit(train, final["lam"], refit_cache)
            log.info("%s: refit at lam=%g on %d training propositions (%.1fs)", method, final["lam"],
                     len(train.y), final["seconds"])
            refit_rows = [{"metric": "refit_train_propositions", "value": float(len(train.y))},
                          {"metric": "refit_seconds", "value": float(final["seconds"])}]
        lam = final["lam"]
        log.info("%s: lam=%g, test tree loss %.4f, node loss %.4f", method, lam, np.mean(final["tree_losses"]),
                 final["node_loss"])
        common = {"experiment": self.name, "task": TASK, "dataset": dataset, "method": method, "lam": lam}
        rows = []
        for suffix in TESTS.values():   # a fit kept before Brown was scored has no Brown row
            if f"tree_losses{suffix}" in final:
                rows += [{**common, "split": int(i), "selected": True, "metric": f"tree_loss{suffix}",
                          "value": float(v)} for i, v in enumerate(final[f"tree_losses{suffix}"])]
                rows += [{**common, "split": 0, "selected": True, "metric": f"node_loss{suffix}",
                          "value": final[f"node_loss{suffix}"]}]
        rows += [{**common, "split": 0, "selected": True, "metric": "seconds",
                  "value": float(sum(r["seconds"] for r in records) + (final["seconds"] if refit_rows else 0.0))}]
        rows += [{**common, "split": 0, "selected": False, **r} for r in refit_rows]
        rows += [{**common, "lam": r["lam"], "split": 0, "selected": False, "metric": "val_loss",
                  "value": r["val_loss"]} for r in records]
        for key, ex in data.items():  # pruning statistics per part, in the job's file only
            rows += [{**common, "split": 0, "selected": False, "metric": f"{key}_{stat}", "value": float(ex.stats[stat])}
                     for stat in ("propositions", "nodes_mean", "lost_fraction")]
        return rows, final_history

    def render(self, table, tests, config):
        return render_grid(table, tests, rows="metric", note=(
            "tree_loss: mean over test propositions (section 23) of each tree's mean node loss (n = propositions; "
            "the paired tests pair methods over propositions); node_loss: every test node pooled (one value); "
            "*_brown: the same on the Brown test set (an extra row, not in the paper). M4N is an extra column "
            "(not in the paper)."))

    def figure(self, table, path, config):
        metric_bars(table, path, spread="sem", title="CoNLL-2005 SRL (section 23): ordinal loss on the pruned trees "
                                                     "(± standard error over propositions)")

    def tests(self, selected, config):
        return best_tests(selected[selected["metric"] == "tree_loss"])


@register
class SemanticRoleLabellingFull(SemanticRoleLabelling):
    """AGM Table 2 on the whole training set: lambda chosen on ``agm_srl``'s subsample over a wider
    grid, then each method refit at it on all propositions of sections 02-21 (``refit_train: all``),
    resumable per pass; every other setting ``agm_srl``'s unless this block overrides it."""

    name = "agm_srl_full"
    title = ("AGM (NeurIPS 2018) Table 2, final fits on the whole training set: semantic role labelling "
             "(CoNLL-2005, section 23), average tree loss")
    variant_of = references_of = "agm_srl"


def order_dataset(seed: int) -> str:
    """``order3``: the job of the class order drawn with seed 3."""
    return f"order{int(seed)}"


@register
class SemanticRoleLabellingOrders(SemanticRoleLabelling):
    """AGM Table 2 over several seeded random class orders (the ordinal cost's order, which the
    paper does not give): a job per (order, method), every other setting ``agm_srl``'s unless this
    block overrides it (``lambdas``, ``subsample``, ``n_passes``).  The page gives each order's
    table with its paired tests and, per method, the mean and spread of its loss over orders."""

    name = "agm_srl_orders"
    title = ("AGM (NeurIPS 2018) Table 2 over random class orders: semantic role labelling, average tree "
             "loss per order and its spread")
    variant_of, references_of = "agm_srl", None

    def orders(self, config) -> dict[str, int]:
        return {order_dataset(k): int(k) for k in self.block(config)["class_order_seeds"]}

    def jobs(self, config):
        return [(d, m, 0) for d in self.orders(config) for m in self.block(config)["methods"]]

    def settings(self, config, dataset, method):
        orders = self.orders(config)
        if dataset not in orders:
            raise ConfigError(f"{dataset!r} is not a class order of {self.name}; orders: {', '.join(orders)}")
        return {**super().settings(config, dataset, method), "class_order_seed": orders[dataset]}

    def render(self, table, tests, config):
        return (render_spread(table) + render_grid(table, tests, rows="dataset", metric="tree_loss", note=(
            "Per class order: the mean over test propositions of each tree's mean node loss; bold = best or not "
            "significantly worse (Wilcoxon over propositions).")))

    def figure(self, table, path, config):
        orders_figure(table[table["metric"] == "tree_loss"], path)

    def tests(self, selected, config):
        return best_tests(selected[selected["metric"] == "tree_loss"])


def order_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Per method: the mean, sample std, min and max over class orders of its tree loss."""
    loss = table[table["metric"] == "tree_loss"]
    out = loss.groupby("method", sort=False)["mean"].agg(["mean", "std", "min", "max", "count"])
    return out.rename(columns={"count": "n_orders"})


def render_spread(table: pd.DataFrame) -> str:
    spread = order_spread(table)
    out = ["<p>Average tree loss over class orders (the paper: 'a random order of the class labels', not "
           "given): per method, mean ± std over orders, and the range.</p><table><tr><th class=l>method</th>"
           "<th>mean</th><th>std</th><th>min</th><th>max</th><th>orders</th></tr>"]
    for method, r in spread.iterrows():
        out.append(f"<tr><td class=l>{html.escape(str(method))}</td><td>{r['mean']:.4f}</td><td>{r['std']:.4f}</td>"
                   f"<td>{r['min']:.4f}</td><td>{r['max']:.4f}</td><td>{int(r['n_orders'])}</td></tr>")
    return "\n".join(out + ["</table>"])


def orders_figure(loss, path) -> None:
    """Each method's tree loss per class order (points, joined by order) and its mean over orders;
    the legend beside the axes, never over a point."""

    methods = list(dict.fromkeys(loss["method"]))
    fig, ax = subplots(figsize=(1.5 * len(methods) + 2.2, 3.4), layout="constrained")
    for order, part in loss.groupby("dataset", sort=False):
        part = part.set_index("method").reindex(methods)
        ax.plot(range(len(methods)), part["mean"], marker="o", lw=0.8, alpha=0.7, label=str(order))
    means = loss.groupby("method", sort=False)["mean"].mean().reindex(methods)
    ax.scatter(range(len(methods)), means, marker="_", s=500, linewidths=2, color="black", zorder=3,
               label="mean over orders")
    ax.set_xticks(range(len(methods)), methods)
    ax.set_xlim(-0.4, len(methods) - 0.6)
    ax.set_ylabel("average tree loss (section 23)")
    legend_outside(fig, where="right upper", ncol=1)
    save_figure(fig, path)
