"""Benchmark: OCR M4N's CPU time per GBCFW step, this checkout against another commit's source.

Usage: python bench/bench_m4n_step.py SPLIT.npz --base-src DIR [--words 2000] [--rounds 3] [--lam 0.015625]

The measure of the speed issue's table ("OCR M4N, CPU per GBCFW step, 298831b / HEAD"): M4N
(M4N Table 1's settings: 20 SP-MP iterations a node, the warm start mixed with 0.1 of the uniform
state) fitted on the first ``--words`` training words of an OCR split file (``SPLIT.npz``, as the
workflow writes it: ``data/features/m4n_table1/ocr/split0.npz``) for 1 pass and for 2 passes;
the CPU time per step is ``(cpu(2 passes) - cpu(1 pass)) / words``, so the set-up and the final
evaluation cancel and what is left is pass 2's steps, each a warm-started SP-MP oracle call
and its block update.  ``process_time`` of each fit, in a subprocess of its own per source tree
(``PYTHONPATH``: this checkout's ``src`` or ``--base-src``, before the caller's), the two trees alternated round by
round so that both see the same load; each subprocess compiles (or loads its cache) before
timing.  Prints each round's two times and their ratio base / ours (> 1: ours is faster), and
the CPU model.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
import numpy as np
from structpred.estimators import M4N
from structpred.features import Sequences
path, words, lam = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with np.load(path, allow_pickle=False) as d:
    X, y, off = d["X_train"], d["y_train"], d["offsets_train"]
off = off[: words + 1]
X, y = X[: off[-1]], y[: off[-1]]
seq = Sequences(X, off)
Y = seq.split_labels(y)
def fit(passes):
    est = M4N(loss="sequence_hamming", n_labels=26, lam=lam, n_passes=passes, n_iter_oracle=20,
              warm_start_oracle=True, random_state=0, eval_every=10)
    t0 = time.process_time()
    est.fit(seq, Y)
    return time.process_time() - t0
fit(1)   # compile or load every kernel first
print(json.dumps({"one": fit(1), "two": fit(2), "words": len(Y)}))
"""


def run(src: Path, split: str, words: int, lam: float) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(src), os.environ.get("PYTHONPATH")))))
    out = subprocess.run([sys.executable, "-c", _CHILD, split, str(words), str(lam)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("split", help="an OCR split file of the workflow (npz)")
    ap.add_argument("--base-src", required=True, type=Path, help="the other commit's src folder")
    ap.add_argument("--words", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lam", type=float, default=2.0 ** -6)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from structpred._numba_target import cpu_model

    ours = Path(__file__).resolve().parents[1] / "src"
    print(f"CPU: {cpu_model()}; OCR M4N, lambda {args.lam:g}, {args.words} training words, pass 2")
    print("round | base ms/step | ours ms/step | base / ours")
    for r in range(args.rounds):
        per = {}
        for name, src in (("base", args.base_src), ("ours", ours)):
            t = run(src, args.split, args.words, args.lam)
            per[name] = (t["two"] - t["one"]) / t["words"]
        print(f"{r + 1} | {1e3 * per['base']:.3f} | {1e3 * per['ours']:.3f} | {per['base'] / per['ours']:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
