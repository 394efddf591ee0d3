"""The run archive (``runs/<experiment>/<dataset>/<method>/split<k>.csv``): what the committed
tables were computed from, and what they cost.

Every job file holds its tidy rows; its ``seconds`` rows are the wall time of its fits (one
per lambda for the M4N tables, one per repetition for QS's robust regression, one per job
elsewhere), and since 2026-11-27 their ``detail`` names the CPU they ran on (:func:`cpu_model`).
Since 2026-11-29 its numerics record also keeps the job's CPU seconds (:mod:`structpred.runs.job_cpu`),
which a busy machine does not inflate.  :func:`cost_table` sums each job's CPU seconds where
recorded, else its wall seconds: ``structpred runs cost`` prints it, and the README's costs come
from it.  A job with neither (the AGM emotion tables) counts as untimed, never as 0.
:func:`verify` reruns sampled jobs from raw data, reusing the archived outputs of the jobs they read,
and compares their rows with the archive's (timings excluded): ``structpred runs verify``.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.errors import ConfigError
from structpred.io import atomic_open
from structpred.papers.registry import get
from structpred.report.archive_costs import job_costs
from structpred.report.provenance import git_commit
from structpred.workflow import project_copy

LEVELS = ("experiment", "method", "dataset")

#: what no job reads: the run archive (a rerun archives into it chunk by chunk) and the rendered
#: report; a job's commit is not "+dirty" for changes there (:func:`job_commit`)
NOT_READ_BY_JOBS = ("runs", "reports")


def job_commit(project=".") -> str:
    """The commit a job in ``project`` runs at (:func:`~structpred.report.provenance.git_commit`),
    "+dirty" only for uncommitted changes a job can read: not for :data:`NOT_READ_BY_JOBS`."""
    return git_commit(project, ignore=[Path(project).resolve() / p for p in NOT_READ_BY_JOBS])


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cost_table(archive, by: str = "experiment") -> pd.DataFrame:
    """CPU cost per group (``by``: experiment, method = experiment and method, dataset = experiment,
    method and dataset): jobs, timed jobs, CPU-hours of the timed ones, and the CPU models recorded."""
    if by not in LEVELS:
        raise ConfigError(f"unknown grouping {by!r}; known: {', '.join(LEVELS)}")
    jobs = job_costs(archive)
    keys = list(LEVELS[: LEVELS.index(by) + 1])
    grouped = jobs.groupby(keys, sort=True)
    out = grouped.agg(jobs=("split", "size"), timed_jobs=("seconds", "count"),
                      wall_jobs=("measure", lambda m: int((m == "wall").sum())),
                      cpu_hours=("seconds", lambda s: round(float(s.sum()) / 3600, 2) if s.notna().any()
                                 else float("nan")),
                      cpu=("cpu", lambda c: "; ".join(sorted({x for v in c for x in v.split("; ") if x}))))
    return out.reset_index()


def result_text(path) -> str:
    """A job file's rows as CSV text without its timing rows (``seconds`` and every ``*_seconds``
    metric such as agm_srl_full's ``refit_seconds``, and the CPU in their ``detail``): what a rerun
    must reproduce byte for byte.  ``path``: a file, or its text as a ``io.StringIO``.  The text is
    what ``pandas.read_csv(dtype=str)`` and ``to_csv`` gave, the archive's digests were taken so; the
    csv module gives the same bytes (all 5,867 archived and smoke job files compared) six times faster."""
    with contextlib.nullcontext(path) if isinstance(path, io.StringIO) else open(path, newline="", encoding="utf-8") as fh:
        head, *body = [row for row in csv.reader(fh) if row]   # pandas skips blank lines
    metric = head.index("metric")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(head)
    writer.writerows(row for row in body if not (row[metric] == "seconds" or row[metric].endswith("_seconds")))
    return out.getvalue()


def result_digest(path) -> str:
    """The sha256 of :func:`result_text`: what a job's numerics record keeps of each job file it read."""
    return hashlib.sha256(result_text(path).encode()).hexdigest()


