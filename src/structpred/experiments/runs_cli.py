"""``structpred runs cost [--archive runs] [--by experiment|method|dataset]``: the CPU time the run
archive recorded, summed (:func:`structpred.experiments.run_archive.cost_table`);
``structpred runs verify [--sample N --seed S --experiment E --max-seconds T]``: sampled archived
jobs rerun from raw data and compared (:func:`~structpred.experiments.run_archive.verify`).
Registered by :func:`structpred.cli.build_parser`."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("runs", help="the run archive behind the committed tables")
    sub = p.add_subparsers(dest="runs_command", required=True)
    cost = sub.add_parser("cost", help="CPU-hours recorded by the archived jobs, per experiment (method, dataset)")
    cost.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    cost.add_argument("--by", default="experiment", choices=["experiment", "method", "dataset"],
                      help="group by experiment, by experiment and method, or by experiment, method and dataset")
    cost.set_defaults(func=_cost)
    check = sub.add_parser("verify", help="rerun sampled archived jobs from raw data and compare their rows "
                                          "with the archive's (timings excluded)")
    check.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    check.add_argument("--sample", type=int, default=3, help="how many jobs to rerun (default: 3)")
    check.add_argument("--seed", type=int, default=0, help="the seed of the draw (default: 0)")
    check.add_argument("--experiment", action="append", default=None,
                       help="draw only from this experiment's jobs (repeatable)")
    check.add_argument("--max-seconds", type=float, default=None,
                       help="draw only jobs that recorded at most this much fitting time")
    check.add_argument("--cores", type=int, default=1, help="cores for the rerun (default: 1)")
    check.set_defaults(func=_verify)


def _cost(args) -> int:
    from structpred.experiments.run_archive import cost_table

    table = cost_table(args.archive, args.by)
    print(table.to_string(index=False))
    timed = table["timed_jobs"].sum()
    print(f"total: {table['cpu_hours'].sum():.1f} CPU-hours over {timed} timed jobs "
          f"({table['jobs'].sum() - timed} untimed)")
    return 0


def _verify(args) -> int:
    from structpred.experiments.run_archive import sample_jobs, verify

    jobs = sample_jobs(args.archive, args.sample, args.seed, args.experiment, args.max_seconds)
    result = verify(args.archive, jobs, Path.cwd(), cores=args.cores)
    for r in result.itertuples():
        print(f"{r.status:9s}  {r.experiment}/{r.dataset}/{r.method}/split{r.split}" + (f"  {r.detail}" if r.detail else ""))
    same = int((result["status"] == "identical").sum())
    print(f"{same} of {len(result)} rerun jobs identical to the archive (timings excluded)")
    return 0 if same == len(result) else 1


def register_experiments(subparsers) -> None:
    p = subparsers.add_parser("experiments", help="every configured experiment: its table, its jobs, whether its "
                                                  "data is here, what the archive holds and cost")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration (default: config/config.yaml)")
    p.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    p.set_defaults(func=_experiments)


def _experiments(args) -> int:
    from structpred.data.preflight import unavailable
    from structpred.experiments.registry import get
    from structpred.experiments.run_archive import job_costs
    from structpred.report.cli import _load_config

    config = _load_config(args.config)
    costs = job_costs(args.archive) if args.archive.is_dir() else None
    print(f"{'experiment':26s} {'jobs':>5s} {'archived':>8s} {'CPU-h':>7s}  data   title")
    for name in config["experiments"]:
        exp = get(name)
        jobs = exp.jobs(config)
        missing = unavailable(sorted(exp.sources(config)), config["data"]["raw_dir"], config["data"].get("mirror"))
        mine = costs[costs["experiment"] == name] if costs is not None else None
        archived = 0 if mine is None else len(mine)
        hours = "-" if mine is None or mine["seconds"].isna().all() else f"{mine['seconds'].sum() / 3600:.2f}"
        data = "ok" if not missing else "MISSING " + ",".join(sorted({m["source"] for m in missing}))
        print(f"{name:26s} {len(jobs):5d} {archived:8d} {hours:>7s}  {data:6s} {exp.title}")
    return 0
