"""The reproducibility contract's tolerance and verdicts tiers (structpred.runs.tolerance), on the
committed archive's qs_usps jobs with a rerun file moved on purpose, and the CI guard on a
machine class it has never seen."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from structpred.runs import staleness, tolerance
from structpred.runs.archive import load_config

ROOT = Path(__file__).resolve().parents[1]
JOB = "qs_usps/usps/QS/split0.csv"
RULES = tolerance.load_rules(ROOT / tolerance.RULES_FILE)
LEDGER = {"abs": 0.01, "rel": 0.10}


def moved(tmp_path, job, metric, delta) -> Path:
    """A copy of the archived ``job`` with ``metric``'s selected value moved by ``delta``."""
    frame = pd.read_csv(ROOT / "runs" / job)
    hit = (frame["metric"] == metric) & frame["selected"]
    assert hit.sum() == 1
    frame.loc[hit, "value"] += delta
    out = tmp_path / "rerun" / job
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False, float_format="%.10g", lineterminator="\n")
    return out


def test_a_cell_bound_follows_its_metric_rule_and_never_exceeds_the_ledger():
    # default: half the standard error (std 0.004 over 16 splits: SE 0.001)
    assert tolerance.cell_bound("test_loss", 0.2, 0.004, 16, RULES, LEDGER) == pytest.approx(0.0005)
    # one run or no spread: last-bit noise only
    assert tolerance.cell_bound("test_loss", 0.2, 0.0, 1, RULES, LEDGER) == pytest.approx(1e-9)
    # gaps: 10% of the value, above half an SE here
    assert tolerance.cell_bound("oracle_gap", 0.7, 0.01, 4, RULES, LEDGER) == pytest.approx(0.07)
    # a wide spread is capped by the ledger's own tolerance, max(0.01, 10%)
    assert tolerance.cell_bound("test_loss", 0.05, 1.0, 4, RULES, LEDGER) == pytest.approx(0.01)
    assert tolerance.cell_bound("seconds", 3.0, 1.0, 4, RULES, LEDGER) is None


def test_job_differences_name_each_metric_and_a_flipped_selection_with_its_margin(tmp_path):
    rows = [("val_loss", 0.5, False, 0.30), ("test_loss", 0.5, False, 0.31), ("val_loss", 0.25, True, 0.29),
            ("test_loss", 0.25, True, 0.33), ("seconds", 0.25, False, 5.0)]

    def write(name, rows):
        frame = pd.DataFrame([{"experiment": "e", "task": "t", "dataset": "d", "method": "M", "split": 0, "lam": lam,
                               "selected": sel, "metric": m, "value": v, "reference": None, "detail": None}
                              for m, lam, sel, v in rows])
        frame.to_csv(tmp_path / name, index=False)
        return tmp_path / name

    a = write("a.csv", rows)
    b = write("b.csv", [("val_loss", 0.5, True, 0.2895), ("test_loss", 0.5, True, 0.31),
                        ("val_loss", 0.25, False, 0.29), ("test_loss", 0.25, False, 0.34), ("seconds", 0.25, False, 9.0)])
    largest, flips = tolerance.job_differences(a, b)
    assert largest == pytest.approx({"val_loss": 0.0105, "test_loss": 0.01})   # timings left out
    assert flips == ["test_loss: lambda 0.25 -> 0.5 (rerun's val_loss margin 0.0005)",
                     "val_loss: lambda 0.25 -> 0.5 (rerun's val_loss margin 0.0005)"]
    assert tolerance.job_differences(a, a) == ({"val_loss": 0.0, "test_loss": 0.0}, [])
    no_lambda = write("c.csv", [("test_error", float("nan"), True, 0.1)])      # e.g. a kernel regression's row
    assert tolerance.job_differences(no_lambda, no_lambda) == ({"test_error": 0.0}, [])


@pytest.fixture(scope="module")
def config():
    return load_config(ROOT)


def test_an_identical_rerun_is_bitwise_and_a_last_digit_move_within_tolerance(tmp_path, config):
    same = tmp_path / "same" / JOB
    same.parent.mkdir(parents=True)
    shutil.copyfile(ROOT / "runs" / JOB, same)
    assert tolerance.check(ROOT / "runs", "qs_usps", {JOB: same}, config, project=ROOT).tier == "bitwise"
    outcome = tolerance.check(ROOT / "runs", "qs_usps", {JOB: moved(tmp_path, JOB, "hellinger", 1e-5)}, config,
                              project=ROOT)
    assert outcome.tier == "tolerance" and outcome.cells["within"].all() and not outcome.verdicts
    cell = outcome.cells.set_index(["method", "metric"]).loc[("QS", "hellinger")]
    assert cell["diff"] == pytest.approx(1e-6, rel=1e-3)          # one split of 10
    assert outcome.jobs[JOB]["hellinger"] == pytest.approx(1e-5, rel=1e-3)
    assert outcome.lines()[0].startswith("qs_usps: tolerance: 1 rerun job, 6 cells compared, closest to its bound 1e-06")


def test_a_moved_number_fails_the_tolerance_tier_and_a_larger_one_a_verdict(tmp_path, config):
    outcome = tolerance.check(ROOT / "runs", "qs_usps", {JOB: moved(tmp_path, JOB, "hellinger", 0.01)}, config,
                              project=ROOT)
    out = outcome.cells[~outcome.cells["within"]]
    assert outcome.tier in ("verdicts", "differs")
    assert out[["method", "metric"]].values.tolist() == [["QS", "hellinger"]]
    assert any("cell out of tolerance: usps/QS/hellinger" in line for line in outcome.lines())
    # QS's hellinger loss below KDE's on every split: one split moved above KDE's mean changes that order
    outcome = tolerance.check(ROOT / "runs", "qs_usps", {JOB: moved(tmp_path, JOB, "hellinger", 0.6)}, config,
                              project=ROOT)
    assert outcome.tier == "differs" and outcome.verdicts
    assert all(" -> " in v for v in outcome.verdicts)


