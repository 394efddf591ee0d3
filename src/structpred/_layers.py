"""The layers of structpred, lowest first: a module imports only from its own layer or a lower
one, at module level or inside a function (``tests/test_layers.py`` builds the import graph and
fails on any import that points up).  A name covers that module and every module under it (the
root package ``structpred``, which every import runs, covers only itself); the longest name that
covers a module decides its layer.  ``docs/DESIGN.md`` draws the same order."""

#: (layer, the modules and packages it holds), lowest first
LAYERS = (
    ("base", ("structpred", "structpred._fitting", "structpred._layers", "structpred._numba_target", "structpred.errors",
              "structpred.io", "structpred.metrics")),
    ("data", ("structpred.data",)),
    ("rule scripts' helpers", ("structpred.workflow",)),
    ("features", ("structpred.features",)),
    ("vision", ("structpred.vision",)),
    ("outputs", ("structpred.outputs",)),
    ("surrogates", ("structpred.surrogates",)),
    ("solvers", ("structpred.solvers",)),
    ("estimators", ("structpred.estimators",)),
    ("tables", ("structpred.tables",)),
    ("papers", ("structpred.papers",)),
    ("report", ("structpred.report",)),
    ("runs", ("structpred.runs",)),
    ("commands", ("structpred.cli", "structpred.run_cli")),
)
