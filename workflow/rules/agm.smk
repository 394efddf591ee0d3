# AGM Table 1 (emotion intensity): cross-validation on the first split, then one job per split.


rule agm_cv:
    input:
        f"{PROCESSED_DIR}/{config['agm_emotion']['view']}.npz" if "agm_emotion" in config else [],
    output:
        "results/agm_emotion/{dataset}/{method}/cv.csv",
    wildcard_constraints:
        method="|".join(AGM_METHODS),
    params:
        settings=lambda wc: agm_settings(),
        seed=config["seed"],
    log:
        "logs/agm/{dataset}/{method}/cv.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=240,
    conda:
        ENV
    script:
        "../scripts/agm_cv.py"


rule agm_train:
    input:
        data=f"{PROCESSED_DIR}/{config['agm_emotion']['view']}.npz" if "agm_emotion" in config else [],
        cv="results/agm_emotion/{dataset}/{method}/cv.csv",
    output:
        "results/agm_emotion/{dataset}/{method}/split{split}.csv",
    wildcard_constraints:
        method="|".join(AGM_METHODS),
    params:
        settings=lambda wc: agm_settings(),
        seed=config["seed"],
    log:
        "logs/agm/{dataset}/{method}/split{split}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=120,
    conda:
        ENV
    script:
        "../scripts/agm_train.py"
