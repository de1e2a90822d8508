"""Data files into memory for Python: ``load_svmlight`` and ``load_vw`` return (X, y) with X a
``scipy.sparse.csr_matrix``, read by the command line's own reader (io/reader.ChunkReader: the
numba parse kernels on parser threads, gzip/bzip2/xz detected by their magic bytes, ``"-"`` for
standard input) and its feature space, so a file means the same here as to ``streamherd train``.

Columns. Column j is slot j + 1 of the model (modulo 2^bits), for both formats:

- svmlight, ``bits=None``: column j is feature index j + 1 (LIBSVM's indices start at 1), X has
  as many columns as the largest index, explicit zeros (``index:0``) included as scikit-learn's
  ``load_svmlight_file`` counts them, nothing is hashed. An index 0 is an error (it would be
  column -1); indices must stay below 2^30 (MAX_BITS).
- svmlight with ``bits``: index i is slot i mod 2^bits, as ``streamherd train -b bits`` reads
  it; X has 2^bits columns and slot 0 (index 0, or a multiple of 2^bits) is the last column.
- VW format: the features are hashed to 2^bits slots as VW and ``streamherd train -b bits``
  hash them (``bits`` 18 by default); X has 2^bits columns, slot s in column s - 1 and slot 0
  in the last one.

The estimators of streamherd.sklearn map column j back to slot j + 1, so
``OnlineClassifier(bits=b).fit(*load_vw(f, bits=b))`` learns on the slots ``streamherd train -b
b f`` learns on, and with svmlight files any ``bits`` that hold the columns do. The bias
(VW's constant feature) is not a column: the estimators add it (``fit_intercept``).

Labels. y is float64 when every label is a number (binary +1/-1 or 1/0, regression values,
numeric classes; NaN for a VW line without a label); when any label is a class name (text,
as ``streamherd train`` then learns a multiclass model), y is an array of str, every label as
written (a number's text too; None for a line without a label). A line whose label is neither
(a damaged number) is the parser's one-line error, as on the command line.
"""
import os

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.features.options import MAX_BITS
from streamherd.features.space import DEFAULT_BITS, FeatureSpace

__all__ = ["load_svmlight", "load_vw"]

# the label key of a line without a label: NaN's bits, which no number's key (labels.label_keys)
# has; its text is None
_UNLABELED = np.float64(np.nan).view(np.uint64)


def load_svmlight(path_or_paths, bits=None, n_features=None):
    """(X, y) of svmlight (LIBSVM) files, one after the other: see the module's docstring for
    the columns and the labels. ``path_or_paths``: a path, ``"-"`` (standard input), or a list
    of them; gzip, bzip2 and xz files are decompressed. ``n_features`` (without ``bits``): X's
    columns, e.g. a training set's for its test set (a larger index is an error); default: the
    largest index."""
    if n_features is not None and bits is not None:
        raise StreamherdError("give load_svmlight bits (2^bits hashed columns) or n_features, "
                              "not both")
    return _load(path_or_paths, "svmlight", bits, n_features)


def load_vw(path_or_paths, bits=DEFAULT_BITS):
    """(X, y) of Vowpal Wabbit format files: features hashed to 2^bits columns as VW hashes
    them (see the module's docstring); the importance weights and tags are not kept."""
    if bits is None:
        raise StreamherdError("load_vw hashes the features: give bits (1 to 30; 18 is VW's and "
                              "streamherd's default)")
    return _load(path_or_paths, "vw", bits)


def _paths(path_or_paths):
    if isinstance(path_or_paths, (str, bytes, os.PathLike)):
        return [os.fsdecode(path_or_paths)]
    paths = [os.fsdecode(p) for p in path_or_paths]
    if not paths:
        raise StreamherdError("no input was given; pass a path, '-' for standard input, or a "
                              "list of paths")
    return paths


def _load(path_or_paths, fmt, bits, n_features=None):
    from scipy.sparse import csr_matrix

    from streamherd.io.reader import ChunkReader
    from streamherd.io.svmlight import largest_zero_index
    from streamherd.outputs import check_inputs

    paths = _paths(path_or_paths)
    check_inputs(paths)
    space = FeatureSpace(MAX_BITS if bits is None else bits, bias=False)
    parts = _Parts()
    largest = 0   # the largest index, explicit zeros included (bits None)
    for chunk in ChunkReader(paths, fmt=fmt, features=space):
        if bits is None:
            _check_indices(chunk, n_features)
            nnz = chunk.indptr[-1]
            largest = max(largest, int(chunk.indices[:nnz].max(initial=0)))
            # a colon per feature kept: none was an explicit zero (the usual block), no scan
            if np.count_nonzero(chunk.block == ord(":")) > nnz:
                largest = max(largest, largest_zero_index(chunk.block, len(chunk.block)))
        parts.add(chunk)
    indptr, slots, values = parts.rows()
    if bits is None:
        columns = slots - 1   # index 0 was refused above
        n_columns = n_features if n_features is not None else largest
    else:
        columns = (slots - 1) & np.int32(space.mask)
        n_columns = space.dim
    X = csr_matrix((values, columns, indptr), shape=(len(indptr) - 1, n_columns))
    X.sort_indices()   # a no-op for rows already sorted (svmlight's usual lines)
    return X, parts.targets()


