# Casimir's VOC localisation inputs: the devkit folder (the VOC 2007 tarballs extracted, or the
# synthetic VOC-format folder), then per class the candidate boxes and their AlexNet conv4
# features (data/candidates/<experiment>/<class>.npz), on a GPU when one is visible (device:
# auto); `gpus` in the experiment's config block is what each feature job asks the cluster for.


localrules:
    voc_devkit,


rule voc_devkit:
    input:
        unpack(devkit_inputs),
    output:
        touch("data/voc/{devkit}/.complete"),
    params:
        synthetic=config["data"].get("voc_synthetic", {}),
    log:
        "logs/voc/{devkit}.log",
    wildcard_constraints:
        devkit="voc2007|synthetic",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        ENV
    script:
        "../scripts/voc_devkit.py"


rule box_features:
    input:
        unpack(feature_inputs),
    output:
        "data/candidates/{experiment}/{dataset}.npz",
    params:
        settings=lambda wc: get(wc.experiment).candidate_settings(config, wc.dataset),
    log:
        "logs/candidates/{experiment}/{dataset}.log",
    threads: lambda wc: config[wc.experiment].get("feature_threads", 1)
    resources:
        mem_mb=8000,
        runtime=600,
        gpu=lambda wc: config[wc.experiment].get("gpus", 0),
    conda:
        ENV
    script:
        "../scripts/box_features.py"
