# Helpers shared by the rule files: which jobs exist for the configured experiments.
from structpred.data.parsers import VIEWS
from structpred.errors import ConfigError
from structpred.experiments.m4n import job_settings, table2_method

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
    if experiment == "m4n_table1":
        pairs = [(d, m) for t in settings["tasks"].values() for d in t["datasets"]
                 for m in t.get("methods", settings["methods"])]
    elif experiment == "m4n_table2":
        pairs = [(d, table2_method(k, w)) for d in settings["datasets"]
                 for k in settings["oracle_iterations"] for w in settings["warm_start"]]
    else:
        raise ConfigError(f"unknown experiment {experiment!r}")
    check_views([d for d, _ in pairs], f"{experiment}.datasets")
    return [(d, m, s) for d, m in pairs for s in range(settings["n_splits"])]


def result_files(experiment):
    return [f"results/{experiment}/{d}/{m}/split{s}.csv" for d, m, s in experiment_jobs(experiment)]


def feature_settings(experiment, dataset):
    """Everything that defines a split's feature file (part of the file name's content)."""
    s = config[experiment]
    return {"fractions": s["split_fractions"], "n_components": s["nystrom"]["n_components"],
            "whiten": s["nystrom"]["whiten"],
            "subsample": s.get("subsample", {}).get(dataset), "seed": config["seed"]}
