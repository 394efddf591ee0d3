"""``structpred runs rerun``: rerun an archived experiment's jobs that today's code does not
reproduce (stale, unknown or missing) with the workflow, and archive what each computes.

A rerun is resumable across work periods and machines: the jobs go to Snakemake in chunks, and
after each chunk every finished job's files (rows, history, numerics record; the experiment's
model selections) replace the archived ones. A job whose archived record is fresh (its
fingerprints are today's, on this machine class: :mod:`structpred.runs.staleness`) is
never rerun, so the command run again later picks up where the last one stopped. Run it in a
checkout whose ``results/`` holds nothing older than its code (a fresh clone, or a worktree at the
commit being archived): upstream outputs found there are reused.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from structpred.papers.registry import get
from structpred.runs.archive import (_run_until, history_path, job_parts, job_path, lambda_fit_paths,
                                     place_upstream, upstream, verify_commands)
from structpred.runs.numerics import fingerprints, machine_class, record_path
from structpred.runs.staleness import job_status, job_table, read_record

#: the files a job writes beside its rows (``split<k>.csv``) that the archive keeps
SIDE_FILES = (history_path, lambda p: str(record_path(p)))


def fresh_jobs(archive, config: dict) -> set[str]:
    """The archived jobs (result paths relative to the archive) whose numerics record is fresh here."""
    table = job_table(archive, config=config)
    return {job_path(r.experiment, r.dataset, r.method, r.split) for r in table[table["status"] == "fresh"].itertuples()}


def pending_jobs(experiment: str, config: dict, fresh: set[str]) -> list[str]:
    """The configured jobs of ``experiment`` (result paths relative to the archive) not among the
    ``fresh`` archived ones (:func:`fresh_jobs`), in the experiment's job order."""
    return [j for j in (job_path(experiment, d, m, k) for d, m, k in get(experiment).jobs(config)) if j not in fresh]


def clear_unfresh(results: Path, paths: list[str], current: dict[str, str], machine: str) -> None:
    """Remove from ``results`` the files of those ``paths`` that an earlier code wrote (no record,
    or one that is not fresh), and their kept fits (``split<k>.fits/``: the same code's), so that
    Snakemake reruns them; today's finished jobs stay."""
    for path in paths:
        if (results / path).is_file() and job_status(read_record(results / path), current, machine)[0] != "fresh":
            for name in [path, *(f(path) for f in SIDE_FILES)]:
                (results / name).unlink(missing_ok=True)
            shutil.rmtree(results / f"{path.removesuffix('.csv')}.fits", ignore_errors=True)


def archive_job(results: Path, archive: Path, path: str) -> bool:
    """Copy one finished job's files from ``results`` into ``archive`` (rows last, so that an
    interrupted copy leaves the old rows beside a new record, which reads as not fresh rather
    than as a fresh mismatch). Returns whether the job had finished (rows and record present)."""
    source = results / path
    if not (source.is_file() and record_path(source).is_file()):
        return False
    for name in [*(f(path) for f in SIDE_FILES), path]:
        if (results / name).is_file():
            (archive / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(results / name, archive / name)
    for fit in (results / path).parent.glob(f"{Path(path).stem}.fits/lambda*.json"):   # its lambda jobs' records
        dest = archive / fit.relative_to(results)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fit, dest)
    selection = Path(path).parent / "selection.csv"
    if (results / selection).is_file():
        shutil.copyfile(results / selection, archive / selection)
    return True


def select_jobs(paths: list[str], datasets=None, methods=None, splits=None) -> list[str]:
    """The job paths (``experiment/dataset/method/split<k>.csv``) on ``datasets``, of ``methods``
    and on ``splits`` (``None``: all), those of ``methods`` in its order, each method's in the given order."""
    paths = [p for p in paths if (not datasets or job_parts(p)[1] in datasets)
             and (splits is None or int(job_parts(p)[3]) in splits)]
    return [p for m in methods for p in paths if job_parts(p)[2] == m] if methods else paths


def archived_inputs(part: list[str], experiment: str, config: dict, results: Path, fresh: set[str],
                    archive: Path | None = None) -> list[str]:
    """The archived files (rows and history, and the records of their lambda jobs that ``archive``
    holds) of other experiments' jobs that the jobs ``part`` read
    and that are ``fresh`` here (:func:`fresh_jobs`) but missing from ``results``: the rerun reads
    them as archived rather than recomputing them (their experiment's own rerun keeps them current)."""
    wanted = set()
    for path in part:
        wanted |= {f for f in upstream(config, *job_parts(path))[0]
                   if f.split("/")[0] != experiment and f in fresh and not (results / f).is_file()}
    return sorted(wanted | {history_path(f) for f in wanted}
                  | {m for f in wanted for m in lambda_fit_paths(config, f)
                     if archive is not None and (Path(archive) / m).is_file()})


def rerun(project, archive, experiment: str, config: dict, *, cores: int = 2, chunk: int = 20,
          hours: float | None = None, datasets=None, methods=None, splits=None, log=print) -> tuple[int, int]:
    """Rerun the pending jobs of ``experiment`` in ``project`` (its ``results/``), ``chunk`` jobs
    per Snakemake call, archiving each chunk's finished jobs as it ends; stop starting chunks after
    ``hours`` (the chunk running then is stopped at that time and its finished jobs archived).
    ``datasets``: only the jobs on these (e.g. one column of the matrix); ``methods``: only the jobs
    of these, in this order (e.g. the cheap ones first); ``splits``: only the jobs on these splits
    (e.g. the first five, which the matrix borrows from ``m4n_table1``).
    Returns (jobs archived, jobs pending at the start)."""
    project, archive = Path(project).resolve(), Path(archive).resolve()
    fresh = fresh_jobs(archive, config)   # once: a rerun archives only its own experiment's jobs
    pending = select_jobs(pending_jobs(experiment, config, fresh), datasets, methods, splits)
    deadline = None if hours is None else time.monotonic() + 3600 * hours
    log(f"{experiment}: {len(pending)} jobs to rerun (not fresh here or not archived)")
    exp = get(experiment)
    current = fingerprints({p for d, m, _ in exp.jobs(config) for p in exp.numeric_paths(config, d, m)})
    machine, done = machine_class(), 0
    for start in range(0, len(pending), chunk):
        if deadline is not None and time.monotonic() >= deadline:
            break
        part = pending[start:start + chunk]
        clear_unfresh(project / "results", part, current, machine)
        prepare, command = verify_commands([f"results/{p}" for p in part], cores)
        place = archived_inputs(part, experiment, config, project / "results", fresh, archive)
        stopped = False
        if place:   # build the data and features first, then the archived inputs go in newer than them
            log(f"{experiment}: reusing {len(place)} archived files of other experiments' jobs")
            stopped = _run_until(prepare, project, deadline)[1]
            place_upstream(archive, place, project)
        if not stopped:
            proc, stopped = _run_until(command, project, deadline)
        finished = [p for p in part if archive_job(project / "results", archive, p)]
        done += len(finished)
        log(f"{experiment}: chunk {start // chunk + 1}: {len(finished)} of {len(part)} jobs archived"
            f" ({done} of {len(pending)} so far)")
        if len(finished) < len(part) and not stopped:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            log(f"{experiment}: {len(part) - len(finished)} jobs did not finish: {tail[0]}")
    return done, len(pending)
