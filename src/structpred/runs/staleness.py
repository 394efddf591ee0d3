"""Which archived experiments today's code still reproduces: ``structpred runs status``.

Each archived job ``runs/<experiment>/<dataset>/<method>/split<k>.csv`` may have beside it its
numerics record ``split<k>.numerics.json`` (:func:`structpred.runs.numerics.write_record`):
the commit and machine class it ran on and the fingerprints of the paths it ran.  A job is

* **fresh** when its record was made on this machine class and every fingerprint equals today's;
* **stale** when one of its paths' fingerprints moved (the record names the commit it ran at), or
  when a rerun of it by ``structpred runs verify --record`` differed from the archive
  (``"reproduced": false``), or when another job's rows it read (``qs_movielens_normalisation``
  refits ``qs_movielens``'s choices) were re-archived since with other numbers (:func:`input_moves`),
  or when its settings are no longer what its config block gives (:func:`settings_moves`);
* **unknown** when it has no record (archived before records were kept) or its record was made on
  another machine class (bits are compared within one class only).

An experiment is stale when any of its jobs is, unknown when none is stale but some are unknown,
fresh when every job is, and verified when a sample rerun within tolerance, some of its unknown jobs
among it, covers them (:mod:`structpred.runs.tolerance`'s reproduction record).  On a machine of another class
than the archive's, fingerprints cannot be compared: the status then judges each job as recorded on
the archive's class, and the ``reproduced`` column says how reruns on other classes came out.  :func:`status_table` is what the report and the CI guard read; it is
written to ``reports/tables/staleness.csv`` and a change of code that moves numbers must come with
its reruns or with that file saying so (``structpred runs status --write``).
"""

from __future__ import annotations

import io
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.errors import ConfigError
from structpred.report.archive_status import read_status
from structpred.report.archive_costs import job_costs, job_files
from structpred.runs import tolerance
from structpred.runs.archive import load_config, result_digest, upstream, verify
from structpred.papers.registry import get
from structpred.runs.numerics import PATHS, fingerprints, machine_class, record_path, settings_digest

#: the committed status table: what the report and the guard read, and the archive's machine class
STATUS_FILE = Path("reports/tables/staleness.csv")
COLUMNS = ["experiment", "status", "jobs", "fresh", "stale", "unknown", "moved_paths", "since", "detail", "machine",
           "reproduced"]


def read_record(job_file) -> dict | None:
    """A job's numerics record, ``None`` when it has none; one clear error when it is malformed."""
    path = record_path(job_file)
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a numerics record ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(rec, dict) or not {"commit", "machine", "fingerprints"} <= set(rec):
        raise ConfigError(f"{path}: a numerics record needs commit, machine and fingerprints")
    return rec


def job_status(rec: dict | None, current: dict[str, str], machine: str,
               moved_inputs: str = "", moved_settings: str = "") -> tuple[str, list[str], str]:
    """``(status, moved paths, detail)`` of one job from its record, today's fingerprints, this
    machine's class, :func:`input_moves`'s line for it (empty: what it read is archived as it
    read it) and :func:`settings_moves`'s (empty: it ran with today's settings, or that is not known)."""
    if rec is None:
        return "unknown", [], "no numerics record (archived before records were kept)"
    if rec.get("reproduced") is False:
        return "stale", [], f"a rerun at {rec['commit'][:10]} differed from the archive"
    if moved_inputs:
        return "stale", [], moved_inputs
    if moved_settings:
        return "stale", [], moved_settings
    if rec["machine"] != machine:
        return "unknown", [], f"recorded on another machine class ({rec['machine']})"
    moved = sorted(p for p, f in rec["fingerprints"].items() if current.get(p) != f)
    return ("stale", moved, "") if moved else ("fresh", [], "")


