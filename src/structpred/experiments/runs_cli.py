"""``structpred runs cost [--archive runs] [--by experiment|method|dataset]``: the CPU time the run
archive recorded, summed (:func:`structpred.experiments.run_archive.cost_table`; registered by
:func:`structpred.cli.build_parser`)."""

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


def _cost(args) -> int:
    from structpred.experiments.run_archive import cost_table

    table = cost_table(args.archive, args.by)
    print(table.to_string(index=False))
    timed = table["timed_jobs"].sum()
    print(f"total: {table['cpu_hours'].sum():.1f} CPU-hours over {timed} timed jobs "
          f"({table['jobs'].sum() - timed} untimed)")
    return 0
