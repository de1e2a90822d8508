"""Datasets in memory: every file is read once into one CSR matrix, and a task (a binary problem,
a multiclass file as a whole, or one pair of its classes) is a subset of its rows.

Slots: files are read at the full hash width (``LOAD_BITS``) and then masked down, per dataset,
to the fewest bits at which no two slots collide (an svmlight file with 256 features gets 9
bits), capped at ``--bits``; above the cap colliding slots are summed, as the streaming reader
does. Masking a 30-bit slot down to b bits gives the slot the reader would have produced at b
bits (svmlight indices, VW hashes and the bias slot are all masked last), so the result is
what ``streamherd train -b B`` sees. Small weight vectors also keep the learners in cache.
"""
import os
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.features.hashing import VW_CONSTANT_HASH
from streamherd.features.normalize import unit_norm_rows

LOAD_BITS = 30
DEFAULT_BITS_CAP = 18
# A full-covariance learner keeps a 2^b x 2^b matrix (8 * 4^b bytes: 128 MiB at 12 bits).
FULL_COVARIANCE_MAX_BITS = 12
NORMALIZATIONS = ("l2", "none")


@dataclass
class CSR:
    """Rows of examples: labels as written in the file, VW importance weights, sparse rows."""

    labels: np.ndarray
    importance: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    @property
    def n_rows(self):
        return len(self.labels)

    def take(self, rows):
        """The rows ``rows`` (an index array, in that order) as a new CSR; vectorized gather."""
        rows = np.asarray(rows, np.int64)
        starts = self.indptr[rows]
        lengths = self.indptr[rows + 1] - starts
        indptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        # position k of the new arrays reads old position k - (new row start - old row start)
        source = np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1] - starts, lengths)
        return CSR(self.labels[rows], self.importance[rows], indptr, self.indices[source],
                   self.values[source])

    def row_ids(self):
        return np.repeat(np.arange(self.n_rows, dtype=np.int64), np.diff(self.indptr))


@dataclass
class Dataset:
    """One dataset: its training rows and, for a train/test pair, its test rows (else None:
    the experiment splits ``train`` into folds)."""

    name: str
    paths: tuple
    train: CSR
    test: "CSR | None"
    classes: np.ndarray   # the distinct label values of train and test, ascending
    bits: int

    @property
    def multiclass(self):
        return len(self.classes) > 2


@dataclass(frozen=True)
class Task:
    """One classification problem over a dataset's rows.

    kind "binary": rows labelled ``positive`` get y = +1, rows labelled ``negative`` y = -1;
    other rows are not part of the task (all-pairs). kind "multiclass": every row labelled one
    of ``classes`` (ascending) is in the task, its target the index of its label there (0..K-1,
    as a float, like the binary targets). Only ``targets`` and the learner adapter need to know
    the kind.
    """

    name: str
    dataset: str
    kind: str
    positive: float = float("nan")
    negative: float = float("nan")
    classes: tuple = ()

    def targets(self, labels):
        """(rows of ``labels`` in this task, their targets)."""
        if self.kind == "multiclass":
            classes = np.asarray(self.classes, np.float64)
            rows = np.flatnonzero(np.isin(labels, classes))
            return rows, np.searchsorted(classes, labels[rows]).astype(np.float64)
        rows = np.flatnonzero((labels == self.positive) | (labels == self.negative))
        return rows, np.where(labels[rows] == self.positive, 1.0, -1.0)

    @property
    def target_values(self):
        """Every value a target can take, ascending (label noise draws from them)."""
        if self.kind == "multiclass":
            return tuple(float(z) for z in range(len(self.classes)))
        return (-1.0, 1.0)

    @property
    def blocks(self):
        """Class blocks of the task's learner: K for multiclass (joint), 1 for binary."""
        return len(self.classes) if self.kind == "multiclass" else 1


def _label_text(value):
    return format(float(value), "g")


def parse_dataset_spec(spec):
    """``FILE`` (split into folds) or ``TRAIN,TEST``; returns (name, (paths...))."""
    paths = tuple(p for p in spec.split(",") if p)
    if not 1 <= len(paths) <= 2:
        raise StreamherdError(f"dataset '{spec}': give one file (split into --folds) or "
                              f"TRAIN,TEST (two files separated by a comma)")
    for path in paths:
        if not os.path.isfile(path):
            raise StreamherdError(f"dataset '{spec}': {path} does not exist or is not a file")
    return dataset_name(paths[0]), paths


