"""Numba kernels of AGM's exact adversarial game on a tree (AGM §3.2, eq. 6-9).

The game of one tree (``parents``, unaries ``U (T, R)``, edge scores ``P (T-1, R, R)`` indexed
``[parent label, child label]``, layout of :mod:`structpred.outputs._tree_kernels`) is

    max_{mu in local polytope} sum_t [w_t min_i (C r_t)_i + U_t^T r_t] + sum_{t>0} <P_{t-1}, Q_t>

with node marginals ``r_t``, edge joints ``Q_t`` (parent of ``t``, ``t``) and one of the node
losses ``C`` zero-one, absolute or squared (``kind``; ``w_t > 0`` its per-node scale).  Its
Lagrangian dual over the multipliers ``u (T-1, R)`` of ``Q_t 1 = r_{p(t)}`` (AGM eq. 7) splits
per node: ``g(u) = sum_t max_{r in simplex} a_t^T r + w_t min_i (C r)_i`` with ``a_t[b] = U_t[b] +
sum_{c in ch(t)} u_c[b] + max_a (P_{t-1}[a, b] - u_{t-1}[a])`` (AGM eq. 8), a closed form per
loss (:func:`node_game`).  ``g`` is convex and piecewise linear; :func:`solve_game` minimises
it by BFGS with a weak Wolfe line search (which handles the kinks, Lewis and Overton 2013).
Read at the iterate with a tolerance, the dual's optimal pieces (:func:`faces`: each node's
optimal vertices, each edge column's best parent labels) give both bounds: a feasible adversary
(:func:`recover`: vertex weights by non-negative least squares on the consistency equations
where a node has more than one vertex, then each edge joint by the earth mover's problem of AGM
eq. 9, :func:`max_transport`), whose exact value is a lower bound on the game, and the point
where those pieces tie (:func:`polish`), where ``g`` is an upper bound; both are exact once the
pieces are the optimal ones, which BFGS reaches long before its iterate converges.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.outputs._chain_kernels import _argsort_desc
from structpred.outputs._tree_kernels import make_feasible

ZERO_ONE, ABSOLUTE, SQUARED = 0, 1, 2

#: most optimal vertices kept per node in the recovery
_MAXV = 32
#: relative tolerances (times the scale of the node potentials) at which the recovery reads ties
_TIES = (1e-11, 1e-8, 1e-5)
#: BFGS iterations between two recoveries (each certifies the gap)
_CHECK_EVERY = 10
#: size (times the scale of the potentials) of the fixed offset of a cold start's multipliers
_JITTER = 1e-3
#: trial steps of one line search
_LS_TRIALS = 60


@njit(cache=True)
def node_game(a, w, kind, order, r):
    """``max_{r in simplex} a^T r + w min_i (C r)_i`` (AGM eq. 8) by its closed form; writes a
    maximiser to ``r`` and returns the value.

    Zero-one: uniform on the ``k`` largest ``a`` (sorted prefix grown while ``(j-1) a_(j) + w >=
    sum of the first j-1``), value ``(sum + (k-1) w) / k``.  Absolute: half on the best pair
    ``argmax a_i - w i`` and ``argmax a_j + w j``, value their mean.  Squared: the single maximum,
    or the pair ``i < j`` whose mean is ``k - 1/2`` (``i < k <= j``), the best of all such triples.
    """
    R = a.shape[0]
    r[:] = 0.0
    if kind == ZERO_ONE:
        _argsort_desc(a, order)
        s = a[order[0]]
        k = 1
        while k < R and k * a[order[k]] + w >= s:
            s += a[order[k]]
            k += 1
        for j in range(k):
            r[order[j]] = 1.0 / k
        return (s + (k - 1) * w) / k
    if kind == ABSOLUTE:
        bi = 0
        bj = 0
        for j in range(1, R):
            if a[j] - w * j >= a[bi] - w * bi:
                bi = j
            if a[j] + w * j > a[bj] + w * bj:
                bj = j
        r[bi] += 0.5
        r[bj] += 0.5
        return 0.5 * (a[bi] - w * bi + a[bj] + w * bj)
    best = a[0]
    bi = 0
    for j in range(1, R):
        if a[j] > best:
            best = a[j]
            bi = j
    bj = bi
    ri = 1.0
    for i in range(R):
        for j in range(i + 1, R):
            for k in range(i + 1, j + 1):
                pi = (2.0 * (j - k) + 1.0) / (2.0 * (j - i))
                val = pi * (a[i] + w * (k - i) * (k - i)) + (1.0 - pi) * (a[j] + w * (j - k) * (j - k))
                if val > best:
                    best = val
                    bi = i
                    bj = j
                    ri = pi
    r[bi] += ri
    r[bj] += 1.0 - ri
    return best


@njit(cache=True)
def _potentials(parents, U, P, u, acol, rows):
    """``acol[t] = a_t`` of AGM eq. 8 at multipliers ``u (T-1, R)`` and ``rows[t, b]`` the parent
    label attaining ``max_a P_{t-1}[a, b] - u_{t-1}[a]`` (ties to the smallest)."""
    T, R = U.shape
    acol[:] = U
    for t in range(1, T):
        p = parents[t]
        for b in range(R):
            acol[p, b] += u[t - 1, b]
    for t in range(1, T):
        for b in range(R):
            best = P[t - 1, 0, b] - u[t - 1, 0]
            arg = 0
            for a in range(1, R):
                x = P[t - 1, a, b] - u[t - 1, a]
                if x > best:
                    best = x
                    arg = a
            acol[t, b] += best
            rows[t, b] = arg


@njit(cache=True)
def game_dual(parents, U, P, w, kind, u, grad, r, acol, rows, order):
    """The dual ``g(u) = sum_t max_r a_t^T r + w_t min_i (C r)_i`` (AGM eq. 7) and its gradient
    ``grad[t-1] = r_{p(t)} - Q_t 1`` (the consistency residual of the nodes' maximisers, ``Q_t``
    putting column ``b``'s mass ``r_t[b]`` on row ``rows[t, b]``); ``r (T, R)`` the maximisers."""
    T, R = U.shape
    _potentials(parents, U, P, u, acol, rows)
    val = 0.0
    for t in range(T):
        val += node_game(acol[t], w[t], kind, order, r[t])
    for t in range(1, T):
        p = parents[t]
        for a in range(R):
            grad[t - 1, a] = r[p, a]
        for b in range(R):
            grad[t - 1, rows[t, b]] -= r[t, b]
    return val


@njit(cache=True)
def _node_value(a, w, C, r):
    """``a^T r + w min_i (C r)_i`` of one node."""
    R = a.shape[0]
    lo = np.inf
    for i in range(R):
        s = 0.0
        for j in range(R):
            s += C[i, j] * r[j]
        lo = min(lo, s)
    s = 0.0
    for j in range(R):
        s += a[j] * r[j]
    return s + w * lo


@njit(cache=True)
def _add_vertex(a, w, C, r, floor, V, n):
    """Append ``r`` to the vertices ``V[:n]`` if its value reaches ``floor`` and it is new; returns ``n``."""
    if n >= V.shape[0] or _node_value(a, w, C, r) < floor:
        return n
    R = r.shape[0]
    for k in range(n):
        same = True
        for j in range(R):
            if abs(V[k, j] - r[j]) > 1e-14:
                same = False
                break
        if same:
            return n
    V[n] = r
    return n + 1


@njit(cache=True)
def _face(a, w, kind, C, eps, order, r, V):
    """The vertices of ``max_r a^T r + w min_i (C r)_i`` whose value is within ``eps`` of the
    maximum (the optimal face, read with tolerance ``eps``), in ``V``; returns their number
    (the closed form's maximiser first)."""
    R = a.shape[0]
    best = node_game(a, w, kind, order, r)
    floor = best - 2.0 * eps
    V[0] = r
    n = 1
    if kind == ZERO_ONE:
        # uniform on the k largest: every k within eps, every choice among a's tied at the cut
        s = 0.0
        for k in range(1, R + 1):
            s += a[order[k - 1]]
            if (s + (k - 1) * w) / k < best - eps:
                continue
            th = a[order[k - 1]]
            above = 0
            tied = 0
            for j in range(R):
                if a[j] > th + eps:
                    above += 1
                elif a[j] >= th - eps:
                    tied += 1
            need = k - above
            if need < 1 or need > tied or tied > 16:
                continue
            for mask in range(1 << tied):
                cnt = 0
                for q in range(tied):
                    cnt += (mask >> q) & 1
                if cnt != need:
                    continue
                q = 0
                for j in range(R):
                    if a[j] > th + eps:
                        r[j] = 1.0 / k
                    elif a[j] >= th - eps:
                        r[j] = 1.0 / k if (mask >> q) & 1 else 0.0
                        q += 1
                    else:
                        r[j] = 0.0
                n = _add_vertex(a, w, C, r, floor, V, n)
    elif kind == ABSOLUTE:
        mi = -np.inf
        mj = -np.inf
        for j in range(R):
            mi = max(mi, a[j] - w * j)
            mj = max(mj, a[j] + w * j)
        for i in range(R):
            if a[i] - w * i < mi - eps:
                continue
            for j in range(R):
                if a[j] + w * j < mj - eps:
                    continue
                r[:] = 0.0
                r[i] += 0.5
                r[j] += 0.5
                n = _add_vertex(a, w, C, r, floor, V, n)
    else:
        for i in range(R):
            r[:] = 0.0
            r[i] = 1.0
            n = _add_vertex(a, w, C, r, floor, V, n)
        for i in range(R):
            for j in range(i + 1, R):
                for k in range(i + 1, j + 1):
                    r[:] = 0.0
                    r[i] = (2.0 * (j - k) + 1.0) / (2.0 * (j - i))
                    r[j] = 1.0 - r[i]
                    n = _add_vertex(a, w, C, r, floor, V, n)
    return n


@njit(cache=True)
def nnls(M, b, x):
    """``x = argmin_{x >= 0} ||M x - b||`` by Lawson and Hanson's active set method on the normal
    equations (Bro and De Jong's fast NNLS; a ridge of 1e-13 of the diagonal keeps each passive
    block solvable)."""
    m, n = M.shape
    G = M.T @ M
    h = M.T @ b
    x[:] = 0.0
    passive = np.zeros(n, dtype=np.bool_)
    top_diag = 1.0
    for k in range(n):
        top_diag = max(top_diag, G[k, k])
    tol = 1e-12 * top_diag * max(m, n)
    ridge = 1e-13 * top_diag
    for _ in range(3 * n + 3):
        grad = h - G @ x
        j = -1
        top = tol
        for k in range(n):
            if not passive[k] and grad[k] > top:
                top = grad[k]
                j = k
        if j < 0:
            break
        passive[j] = True
        for _ in range(3 * n + 3):
            idx = np.flatnonzero(passive)
            k_ = idx.shape[0]
            A = np.empty((k_, k_))
            for p_ in range(k_):
                for q in range(k_):
                    A[p_, q] = G[idx[p_], idx[q]]
                A[p_, p_] += ridge
            z = np.linalg.solve(A, h[idx])
            if np.all(z > 0.0):
                x[:] = 0.0
                x[idx] = z
                break
            alpha = 1.0
            for q in range(k_):
                if z[q] <= 0.0:
                    k = idx[q]
                    alpha = min(alpha, x[k] / (x[k] - z[q]))
            for q in range(k_):
                k = idx[q]
                x[k] += alpha * (z[q] - x[k])
                if x[k] <= tol:
                    x[k] = 0.0
                    passive[k] = False


@njit(cache=True)
def max_transport(D, p, q, Q):
    """``Q = argmax <D, Q>`` over ``Q >= 0`` with row sums ``p`` and column sums ``q`` (the maximum
    earth mover's problem of AGM eq. 9), by successive shortest paths on the residual graph."""
    R = p.shape[0]
    Q[:] = 0.0
    sup = p.copy()
    dem = q.copy()
    total = 0.0
    for a in range(R):
        total += p[a]
    tiny = 1e-15 * max(total, 1e-300)
    dist = np.empty(2 * R)
    pred = np.empty(2 * R, dtype=np.int64)
    for _ in range(4 * R * R + 4 * R):
        left = 0.0
        for a in range(R):
            left += max(sup[a], 0.0)
        if left <= tiny * R:
            break
        dist[:] = np.inf
        for a in range(R):
            if sup[a] > tiny:
                dist[a] = 0.0
                pred[a] = -1
        for _ in range(2 * R):           # Bellman-Ford: rows -> columns (cost -D), back along flows (+D)
            changed = False
            for a in range(R):
                if dist[a] < np.inf:
                    for b in range(R):
                        d = dist[a] - D[a, b]
                        if d < dist[R + b] - 1e-13:
                            dist[R + b] = d
                            pred[R + b] = a
                            changed = True
            for b in range(R):
                if dist[R + b] < np.inf:
                    for a in range(R):
                        if Q[a, b] > tiny:
                            d = dist[R + b] + D[a, b]
                            if d < dist[a] - 1e-13:
                                dist[a] = d
                                pred[a] = R + b
                                changed = True
            if not changed:
                break
        sink = -1
        for b in range(R):
            if dem[b] > tiny and (sink < 0 or dist[R + b] < dist[R + sink]):
                sink = b
        if sink < 0 or dist[R + sink] == np.inf:
            break
        amount = dem[sink]
        node = R + sink
        for _ in range(2 * R):          # the bottleneck along the path back to its source row
            a = pred[node]
            if pred[a] < 0:
                amount = min(amount, sup[a])
                break
            amount = min(amount, Q[a, pred[a] - R])
            node = pred[a]
        node = R + sink
        for _ in range(2 * R):
            a = pred[node]
            Q[a, node - R] += amount
            if pred[a] < 0:
                sup[a] -= amount
                break
            Q[a, pred[a] - R] -= amount
            node = pred[a]
        dem[sink] -= amount
    # whatever rounding left unshipped goes out in proportion (keeps Q feasible)
    left = 0.0
    for b in range(R):
        left += max(dem[b], 0.0)
    if left > 0.0:
        for a in range(R):
            if sup[a] > 0.0:
                for b in range(R):
                    if dem[b] > 0.0:
                        Q[a, b] += sup[a] * dem[b] / left


@njit(cache=True)
def _edge(P, allowed, rows, rp, rt, Q):
    """Edge joint of the recovery: column ``b``'s mass ``rt[b]`` on its best parent label
    ``rows[b]`` when that is the only ``allowed`` one for every column and the rows then sum to
    ``rp``, else :func:`max_transport`."""
    R = rp.shape[0]
    Q[:] = 0.0
    unique = True
    for b in range(R):
        if rt[b] <= 0.0:
            continue
        for a in range(R):
            if allowed[a, b] and a != rows[b]:
                unique = False
        Q[rows[b], b] = rt[b]
    if unique:
        for a in range(R):
            s = 0.0
            for b in range(R):
                s += Q[a, b]
            if abs(s - rp[a]) > 1e-13:
                unique = False
                break
    if not unique:
        max_transport(P, rp, rt, Q)


@njit(cache=True)
def faces(parents, U, P, w, kind, C, u, eps, acol, rows, V, nv, allowed):
    """The optimal pieces of the dual at ``u``, read with tolerance ``eps``: ``acol``, ``rows`` of
    :func:`_potentials`; each node's optimal vertices ``V[t, :nv[t]]`` (:func:`_face`, the closed
    form's first); ``allowed[t, a, b]``: parent label ``a`` within ``eps`` of column ``b``'s best
    (``t >= 1``), the entries an optimal edge joint may use (AGM eq. 7, complementary slackness)."""
    T, R = U.shape
    _potentials(parents, U, P, u, acol, rows)
    order = np.empty(R, dtype=np.int64)
    r = np.empty(R)
    for t in range(T):
        nv[t] = _face(acol[t], w[t], kind, C, eps, order, r, V[t])
    for t in range(1, T):
        for b in range(R):
            top = P[t - 1, rows[t, b], b] - u[t - 1, rows[t, b]]
            for a in range(R):
                allowed[t, a, b] = P[t - 1, a, b] - u[t - 1, a] >= top - eps


@njit(cache=True)
def _vertex_weights(parents, V, nv, allowed, coupled, comp, c, node):
    """The vertex weights of the multi-vertex nodes of component ``c`` (nodes joined by coupled
    edges): :func:`nnls` on their consistency equations, whose unknowns are the weights and the
    entries of the component's edges in columns with more than one allowed parent label (a
    column with one puts its mass there); writes those nodes' marginals to ``node``."""
    T, R = node.shape
    lam_off = np.full(T, -1, dtype=np.int64)
    nvar = 0
    n_nodes = 0
    for t in range(T):
        if comp[t] == c and nv[t] > 1:
            lam_off[t] = nvar
            nvar += nv[t]
            n_nodes += 1
    q_off = np.full((T, R, R), -1, dtype=np.int64)
    one_row = np.full((T, R), -1, dtype=np.int64)
    n_edges = 0
    n_shared = 0
    for t in range(1, T):
        if not coupled[t] or comp[t] != c:
            continue
        n_edges += 1
        for b in range(R):
            first = nvar
            for a in range(R):
                if allowed[t, a, b]:
                    q_off[t, a, b] = nvar
                    one_row[t, b] = a
                    nvar += 1
            if nvar == first + 1:
                q_off[t, one_row[t, b], b] = -1
                nvar = first
            else:
                one_row[t, b] = -1
                n_shared += 1
    M = np.zeros((n_nodes + n_shared + R * n_edges, nvar))
    rhs = np.zeros(M.shape[0])
    e = 0
    for t in range(T):
        if lam_off[t] >= 0:               # the weights sum to one
            for k in range(nv[t]):
                M[e, lam_off[t] + k] = 1.0
            rhs[e] = 1.0
            e += 1
    for t in range(1, T):
        p = parents[t]
        if not coupled[t] or comp[t] != c:
            continue
        for b in range(R):                # shared columns: sum_a Q_t[a, b] = r_t[b]
            if one_row[t, b] >= 0:
                continue
            for a in range(R):
                if q_off[t, a, b] >= 0:
                    M[e, q_off[t, a, b]] = 1.0
            if lam_off[t] >= 0:
                for k in range(nv[t]):
                    M[e, lam_off[t] + k] = -V[t, k, b]
            else:
                rhs[e] = node[t, b]
            e += 1
        for a in range(R):                # rows: sum_b Q_t[a, b] = r_p[a]
            for b in range(R):
                if q_off[t, a, b] >= 0:
                    M[e, q_off[t, a, b]] = 1.0
                elif one_row[t, b] == a:
                    if lam_off[t] >= 0:
                        for k in range(nv[t]):
                            M[e, lam_off[t] + k] += V[t, k, b]
                    else:
                        rhs[e] -= node[t, b]
            if lam_off[p] >= 0:
                for k in range(nv[p]):
                    M[e, lam_off[p] + k] -= V[p, k, a]
            else:
                rhs[e] += node[p, a]
            e += 1
    x = np.empty(nvar)
    nnls(M, rhs, x)
    for t in range(T):
        if lam_off[t] < 0:
            continue
        s = 0.0
        for k in range(nv[t]):
            s += x[lam_off[t] + k]
        if s <= 0.0:
            continue
        node[t] = 0.0
        for k in range(nv[t]):
            for j in range(R):
                node[t, j] += x[lam_off[t] + k] / s * V[t, k, j]


@njit(cache=True)
def recover(parents, U, P, w, C, rows, V, nv, allowed, node, edge, nu):
    """A feasible adversary on the optimal pieces of :func:`faces` and its exact value
    ``min_nu F(nu, mu)``.

    A node with one optimal vertex takes it; the weights of the vertices of the others solve the
    consistency equations of their edges (``Q_t 1 = r_{p(t)}``, ``Q_t^T 1 = r_t``, ``Q_t`` on the
    ``allowed`` entries), one component of nodes joined by constraining edges at a time
    (:func:`_vertex_weights`); then each edge joint from its nodes' marginals (:func:`_edge`),
    :func:`make_feasible`, and ``nu`` the min player's best response (one-hot).  Writes
    ``node (T, R)``, ``edge (T-1, R, R)``, ``nu (T, R)``; returns the value.
    """
    T, R = node.shape
    # an edge next to a multi-vertex node constrains the marginals unless every entry is allowed
    # (any coupling then is); components: nodes joined by such edges (parents come first)
    coupled = np.zeros(T, dtype=np.bool_)
    comp = np.arange(T)
    multi = np.zeros(T, dtype=np.bool_)
    for t in range(T):
        node[t] = V[t, 0]
        if t > 0 and (nv[t] > 1 or nv[parents[t]] > 1):
            for a in range(R):
                for b in range(R):
                    if not allowed[t, a, b]:
                        coupled[t] = True
            if coupled[t]:
                comp[t] = comp[parents[t]]
        if nv[t] > 1:
            multi[comp[t]] = True
    for c in range(T):
        if multi[c]:
            _vertex_weights(parents, V, nv, allowed, coupled, comp, c, node)
    for t in range(1, T):
        _edge(P[t - 1], allowed[t], rows[t], node[parents[t]], node[t], edge[t - 1])
    nu[:] = 1.0
    make_feasible(parents, node, edge, nu)
    value = 0.0
    for t in range(T):
        lo = np.inf
        arg = 0
        for i in range(R):
            s = 0.0
            for j in range(R):
                s += C[i, j] * node[t, j]
            if s < lo:
                lo = s
                arg = i
        nu[t] = 0.0
        nu[t, arg] = 1.0
        value += w[t] * lo
        for j in range(R):
            value += U[t, j] * node[t, j]
    for e in range(T - 1):
        for a in range(R):
            for b in range(R):
                value += P[e, a, b] * edge[e, a, b]
    return value


@njit(cache=True)
def _find(root, e):
    """Union-find: the representative of edge ``e``'s block (with path halving)."""
    while root[e] != e:
        root[e] = root[root[e]]
        e = root[e]
    return e


@njit(cache=True)
def polish(parents, P, w, C, u, acol, rows, V, nv, allowed, out):
    """``out = u + delta`` with ``delta`` the least-norm move that makes the optimal pieces of
    :func:`faces` exactly tied: the vertices of each node equal in value, the allowed parent
    labels of each column equal in ``P_{t-1}[a, b] - u_{t-1}[a]``.  When the pieces are the
    optimal ones, the dual is constant on that affine set near the optimum (a convex combination
    of their gradients vanishes), so ``out`` is a minimiser; returns the number of equations.

    ``delta``'s blocks are the edges' multipliers ``delta_{t-1} (R,)``: a column's equations hold
    one block, a node's vertex equations its own edge's and its children's.  The least-norm
    least-squares problem splits over the connected groups of blocks, each solved on its own
    (``np.linalg.lstsq`` of its rows and columns; on a cold start's ties, hundreds of rows in
    blocks of ``R`` columns, instead of one system over all ``(T - 1) R`` columns).  Singular
    values below numpy's default cutoff count as zero, so dependent equations (ties) still give
    the least-norm move."""
    T, R = acol.shape
    n = (T - 1) * R
    m = 0
    for t in range(T):
        m += nv[t] - 1
    for t in range(1, T):
        for b in range(R):
            for a in range(R):
                if allowed[t, a, b] and a != rows[t, b]:
                    m += 1
    out[:] = u
    if m == 0 or n == 0:
        return 0
    E = np.zeros((m, n))
    rhs = np.zeros(m)
    block = np.empty(m, dtype=np.int64)     # an edge of each row's group
    root = np.arange(T - 1)
    i = 0
    for t in range(T):
        if nv[t] < 2:
            continue
        first = t - 1
        for c in range(t + 1, T):
            if parents[c] == t:
                if first < 0:
                    first = c - 1
                else:
                    root[_find(root, c - 1)] = _find(root, first)
        v0 = _node_value(acol[t], w[t], C, V[t, 0])
        for k in range(1, nv[t]):
            # sum_b (V_k - V_0)[b] (sum_{c in ch(t)} delta_c[b] - delta_t[rows[t, b]]) = v0 - v_k
            for b in range(R):
                d = V[t, k, b] - V[t, 0, b]
                if d == 0.0:
                    continue
                for c in range(t + 1, T):
                    if parents[c] == t:
                        E[i, (c - 1) * R + b] += d
                if t > 0:
                    E[i, (t - 1) * R + rows[t, b]] -= d
            rhs[i] = v0 - _node_value(acol[t], w[t], C, V[t, k])
            block[i] = max(first, 0)
            i += 1
    for t in range(1, T):
        for b in range(R):
            a0 = rows[t, b]
            for a in range(R):
                if allowed[t, a, b] and a != a0:
                    E[i, (t - 1) * R + a] = 1.0
                    E[i, (t - 1) * R + a0] = -1.0
                    rhs[i] = (P[t - 1, a, b] - u[t - 1, a]) - (P[t - 1, a0, b] - u[t - 1, a0])
                    block[i] = t - 1
                    i += 1
    group = np.empty(T - 1, dtype=np.int64)
    for e in range(T - 1):
        group[e] = _find(root, e)
    for g in range(T - 1):
        if group[g] != g:
            continue
        edges = np.nonzero(group == g)[0]
        sel = np.nonzero(group[block] == g)[0]
        if sel.shape[0] == 0:
            continue                        # no equation: the least-norm move is 0
        cols = np.empty(edges.shape[0] * R, dtype=np.int64)
        for k in range(edges.shape[0]):
            for a in range(R):
                cols[k * R + a] = edges[k] * R + a
        Es = np.empty((sel.shape[0], cols.shape[0]))
        for r in range(sel.shape[0]):
            for j in range(cols.shape[0]):
                Es[r, j] = E[sel[r], cols[j]]
        delta = np.linalg.lstsq(Es, rhs[sel], rcond=max(Es.shape) * np.finfo(np.float64).eps)[0]
        for j in range(cols.shape[0]):
            out[cols[j] // R, cols[j] % R] += delta[j]
    return m


@njit(cache=True)
def solve_game(parents, U, P, w, kind, C, u, tol, max_iter, jitter, node, edge, nu):
    """Minimise the dual ``g`` (AGM eq. 7) over the multipliers ``u (T-1, R)`` (in place: the warm
    state: the multipliers of the best upper bound at the end) by BFGS with a weak Wolfe line
    search, stopping once ``g(u) - value <= tol`` or after ``max_iter`` iterations.

    At the start, every ``_CHECK_EVERY`` iterations, at a zero gradient and at a failed line
    search the solver reads the dual's optimal pieces at each tolerance of ``_TIES`` (times the
    scale of the potentials, :func:`faces`), recovers a feasible adversary from them
    (:func:`recover`, keeping the best: ``value``) and evaluates ``g`` where they tie
    (:func:`polish`, keeping the lowest: ``upper``): once the pieces are the optimal ones, both
    bounds are exact.  Writes the best adversary's ``node (T, R)``, ``edge (T-1, R, R)`` and the min
    player's best response ``nu (T, R)``; returns ``(value, upper, iterations)``.
    """
    T, R = U.shape
    n = (T - 1) * R
    Tm = max(T - 1, 0)
    x = u.reshape(n).copy()                 # the BFGS iterate; u keeps the best multipliers
    xm = x.reshape(Tm, R)
    g = np.empty(n)
    gn = np.empty(n)
    xn = np.empty(n)
    r = np.empty((T, R))
    acol = np.empty((T, R))
    rows = np.empty((T, R), dtype=np.int64)
    order = np.empty(R, dtype=np.int64)
    V = np.empty((T, _MAXV, R))
    nv = np.empty(T, dtype=np.int64)
    allowed = np.zeros((T, R, R), dtype=np.bool_)
    tn = np.empty((T, R))
    te = np.empty((Tm, R, R))
    tnu = np.empty((T, R))
    up = np.empty((Tm, R))
    gp = np.empty((Tm, R))
    scale = max(1.0, np.max(w), np.max(np.abs(U)))
    if T > 1:
        scale = max(scale, np.max(np.abs(P)))
    f = game_dual(parents, U, P, w, kind, xm, g.reshape(Tm, R), r, acol, rows, order)
    upper = f
    lower = -np.inf
    H = np.eye(n)
    fresh = True
    failed = False
    since = _CHECK_EVERY
    it = 0
    while True:
        gmax = 0.0
        for i in range(n):
            gmax = max(gmax, abs(g[i]))
        last = it >= max_iter or failed or gmax == 0.0
        if f < upper:
            upper = f
            u[:] = xm
        if since >= _CHECK_EVERY or gmax <= 1e-12 * scale or last:
            since = 0
            for rel in _TIES:
                faces(parents, U, P, w, kind, C, xm, rel * scale, acol, rows, V, nv, allowed)
                v = recover(parents, U, P, w, C, rows, V, nv, allowed, tn, te, tnu)
                if v > lower:
                    lower = v
                    node[:] = tn
                    edge[:] = te
                    nu[:] = tnu
                if upper - lower <= tol:
                    break
                # the tied point bounds the game from above; BFGS goes on from x (a point on
                # exact kinks would stall it)
                if polish(parents, P, w, C, xm, acol, rows, V, nv, allowed, up) > 0:
                    fp = game_dual(parents, U, P, w, kind, up, gp, r, acol, rows, order)
                    if fp < upper:
                        upper = fp
                        u[:] = up
                        if upper - lower <= tol:
                            break
            if upper - lower <= tol or last:
                break
            if it == 0 and jitter:
                # a cold start sits on the kinks of tied scores, where BFGS stalls: leave them
                for i in range(n):
                    x[i] += _JITTER * scale * ((i * 0.6180339887498949) % 1.0 - 0.5)
                f = game_dual(parents, U, P, w, kind, xm, g.reshape(Tm, R), r, acol, rows, order)
        d = -(H @ g)
        gd = g @ d
        if gd >= 0.0:
            H = np.eye(n)
            fresh = True
            d = -g.copy()
            gd = g @ d
        lo = 0.0
        hi = np.inf
        step = 1.0
        ok = False
        fn = f
        for _ in range(_LS_TRIALS):
            for i in range(n):
                xn[i] = x[i] + step * d[i]
            fn = game_dual(parents, U, P, w, kind, xn.reshape(Tm, R), gn.reshape(Tm, R), r, acol, rows, order)
            if fn > f + 1e-4 * step * gd:
                hi = step
            elif gn @ d < 0.9 * gd:
                lo = step
            else:
                ok = True
                break
            step = 0.5 * (lo + hi) if hi < np.inf else 2.0 * lo
        it += 1
        since += 1
        if not ok:
            # no weak Wolfe step: restart from the steepest descent; stop if that fails too
            failed = fresh
            H = np.eye(n)
            fresh = True
            continue
        s = xn - x
        y = gn - g
        sy = s @ y
        x[:] = xn
        g[:] = gn
        f = fn
        if sy > 0.0:
            if fresh:
                H *= sy / (y @ y)
                fresh = False
            rho = 1.0 / sy
            Hy = H @ y
            c = (1.0 + rho * (y @ Hy)) * rho
            for i in range(n):          # H += c s s^T - rho (Hy s^T + s Hy^T), in place
                for j in range(n):
                    H[i, j] += c * s[i] * s[j] - rho * (Hy[i] * s[j] + s[i] * Hy[j])
    return lower, upper, it
