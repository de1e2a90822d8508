"""Datasets in memory: every file is read once into one Chunk (io/csr.py), and a task (a binary
problem, a multiclass file as a whole, or one pair of its classes) is a subset of its rows, learned
as streamherd.tasks learns it.

Slots: files are read at the full hash width (``LOAD_BITS``) and then masked down, per dataset,
to the fewest bits at which no two slots collide (an svmlight file with 256 features gets 9
bits), capped at ``--bits``; above the cap colliding slots are summed, as the streaming reader
does. Masking a 30-bit slot down to b bits gives the slot the reader would have produced at b
bits (svmlight indices, VW hashes and the bias slot are all masked last), so the result is
what ``streamherd train -b B`` sees. Small weight vectors also keep the learners in cache.
"""
import os
from dataclasses import dataclass, replace

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.space import FeatureSpace
from streamherd.io.csr import Chunk
from streamherd.labels import ClassLabels
from streamherd.tasks import BinaryTask, MulticlassTask

LOAD_BITS = 30
DEFAULT_BITS_CAP = 18
# A full-covariance learner keeps a 2^b x 2^b matrix (8 * 4^b bytes: 128 MiB at 12 bits).
FULL_COVARIANCE_MAX_BITS = 12
NORMALIZATIONS = ("l2", "none")


@dataclass
class Dataset:
    """One dataset: its training rows and, for a train/test pair, its test rows (else None:
    the experiment splits ``train`` into folds)."""

    name: str
    paths: tuple
    train: Chunk
    test: "Chunk | None"
    classes: np.ndarray   # the distinct label values of train and test, ascending
    bits: int

    @property
    def multiclass(self):
        return len(self.classes) > 2


@dataclass(frozen=True)
class Task:
    """One problem of the tournament over a dataset's rows: ``problem``, the streamherd.tasks
    task that learns it, over fixed label values. A binary one (BinaryTask.of_values) takes only
    the rows of its two labels (all-pairs); a multiclass one (MulticlassTask.of_values, the
    classes ascending) the rows labelled one of its classes, its target the index of the label
    there (0..K-1, as a float, like the binary targets: label noise draws from either).
    """

    name: str
    dataset: str
    problem: object   # a BinaryTask or a MulticlassTask


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


def read_chunk(path, fmt="auto"):
    """Every labelled example of ``path`` as one Chunk at LOAD_BITS bits, bias included.

    Lines without a label (VW allows them) cannot be scored and are left out; a label that is
    not a number is an error that names its line (an experiment's classes are numbers).
    """
    from streamherd.io.reader import ChunkReader

    # A label that is not a number stops the reading, as in a binary task; the reader reuses
    # its buffers block after block: copy each chunk as it comes.
    reader = ChunkReader([path], fmt=fmt, features=FeatureSpace(LOAD_BITS), workers=0,
                         process=BinaryTask().check_labels)
    chunks = [chunk.copy() for chunk in reader]
    if sum(chunk.n_examples for chunk in chunks) == 0:
        raise StreamherdError(f"{path}: no examples; an experiment needs labelled examples")
    rows = Chunk.concatenate(chunks)
    labelled = np.flatnonzero(~np.isnan(rows.labels))
    if len(labelled) == 0:
        raise StreamherdError(f"{path}: no line has a label; an experiment needs labelled examples")
    return rows if len(labelled) == rows.n_examples else rows.take(labelled)


def injective_bits(slots, cap):
    """The fewest bits (<= cap) at which the distinct ``slots`` stay distinct, else ``cap``."""
    distinct = np.unique(slots)
    for bits in range(1, cap):
        if len(np.unique(distinct & ((1 << bits) - 1))) == len(distinct):
            return bits
    return cap


def mask_slots(rows, bits):
    """The rows with every slot masked to ``bits``; slots that now collide within a row are
    summed (rows come out sorted by slot)."""
    mask = (1 << bits) - 1
    masked = (rows.indices & mask).astype(np.int64)
    keys = (rows.row_ids() << bits) | masked
    if np.all(np.diff(keys) > 0):   # no collision, rows already sorted: nothing to merge
        return replace(rows, indices=masked.astype(np.int32))
    unique_keys, inverse = np.unique(keys, return_inverse=True)
    values = np.bincount(inverse, weights=rows.values, minlength=len(unique_keys))
    indptr = np.zeros(rows.n_examples + 1, np.int64)
    np.cumsum(np.bincount(unique_keys >> bits, minlength=rows.n_examples), out=indptr[1:])
    return replace(rows, indptr=indptr, indices=(unique_keys & mask).astype(np.int32),
                   values=values)


def normalize_features(rows, bits):
    """Scale every row's features to unit L2 norm; the bias feature keeps its value 1 (so it
    stays a bias, whatever the scale of the raw features). All-zero rows stay zero. The rule of
    ``train --normalize``, applied by the same FeatureSpace."""
    rows = replace(rows, values=rows.values.copy())
    FeatureSpace(bits, normalize=normalization.L2).transform(rows)
    return rows


def load_dataset(spec, fmt="auto", bits_cap=DEFAULT_BITS_CAP, normalize="l2"):
    """Read a dataset spec (``FILE`` or ``TRAIN,TEST``) into memory, masked and normalised."""
    name, paths = parse_dataset_spec(spec)
    parts = [read_chunk(p, fmt) for p in paths]
    bits = injective_bits(np.concatenate([p.indices for p in parts]), bits_cap)
    parts = [mask_slots(p, bits) for p in parts]
    if normalize == "l2":
        parts = [normalize_features(p, bits) for p in parts]
    classes = np.unique(np.concatenate([p.labels for p in parts]))
    if len(classes) < 2:
        raise StreamherdError(f"{paths[0]}: every example has the label "
                              f"{classes[0]:g}; a classifier needs two classes")
    return Dataset(name, paths, parts[0], parts[1] if len(parts) > 1 else None, classes, bits)


def tasks_of(dataset, all_pairs=False, multiclass="joint"):
    """The tasks of a dataset: itself when it has two classes (binary; the larger label is the
    positive class, as ``streamherd train`` reads 1/0 and +1/-1); a multiclass dataset is one
    multiclass task, learned as ``train --multiclass`` ``multiclass`` (joint, ova or mira), or
    with ``all_pairs`` one binary task per pair of classes (the smaller class positive)."""
    if not dataset.multiclass:
        negative, positive = dataset.classes
        return [Task(dataset.name, dataset.name,
                     BinaryTask.of_values(float(positive), float(negative)))]
    classes = [float(c) for c in dataset.classes]
    if not all_pairs:
        return [Task(dataset.name, dataset.name,
                     MulticlassTask(ClassLabels.of_values(classes), mode=multiclass))]
    return [Task(f"{dataset.name}:{a:g}v{b:g}", dataset.name,
                 BinaryTask.of_values(a, b))
            for i, a in enumerate(classes) for b in classes[i + 1:]]
