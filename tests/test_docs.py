"""The documentation site builds with warnings as errors, runs every gallery example, and the
user guide's doctests pass.

The build (``python -m sphinx -W --keep-going -b html docs docs/_build/html``, as the README says)
runs on a copy of ``docs/`` in a temporary folder, so the working tree gets no build output.  It
is skipped, with the reason, where the documentation's dependencies (the ``docs`` extra, part of
``test``) are not installed; the doctests need only the library.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUILD = "python -m sphinx -W --keep-going -b html docs docs/_build/html"
#: import names of the ``docs`` extra (pyproject.toml)
DOCS_MODULES = ("sphinx", "numpydoc", "sphinx_gallery", "myst_parser", "furo")
EXAMPLES = sorted(p.stem for p in (DOCS / "examples").glob("plot_*.py"))
GUIDE = sorted((DOCS / "guide").glob("*.rst"))


def _missing_docs_modules() -> list[str]:
    return [m for m in DOCS_MODULES if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built from a copy of docs/: ``(source copy, html folder)``."""
    missing = _missing_docs_modules()
    if missing:
        pytest.skip(f"documentation dependencies not installed ({', '.join(missing)}): pip install -e '.[docs]'")
    tmp = tmp_path_factory.mktemp("docs")
    src = tmp / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "auto_examples", "sg_execution_times.rst"))
    html = tmp / "html"
    env = dict(os.environ, MPLBACKEND="Agg", STRUCTPRED_ROOT=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(src), str(html)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    return src, html


@pytest.mark.slow
def test_the_site_builds_without_warnings_and_every_example_draws_its_figure(site):
    src, html = site
    assert len(EXAMPLES) >= 8
    for name in EXAMPLES:
        assert (src / "auto_examples" / "images" / f"sphx_glr_{name}_001.png").is_file(), f"{name} drew no figure"
        assert (html / "auto_examples" / f"{name}.html").is_file()
    for page in ("index", "guide/index", "api/index", "DESIGN", "building"):
        assert (html / f"{page}.html").is_file(), page


@pytest.mark.slow
def test_the_capability_table_is_generated_from_the_library(site):
    """Every exported space class has a row and every capability a column (the directive reads
    structpred.outputs at build time)."""
    from structpred import outputs
    from structpred.outputs.base import CAPABILITIES

    _, html = site
    page = (html / "api" / "outputs.html").read_text(encoding="utf-8")
    table = page[page.index('<table class="capability-table'):]
    table = " ".join(re.sub(r"<[^>]+>", " ", table[:table.index("</table>")]).split())
    table = table.replace(" (", "(").replace("( ", "(").replace(" )", ")")
    for name in CAPABILITIES:
        assert name in table, name
    spaces = [n for n in outputs.__all__ if isinstance(getattr(outputs, n), type)
              and issubclass(getattr(outputs, n), outputs.LossSpace)
              and not getattr(getattr(outputs, n), "__abstractmethods__", None)]
    for name in spaces:
        assert f"{name}(" in table or f"{name}." in table, name


@pytest.mark.parametrize("page", GUIDE, ids=[p.stem for p in GUIDE])
def test_the_user_guide_doctests_pass(page):
    result = doctest.testfile(str(page), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_guide_has_doctests_and_the_readme_names_the_build_command():
    attempted = sum(len(t.examples) for p in GUIDE
                    for t in [doctest.DocTestParser().get_doctest(p.read_text(encoding="utf-8"), {}, p.stem, str(p), 0)])
    assert attempted >= 30
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert BUILD in readme
    assert "/docs/_build/" in (ROOT / ".gitignore").read_text(encoding="utf-8")
