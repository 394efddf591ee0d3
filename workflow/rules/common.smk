# Helpers shared by the other .smk files: the jobs of the configured experiments, from the registry.
import os
import sys

from structpred.data.parsers import VIEWS
from structpred.data.voc import VOC_CLASSES
from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.workflow import check_mirror

RAW_DIR = config["data"]["raw_dir"]
PROCESSED_DIR = config["data"]["processed_dir"]
REPORT_DIR = config["report"]["dir"]
ENV = "../../envs/structpred.yaml"


check_mirror(config["data"].get("mirror"))


def skip_missing_data():
    """With ``data.skip_missing``, drop the configured experiments whose raw files cannot be had
    (:mod:`structpred.data.preflight`); the report and the ledger then say 'cannot check'."""
    from structpred.data.preflight import unavailable

    if not config["data"].get("skip_missing"):
        return
    kept = []
    for experiment in config["experiments"]:
        missing = unavailable(sorted(get(experiment).sources(config)), RAW_DIR, config["data"].get("mirror"))
        if missing:
            print(f"skip_missing: {experiment} left out, its data is missing "
                  f"({', '.join(sorted({m['source'] for m in missing}))})", file=sys.stderr)
        else:
            kept.append(experiment)
    config["experiments"] = kept


def report_only_existing_tables():
    """``snakemake --report`` renders what exists and runs nothing: keep the experiments whose table
    is there (committed, re-rendered or computed); one without (its data missing, its runs not
    finished) is left out, named on stderr, instead of failing the report."""
    if not any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv[1:]):
        return
    absent = [e for e in config["experiments"] if not os.path.isfile(f"{REPORT_DIR}/tables/{e}.csv")
              or get(e).partial_by_dataset]   # a partial table (the matrix's) would need every job's inputs
    if absent:
        print(f"--report: left out, no table yet: {', '.join(absent)}", file=sys.stderr)
    config["experiments"] = [e for e in config["experiments"] if e not in absent]


def plan_on_dry_run():
    """A dry run skips ``onstart``, where the data check and the CPU-hours estimate sit: print the
    same plan as ``structpred run --plan`` (on stderr) while the workflow is read."""
    from structpred.run_cli import is_dry_run, plan

    if is_dry_run(sys.argv[1:]):
        print("\n".join(plan(config, os.getcwd())), file=sys.stderr)


skip_missing_data()
report_only_existing_tables()
plan_on_dry_run()


onstart:
    # before any job: every raw file the planned run must fetch, and cannot, in one message
    from structpred.data.preflight import message, unavailable

    from structpred.runs.archive import plan_estimate

    planned = list(workflow.dag.needrun_jobs())
    needed = sorted({job.wildcards.source for job in planned if job.rule.name == "fetch_source"})
    missing = unavailable(needed, RAW_DIR, config["data"].get("mirror"))
    if missing:
        sys.exit(message(missing))
    # what the run will cost, from the archive's recorded seconds (mean per job of each experiment)
    counts = {}
    for job in planned:
        if job.rule.name == "run_job":
            counts[job.wildcards.experiment] = counts.get(job.wildcards.experiment, 0) + 1
    if counts:
        print("\n".join(plan_estimate(counts)), file=sys.stderr)


def experiment_jobs(experiment):
    """(dataset, method, split) triples of one experiment; its data views must exist."""
    exp = get(experiment)
    jobs = exp.jobs(config)
    unknown = sorted({exp.view(config, d) for d, _, _ in jobs} - set(VIEWS) - {None})
    if unknown:
        raise ConfigError(f"{experiment}: unknown dataset(s) {unknown}; known: {sorted(VIEWS)}")
    return jobs


def result_files(experiment):
    return [f"results/{experiment}/{d}/{m}/split{s}.csv" for d, m, s in experiment_jobs(experiment)]


def history_files(experiment):
    return [f"results/{experiment}/{d}/{m}/split{s}.history.csv" for d, m, s in experiment_jobs(experiment)]


