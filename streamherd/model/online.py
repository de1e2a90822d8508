"""The model every face holds: a feature space, a task, a learner and its calibration, as one
object.

``train``, ``predict``, the scikit-learn and river estimators and ``dist-train``'s shard task
each hold an OnlineModel and talk to nothing below it. A ``-C auto`` bank stands where the
learner does, so that no face asks which it holds.
"""
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from streamherd import calibration as calibrations
from streamherd import learners, selection, tasks
from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.options import FEATURE_OPTIONS
from streamherd.features.space import DEFAULT_BITS, FeatureSpace
from streamherd.learners.base import UnstableUpdate, prediction_weights
from streamherd.model.container import load_model

# rows learned at a time when the calibration needs what the kernels do not write out (class
# scores, x' Sigma x): each piece is scored first, so its scores are those of the model at most
# PIECE - 1 rows before the row's own prediction
PIECE = 256


class UpdateFailed(StreamherdError):
    """An update made the learner's state non-finite (learners.base.UnstableUpdate): ``line``
    is the line number of its row in the chunk given to ``learn``, ``what`` what went wrong and
    ``gentler`` the hyperparameter changes that make steps smaller ("lower -C"). Each face
    words it its way (file:line, row i of X)."""

    def __init__(self, line, what, gentler):
        super().__init__(f"row {line}: {what}")
        self.line, self.what, self.gentler = line, what, gentler


class Step(NamedTuple):
    """What learning from one chunk did: its rows (without the bad lines its labels made),
    the progressive loss of each (NaN: unlabeled), the updates made, describe(i), the
    (label, prediction) texts of row i, and the progressive predictions (the task's: margins,
    class ids or values)."""

    chunk: object
    loss: np.ndarray
    updates: int
    describe: object
    predictions: np.ndarray


@dataclass(frozen=True)
class ModelFlags:
    """The flags a model is made from: ``algo`` (None: the default; "auto": banks of several
    learners), hyperparameter ``options`` (a value "auto": chosen by a bank over ``grid``), the
    feature space's (``bits``, ``bias``, ``normalize``, ``namespaces``: -q, --ignore, --hash
    ...), the task's ``choice`` (tasks.choose) and ``calibration`` (--calibration's method);
    ``race``: the examples after which a bank's members start to stop (Bank.race; 0: none);
    ``tune``: with no --algo, whether auto chooses the default's hyperparameter (False: its
    default value, for -t, --audit and dist-train, which learn or show one model); ``center``:
    a regression model's constant starts at the mean label of its first chunk (--center).
    None means "not given": a new model takes the default, a continued one keeps its own."""

    algo: "str | None" = None
    options: dict = field(default_factory=dict)
    bits: "int | None" = None
    bias: "bool | None" = None
    normalize: "bool | None" = None
    namespaces: dict = field(default_factory=dict)
    choice: tasks.Choice = tasks.Choice()
    calibration: "str | None" = None
    grid: "str | None" = None
    race: "int | None" = None
    tune: bool = True
    center: "bool | None" = None

    def given_options(self):
        return {k: v for k, v in (self.options or {}).items() if v is not None}

    def given_namespaces(self):
        return {k: v for k, v in (self.namespaces or {}).items() if v}


