"""Beyond the papers: every method of the four papers on every task, one matrix (issue 59)."""
