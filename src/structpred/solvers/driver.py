"""The one pass driver: every solver is a step rule on it.

:func:`run` owns the loop over passes: the sample order (one permutation per pass from
the solver's generator), the timer (training time only), the evaluation schedule
(``eval_every``), the history, oracle-call counting, the tqdm progress bar and stopping
(the number of passes, ``tol`` on a certified duality gap, a time budget).  A method is a
:class:`StepRule`: its state, what it does at the start and end of a pass, and one step
per sample (or a whole compiled pass), plus the objectives it can report.

Designed for the primal methods to come: SVRG's full gradient is a ``start_epoch``,
Casimir's smoothing parameter and prox centre change in ``start_epoch`` / ``end_epoch``,
and prox-linear's outer loop is a rule whose ``epoch`` runs an inner solver.
"""

from __future__ import annotations

import logging
import pickle
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from structpred.errors import StructpredError, check_positive_int
from structpred.io import atomic_open
from structpred.solvers.problem import check_validation

log = logging.getLogger(__name__)


@dataclass
class SolverResult:
    """Output of a solver run.

    Attributes
    ----------
    W : weights of the joint feature map (the averaged iterate when averaging was requested).
    mu : dual blocks, ``(n, k)`` or a list of per-sample vectors (``None`` for primal methods).
    history : list of per-pass dicts (pass, the rule's objectives, oracle_calls, seconds,
        [val_loss]).
    state : rule-specific extra arrays (e.g. the oracle's warm-start state).
    resumed_seconds : the training time an earlier, interrupted run had recorded in the
        checkpoint this run resumed from (0 for a run from the start).
    """

    W: np.ndarray
    mu: object
    history: list = field(default_factory=list)
    state: dict = field(default_factory=dict)
    resumed_seconds: float = 0.0


