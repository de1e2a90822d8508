"""The multiclass task: class ids from any integer or string labels, a joint learner (one weight
block per class) or one binary learner per class (one-versus-all), progressive multiclass 0/1
loss, predict's class, every class's score (--scores, --raw) or probability (--proba)."""
import numpy as np

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.labels import ClassLabels
from streamherd.learners.reductions.mira import FAMILY as MIRA_FAMILY
from streamherd.tasks.base import PROBA, RAW, SCORES, Classification, format_pairs

UNLABELED = -1   # the class id of a line without a label
# the modes, as messages name them
MODES = {"joint": "joint", "ova": "one-versus-all", "mira": "joint, MIRA's update"}


class MulticlassTask(Classification):
    """Targets are class ids (ClassLabels.observe: new labels become classes, unless the set
    is fixed, and which labels are bad lines)."""

    kind = "multiclass"
    has_class_scores = True

    def __init__(self, labels=None, mode="joint", skip_bad=False):
        """``mode``: "joint", "ova" (one-versus-all) or "mira" (joint, Crammer & Singer's update
        on every violated constraint: learners/reductions/mira.py)."""
        super().__init__(skip_bad)
        self.labels = labels if labels is not None else ClassLabels()
        self.mode = mode
        self.one_learner_per_class = mode == "ova"
        # the classes a prediction may choose: the fixed or saved ones, then those seen so far
        self.known = len(self.labels)

    @classmethod
    def of_values(cls, classes):
        """A joint problem over fixed numeric classes, ids in the order given (the experiment's):
        rows with other labels are not part of it."""
        return cls(ClassLabels.of_values(classes))

    @classmethod
    def check_meta(cls, saved, algo):
        mode = saved.get("multiclass", lambda v: isinstance(v, str) and v in MODES,
                         f"one of {', '.join(MODES)}")
        if mode == "mira" and algo not in MIRA_FAMILY:
            raise saved.damaged(f"it is a multiclass mira model of {algo}, but MIRA's update is "
                                f"the Passive-Aggressive family's ({', '.join(MIRA_FAMILY)})")
        ClassLabels.check_meta(saved)

    @property
    def blocks(self):
        return len(self.labels)

    @property
    def model_words(self):
        return f", {len(self.labels)} classes, {MODES[self.mode]}"

    @property
    def target_values(self):
        """Every target, ascending (the experiment's label noise)."""
        return tuple(float(z) for z in range(len(self.labels)))

    def check_labels(self, chunk):
        """Nothing to check apart from the others: which labels are bad lines depends on the
        classes of the chunks before."""

    def targets(self, chunk, learning=True):
        """(chunk without its skipped bad lines, class ids)."""
        return self.labels.observe(chunk, self.skip_bad, learning)

    def value_targets(self, values):
        """(rows whose label value is a class, their class ids as floats), for in-memory
        labels."""
        rows, ids = self.labels.value_ids(values)
        return rows, ids.astype(np.float64)

    def labeled(self, targets):
        return targets != UNLABELED

    def new_learner(self, algo, dim, options, state=None, learner_meta=None):
        if self.mode == "ova":
            from streamherd.learners.reductions.ova import OneVersusAll

            return OneVersusAll(algo, dim, options, state, learner_meta, blocks=self.blocks)
        if self.mode == "mira":
            from streamherd.learners.reductions.mira import Mira

            return Mira(algo, dim, options, state, learner_meta, blocks=self.blocks)
        return learners.create(algo, dim, options, state, learner_meta, blocks=self.blocks,
                               task=self.kind)

    def learn(self, learner, classes, rows, reads=None):
        """One online pass: (updates, the class predicted for each row before its update); the
        learner first grows a block for each class new in the chunk. ``reads``
        (kernels/multiclass.Reads, for a learner whose scores_while_learning): every class's
        score of rows read on the way into reads.scores, NaN for a class not known when the
        row is read."""
        learner.grow(len(self.labels))
        predicted = np.empty(rows.n_examples, np.int64)
        classes = np.asarray(classes, np.int64)
        known = self.known
        updates, self.known = learner.learn_joint(classes, rows.importance, rows.indptr,
                                                  rows.indices, rows.values, known, predicted,
                                                  reads)
        if reads is not None and len(reads.rows):
            # the classes known before row at[r]: those before the chunk and those its rows
            # before at[r] were labeled with (as the kernels count them)
            seen = np.maximum.accumulate(np.concatenate([[known - 1], classes]))
            unknown = np.arange(reads.scores.shape[1]) > seen[reads.at][:, None]
            reads.scores[unknown] = np.nan
        return updates, predicted

    def scores(self, learner, rows):
        """Every class's score for each row."""
        scores = np.empty((rows.n_examples, len(self.labels)))
        learner.class_scores(rows.indptr, rows.indices, rows.values, scores)
        return scores

    def predictions(self, scores):
        """The class of largest score (the earliest on ties, as the joint kernels), -1 when
        there is no class."""
        if scores.shape[1] == 0:
            return np.full(len(scores), UNLABELED)
        return np.argmax(scores, axis=1)

    def loss(self, classes, predicted):
        return np.where(classes == UNLABELED, np.nan, (predicted != classes).astype(np.float64))

    def prediction_text(self, predicted, row):
        return self.labels.text(int(predicted[row]))

    def has_probabilities(self, learner):
        return learner.gaussian if self.mode == "ova" else hasattr(learner, "probabilities")

    def lines(self, learner, scored, output):
        if output == PROBA:
            order = self.sorted_classes()
            return format_pairs(np.asarray(self.labels.texts)[order],
                                self.probabilities(learner, scored)[:, order])
        if output in (RAW, SCORES):   # a multiclass model's raw output is its classes' scores
            return format_pairs(self.labels.texts, scored.scores)
        # index 0: '?', no prediction (class id -1)
        return np.array(["?", *self.labels.texts], dtype=object)[scored.predictions + 1].tolist()

    def probabilities(self, learner, scored):
        """Every class's probability, in class id order: the model's softmax calibration
        (calibration.py), or without one a Gaussian model's P(the class has the top score)."""
        if self.calibration is not None:
            return self.calibration.probabilities(scored.scores)
        rows = scored.chunk
        return learner.class_probabilities(rows.indptr, rows.indices, rows.values)

    def sorted_classes(self):
        """The class ids in the order --proba prints them: by number when every class is one,
        else by text (the order of the first appearance would change with the data)."""
        texts = self.labels.texts
        try:
            keys = [(float(text), text) for text in texts]
        except ValueError:
            keys = [(0.0, text) for text in texts]
        return np.array(sorted(range(len(texts)), key=keys.__getitem__), dtype=np.intp)

    def meta(self):
        if not len(self.labels):
            raise StreamherdError("no labeled example was read, so the multiclass model has no "
                                  "class; train it on labeled data (no model was written)")
        return {"task": self.kind, "multiclass": self.mode, **self.labels.to_meta()}

    def description(self):
        if self.labels.fixed:
            return f"multiclass {self.mode} ({len(self.labels)} fixed classes)"
        return f"multiclass {self.mode} ({len(self.labels)} classes so far, more as they appear)"