def curve_figures(experiment):
    """The curve figures of an experiment (its registry hook; none for most)."""
    return [f"{REPORT_DIR}/figures/{experiment}/{p}.png" for p in get(experiment).curve_panels(config)]


def curve_tables():
    return [f"{REPORT_DIR}/tables/{e}_curves.csv" for e in config["experiments"] if get(e).curve_panels(config)]


def view_stamp(view):
    return f"{RAW_DIR}/{VIEWS[view].source}/.verified"


def input_paths(wc, kinds):
    """The files of the input kinds an experiment's job needs (registry.INPUT_KINDS)."""
    view = get(wc.experiment).view(config, wc.dataset)
    paths = {
        "features": lambda: f"data/features/{wc.experiment}/{wc.dataset}/split{wc.get('split', 0)}.npz",
        "view": lambda: f"{PROCESSED_DIR}/{view}.npz",
        "stamp": lambda: view_stamp(view),
        "selection": lambda: f"results/{wc.experiment}/{wc.dataset}/{wc.method}/selection.csv",
        "candidates": lambda: f"data/candidates/{get(wc.experiment).voc_class(config, wc.dataset)}.npz",
        "runs": lambda: [f"results/{get(wc.experiment).runs_source(config, wc.dataset, wc.method)}/{d}/{m}/"
                         f"split{wc.split if k is None else k}.csv"
                         for d, m, k in get(wc.experiment).run_inputs(config, wc.dataset, wc.method)],
    }
    return {k: paths[k]() for k in kinds}


def fit_inputs(wc):
    """The inputs of one lambda's fit (fit_lambda): its job's, but for the lambda fits."""
    return input_paths(wc, get(wc.experiment).job_needs(config, wc.dataset, wc.method))


def job_inputs(wc):
    """A training job's inputs; with lambda jobs, also each lambda's fit (``lambda_fits``)."""
    n = get(wc.experiment).lambda_jobs(config, wc.dataset, wc.method)
    fits = [f"results/{wc.experiment}/{wc.dataset}/{wc.method}/split{wc.split}.fits/lambda{i}.json" for i in range(n)]
    return {**fit_inputs(wc), **({"lambda_fits": fits} if fits else {})}


def selection_inputs(wc):
    needs = get(wc.experiment).job_needs(config, wc.dataset, wc.method)
    return input_paths(wc, [k for k in needs if k in ("view", "stamp")])


def job_settings(wc):
    return get(wc.experiment).settings(config, wc.dataset, wc.method)


def job_threads(wildcards):
    """Lambdas a training job fits in parallel (its experiment's ``threads``, default 1; 1 where its
    lambdas are jobs of their own: it then only reads their fits)."""
    exp = get(wildcards.experiment)
    if exp.lambda_jobs(config, wildcards.dataset, wildcards.method):
        return 1
    return exp.threads(config, wildcards.dataset, wildcards.method)


def job_views():
    """Every data view the configured experiments read (for the report's provenance)."""
    views = {get(e).view(config, d) for e in config["experiments"] for d, _, _ in experiment_jobs(e)}
    return sorted(views - {None})


def devkit_inputs(wc):
    """The VOC tarballs' stamp for the real devkit; nothing for the synthetic one."""
    return {"stamp": f"{RAW_DIR}/voc2007/.verified"} if wc.devkit == "voc2007" else {}


def candidate_settings(voc_class):
    """What defines a VOC class's candidate file: config data.voc, the class and the seed."""
    return {**config["data"]["voc"], "class": voc_class, "seed": config["seed"]}


def feature_inputs(wc):
    """A class's candidate file needs its devkit folder and, for AlexNet's weights, their stamp."""
    s = config["data"]["voc"]
    out = {"devkit": f"data/voc/{s['devkit']}/.complete"}
    if s["weights"] == "alexnet":
        out["weights"] = f"{RAW_DIR}/alexnet/.verified"
    return out