class StepRule(ABC):
    """One optimisation method on the driver.

    ``init(problem)`` allocates the state; per pass the driver calls ``start_epoch(p)``,
    ``epoch(order)`` (default: ``step(i)`` for each sample) and ``end_epoch(p)``, all timed;
    ``oracle_calls`` counts the oracle calls of training.  ``objectives()`` gives the
    per-pass record (``gap``, when present, must be a certified upper bound on the
    duality gap: the driver's ``tol`` stops on it), ``weights()`` the weights to evaluate
    and ``result()`` the final :class:`SolverResult`.
    """

    name = "solver"
    #: attributes ``init(problem)`` rebuilds: never saved in a checkpoint
    unsaved = ("problem", "kernels")
    #: sample order of a pass: ``"permutation"`` (each sample once) or ``"uniform"`` (n draws
    #: with replacement, as the Casimir reference code)
    sampling = "permutation"
    #: whether the rule accepts ``lam = 0`` (it minimises the primal and needs no strong convexity)
    zero_lam = False
    #: the primal rules' first iterate (``None``: zero); prox-linear starts each subproblem at ``w_k``
    start = None
    #: set by a rule that has nothing left to do (a direct solver after its solve): the driver
    #: records that pass and stops
    finished = False

    def __init__(self, surrogate):
        self.surrogate = surrogate
        self.problem = None
        self.oracle_calls = 0

    def init(self, problem) -> None:
        self.problem = problem
        self.oracle_calls = 0
        shape = problem.fmap.weight_shape
        if self.start is None:
            self.W = np.zeros(shape)
        elif np.shape(self.start) != shape:
            raise StructpredError(f"{self.name}: start must have shape {shape}, got {np.shape(self.start)}")
        else:
            self.W = np.array(self.start, dtype=np.float64)

    def checkpoint_state(self) -> dict:
        """The rule's state after a pass, for :func:`run`'s checkpoint: every attribute but
        ``unsaved`` (the surrogate's per-sample warm states included)."""
        return {k: v for k, v in vars(self).items() if k not in self.unsaved}

    def restore_state(self, state: dict) -> None:
        """Continue from :meth:`checkpoint_state` (after ``init(problem)``); the surrogate object
        is kept and takes the saved one's state, so whoever holds it sees the resumed state."""
        state = dict(state)
        saved = state.pop("surrogate", None)
        if saved is not None:
            vars(self.surrogate).update(vars(saved))
        vars(self).update(state)

    def draw_order(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """The samples of the next pass, as ``sampling`` says (a rule may sample adaptively)."""
        if self.sampling == "uniform":
            return rng.integers(0, n, size=n).astype(np.int64)
        return rng.permutation(n).astype(np.int64)

    def start_epoch(self, epoch: int) -> None:
        """Hook before a pass (a full gradient, a new smoothing parameter...)."""

    def epoch(self, order: np.ndarray) -> None:
        for i in order:
            self.step(int(i))

    def step(self, i: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} runs whole passes (epoch), not single steps")

    def end_epoch(self, epoch: int) -> None:
        """Hook after a pass (averaging, a prox-centre update...)."""

    def weights(self) -> np.ndarray:
        return self.W

    @abstractmethod
    def objectives(self) -> dict: ...

    def result(self, history: list) -> SolverResult:
        return SolverResult(self.weights(), None, history, {})


#: sample orders of the block rules with :class:`GapSampling`
SAMPLINGS = ("permutation", "uniform", "gap")


class GapSampling:
    """Sample orders of a dual block rule that records each block's gap at its last visit in
    ``gaps`` (``inf``: not visited yet): ``sampling="gap"`` draws each pass's ``n`` blocks with
    probabilities proportional to those gaps (Osokin et al. 2016, "Minding the gaps"), every
    ``gap_refresh``-th pass (and the first) being a permutation, which refreshes every estimate;
    ``"permutation"`` and ``"uniform"`` as :class:`StepRule`.  The rule counts ``passes``."""

    def set_sampling(self, sampling: str, gap_refresh: int) -> None:
        if sampling not in SAMPLINGS:
            raise StructpredError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
        self.sampling = sampling
        self.gap_refresh = check_positive_int(gap_refresh, "gap_refresh")

    def init_gaps(self, n: int) -> None:
        self.gaps = np.full(n, np.inf)
        self.passes = 0

    def draw_order(self, rng, n):
        if self.sampling != "gap" or self.passes % self.gap_refresh == 0:
            return super().draw_order(rng, n)
        p = np.maximum(self.gaps, 0.0)
        total = p.sum()
        if not total > 0.0:
            return super().draw_order(rng, n)
        return rng.choice(n, size=n, p=p / total).astype(np.int64)


class PassTimer:
    """Accumulates training time only (evaluation between passes is excluded)."""

    def __init__(self):
        self.total = 0.0
        self._t = None

    def __enter__(self):
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.total += time.perf_counter() - self._t


def make_rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def progress(iterable, verbose: bool, desc: str):
    if verbose:
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc)
    return iterable


def relative_gap(rec) -> float:
    """A history record's certified duality gap over its primal objective, ``gap / |primal|``."""
    return float(rec["gap"]) / abs(float(rec["primal"]))


def _converged(rec: dict, tol, rtol) -> bool:
    """The record's certified gap is below the absolute ``tol`` or the relative ``rtol``."""
    return (tol is not None and rec["gap"] <= tol) or (rtol is not None and rec["gap"] <= rtol * abs(rec["primal"]))


def checkpoint_key(rule: StepRule, problem) -> dict:
    """What a checkpoint must match to be resumed: the rule, the sample count, lambda, the features."""
    return {"version": 1, "rule": rule.name, "n": int(problem.n), "lam": float(problem.lam),
            "n_features": int(problem.fmap.n_features)}


def load_checkpoint(path, key: dict) -> dict | None:
    """The saved state of a fit at ``path`` (None when there is none); a file of another fit is
    an error, never silently resumed."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with path.open("rb") as fh:
            saved = pickle.load(fh)
    except Exception as exc:  # a truncated or foreign file
        raise StructpredError(f"checkpoint {path} cannot be read ({exc}); delete it to start the fit afresh") from None
    if not isinstance(saved, dict) or saved.get("key") != key:
        raise StructpredError(f"checkpoint {path} belongs to another fit ({saved.get('key') if isinstance(saved, dict) else '?'}, "
                              f"this one is {key}); delete it or give another path")
    return saved


def save_checkpoint(path, saved: dict) -> None:
    """Write a fit's state atomically (a crash mid-write leaves the previous checkpoint)."""
    with atomic_open(path, "wb") as fh:
        pickle.dump(saved, fh, protocol=pickle.HIGHEST_PROTOCOL)


