"""Casimir's non-convex box score (§7.1.2) and its linearisation, in torch (CPU or GPU).

A box's conv4 map ``Phi`` holds 9 positions of 256 channels.  With ``w1`` (256 x 16) and ``w2``
(16 x 3 x 3, stored as 9 positions x 16) the score is ``phi(w) = <ELU(Phi w1), w2> =
sum_{p, k} w2[p, k] ELU(Z[p, k])`` with ``Z = Phi w1`` (a 1 x 1 convolution 256 -> 16).  The
parameters travel as one float64 vector ``w = (vec w1, vec w2)`` of 4240 numbers.

Prox-linear (Casimir Algorithm 5) needs the score map linearised at ``w_k``:
``phi(w_k + u) ~ phi(w_k) + J u`` with ``J u = <H, u2> + <G, Phi u1>``, ``H = ELU(Z)`` and
``G = ELU'(Z) * w2`` at ``w_k``; :class:`LinearisedScore` is that affine map as a joint feature
map over the candidates (scores ``c_i + J_i (u0 + z)`` of the variable ``z``), so the convex
solvers train it unchanged.
"""

from __future__ import annotations

import weakref

import numpy as np

from structpred.errors import StructpredError
from structpred.vision.alexnet import _torch as load

#: positions of the conv4 map, its channels, and the hidden channels of the 1 x 1 convolution
N_POS, C_IN, C_HID = 9, 256, 16
N_PARAMS = C_IN * C_HID + N_POS * C_HID


def _torch():
    return load()


def positions(features: np.ndarray) -> np.ndarray:
    """conv4 rows ``(m, 2304)`` (torch's channel-major order) as ``(m, 9, 256)``: per position its channels."""
    f = np.asarray(features)
    if f.ndim != 2 or f.shape[1] != C_IN * N_POS:
        raise StructpredError(f"conv4 features are (m, {C_IN * N_POS}) rows, got {f.shape}")
    return np.ascontiguousarray(f.reshape(len(f), C_IN, N_POS).transpose(0, 2, 1))


def split(w):
    """``(w1 (256, 16), w2 (9, 16))`` views of a parameter vector (numpy or torch)."""
    if w.shape != (N_PARAMS,):
        raise StructpredError(f"the score's parameters are a vector of {N_PARAMS}, got shape {tuple(w.shape)}")
    return w[: C_IN * C_HID].reshape(C_IN, C_HID), w[C_IN * C_HID:].reshape(N_POS, C_HID)


def init_params(seed: int) -> np.ndarray:
    """PyTorch's default initialisation of a 1 x 1 convolution and of a linear map (uniform in
    ``+-1/sqrt(fan_in)``), drawn from ``seed``: the same starting point for every method."""
    rng = np.random.default_rng(seed)
    w1 = rng.uniform(-1, 1, size=(C_IN, C_HID)) / np.sqrt(C_IN)
    w2 = rng.uniform(-1, 1, size=(N_POS, C_HID)) / np.sqrt(N_POS * C_HID)
    return np.concatenate([w1.ravel(), w2.ravel()])


