"""scikit-learn estimators over streamherd's learners: ``OnlineClassifier`` and ``OnlineRegressor``
(one class each, the learner chosen by ``algo``, so one GridSearchCV compares learners), thin
named subclasses per family (``AROWClassifier``, ``NHERDClassifier``, ...), and ``load_model``.

They are the command line's learners, tasks and model files driven from memory: X (dense, or
scipy CSR/CSC/COO) becomes Chunks of slots by one numba kernel (features/matrix.py: column j is
slot j + 1, the bias appended, as ``streamherd train`` reads svmlight index j + 1), which the
learner kernels learn from in order (each row predicted, then learned from). So with ``max_iter=1,
shuffle=False`` a model fitted on ``load_svmlight(f)`` is the model ``streamherd train f``
writes, and ``save_model``/``load_model`` exchange models with ``streamherd predict`` and
``train -i``.

Hyperparameters (C, r, eta, a, b, max_support, epsilon, and any a registered learner declares)
are the registry's (``learners/__init__.py``; the parameters are generated from it,
``parameters.py``): None means the learner's default; a learner uses those it takes and ignores
the others (so a grid over ``algo`` and ``C`` runs AROW with its own r); a value out of range is
a ValueError with the command line's one-line message.

``bits`` None: the fewest bits at which every column and the bias have a slot of their own
(features/matrix.fitting_bits); give ``bits`` to match a CLI model's (``-b``, 18 by default): with
fewer slots than columns, columns share slots as hashed features do.
"""
import numpy as np
from scipy.sparse import csr_array, csr_matrix
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils import assert_all_finite
# private, but with no public equivalent: pinned below scikit-learn 2 and tested
# (tests/test_sklearn.py)
from sklearn.utils.validation import _check_sample_weight  # noqa: PLC2701
from sklearn.utils.validation import check_is_fitted, validate_data

from streamherd import calibration as calibrations, learners, tasks
from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.options import MAX_BITS
from streamherd.features.space import FeatureSpace
from streamherd.features.matrix import MatrixRows, fitting_bits
from streamherd.labels import BinaryLabels, ClassLabels, label_text
from streamherd.model import ModelFlags, OnlineModel, UpdateFailed
from streamherd.parameters import EstimatorInit
from streamherd.tasks.base import Scored

__all__ = ["OnlineClassifier", "OnlineRegressor", "PerceptronClassifier", "PAClassifier",
           "NHERDClassifier", "AROWClassifier", "NAROWClassifier", "CWClassifier",
           "SCWClassifier", "SOPClassifier", "PARegressor", "NHERDRegressor", "AROWRegressor",
           "load_model", "InvalidParameter"]

# the parameters of every estimator after algo and the hyperparameters (parameters.py)
# the command line's: one pass, in order (``streamherd train`` with no flags)
REGRESSOR_SETTINGS = dict(max_iter=1, shuffle=False, random_state=None, bits=None, normalize=None,
                          fit_intercept=True)
CLASSIFIER_SETTINGS = dict(multiclass="joint", calibration="isotonic", **REGRESSOR_SETTINGS)

_SPARSE = ("csr", "csc", "coo")
# X of these exact types (no subclass) is not a dataframe, has no feature names and passes
# validate_data unchanged when it is float64, 2-D and not empty: see _OnlineEstimator._plain
_PLAIN_TYPES = (csr_matrix, csr_array, np.ndarray)


class InvalidParameter(StreamherdError, ValueError):
    """A parameter out of range: the command line's one-line message, as the ValueError
    scikit-learn expects."""

    @classmethod
    def of(cls, error):
        """The StreamherdError ``error`` as an InvalidParameter."""
        return cls(str(error))


