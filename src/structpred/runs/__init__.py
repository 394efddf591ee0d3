"""The run machinery above the papers: the run archive (``archive``, the ``runs/`` folder), the
numerics fingerprints of the code paths a job runs (``numerics``), which archived runs today's
code still computes (``staleness``, ``staleness_cli``), reruns of the stale ones (``rerun``), the
makespan plan (``makespan``) and the ``structpred runs`` command (``cli``)."""
