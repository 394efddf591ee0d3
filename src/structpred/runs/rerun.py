"""``structpred runs rerun``: rerun an archived experiment's jobs that today's code does not
reproduce (stale, unknown or missing) with the workflow, and archive what each computes.

A rerun is resumable across work periods and machines: the jobs go to Snakemake in chunks, and
after each chunk every finished job's files (rows, history, numerics record; the experiment's
model selections) replace the archived ones. A job whose archived record is fresh (its
fingerprints are today's, on this machine class: :mod:`structpred.runs.staleness`) is
never rerun, so the command run again later picks up where the last one stopped. Run it in a
checkout whose ``results/`` holds nothing older than its code (a fresh clone, or a worktree at the
commit being archived): upstream outputs found there are reused.

A job stopped part-way (``--hours``) loses only the lambda fit that was running: its finished lambda
fits (``split<k>.fits/<digest>/lam=<lam>.json`` and history, a kilobyte each; not the running
fit's per-pass checkpoint) go into the archive with the fingerprints and machine class of the code
that made them (:func:`keep_fits`), and the next rerun, on any machine of that class at code with
the same fingerprints, puts them back into ``results/`` before Snakemake runs (:func:`restore_fits`),
so the job fits only the lambdas it lacks.  When the job finishes its kept fits leave the archive
(:func:`drop_kept_fits`): its rows hold their records.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from structpred.io import write_text
from structpred.papers.registry import get
from structpred.runs.archive import (_run_until, history_path, job_parts, job_path, lambda_fit_paths,
                                     place_upstream, upstream, verify_commands)
from structpred.runs.numerics import fingerprints, machine_class, record_path
from structpred.report.archive_status import read_status
from structpred.runs import tolerance
from structpred.runs.staleness import STATUS_FILE, archive_class, job_status, job_table, read_record

#: the files a job writes beside its rows (``split<k>.csv``) that the archive keeps
SIDE_FILES = (history_path, lambda p: str(record_path(p)))
#: beside a stopped job's kept fits in the archive: the fingerprints and machine class that made them
KEPT = "kept.json"


def _fits(root: Path, path: str) -> Path:
    """The job's kept-fits folder (``split<k>.fits``) under ``root``."""
    return Path(root) / f"{path.removesuffix('.csv')}.fits"


def _finished_fits(folder: Path) -> list[Path]:
    """The finished fits' files under ``folder`` (each ``<digest>/lam=<lam>.json`` with its history;
    a record without its history is a fit still being written)."""
    out = []
    for record in sorted(folder.glob("*/lam=*.json")):
        history = record.with_name(record.name.removesuffix(".json") + ".history.csv")
        if history.is_file():
            out += [history, record]
    return out


def keep_fits(results: Path, archive: Path, path: str, fingerprints: dict, machine: str) -> int:
    """Copy the unfinished job ``path``'s finished lambda fits from ``results`` into ``archive``
    with ``kept.json`` (the ``fingerprints`` of the job's code paths, the ``machine`` class);
    returns how many fits it copied."""
    source, dest = _fits(results, path), _fits(archive, path)
    files = _finished_fits(source)
    for f in files:
        (dest / f.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest / f.relative_to(source))
    if files:
        write_text(dest / KEPT, json.dumps({"fingerprints": fingerprints, "machine": machine}, sort_keys=True) + "\n")
    return len(files) // 2


def restore_fits(archive: Path, results: Path, path: str, fingerprints: dict, machine: str) -> int:
    """Copy into ``results`` the fits :func:`keep_fits` archived for ``path`` that ``results`` lacks,
    if their code's fingerprints are ``fingerprints`` and their machine class is ``machine`` (else
    none: another code's fits would pass for today's, since a fit's key names no code); returns how
    many fits it copied."""
    source, dest = _fits(archive, path), _fits(results, path)
    kept = source / KEPT
    if not kept.is_file():
        return 0
    made = json.loads(kept.read_text(encoding="utf-8"))
    if made.get("fingerprints") != fingerprints or made.get("machine") != machine:
        return 0
    files = [f for f in _finished_fits(source) if not (dest / f.relative_to(source)).is_file()]
    for f in files:
        (dest / f.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest / f.relative_to(source))
    return len(files) // 2


def drop_kept_fits(archive: Path, path: str) -> None:
    """Remove a finished job's kept fits from ``archive`` (its lambda jobs' records stay)."""
    source = _fits(archive, path)
    (source / KEPT).unlink(missing_ok=True)
    for folder in {f.parent for f in source.glob("*/lam=*")}:
        shutil.rmtree(folder)


def fresh_jobs(archive, config: dict, made_on: str | None = None) -> set[str]:
    """The archived jobs (result paths relative to the archive) whose numerics record is fresh here;
    on a machine of another class than the archive's (``made_on``), those fresh as recorded there
    (a rerun then redoes what is stale or unknown on the archive's class, not every job because the
    CPU differs; a tolerance verification that failed marks its jobs stale: ``runs verify --record``)."""
    here = machine_class()
    foreign = made_on is not None and made_on != here
    table = job_table(archive, config=config, machine=made_on if foreign else None, as_recorded=foreign)
    failed = set()
    if foreign:   # the jobs of a verification on this class that did not reach the tolerance tier
        for experiment in set(table["experiment"]):
            entry = tolerance.read_record(archive, experiment).get(here)
            if entry is not None and not tolerance.required_met(entry["tier"], "tolerance"):
                failed |= set(entry["jobs"])
    return {job_path(r.experiment, r.dataset, r.method, r.split)
            for r in table[table["status"] == "fresh"].itertuples()} - failed


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
    made_on = archive_class(read_status(project / STATUS_FILE))
    fresh = fresh_jobs(archive, config, made_on)   # once: a rerun archives only its own experiment's jobs
    pending = select_jobs(pending_jobs(experiment, config, fresh), datasets, methods, splits)
    deadline = None if hours is None else time.monotonic() + 3600 * hours
    log(f"{experiment}: {len(pending)} jobs to rerun (not fresh here or not archived)")
    exp = get(experiment)
    current = fingerprints({p for d, m, _ in exp.jobs(config) for p in exp.numeric_paths(config, d, m)})
    machine, done = machine_class(), 0

    def own(path):      # the fingerprints of the job's own code paths
        _, d, m, _ = job_parts(path)
        return {p: current[p] for p in sorted(exp.numeric_paths(config, d, m))}

    for start in range(0, len(pending), chunk):
        if deadline is not None and time.monotonic() >= deadline:
            break
        part = pending[start:start + chunk]
        clear_unfresh(project / "results", part, current, machine)
        restored = sum(restore_fits(archive, project / "results", p, own(p), machine) for p in part)
        if restored:
            log(f"{experiment}: {restored} lambda fits kept in the archive put back")
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
        kept = 0
        for p in part:
            if p in finished:
                drop_kept_fits(archive, p)
            else:
                kept += keep_fits(project / "results", archive, p, own(p), machine)
        if kept:
            log(f"{experiment}: {kept} finished lambda fits of unfinished jobs kept in the archive")
        done += len(finished)
        log(f"{experiment}: chunk {start // chunk + 1}: {len(finished)} of {len(part)} jobs archived"
            f" ({done} of {len(pending)} so far)")
        if len(finished) < len(part) and not stopped:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            log(f"{experiment}: {len(part) - len(finished)} jobs did not finish: {tail[0]}")
    return done, len(pending)
