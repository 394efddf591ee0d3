"""The run archive (``runs/<experiment>/<dataset>/<method>/split<k>.csv``): what the committed
tables were computed from, and what they cost.

Every job file holds its tidy rows; its ``seconds`` rows are the fitting time it recorded (one
per lambda for the M4N tables, one per repetition for QS's robust regression, one per job
elsewhere), and since 2026-11-27 their ``detail`` names the CPU they ran on (:func:`cpu_model`).
:func:`cost_table` sums them: ``structpred runs cost`` prints it, and the README's costs come
from it.  A job without a ``seconds`` row (the AGM emotion tables) counts as untimed, never as 0.
:func:`verify` reruns sampled jobs from raw data and compares their rows with the archive's
(timings excluded): ``structpred runs verify``.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.errors import ConfigError

LEVELS = ("experiment", "method", "dataset")


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def job_files(archive) -> list[Path]:
    """Every job file of the archive (``<experiment>/<dataset>/<method>/split<k>.csv``)."""
    root = Path(archive)
    if not root.is_dir():
        raise ConfigError(f"no run archive at {root}")
    return sorted(p for p in root.glob("*/*/*/split*.csv") if not p.name.endswith(".history.csv"))


def job_costs(archive) -> pd.DataFrame:
    """One row per job: experiment, dataset, method, split, its summed ``seconds`` (NaN: untimed)
    and the CPU models its seconds rows name."""
    records = []
    for path in job_files(archive):
        experiment, dataset, method = path.parts[-4:-1]
        rows = pd.read_csv(path, usecols=lambda c: c in ("metric", "value", "detail"), keep_default_na=False)
        timed = rows[rows["metric"] == "seconds"]
        cpus = sorted({str(d) for d in timed.get("detail", []) if str(d)})
        records.append({"experiment": experiment, "dataset": dataset, "method": method,
                        "split": path.stem.removeprefix("split"),
                        "seconds": float(pd.to_numeric(timed["value"]).sum()) if len(timed) else float("nan"),
                        "cpu": "; ".join(cpus)})
    return pd.DataFrame.from_records(records, columns=["experiment", "dataset", "method", "split", "seconds", "cpu"])


def cost_table(archive, by: str = "experiment") -> pd.DataFrame:
    """CPU cost per group (``by``: experiment, method = experiment and method, dataset = experiment,
    method and dataset): jobs, timed jobs, CPU-hours of the timed ones, and the CPU models recorded."""
    if by not in LEVELS:
        raise ConfigError(f"unknown grouping {by!r}; known: {', '.join(LEVELS)}")
    jobs = job_costs(archive)
    keys = list(LEVELS[: LEVELS.index(by) + 1])
    grouped = jobs.groupby(keys, sort=True)
    out = grouped.agg(jobs=("split", "size"), timed_jobs=("seconds", "count"),
                      cpu_hours=("seconds", lambda s: round(float(s.sum()) / 3600, 2) if s.notna().any()
                                 else float("nan")),
                      cpu=("cpu", lambda c: "; ".join(sorted({x for v in c for x in v.split("; ") if x}))))
    return out.reset_index()


def result_text(path) -> str:
    """A job file's rows as CSV text without its timing rows (``seconds``, and the CPU in their
    ``detail``): what a rerun must reproduce byte for byte."""
    rows = pd.read_csv(path, dtype=str, keep_default_na=False)
    return rows[rows["metric"] != "seconds"].to_csv(index=False, lineterminator="\n")


def sample_jobs(archive, n: int, seed: int, experiments=None, max_seconds: float | None = None) -> pd.DataFrame:
    """``n`` archived jobs drawn with ``seed`` (among ``experiments``, and those that recorded at
    most ``max_seconds`` of fitting when given), in archive order."""
    jobs = job_costs(archive)
    if experiments:
        unknown = sorted(set(experiments) - set(jobs["experiment"]))
        if unknown:
            raise ConfigError(f"no archived jobs of {', '.join(unknown)} in {archive}")
        jobs = jobs[jobs["experiment"].isin(experiments)]
    if max_seconds is not None:
        jobs = jobs[jobs["seconds"] <= max_seconds]
    if jobs.empty:
        raise ConfigError("no archived job matches (experiment, max seconds)")
    pick = np.sort(np.random.default_rng(seed).choice(len(jobs), min(n, len(jobs)), replace=False))
    return jobs.iloc[pick].reset_index(drop=True)


def verify(archive, jobs: pd.DataFrame, project, *, cores: int = 1, configfile=None) -> pd.DataFrame:
    """Rerun each of ``jobs`` from raw data with the workflow of ``project`` (a copy of it, in a
    temporary folder: the project's own ``results/`` are never touched) and compare its rows with
    the archive's, timings excluded.  Returns the jobs with ``status`` (identical / differs /
    failed) and ``detail`` (the first differing line, or the error's last line)."""
    import subprocess
    import sys
    import tempfile

    from structpred.workflow import project_copy

    project, archive = Path(project).resolve(), Path(archive).resolve()
    targets = [f"results/{r.experiment}/{r.dataset}/{r.method}/split{r.split}.csv" for r in jobs.itertuples()]
    with tempfile.TemporaryDirectory(prefix="structpred-verify-") as tmp:
        project_copy(project, tmp, exclude=("runs/", "results/", "reports/"))
        extra = ["--configfile", str(configfile)] if configfile else []
        proc = subprocess.run([sys.executable, "-m", "snakemake", *targets, "--cores", str(cores), "--keep-going",
                               *extra], cwd=tmp, capture_output=True, text=True)
        out = []
        for target in targets:
            mine, theirs = Path(tmp) / target, archive / target.removeprefix("results/")
            if not mine.is_file():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                out.append(("failed", tail[0]))
                continue
            a, b = result_text(theirs).splitlines(), result_text(mine).splitlines()
            first = next((f"line {i + 1}: archived {x!r}, rerun {y!r}" for i, (x, y) in enumerate(zip(a, b)) if x != y),
                         None if len(a) == len(b) else f"{len(a)} archived rows, {len(b)} rerun")
            out.append(("identical", "") if first is None else ("differs", first))
    return jobs.assign(status=[s for s, _ in out], detail=[d for _, d in out])


def plan_estimate(planned: dict[str, int], archive="runs") -> list[str]:
    """Lines estimating the CPU time of a planned run: per experiment, its planned jobs times the
    mean recorded seconds of its archived jobs (``unknown`` where none was timed)."""
    costs = job_costs(archive) if Path(archive).is_dir() else pd.DataFrame(columns=["experiment", "seconds"])
    mean = costs.dropna(subset=["seconds"]).groupby("experiment")["seconds"].mean()
    lines, total = [], 0.0
    for experiment, n in sorted(planned.items()):
        if experiment in mean.index:
            hours = n * float(mean[experiment]) / 3600
            total += hours
            lines.append(f"  {experiment:28s} {n:5d} jobs  ~{hours:7.2f} CPU-hours")
        else:
            lines.append(f"  {experiment:28s} {n:5d} jobs   unknown (never timed in {archive}/)")
    head = (f"planned: {sum(planned.values())} training jobs, ~{total:.1f} CPU-hours where the archive timed them "
            f"(its mean per job, at the settings it ran)")
    return [head, *lines]
