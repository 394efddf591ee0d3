from pathlib import Path

from structpred.vision.voc_localization import build_candidate_file
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    import torch

    torch.set_num_threads(snakemake.threads)  # noqa: F821
    s = snakemake.params.settings  # noqa: F821
    devkit = Path(snakemake.input.devkit).parent / "VOC2007"  # noqa: F821
    weights = None
    if s["weights"] == "alexnet":
        weights = Path(snakemake.input.weights).parent / "alexnet-owt-7be5be79.pth"  # noqa: F821
    build_candidate_file(devkit, s["class"], Path(snakemake.output[0]), weights=weights, device=s["device"],  # noqa: F821
                         cache_dir=Path("data/candidates/proposals"), max_boxes=s["max_boxes"],
                         train_fraction=s["train_fraction"], seed=s["seed"], batch_size=s["batch_size"])