def _committed_texts(archive: Path, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
    """``{(commit, path): the archive's file at that commit}`` read from git in one call (``None``
    where git lacks the commit or the file, or the archive is not in a repository)."""
    out = dict.fromkeys(wanted)
    try:
        top = Path(subprocess.run(["git", "-C", str(archive), "rev-parse", "--show-toplevel"], capture_output=True,
                                  text=True, check=True).stdout.strip())
        prefix = archive.resolve().relative_to(top.resolve()).as_posix()
        request = "".join(f"{c}:{prefix}/{p}\n" for c, p in wanted).encode()
        data = subprocess.run(["git", "-C", str(top), "cat-file", "--batch"], input=request, capture_output=True,
                              check=True).stdout
    except (OSError, ValueError, subprocess.CalledProcessError):
        return out
    at = 0
    for key in wanted:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            out[key] = data[at:at + size].decode("utf-8", "replace")
            at += size + 1
    return out


def input_moves(archive, records: list[tuple[Path, dict | None]], config: dict) -> dict[Path, str]:
    """``{job file: why}`` for the jobs with a record whose input rows (other archived jobs they read:
    :func:`structpred.runs.archive.upstream`) are no longer what they read.  A record with ``inputs``
    holds the digests of what it read; an older one is compared with git: the input as archived at
    the commit the job ran at (an input git does not have there is not judged)."""
    archive, reads = Path(archive), {}
    for path, rec in records:
        if rec is not None:
            e, d, m = path.parts[-4:-1]
            files = upstream(config, e, d, m, path.stem.removeprefix("split"))[0]
            if files:
                reads[path] = (rec, files)
    now = {f: result_digest(archive / f) if (archive / f).is_file() else None
           for _, files in reads.values() for f in files}
    old = _committed_texts(archive, sorted({(rec["commit"].removesuffix("+dirty"), f)
                                            for rec, files in reads.values() if "inputs" not in rec for f in files}))
    then = {k: None if t is None else result_digest(io.StringIO(t)) for k, t in old.items()}
    out = {}
    for path, (rec, files) in reads.items():
        commit = rec["commit"].removesuffix("+dirty")
        if "inputs" in rec:
            moved = [f for f in files if rec["inputs"].get(f) != now[f]]
        else:
            moved = [f for f in files if then[(commit, f)] is not None and then[(commit, f)] != now[f]]
        if moved:
            sources = ", ".join(sorted({f.split("/")[0] for f in moved}))
            out[path] = f"read archived {sources} jobs that were rerun since with other numbers"
    return out


def _settings_or_none(experiment: str, config: dict, dataset: str, method: str) -> dict | None:
    """The job's settings under ``config``, ``None`` where that config cannot give them (an old
    config without the experiment's block, or in a shape today's code no longer reads)."""
    try:
        return get(experiment).settings(config, dataset, method)
    except Exception:   # noqa: BLE001 (any failure means: not comparable, never a verdict)
        return None


def settings_moves(archive, records: list[tuple[Path, dict | None]], config: dict) -> dict[Path, str]:
    """``{job file: why}`` for the jobs that ran with other settings than ``config`` gives them
    today (a grid widened in the config block moves no fingerprint).  A record with ``settings``
    (:func:`structpred.runs.numerics.settings_digest`) is compared with today's digest; an older
    one with the settings that today's code reads from ``config/config.yaml`` as committed at the
    job's commit, naming the keys that differ (a job whose settings cannot be had either way is not
    judged)."""
    archive, out = Path(archive), {}
    if not config:
        return out
    old = [(path, rec) for path, rec in records if rec is not None and "settings" not in rec]
    commits = sorted({rec["commit"].removesuffix("+dirty") for _, rec in old})
    texts = _committed_texts(archive.parent / "config", [(c, "config.yaml") for c in commits]) if commits else {}
    configs = {c: None if t is None else yaml.safe_load(t) for (c, _), t in texts.items()}
    for path, rec in records:
        if rec is None:
            continue
        experiment, dataset, method = path.parts[-4:-1]
        now = _settings_or_none(experiment, config, dataset, method)
        if now is None:
            continue
        if "settings" in rec:
            if rec["settings"] != settings_digest(now):
                out[path] = f"ran with other settings than today's {experiment} block"
            continue
        then_config = configs.get(rec["commit"].removesuffix("+dirty"))
        then = None if then_config is None else _settings_or_none(experiment, then_config, dataset, method)
        if then is not None and settings_digest(then) != settings_digest(now):
            keys = sorted(k for k in set(then) | set(now) if then.get(k) != now.get(k))
            out[path] = f"ran with other settings ({', '.join(keys)}) than today's {experiment} block"
    return out


def job_table(archive, current: dict[str, str] | None = None, machine: str | None = None,
              config: dict | None = None, as_recorded: bool = False) -> pd.DataFrame:
    """One row per archived job: experiment, dataset, method, split, status, moved paths, the
    commit it ran at (or was rerun at), detail.  ``config``: the workflow's (which jobs read which,
    :func:`input_moves`); default: the configuration of the project holding ``archive``, none if
    there is none.  ``as_recorded``: take each record's fingerprints as today's (on a machine of
    another class than ``machine``, where they cannot be computed: a job is then fresh when the
    committed status could call it so, by everything but its fingerprints)."""
    machine = machine_class() if machine is None else machine
    rows, records = [], [(p, read_record(p)) for p in job_files(archive)]
    if as_recorded:
        current = {}
    elif current is None:
        wanted = {n for _, r in records if r is not None for n in r["fingerprints"]}
        current = fingerprints(wanted)
    if config is None:
        try:
            config = load_config(Path(archive).resolve().parent)
        except ConfigError:
            config = {}
    moves, changed = input_moves(archive, records, config), settings_moves(archive, records, config)
    for path, rec in records:
        experiment, dataset, method = path.parts[-4:-1]
        now = rec["fingerprints"] if as_recorded and rec is not None else current
        status, moved, detail = job_status(rec, now, machine, moves.get(path, ""), changed.get(path, ""))
        rows.append({"experiment": experiment, "dataset": dataset, "method": method,
                     "split": path.stem.removeprefix("split"), "status": status, "moved": moved,
                     "commit": "" if rec is None else rec["commit"], "detail": detail})
    return pd.DataFrame(rows, columns=["experiment", "dataset", "method", "split", "status", "moved",
                                       "commit", "detail"])


def status_table(archive, current: dict[str, str] | None = None, machine: str | None = None,
                 config: dict | None = None, made_on: str | None = None) -> pd.DataFrame:
    """One row per archived experiment (:data:`COLUMNS`): its status, job counts, the paths that
    moved, the commits the stale jobs ran at, why the unknown and stale ones are, and how its
    reruns reproduced on each machine class (``reproduced``, :func:`structpred.runs.tolerance.summary`).

    ``made_on``: the archive's machine class (the committed status table's).  On a machine of
    another class, where fingerprints cannot be compared, each job is judged as recorded on
    ``made_on`` (:func:`job_table` ``as_recorded``) and the table speaks for that class.
    An experiment whose unknown jobs (no record) are all that keeps it from fresh is ``verified``
    when a sample of its jobs, some of them unknown ones, was rerun within tolerance on every machine
    class that tried (``structpred runs verify --record``)."""
    here = machine or machine_class()
    foreign = made_on is not None and made_on != here and current is None
    if foreign:
        jobs, here = job_table(archive, machine=made_on, config=config, as_recorded=True), made_on
    else:
        jobs = job_table(archive, current, here, config)
    out = []
    for experiment, group in jobs.groupby("experiment", sort=True):
        counts = group["status"].value_counts()
        status = "stale" if counts.get("stale") else "unknown" if counts.get("unknown") else "fresh"
        reproduced = tolerance.read_record(archive, experiment)
        unknown = {f"{experiment}/{r.dataset}/{r.method}/split{r.split}.csv"
                   for r in group[group["status"] == "unknown"].itertuples()}
        if (status == "unknown" and reproduced and unknown & {j for e in reproduced.values() for j in e["jobs"]}
                and all(tolerance.required_met(e["tier"], "tolerance") for e in reproduced.values())):
            status = "verified"
        stale = group[group["status"] == "stale"]
        moved = sorted({p for ps in stale["moved"] for p in ps})
        # the commits the moved jobs ran at (a job whose rerun differed names its rerun's in ``detail``)
        since = sorted({c.removesuffix("+dirty")[:10] for c, m in zip(stale["commit"], stale["moved"]) if c and m})
        details = group.loc[group["status"] != "fresh", "detail"].value_counts()
        out.append({"experiment": experiment, "status": status, "jobs": len(group),
                    "fresh": int(counts.get("fresh", 0)), "stale": int(counts.get("stale", 0)),
                    "unknown": int(counts.get("unknown", 0)), "moved_paths": " ".join(moved),
                    "since": " ".join(since),
                    "detail": "; ".join(f"{n} jobs: {d}" for d, n in details.items() if d),
                    "machine": here, "reproduced": "; ".join(filter(None, [
                        f"bitwise on {here} ({int(counts.get('fresh', 0))} of {len(group)} jobs, by their fingerprints)"
                        if counts.get("fresh") else "", tolerance.summary(archive, experiment)]))})
    return pd.DataFrame(out, columns=COLUMNS)


def guard_sample(archive, budget_seconds: float = 120.0, jobs: pd.DataFrame | None = None
                 ) -> tuple[pd.DataFrame, list[str]]:
    """The CI guard's reruns: fresh archived jobs that together run every path some fresh job
    runs, each path's cheapest first, within ``budget_seconds`` of recorded fitting time.
    ``jobs``: the :func:`job_table` to take the fresh jobs from (default: this machine's).
    Returns the jobs (as :func:`~structpred.runs.archive.sample_jobs` does) and the
    paths no fresh job within the budget runs (unguarded by reruns; their fingerprints are still
    compared)."""
    jobs = job_table(archive) if jobs is None else jobs
    jobs = jobs.merge(job_costs(archive), on=["experiment", "dataset", "method", "split"])
    fresh = jobs[(jobs["status"] == "fresh") & jobs["seconds"].notna()].copy()
    fresh["paths"] = [sorted(read_record(Path(archive) / e / d / m / f"split{k}.csv")["fingerprints"])
                      for e, d, m, k in zip(fresh["experiment"], fresh["dataset"], fresh["method"], fresh["split"])]
    every = sorted(PATHS)
    chosen, covered, spent = [], set(), 0.0
    for p in every:
        if p in covered:
            continue
        runs_p = np.array([p in ps for ps in fresh["paths"]], dtype=bool)
        options = fresh.loc[runs_p].sort_values(["seconds", "experiment", "dataset", "method", "split"])
        if options.empty or spent + options.iloc[0]["seconds"] > budget_seconds:
            continue
        pick = options.iloc[0]
        chosen.append(pick.name)
        covered |= set(pick["paths"])
        spent += float(pick["seconds"])
    sample = fresh.loc[chosen, ["experiment", "dataset", "method", "split", "seconds", "cpu"]]
    return sample.reset_index(drop=True), [p for p in every if p not in covered]


def compare_status(committed: pd.DataFrame | None, now: pd.DataFrame) -> list[str]:
    """Lines naming each experiment whose status today differs from the committed table (empty:
    the same); a committed table made on another machine class is not compared (one line says so)."""
    if committed is None:
        return ["no committed status table: run `structpred runs status --write` and commit it"]
    machines = set(committed["machine"]) - {""}
    if machines and machines != set(now["machine"]):
        return []
    keys = ["status", "jobs", "fresh", "stale", "unknown", "moved_paths"]
    old = committed.set_index("experiment")
    out = []
    for row in now.itertuples(index=False):
        if row.experiment not in old.index:
            out.append(f"{row.experiment}: archived but not in the committed status table")
            continue
        before = old.loc[row.experiment]
        if any(str(before[k]) != str(getattr(row, k)) for k in keys):
            moved = f"; paths moved: {row.moved_paths}" if row.moved_paths else ""
            out.append(f"{row.experiment}: committed {before['status']} ({before['fresh']} fresh, {before['stale']} "
                       f"stale), now {row.status} ({row.fresh} fresh, {row.stale} stale){moved}")
    out += [f"{e}: in the committed status table but not archived" for e in sorted(set(old.index) - set(now["experiment"]))]
    return out


def archive_class(committed: pd.DataFrame | None) -> str | None:
    """The machine class the committed status table was made on (``None``: no table, or none named)."""
    if committed is None:
        return None
    machines = sorted(set(committed["machine"].dropna().astype(str)) - {""})
    return machines[0] if machines else None


def guard(archive, status_path, project, *, budget_seconds: float = 120.0, reruns: bool = True,
          log=print) -> list[str]:
    """The CI guard.  On the archive's machine class (the one the committed status names): today's
    status against the committed one (:func:`compare_status`), then :func:`guard_sample`'s fresh
    jobs rerun from raw data and compared byte for byte with the archive (the bitwise tier).  On any
    other class, where bits are not comparable: the same kind of sample, of the jobs the committed
    status calls fresh, rerun and held to the tolerance and verdicts tiers
    (:func:`structpred.runs.tolerance.check`).  Returns one line per failure, naming the
    experiment and the paths."""
    committed = read_status(status_path)
    made_on, here = archive_class(committed), machine_class()
    if made_on is not None and made_on != here:
        return _guard_foreign(archive, project, made_on, here, budget_seconds, reruns, log)
    now = status_table(archive, made_on=made_on)
    failures = compare_status(committed, now)
    if not reruns:
        return failures
    sample, unguarded = guard_sample(archive, budget_seconds)
    if unguarded:
        log(f"guard: no fresh archived job within the budget runs: {', '.join(unguarded)} "
            "(their fingerprints are still compared)")
    if sample.empty:
        return failures
    log(f"guard: bitwise tier (this machine is the archive's class, {here}): rerunning {len(sample)} archived "
        f"jobs ({sample['seconds'].sum():.0f} s recorded)")
    result = verify(archive, sample, project)
    for r in result.itertuples():
        paths = " ".join(sorted(read_record(Path(archive) / r.experiment / r.dataset / r.method /
                                            f"split{r.split}.csv")["fingerprints"]))
        log(f"guard: {r.status:9s} {r.experiment}/{r.dataset}/{r.method}/split{r.split} ({paths})")
        if r.status != "identical":
            failures.append(f"{r.experiment}/{r.dataset}/{r.method}/split{r.split} (paths {paths}): "
                            f"rerun {r.status}: {r.detail}")
    return failures


def _guard_foreign(archive, project, made_on: str, here: str, budget_seconds: float, reruns: bool, log) -> list[str]:
    """:func:`guard` on a machine of another class than the archive's: the tolerance and verdicts tiers."""
    log(f"guard: the archive was made on {made_on}; this machine is {here}: bits are not comparable across "
        "machine classes, so this checks the tolerance and verdicts tiers (config/reproducibility.yaml) on a "
        "rerun sample instead of fingerprints")
    if not reruns:
        return []
    project = Path(project)
    config = load_config(project)
    jobs = job_table(archive, machine=made_on, config=config, as_recorded=True)
    sample, unguarded = guard_sample(archive, budget_seconds, jobs)
    if unguarded:
        log(f"guard: no archived job fresh on {made_on} within the budget runs: {', '.join(unguarded)}")
    if sample.empty:
        return []
    log(f"guard: rerunning {len(sample)} archived jobs ({sample['seconds'].sum():.0f} s recorded)")
    failures = []
    with tempfile.TemporaryDirectory(prefix="structpred-guard-") as kept:
        result = verify(archive, sample, project, config=config, keep=kept)
        for r in result.itertuples():
            job = f"{r.experiment}/{r.dataset}/{r.method}/split{r.split}"
            log(f"guard: {r.status:9s} {job}")
            if r.status not in ("identical", "differs"):
                failures.append(f"{job}: rerun {r.status}: {r.detail}")
        for outcome in tolerance.check_reruns(archive, result, kept, config, project):
            for line in outcome.lines():
                log(f"guard: {line}")
            if not tolerance.required_met(outcome.tier, "tolerance"):
                failures.append(f"{outcome.experiment}: reruns reached the {outcome.tier} tier, not tolerance "
                                f"({sum(~outcome.cells['within'])} cells out of tolerance, "
                                f"{len(outcome.verdicts)} verdicts changed)")
    return failures
