"""The experiment registry: one :class:`Experiment` per paper table, which the workflow and the
report iterate over.

An experiment declares its jobs (``(dataset, method, split)`` triples from the config), the
settings one job depends on, the inputs a job needs (as kinds the workflow resolves to its
files: ``features`` = a split's feature file, ``view`` = a parsed dataset, ``stamp`` = the
verified raw files of that view, ``selection`` = the result of its model-selection stage,
``candidates`` = a class's candidate boxes and features, Casimir VOC), its
run function (tidy rows and a history out), an optional model-selection stage run once per
``(dataset, method)`` before the splits, and its report hooks (title, HTML table, figure,
test table, and optionally curve figures drawn from the histories).  A new paper table is one module that registers its experiment, plus its
config block, schema and references.
"""

from __future__ import annotations

import pandas as pd

from structpred.data.parsers import VIEWS
from structpred.errors import ConfigError

#: input kinds a job may need (the workflow maps each to a file; ``runs``: the result files of
#: other jobs of the same experiment, :meth:`Experiment.run_inputs`)
INPUT_KINDS = ("features", "view", "stamp", "selection", "candidates", "runs")


class Experiment:
    """Base class of an experiment; subclasses override what differs."""

    name = ""
    title = ""
    #: input kinds of a training job (:data:`INPUT_KINDS`)
    needs: tuple = ("features",)
    #: tasks whose losses the report prints in percent
    percent_tasks: frozenset = frozenset()
    #: the columns that identify a row of the tidy table (and of the references); an
    #: experiment may add its own result columns to it (Casimir: figure, c, variant)
    key: tuple = ("task", "dataset", "method", "metric")
    #: the name of the table's column counting the aggregated runs (splits, seeds)
    count: str = "n_splits"
    #: the experiment whose paper numbers (config/references.yaml) this table sets beside its
    #: own (``None``: its own name)
    references_of: str | None = None
    #: the columns the paper's numbers are matched on (``None``: :attr:`key`); a sensitivity table
    #: whose key adds a column of its own (e.g. ``variant``) sets the paper's number of
    #: ``references_of``'s row beside each of its variants
    reference_key: tuple | None = None
    #: the experiment whose jobs' result files the input kind ``runs`` names (``None``: this one;
    #: e.g. a table recomputed from another table's archived selections)
    runs_of: str | None = None
    #: a variant's base experiment: its settings are its own config block over the base's
    #: (:func:`block_over`; e.g. ``agm_srl_full`` over ``agm_srl``)
    variant_of: str | None = None
    #: the experiment whose table and tests the report page of this one reads too (``page``)
    beside: str | None = None
    #: whether :meth:`run` takes ``checkpoint``, a folder where it keeps each finished fit of a
    #: job so that a stopped job resumes (:mod:`structpred.tables.fit_cache`)
    resumable = False
    #: whether a job's threads run inside each fit (numba's parallel loops: AGM's dense AdaGrad step)
    #: rather than its lambdas side by side; the job then records them (``fit_threads``), and
    #: :mod:`structpred.runs.makespan` takes its fits' wall seconds as those on that many cores
    threaded_fits = False
    #: whether :meth:`figure` is also given the paired-test table (``tests=``, the table's
    #: ``<name>_tests.csv``), e.g. to mark the methods not significantly worse than the best
    figure_reads_tests = False
    #: whether ``report rerender`` builds the table from the datasets whose jobs are all archived
    #: while others' are still missing (the matrix, a column at a time; :meth:`render` says which
    #: are pending); otherwise the table waits for every job
    partial_by_dataset = False
    #: whether one model selection serves every split (AGM: lambda chosen on the first split's
    #: training set), so the grid-edge check counts it once
    single_selection = False
    #: a metric the table also reports under selection on that metric itself (the M4N authors'
    #: table rule: per row the lambda of lowest mean over runs), as ``<metric>_optimistic`` rows
    #: beside the validation selection (:func:`structpred.report.aggregate.optimistic_rows`)
    optimistic_metric: str | None = None

    def block(self, config: dict) -> dict:
        """The experiment's settings: its config block, over ``variant_of``'s when it is a variant."""
        return block_over(config, self.variant_of, self.name) if self.variant_of else config[self.name]

    def jobs(self, config: dict) -> list[tuple[str, str, int]]:
        raise NotImplementedError

    def view(self, config: dict, dataset: str) -> str | None:
        """The parsed data view a job on ``dataset`` reads (``None``: the experiment draws its
        own synthetic data and needs no input)."""
        return dataset

    def settings(self, config: dict, dataset: str, method: str) -> dict:
        """Everything one job depends on (and nothing else: adding a dataset to the config
        must not invalidate finished jobs)."""
        raise NotImplementedError

    def numeric_paths(self, config: dict, dataset: str, method: str) -> tuple[str, ...]:
        """The numerics paths (:data:`structpred.runs.numerics.PATHS`) a job on
        ``(dataset, method)`` runs: their fingerprints, recorded with the job, say whether today's
        code still computes its result (``structpred runs status``). Default: none declared (the
        job's freshness is then unknown)."""
        return ()

    def grids(self, config: dict, dataset: str, method: str) -> dict[str, list]:
        """The search grid of each hyper-parameter a job on ``(dataset, method)`` selects, where
        its result rows do not list them (default: none; lambda's grid is then read from the rows:
        :mod:`structpred.report.selection`)."""
        return {}

    def selects_once(self, config: dict, dataset: str) -> bool:
        """Whether one model selection serves every split of ``dataset`` (default:
        :attr:`single_selection`; the matrix says it per task)."""
        return self.single_selection

    @staticmethod
    def settings_grids(settings: dict, method: str) -> dict[str, list]:
        """The grids a job with ``settings`` searches, where its rows do not list them (the matrix
        asks the tables it delegates cells to; default: none, lambda's grid read from the rows)."""
        return {}

    def sources(self, config: dict) -> set[str]:
        """The raw-data sources the experiment's jobs read (default: those of their views)."""
        views = {self.view(config, d) for d, _, _ in self.jobs(config)} - {None}
        return {VIEWS[v].source for v in views if v in VIEWS}

    def run_inputs(self, config: dict, dataset: str, method: str) -> list[tuple[str, str, int]]:
        """``(dataset, method, split)`` of the jobs of this experiment (of :meth:`runs_source`'s)
        whose result rows a job on ``(dataset, method)`` reads (input kind ``runs``; Casimir's tuned
        figures read their tuning grid's runs); split ``None``: the reading job's own split. Default:
        none."""
        return []

    def job_needs(self, config: dict, dataset: str, method: str) -> tuple:
        """The input kinds of the job on ``(dataset, method)`` (default: :attr:`needs`, every job's;
        a table that reads some cells from other tables' runs and computes others says which)."""
        return self.needs

    def runs_source(self, config: dict, dataset: str, method: str) -> str:
        """The experiment whose result files the ``runs`` inputs of the job on ``(dataset, method)``
        name (default: :attr:`runs_of`, else this one)."""
        return self.runs_of or self.name

    def threads(self, config: dict, dataset: str, method: str) -> int:
        """Cores the job on ``(dataset, method)`` asks for (the lambdas it fits at once, or each fit's
        threads where :attr:`threaded_fits`)."""
        return 1

    def lambda_jobs(self, config: dict, dataset: str, method: str) -> int:
        """How many lambda fits of the job on ``(dataset, method)`` run as Snakemake jobs of their own
        (rule ``fit_lambda``, one core each, before the job reads them all from its fit cache:
        :func:`structpred.tables.fit_cache.only_lambda`): its grid's size on the datasets the block's
        ``lambda_jobs`` lists, for a :attr:`resumable` experiment whose settings name ``lambdas``;
        else 0 (the job fits its grid itself, ``threads`` at a time)."""
        if not self.resumable or dataset not in (self.block(config).get("lambda_jobs") or []):
            return 0
        return len(self.settings(config, dataset, method)["lambdas"])

    def feature_settings(self, config: dict, dataset: str) -> dict:
        """What defines a split's feature file (experiments that need ``features``)."""
        raise NotImplementedError

    def run(self, inputs: dict, settings: dict, *, seed: int, dataset: str, method: str, split: int,
            threads: int = 1) -> tuple[list[dict], pd.DataFrame | None]:
        """One job: ``(tidy rows, history of the chosen model or None)``; a ``resumable``
        experiment's also takes ``checkpoint=<folder>``."""
        raise NotImplementedError

    def time_job(self, inputs: dict, settings: dict, *, seed: int, dataset: str, method: str,
                 passes: int = 2) -> float:
        """CPU seconds of one job on ``(dataset, method)``, extrapolated from a short timed fit on
        split 0's ``inputs`` (``structpred runs estimate``; default: the table has no such hook)."""
        raise ConfigError(f"{self.name} has no timing hook: `structpred runs estimate` prices its jobs "
                          "from the archive only")

    def select(self, inputs: dict, settings: dict, *, seed: int, dataset: str, method: str) -> list[dict]:
        """The model-selection stage, run once per (dataset, method) before the splits by experiments
        whose jobs need a ``selection`` input (:attr:`needs`)."""
        raise NotImplementedError

    def render(self, table: pd.DataFrame, tests: pd.DataFrame, config: dict) -> str:
        """The HTML table of the report (``config``: the run's, where a method's settings are read)."""
        raise NotImplementedError

    def page(self, table: pd.DataFrame, tests: pd.DataFrame, others: dict, config: dict) -> str:
        """The report's HTML for this experiment; ``others`` maps the report's other experiments
        to their ``(table, tests)`` (default: :meth:`render`)."""
        return self.render(table, tests, config)

    def costs(self, jobs_of, config: dict) -> str:
        """HTML of the recorded CPU of this experiment's archived jobs, for the report beside the
        table; ``jobs_of(experiment)``: an experiment's jobs with their cost
        (:func:`structpred.report.archive_costs.job_costs`). Default: none (the matrix's: per cell)."""
        return ""

    def figure(self, table: pd.DataFrame, path, config: dict) -> None:
        raise NotImplementedError

    def tests(self, selected: pd.DataFrame, config: dict) -> pd.DataFrame:
        """The test table from the selected rows of every split."""
        raise NotImplementedError

    # --- per-epoch curves (experiments whose figures are training curves, e.g. Casimir) ---
    def curve_panels(self, config: dict) -> list[str]:
        """Names of the curve figures drawn from the jobs' histories (none by default)."""
        return []

    def curve_table(self, histories: pd.DataFrame) -> pd.DataFrame:
        """The per-epoch curve table (mean and spread over runs) from every job's history."""
        raise NotImplementedError

    def curve_figure(self, panel: str, curves: pd.DataFrame, path) -> None:
        """Draw the curve figure ``panel`` from the curve table."""
        raise NotImplementedError


EXPERIMENTS: dict[str, Experiment] = {}


def block_over(config: dict, base: str, name: str) -> dict:
    """The settings of a variant experiment: its config block ``name`` over ``base``'s, every key
    it does not set ``base``'s (its departures are its own, printed beside its own table)."""
    return {**config[base], **{k: v for k, v in config[name].items() if k != "departures"}}


def register(cls: type[Experiment]) -> type[Experiment]:
    """Class decorator: add an instance of ``cls`` to :data:`EXPERIMENTS` (each module
    registers its own at import)."""
    unknown = set(cls.needs) - set(INPUT_KINDS)
    if unknown:
        raise ConfigError(f"{cls.name}: unknown input kinds {sorted(unknown)}; known: {INPUT_KINDS}")
    EXPERIMENTS[cls.name] = cls()
    return cls


def get(name: str) -> Experiment:
    """The registered experiment ``name`` (one clear error for an unknown name). Every experiment
    is registered by then: importing this module runs ``structpred/papers/__init__.py``
    first, which imports every module of every paper's package."""
    if name not in EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    return EXPERIMENTS[name]
