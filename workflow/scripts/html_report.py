from structpred.report.html import write_index
from structpred.workflow import rule_script

with rule_script(snakemake) as log:  # noqa: F821 (snakemake injects it)
    # output[0] is index.html; the paper pages and the data audit's are written beside it
    write_index(snakemake.output[0], config=snakemake.params.config,  # noqa: F821
                tables=snakemake.input.tables, tests=snakemake.input.tests,  # noqa: F821
                figures=snakemake.input.figures, stamps=snakemake.input.stamps,  # noqa: F821
                results=snakemake.input.results, curves=snakemake.input.curves,  # noqa: F821
                references=snakemake.params.references, claims=snakemake.input.claims[0])  # noqa: F821