class OnlineModel:
    """A feature space, a task, its learner (or a bank choosing one) and its calibration.

    ``undecided``: no flag chose the task, so the first chunk's labels do (``settle``);
    ``by_default``: the ModelFlags given when no --algo chose the learner, so the task's default
    does (learners.DEFAULTS), and its --normalize and --center where they are not given.
    ``learning``: False predicts every chunk without updating (train -t). ``calibrating``: the
    progressive predictions feed the calibration (a model's first pass over its data only:
    later passes predict rows already learned from)."""

    def __init__(self, algo, options, space, task, *, calibration_method="none",
                 calibration_meta=None, state=None, learner_meta=None, examples=0,
                 undecided=False, auto=None, race=None, learning=True, by_default=None,
                 center=False):
        self.algo = algo
        self.space = space
        # the space the readers of this model's input parse with: the model's own, unless the
        # labels chose a default that scales rows after reading began (learn scales them then)
        self.read_space = space
        self.task = task
        self.by_default = by_default
        self.center = center     # (when the labels are values: centered_on)
        self.centered_on = None  # the mean label the constant started at
        self.calibration_method = calibration_method
        self.examples = examples     # the examples the model had learned from when made
        self.undecided = undecided
        self.task_from_labels = undecided   # the preamble says so
        self.auto = auto             # -C auto ...: the hyperparameter a bank chooses
        self.race = race             # its members' race (ModelFlags.race)
        self.learning = learning
        self.calibrating = learning
        self.learner = self._new_learner(options, state, learner_meta)
        self._options = options
        self.calibration = self._new_calibration(calibration_meta)

    # ------------------------------------------------------------ making one

    @classmethod
    def new(cls, flags=ModelFlags(), skip_bad=False, learning=True):
        """A fresh model of ``flags`` (ModelFlags), every flag checked; no --algo: the task's
        default (learners.DEFAULTS; the binary one until the labels choose the task)."""
        by_default = flags if flags.algo is None else None
        if by_default:
            flags = default_flags(flags)
        options = flags.given_options()
        if flags.algo == selection.AUTO:   # banks of several learners; one stands in for checks
            auto = selection.search_learners(options, flags.grid, flags.choice.kind,
                                             flags.choice.multiclass)
            algo = auto.stand_in
        else:
            algo = learners.canonical_name(flags.algo)
            auto = selection.search_hyperparameter(algo, options, flags.grid, flags.choice.kind)
        space = FeatureSpace(DEFAULT_BITS if flags.bits is None else flags.bits,
                             True if flags.bias is None else flags.bias,
                             normalization.L2 if flags.normalize else normalization.NONE,
                             **flags.given_namespaces())
        kind = flags.choice.kind
        options = checked_options(algo, {k: v for k, v in options.items() if v != selection.AUTO},
                                  kind)
        method = flags.calibration or ("none" if kind == "regression"
                                       else calibrations.DEFAULT_METHOD)
        calibrations.check_method(method, algo, kind, is_gaussian(algo))
        if auto is not None and method == "probit":
            # the probit map reads every row's x' Sigma x before its update; a bank gives its
            # members' margins only
            raise StreamherdError(f"--calibration probit reads one learner's variances, and "
                                  f"{auto.flag} auto trains a bank of them; use "
                                  f"--calibration isotonic or platt with auto")
        return cls(algo, options, space, flags.choice.new_task(skip_bad),
                   calibration_method=method, undecided=kind is None, auto=auto,
                   race=flags.race, learning=learning, by_default=by_default,
                   center=bool(flags.center))

    @classmethod
    def from_meta(cls, meta, arrays, skip_bad=False, *, options=None, calibration=None,
                  learning=True):
        """The model a file's ``meta`` and ``arrays`` hold, as saved (its calibration too);
        ``options``: hyperparameters that replace its own (checked), ``calibration``: the
        method its calibration continues with (None: its own, or none)."""
        task = tasks.of_model(meta, skip_bad)
        algo = learners.canonical_name(meta["algo"])
        options = checked_options(algo, {**meta["hyperparameters"], **(options or {})},
                                  task.kind)
        saved = meta.get("calibration")
        method = calibration or (saved["method"] if saved else "none")
        if method != "softmax":
            calibrations.check_method(method, algo, task.kind, is_gaussian(algo))
        return cls(algo, options, FeatureSpace.from_meta(meta), task,
                   calibration_method=method, calibration_meta=saved, state=arrays,
                   learner_meta=meta.get("learner", {}), examples=meta.get("examples", 0),
                   learning=learning)

    @classmethod
    def from_file(cls, path, skip_bad=False):
        """The model saved at ``path`` (load_model's checks: any damage is one line)."""
        return cls.from_meta(*load_model(path), skip_bad)

    @classmethod
    def continued(cls, path, flags=ModelFlags(), skip_bad=False, learning=True):
        """-i: the model at ``path``, read whole, with every flag given checked against it (a
        flag that would change what it is, refused in one line); its hyperparameters may be
        given anew, and its calibration statistics continue."""
        if selection.AUTO in flags.given_options().values():
            raise StreamherdError("auto chooses a hyperparameter for a new model; to continue "
                                  f"{path} (-i), drop auto: it keeps its own value")
        meta, state = load_model(path)
        if flags.algo is not None and learners.canonical_name(flags.algo) != meta["algo"]:
            raise StreamherdError(f"{path} was trained with --algo {meta['algo']}, not "
                                  f"{flags.algo}; drop --algo to continue training it")
        if flags.bits is not None and flags.bits != meta["bits"]:
            raise StreamherdError(f"{path} has --bits {meta['bits']}, not {flags.bits}; drop "
                                  f"--bits to continue training it")
        if flags.bias is not None and flags.bias != meta["bias"]:
            raise StreamherdError(f"{path} was trained with the bias "
                                  f"{'on' if meta['bias'] else 'off'}; drop --no-bias to "
                                  f"continue")
        space = FeatureSpace.from_meta(meta)
        saved = space.normalize != normalization.NONE
        if flags.normalize is not None and flags.normalize != saved:
            raise StreamherdError(f"{path} was trained {'with' if saved else 'without'} "
                                  f"--normalize; continue it {'with' if saved else 'without'} "
                                  f"the flag")
        flags.choice.check_continues(meta, path)
        _check_namespaces(path, space, flags.given_namespaces())
        return cls.from_meta(meta, state, skip_bad, options=flags.given_options(),
                             calibration=flags.calibration, learning=learning)

    def with_task(self, task):
        """A fresh model as this one but of ``task`` (dist-train fixes the task before its
        first round: every shard must learn the same one)."""
        model = OnlineModel(self.algo, self._options, self.space, task,
                            calibration_method=self.calibration_method, examples=self.examples,
                            auto=self.auto, race=self.race, learning=self.learning,
                            by_default=self.by_default, center=self.center)
        if self.by_default:   # (before any input is read: its readers take the new space)
            model._take_default(task.kind)
            model.read_space = model.space
            model.learner = model._new_learner(model._options)
            model.calibration = model._new_calibration()
        return model

    # ------------------------------------------------------------ parts

    def _new_learner(self, options, state=None, learner_meta=None):
        """The learner; with auto, a bank of them, once the labels chose the task."""
        if self.auto is not None and not self.undecided:
            bank = selection.new_bank(self.task, self.auto, self.space.dim, options)
            if self.race is not None:
                bank.race_after(self.race)
            return bank
        return self.task.new_learner(self.algo, self.space.dim, options, state, learner_meta)

    def _new_calibration(self, saved=None):
        """The calibration the model learns (None: none); with auto, each member of the bank
        learns its own instead, and the model written takes the chosen member's
        (``calibration_now``)."""
        calibration = calibrations.of_meta({"calibration": saved, "task": self.task.kind},
                                           self.calibration_method)
        if calibration is not None and isinstance(self.learner, selection.Bank):
            self.learner.calibrate_members(
                lambda: calibrations.new(self.calibration_method, self.task.kind))
            calibration = None
        self.task.calibration = calibration   # predict --proba's map
        return calibration

    def keep_chosen(self):
        """A bank's model becomes the ordinary model of the member it chose, the member's
        calibration its own: the model train -f writes (the scikit-learn estimators keep it
        after their first pass, and learn on with it alone)."""
        if not isinstance(self.learner, selection.Bank):
            return
        bank = self.learner
        k = bank.chosen()
        member = bank.learners[k]
        self.algo, self._options, self.auto = bank.members[k].algo, member.options, None
        self.learner = self.task.new_learner(self.algo, self.space.dim, member.options,
                                             {key: np.array(value) for key, value in
                                              member.state().items()}, member.meta())
        self.calibration = self.task.calibration = bank.member_calibration(k)

    def calibration_now(self):
        """The calibration of the model as it is: the chosen member's with auto."""
        if isinstance(self.learner, selection.Bank):
            return self.learner.member_calibration(self.learner.chosen())
        return self.calibration

    @property
    def options(self):
        """The hyperparameters the model learns with (a bank's: its chosen member's)."""
        return self.learner.options

    def describe_learner(self):
        """(the learner's name, its settings) as the preamble says them (a bank's: its members)."""
        default = (f"; the default for {self.task.kind} data" if self.by_default else "") + (
            "; the constant starts at the first block's mean label (--center)"
            if self.centering else "")
        if self.auto is not None:
            return self.learner.preamble_name, self.learner.settings() + default
        return self.algo, ", ".join(f"{k} = {v:g}" for k, v in self.learner.options.items()) \
            + default

    def check_learns_one(self, what):
        """Refuse, in one line, ``what`` (-t, --audit) of a model that trains a bank."""
        if self.auto is not None:
            raise StreamherdError(f"{self.auto.flag} auto trains a bank of "
                                  f"models and keeps one; {what}: drop auto (give a value) or "
                                  f"-t/--audit")

    def bank_size(self):
        """The models a bank trains (--save-bank writes each); None without auto."""
        return None if self.auto is None else len(self.auto.members)

    # ------------------------------------------------------------ the task

    def settle(self, chunk):
        """The task the labels of ``chunk`` choose, when the first chunk chooses it."""
        if self.undecided:
            self._settle(tasks.detect(chunk, self.task.skip_bad), chunk.source)

    def finish(self):
        """The task of a stream that brought no chunk to choose it: binary."""
        if self.undecided:
            self._settle(tasks.BinaryTask(skip_bad=self.task.skip_bad))

    def _settle(self, task, source="the input"):
        """The task the labels chose; the multiclass learner of an undecided stream holds no
        class block yet, so a binary one replaces it (auto: now its bank)."""
        self.undecided = False
        if self.by_default:
            self._take_default(task.kind)
        elif task.kind == "regression":   # a named learner without a squared-loss form
            try:
                checked_options(self.algo, self._options, task.kind)
            except StreamherdError as e:
                raise StreamherdError(f"{source}: the labels are real values, so the task is "
                                      f"regression, and {e}; if they are classes, pass "
                                      f"--multiclass") from None
        if task.kind != self.task.kind or self.auto is not None:
            self.task = task
            self.learner = self._new_learner(self._options)
            self.calibration = self._new_calibration()

    def _take_default(self, kind):
        """The default learner of the task ``kind`` (learners.DEFAULTS), its normalization
        the model's own unless a flag set it."""
        default = learners.DEFAULTS[kind]
        self.algo = default.algo
        self.auto = selection.search_hyperparameter(
            default.algo, {default.hyperparameter: selection.AUTO}, None, kind) \
            if self.by_default.tune else None
        self._options = checked_options(default.algo, {}, kind)
        rule = normalization.L2 if default.normalize else normalization.NONE
        if self.by_default.normalize is None and rule != self.space.normalize:
            self.space = replace(self.space, normalize=rule)
        if self.by_default.center is None:
            self.center = default.center

    # ------------------------------------------------------------ learning

    def learn(self, chunk):
        """One chunk of parsed lines: its Step. A row of negative importance
        (passes.mark_held_out) is predicted, not learned from."""
        self.settle(chunk)
        if self.space is not self.read_space:   # (a default scaling rows: _take_default)
            self.space.transform(chunk)
        chunk, targets = self.task.targets(chunk, learning=self.learning)
        if self.learning:
            updates, predictions = self.learn_targets(targets, chunk)
        else:
            updates, predictions = 0, self.task.predict(self.learner, chunk)
        task = self.task
        return Step(chunk, task.loss(targets, predictions), updates,
                    lambda i: (chunk.label_token(i) or "unknown",
                               task.prediction_text(predictions, i)), predictions)

    def learn_targets(self, targets, rows):
        """One online pass over ``rows`` with the task's ``targets``: (updates, each row's
        prediction before its update); a failed update raises UpdateFailed naming the row."""
        if self.centering and self.centered_on is None:
            self._center(targets, rows)
        try:
            if isinstance(self.learner, selection.Bank):
                return self.learner.learn_chunk(
                    targets, rows, lambda task, learner, calibration:
                    self._learn(task, learner, calibration, targets, rows))
            return self._learn(self.task, self.learner, self.calibration, targets, rows)
        except UnstableUpdate as e:   # e.index: a row of the chunk the learner saw
            raise UpdateFailed(int(rows.line_numbers[e.index]), e.what,
                               _gentler(self.learner.options)) from None

    @property
    def centering(self):
        """Whether --center applies: it is a regression model's."""
        return self.center and self.task.kind == "regression"

    def _center(self, targets, rows):
        """--center: a new regression model's constant starts at the mean label of the first
        chunk with labels (importance-weighted). Every learner's update reads the residual
        y - w.x and x alone, so this is learning the labels less their mean with the constant
        from 0: the steps fit the labels' spread, not an offset the constant would take many
        examples to reach (a diagonal covariance, whose constant's variance every row shrinks,
        slowest of all)."""
        weights = np.where(np.isnan(targets), 0.0, np.maximum(rows.importance, 0.0))
        if self.examples or not self.space.bias or weights.sum() <= 0:
            return
        self.centered_on = float(weights @ np.nan_to_num(targets) / weights.sum())
        banked = isinstance(self.learner, selection.Bank)
        for learner in (self.learner.learners if banked else [self.learner]):
            learner.mean[self.space.bias_slot] += self.centered_on

    def _learn(self, task, learner, calibration, targets, rows):
        """task.learn of ``learner`` over ``rows``, its progressive predictions into
        ``calibration`` while calibrating."""
        if self.calibrating and calibration is not None:
            return learn_calibrating(task, learner, calibration, targets, rows)
        return task.learn(learner, targets, rows)

    def end_pass(self, progress):
        """A pass ended: its holdout loss (the chosen member's, with auto)."""
        self.calibrating = False
        if self.auto is not None:
            return self.learner.end_pass()
        return progress.end_pass()

    # ------------------------------------------------------------ predicting

    def scores(self, rows):
        """The task's score of each row: margins, every class's score, or values."""
        return self.task.scores(self.learner, rows)

    def predict(self, rows):
        """The task's prediction of each row, without learning."""
        return self.task.predict(self.learner, rows)

    def score(self, chunk):
        """predict's per-chunk work (tasks.base.Scored), which depends on no chunk before it:
        the parser threads run it."""
        return self.task.score(self.learner, chunk)

    def lines(self, scored, shown):
        """predict's text of each row of ``scored`` (tasks.LABEL, RAW, PROBA or SCORES)."""
        return self.task.lines(self.learner, scored, shown)

    def audit_weights(self):
        """predict --audit: the weights the predictions read, one row per class block."""
        return prediction_weights(self.arrays()).reshape(-1, self.space.dim)

    def check_output(self, shown, path):
        """Refuse, in one line, an output the model has not (--proba of an uncalibrated one)."""
        self.task.check_output(shown, self.learner, path, self.algo)

    # ------------------------------------------------------------ what a file holds

    def meta(self, examples=0, progressive_loss=None):
        """The model's meta, after ``examples`` labeled examples more than it had."""
        calibration = self.calibration_now()
        return {"algo": self.algo, "hyperparameters": self.learner.options,
                **self.space.to_meta(), **self.task.meta(),
                "examples": self.examples + examples, "progressive_loss": progressive_loss,
                "learner": self.learner.meta(),
                **({"calibration": calibration.to_meta()} if calibration else {}),
                **(self.learner.model_meta() if self.auto is not None else {})}

    def arrays(self):
        """The learner's state arrays, as a model file holds them (the learner's own, but for
        a joint learner that keeps its classes side by side: then a copy in class blocks)."""
        return self.learner.state()

    def summary(self, loss_name, record=None):
        """The summary lines only a bank adds (what it chose, and how the others did)."""
        if self.auto is None:
            return {}
        lines = self.learner.summary(loss_name, record)
        if self.by_default:   # what to pass to train it again without the bank
            chosen = (record or self.learner.model_meta()["auto"])["chosen"]
            extra = (" --normalize" if self.space.normalize != normalization.NONE else "") + (
                " --center" if self.centering else "")
            lines = {"learner chosen": f"--algo {self.learner.name} {self.auto.flag} "
                                       f"{chosen:g}{extra}", **lines}
        return lines

    def member_models(self, meta):
        """--save-bank: (k, meta, arrays) of each member of a bank that did not fail."""
        return self.learner.member_models(meta) if self.auto is not None else ()

    def failed_members(self):
        """The positions of a bank's members that failed."""
        if self.auto is None:
            return []
        return np.flatnonzero(np.asarray(self.learner.failed_at) >= 0).tolist()

    # ------------------------------------------------------------ pickling

    def __getstate__(self):
        """The learner as its arrays and meta (numba's learners do not pickle); rebuilt as a
        model file is."""
        if self.auto is not None:
            raise TypeError("a model training a -C auto bank cannot be pickled; pickle the "
                            "model it chose (OnlineModel.from_meta of its meta and arrays)")
        state = dict(vars(self))
        learner = state.pop("learner")
        state["saved_learner"] = ({k: np.array(v) for k, v in learner.state().items()},
                                  learner.meta(), learner.options)
        return state

    def __setstate__(self, state):
        arrays, learner_meta, options = state.pop("saved_learner")
        vars(self).update(state)
        self._options = options
        self.learner = self._new_learner(options, arrays, learner_meta)