FOREIGN = "x86_64 NeverSeenVendor neverseen | numpy AVX2 | openblas Haswell"


def test_the_guard_on_an_unseen_machine_class_holds_reruns_to_tolerance(tmp_path, monkeypatch):
    """The committed status names the archive's class; on a class it has never seen the guard
    takes a sample of the jobs fresh there, reruns them (here: the archived files, one moved),
    passes them within tolerance and fails on a moved number, with no traceback."""
    monkeypatch.setattr(staleness, "machine_class", lambda: FOREIGN)
    shift = {}

    def fake_verify(archive, jobs, project, config=None, keep=None, **kw):
        for r in jobs.itertuples():
            job = f"{r.experiment}/{r.dataset}/{r.method}/split{r.split}.csv"
            dest = Path(keep) / job
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(archive) / job, dest)
            if r.experiment in shift:
                frame = pd.read_csv(dest)
                sel = frame["selected"] & (frame["metric"] != "seconds")
                frame.loc[sel, "value"] += shift[r.experiment]
                frame.to_csv(dest, index=False, float_format="%.10g", lineterminator="\n")
        return jobs.assign(status="identical", detail="")

    monkeypatch.setattr(staleness, "verify", fake_verify)
    monkeypatch.setattr(staleness, "guard_sample", lambda archive, budget, jobs: (pd.DataFrame(
        [{"experiment": "qs_usps", "dataset": "usps", "method": "QS", "split": "0", "seconds": 6.6, "cpu": 7.0}]), []))
    logged = []
    failures = staleness.guard(ROOT / "runs", ROOT / "reports/tables/staleness.csv", ROOT, log=logged.append)
    assert failures == []
    assert "this machine is " + FOREIGN in logged[0] and "tolerance and verdicts tiers" in logged[0]
    assert any(line.startswith("guard: qs_usps: bitwise") for line in logged)
    shift["qs_usps"] = 0.6
    logged.clear()
    failures = staleness.guard(ROOT / "runs", ROOT / "reports/tables/staleness.csv", ROOT, log=logged.append)
    assert len(failures) == 1 and failures[0].startswith("qs_usps: reruns reached the differs tier")
    assert any("cell out of tolerance: usps/QS/" in line for line in logged)


def test_a_recorded_verification_makes_unrecorded_jobs_verified_and_is_summarised(tmp_path):
    """``runs verify --record`` on any class writes the experiment's reproduction record; ``runs
    status`` then calls an experiment whose only gap is jobs without records ``verified``, and on
    a class other than the archive's judges each job as recorded there, never "unknown" for that."""
    archive = tmp_path / "runs"
    for split, record in ((0, {"commit": "c", "machine": "archive-class", "fingerprints": {"a": "1"}}),
                          (1, None)):                                       # archived before records
        path = archive / "e" / "d" / "m" / f"split{split}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("experiment,dataset,method,split,metric,value\ne,d,m,0,loss,0.2\n")
        if record:
            staleness.record_path(path).write_text(json.dumps(record))
    table = staleness.status_table(archive, machine=FOREIGN, config={}, made_on="archive-class")
    row = table.iloc[0]
    assert (row["status"], row["fresh"], row["unknown"], row["machine"]) == ("unknown", 1, 1, "archive-class")
    cells = pd.DataFrame([{"task": "t", "dataset": "d", "method": "m", "metric": "loss", "cell": "d/m/loss",
                           "archived": 0.2, "rerun": 0.2001, "diff": 1e-4, "bound": 5e-4, "within": True}])
    recorded_only = tolerance.Outcome("e", "tolerance", cells, [], {"e/d/m/split0.csv": {"loss": 0.0}}, {})
    tolerance.record(archive, recorded_only, FOREIGN, "abc")       # no unknown job among the sample
    assert staleness.status_table(archive, machine=FOREIGN, config={}, made_on="archive-class").iloc[0]["status"] == "unknown"
    outcome = tolerance.Outcome("e", "tolerance", cells, [], {"e/d/m/split1.csv": {"loss": 1e-3}}, {})
    tolerance.record(archive, outcome, FOREIGN, "abc")
    entry = json.loads((archive / "e" / tolerance.RECORD).read_text())[FOREIGN]
    assert entry["tier"] == "tolerance" and entry["largest_cell_move"] == pytest.approx(1e-4)
    assert entry["largest_job_difference"] == {"loss": 1e-3} and entry["jobs"] == ["e/d/m/split1.csv"]
    row = staleness.status_table(archive, machine=FOREIGN, config={}, made_on="archive-class").iloc[0]
    assert row["status"] == "verified"
    assert row["reproduced"] == ("bitwise on archive-class (1 of 2 jobs, by their fingerprints); within tolerance, "
                                 f"same verdicts on {FOREIGN} (1 job rerun; the cell nearest its bound, d/m/loss, "
                                 "moved 0.0001 of 0.0005)")
    outcome.tier = "differs"
    tolerance.record(archive, outcome, FOREIGN, "abc")
    assert staleness.status_table(archive, machine=FOREIGN, config={}, made_on="archive-class").iloc[0]["status"] == "unknown"
    (archive / "e" / tolerance.RECORD).write_text("{oops")
    with pytest.raises(Exception, match="not a reproduction record"):
        tolerance.read_record(archive, "e")
