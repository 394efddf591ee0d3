"""``structpred run``: config files checked in one line before snakemake starts; its arguments
passed on verbatim and in order."""

from pathlib import Path

import pytest

from structpred import cli, run_cli
from structpred.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_config_files_in_every_spelling():
    args = ["--cores", "2", "--configfile", "a.yaml", "b.yaml", "-n", "--configfiles=c.yaml", "target.csv"]
    assert run_cli.config_files(args) == [Path("a.yaml"), Path("b.yaml"), Path("c.yaml")]


def test_missing_unparsable_and_non_mapping_files(tmp_path):
    with pytest.raises(ConfigError, match=r"^config file .*nope.yaml does not exist$"):
        run_cli.check(["--configfile", str(tmp_path / "nope.yaml")], ROOT)
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    with pytest.raises(ConfigError, match=r"is not valid YAML \(line 2, column 1\)"):
        run_cli.check(["--configfile", str(bad)], ROOT)
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must hold a mapping of settings, not list"):
        run_cli.check([f"--configfile={bad}"], ROOT)


def test_schema_error_and_no_snakefile(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: {mirrror: x}\n")
    with pytest.raises(ConfigError, match=r"^config error at data: .*'mirrror' was unexpected"):
        run_cli.check(["--configfile", str(bad)], ROOT)
    with pytest.raises(ConfigError, match="no Snakefile in"):
        run_cli.check([], tmp_path)


def test_override_merged_key_by_key():
    config = run_cli.check(["--configfile", str(ROOT / "config" / "smoke.yaml")], ROOT)
    assert config["data"]["raw_dir"]  # kept from config/config.yaml where smoke.yaml is silent
    assert run_cli.merged({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}, "d": 4}) == {"a": {"b": 1, "c": 3}, "d": 4}


def test_main_passes_arguments_on_verbatim(monkeypatch, capsys):
    calls = []
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(run_cli.os, "execvp", lambda prog, argv: calls.append(argv))
    args = ["-n", "--configfile", "config/smoke.yaml", "--cores", "2", "--help-not-ours"]
    assert cli.main(["run", *args]) == 0
    assert calls == [["snakemake", *args]]
    assert cli.main(["run", "--configfile", "config/absent.yaml"]) == 2
    assert capsys.readouterr().err.strip() == "structpred: error: config file " \
        f"{ROOT / 'config' / 'absent.yaml'} does not exist"
    assert calls == [["snakemake", *args]]  # snakemake never started
