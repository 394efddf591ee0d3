# Aggregation over splits, figures, and the HTML report linking every table and figure: seconds
# each, run where snakemake runs (not queued as cluster jobs).
from structpred.report.html import site_pages


localrules:
    aggregate,
    claims,
    figures,
    curve_table,
    curve_figure,
    html_report,


wildcard_constraints:
    experiment="|".join(config["experiments"]),


rule aggregate:
    input:
        lambda wc: result_files(wc.experiment),
    output:
        table=report(f"{REPORT_DIR}/tables/{{experiment}}.csv",
                     caption="../report/table.rst", category="Tables"),
        tests=f"{REPORT_DIR}/tables/{{experiment}}_tests.csv",
        selection=f"{REPORT_DIR}/tables/{{experiment}}_selection.csv",
    params:
        references=config["report"]["references"],
        config=config,
    log:
        "logs/aggregate/{experiment}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/aggregate.py"


rule figures:
    input:
        rules.aggregate.output.table,
        rules.aggregate.output.tests,   # read by the experiments whose figure marks significance
    output:
        report(f"{REPORT_DIR}/figures/{{experiment}}.png",
               caption="../report/figure.rst", category="Figures"),
    params:
        config=config,
    log:
        "logs/figures/{experiment}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/figures.py"


rule curve_table:
    input:
        lambda wc: history_files(wc.experiment),
    output:
        report(f"{REPORT_DIR}/tables/{{experiment}}_curves.csv",
               caption="../report/table.rst", category="Tables"),
    log:
        "logs/curves/{experiment}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/curve_table.py"


rule curve_figure:
    input:
        rules.curve_table.output,
    output:
        report(f"{REPORT_DIR}/figures/{{experiment}}/{{panel}}.png",
               caption="../report/figure.rst", category="Figures"),
    log:
        "logs/curves/{experiment}_{panel}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/curve_figure.py"


rule claims:
    input:
        checks=config["report"]["claims"],
        tables=expand(rules.aggregate.output, experiment=config["experiments"]),
        curves=lambda wc: curve_tables(),
    output:
        report(f"{REPORT_DIR}/tables/claims.csv", caption="../report/claims.rst", category="Tables"),
    log:
        "logs/report/claims.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/claims.py"


rule html_report:
    input:
        tables=expand(f"{REPORT_DIR}/tables/{{experiment}}.csv", experiment=config["experiments"]),
        tests=expand(f"{REPORT_DIR}/tables/{{experiment}}_tests.csv", experiment=config["experiments"]),
        figures=expand(f"{REPORT_DIR}/figures/{{experiment}}.png", experiment=config["experiments"]),
        curves=lambda wc: [f for e in config["experiments"] for f in curve_figures(e)] + curve_tables(),
        results=lambda wc: [f for e in config["experiments"] for f in result_files(e)],
        stamps=lambda wc: sorted({view_stamp(v) for v in job_views()}),
        claims=rules.claims.output,
        checks=config["report"]["claims"],   # the headlines the index opens with
    output:
        # index.html first (its headlines, counts, contents, provenance), then one page per paper
        # and the data audit's (structpred.report.html.site_pages)
        [f"{REPORT_DIR}/{page}" for page in site_pages(config["experiments"])],
    params:
        config=config,
        references=config["report"]["references"],
    log:
        "logs/report/index.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    script:
        "../scripts/html_report.py"