class _OnlineEstimator(BaseEstimator):
    """What the classifier and the regressor share: the parameters' checks, the passes over X,
    the scores, the model's arrays as coef_/intercept_/sigma_, pickling and the model files.

    State (after fit): _model (the OnlineModel: feature space, task, learner, calibration),
    _rows (the buffers of features/matrix.MatrixRows, not pickled), examples_ (rows learned
    from)."""

    # ------------------------------------------------------------ parameters

    def _algo(self, kind="binary"):
        """The canonical algo name, checked (InvalidParameter); None: the default learner of
        the task ``kind`` (learners.DEFAULTS)."""
        if self.algo is None:
            return learners.DEFAULTS[kind].algo
        try:
            name = learners.canonical_name(self.algo)
        except StreamherdError as e:
            raise InvalidParameter.of(e) from None
        parameters = type(self).__init__
        if parameters.families and not parameters.takes(learners.spec(name)):
            family = [n for n, s in learners.REGISTRY.items() if parameters.takes(s)]
            raise InvalidParameter(f"{type(self).__name__} takes algo {', '.join(family)}; got "
                                   f"{self.algo!r} (OnlineClassifier/OnlineRegressor take any)")
        return name

    def _options(self, algo, kind):
        """The hyperparameters ``algo`` takes for the task ``kind``, each set one checked
        against the registry's range, the others at their defaults."""
        variant = learners.spec(algo)
        given = {h.name: getattr(self, h.name, None) for h in variant.accepted(kind)}
        try:
            return variant.options(given, kind)
        except StreamherdError as e:
            raise InvalidParameter.of(e) from None

    def _check_common(self):
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) \
                or self.max_iter < 1:
            raise InvalidParameter(f"max_iter must be a whole number >= 1 (passes over X), got "
                                   f"{self.max_iter!r}")
        if self.bits is not None and (isinstance(self.bits, bool) or not isinstance(
                self.bits, (int, np.integer)) or not 1 <= self.bits <= MAX_BITS):
            raise InvalidParameter(f"bits must be None or a whole number from 1 to {MAX_BITS} "
                                   f"(2^bits weight slots), got {self.bits!r}")

    def _bits(self, n_features):
        return int(fitting_bits(n_features, self.fit_intercept) if self.bits is None
                   else self.bits)

    def _new_space(self, n_features):
        return FeatureSpace(self._bits(n_features), bool(self.fit_intercept),
                            normalization.L2 if self.normalize else normalization.NONE)

    def _start(self, X, task, calibration="none"):
        """A fresh model of ``task`` over X's columns, learning the ``calibration`` method's
        map (none while it fails: partial_fit then starts anew). ``algo`` None: the command
        line's default (OnlineModel.new with no --algo: the task's learner, its hyperparameter
        chosen by a bank, which ``_pass`` settles on its choice after the first pass)."""
        self._model = None
        self._check_common()
        try:
            if self.algo is None:
                self._model = OnlineModel.new(ModelFlags(
                    options=self._given_hyperparameters(), bits=self._bits(X.shape[1]),
                    bias=bool(self.fit_intercept), normalize=self.normalize,
                    calibration=calibration)).with_task(task)
            else:
                algo = self._algo()
                self._model = OnlineModel(algo, self._options(algo, task.kind),
                                          self._new_space(X.shape[1]), task,
                                          calibration_method=calibration)
        except StreamherdError as e:   # a full matrix that does not fit, mira's family
            raise InvalidParameter.of(e) from None
        self._rows = MatrixRows(self._model.space)
        self.examples_ = 0

    def _given_hyperparameters(self):
        """The hyperparameters set (not None), as the command line's options."""
        return {name: value for name in type(self).__init__.hyperparameters()
                if (value := getattr(self, name, None)) is not None}

    # ------------------------------------------------------------ data

    def _validated(self, X, reset=False):
        """X as float64 CSR, checked by validate_data."""
        if not reset and self._plain(X):
            self._assert_finite(X, "X")
            return _as_csr(X)
        return _as_csr(validate_data(self, X, accept_sparse=_SPARSE, dtype=np.float64,
                                     reset=reset))

    def _validated_pair(self, X, y, reset):
        """(X as float64 CSR, y), checked by validate_data (y None: its error)."""
        if not reset and self._plain(X) and type(y) is np.ndarray and y.ndim == 1 \
                and y.dtype.kind in "biuf" and len(y) == X.shape[0]:
            self._assert_finite(X, "X")
            self._assert_finite(y, "y")
            return _as_csr(X), y
        X, y = validate_data(self, X, y, accept_sparse=_SPARSE, dtype=np.float64, reset=reset,
                             y_numeric=isinstance(self, RegressorMixin))
        return _as_csr(X), y

    def _plain(self, X):
        """Whether validate_data(self, X, reset=False) (accept_sparse=_SPARSE, dtype float64)
        would only check that X is finite: X a float64 CSR matrix (or array) or ndarray, 2-D,
        of at least one row, of the fitted model's n_features_in_, and the model fitted without
        feature names (X has none: no warning). validate_data's other work is then a no-op, but
        for its dataframe detection (narwhals), 0.1 ms a call, which a partial_fit of a few
        thousand rows felt; y (a 1-D numeric ndarray of X's rows) likewise only has its
        finiteness checked. test_sklearn.py compares both paths on every kind of input."""
        return (type(X) in _PLAIN_TYPES and X.dtype == np.float64 and X.ndim == 2
                and X.shape[0] > 0 and X.shape[1] == getattr(self, "n_features_in_", -1)
                and not hasattr(self, "feature_names_in_"))

    def _assert_finite(self, array, name):
        """validate_data's finiteness check of X (a sparse X's stored values) or y, with its
        messages."""
        assert_all_finite(array.data if name == "X" and _sparse(array) else array,
                          allow_nan=False, estimator_name=type(self).__name__,
                          input_name=name)

    def _weights(self, sample_weight, X):
        """sample_weight as the rows' importance weights (VW's: they scale the step)."""
        if sample_weight is None:
            return None
        return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)

    def _pass(self, X, targets, weights, order=None, calibrating=False):
        """One online pass over rows ``order`` of X (all, in order, by default); its
        progressive predictions into the task's calibration when ``calibrating`` (a model's
        first pass over its data: the later ones predict rows already learned from)."""
        model = self._model
        model.calibrating = calibrating
        for chunk in self._buffers().chunks(X, order, targets, weights):
            try:
                model.learn_targets(chunk.labels, chunk)
            except UpdateFailed as e:
                raise StreamherdError(
                    f"row {e.line} of X: {e.what}; scale the features (normalize=True, or a "
                    f"scaler) or use a gentler setting (lower C, raise r)") from None
            except StreamherdError as e:   # new class blocks that do not fit (bits)
                raise InvalidParameter.of(e) from None
            self.examples_ += chunk.n_examples
        model.keep_chosen()   # (a bank, algo None: its choice, after its first pass)

    def _buffers(self):
        if getattr(self, "_rows", None) is None:   # after unpickling
            self._rows = MatrixRows(self._model.space)
        return self._rows

    def _per_chunk(self, X, compute):
        """``compute(chunk)`` of every chunk of X's rows, in order, stacked."""
        return np.concatenate([compute(chunk) for chunk in self._buffers().chunks(X)])

    def _raw_scores(self, X):
        """The task's scores of X's rows: margins, or every class block's score."""
        check_is_fitted(self)
        X = self._validated(X)
        return self._per_chunk(X, self._model.scores)

    def _fit_passes(self, X, targets_of, weights):
        """max_iter passes over X, each in a fresh random order when ``shuffle``;
        ``targets_of(order)``: the targets (the classifier assigns new classes their blocks in
        the order they come)."""
        rng = check_random_state(self.random_state)
        for epoch in range(self.max_iter):
            order = rng.permutation(X.shape[0]) if self.shuffle else None
            self._pass(X, targets_of(order), weights, order, calibrating=epoch == 0)
        self.n_iter_ = self.max_iter

    # ------------------------------------------------------------ the model's arrays

    def _slots(self):
        """The slot of each column."""
        return (np.arange(self.n_features_in_, dtype=np.int64) + 1) & self._model.space.mask

    def _by_column(self, array):
        """A per-slot state array as (blocks, n_features_in_) by column, and its bias slot's."""
        space = self._model.space
        blocks = array.reshape(-1, space.dim)
        bias = blocks[:, space.bias_slot] if space.bias else np.zeros(len(blocks))
        return blocks[:, self._slots()], bias

    @property
    def coef_(self):
        check_is_fitted(self)
        return self._shaped(self._by_column(self._model.arrays()["mean"])[0])

    @property
    def intercept_(self):
        check_is_fitted(self)
        return self._shaped_intercept(self._by_column(self._model.arrays()["mean"])[1])

    @property
    def sigma_(self):
        """The Gaussian learners' variances of the weights (the diagonal of Sigma), shaped as
        coef_: this library's distinctive output, how sure the model is of each weight."""
        check_is_fitted(self)
        state = self._model.arrays()
        if "variance" in state:
            variances = state["variance"]
        elif "covariance" in state:
            variances = _block_diagonals(state["covariance"], self._model.space.dim)
        else:
            raise AttributeError(f"sigma_: {self._model.algo} is not a Gaussian learner (nherd, "
                                 f"arow, narow, cw and scw have variances)")
        return self._shaped(self._by_column(variances)[0])

    # ------------------------------------------------------------ pickling

    def __getstate__(self):
        state = dict(super().__getstate__())   # a copy: the estimator keeps its own
        state.pop("_rows", None)   # buffers, made anew (the model pickles its own arrays)
        return state

    # ------------------------------------------------------------ model files

    def save_model(self, path):
        """Write the model as ``streamherd train -f path`` does (model.py's npz, written to a
        temporary file and renamed): ``streamherd predict -i``/``train -i`` take it, reading
        svmlight index j + 1 as column j."""
        from streamherd.model import save_model

        check_is_fitted(self)
        meta = {**self._model.meta(), **self._task_meta(), "examples": int(self.examples_),
                "n_features_in": int(self.n_features_in_)}
        save_model(path, meta, self._model.arrays())

    def _task_meta(self):
        """The task's part of the model file's meta (the classifier checks its class
        names first)."""
        return self._model.task.meta()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _sparse(X):
    return hasattr(X, "tocsr")


