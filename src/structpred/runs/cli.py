"""``structpred runs cost [--archive runs] [--by experiment|method|dataset]``: the CPU time the run
archive recorded, summed (:func:`structpred.runs.archive.cost_table`);
``structpred runs verify [--sample N --seed S --experiment E --max-seconds T]``: sampled archived
jobs rerun from raw data and compared (:func:`~structpred.runs.archive.verify`);
``structpred runs estimate --experiment E``: a table's CPU before it runs (:mod:`structpred.runs.estimate`).
Registered by :func:`structpred.cli.build_parser`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from structpred.data.acquire import resolve_mirror
from structpred.data.preflight import ORIGINS, source_origins
from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.report.cli import _load_config
from structpred.runs import staleness_cli
from structpred.report.archive_costs import job_costs
from structpred.report.archive_status import read_status
from structpred.runs import tolerance
from structpred.runs.archive import (TIMEOUT_FACTOR, TIMEOUT_SLACK, cost_table, job_commit, load_config,
                                     sample_jobs, verify)
from structpred.runs.numerics import machine_class
from structpred.runs.staleness import archive_class
from structpred.runs.staleness_cli import STATUS_FILE
from structpred.runs.tolerance import TIERS
from structpred.runs.estimate import estimate
from structpred.runs.makespan import makespan, tasks


def register(subparsers) -> None:
    p = subparsers.add_parser("runs", help="the run archive behind the committed tables")
    sub = p.add_subparsers(dest="runs_command", required=True)
    cost = sub.add_parser("cost", help="CPU-hours recorded by the archived jobs, per experiment (method, dataset)")
    cost.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    cost.add_argument("--by", default="experiment", choices=["experiment", "method", "dataset"],
                      help="group by experiment, by experiment and method, or by experiment, method and dataset")
    cost.add_argument("--simulate-cores", type=int, nargs="+", default=None, metavar="N",
                      help="instead: the main job's wall time on N cores, from the recorded seconds and the "
                           "workflow's job graph (list scheduling by critical path)")
    cost.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                      help="with --simulate-cores: the configuration (default: config/config.yaml)")
    cost.set_defaults(func=_cost)
    check = sub.add_parser("verify", help="rerun sampled archived jobs from raw data and compare their rows "
                                          "with the archive's (timings excluded)")
    check.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    check.add_argument("--sample", type=int, default=3, help="how many jobs to rerun (default: 3)")
    check.add_argument("--seed", type=int, default=0, help="the seed of the draw (default: 0)")
    check.add_argument("--experiment", action="append", default=None,
                       help="draw only from this experiment's jobs (repeatable)")
    check.add_argument("--max-seconds", type=float, default=None,
                       help="bound the whole rerun: draw jobs while the sample's estimated seconds (each job's "
                            "recorded fitting time plus the upstream jobs it must recompute; archived ones are "
                            "reused) stay within this; untimed jobs are left out")
    check.add_argument("--timeout", type=float, default=None,
                       help="stop the rerun after this many seconds; jobs not finished report 'timeout' "
                            "(default with --max-seconds: 3 times it plus 120 s; else none)")
    check.add_argument("--cores", type=int, default=1, help="cores for the rerun (default: 1)")
    check.add_argument("--record", action="store_true",
                       help="write what the reruns found into the archive: each experiment's tier on this machine "
                            "class (runs/<experiment>/reproduction.json) and, on the archive's class, each job's "
                            "numerics record (identical: its rerun's fingerprints; differs: marked not reproduced), "
                            "read by `structpred runs status`")
    check.add_argument("--tolerance", choices=TIERS[:3], default=None,
                       help="the tier to require: bitwise (the archived bytes), tolerance (every table cell "
                            "within its metric's bound, config/reproducibility.yaml, and the same verdicts) or "
                            "verdicts (the claims ledger's verdicts only); default: bitwise on the archive's "
                            "machine class, tolerance on any other")
    check.set_defaults(func=_verify)
    price = sub.add_parser("estimate", help="a table's CPU before it runs: each (dataset, method) group's "
                                            "recorded CPU, or one short timed fit extrapolated to its jobs")
    price.add_argument("--experiment", required=True, help="the table (e.g. matrix)")
    price.add_argument("--dataset", action="append", default=None, help="only this dataset's groups (repeatable)")
    price.add_argument("--method", action="append", default=None, help="only this method's groups (repeatable)")
    price.add_argument("--passes", type=int, default=2, help="passes of each timed fit (default: 2)")
    price.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    price.set_defaults(func=_estimate)
    staleness_cli.register(sub)


def _cost(args) -> int:
    if args.simulate_cores:
        return _simulate(args)

    table = cost_table(args.archive, args.by)
    shown = table.drop(columns="wall_jobs").assign(   # the printing only: cost_table keeps its numbers (NaN: untimed)
        cpu_hours=["untimed" if pd.isna(h) else f"{h:.2f}" for h in table["cpu_hours"]],
        cpu=[c or "not recorded" for c in table["cpu"]])
    print(shown.to_string(index=False))
    if (shown["cpu_hours"] == "untimed").any():
        print("untimed: no job of the group recorded its fitting seconds (e.g. the AGM emotion tables): "
              "its CPU-hours are unknown, not 0, and left out of the total")
    if (shown["cpu"] == "not recorded").any():
        print("not recorded: the CPU model is recorded only by jobs run since 2026-11-27 (in their seconds "
              "rows); older jobs and untimed ones name none")
    timed, wall = table["timed_jobs"].sum(), table["wall_jobs"].sum()
    print(f"total: {table['cpu_hours'].sum():.1f} CPU-hours over {timed} timed jobs "
          f"({table['jobs'].sum() - timed} untimed); {wall} of them timed by their wall seconds only (archived "
          "before jobs kept their CPU seconds, or resumed), which a busy machine inflates")
    return 0


def _simulate(args) -> int:
    if min(args.simulate_cores) < 1:
        raise ConfigError("--simulate-cores takes core counts of at least 1")
    jobs, left = tasks(args.archive, _load_config(args.config))
    total = sum(sum(t.parts) for t in jobs)
    print(f"{sum(len(t.key) == 4 for t in jobs)} timed archived jobs, {total / 3600:.1f} CPU-hours of fitting; left out: "
          f"{left['untimed']} untimed, {left['not archived']} not archived (data and feature jobs count 0)")
    for n in args.simulate_cores:
        end, longest = makespan(jobs, n)
        wall, held = longest.wall(n)
        print(f"{n:4d} cores: {end / 3600:7.2f} hours wall  (longest job {'/'.join(map(str, longest.key))}: "
              f"{wall / 3600:.2f} h on {held} core{'s' if held > 1 else ''}; CPU-hours / cores: {total / 3600 / n:.2f})")
    return 0


def _estimate(args) -> int:
    if args.passes < 1:
        raise ConfigError("--passes takes at least 1")
    config = load_config(Path.cwd())
    table = estimate(Path.cwd(), args.archive, args.experiment, config, datasets=args.dataset, methods=args.method,
                     passes=args.passes, log=lambda line: print(line, flush=True))
    shown = table.assign(seconds_per_job=table["seconds_per_job"].round(1), cpu_hours=table["cpu_hours"].round(2),
                         left_cpu_hours=table["left_cpu_hours"].round(2),
                         source_cpu_hours=["" if pd.isna(h) else f"{h:.2f}" for h in table["source_cpu_hours"]])
    print(shown.to_string(index=False))
    for how, group in table.groupby(table["how"].str.split(":").str[0], sort=True):
        read = group["source_cpu_hours"]
        source = (f" (the jobs they read: {read.sum():.2f} CPU-hours recorded"
                  + (f", {int(read.isna().sum())} groups' not all archived" if read.isna().any() else "") + ")"
                  if how == "borrowed" else "")
        print(f"{how}: {group['jobs'].sum()} jobs, {group['cpu_hours'].sum():.2f} CPU-hours{source}")
    print(f"total: {table['cpu_hours'].sum():.2f} CPU-hours over {table['jobs'].sum()} jobs; not archived yet: "
          f"{table['left_cpu_hours'].sum():.2f} CPU-hours over {(table['jobs'] - table['archived']).clip(lower=0).sum()} "
          "jobs (unpriced groups count 0)")
    return 0


def _verify(args) -> int:
    config = load_config(Path.cwd())
    jobs = sample_jobs(args.archive, args.sample, args.seed, args.experiment, args.max_seconds, config=config)
    timeout = args.timeout
    if timeout is None and args.max_seconds is not None:
        timeout = TIMEOUT_FACTOR * args.max_seconds + TIMEOUT_SLACK
    def secs(x):
        return "unknown" if x != x else f"{x:.0f} s"

    for r in jobs.itertuples():
        print(f"sampled    {r.experiment}/{r.dataset}/{r.method}/split{r.split}  ~{secs(r.estimate)} "
              f"(recorded {secs(r.seconds)})")
    print(f"estimate: ~{secs(jobs['estimate'].sum(min_count=len(jobs)))} of fitting for {len(jobs)} jobs"
          + (f" (bound {args.max_seconds:g} s)" if args.max_seconds is not None else "")
          + (f"; the rerun stops after {timeout:g} s" if timeout is not None else ""), flush=True)
    made_on, here = archive_class(read_status(STATUS_FILE)), machine_class()
    home = made_on is None or made_on == here
    required = args.tolerance or ("bitwise" if home else "tolerance")
    print(f"this machine is {here}" + ("" if home else f", not the archive's class ({made_on})")
          + f": requiring the {required} tier", flush=True)
    with tempfile.TemporaryDirectory(prefix="structpred-reruns-") as kept:
        result = verify(args.archive, jobs, Path.cwd(), cores=args.cores, timeout=timeout, config=config,
                        log=lambda line: print(line, flush=True), record=args.record and home, keep=kept)
        for r in result.itertuples():
            print(f"{r.status:9s}  {r.experiment}/{r.dataset}/{r.method}/split{r.split}" + (f"  {r.detail}" if r.detail else ""))
        same = int((result["status"] == "identical").sum())
        print(f"{same} of {len(result)} rerun jobs identical to the archive (timings excluded)")
        ok = bool(result["status"].isin(["identical", "differs"]).all())
        commit = job_commit(Path.cwd())
        for outcome in tolerance.check_reruns(args.archive, result, kept, config, Path.cwd()):
            for job, largest in outcome.jobs.items():
                moved = {m: v for m, v in largest.items() if v}
                print(f"  {job}: " + (", ".join(f"{m} {v:.3g}" for m, v in sorted(moved.items(), key=lambda t: -t[1])[:6])
                                      if moved else "every value equal"))
            for line in outcome.lines():
                print(line)
            ok &= tolerance.required_met(outcome.tier, required)
            if args.record:
                tolerance.record(args.archive, outcome, here, commit)
    return 0 if ok else 1


def register_experiments(subparsers) -> None:
    p = subparsers.add_parser("experiments", help="every configured experiment: its table, its jobs, whether its "
                                                  "data is here, what the archive holds and cost")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration (default: config/config.yaml)")
    p.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    p.set_defaults(func=_experiments)


def data_status(origins: dict[str, str]) -> str:
    """An experiment's data column from its sources' origins
    (:func:`structpred.data.preflight.source_origins`): ``none`` (it reads no raw file), ``present``,
    ``mirror``, ``downloadable`` (the worst of its sources), or ``missing`` and the sources that
    cannot be had."""
    if not origins:
        return "none"
    missing = sorted(name for name, where in origins.items() if where == "missing")
    if missing:
        return "missing " + ",".join(missing)
    return max(origins.values(), key=ORIGINS.index)


def _experiments(args) -> int:
    config = _load_config(args.config)
    raw_dir, mirror = config["data"]["raw_dir"], config["data"].get("mirror")
    costs = job_costs(args.archive) if args.archive.is_dir() else None
    print(f"{'experiment':26s} {'jobs':>5s} {'archived':>8s} {'CPU-h':>7s}  {'data':12s} title")
    for name in config["experiments"]:
        exp = get(name)
        jobs = exp.jobs(config)
        data = data_status(source_origins(sorted(exp.sources(config)), raw_dir, mirror))
        mine = costs[costs["experiment"] == name] if costs is not None else None
        archived = 0 if mine is None else len(mine)
        hours = "-" if mine is None or mine["seconds"].isna().all() else f"{mine['seconds'].sum() / 3600:.2f}"
        print(f"{name:26s} {len(jobs):5d} {archived:8d} {hours:>7s}  {data:12s} {exp.title}")
    root = resolve_mirror(mirror)
    print(f"data: present = every raw file is in {raw_dir}/; mirror = copied from the mirror "
          f"({root if root is not None else 'none set'}) when the run needs it; downloadable = downloaded "
          f"and verified when the run needs it (no mirror set); missing = cannot be had (structpred data "
          f"list says where to put it); none = reads no raw file.")
    print(f"CPU-h: the seconds the archive ({args.archive}/) recorded; '-' where no archived job was timed.")
    return 0
