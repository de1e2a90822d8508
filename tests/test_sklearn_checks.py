"""scikit-learn's own estimator checks over every registry learner, as classifier and, where it
has a squared-loss form, as regressor; only the failures issue 21 allows are declared."""
import pytest

from streamherd import learners
from streamherd.sklearn import OnlineClassifier, OnlineRegressor

estimator_checks = pytest.importorskip("sklearn.utils.estimator_checks")

# An online update of weight s is one step scaled by s, not s repetitions of the step (nor is
# a 0 weight the same as leaving the row out of a shuffled epoch's order): sklearn declares the
# same for its own Perceptron and SGDClassifier.
_WEIGHTS_ARE_NOT_REPETITIONS = "an online update weighted by s is not s repetitions of it"
# predict_proba is the model's calibration (calibration.py), as `streamherd predict --proba`
# prints it; predict is the learner's decision, as `streamherd predict` prints it: margin > 0,
# or the top class score. The calibration's maps do not keep that boundary: Platt's
# sigma(a m + b) and the isotonic fit put P = 0.5 where the progressive predictions' positive
# rate crosses a half, not at m = 0, and the multiclass softmax(beta s + b_z) shifts each
# class by its bias b_z, so on check_classifiers_train's blobs argmax predict_proba differs from
# predict on a few rows (3% for the perceptron).
_CALIBRATED_ARGMAX_IS_NOT_PREDICT = ("the calibration map's P = 0.5 (softmax: its class biases) "
                                     "is not the margin's 0 at which predict decides, as the CLI")
# The isotonic map is strictly increasing in the margin only while its tie break, Platt's
# sigma(a m + b) (calibration.TIE_BREAK), has a slope a > 0; on check_decision_proba_consistency's
# 80 rows the progressive margins of an early model can run against the labels (nherd-p,
# random_state=1: a = -1.01), so beyond the last isotonic step the probability falls as the
# margin grows: 3 of 40 random states for nherd-p, and the suite's unseeded fits hit pa once.
_TIE_BREAK_CAN_DECREASE = ("the isotonic map's Platt tie break can have a negative slope on a "
                           "short stream, which ranks the last step's rows against the margin")


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
    if isinstance(estimator, OnlineClassifier) and estimator.calibration != "none":
        for variant in ("", "(readonly_memmap=True)", "(readonly_memmap=True,X_dtype=float32)"):
            failures[f"check_classifiers_train{variant}"] = _CALIBRATED_ARGMAX_IS_NOT_PREDICT
        failures["check_decision_proba_consistency"] = _TIE_BREAK_CAN_DECREASE
    return failures


@estimator_checks.parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