def default_flags(flags):
    """``flags`` without --algo as the default of their task (the binary one while the labels
    have not chosen it) spells them: --algo, its hyperparameter auto, --normalize unless given.
    A hyperparameter or --grid given without --algo is refused in one line: the defaults of the
    tasks differ in their hyperparameters, and each chooses its own."""
    given = [learners.flag_of(name) for name in flags.given_options()]
    if given or flags.grid is not None:
        defaults = "; ".join(f"{kind}: {default.describe()}"
                             for kind, default in learners.DEFAULTS.items())
        raise StreamherdError(
            f"{' '.join(given) or '--grid'} sets a hyperparameter of one learner: name it with "
            f"--algo (as --algo pa2 -C 1, the default of earlier versions); with no --algo, "
            f"the default learner of each task chooses its own ({defaults})")
    default = learners.DEFAULTS[flags.choice.kind or "binary"]
    return replace(flags, algo=default.algo,
                   options={default.hyperparameter: selection.AUTO} if flags.tune else {},
                   center=default.center if flags.center is None else flags.center,
                   normalize=default.normalize if flags.normalize is None else flags.normalize)


def checked_options(algo, options, kind):
    """Every hyperparameter of ``algo`` for the task ``kind`` checked (and a flag the learner
    does not take refused) before any input."""
    variant = learners.spec(algo)
    if kind == "regression" and variant.regression is None:
        with_regression = ", ".join(name for name, other in learners.REGISTRY.items()
                                    if other.regression is not None)
        raise StreamherdError(f"{algo} has no squared-loss form; --loss squared works with "
                              f"{with_regression}")
    return variant.options(options, kind or "binary")


