"""Benchmark: the torch paths of the VOC localisation pipeline on a GPU, against the same code on the CPU.

Usage: python bench/bench_gpu.py [--device cuda] [--boxes 1000] [--candidates 1000] [--repeat 5] [--seed 0] [--threads N]

Rows (each the best of ``--repeat`` timed calls after one warm-up call, so that cuDNN's algorithm
choice and numba / torch start-up are outside the timing):

* ``crops``: :func:`~structpred.vision.alexnet.crops` of ``--boxes`` random boxes of a 375 x 500
  image (PIL's bilinear resize to 64 x 64 and ImageNet normalisation): CPU only, whatever the
  device, so it bounds what a GPU can gain on feature extraction.
* ``conv4``: the AlexNet conv1..conv4 network (random weights, ``conv4_net(seed=0)``) on those
  crops in batches of 256, float32, host-to-device copy and copy back included
  (:func:`~structpred.vision.alexnet.crop_features`: ``box_features`` minus the crops).
* ``score`` / ``vjp``: the non-convex box score ``phi`` of Casimir's §7.1.2 experiment
  (``ConvScore.scores`` and ``ConvScore.vjp``, float64) on ``--candidates`` candidates of one
  example (``A`` of shape ``(m, 9, 256)``), as the solvers call it once per example and step:
  ``A`` is already on the device (``ConvScore`` copies each example there once).
* ``copy+score``: the same score on a new ``ConvScore`` each call, so that the host-to-device
  copy of ``A`` (18 MB at m = 1000) is timed too: what every call cost before the copy was kept.
* ``SGD pass`` / ``PL step``: training as the ``casimir_voc_nonconvex`` experiment runs it on
  ``--examples`` examples of ``--candidates`` candidates (random conv4 maps, random IoU-like
  losses, ``lambda = 1 / n``): one pass of :class:`~structpred.solvers.prox_linear.NonConvexSGD`
  and one prox-linear step (:class:`~structpred.solvers.prox_linear.ProxLinear`, one inner
  Casimir-SVRG epoch, K = 10), the driver's objective evaluation included; ``max |diff|`` is
  between the weights trained on each device.

``cpu/gpu`` is the time on the CPU over the time on the GPU (> 1: the GPU is faster), both in the
same process on the same inputs; the largest absolute difference between the two results is
printed beside it.  Without a GPU visible to torch the script says so and exits with status 0.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def best_time(fn, repeat: int) -> tuple[float, object]:
    out = fn()                       # warm-up: cuDNN autotuning, lazy CUDA context, caches
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="the GPU to compare with the CPU (a torch device name)")
    ap.add_argument("--boxes", type=int, default=1000)
    ap.add_argument("--candidates", type=int, default=1000)
    ap.add_argument("--examples", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    args = ap.parse_args(argv)

    import torch

    from structpred.vision.alexnet import conv4_net, crop_features, crops
    from structpred.outputs import Candidates
    from structpred.solvers.driver import run
    from structpred.solvers.problem import Problem
    from structpred.solvers.prox_linear import NonConvexSGD, ProxLinear
    from structpred.surrogates import Hinge
    from structpred.vision.score_net import ConvScore, ConvScoreMap, init_params

    if not torch.cuda.is_available():
        print("no GPU visible to torch: nothing to compare (run this on a machine with CUDA)")
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    print(f"GPU: {torch.cuda.get_device_name(args.device)}; CPU: {os.cpu_count()} cores, torch threads {torch.get_num_threads()}; "
          f"torch {torch.__version__}")

    image = rng.integers(0, 256, size=(375, 500, 3), dtype=np.uint8)
    x0 = rng.integers(0, 400, size=args.boxes)
    y0 = rng.integers(0, 300, size=args.boxes)
    boxes = np.stack([x0, y0, x0 + rng.integers(16, 100, size=args.boxes),
                      y0 + rng.integers(16, 75, size=args.boxes)], axis=1)
    t_crop, x = best_time(lambda: crops(image, boxes), args.repeat)

    def conv4(device):
        net = conv4_net(seed=0).to(device)
        return lambda: crop_features(net, x, device=device)

    A = rng.standard_normal((args.candidates, 9, 256)) * 0.1
    w = init_params(args.seed)
    g = rng.standard_normal(args.candidates)
    examples = [rng.standard_normal((args.candidates, 9, 256)) * 0.1 for _ in range(args.examples)]
    losses = [rng.uniform(size=args.candidates) for _ in range(args.examples)]

    def train(rule_class, **hyper):
        def make(device):
            problem = Problem(Candidates(), ConvScoreMap(examples, ConvScore(device)), losses, 1 / args.examples)

            def go():
                rule = rule_class(Hinge(Candidates()), **hyper)
                rule.start = init_params(args.seed)
                run(rule, problem, n_passes=1, random_state=args.seed)
                return rule.W
            return go
        return make

    rows = [("crops", f"{args.boxes} boxes", t_crop, None, None)]
    for name, size, make in [
        ("conv4", f"{args.boxes} boxes", conv4),
        ("score", f"{args.candidates} candidates", lambda d: (lambda net: lambda: net.scores(A, w))(ConvScore(d))),
        ("vjp", f"{args.candidates} candidates", lambda d: (lambda net: lambda: net.vjp(A, w, g))(ConvScore(d))),
        ("copy+score", f"{args.candidates} candidates", lambda d: (lambda: ConvScore(d).scores(A, w))),
        ("SGD pass", f"{args.examples} examples", train(NonConvexSGD, eta0=0.01)),
        ("PL step", f"{args.examples} examples", train(ProxLinear, eta=1.0, inner_passes=1, K=10)),
    ]:
        t_cpu, r_cpu = best_time(make("cpu"), args.repeat)
        t_gpu, r_gpu = best_time(make(args.device), args.repeat)
        rows.append((name, size, t_cpu, t_gpu, float(np.max(np.abs(np.asarray(r_cpu, float) - np.asarray(r_gpu, float))))))

    print(f"{'row':<10} {'size':<16} {'cpu ms':>10} {'gpu ms':>10} {'cpu/gpu':>8} {'max |diff|':>11}")
    for name, size, t_cpu, t_gpu, diff in rows:
        if t_gpu is None:
            print(f"{name:<10} {size:<16} {1e3 * t_cpu:10.1f} {'-':>10} {'-':>8} {'-':>11}")
        else:
            print(f"{name:<10} {size:<16} {1e3 * t_cpu:10.1f} {1e3 * t_gpu:10.1f} {t_cpu / t_gpu:8.1f} {diff:11.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
