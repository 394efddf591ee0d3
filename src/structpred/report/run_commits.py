"""At which commit(s) a table's runs were computed, for its section of the report: the commits that
the run archive's ``runs/README.md`` names in the ``code:`` line of the experiment's sections, and
those the per-job numerics records (``split<k>.numerics.json``, written by every job since they
exist) carry. Where neither names one, the report says the commit is unknown."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

#: a short or full git hash in prose: 7 to 40 hex digits, with at least one digit and one letter
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def _without_parentheses(text: str) -> str:
    """``text`` without its parenthesised asides (an included fix, a ``git diff`` of two commits)."""
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\([^()]*\)", "", text)
    return text


def readme_commits(readme) -> dict[str, list[str]]:
    """experiment -> the commits the ``- code:`` line of its sections of ``runs/README.md`` names
    (a section is a ``## <experiment>...`` heading; parenthesised asides are not read)."""
    path = Path(readme)
    if not path.is_file():
        return {}
    out: dict[str, list[str]] = {}
    for section in re.split(r"(?m)^## ", path.read_text(encoding="utf-8"))[1:]:
        heading, _, body = section.partition("\n")
        name = re.match(r"[A-Za-z0-9_]+", heading)
        code = re.search(r"(?ms)^- code: (.*?)(?=^- |^\S|\Z)", body)
        if not name or not code:
            continue
        found = HASH.findall(_without_parentheses(" ".join(code.group(1).split())))
        out[name.group(0)] = list(dict.fromkeys(out.get(name.group(0), []) + found))
    return out


def record_commits(records) -> Counter:
    """commit -> how many of the numerics records ``records`` (paths) name it."""
    counts: Counter = Counter()
    for path in sorted(map(Path, records)):
        try:
            commit = json.loads(path.read_text(encoding="utf-8")).get("commit") or "unknown"
        except (OSError, ValueError):
            commit = "unreadable record"
        counts[str(commit)] += 1
    return counts


def archive_records(archive, experiment: str) -> list[Path]:
    """The numerics records of ``experiment``'s archived jobs in the run archive folder."""
    folder = Path(archive) / experiment
    return sorted(folder.rglob("split*.numerics.json")) if folder.is_dir() else []


def result_records(result_paths) -> dict[str, list[Path]]:
    """experiment -> the numerics records beside the result files ``<...>/<experiment>/<dataset>/
    <method>/split<k>.csv`` (the workflow's results)."""
    out: dict[str, list[Path]] = {}
    for p in map(Path, result_paths):
        record = p.with_name(p.stem + ".numerics.json")
        if record.is_file():
            out.setdefault(p.parents[2].name, []).append(record)
    return out


def computed_at(named: list[str], records: Counter, jobs: int | None, source: str | None) -> tuple[str, str]:
    """Where a table's runs were computed: one sentence (the commits ``source``, the archive's README,
    names; ``None``: none read; and how many of ``jobs`` carry a numerics record, or that the commit is
    unknown) and the list of the records' commits (``"<commit> (<jobs>), ..."``, most jobs first;
    empty without records), apart so that a page can fold a long list away."""
    parts = []
    if named:
        parts.append(f"computed at commit{'s' if len(named) > 1 else ''} {', '.join(named)} "
                     f"(the code lines of {source})")
    listed = ""
    if records:
        total = sum(records.values())
        of = f" of {jobs}" if jobs else ""
        listed = ", ".join(f"{c} ({n})" for c, n in sorted(records.items(), key=lambda cn: (-cn[1], cn[0])))
        parts.append(f"{total}{of} jobs carry a numerics record naming the commit they ran at")
    if not parts:
        where = f"{source} names none and no job" if source else "no job"
        return f"the commit its runs were computed at is unknown: {where} carries a numerics record", ""
    return "; ".join(parts), listed