def is_gaussian(algo):
    """Whether ``algo`` keeps a Gaussian over the weights (its variances: --calibration
    probit, --proba without a calibration)."""
    from streamherd.learners.gaussian import GaussianLearner

    return issubclass(learners.learner_class(algo), GaussianLearner)


def _gentler(hyperparameters):
    """The hyperparameter changes that make the learner's steps smaller, if it has any."""
    return [hint for name, hint in (("C", "lower -C"), ("r", "raise -r"))
            if name in hyperparameters]


def _check_namespaces(path, space, namespaces):
    """-i with namespace flags (-q, --ignore ..., --hash all): only those the model was trained
    with. Without any, the model's own continue (its meta holds them), as its bits do."""
    if not namespaces:
        return
    given = FeatureSpace(space.bits, space.bias, space.normalize, **namespaces)
    saved = space.to_meta()
    if given.to_meta() != saved:
        options = [o for o in FEATURE_OPTIONS if o.key not in ("bits", "bias", "normalize")]
        said = " ".join(_flag_text(o, saved[o.key]) for o in options if saved.get(o.key)) \
            or "no namespace flags"
        raise StreamherdError(f"{path} was trained with {said}; drop "
                              f"{'/'.join(o.flag for o in options)} to continue it with its own")


def _flag_text(option, value):
    """A namespace flag of a model's meta as the command line gives it."""
    if option.key == "hash_all":
        return f"{option.flag} all"
    return " ".join(f"{option.flag} {v}" for v in (value if isinstance(value, (list, tuple))
                                                   else [value]))