def run(rule: StepRule, problem, *, n_passes=50, random_state=None, eval_every=1, tol=None, rtol=None,
        time_budget=None, X_val=None, y_val=None, evaluate=None, verbose=False, checkpoint=None) -> SolverResult:
    """Run ``rule`` on ``problem`` for at most ``n_passes`` passes.

    A pass is ``n`` steps in the order the rule's ``sampling`` asks for.  The objectives
    (and the validation loss on ``(X_val, y_val)``, decoded by the rule's
    surrogate) are recorded every ``eval_every`` passes and at the last one; training
    stops early when a recorded ``gap`` is ``<= tol``, or ``<= rtol * |primal|``, when the training time exceeds
    ``time_budget`` seconds, or when the rule is ``finished`` (that pass is then recorded).  ``evaluate(W)``, when given, returns
    more measures of the weights (held-out objectives, F1 scores) for each record; it is not
    timed as training.

    ``checkpoint``: a file where the rule's state, the sample-order generator, the history and
    the training time are saved after every pass; a run that finds one of the same fit
    (:func:`checkpoint_key`) continues after its last pass, with the result the uninterrupted
    run gives (and ``n_passes`` may be raised to train on).  The file is kept at the end.
    """
    n_passes = check_positive_int(n_passes, "n_passes")
    eval_every = check_positive_int(eval_every, "eval_every")
    if time_budget is not None and not float(time_budget) > 0:
        raise StructpredError(f"time_budget must be a positive number of seconds, got {time_budget}")
    if rtol is not None and not float(rtol) > 0:
        raise StructpredError(f"rtol must be a positive number, got {rtol}")
    rng = make_rng(random_state)
    space = problem.space
    val_map, y_val = check_validation(problem, X_val, y_val)
    rule.init(problem)
    timer = PassTimer()
    history = []
    first = 1
    key = checkpoint_key(rule, problem) if checkpoint is not None else None
    saved = load_checkpoint(checkpoint, key) if checkpoint is not None else None
    if saved is not None:
        rule.restore_state(saved["rule"])
        rng.bit_generator.state = saved["rng"]
        history, timer.total, first = saved["history"], saved["seconds"], saved["pass"] + 1
        log.info("%s: resuming after pass %d from %s", rule.name, saved["pass"], checkpoint)
        if saved["stopped"]:   # it had stopped (converged, out of time, finished): nothing to add
            return _resumed(rule.result(history), saved)
    for p in progress(range(first, n_passes + 1), verbose, rule.name):
        order = rule.draw_order(rng, problem.n)
        with timer:
            rule.start_epoch(p)
            rule.epoch(order)
            rule.end_epoch(p)
        out_of_time = time_budget is not None and timer.total >= float(time_budget)
        stop = False
        if p % eval_every == 0 or p == n_passes or out_of_time or rule.finished:
            rec = {"pass": p, **rule.objectives(), "oracle_calls": rule.oracle_calls, "seconds": timer.total}
            if val_map is not None:
                pred = rule.surrogate.predict(val_map.scores(rule.weights()))
                rec["val_loss"] = float(np.mean(space.loss(y_val, pred)))
            if evaluate is not None:
                rec.update(evaluate(rule.weights()))
            history.append(rec)
            stop = out_of_time or rule.finished or ("gap" in rec and _converged(rec, tol, rtol))
        if checkpoint is not None:
            save_checkpoint(checkpoint, {"key": key, "rule": rule.checkpoint_state(), "rng": rng.bit_generator.state,
                                         "history": history, "seconds": timer.total, "pass": p, "stopped": stop})
        if stop:
            break
    return _resumed(rule.result(history), saved)


def _resumed(result: SolverResult, saved: dict | None) -> SolverResult:
    result.resumed_seconds = float(saved["seconds"]) if saved is not None else 0.0
    return result