def load_config(project=".", configfile=None) -> dict:
    """The workflow's configuration as Snakemake reads it in ``project``: its ``config/config.yaml``,
    with ``configfile`` (relative to ``project``) merged over it key by key, as ``--configfile``."""
    def over(base: dict, new: dict) -> dict:
        out = dict(base)
        for k, v in new.items():
            out[k] = over(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        return out

    project = Path(project)
    if not (project / "config" / "config.yaml").is_file():
        raise ConfigError(f"no configuration file {project / 'config' / 'config.yaml'}")
    config = yaml.safe_load((project / "config" / "config.yaml").read_text(encoding="utf-8")) or {}
    if configfile:
        path = Path(configfile) if Path(configfile).is_absolute() else project / configfile
        config = over(config, yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    return config


def job_path(experiment, dataset, method, split) -> str:
    """A job's result file, relative to the archive (and to ``results/``)."""
    return f"{experiment}/{dataset}/{method}/split{split}.csv"


def job_parts(path: str) -> tuple[str, str, str, str]:
    """The inverse of :func:`job_path`: ``(experiment, dataset, method, split)``, the split as written."""
    experiment, dataset, method, name = path.split("/")
    return experiment, dataset, method, name.removeprefix("split").removesuffix(".csv")


def history_path(path: str) -> str:
    """The history file the workflow writes beside a job's result file (``split<k>.history.csv``)."""
    return path.removesuffix(".csv") + ".history.csv"


def upstream(config: dict, experiment, dataset, method, split) -> tuple[list[str], str | None]:
    """What a job reads that other workflow jobs write (``workflow/rules/common.smk`` ``input_paths``):
    the result files of the jobs it reads (input kind ``runs``, :meth:`Experiment.run_inputs`) and its
    model selection's file (kind ``selection``, else ``None``), relative to ``results/``.  An
    experiment the registry or ``config`` does not know reads nothing."""
    try:
        exp = get(experiment)
        needs = exp.job_needs(config, dataset, method)
        runs = exp.run_inputs(config, dataset, method) if "runs" in needs else []
        source = exp.runs_source(config, dataset, method)
    except (ConfigError, KeyError):
        return [], None
    files = [job_path(source, d, m, split if k is None else k) for d, m, k in runs]
    return files, (f"{experiment}/{dataset}/{method}/selection.csv" if "selection" in needs else None)


def lambda_fit_paths(config: dict, path: str) -> list[str]:
    """The records of the lambda jobs (rule ``fit_lambda``) the job writing ``path`` reads, beside its
    fit cache (``split<k>.fits/lambda<i>.json``; none where its lambdas are not jobs of their own):
    reusing the job's rows takes them too, or Snakemake refits its lambdas."""
    experiment, dataset, method, _ = job_parts(path)
    try:
        n = get(experiment).lambda_jobs(config, dataset, method)
    except (ConfigError, KeyError):
        return []
    return [f"{path.removesuffix('.csv')}.fits/lambda{i}.json" for i in range(n)]


def _upstream_work(archive: Path, config: dict, path: str, memo: dict) -> tuple[frozenset, frozenset]:
    """For a rerun of the job writing ``path``: (the archived files it can reuse, the upstream
    outputs it must recompute), every level up.  An upstream job is reused when the archive holds
    both its files (rows and history: the workflow's two outputs) and all it reads is reused too;
    else it is recomputed (and so is every job downstream of it: Snakemake reruns those)."""
    if path in memo:
        return memo[path]
    memo[path] = (frozenset(), frozenset())             # a cycle reads nothing more
    runs, selection = upstream(config, *job_parts(path))
    reuse, redo = set(), set()
    for u in runs:
        u_reuse, u_redo = _upstream_work(archive, config, u, memo)
        reuse |= u_reuse
        files = {u, history_path(u), *lambda_fit_paths(config, u)}
        if not u_redo and all((archive / f).is_file() for f in files):
            reuse |= files
        else:
            redo |= u_redo | {u}
    if selection is not None:
        (reuse if (archive / selection).is_file() else redo).add(selection)
    memo[path] = (frozenset(reuse), frozenset(redo))
    return memo[path]


def reuse_plan(archive, jobs: pd.DataFrame, config: dict) -> tuple[list[str], list[str]]:
    """What a rerun of ``jobs`` takes from the archive and what it recomputes upstream: (the
    archived files to copy into ``results/`` so that Snakemake does not recompute them, the
    upstream outputs it must recompute), relative to the archive, sorted.  The sampled jobs' own
    files are never copied: they are what is rerun."""
    archive, memo = Path(archive), {}
    own = {job_path(*key) for key in jobs[["experiment", "dataset", "method", "split"]].itertuples(index=False)}
    reuse, redo = set(), set()
    for path in sorted(own):
        r, d = _upstream_work(archive, config, path, memo)
        reuse |= r
        redo |= d
    reuse -= own | {history_path(p) for p in own}
    return sorted(reuse), sorted(redo - own)


def _redo_seconds(path: str, costs: pd.DataFrame) -> float:
    """The estimated seconds of recomputing one upstream output: an archived job's recorded seconds,
    else its experiment's mean per timed job; NaN (unknown) for a model selection or untimed work."""
    if path.endswith("/selection.csv"):
        return float("nan")
    key = job_parts(path)
    own = costs.get(key)
    if own is not None:
        return float(own)
    timed = costs[costs.index.get_level_values(0) == key[0]].dropna()
    return float(timed.mean()) if len(timed) else float("nan")


def sample_jobs(archive, n: int, seed: int, experiments=None, max_seconds: float | None = None,
                config: dict | None = None) -> pd.DataFrame:
    """``n`` archived jobs drawn with ``seed`` among ``experiments``, in archive order, with
    ``estimate``: the seconds a rerun of the sample adds for each (its recorded seconds, plus
    those of the upstream jobs it must recompute that an earlier drawn job did not: with
    ``config``, the jobs whose result files it reads that the archive cannot supply,
    :func:`reuse_plan`; those it holds are reused, at no cost).

    Jobs are taken in the seed's random order; with ``max_seconds`` a job is skipped when the
    sample's total estimate would exceed it (untimed jobs, and those whose upstream cost is
    unknown, are never drawn), until ``n`` are drawn or none fits."""
    jobs = job_costs(archive)
    costs = jobs.set_index(["experiment", "dataset", "method", "split"])["seconds"]
    if experiments:
        unknown = sorted(set(experiments) - set(jobs["experiment"]))
        if unknown:
            raise ConfigError(f"no archived jobs of {', '.join(unknown)} in {archive}")
        jobs = jobs[jobs["experiment"].isin(experiments)]
    if max_seconds is not None:
        jobs = jobs[jobs["seconds"] <= max_seconds]
    if jobs.empty:
        raise ConfigError("no archived job matches (experiment, max seconds)")
    archive, memo = Path(archive), {}
    counted, picked, estimates, total = set(), [], [], 0.0
    for i in np.random.default_rng(seed).permutation(len(jobs)):
        if len(picked) == n:
            break
        row = jobs.iloc[i]
        path = job_path(row["experiment"], row["dataset"], row["method"], row["split"])
        own = 0.0 if path in counted else float(row["seconds"])
        if max_seconds is not None and not total + own <= max_seconds:
            continue
        redo = _upstream_work(archive, config, path, memo)[1] - counted if config is not None else frozenset()
        estimate = own + sum(_redo_seconds(p, costs) for p in redo)
        if max_seconds is not None and not total + estimate <= max_seconds:
            continue
        picked.append(i)
        estimates.append(estimate)
        counted |= redo | {path}
        total += estimate
    if not picked:
        raise ConfigError(f"no archived job's rerun fits in {max_seconds:g} seconds")
    order = np.argsort(picked)
    return jobs.iloc[np.asarray(picked)[order]].assign(estimate=np.asarray(estimates)[order]).reset_index(drop=True)


#: ``structpred runs verify --max-seconds T`` stops the rerun after ``TIMEOUT_FACTOR * T + TIMEOUT_SLACK``
#: seconds (the slack: Snakemake's start-up, the data fetch, views and features)
TIMEOUT_FACTOR, TIMEOUT_SLACK = 3.0, 120.0


def verify_commands(targets: list[str], cores: int = 1, configfile=None) -> tuple[list[str], list[str]]:
    """The two Snakemake runs of :func:`verify`: first everything the ``targets`` need but the
    training jobs, lambda fits and model selections (data fetch, views, features: ``--omit-from
    run_job select_model fit_lambda``), then, once the archived upstream files are copied in after them (newer than
    every input, so Snakemake reuses them: files without metadata trigger no rerun), the targets."""
    extra = ["--configfile", str(configfile)] if configfile else []
    run = [sys.executable, "-m", "snakemake", *targets, "--cores", str(cores), "--keep-going", *extra]
    return [*run, "--omit-from", "run_job", "select_model", "fit_lambda"], run


def place_upstream(archive, files: list[str], root) -> None:
    """Copy the archived ``files`` into ``root/results/``, all with one modification time (now):
    newer than the inputs already built, and none newer than another (a reused job reading a reused
    job is not rerun)."""
    now = time.time()
    for name in files:
        dest = Path(root) / "results" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(archive) / name, dest)
        os.utime(dest, (now, now))


def _run_until(command: list[str], cwd, deadline: float | None):
    """Run ``command``; past ``deadline`` (``time.monotonic()``) stop it and all it started.
    Returns (the completed process's output, whether it was stopped)."""
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=None if deadline is None else max(deadline - time.monotonic(), 0.1))
        return subprocess.CompletedProcess(command, proc.returncode, out, err), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return subprocess.CompletedProcess(command, proc.returncode, out, err), True