def _check_indices(chunk, n_features):
    """svmlight without bits: an index 0 has no column (column j is index j + 1), nor has an
    index above ``n_features`` (when given)."""
    entries = chunk.indices[:chunk.indptr[-1]]
    outside = (entries == 0) if n_features is None else \
        (entries == 0) | (entries > n_features)
    found = np.flatnonzero(outside)
    if not len(found):
        return
    index = int(entries[found[0]])
    row = int(np.searchsorted(chunk.indptr, found[0], side="right")) - 1
    where = f"{chunk.source}:{int(chunk.line_numbers[row])}: feature index {index}"
    if index == 0:
        raise StreamherdError(
            f"{where}; load_svmlight puts index j+1 in column j (LIBSVM's indices start at 1): "
            f"renumber the features from 1, or pass bits=B to read index 0 as slot 0 (the last "
            f"of 2^B columns)")
    raise StreamherdError(f"{where} is above n_features={n_features}; pass a larger n_features "
                          f"(or none: the largest index)")


class _Parts:
    """The rows and labels of the chunks read so far, copied out of the reader's buffers
    (which the next chunk reuses)."""

    def __init__(self):
        self.lengths, self.slots, self.values, self.labels = [], [], [], []
        self.keys = []        # per chunk: each row's label key (labels.label_keys)
        self.texts = {}       # label key -> the label as first written
        self.any_text = False

    def add(self, chunk):
        from streamherd.labels import label_keys

        nnz = chunk.indptr[-1]
        self.lengths.append(np.diff(chunk.indptr))
        self.slots.append(chunk.indices[:nnz].copy())
        self.values.append(chunk.values[:nnz].copy())
        self.labels.append(chunk.labels.copy())
        if not self.any_text and not chunk.text_label_rows().any():
            return
        keys = np.where(chunk.label_start >= 0,
                        label_keys(chunk.block, chunk.label_start, chunk.label_end),
                        _UNLABELED)
        self._note_texts(chunk, keys)
        self.keys.append(keys)

    def _note_texts(self, chunk, keys):
        """The text of each label key new in ``chunk`` (one token decoded per distinct label);
        the first chunk with a class name also keys every chunk before it."""
        from streamherd.labels import label_text

        if not self.any_text:
            self.any_text = True
            # the chunks before held numbers only: their keys are their values' bits
            self.keys = [_number_keys(labels) for labels in self.labels[:-1]]
            for labels in self.labels[:-1]:
                for value in np.unique(labels[~np.isnan(labels)]).tolist():
                    self.texts.setdefault(int(_number_keys(np.array([value]))[0]),
                                          label_text(value))
        labeled = np.flatnonzero(chunk.label_start >= 0)
        distinct, first = np.unique(keys[labeled], return_index=True)
        for key, row in zip(distinct.tolist(), labeled[first].tolist()):
            if key not in self.texts:
                _check_class_name(chunk, row)
                self.texts[key] = chunk.label_token(row)

    def rows(self):
        """(indptr, slots, values) of every row read."""
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
        indptr = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        slots = np.concatenate(self.slots) if self.slots else np.zeros(0, np.int32)
        values = np.concatenate(self.values) if self.values else np.zeros(0)
        self.slots = self.values = None   # no second copy of the rows held
        return indptr, slots, values

    def targets(self):
        """y: the labels as numbers, or as texts when any is a class name."""
        labels = np.concatenate(self.labels) if self.labels else np.zeros(0)
        if not self.any_text:
            return labels
        keys = np.concatenate(self.keys)
        distinct, inverse = np.unique(keys, return_inverse=True)
        texts = np.array([self.texts.get(key) for key in distinct.tolist()], dtype=object)
        return texts[inverse.ravel()]


def _check_class_name(chunk, row):
    """The command line's error for the label of ``row``, not a number, when it is no class
    name either: a number behind a byte-order mark or bytes that are not UTF-8 (train's bad
    label), or a damaged number such as nan or 1e400."""
    from streamherd.io.linecodes import BYTE_ORDER_MARK
    from streamherd.labels import ClassLabels, looks_like_number, numbers_only

    raw = chunk.block[chunk.label_start[row]:chunk.label_end[row]].tobytes()
    readable = raw.removeprefix(BYTE_ORDER_MARK).decode("utf-8", "ignore")
    if looks_like_number(readable):
        one = chunk.take(np.array([row]))
        if readable != raw.decode("utf-8", "replace"):
            numbers_only(one, skip_bad=False)
        ClassLabels().observe(one)


def _number_keys(labels):
    """label_keys' key of numeric labels (their float64 bits, -0 as 0); _UNLABELED for none."""
    return np.where(np.isnan(labels), _UNLABELED, (labels + 0.0).view(np.uint64))
