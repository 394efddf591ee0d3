"""Sphinx configuration of the structpred documentation.

Build (from the repository root; the README names the same command)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning into an error, and ``nitpicky`` makes every unresolved cross-reference
a warning, so a broken link fails the build.  The gallery's examples (``docs/examples``) run on
every build (sphinx-gallery skips an example whose source and output it already has); their pages
go to ``docs/auto_examples`` and the HTML to ``docs/_build``, both git-ignored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

# The examples run in this process: a non-interactive backend.  Their numba kernels compile on
# the first build (numba's disk cache, beside the package, serves later builds and the tests).
os.environ.setdefault("MPLBACKEND", "Agg")

import structpred  # noqa: E402  (the installed package the reference documents)

project = "structpred"
author = "the structpred developers"
copyright = "2026, the structpred developers"
release = version = getattr(structpred, "__version__", "0.1.0")

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "capability_table",
    "api_checks",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "papers", "examples",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.pickle", "auto_examples/*.codeobj.json"]
templates_path: list[str] = []

# --- cross-references: every one must resolve --------------------------------------------------
nitpicky = True
# Names of other projects that the docstrings mention (no intersphinx: the build reads nothing
# from the network).  Names of structpred itself are resolved by docs/_ext/api_checks.py, and an
# unknown one fails the build.
nitpick_ignore_regex = [
    (r"py:.*", r"(np|numpy|pd|pandas|scipy|sklearn|numba|torch|abc)(\..*)?"),
    (r"py:.*", r"(ValueError|TypeError|int|float|bool|str|dict|list|tuple|None|object|callable)"),
]

# --- autodoc and numpydoc ----------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # the docstrings say the types; annotations would need intersphinx
# scikit-learn's metadata-routing methods (set_fit_request, ...) are scikit-learn's to document
autodoc_default_options = {"members": True, "exclude-members": "set_fit_request,set_score_request,"
                           "set_predict_request,set_transform_request,set_output,get_metadata_routing,"
                           "get_params,set_params"}
numpydoc_show_class_members = False  # autodoc lists the members; numpydoc only formats sections
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- MyST (docs/DESIGN.md and other Markdown pages) -------------------------------------------
myst_heading_anchors = 3

# --- sphinx-gallery ------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",     # every plot_*.py runs on every build
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "min_reported_time": 0,
    "show_memory": False,
    "write_computation_times": True,
}

# --- HTML ------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "structpred"
html_static_path = ["_static"]
html_css_files = ["structpred.css"]
pygments_style = "sphinx"
# code blocks without a language (the plain diagrams of DESIGN.md) stay plain text; doctest
# blocks (>>>) are highlighted as Python sessions all the same
highlight_language = "text"