def dataset_name(path):
    """The file name without folders, compression and format suffixes, nor a '.train' part."""
    name = os.path.basename(path)
    for suffix in (".gz", ".bz2", ".xz", ".svm", ".vw", ".txt", ".libsvm", ".dat", ".train"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[:-len(suffix)]
    return name


def read_csr(path, fmt="auto"):
    """Every labelled example of ``path`` as one CSR at LOAD_BITS bits, bias included.

    Lines without a label (VW allows them) cannot be scored and are left out.
    """
    from streamherd.features.space import FeatureSpace
    from streamherd.io.reader import ChunkReader

    # The reader reuses its buffers block after block: copy each chunk's arrays as it comes.
    labels, importance, lengths, indices, values = [], [], [], [], []
    for chunk in ChunkReader([path], fmt=fmt, features=FeatureSpace(LOAD_BITS), workers=0):
        labels.append(chunk.labels.copy())
        importance.append(chunk.importance.copy())
        lengths.append(np.diff(chunk.indptr))
        indices.append(chunk.indices.copy())
        values.append(chunk.values.copy())
    if sum(len(part) for part in labels) == 0:
        raise StreamherdError(f"{path}: no examples; an experiment needs labelled examples")
    indptr = np.zeros(sum(len(part) for part in lengths) + 1, np.int64)
    np.cumsum(np.concatenate(lengths), out=indptr[1:])
    csr = CSR(np.concatenate(labels), np.concatenate(importance), indptr,
              np.concatenate(indices), np.concatenate(values))
    labelled = np.flatnonzero(~np.isnan(csr.labels))
    if len(labelled) == 0:
        raise StreamherdError(f"{path}: no line has a label; an experiment needs labelled examples")
    return csr if len(labelled) == csr.n_rows else csr.take(labelled)


def injective_bits(slots, cap):
    """The fewest bits (<= cap) at which the distinct ``slots`` stay distinct, else ``cap``."""
    distinct = np.unique(slots)
    for bits in range(1, cap):
        if len(np.unique(distinct & ((1 << bits) - 1))) == len(distinct):
            return bits
    return cap


def mask_slots(csr, bits):
    """The CSR with every slot masked to ``bits``; slots that now collide within a row are
    summed (rows come out sorted by slot)."""
    mask = (1 << bits) - 1
    masked = (csr.indices & mask).astype(np.int64)
    rows = csr.row_ids()
    keys = (rows << bits) | masked
    if np.all(np.diff(keys) > 0):   # no collision, rows already sorted: nothing to merge
        return CSR(csr.labels, csr.importance, csr.indptr, masked.astype(np.int32), csr.values)
    unique_keys, inverse = np.unique(keys, return_inverse=True)
    values = np.bincount(inverse, weights=csr.values, minlength=len(unique_keys))
    indptr = np.zeros(csr.n_rows + 1, np.int64)
    np.cumsum(np.bincount(unique_keys >> bits, minlength=csr.n_rows), out=indptr[1:])
    return CSR(csr.labels, csr.importance, indptr, (unique_keys & mask).astype(np.int32), values)


def normalize_features(csr, bits):
    """Scale every row's features to unit L2 norm; the bias feature keeps its value 1 (so it
    stays a bias, whatever the scale of the raw features). All-zero rows stay zero. The same
    rule and kernel as ``train --normalize`` (features/normalize.py)."""
    values = csr.values.copy()
    unit_norm_rows(csr.indptr, csr.indices, values, VW_CONSTANT_HASH & ((1 << bits) - 1))
    return CSR(csr.labels, csr.importance, csr.indptr, csr.indices, values)


def load_dataset(spec, fmt="auto", bits_cap=DEFAULT_BITS_CAP, normalize="l2"):
    """Read a dataset spec (``FILE`` or ``TRAIN,TEST``) into memory, masked and normalised."""
    name, paths = parse_dataset_spec(spec)
    parts = [read_csr(p, fmt) for p in paths]
    bits = injective_bits(np.concatenate([p.indices for p in parts]), bits_cap)
    parts = [mask_slots(p, bits) for p in parts]
    if normalize == "l2":
        parts = [normalize_features(p, bits) for p in parts]
    classes = np.unique(np.concatenate([p.labels for p in parts]))
    if len(classes) < 2:
        raise StreamherdError(f"{paths[0]}: every example has the label "
                              f"{_label_text(classes[0])}; a classifier needs two classes")
    return Dataset(name, paths, parts[0], parts[1] if len(parts) > 1 else None, classes, bits)


def tasks_of(dataset, all_pairs=False):
    """The tasks of a dataset: itself when it has two classes (binary; the larger label is the
    positive class, as ``streamherd train`` reads 1/0 and +1/-1); a multiclass dataset is one
    multiclass task, or with ``all_pairs`` one binary task per pair of classes (the smaller class
    positive)."""
    if not dataset.multiclass:
        negative, positive = dataset.classes
        return [Task(dataset.name, dataset.name, "binary", float(positive), float(negative))]
    classes = [float(c) for c in dataset.classes]
    if not all_pairs:
        return [Task(dataset.name, dataset.name, "multiclass", classes=tuple(classes))]
    return [Task(f"{dataset.name}:{_label_text(a)}v{_label_text(b)}", dataset.name, "binary",
                 a, b)
            for i, a in enumerate(classes) for b in classes[i + 1:]]
