"""The project's structure: no import cycles, the experiment list and the rule environment each
written once and checked against their source of truth, atomic writes with the usual file mode."""

from __future__ import annotations

import ast
import os
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "structpred").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the structpred modules it imports anywhere in its text (function bodies too)."""
    mods = _modules()
    graph = {m: set() for m in mods}
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    if target in mods and target != name:
                        graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_inside_structpred():
    graph = import_graph()
    assert len(graph) > 100 and "structpred.papers.registry" in graph["structpred.papers.m4n.tables"]
    assert cycles(graph) == []


def test_report_cells_and_figure_saving_do_not_reach_the_experiments():
    """Experiments' report pages build on these: they must not import the registry back."""
    graph = import_graph()
    for module in ("structpred.tables.cells", "structpred.tables.figures", "structpred.tables.significance"):
        assert not {m for m in graph[module] if m.startswith("structpred.papers")}, module


def test_output_spaces_export_oracles_and_no_solver_pass():
    """``outputs/`` imports nothing from ``solvers/``, and no function under it is a solver pass
    (named ``*_pass``, or taking a pass's sample ``order`` and ``lam``)."""
    graph = import_graph()
    reach = {m: sorted(t for t in graph[m] if t.startswith("structpred.solvers"))
             for m in graph if m.startswith("structpred.outputs")}
    assert not any(reach.values()), {m: t for m, t in reach.items() if t}
    passes = []
    for path in (SRC / "structpred" / "outputs").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and (node.name.endswith("_pass")
                                                      or {"order", "lam"} <= {a.arg for a in node.args.args}):
                passes.append(f"{path.name}:{node.name}")
    assert passes == []
    # the step rules' compiled passes are in solvers/, each once
    text = (SRC / "structpred" / "solvers" / "_compiled_passes.py").read_text()
    for name in ("bcfw_pass", "gbcfw_pass", "sdca_pass", "sgd_pass", "svrg_pass"):
        assert text.count(f"def {name}(") == 1, name


def test_the_schema_lists_exactly_the_registered_experiments():
    from structpred.papers.registry import EXPERIMENTS, get

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    enum = schema["properties"]["experiments"]["items"]["enum"]
    get("m4n_table1")  # the registry is filled by importing the experiments package
    assert sorted(enum) == sorted(EXPERIMENTS)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert set(config["experiments"]) == set(EXPERIMENTS)


CONDA_NAMES = {"matplotlib": "matplotlib-base", "torch": "pytorch", "opencv-contrib-python-headless": "opencv"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower()


def test_the_rule_environment_holds_every_dependency_and_installs_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["vision"]}
    needed -= {"snakemake"}  # the running snakemake's modules serve the rules' scripts
    env = yaml.safe_load((ROOT / "envs" / "structpred.yaml").read_text())
    have = {_name(d) for d in env["dependencies"] if isinstance(d, str)}
    assert {CONDA_NAMES.get(n, n) for n in needed} <= have, sorted({CONDA_NAMES.get(n, n) for n in needed} - have)
    assert "python" in have and "pip" in have
    deploy = ROOT / "envs" / "structpred.post-deploy.sh"  # snakemake runs it beside the env file's name
    assert os.access(deploy, os.X_OK) and "pip install --no-deps -e ." in deploy.read_text()


def test_atomic_writes_get_the_usual_mode_and_leave_the_umask_alone(tmp_path):
    from structpred.io import write_text

    old = os.umask(0o027)
    try:
        write_text(tmp_path / "a.txt", "x")
        assert os.umask(0o027) == 0o027  # unchanged by the write
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
