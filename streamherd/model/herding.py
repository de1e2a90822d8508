"""A conditional herding model (``streamherd herd``, streamherd/herding.py) as a model kind: its
slice of the model file (``save``; ``load``, every array checked) and predict's verbs, so that
``predict`` serves it through the path an OnlineModel takes (``HerdingModel``).

Its file shares the container's marker and format version and says ``kind: herding`` in its
meta; its arrays are every herder's weight snapshots stacked (herder, snapshot, ...), and the
training data's slots.
"""
import numpy as np

from streamherd import herding
from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.model.container import model_meta, open_model, write_archive
from streamherd.tasks.base import PROBA, RAW, SCORES, Classification, Scored, format_pairs

SNAPSHOT_ARRAYS = ("W", "B", "theta", "alpha")


def save(path, runs, features, classes, options, meta_extra):
    """Write the herders' snapshots (``runs``) as a model file, atomically."""
    meta = {"kind": herding.KIND, "multiclass": options.mode,
            "classes": [float(c) for c in classes], "r_max": features.r_max,
            "input_scale": features.scale,
            "hidden": options.hidden, "ratio": options.ratio, **meta_extra}
    stacked = {name: np.stack([np.stack([getattr(h, name) for h in run.snapshots])
                               for run in runs]) for name in SNAPSHOT_ARRAYS}
    write_archive(path, meta, {**stacked, "slots": features.slots})


def load(path):
    """(meta, features, snapshot sets per herder, classes), every array checked in shape and
    finiteness (a damaged file is a one-line error)."""
    meta = model_meta(path)
    damaged = f"{path} is damaged: "
    try:
        classes = np.array(meta["classes"], dtype=np.float64)
        mode, r_max = meta["multiclass"], float(meta["r_max"])
        scale = float(meta["input_scale"])
        with open_model(path) as archive:
            arrays = {name: archive[name] for name in (*SNAPSHOT_ARRAYS, "slots")}
    except (KeyError, TypeError, ValueError, OSError) as e:
        raise StreamherdError(f"{damaged}a herding model needs {e}") from None
    W, B, theta, alpha = (arrays[n] for n in SNAPSHOT_ARRAYS)
    if W.ndim != 4 or any(a.dtype.kind not in "fi" for a in arrays.values()):
        raise StreamherdError(f"{damaged}its W is not a (herders, snapshots, features, hidden) "
                              f"array of numbers")
    herders, count = W.shape[:2]
    n_outputs = 2 if mode == "ova" else len(classes)
    expected = {"B": (herders, count, n_outputs, W.shape[-1]), "theta": W.shape[:2] + W.shape[-1:],
                "alpha": (herders, count, n_outputs), "slots": (W.shape[2] - 1,)}
    if mode not in herding.MODES or herders != (len(classes) if mode == "ova" else 1) or \
            count == 0 or any(arrays[n].shape != s for n, s in expected.items()) or \
            not all(np.all(np.isfinite(a)) for a in (W, B, theta, alpha)):
        raise StreamherdError(f"{damaged}its herding arrays do not fit together or hold "
                              f"non-finite values")
    W, B, theta, alpha = (a.astype(np.float64) for a in (W, B, theta, alpha))
    sets = [[herding.Herder(W[h, s], B[h, s], theta[h, s], alpha[h, s]) for s in range(count)]
            for h in range(herders)]
    features = herding.Features(arrays["slots"].astype(np.int64), r_max, scale)
    return meta, features, sets, classes


class HerdingModel:
    """A saved herding model as predict holds it: each row's class is the one with most
    snapshot votes; --scores and --raw print every class's vote fraction."""

    def __init__(self, path):
        self.path = path
        self.meta, self.features, self.sets, self.classes = load(path)
        self.texts = [format(c, "g") for c in self.classes]
        self.space = FeatureSpace(herding.READ_BITS, bias=False)   # the slots as read
        self.task = Classification()   # its report: the error rate

    def score(self, chunk):
        """The votes and the predicted class of each row, and the mistakes against its label
        (on the parser threads, as an OnlineModel's)."""
        votes = herding.snapshot_votes(self.sets, self.features.rows(chunk),
                                       self.meta["multiclass"], len(self.classes))
        best = np.argmax(votes, axis=1)
        has_label = ~np.isnan(chunk.labels)
        mistakes = int(np.sum(self.classes[best][has_label] != chunk.labels[has_label]))
        return Scored(chunk, votes, best, mistakes, int(has_label.sum()))

    def lines(self, scored, shown):
        if shown in (RAW, SCORES):
            return format_pairs(self.texts, scored.scores)
        return [self.texts[k] for k in scored.predictions]

    def check_output(self, shown, path):
        if shown == PROBA:
            raise StreamherdError(f"{path} is a conditional herding model: it has no "
                                  f"probabilities; drop --proba (--scores gives its vote "
                                  f"fractions)")

    def audit_weights(self):
        raise StreamherdError(f"{self.path} is a conditional herding model: its votes come from "
                              f"hidden units, not one weight per feature, so --audit has "
                              f"nothing to show; drop --audit")
