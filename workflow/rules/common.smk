# Helpers shared by the rule files: which jobs exist for the configured experiments.
from structpred.data.parsers import VIEWS
from structpred.errors import ConfigError
from structpred.experiments.agm import DATASET as AGM_DATASET
from structpred.experiments.m4n import job_settings, table2_method, task_of

RAW_DIR = config["data"]["raw_dir"]
PROCESSED_DIR = config["data"]["processed_dir"]
REPORT_DIR = config["report"]["dir"]
ENV = "../../envs/structpred.yaml"


def check_views(names, where):
    unknown = sorted(set(names) - set(VIEWS))
    if unknown:
        raise ConfigError(f"{where}: unknown dataset(s) {unknown}; known: {sorted(VIEWS)}")
    return list(names)


def experiment_jobs(experiment):
    """(dataset, method, split) triples of one experiment, from the config."""
    if experiment == "datasets":
        return [(v, "audit", 0) for v in check_views(config["datasets"]["views"], "datasets.views")]
    settings = config[experiment]
    if experiment == "agm_emotion":
        check_views([settings["view"]], "agm_emotion.view")
        return [(AGM_DATASET, m, s) for m in settings["methods"] for s in range(settings["n_splits"])]
    if experiment == "m4n_table1":
        triples = [(d, m, t.get("n_splits", settings["n_splits"])) for t in settings["tasks"].values()
                   for d in t["datasets"] for m in t.get("methods", settings["methods"])]
    elif experiment == "m4n_table2":
        triples = [(d, table2_method(k, w), settings["n_splits"]) for d in settings["datasets"]
                   for k in settings["oracle_iterations"] for w in settings["warm_start"]]
    else:
        raise ConfigError(f"unknown experiment {experiment!r}")
    check_views([d for d, _, _ in triples], f"{experiment}.datasets")
    return [(d, m, s) for d, m, n in triples for s in range(n)]


def job_view(experiment, dataset):
    """The data view a job reads (the AGM table names its dataset ``ck``, the view is ``emotion``)."""
    return config[experiment]["view"] if experiment == "agm_emotion" else dataset


def train_threads(wildcards):
    """Lambdas a training job fits in parallel: its task's ``threads`` (default 1)."""
    if wildcards.experiment != "m4n_table1":
        return 1
    return task_of(config, wildcards.experiment, wildcards.dataset)[1].get("threads", 1)


def result_files(experiment):
    return [f"results/{experiment}/{d}/{m}/split{s}.csv" for d, m, s in experiment_jobs(experiment)]


def feature_settings(experiment, dataset):
    """Everything that defines a split's feature file (part of the file name's content)."""
    s = config[experiment]
    return {"fractions": s["split_fractions"], "n_components": s["nystrom"]["n_components"],
            "whiten": s["nystrom"]["whiten"],
            "subsample": s.get("subsample", {}).get(dataset), "seed": config["seed"]}


AGM_METHODS = ("AGM", "CRF", "SSVM", "M4N")


def agm_settings():
    """Settings of the AGM emotion jobs (everything a CV or split job depends on)."""
    s = config["agm_emotion"]
    keys = ("losses", "n_train", "cv_folds", "lambdas", "n_passes", "adagrad_step", "oracle_iterations")
    return {k: s[k] for k in keys}
