# structpred: rebuild every table and figure of the four papers from raw data.
#   snakemake --cores N                                  (paper settings, config/config.yaml)
#   snakemake --cores 2 --configfile config/smoke.yaml   (minutes-long CI run)
# The rules call the installed library (pip install -e .); each experiment's jobs, settings
# and report hooks come from structpred.papers.registry.
from snakemake.utils import min_version

from structpred.workflow import validate_config

min_version("8.0")


configfile: "config/config.yaml"


validate_config(config, "workflow/schemas/config.schema.yaml")   # one short error, not the schema


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/vision.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"


# The per-split results are never committed, so a fresh clone recomputes every job (and then
# every table) instead of taking the committed reports/ as up to date.
rule all:
    input:
        rules.html_report.output,
        expand(rules.aggregate.output.table, experiment=config["experiments"]),
        [f for experiment in config["experiments"] for f in result_files(experiment)],
    default_target: True
