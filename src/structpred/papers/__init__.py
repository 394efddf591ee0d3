"""The papers' tables: one package per paper (``m4n``, ``casimir``, ``qs``, ``agm``; ``datasets``
audits the data they read), each holding one module per table, which registers its
:class:`~structpred.papers.registry.Experiment` (jobs, settings, run, model selection, report
hooks), and the report page modules of its tables.  Importing this package imports every module
under it, so a new table is one module in its paper's package (plus its config block, schema and
references); the workflow and the report iterate over
:data:`~structpred.papers.registry.EXPERIMENTS`."""

import importlib
import pkgutil

for _module in pkgutil.walk_packages(__path__, f"{__name__}."):
    importlib.import_module(_module.name)
