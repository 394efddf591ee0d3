"""One module per paper table: splits, model selection, metrics -> tidy per-split CSV rows."""
