# Raw data: fetch and verify each source (cache -> mirror -> download), then parse each view.
# Both run where snakemake runs, never as cluster jobs: compute nodes often have no network,
# and a one-second job should not wait in a queue.


localrules:
    fetch_source,
    prepare_view,


rule fetch_source:
    output:
        stamp=f"{RAW_DIR}/{{source}}/.verified",
    params:
        mirror=config["data"].get("mirror"),
    log:
        "logs/fetch/{source}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=60,
    conda:
        ENV
    script:
        "../scripts/fetch_source.py"


rule prepare_view:
    input:
        stamp=lambda wc: f"{RAW_DIR}/{VIEWS[wc.view].source}/.verified",
    output:
        f"{PROCESSED_DIR}/{{view}}.npz",
    log:
        "logs/prepare/{view}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        ENV
    script:
        "../scripts/prepare_view.py"