def verify(archive, jobs: pd.DataFrame, project, *, cores: int = 1, configfile=None, timeout: float | None = None,
           config: dict | None = None, log=None, record: bool = False, keep=None) -> pd.DataFrame:
    """Rerun each of ``jobs`` from raw data with the workflow of ``project`` (a copy of it, in a
    temporary folder: the project's own ``results/`` are never touched) and compare its rows with
    the archive's, timings excluded.  The archived upstream outputs the jobs read (another job's
    results, input kind ``runs``; a model selection's ``selection.csv``) are copied in and reused,
    not recomputed (:func:`reuse_plan`, :func:`verify_commands`); upstream jobs the archive does not
    hold are rerun.  ``timeout``: seconds after which the rerun is stopped.  Returns the jobs with
    ``status`` (identical / differs / failed / timeout) and ``detail`` (the first differing line,
    or the error's last line); ``log`` (a callable) gets a line on what is reused.  ``record``: write
    each compared job's numerics record into the archive (:mod:`structpred.runs.staleness`):
    the rerun's own (its fingerprints, at the project's commit) where it is identical, one with
    ``"reproduced": false`` where it differs.  ``keep``: a folder to copy each rerun's result file
    into (``<keep>/<experiment>/<dataset>/<method>/split<k>.csv``), for :mod:`structpred.runs.tolerance`."""
    project, archive = Path(project).resolve(), Path(archive).resolve()
    deadline = None if timeout is None else time.monotonic() + timeout
    if config is None:
        config = load_config(project, configfile)
    reuse, redo = reuse_plan(archive, jobs, config)
    if log is not None:
        log(f"reusing {len(reuse)} archived upstream files, recomputing {len(redo)} upstream outputs")
    targets = [f"results/{job_path(r.experiment, r.dataset, r.method, r.split)}" for r in jobs.itertuples()]
    prepare, run = verify_commands(targets, cores, configfile)
    commit = job_commit(project)   # the code the rerun runs: the project as copied now
    with tempfile.TemporaryDirectory(prefix="structpred-verify-") as tmp:
        project_copy(project, tmp, exclude=("runs/", "results/", "reports/"))
        proc, stopped = _run_until(prepare, tmp, deadline)
        if not stopped:
            place_upstream(archive, reuse, tmp)
            proc, stopped = _run_until(run, tmp, deadline)
        out = []
        for target in targets:
            mine, theirs = Path(tmp) / target, archive / target.removeprefix("results/")
            if not mine.is_file():
                if stopped:
                    out.append(("timeout", f"not finished within {timeout:g} s"))
                    continue
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                out.append(("failed", tail[0]))
                continue
            a, b = result_text(theirs).splitlines(), result_text(mine).splitlines()
            first = next((f"line {i + 1}: archived {x!r}, rerun {y!r}" for i, (x, y) in enumerate(zip(a, b)) if x != y),
                         None if len(a) == len(b) else f"{len(a)} archived rows, {len(b)} rerun")
            out.append(("identical", "") if first is None else ("differs", first))
            if keep is not None:
                dest = Path(keep) / target.removeprefix("results/")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(mine, dest)
            if record:
                _record_verdict(archive / target.removeprefix("results/"), mine, commit, first is None)
    return jobs.assign(status=[s for s, _ in out], detail=[d for _, d in out])