class ConvScore:
    """``phi`` of every candidate of an example, its gradient and its linearisation (float64 on
    ``device``)."""

    def __init__(self, device: str = "cpu"):
        self.torch = _torch()
        self.device = device
        self._resident = {}

    def _t(self, a):
        return self.torch.as_tensor(np.asarray(a, dtype=np.float64), device=self.device)

    def _candidates(self, A: np.ndarray):
        """``A`` on the device, copied there once per array while it lives: the solvers score the
        same examples every pass, and on a GPU the copy costs more than the score itself.  ``A``
        is read-only from its first use on."""
        key = id(A)
        hit = self._resident.get(key)
        if hit is not None and hit[0]() is A:
            return hit[1]
        t = self._t(A)
        try:
            ref = weakref.ref(A, lambda _, d=self._resident, k=key: d.pop(k, None))
        except TypeError:                       # not an ndarray (a nested list): no copy kept
            return t
        self._resident[key] = (ref, t)
        return t

    def scores(self, A: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``phi`` of each candidate: ``A`` is ``(m, 9, 256)`` (:func:`positions`)."""
        torch = self.torch
        w1, w2 = split(self._t(w))
        with torch.no_grad():
            return (torch.nn.functional.elu(self._candidates(A) @ w1) * w2).sum(dim=(1, 2)).cpu().numpy()

    def vjp(self, A: np.ndarray, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``J^T g = sum_j g_j grad phi_j(w)`` by autograd."""
        torch = self.torch
        wt = self._t(w).requires_grad_(True)
        w1, w2 = split(wt)
        s = (torch.nn.functional.elu(self._candidates(A) @ w1) * w2).sum(dim=(1, 2))
        (grad,) = torch.autograd.grad(s, wt, grad_outputs=self._t(g))
        return grad.cpu().numpy()

    def linearise(self, A: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(phi(w), H, G)`` at ``w``: ``H = ELU(Z)``, ``G = ELU'(Z) * w2`` (each ``(m, 9, 16)``)."""
        torch = self.torch
        w1, w2 = split(self._t(w))
        with torch.no_grad():
            Z = self._candidates(A) @ w1
            H = torch.nn.functional.elu(Z)
            G = torch.where(Z > 0, torch.ones_like(Z), torch.exp(torch.clamp(Z, max=0.0))) * w2
            return (H * w2).sum(dim=(1, 2)).cpu().numpy(), H.cpu().numpy(), G.cpu().numpy()


class _CandidateScores:
    """What the box-score maps share: the examples' conv4 positions ``A`` and the parameter shape."""

    def __init__(self, A: list):
        if not A:
            raise StructpredError("a score map needs at least one example")
        self.A = A

    @property
    def n(self) -> int:
        return len(self.A)

    @property
    def n_features(self) -> int:
        return N_PARAMS

    @property
    def weight_shape(self) -> tuple:
        return (N_PARAMS,)

    def scores(self, W):
        return [self.score(i, W) for i in range(self.n)]


class LinearisedScore(_CandidateScores):
    """The joint map of a prox-linear subproblem: candidate scores ``v_i = c_i + J_i (u0 + z)`` of
    the variable ``z`` (4240 numbers), ``J_i`` the Jacobian of ``phi`` at ``w_k`` on example ``i``'s
    candidates ``A_i`` and ``c_i = phi(w_k)``."""

    def __init__(self, A: list, net: ConvScore, w: np.ndarray, u0: np.ndarray):
        super().__init__(A)
        lin = [net.linearise(a, w) for a in A]
        self.H = [h for _, h, _ in lin]
        self.G = [g for _, _, g in lin]
        self.c = [c for c, _, _ in lin]
        self.c = [c + self._apply(i, u0) for i, c in enumerate(self.c)]

    def _apply(self, i, u):
        u1, u2 = split(np.asarray(u, dtype=np.float64))
        return np.einsum("jpk,pk->j", self.H[i], u2) + np.einsum("jpk,jpk->j", self.G[i], self.A[i] @ u1)

    def _adjoint(self, i, g):
        g = np.asarray(g, dtype=np.float64)
        d1 = np.einsum("jpc,jpk->ck", self.A[i] * g[:, None, None], self.G[i])
        d2 = np.einsum("j,jpk->pk", g, self.H[i])
        return np.concatenate([d1.ravel(), d2.ravel()])

    def score(self, i, W):
        return self.c[i] + self._apply(i, W)

    def add(self, i, W, g):
        W += self._adjoint(i, g)

    def norm2(self, i, g):
        u = self._adjoint(i, g)
        return float(u @ u)


class ConvScoreMap(_CandidateScores):
    """The candidates' scores ``phi(w)`` of every example as a (non-linear) joint map: ``score``,
    ``scores`` and the adjoint ``vjp(i, w, g) = J_i(w)^T g``; no ``add``, since ``J`` depends on
    ``w`` (the convex solvers train its :class:`LinearisedScore` instead)."""

    def __init__(self, A: list, net: ConvScore):
        super().__init__(A)
        self.net = net

    def score(self, i, W):
        return self.net.scores(self.A[i], W)

    def vjp(self, i, W, g):
        return self.net.vjp(self.A[i], W, g)

    def linearise(self, W, u0) -> LinearisedScore:
        """The affine map ``z -> phi(W) + J(W) (u0 + z)`` on the same examples."""
        return LinearisedScore(self.A, self.net, W, u0)
