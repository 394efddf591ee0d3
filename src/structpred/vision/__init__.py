"""Vision pieces of Casimir's localisation experiment: boxes and IoU, candidate proposals,
CNN features of each candidate."""
