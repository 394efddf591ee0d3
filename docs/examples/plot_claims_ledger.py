"""
Reading the claims ledger in pandas
===================================

The workflow checks every claim of the four papers' tables and stated orderings against the
committed tables and writes one row per claim to ``reports/tables/claims.csv``
(``structpred claims`` prints it; :doc:`/guide/workflow`).  Each row has the claim's ``paper``,
``where`` (table or figure), ``statement``, ``verdict`` (``reproduced``, ``reproduced under
<experiment>``: under a named protocol, ``not reproduced``, ``cannot check``), our number
(``ours``) beside the paper's (``paper_value``), the paired ``test``, the ``tolerance``, the
selections at a grid's edge (``grid_edges``), the known ``cause`` where there is one, and
whether the run archive still reproduces it (``archive``).

This example reads the committed ledger of the repository, counts the verdicts per paper and
lists a few claims that do not hold.
"""

# %%
# Find and read the ledger
# ------------------------
# The ledger ships with the repository (nothing is downloaded): the script looks for it from
# ``$STRUCTPRED_ROOT``, from its own folder upwards, and beside the installed package's source.
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

import structpred


def find_ledger() -> Path:
    starts = [os.environ.get("STRUCTPRED_ROOT"), globals().get("__file__"), Path.cwd(),
              Path(structpred.__file__).resolve().parents[2]]
    for start in filter(None, starts):
        for folder in (Path(start).resolve(), *Path(start).resolve().parents):
            path = folder / "reports" / "tables" / "claims.csv"
            if path.is_file():
                return path
    raise FileNotFoundError("reports/tables/claims.csv not found: run from the repository or set STRUCTPRED_ROOT")


ledger = pd.read_csv(find_ledger())
print(ledger.shape[0], "claims;", "columns:", ", ".join(ledger.columns))

# %%
# Verdicts per paper
# ------------------
# ``reproduced under <experiment>`` is grouped as "under a named protocol", as the README's
# summary counts them.
def verdict_group(v: str) -> str:
    return "under a named protocol" if v.startswith("reproduced under") else v


ORDER = ["reproduced", "under a named protocol", "not reproduced", "cannot check"]
counts = (pd.crosstab(ledger["paper"], ledger["verdict"].map(verdict_group))
          .reindex(columns=ORDER, fill_value=0))
counts["claims"] = counts.sum(axis=1)
print(counts.to_string())

# %%
# Which claims do not hold, and by how much
# -----------------------------------------
# The first few value claims that are not reproduced, ours beside the paper's.
cols = ["paper", "where", "statement", "ours", "paper_value"]
failed = ledger[(ledger["verdict"] == "not reproduced") & (ledger["kind"] == "value")]
with pd.option_context("display.max_colwidth", 45, "display.width", 140):
    print(failed[cols].head(8).to_string(index=False))

# %%
# The figure
# ----------
# One bar per paper, split by verdict.
colors = {"reproduced": "tab:green", "under a named protocol": "yellowgreen",
          "not reproduced": "tab:red", "cannot check": "lightgray"}
fig, ax = plt.subplots(figsize=(8, 4))
left = pd.Series(0, index=counts.index)
for verdict in ORDER:
    ax.barh(counts.index, counts[verdict], left=left, color=colors[verdict], label=verdict)
    left += counts[verdict]
for paper, total in counts["claims"].items():
    ax.text(total + 1, paper, str(total), va="center", fontsize=8)
ax.set_xlabel("claims")
ax.set_title("The claims ledger: verdict per paper")
ax.set_xlim(0, 1.08 * counts["claims"].max())
ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.2))
ax.invert_yaxis()
fig.tight_layout()
plt.show()