def _record_verdict(archived: Path, rerun: Path, commit: str, identical: bool) -> None:
    """Beside the archived job file, the numerics record of its rerun (``commit``: the project's when
    it was copied for the rerun), marked ``"reproduced": false`` when the rerun differed."""
    source = Path(str(rerun).removesuffix(".csv") + ".numerics.json")
    rec = json.loads(source.read_text(encoding="utf-8"))
    rec["commit"] = commit
    if not identical:
        rec["reproduced"] = False
    with atomic_open(str(archived).removesuffix(".csv") + ".numerics.json", "w") as fh:
        fh.write(json.dumps(rec, indent=1, sort_keys=True) + "\n")


def plan_estimate(planned: dict[str, int], archive="runs") -> list[str]:
    """Lines estimating the CPU time of a planned run: per experiment, its planned jobs times the
    mean recorded seconds of its archived jobs, or ``unknown (never timed ...)`` where the archive
    timed none of them (not archived, or archived without ``seconds`` rows); the headline sums the
    timed part and counts the planned jobs left out of it, never as 0 hours."""
    costs = job_costs(archive) if Path(archive).is_dir() else pd.DataFrame(columns=["experiment", "seconds"])
    mean = costs.dropna(subset=["seconds"]).groupby("experiment")["seconds"].mean()
    archived = costs.groupby("experiment").size()
    lines, total, timed, untimed = [], 0.0, 0, 0
    for experiment, n in sorted(planned.items()):
        if experiment in mean.index:
            hours = n * float(mean[experiment]) / 3600
            total += hours
            timed += n
            lines.append(f"  {experiment:28s} {n:5d} jobs  ~{hours:7.2f} CPU-hours")
        else:
            untimed += n
            k = int(archived[experiment]) if experiment in archived.index else 0
            why = f"{k} archived job{'s' * (k != 1)}, none with its seconds" if k else "no archived job"
            lines.append(f"  {experiment:28s} {n:5d} jobs   unknown (never timed in {archive}/: {why})")
    head = (f"planned: {sum(planned.values())} training jobs, ~{total:.1f} CPU-hours where the archive timed them "
            f"({timed} timed jobs, at its mean per job and the settings it ran); {untimed} jobs untimed (unknown)")
    return [head, *lines]