def _as_csr(X):
    return X.tocsr() if _sparse(X) else csr_matrix(X)


def _block_diagonals(matrix, dim):
    """The diagonal of each dim x dim block on the diagonal of a full (joint: square) matrix,
    or of each stacked block (one-versus-all: (K dim) x dim), as one vector."""
    if matrix.shape[0] == matrix.shape[1]:
        return np.diagonal(matrix).copy()
    return matrix.reshape(-1, dim, dim).diagonal(axis1=1, axis2=2).ravel()


def class_text(value):
    """A class's name in a model file: a number as the command line prints it, else its str."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return label_text(float(value))
    return str(value)


def has_probabilities(algo):
    """Whether ``algo`` (any spelling; False for an unknown one) gives probabilities of its own
    (the Gaussian learners)."""
    try:
        return hasattr(learners.learner_class(learners.canonical_name(algo)), "probabilities")
    except StreamherdError:
        return False


# ---------------------------------------------------------------- classification

class OnlineClassifier(ClassifierMixin, _OnlineEstimator):
    """A linear classifier learned online by any streamherd learner (``algo``: the registry's
    names, as ``streamherd train --algo``; None, the default: ``streamherd train``'s with no
    flags, the task's learner of learners.DEFAULTS with its hyperparameter chosen by a bank on
    the first pass, ``normalize`` None then the default's; with it no hyperparameter may be
    set).

    Two classes: a binary learner, classes_[1] the positive class (+1; as the command line's
    labels > 0 with 1/0 or +1/-1). More: ``multiclass`` "joint" (one weight block per class,
    blocks in the order the classes first come, as ``streamherd train``), "ova" (one binary
    learner per class) or "mira" (the PA family's joint update on every violated constraint).

    ``calibration``: the map of predict_proba (and of ``streamherd predict --proba`` for a saved
    model), fitted on the progressive predictions (each row's, before it is learned from) of
    fit's first pass or of every partial_fit: "isotonic" (the default, as ``streamherd
    train``), "platt", "probit" (Gaussian learners: the margin over its own spread), or "none"
    (Gaussian learners only: their own P(w.x > 0) under the weights' Gaussian).

    ``max_iter`` passes over X in ``fit`` (1 by default, in order, as ``streamherd train``; each
    in a new random order when ``shuffle``, from ``random_state``); ``partial_fit`` makes one
    pass in order. ``sample_weight`` is each row's
    importance weight (VW's: it scales the step, 0 skips the row). ``normalize``: each row to
    unit L2 norm, the bias kept at 1 (``--normalize``). ``fit_intercept``: VW's constant feature.
    """

    __init__ = EstimatorInit(None, CLASSIFIER_SETTINGS)

    # ------------------------------------------------------------ learning

    def fit(self, X, y, sample_weight=None):
        """``max_iter`` online passes over (X, y) from a fresh model."""
        X, y = self._validated_pair(X, y, reset=True)
        weights = self._weights(sample_weight, X)
        self._begin(X, y)
        self._fit_passes(X, lambda order: self._targets(y, order), weights)
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One online pass over (X, y) in order, continuing the model; ``classes`` (every class
        the stream will hold) is required on the first call, as SGDClassifier's."""
        first = getattr(self, "_model", None) is None
        X, y = self._validated_pair(X, y, reset=first)
        weights = self._weights(sample_weight, X)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit "
                                 "(every class the stream will hold)")
            self._begin(X, y, classes)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"classes {np.unique(classes)!r} are not the classes of the first "
                             f"call to partial_fit, {self.classes_!r}")
        self._pass(X, self._targets(y), weights, calibrating=True)
        self.n_iter_ = 1
        return self

    def _begin(self, X, y, classes=None):
        check_classification_targets(y)
        if self.multiclass not in tasks.MULTICLASS_MODES:
            raise InvalidParameter(f"multiclass must be one of "
                                   f"{', '.join(tasks.MULTICLASS_MODES)}, "
                                   f"got {self.multiclass!r}")
        self.classes_ = np.unique(y if classes is None else classes)
        if classes is not None and not np.isin(y, self.classes_).all():
            raise ValueError(f"y holds labels that are not in classes {self.classes_!r}")
        if len(self.classes_) < 2:
            raise ValueError(f"a classifier needs at least two classes in y; got 1 class "
                             f"({self.classes_[0]!r})")
        if len(self.classes_) == 2:
            task = tasks.BinaryTask(self._binary_labels())
        else:
            task = tasks.MulticlassTask(ClassLabels(), self.multiclass)
            self._block_of_class = np.full(len(self.classes_), -1, np.int64)
            self._block_classes = self.classes_[:0]
        self._start(X, task, self._calibration_method(task.kind))

    def _calibration_method(self, kind):
        """The ``calibration`` parameter, checked for a model of task ``kind``."""
        try:
            algo = self._algo(kind)
            calibrations.check_method(self.calibration, algo, kind, has_probabilities(algo))
        except StreamherdError as e:
            raise InvalidParameter.of(e) from None
        return self.calibration

    def _binary_labels(self):
        """The two classes as a binary model file names them (a value <= 0 and one > 0), or
        unnamed labels when they are not such numbers (save_model then refuses the model)."""
        negative, positive = self.classes_
        if np.issubdtype(self.classes_.dtype, np.number) and negative <= 0 < positive:
            return BinaryLabels(float(negative), float(positive))
        return BinaryLabels()

    @property
    def _binary(self):
        return len(self.classes_) == 2

    def _targets(self, y, order=None):
        """Binary: +1 for classes_[1], else -1; multiclass: each row's class block, a class
        new to the model taking the next block where it first comes in ``order``."""
        if self._binary:
            positive = y == self.classes_[1]
            if not (positive | (y == self.classes_[0])).all():
                self._unknown_labels(y)
            return np.where(positive, 1.0, -1.0)
        positions = np.searchsorted(self.classes_, y)
        if not (self.classes_.take(positions, mode="clip") == y).all():
            self._unknown_labels(y)
        self._add_blocks(positions if order is None else positions[order])
        return self._block_of_class[positions].astype(np.float64)

    def _unknown_labels(self, y):
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        raise ValueError(f"y holds labels {unknown.tolist()!r} that are not in classes "
                         f"{self.classes_.tolist()!r} (the first partial_fit's classes)")

    def _add_blocks(self, positions):
        """Blocks for the classes (positions in classes_) not yet in the model, in order of
        first appearance; the task's ClassLabels follow (its learner grows to them)."""
        new = positions[self._block_of_class[positions] < 0]
        if not len(new):
            return
        distinct, first = np.unique(new, return_index=True)
        for position in distinct[np.argsort(first)].tolist():
            self._block_of_class[position] = len(self._block_classes)
            self._block_classes = np.append(self._block_classes,
                                            self.classes_[position:position + 1])
        self._model.task.labels = ClassLabels([class_text(c)
                                               for c in self._block_classes.tolist()])

    # ------------------------------------------------------------ predicting

    def decision_function(self, X):
        """Binary: each row's margin w.x + b (> 0: classes_[1]); multiclass: every class's
        score, columns in classes_ order (-inf for a class partial_fit has not seen yet)."""
        scores = self._raw_scores(X)
        return scores if self._binary else self._in_class_order(scores, -np.inf)

    def predict(self, X):
        scores = self._raw_scores(X)
        if self._binary:
            return self.classes_[(scores > 0).astype(np.intp)]
        # the block of largest score, the earliest on ties (as streamherd predict)
        return self._block_classes[self._model.task.predictions(scores)]

    def _in_class_order(self, by_block, fill):
        out = np.full((len(by_block), len(self.classes_)), fill)
        seen = self._block_of_class >= 0
        out[:, seen] = by_block[:, self._block_of_class[seen]]
        return out

    def _has_probabilities(self):
        """Every learner with a calibration; without one (calibration="none") the Gaussian
        learners' own probabilities, which mira's joint update has not."""
        if self.calibration != "none":
            return True
        algo = self._model.algo if getattr(self, "_model", None) is not None else self.algo
        return has_probabilities(algo) and self.multiclass != "mira"

    @available_if(_has_probabilities)
    def predict_proba(self, X):
        """Each class's probability, as ``streamherd predict --proba`` prints it for the same
        model: the calibration's map (calibration.py) fitted on the progressive predictions of
        the first pass of fit (of every partial_fit), "isotonic" or "platt" of the margin,
        "probit" Phi(a m / sqrt(x' Sigma x + s^2)) (Gaussian learners), multiclass
        softmax(beta s + b) of the class scores for any of them. calibration="none" (Gaussian
        learners only): binary, P(w.x > 0) = Phi(mu.x / sqrt(x' Sigma x)) under the learner's
        Gaussian over weights, multiclass each class's probability of the top score: the
        weights' uncertainty, not class frequencies (a confident wrong model says 0.99)."""
        check_is_fitted(self)
        X = self._validated(X)
        task, learner = self._model.task, self._model.learner
        if self._binary:
            p = self._per_chunk(X, lambda c: task.probabilities(
                learner, c, task.scores(learner, c)))
            return np.column_stack([1.0 - p, p])
        by_block = self._per_chunk(X, lambda c: task.probabilities(
            learner, Scored(c, task.scores(learner, c), None, None, 0)))
        return self._in_class_order(by_block, 0.0)

    @available_if(_has_probabilities)
    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    # ------------------------------------------------------------ the model's arrays

    def _shaped(self, by_block):
        """(n_classes or 1, n_features) in classes_ order."""
        if self._binary:
            return by_block
        return self._in_class_order(by_block.T, 0.0).T

    def _shaped_intercept(self, by_block):
        return by_block if self._binary else self._in_class_order(by_block[None, :], 0.0)[0]

    def _task_meta(self):
        if self._binary:
            labels = self._model.task.labels
            if labels.positive is None:
                raise StreamherdError(
                    f"a binary model file names its classes by a number <= 0 and one > 0; "
                    f"classes {self.classes_.tolist()} are not: fit with y as -1/+1 or 0/1 to "
                    f"save the model")
            return self._model.task.meta()
        blank = [t for t in self._model.task.labels.texts
                 if not t or any(c.isspace() for c in t)]
        if blank:
            raise StreamherdError(f"class {blank[0]!r}: a model file's class names have no "
                                  f"blanks; rename the class to save the model")
        return self._model.task.meta()


class OnlineRegressor(RegressorMixin, _OnlineEstimator):
    """A linear regressor learned online by a streamherd learner with a squared-loss form
    (``streamherd train --loss squared``: pa, pa1, pa2, nherd, arow); see OnlineClassifier for
    the other parameters."""

    __init__ = EstimatorInit(None, REGRESSOR_SETTINGS, task="regression")

    def fit(self, X, y, sample_weight=None):
        """``max_iter`` online passes over (X, y) from a fresh model."""
        X, y = self._validated_pair(X, y, reset=True)
        weights = self._weights(sample_weight, X)
        self._begin(X)
        y = np.asarray(y, np.float64)
        self._fit_passes(X, lambda order: y, weights)
        return self

    def partial_fit(self, X, y, sample_weight=None):
        """One online pass over (X, y) in order, continuing the model."""
        first = getattr(self, "_model", None) is None
        X, y = self._validated_pair(X, y, reset=first)
        weights = self._weights(sample_weight, X)
        if first:
            self._begin(X)
        self._pass(X, np.asarray(y, np.float64), weights)
        self.n_iter_ = 1
        return self

    def _begin(self, X):
        algo = self._algo("regression")
        if learners.spec(algo).regression is None:
            takers = ", ".join(n for n, s in learners.REGISTRY.items() if s.regression is not None)
            raise InvalidParameter(f"{algo} has no squared-loss form; OnlineRegressor takes "
                                   f"{takers}")
        self._start(X, tasks.RegressionTask())

    def predict(self, X):
        return self._raw_scores(X)

    def _shaped(self, by_block):
        return by_block[0]

    def _shaped_intercept(self, by_block):
        return float(by_block[0])


# ---------------------------------------------------------------- named learners

class PerceptronClassifier(OnlineClassifier):
    """Rosenblatt's perceptron, its averaged and its voted forms (Freund & Schapire)."""

    __init__ = EstimatorInit("perceptron", CLASSIFIER_SETTINGS,
                             families=(".algorithms.perceptron", ".algorithms.voted"))


class PAClassifier(OnlineClassifier):
    """Passive-Aggressive (Crammer et al. 2006): pa, pa1 (C caps the step), pa2 (C softens it)."""

    __init__ = EstimatorInit("pa2", CLASSIFIER_SETTINGS, families=(".algorithms.pa",))


class NHERDClassifier(OnlineClassifier):
    """Normal Herd (Crammer & Lee 2010): nherd-e, nherd-p, nherd-d (diagonal rules), nherd-full."""

    __init__ = EstimatorInit("nherd-p", CLASSIFIER_SETTINGS, families=(".algorithms.nherd",))


class AROWClassifier(OnlineClassifier):
    """AROW (Crammer, Kulesza & Dredze 2009): arow-p, arow-d (diagonal), arow-full."""

    __init__ = EstimatorInit("arow-p", CLASSIFIER_SETTINGS, families=(".algorithms.arow",))


class NAROWClassifier(OnlineClassifier):
    """NAROW (Orabona & Crammer 2010): AROW that skips examples it is sure of (b)."""

    __init__ = EstimatorInit("narow-p", CLASSIFIER_SETTINGS, families=(".algorithms.narow",))


class CWClassifier(OnlineClassifier):
    """Confidence-Weighted learning (Dredze, Crammer & Pereira 2008): cw, cw-full."""

    __init__ = EstimatorInit("cw", CLASSIFIER_SETTINGS, families=(".algorithms.cw",))


class SCWClassifier(OnlineClassifier):
    """Soft Confidence-Weighted learning (Wang, Zhao & Hoi 2012): scw1, scw2 and their -full."""

    __init__ = EstimatorInit("scw1", CLASSIFIER_SETTINGS, families=(".algorithms.scw",))


class SOPClassifier(OnlineClassifier):
    """The second-order perceptron (Cesa-Bianchi, Conconi & Gentile 2005): sop, sop-full."""

    __init__ = EstimatorInit("sop", CLASSIFIER_SETTINGS, families=(".algorithms.sop",))


class PARegressor(OnlineRegressor):
    """Passive-Aggressive regression (epsilon-insensitive): pa, pa1, pa2."""

    __init__ = EstimatorInit("pa2", REGRESSOR_SETTINGS, families=(".algorithms.pa",),
                             task="regression")


class NHERDRegressor(OnlineRegressor):
    """Normal Herd's squared-loss form."""

    __init__ = EstimatorInit("nherd-p", REGRESSOR_SETTINGS, families=(".algorithms.nherd",),
                             task="regression")


class AROWRegressor(OnlineRegressor):
    """AROW's squared-loss form (Vaits & Crammer's recursive least squares with r)."""

    __init__ = EstimatorInit("arow-p", REGRESSOR_SETTINGS, families=(".algorithms.arow",),
                             task="regression")


# ---------------------------------------------------------------- model files

def load_model(path):
    """The fitted estimator of a model file (``streamherd train -f`` or ``save_model``): an
    OnlineClassifier or OnlineRegressor that predicts as ``streamherd predict`` does. Its
    n_features_in_ is the model's own (save_model's), or 2^bits for a command line model:
    read the data with ``load_svmlight(f, bits=bits)`` (or load_vw) for it."""
    from streamherd import model

    meta, arrays = model.load_model(path)
    space = FeatureSpace.from_meta(meta)
    crossed = [k for k in ("quadratic", "cubic", "interactions", "ignore", "keep",
                           "ignore_linear") if meta.get(k)]
    if crossed:
        raise StreamherdError(f"{path} was trained with --{crossed[0]}; the estimators take "
                              f"columns, not namespaces: use streamherd predict for it")
    online = model.OnlineModel.from_meta(meta, arrays)
    task = online.task
    settings = dict(algo=meta["algo"], **meta["hyperparameters"], bits=meta["bits"],
                    normalize=space.normalize != normalization.NONE, fit_intercept=meta["bias"])
    if task.kind == "regression":
        estimator = OnlineRegressor(**settings)
    else:
        estimator = OnlineClassifier(**settings, multiclass=meta.get("multiclass", "joint"),
                                     calibration=_calibration_name(task.calibration))
    estimator._model, estimator._rows = online, None
    estimator.n_features_in_ = int(meta.get("n_features_in", space.dim))
    estimator.examples_ = int(meta.get("examples", 0))
    estimator.n_iter_ = 0
    if task.kind == "binary":
        labels = task.labels
        estimator.classes_ = np.array([-1.0 if labels.negative is None else labels.negative,
                                       1.0 if labels.positive is None else labels.positive])
    elif task.kind == "multiclass":
        _set_classes(estimator, task.labels.texts)
    return estimator


def _calibration_name(calibration):
    """The calibration parameter of a loaded model's: its binary method, "none" without one,
    and for a multiclass model's softmax (which every method but none makes) the default."""
    if calibration is None:
        return "none"
    return calibrations.DEFAULT_METHOD if calibration.method == "softmax" else calibration.method


def _set_classes(estimator, texts):
    """classes_ of a multiclass model's class names (numbers when every name is one), block k
    the class named texts[k]."""
    try:
        blocks = np.array([float(t) for t in texts])
    except ValueError:
        blocks = np.array(texts, dtype=object)
    estimator._block_classes = blocks
    estimator.classes_ = np.unique(blocks)
    estimator._block_of_class = np.full(len(estimator.classes_), -1, np.int64)
    estimator._block_of_class[np.searchsorted(estimator.classes_, blocks)] = np.arange(len(blocks))
