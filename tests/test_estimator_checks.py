"""scikit-learn's estimator checks on M3N, CRF, M4N, AGM, SmoothSSVM, QS and QSCV (multiclass labels, few passes).

Every check applies and passes; the only one scikit-learn itself skips is
``check_array_api_input`` (it runs only with ``SCIPY_ARRAY_API=1``; our solvers are numpy /
numba code and do not take array-API inputs).
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from structpred.estimators import AGM, CRF, M3N, M4N, QS, QSCV, SmoothSSVM

#: checks that cannot apply to these estimators, with the reason (none today)
EXPECTED_FAILED: dict[str, str] = {}


@parametrize_with_checks([M3N(n_passes=3), CRF(n_passes=3), M4N(n_passes=3, n_iter_oracle=3),
                          AGM(n_passes=2, n_iter_oracle=2), SmoothSSVM(n_passes=3),
                          SmoothSSVM(solver="sgd", n_passes=3, eta0=0.5, t0=10.0),
                          QS(), QS(kernel="linear", n_components=5, random_state=0), QSCV(n_folds=2)],
                         expected_failed_checks=lambda estimator: EXPECTED_FAILED)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
