"""The answer in the first screen: ``structpred run --plan`` (and a dry run) print the plan a real run
prints only in ``onstart``; ``structpred experiments`` tells present from mirror, downloadable and
missing data; the top-level help names every command a reader needs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from structpred import cli, run_cli
from structpred.data.preflight import source_origins
from structpred.data.registry import get_source
from structpred.papers.registry import get
from structpred.tables.results import make_rows, write_csv

ROOT = Path(__file__).resolve().parents[1]


def _fake_files(folder: Path, source: str) -> None:
    """Empty files named as ``source``'s raw files: the plan and the status look, never hash."""
    for rf in get_source(source).files:
        (folder / source / rf.path).parent.mkdir(parents=True, exist_ok=True)
        (folder / source / rf.path).write_bytes(b"")


def _archived_job(runs: Path, experiment, dataset, method, split, seconds: float) -> None:
    rows = [{"experiment": experiment, "dataset": dataset, "method": method, "split": split, "metric": metric,
             "value": value, "selected": False} for metric, value in (("loss", 0.5), ("seconds", seconds))]
    write_csv(make_rows(rows), runs / experiment / dataset / method / f"split{split}.csv")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder (Snakefile, config, schema) with a mirror holding auto, a raw folder
    holding machine, every qs_robust result and one m4n_table2 result, and an archive timing
    m4n_table2 at one hour a job."""
    root = tmp_path / "project"
    for name in ("Snakefile", "config/config.yaml", "workflow/schemas/config.schema.yaml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    _fake_files(tmp_path / "mirror", "auto")
    _fake_files(root / "data" / "raw", "machine")
    config = run_cli.check([], ROOT)
    done = [("qs_robust", *job) for job in get("qs_robust").jobs(config)]
    done += [("m4n_table2", *get("m4n_table2").jobs(config)[0])]
    for e, d, m, s in done:
        path = root / "results" / e / d / m / f"split{s}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    d, m, _ = get("m4n_table2").jobs(config)[0]
    _archived_job(root / "runs", "m4n_table2", d, m, 0, 3600.0)
    _archived_job(root / "runs", "m4n_table2", d, m, 1, 3600.0)
    (root / "plan.yaml").write_text(yaml.safe_dump({"experiments": ["qs_robust", "m4n_table2", "casimir_voc"],
                                                    "data": {"mirror": str(tmp_path / "mirror")}}))
    monkeypatch.chdir(root)
    monkeypatch.delenv("STRUCTPRED_MIRROR", raising=False)
    return root


def test_run_plan_prints_jobs_missing_files_and_cpu_hours_and_runs_nothing(project, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(run_cli.os, "execvp", lambda prog, argv: started.append(argv))
    assert cli.main(["run", "--plan", "--configfile", "plan.yaml"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert started == []                                                    # snakemake never started
    # 150 qs_robust + 224 m4n_table2 + 900 casimir_voc jobs; all of qs_robust and one m4n_table2 done
    assert lines[0] == ("plan of the whole workflow (nothing run): 1123 of 1274 training jobs have no result "
                        "file in results/ yet, in 2 of 3 experiments")
    # offline (a mirror set): auto from the mirror, machine from the raw folder; VOC and AlexNet missing
    assert lines[1] == "3 raw file(s) this run needs cannot be had (no job was started):"
    assert sorted(line.split(":")[0].strip() for line in lines[2:5]) == [
        "alexnet/alexnet-owt-7be5be79.pth", "voc2007/VOCtest_06-Nov-2007.tar", "voc2007/VOCtrainval_06-Nov-2007.tar"]
    assert not any(re.search(r"\b(auto|machine)/", line) for line in lines)
    head = next(line for line in lines if line.startswith("planned:"))
    assert head == ("planned: 1123 training jobs, ~223.0 CPU-hours where the archive timed them (223 timed jobs, at "
                    "its mean per job and the settings it ran); 900 jobs untimed (unknown)")
    rows = {line.split()[0]: line.split(None, 1)[1] for line in lines if line.startswith("  ")}
    assert rows["m4n_table2"].split() == ["223", "jobs", "~", "223.00", "CPU-hours"]
    assert rows["casimir_voc"].split(None, 2)[2] == "unknown (never timed in runs/: no archived job)"
    assert "qs_robust" not in rows and "up to date (every result file there): qs_robust" in lines

    # data.skip_missing: the plan leaves out what the run would leave out, and says so
    (project / "skip.yaml").write_text(yaml.safe_dump({"data": {"skip_missing": True}}))
    assert cli.main(["run", "--configfile", "plan.yaml", "--configfile", "skip.yaml", "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "plan of the whole workflow (nothing run): 223 of 374 training jobs have no result file in results/ yet, "
        "in 1 of 2 experiments",
        "skip_missing: casimir_voc left out, its data is missing (alexnet, voc2007)",
        "data: every raw file the planned jobs need (2 sources) is in data/raw/ or can be had"]
    assert started == []


@pytest.mark.parametrize("args, dry", [
    (["-n"], True), (["--dry-run"], True), (["--dryrun", "--cores", "2"], True), (["--cores", "2", "-pn"], True),
    (["-np"], True), (["--cores", "2"], False), (["-p", "--configfile", "n.yaml"], False), (["-sn"], False),
    (["--report", "n.html"], False),
])
def test_dry_run_detection(args, dry):
    assert run_cli.is_dry_run(args) is dry


def test_a_dry_run_prints_the_plan_the_real_run_prints_in_onstart(tmp_path):
    """snakemake -n skips onstart: the plan is printed on stderr while the workflow is read, and its
    job count is the dry run's count of training jobs."""
    from tests.conftest import project_copy, snakemake

    work = project_copy(tmp_path)
    proc = snakemake(["-n", "--cores", "1", "--configfile", "config/smoke.yaml"], work)
    found = re.search(r"^plan of the whole workflow \(nothing run\): (\d+) of (\d+) training jobs", proc.stderr, re.M)
    assert found, proc.stderr[-3000:]
    stats = re.search(r"^run_job\s+(\d+)$", proc.stdout, re.M)
    assert found.group(1) == found.group(2) == stats.group(1)          # a fresh copy: every job planned
    assert re.search(r"^planned: \d+ training jobs, ~0\.0 CPU-hours where the archive timed them \(0 timed jobs, "
                     rf".*\); {found.group(1)} jobs untimed \(unknown\)$", proc.stderr, re.M)   # no archive in a copy
    assert "plan of the whole workflow" not in proc.stdout


