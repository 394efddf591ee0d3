"""Casimir (Pillutla et al., NeurIPS 2018) §7.2: PASCAL VOC 2007 localisation with the non-convex
score, Figures 4, 6 and 7 (and 11-13).

The score of a box is ``phi(w) = <ELU(Phi w1), w2>`` on its conv4 map (:mod:`structpred.vision.score_net`),
the objective ``F(w) = (1/n) sum_i max_j [l_ij + phi_ij(w) - phi_i*(w)] + lam/2 ||w||^2`` with
``lam = c / n`` (the paper: c = 1).  Methods (:mod:`structpred.solvers.prox_linear`):
PL-Casimir-SVRG (Algorithm 5: prox-linear steps solved by Casimir-SVRG-const, accepted only when
``F`` decreases) and SGD with constant, ``t^-1/2`` and ``t^-1`` steps; every run of a seed starts
from the same random ``w`` (PyTorch's default initialisation, drawn from the seed), since
``w = 0`` is a stationary point (``ELU(0) = 0``).  Figure 4 compares the methods; Figure 6 the
smoothing of the subproblems (``mu`` constant or ``mu / k``), Figure 7 the step ``eta``, the inner
budget and the inner warm start (sweeps of PL-Casimir-SVRG's settings).  The paper's text is the
only specification (no reference code exists for these figures): each choice is a config entry.

One job = one (figure, class, method, variant, seed): the job's ``dataset`` is ``<figure>_<class>``,
its ``method`` ``<method>[_<setting>=<value>]``, its ``split`` the seed.
"""

from __future__ import annotations

from structpred.errors import ConfigError
from structpred.outputs import Candidates
from structpred.papers.casimir.ner import casimir_lam, figure_runs, method_name, not_a_run
from structpred.papers.casimir.voc import Localisation, VocFigure3
from structpred.papers.registry import register
from structpred.solvers.problem import Problem
from structpred.solvers.prox_linear import NonConvexSGD, ProxLinear
from structpred.surrogates import Hinge
from structpred.vision.alexnet import resolve_device
from structpred.vision.score_net import ConvScore, ConvScoreMap, init_params, positions
from structpred.vision.voc_localization import load_candidate_file

METHODS = ("PL-Casimir-SVRG", "SGD-const", "SGD-sqrt", "SGD-linear")
SWEEPS = ("smoothing", "eta", "inner_passes", "warm_start", "mu")


@register
class VocNonConvex(VocFigure3):
    """Casimir Figures 4, 6 and 7: one job per (figure, class, method, variant, seed)."""

    name = "casimir_voc_nonconvex"
    title = ("Casimir (NeurIPS 2018) Figures 4, 6, 7: PASCAL VOC 2007 localisation, non-convex score, "
             "values at the end of each budget")

    def jobs(self, config):
        s = config[self.name]
        unknown = [f for f in s["run"] if f not in s["figures"]]
        if unknown:
            raise ConfigError(f"{self.name} runs unknown figures {unknown}; configured: {', '.join(s['figures'])}")
        return [(f"{fig}_{cls}", method_name(m, v), k) for fig in s["run"] for cls in s["classes"]
                for m, v, _ in figure_runs(s["figures"][fig], METHODS, SWEEPS) for k in range(s["n_seeds"])]

    def runs(self, config) -> dict[tuple[str, str], dict]:
        """``(dataset, method)`` job names -> the run they stand for (figure, class, method, swept
        setting), for every configured figure and class: looked up, never parsed back."""
        s = config[self.name]
        return {(f"{fig}_{cls}", method_name(m, v)): {"figure": fig, "class": cls, "method": m, "swept": swept}
                for fig, spec in s["figures"].items() for cls in s["classes"]
                for m, v, swept in figure_runs(spec, METHODS, SWEEPS)}

    def voc_class(self, config, dataset) -> str:
        classes = {d: run["class"] for (d, _), run in self.runs(config).items()}
        if dataset not in classes:
            raise ConfigError(f"{dataset!r} is not a figure and class of {self.name} in this configuration")
        return classes[dataset]

    def settings(self, config, dataset, method):
        s = config[self.name]
        run = self.runs(config).get((dataset, method))
        if run is None:
            raise not_a_run(self.name, dataset, method, s["figures"])
        figure, m = run["figure"], run["method"]
        hp = {**s["methods"][m], **s["figures"][figure].get("settings", {}).get(m, {}), **run["swept"]}
        return {"figure": figure, "method": m, "c": s["c"], "hyper": hp, "eval_every": s["eval_every"],
                "devkit": config["data"]["voc"]["devkit"], "device": config["data"]["voc"]["device"]}

    def load(self, path, settings):
        """The non-convex score on the class's candidate file (on the configured device)."""
        parts, _ = load_candidate_file(path)
        net, space = ConvScore(resolve_device(settings["device"])), Candidates()

        def problem(part, lam):
            a = parts[part]
            off = a["offsets"]
            A = [positions(a["features"][off[i]:off[i + 1]]) for i in range(len(off) - 1)]
            return Problem(space, ConvScoreMap(A, net), space.check_labels(a["y"]), lam)

        train = problem("train", casimir_lam(settings["c"], len(parts["train"]["offsets"]) - 1))
        return train, Localisation({"train": train, "held": problem("held", train.lam)},
                                   {p: parts[p]["iou"] for p in parts})

    def rule(self, settings, problem, split: int):
        hp, hinge = settings["hyper"], Hinge(problem.space)
        if settings["method"] == "PL-Casimir-SVRG":
            rule = ProxLinear(hinge, eta=hp["eta"], inner_passes=hp["inner_passes"], mu=hp["mu"],
                              smoothing=hp["smoothing"], L0=hp["L0"], K=hp["K"], warm_start=hp["warm_start"])
        else:
            rule = NonConvexSGD(hinge, eta0=hp["eta0"], schedule=settings["method"].removeprefix("SGD-"))
        rule.start = init_params(split)
        return rule

    def curve_panels(self, config):
        s = config[self.name]
        return [f"{fig}_{cls}" for fig in s["run"] for cls in s["classes"]]