class _Piece(NamedTuple):
    """Rows a..b of a chunk, as the tasks' learn and scores read them."""

    importance: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_examples: int


def learn_calibrating(task, learner, calibration, targets, chunk):
    """task.learn, the progressive predictions added to the calibration's statistics: a binary
    model's margins as the kernels write them, else piece by piece (PIECE), each piece the
    calibration reads scored before it is learned (multiclass: only the rows its sample keeps,
    the pieces between learned in one call; a learner whose kernel reads those rows' scores
    at their pieces' starts itself learns the chunk in one call: _learn_reading)."""
    if task.kind == "binary" and not calibration.needs_confidences:
        updates, predictions = task.learn(learner, targets, chunk)
        calibration.observe(predictions, targets, chunk.importance)
        return updates, predictions
    multiclass = task.kind == "multiclass"
    keep = calibration.kept_rows(targets, chunk.importance, len(task.labels)) \
        if multiclass else np.arange(chunk.n_examples)
    if multiclass:
        learner.grow(len(task.labels))
        if learner.scores_while_learning():
            return _learn_reading(task, learner, calibration, targets, chunk, keep)
    done, predictions = [0], []

    def learn(a, b, seen):
        """Rows a..b learned, then observed with what was read of them before."""
        if b <= a:
            return
        piece = _Piece(chunk.importance[a:b], chunk.indptr[a:b + 1], chunk.indices,
                       chunk.values, b - a)
        try:
            updates, predicted = task.learn(learner, targets[a:b], piece)
        except UnstableUpdate as e:
            raise UnstableUpdate(e.index + a, e.what) from None
        done[0] += updates
        predictions.append(predicted)
        if multiclass:
            calibration.observe(seen, targets[a:b], piece.importance)
        else:
            calibration.observe(predicted, targets[a:b], piece.importance, seen)

    learned = 0
    for a in range(0, chunk.n_examples, PIECE):
        b = min(chunk.n_examples, a + PIECE)
        read = keep[(keep >= a) & (keep < b)]
        if not len(read):
            continue
        learn(learned, a, _unread_scores(task, a - learned))
        seen = _progressive_scores(task, learner, chunk, read, a, b)
        learn(a, b, seen)
        learned = b
    learn(learned, chunk.n_examples, _unread_scores(task, chunk.n_examples - learned))
    return done[0], np.concatenate(predictions) if predictions else np.empty(0)


