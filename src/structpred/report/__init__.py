"""Tables (CSV, HTML), figures (matplotlib) and the HTML report of the workflow."""
