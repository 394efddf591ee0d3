"""The main job's wall time on N cores, from the run archive's recorded seconds and the workflow's
job graph: ``structpred runs cost --simulate-cores N [N ...]``.

Each archived job is a task of its recorded fitting seconds (each fit's wall seconds, scaled to
the job's CPU seconds where its numerics record keeps them: a busy machine inflates wall time); a
job that fits its lambdas
``threads`` at a time (an experiment's :meth:`~structpred.papers.registry.Experiment.threads`)
holds ``min(threads, N)`` cores for the longest-processing-time schedule of its per-lambda seconds
on them; on the datasets its experiment fits a lambda per job
(:meth:`~structpred.papers.registry.Experiment.lambda_jobs`), each lambda's seconds are a one-core
task of their own (key ``(..., "lambda<i>")``), which the job (0 seconds) waits for.  A job whose threads run inside each fit (its numerics record's ``fit_threads``: AGM's
SRL fits) is a task of its fits' wall seconds on that many cores (not scaled to its CPU seconds, the
sum over its threads) that holds ``min(threads, N)`` cores; on fewer cores than it ran on, its
time grows in proportion (as if its threads had scaled perfectly).  A job waits for the jobs whose results it reads
(:meth:`~structpred.papers.registry.Experiment.run_inputs`).  The schedule is list scheduling
by critical path: whenever cores are free, the ready job with the longest chain of work after it
starts first.  Data preparation and feature jobs are not timed by the archive and count as 0;
untimed jobs (no ``seconds`` rows, no CPU seconds) and configured jobs the archive lacks are left out and counted.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.papers.registry import get
from structpred.report.archive_costs import job_cpu_seconds, job_fit_threads


@dataclass
class Task:
    """One job: its key, per-part seconds (a lambda's fit each, or one part), threads, upstream keys,
    and the threads each part's seconds were measured on (``fit_threads``: above 1, the parts run one
    after another, each on the job's threads)."""

    key: tuple
    parts: list[float]
    threads: int
    deps: list[tuple] = field(default_factory=list)
    fit_threads: int = 1

    def wall(self, cores: int) -> tuple[float, int]:
        """(wall seconds, cores held) on a machine of ``cores``: LPT of the parts on its threads, or
        (``fit_threads`` above 1) the parts in turn on ``min(threads, cores)`` cores."""
        if self.fit_threads > 1:
            k = max(1, min(self.threads, cores))
            return sum(self.parts) * self.fit_threads / min(self.fit_threads, k), k
        k = max(1, min(self.threads, cores, len(self.parts)))
        loads = [0.0] * k
        for p in sorted(self.parts, reverse=True):
            i = loads.index(min(loads))
            loads[i] += p
        return max(loads), k


def tasks(archive, config: dict) -> tuple[list[Task], dict[str, int]]:
    """The timed archived jobs of the configured experiments as tasks, and counts of those left out
    (``untimed``, ``not archived``)."""
    out, left = [], {"untimed": 0, "not archived": 0}
    for name in config["experiments"]:
        exp = get(name)
        for dataset, method, split in exp.jobs(config):
            path = Path(archive) / name / dataset / method / f"split{split}.csv"
            if not path.is_file():
                left["not archived"] += 1
                continue
            rows = pd.read_csv(path, usecols=["metric", "value"])
            seconds = pd.to_numeric(rows.loc[rows["metric"] == "seconds", "value"]).tolist()
            fit_threads = job_fit_threads(path)
            cpu = job_cpu_seconds(path) if fit_threads == 1 else float("nan")   # threaded: the sum over threads
            if not np.isnan(cpu):   # its fits' shares of the job's CPU seconds (one part if it timed none)
                seconds = [s * cpu / sum(seconds) for s in seconds] if sum(seconds) > 0 else [cpu]
            if not seconds:
                left["untimed"] += 1
                continue
            source = exp.runs_source(config, dataset, method)
            deps = [(source, d, m, split if k is None else k) for d, m, k in exp.run_inputs(config, dataset, method)]
            key = (name, dataset, method, split)
            if fit_threads == 1 and len(seconds) == exp.lambda_jobs(config, dataset, method) > 1:
                fits = [Task((*key, f"lambda{i}"), [s], 1, deps) for i, s in enumerate(seconds)]
                out += [*fits, Task(key, [0.0], 1, [f.key for f in fits])]   # the job reads its lambda jobs' fits
                continue
            out.append(Task(key, seconds, exp.threads(config, dataset, method), deps, fit_threads))
    return out, left


def makespan(jobs: list[Task], cores: int) -> tuple[float, Task | None]:
    """Wall seconds of the whole run on ``cores`` (list scheduling by critical path), and the job
    whose own wall time is longest (a bound no schedule beats)."""
    known = {t.key: t for t in jobs}
    wall = {t.key: t.wall(cores) for t in jobs}
    deps = {t.key: [d for d in t.deps if d in known] for t in jobs}
    children: dict[tuple, list[tuple]] = {k: [] for k in known}
    for k, ds in deps.items():
        for d in ds:
            children[d].append(k)
    level: dict[tuple, float] = {}

    def bottom(k):   # longest chain of work from k's start to the end (iterative: no deep recursion)
        stack = [k]
        while stack:
            top = stack[-1]
            todo = [c for c in children[top] if c not in level]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            level[top] = wall[top][0] + max((level[c] for c in children[top]), default=0.0)
        return level[k]

    for k in known:
        bottom(k)
    waiting = {k: len(ds) for k, ds in deps.items()}
    ready = [(-level[k], k) for k, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    running: list[tuple[float, tuple]] = []
    now, free, end = 0.0, cores, 0.0
    while ready or running:
        held = []
        while ready and free > 0:   # every job holds a core: none starts on none
            prio, k = heapq.heappop(ready)
            if wall[k][1] <= free:
                free -= wall[k][1]
                heapq.heappush(running, (now + wall[k][0], k))
            else:
                held.append((prio, k))
        for item in held:
            heapq.heappush(ready, item)
        now, k = heapq.heappop(running)
        end = max(end, now)
        free += wall[k][1]
        for c in children[k]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, (-level[c], c))
    return end, max(known.values(), key=lambda t: wall[t.key][0], default=None)
