#!/usr/bin/env bash
# Run by snakemake inside a rule environment it has just created (envs/structpred.yaml), from the
# workflow's working directory (the project's root): install this package into it, editable, so the
# rules run the checkout's code; its dependencies are the environment's.
set -euo pipefail
python -m pip install --no-deps -e .