def _learn_reading(task, learner, calibration, targets, chunk, keep):
    """learn_calibrating's multiclass pieces in one call: the kernel reads the class scores of
    the rows ``keep`` at their pieces' starts on its way (kernels/multiclass.Reads), as the
    pieces' scoring would before learning them, bit for bit."""
    from streamherd.learners.kernels.multiclass import Reads

    keep = keep.astype(np.int64, copy=False)
    reads = Reads(keep, keep - keep % PIECE,
                  np.empty((len(keep), len(task.labels))))
    updates, predictions = task.learn(learner, targets, chunk, reads)
    calibration.observe(reads.scores, targets, chunk.importance, rows=keep)
    return updates, predictions


def _unread_scores(task, rows):
    """The class scores of rows the calibration does not read (NaN; binary: none)."""
    return np.full((rows, len(task.labels)), np.nan) if task.kind == "multiclass" else None


def _progressive_scores(task, learner, chunk, read, a, b):
    """What the calibration reads of rows a..b before they are learned, of the rows ``read``
    only (NaN elsewhere): a binary model's x' Sigma x (all rows), or every class's score
    (NaN: a class the learner does not know yet)."""
    piece = _Piece(chunk.importance[read], *chunk.rows_csr(read), len(read))
    if task.kind == "binary":
        confidences = np.empty(piece.n_examples)
        learner.confidences(piece.indptr, piece.indices, piece.values, confidences)
        return confidences
    scores = _unread_scores(task, b - a)   # (the learner grew its classes: learn_calibrating)
    scores[read - a] = task.scores(learner, piece)
    scores[:, task.known:] = np.nan
    return scores
