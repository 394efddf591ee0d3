"""``structpred data {list,fetch,prepare,views}``: registered by :func:`structpred.cli.build_parser`.

Output goes to stdout; errors are raised as DataError (exit status 2 via ``cli.main``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from structpred.data.acquire import fetch, resolve_mirror, status
from structpred.data.parsers import VIEWS
from structpred.data.registry import SOURCES
from structpred.data.store import prepare


def register(subparsers) -> None:
    """Add the ``data`` command group to the top-level ``subparsers``."""
    data = subparsers.add_parser("data", help="raw data: list, fetch, prepare views")
    sub = data.add_subparsers(dest="data_command", required=True)

    p = sub.add_parser("list", help="each source: files present / missing / checksum status")
    p.add_argument("--dest", type=Path, default=None,
                   help="root of local raw folders (default: data/raw)")
    p.add_argument("--mirror", type=Path, default=None, help="mirror root (default: $STRUCTPRED_MIRROR)")
    p.set_defaults(func=_list)

    p = sub.add_parser("fetch", help="fetch and verify the raw files of one source")
    p.add_argument("name", help="the source (structpred data list names them)")
    p.add_argument("--dest", type=Path, default=None, help="destination (default: data/raw/NAME)")
    p.add_argument("--mirror", type=Path, default=None, help="mirror root (default: $STRUCTPRED_MIRROR)")
    p.add_argument("--retries", type=int, default=3, help="download attempts per file (default: 3)")
    p.add_argument("--timeout", type=float, default=60, help="seconds a download may stall (default: 60)")
    p.set_defaults(func=_fetch)

    p = sub.add_parser("prepare", help="parse a view into a compressed .npz")
    p.add_argument("view", help="the view (structpred data views names them)")
    p.add_argument("--raw", type=Path, required=True, help="raw root (holding <source>/) or source folder")
    p.add_argument("--out", type=Path, required=True, help="the .npz file to write")
    p.set_defaults(func=_prepare)

    p = sub.add_parser("views", help="list the parsed views")
    p.set_defaults(func=_views)


def _list(args: argparse.Namespace) -> int:
    root = args.dest if args.dest is not None else Path("data/raw")
    mirror = resolve_mirror(args.mirror)
    print(f"{'source':22s} {'status':9s} {'files':>9s}  where")
    for name in SOURCES:
        rows = status(name, root / name, args.mirror)
        bad = [r["file"] for r in rows if r["checksum"] == "MISMATCH"]
        missing = [r["file"] for r in rows if r["where"] == "missing"]
        where = sorted({r["where"] for r in rows if r["where"] != "missing"})
        state = "MISMATCH" if bad else ("missing" if missing else "ok")
        print(f"{name:22s} {state:9s} {len(rows) - len(missing):4d}/{len(rows):<4d}  {', '.join(where) or '-'}")
        for f in bad:
            print(f"    checksum MISMATCH: {f}")
        for f in missing:   # where the fetch would take it from
            print(f"    missing: put {f} in {(mirror if mirror is not None else root) / name}/")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    dest = args.dest if args.dest is not None else Path("data/raw") / args.name
    out = fetch(args.name, dest, args.mirror, retries=args.retries, timeout=args.timeout)
    print(f"{args.name}: verified in {out}")
    return 0


def _prepare(args: argparse.Namespace) -> int:
    meta = prepare(args.view, args.raw, args.out)
    print(f"{args.view}: (d, n, k) = {tuple(meta['parsed'])} -> {args.out}")
    return 0


def _views(args: argparse.Namespace) -> int:
    for v in VIEWS.values():
        print(f"{v.name:14s} {v.source:22s} {v.task:8s} paper {v.paper_dnk}")
    return 0


__all__ = ["register"]
