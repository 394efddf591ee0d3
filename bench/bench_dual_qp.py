"""Benchmark: the dual QP (``DualQP``) against cvxpy + Clarabel on the primal, for M3N and M4N.

Usage: python bench/bench_dual_qp.py [--n 240] [--d 200] [--k 10] [--lam 0.001]

A multiclass ordinal problem of the size of a Table 1 ordinal fit (auto: 236 training samples,
200 Nystrom features, 10 bins): Gaussian inputs, labels from a noisy linear model.  Both sides
solve ``(1/n) sum_i S(W^T x_i, y_i) + lam/2 ||W||^2``, the reference as a cvxpy problem on the
primal (M3N: the hinge's max over labels; M4N: ``max_mu min_nu`` written, by LP duality, as a min
over the adversary's ``nu`` of a max over labels), both with Clarabel.  It prints each side's
wall time, objectives and our time / the reference's, and checks that our certified gap is
below 1e-6 of the objective and that the two optima agree.
"""

from __future__ import annotations

import argparse
import time

import cvxpy as cp
import numpy as np

from structpred.outputs import Multiclass
from structpred.solvers import dual_qp, primal_objective
from structpred.surrogates import Hinge, MaxMinMargin


def data(n: int, d: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    s = X @ rng.normal(size=d) * 3.0 + 0.5 * rng.normal(size=n)
    y = np.clip(np.digitize(s, np.quantile(s, np.linspace(0, 1, k + 1)[1:-1])), 0, k - 1)
    return X, y


def cvx_primal(space, X, y, lam: float, maxmin: bool) -> float:
    n, d = X.shape
    k = space.k
    W = cp.Variable((d, k))
    V = X @ W
    A = space.loss_matrix                      # A[true, predicted]
    vy = cp.sum(cp.multiply(np.eye(k)[y], V), axis=1)
    cons = []
    if maxmin:                                 # max_mu min_nu nu^T A mu + v.mu = min_nu max_j (A^T nu + v)_j
        N = cp.Variable((n, k), nonneg=True)
        cons = [cp.sum(N, axis=1) == 1]
        inner = cp.max(N @ A + V, axis=1)
    else:
        inner = cp.max(A[y] + V, axis=1)
    prob = cp.Problem(cp.Minimize(cp.sum(inner - vy) / n + lam / 2 * cp.sum_squares(W)), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=240)
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--lam", type=float, default=1e-3)
    args = ap.parse_args()
    X, y = data(args.n, args.d, args.k)
    space = Multiclass.ordinal(args.k)
    print(f"ordinal multiclass, n = {args.n}, d = {args.d}, k = {args.k}, lam = {args.lam}")
    for name, sur in (("M3N", Hinge(space)), ("M4N", MaxMinMargin(space, game="exact"))):
        t = time.perf_counter()
        res = dual_qp(sur, X, y, args.lam)
        ours = time.perf_counter() - t
        rec = res.history[-1]
        t = time.perf_counter()
        ref = cvx_primal(space, X, y, args.lam, maxmin=name == "M4N")
        theirs = time.perf_counter() - t
        mine = primal_objective(sur, X, y, res.W, args.lam)
        print(f"{name}: DualQP {ours:.2f} s (primal {rec['primal']:.8f}, dual {rec['dual']:.8f}, "
              f"gap/primal {rec['gap'] / rec['primal']:.1e}); cvxpy+Clarabel on the primal {theirs:.2f} s "
              f"(optimum {ref:.8f}); time ratio ours / reference = {ours / theirs:.2f}")
        assert rec["gap"] <= 1e-6 * rec["primal"] and abs(mine - rec["primal"]) < 1e-12
        assert rec["dual"] - 1e-7 <= ref <= rec["primal"] + 1e-7


if __name__ == "__main__":
    main()
