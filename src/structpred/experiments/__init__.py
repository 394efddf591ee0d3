"""One module per paper table, each registering its :class:`~structpred.experiments.registry.Experiment`
(jobs, settings, run, model selection, report hooks); the workflow and the report iterate over
:data:`~structpred.experiments.registry.EXPERIMENTS`."""

from structpred.experiments import agm, agm_srl, agm_srl_decoding, casimir, casimir_tuned, casimir_voc, casimir_voc_nonconvex, datasets_audit, m4n, m4n_protocol, qs_movielens, qs_movielens_normalisation, qs_robust, qs_robust_metrics, qs_usps  # noqa: F401  (registration)
