"""``structpred runs status [--write]``: which archived experiments today's code reproduces
(:func:`structpred.runs.staleness.status_table`); ``structpred runs guard``: the CI check
that a change moving numbers comes with its reruns or says so (:func:`~structpred.runs.staleness.guard`).
Registered by :func:`structpred.runs.cli.register`."""

from __future__ import annotations

import sys
from pathlib import Path

from structpred.io import atomic_open
from structpred.papers.registry import get
from structpred.report.archive_status import describe, read_status
from structpred.runs import rerun, staleness
from structpred.runs.archive import load_config
from structpred.runs.numerics import machine_class
from structpred.runs.staleness import STATUS_FILE


def register(sub) -> None:
    status = sub.add_parser("status", help="which archived experiments today's code still reproduces "
                                           "(fresh / stale / unknown, from the jobs' numerics fingerprints)")
    status.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    status.add_argument("--jobs", action="store_true", help="one line per job that is not fresh")
    status.add_argument("--write", type=Path, nargs="?", const=STATUS_FILE, default=None,
                        help=f"also write the table (default file: {STATUS_FILE}), which the report and the "
                             "CI guard read")
    status.set_defaults(func=_status)
    guard = sub.add_parser("guard", help="CI: fail when today's numerics differ from the committed status or a "
                                         "cheap sample of fresh archived jobs no longer reproduces")
    guard.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    guard.add_argument("--status", type=Path, default=STATUS_FILE,
                       help=f"the committed status table (default: {STATUS_FILE})")
    guard.add_argument("--budget", type=float, default=120.0,
                       help="recorded fitting seconds of the reruns, at most (default: 120)")
    guard.add_argument("--no-reruns", action="store_true", help="compare the fingerprints only")
    guard.set_defaults(func=_guard)
    again = sub.add_parser("rerun", help="rerun an experiment's jobs that today's code does not reproduce "
                                         "(stale, unknown, missing) and archive each chunk as it ends; resumable")
    again.add_argument("--experiment", required=True, help="the experiment (see `structpred experiments`)")
    again.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    again.add_argument("--cores", type=int, default=2, help="Snakemake's cores (default: 2)")
    again.add_argument("--chunk", type=int, default=20, help="jobs per Snakemake call (default: 20)")
    again.add_argument("--hours", type=float, default=None,
                       help="start no chunk after this many hours and stop the one running then")
    again.add_argument("--dataset", action="append", default=None,
                       help="only the jobs on this dataset (repeat for more; e.g. ck, the matrix's emotion column)")
    again.add_argument("--method", action="append", default=None,
                       help="only the jobs of this method (repeat for more: they run in the order given, e.g. the "
                            "cheap ones first)")
    again.add_argument("--split", action="append", type=int, default=None,
                       help="only the jobs on this split (repeat for more; e.g. 0 to 4, the splits the matrix "
                            "borrows from m4n_table1)")
    again.set_defaults(func=_rerun)


def _status(args) -> int:
    made_on, here = staleness.archive_class(read_status(STATUS_FILE)), machine_class()
    table = staleness.status_table(args.archive, made_on=made_on)
    shown = table.drop(columns=["machine", "detail", "reproduced"])
    print(shown.to_string(index=False))
    for row in table.itertuples(index=False):
        if row.status != "fresh":
            print(f"{row.experiment}: {describe(row._asdict())}")
        if row.reproduced:
            print(f"{row.experiment}: reproduced {row.reproduced}")
    if made_on is not None and made_on != here:
        print(f"this machine is {here}, not the archive's class: fingerprints are not compared here, each job is "
              f"judged as recorded on {made_on}; `structpred runs verify` checks the tolerance tier here")
    print(f"machine class: {table['machine'].iloc[0] if len(table) else '-'}")
    counts = table["status"].value_counts()
    print(f"{len(table)} archived experiments: {counts.get('fresh', 0)} fresh, {counts.get('verified', 0)} verified, "
          f"{counts.get('stale', 0)} stale, {counts.get('unknown', 0)} unknown")
    if args.jobs:
        foreign = made_on is not None and made_on != here
        jobs = staleness.job_table(args.archive, machine=made_on if foreign else None, as_recorded=foreign)
        for r in jobs[jobs["status"] != "fresh"].itertuples():
            print(f"  {r.status:7s} {r.experiment}/{r.dataset}/{r.method}/split{r.split}  "
                  f"{' '.join(r.moved) or r.detail}")
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(args.write, "w", newline="") as fh:
            fh.write(table.to_csv(index=False, lineterminator="\n"))
        print(f"wrote {args.write}")
    return 0


def _rerun(args) -> int:
    config = load_config(Path.cwd())
    if args.experiment not in config.get("experiments", {}):
        print(f"structpred: unknown experiment {args.experiment!r} (see `structpred experiments`)", file=sys.stderr)
        return 2
    jobs = get(args.experiment).jobs(config)
    for what, given, known in (("dataset", args.dataset, {d for d, _, _ in jobs}),
                               ("method", args.method, {m for _, m, _ in jobs}),
                               ("split", args.split, {k for _, _, k in jobs})):
        if given and set(given) - known:
            print(f"structpred: {args.experiment} has no {what} {', '.join(map(str, sorted(set(given) - known)))}; "
                  f"its {what}s: {', '.join(map(str, sorted(known)))}", file=sys.stderr)
            return 2
    done, pending = rerun.rerun(Path.cwd(), args.archive, args.experiment, config, cores=args.cores,
                                chunk=args.chunk, hours=args.hours, datasets=args.dataset, methods=args.method,
                                splits=args.split, log=lambda line: print(line, file=sys.stderr))
    print(f"{args.experiment}: {done} of {pending} pending jobs rerun and archived; "
          "then `structpred runs status --write` and `structpred report rerender`")
    return 0 if done == pending else 1


def _guard(args) -> int:
    failures = staleness.guard(args.archive, args.status, Path.cwd(), budget_seconds=args.budget,
                               reruns=not args.no_reruns, log=lambda line: print(line, file=sys.stderr))
    for line in failures:
        print(f"guard: FAIL {line}", file=sys.stderr)
    if failures:
        print("guard: a change moved archived numbers: rerun the named jobs and archive them, or record "
              "them stale with `structpred runs status --write` (the report then shows it)", file=sys.stderr)
        return 1
    print("guard: the archive's numerics are what today's code computes (or are marked stale)")
    return 0