def test_source_origins_tell_present_mirror_downloadable_and_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("STRUCTPRED_MIRROR", raising=False)
    raw, mirror = tmp_path / "raw", tmp_path / "mirror"
    _fake_files(raw, "iris")
    _fake_files(mirror, "wine")
    mirror.joinpath("auto").mkdir()
    assert source_origins(["iris", "wine", "auto"], raw, mirror) == {"iris": "present", "wine": "mirror",
                                                                      "auto": "missing"}
    # no mirror: a pinned file is downloaded and verified by its fetch
    assert source_origins(["iris", "wine", "voc2007"], raw, None) == {"iris": "present", "wine": "downloadable",
                                                                       "voc2007": "downloadable"}


def test_experiments_data_column_says_where_the_data_comes_from(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("STRUCTPRED_MIRROR", raising=False)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["experiments"] = ["datasets", "qs_robust", "casimir_voc"]
    config["datasets"]["views"] = ["iris", "wine"]
    raw, mirror = tmp_path / "raw", tmp_path / "mirror"
    config["data"].update(raw_dir=str(raw), mirror=str(mirror))
    _fake_files(raw, "iris")
    _fake_files(mirror, "wine")

    def data_column(config):
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
        assert cli.main(["experiments", "--config", str(tmp_path / "c.yaml"), "--archive", str(tmp_path)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0].split()[:5] == ["experiment", "jobs", "archived", "CPU-h", "data"]
        assert out[4].startswith("data: present = every raw file is in") and "downloadable = " in out[4]
        cells = [line.split() for line in out[1:4]]
        return {c[0]: " ".join(c[4:6]) if c[4] == "missing" else c[4] for c in cells}

    assert data_column(config) == {"datasets": "mirror", "qs_robust": "none",
                                   "casimir_voc": "missing alexnet,voc2007"}
    _fake_files(raw, "wine")
    assert data_column(config)["datasets"] == "present"
    config["data"]["mirror"] = None                                      # online: downloaded when needed
    assert data_column(config) == {"datasets": "present", "qs_robust": "none", "casimir_voc": "downloadable"}


def test_the_top_level_help_names_rerender_verify_status_and_the_plan():
    text = cli.build_parser().format_help()
    lines = {line.split("  ")[1].strip(): line.strip() for line in text.splitlines()
             if line.startswith("  structpred ")}
    assert "structpred report rerender" in lines and "runs/" in lines["structpred report rerender"]
    assert lines["structpred runs status"].endswith("which archived experiments today's code still reproduces")
    assert "structpred runs verify" in lines and "structpred run --plan" in lines
    assert text.index("structpred run --plan") < text.index("structpred run --cores 2")
