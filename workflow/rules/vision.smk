# Casimir's VOC localisation inputs: the devkit folder (the VOC 2007 tarballs extracted, or the
# synthetic VOC-format folder), then per class the candidate boxes and their AlexNet conv4
# features (data/candidates/<class>.npz, settings in config data.voc), on a GPU when one is
# visible (device: auto); data.voc.gpus is what each feature job asks the cluster for.


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
        "data/candidates/{voc_class}.npz",
    params:
        settings=lambda wc: candidate_settings(wc.voc_class),
    log:
        "logs/candidates/{voc_class}.log",
    wildcard_constraints:
        voc_class="|".join(VOC_CLASSES),
    threads: config["data"]["voc"].get("feature_threads", 1)
    resources:
        mem_mb=8000,
        runtime=600,
        gpu=config["data"]["voc"].get("gpus", 0),
    conda:
        ENV
    script:
        "../scripts/box_features.py"
