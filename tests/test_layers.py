"""The project's structure: imports point down the layers of :mod:`structpred._layers` and form
no cycle, no import sits inside a function (but those of heavy optional dependencies), the
experiment list and the rule environment each written once and checked against their source of
truth, atomic writes with the usual file mode."""

from __future__ import annotations

import ast
import os
import re
import tomllib
from pathlib import Path

import yaml

from structpred._layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _modules(src: Path = SRC, package: str = "structpred") -> dict[str, Path]:
    out = {}
    for path in (src / package).rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_graph(src: Path = SRC, package: str = "structpred") -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports anywhere in its text (function bodies too)."""
    mods = _modules(src, package)
    graph = {m: set() for m in mods}
    for name, path in mods.items():
        package_parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package_parts[:len(package_parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    if target in mods and target != name:
                        graph[name].add(target)
    return graph


def layer_of(module: str, layers=LAYERS) -> int | None:
    """The index of ``module``'s layer: that of the longest name covering it (a name covers itself
    and the modules under it, but the root package covers only itself); ``None``: no layer."""
    root = layers[0][1][0].split(".")[0]
    covering = [(len(name), i) for i, (_, names) in enumerate(layers) for name in names
                if module == name or (name != root and module.startswith(f"{name}."))]
    return max(covering)[1] if covering else None


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[tuple[str, str]]:
    """Every ``(module, imported)`` where the imported module lies in a higher layer."""
    return sorted((m, t) for m, targets in graph.items() for t in targets
                  if layer_of(t, layers) > layer_of(m, layers))


def function_imports(src: Path = SRC, package: str = "structpred") -> list[tuple[str, int, str]]:
    """``(module, line, imported module)`` of every import inside a function (or a lambda)."""
    found = []
    for name, path in _modules(src, package).items():
        def visit(node, inside):
            for child in ast.iter_child_nodes(node):
                if inside and isinstance(child, ast.Import):
                    found.extend((name, child.lineno, a.name) for a in child.names)
                elif inside and isinstance(child, ast.ImportFrom):
                    found.append((name, child.lineno, "." * child.level + (child.module or "")))
                visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return sorted(found)


#: the heavy optional dependencies a function may import when it needs them (the vision extra,
#: the test extra's reference solvers, plotting)
LAZY_IMPORTS = {"torch", "cv2", "matplotlib", "cvxpy", "ot"}
#: modules that import inside functions by design: the numba target's import hook must not
#: import numba when structpred is imported (it sets the target before numba loads)
LAZY_MODULES = {"structpred._numba_target"}


def imports_inside_functions(src: Path = SRC, package: str = "structpred") -> list[tuple[str, int, str]]:
    """The function-level imports that are not allowed: all but :data:`LAZY_IMPORTS` and those of
    :data:`LAZY_MODULES`."""
    return [(m, line, imported) for m, line, imported in function_imports(src, package)
            if imported.split(".")[0] not in LAZY_IMPORTS and m not in LAZY_MODULES]


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


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_layer_check_catches_an_upward_import_inside_a_function(tmp_path):
    src = _package(tmp_path, {"__init__.py": "", "low/__init__.py": "", "high.py": "from pkg.low import a\n",
                              "low/a.py": "def f():\n    from pkg import high\n    return high\n",
                              "low/b.py": "from . import a\n"})
    layers = (("base", ("pkg",)), ("low", ("pkg.low",)), ("high", ("pkg.high",)))
    graph = import_graph(src, "pkg")
    assert [layer_of(m, layers) for m in ("pkg", "pkg.low.a", "pkg.high")] == [0, 1, 2]
    assert upward_imports(graph, layers) == [("pkg.low.a", "pkg.high")]
    assert upward_imports(graph, (("base", ("pkg",)), ("all", ("pkg.low", "pkg.high")))) == []


def test_every_module_has_a_layer_and_no_import_points_up():
    graph = import_graph()
    assert [m for m in graph if layer_of(m) is None] == []
    assert upward_imports(graph) == []


def test_the_function_import_check_catches_an_import_inside_a_function(tmp_path):
    src = _package(tmp_path, {"__init__.py": "import json\n",
                              "a.py": "import os\n\ndef f():\n    import torch\n    from . import b\n"
                                      "    return [lambda: __import__('x')]\n\nclass C:\n    def g(self):\n"
                                      "        import matplotlib.pyplot as plt\n        import yaml\n",
                              "b.py": ""})
    assert function_imports(src, "pkg") == [("pkg.a", 4, "torch"), ("pkg.a", 5, "."), ("pkg.a", 10, "matplotlib.pyplot"),
                                            ("pkg.a", 11, "yaml")]
    assert imports_inside_functions(src, "pkg") == [("pkg.a", 5, "."), ("pkg.a", 11, "yaml")]


def test_imports_sit_at_module_level():
    """No module imports inside a function, but the heavy optional dependencies
    (:data:`LAZY_IMPORTS`) and the numba target's hook: a cycle is broken by moving code to the
    right module, never by importing late."""
    assert imports_inside_functions() == []


def test_output_spaces_export_oracles_and_no_solver_pass():
    """``outputs/`` imports nothing from ``solvers/``, and no function under it is a solver pass
    (named ``*_pass``, or taking a pass's sample ``order`` and ``lam``)."""
    assert layer_of("structpred.outputs") < layer_of("structpred.solvers")  # and no import points up
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
