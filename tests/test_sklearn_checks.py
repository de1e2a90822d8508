"""scikit-learn's own estimator checks over every registry learner, as classifier and, where it
has a squared-loss form, as regressor; only the failures issue 21 allows are declared."""
import pytest

from streamherd import learners
from streamherd.sklearn import OnlineClassifier, OnlineRegressor, _is_gaussian

estimator_checks = pytest.importorskip("sklearn.utils.estimator_checks")

# An online update of weight s is one step scaled by s, not s repetitions of the step (nor is
# a 0 weight the same as leaving the row out of a shuffled epoch's order): sklearn declares the
# same for its own Perceptron and SGDClassifier.
_WEIGHTS_ARE_NOT_REPETITIONS = "an online update weighted by s is not s repetitions of it"
# predict_proba is today's --proba, Phi(mu.x / sqrt(x' Sigma x)): it divides the margin by its
# row's own standard deviation, so it need not rank rows as the margin does (calibration, the
# probabilities issue, will replace it).
_PROBA_IS_NOT_THE_MARGIN = ("the Gaussian learners' probability divides the margin by the "
                            "row's own standard deviation: not ranked as decision_function")
# and multiclass, each class's probability of having the largest score under N(mu, Sigma): with
# correlated scores (a full covariance) a class of smaller mean score can be likelier the
# largest (narow-full on check_classifiers_train's blobs: 4 of 300 rows, e.g. probabilities
# 0.430/0.428 for mean scores 0.217/0.231), so argmax predict_proba need not be predict, the
# argmax of the scores (streamherd predict's class). Calibration will replace it too.
_PROBA_ARGMAX_IS_NOT_THE_SCORES = ("P(class has the largest score) under correlated Gaussian "
                                   "scores is not ranked as the mean scores")


def _estimators():
    found = []
    for name, variant in learners.REGISTRY.items():
        found.append(OnlineClassifier(name))
        if variant.regression is not None:
            found.append(OnlineRegressor(name))
    return found


def _expected_failures(estimator):
    failures = {"check_sample_weight_equivalence_on_dense_data": _WEIGHTS_ARE_NOT_REPETITIONS,
                "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS_ARE_NOT_REPETITIONS}
    if isinstance(estimator, OnlineClassifier) and _is_gaussian(estimator.algo):
        failures["check_decision_proba_consistency"] = _PROBA_IS_NOT_THE_MARGIN
    if isinstance(estimator, OnlineClassifier) and estimator.algo == "narow-full":
        for variant in ("", "(readonly_memmap=True)", "(readonly_memmap=True,X_dtype=float32)"):
            failures[f"check_classifiers_train{variant}"] = _PROBA_ARGMAX_IS_NOT_THE_SCORES
    return failures


@estimator_checks.parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
