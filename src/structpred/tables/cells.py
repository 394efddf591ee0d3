"""The cells of the report's tables, which each experiment's page is made of: a loss as the paper
prints it, ours beside the paper's number and Δ, a converged fit's gap and passes, AGM's bold."""

from __future__ import annotations

import pandas as pd


def fmt(value, percent: bool = False) -> str:
    """A loss as the papers print it (in percent for the tasks they print so)."""
    if value is None or pd.isna(value):
        return "–"
    if percent:
        return f"{100 * value:.2f}%"
    return f"{value:.3f}"


def paper_note(mean, reference, percent: bool = False) -> str:
    """The paper's number and Δ = ours − paper beneath a cell; empty without a paper number."""
    if reference is None or pd.isna(reference):
        return ""
    delta = mean - reference
    return (f"<br><span class=paper>paper {fmt(reference, percent)}</span>"
            f" <span class=diff>Δ {'+' if delta >= 0 else '−'}{fmt(abs(delta), percent)}</span>")


def convergence_note(rel_gap, passes) -> str:
    """The certified gap / primal and the passes a converged fit reached, beneath a cell; empty
    without them."""
    if rel_gap is None or passes is None:
        return ""
    unit = "pass" if round(passes) == 1 else "passes"   # mean passes over splits; a direct solver's one pass
    return f"<br><span class=paper>gap/primal {rel_gap:.1e}, {passes:.0f} {unit}</span>"


def cell(row: pd.Series, percent: bool = False, bold: bool = False) -> str:
    """``mean ± std`` of a table row, bold if asked, with the paper's number beneath."""
    ours = f"{fmt(row['mean'], percent)} ± {fmt(row['std'], percent)}"
    if bold:
        ours = f"<b>{ours}</b>"
    return f"<td>{ours}{paper_note(row['mean'], row.get('reference'), percent)}</td>"


def bold_of(tests: pd.DataFrame) -> dict[tuple, bool]:
    """(task, dataset, metric, method) -> bold, from a :func:`best_tests` table (empty: none); its
    rows of other pairs (``bold`` empty) say nothing of bold."""
    if tests.empty or "bold" not in tests:
        return {}
    tests = tests[tests["bold"].notna() & (tests["bold"].astype(str) != "")]
    bold = tests["bold"].astype(str).str.lower() == "true"  # bool, or text from a CSV
    keys = zip(tests["task"], tests["dataset"], tests["metric"], tests["method_a"])
    return dict(zip(keys, bold))
