"""The label rules the tasks (streamherd/tasks/) apply to chunks: which label tokens are bad lines
(numbers_only, looks_like_number), binary labels (any two label values, mapped to y = +1 and -1)
and multiclass labels (any integer or string labels, mapped to class ids)."""
import re
import unicodedata

import numpy as np
from numba import njit

from streamherd.errors import StreamherdError, is_finite, shown
from streamherd.io import linecodes
from streamherd.io.lexing import bits_of_float, parse_float
from streamherd.io.reader import describe_token


def label_text(value):
    """How a numeric label is printed: integral values without a decimal point."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@njit(cache=True, nogil=True)
def _signed_labels(labels, negative, positive, y):
    """y = +1 where the label is ``positive``, -1 where it is ``negative``, NaN where there is
    none; returns whether every label was one of these (else y is not to be used). Without
    branches (label - label is 0, or NaN for no label): the labels' order is random. An infinite
    label (label - label is NaN too) counts as unknown, so that observe's general path maps it."""
    known = True
    for i in range(len(labels)):
        label = labels[i]
        y[i] = (label > 0.0) * 2.0 - 1.0 + (label - label)
        known &= (((label == positive) | (label == negative)) & (label - label == 0.0)) | \
            (label != label)
    return known


# A token that reads as a number but is not a finite one (nan, inf, 1e400, a lone sign, a
# fullwidth +1 or other Unicode digits once NFKC-normalised): a damaged number, never a class name.
_NUMBER_LIKE = re.compile(r"[+-]?(\d+\.?\d*|\.\d*)([eE][+-]?\d*)?|[+-]|[+-]?(nan|inf|infinity)",
                          re.IGNORECASE)


def numbers_only(chunk, skip_bad, expected=None):
    """Binary and regression data: a label that is not a number is a malformed line (an error
    naming its line and saying what was ``expected``, or with ``skip_bad`` the row is dropped
    and counted)."""
    text = chunk.text_label_rows()
    if not text.any():
        return chunk
    if skip_bad:
        return chunk.select(~text)
    i = int(np.argmax(text))
    what, default_expected = linecodes.MESSAGES[linecodes.BAD_LABEL]
    raw = chunk.block[chunk.label_start[i]:chunk.label_end[i]].tobytes()
    where = f"{chunk.source}:{int(chunk.line_numbers[i])}"
    marked = linecodes.byte_order_mark_error(where, raw, chunk.source)
    if marked:
        raise StreamherdError(marked)
    raise StreamherdError(
        f"{where}: {what} '{describe_token(raw)}'; expected "
        f"{expected or default_expected}. Fix the line, or pass --skip-bad to skip such lines")


def looks_like_number(token):
    """Whether a label token that did not parse as a number was meant to be one."""
    return _NUMBER_LIKE.fullmatch(unicodedata.normalize("NFKC", token).strip()) is not None


def class_name_rows(chunk):
    """Rows whose label is a class name: not a number, and not a damaged number (see
    looks_like_number). Decodes each distinct label token once, not each row."""
    text = chunk.text_label_rows()
    if not text.any():
        return text
    rows = np.flatnonzero(text)
    keys = label_keys(chunk.block, chunk.label_start[rows], chunk.label_end[rows])
    distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    is_name = np.array([not looks_like_number(chunk.label_token(rows[i]))
                        for i in first.tolist()])
    names = np.zeros_like(text)
    names[rows] = is_name[inverse.ravel()]
    return names


def _or_nan(value):
    return np.nan if value is None else float(value)


class BinaryLabels:
    """The two label values of a binary problem and which is positive: given, or discovered
    from a stream, where labels > 0 are the positive class. Converts labels to +1/-1.

    ``1/0`` and ``+1/-1`` both work. A third distinct value, or two values on the same side
    of zero, is an error that names its line. Predictions are printed with the data's own
    values (a model trained on 1/0 predicts 1/0).
    """

    def __init__(self, negative=None, positive=None):
        self.negative = negative
        self.positive = positive

    @classmethod
    def from_meta(cls, meta):
        labels = meta.get("labels") or {}
        return cls(labels.get("negative"), labels.get("positive"))

    @staticmethod
    def check_meta(saved):
        """A binary model's "labels" (``saved``: errors.SavedMeta): at most the two sides, each
        a finite number on its side of zero, or null."""
        labels = saved.get("labels", lambda v: v is None or isinstance(v, dict),
                           "the two label values", required=False) or {}
        unknown = sorted(set(labels) - {"negative", "positive"}, key=str)
        if unknown:
            raise saved.damaged(f"its binary labels hold {shown(unknown[0])}, expected only "
                                f"'negative' and 'positive'")
        for side, ok in (("negative", lambda v: v <= 0), ("positive", lambda v: v > 0)):
            value = labels.get(side)
            if value is not None and not (is_finite(value) and ok(value)):
                raise saved.damaged(f"its {side} label is {shown(value)}, expected a finite "
                                    f"number {'<= 0' if side == 'negative' else '> 0'} or null")

    def to_meta(self):
        return {"negative": self.negative, "positive": self.positive}

    def observe(self, chunk):
        """y in {+1, -1} for the chunk (NaN where a line has no label); learns the label values."""
        labels = chunk.labels
        y = np.empty(len(labels))
        if _signed_labels(labels, _or_nan(self.negative), _or_nan(self.positive), y):
            return y   # every label one of the two known values: the usual chunk, one pass
        labeled = labels[~np.isnan(labels)]
        values, first = np.unique(labeled, return_index=True)
        for value in values[np.argsort(first)]:   # in line order: an error names the first line
            self._add(float(value), chunk)
        return np.where(labels > 0, 1.0, np.where(np.isnan(labels), np.nan, -1.0))

    def _add(self, value, chunk):
        side = "positive" if value > 0 else "negative"
        known = getattr(self, side)
        if known is None:
            setattr(self, side, value)
            return
        if known == value:
            return
        line = int(chunk.line_numbers[np.argmax(chunk.labels == value)])
        where = f"{chunk.source}:{line}: label {label_text(value)}"
        if self.negative is None or self.positive is None:
            raise StreamherdError(
                f"{where} is {side} like the earlier label {label_text(known)}; binary labels are "
                f"+1/-1 or 1/0 (labels > 0 are the positive class): relabel the data")
        raise StreamherdError(
            f"{where} is a third label value after {label_text(self.negative)} and "
            f"{label_text(self.positive)}; binary learners take two labels (+1/-1 or 1/0): pass "
            f"--multiclass joint (or ova) to train a multiclass model")

    def text(self, positive):
        """The label text for the positive (True) or negative (False) class."""
        if positive:
            return label_text(self.positive if self.positive is not None else 1.0)
        if self.negative is not None:
            return label_text(self.negative)
        return "-1"


# ---------------------------------------------------------------- multiclass

_TEXT_TAG = np.uint64(0x9E3779B97F4A7C15)   # keeps a class name's key apart from a number's


@njit(cache=True, inline="always")
def _text_hash(block, start, end):
    """64-bit FNV-1a of block[start:end]."""
    h = np.uint64(14695981039346656037)
    for k in range(start, end):
        h = (h ^ np.uint64(block[k])) * np.uint64(1099511628211)
    return h


@njit(cache=True, inline="always")
def _token_key(block, start, end):
    """The key of the label token block[start:end] (label_keys)."""
    value, ok = parse_float(block, start, end)
    if ok:
        return bits_of_float(value + 0.0)   # + 0.0: -0 and 0 are one class
    return _text_hash(block, start, end) ^ _TEXT_TAG


@njit(cache=True, nogil=True)
def _label_keys(block, label_start, label_end, keys):
    """_token_key of each row's label (_TEXT_TAG for a row without one). One pass in numba, so
    mapping labels to classes costs a dict lookup per *distinct* key per chunk, not Python
    work per line."""
    for i in range(len(label_start)):
        start = label_start[i]
        keys[i] = _TEXT_TAG if start < 0 else _token_key(block, start, label_end[i])


@njit(cache=True, nogil=True)
def _known_class_ids(labels, block, label_start, label_end, sorted_keys, sorted_ids, cls):
    """cls[i]: the class id of row i's label, -1 for a row without one, when every label is a
    class's (``sorted_keys``, ascending, and their ids): returns True. False at the first label
    that is no class's yet; cls is then not to be used. A label's key is label_keys's, taken
    from the parser's value of it when that is finite (as chunk_label_keys)."""
    for i in range(len(cls)):
        start = label_start[i]
        if start < 0:
            cls[i] = -1
            continue
        key = bits_of_float(labels[i] + 0.0) if np.isfinite(labels[i]) else \
            _token_key(block, start, label_end[i])
        low, high = 0, len(sorted_keys)
        while low < high:   # the first key >= key
            middle = (low + high) // 2
            if sorted_keys[middle] < key:
                low = middle + 1
            else:
                high = middle
        if low == len(sorted_keys) or sorted_keys[low] != key:
            return False
        cls[i] = sorted_ids[low]
    return True


def label_keys(block, label_start, label_end):
    """uint64 key of each row's label: numbers by value (``1`` and ``1.0`` are one class), other
    tokens by their bytes (64-bit FNV-1a; two different names colliding is a 2^-64 event)."""
    keys = np.empty(len(label_start), np.uint64)
    _label_keys(block, label_start.astype(np.int64), label_end.astype(np.int64), keys)
    return keys


def chunk_label_keys(chunk, labeled):
    """label_keys of a chunk's rows (those ``labeled`` read): when every such label is a finite
    number, its value as label_keys keys a number, from the parser's reading of it (the same
    parse_float), without a kernel call on the learner's thread; else label_keys."""
    numbers = chunk.labels[labeled] + 0.0   # + 0.0: -0 and 0 are one class
    if not np.isfinite(numbers).all():   # a class name (NaN), or a number that is no class
        return label_keys(chunk.block, chunk.label_start, chunk.label_end)
    keys = np.zeros(chunk.n_examples, np.uint64)
    keys[labeled] = numbers.view(np.uint64)
    return keys


def _keys_of_texts(texts):
    encoded = [t.encode("utf-8") for t in texts]
    block = np.frombuffer(b"".join(encoded), np.uint8) if encoded else np.zeros(0, np.uint8)
    ends = np.cumsum([len(e) for e in encoded]).astype(np.int64)
    starts = ends - np.array([len(e) for e in encoded], np.int64)
    return label_keys(block, starts, ends).tolist()


_OUTSIDE = -2          # a label outside a fixed class set (or unseen, in predict)
_DAMAGED_NUMBER = -3   # a label that reads as a number but is not a finite one


class ClassLabels:
    """Class ids for multiclass streams: any integer or string label, ids in order of first
    appearance (or the order of a fixed set, ``--classes``), names kept as first written."""

    def __init__(self, classes=(), fixed=False):
        self.texts = []
        self.ids = {}
        self.fixed = fixed
        for text, key in zip(classes, _keys_of_texts(list(classes))):
            if key in self.ids:
                raise StreamherdError(f"--classes names class '{text}' twice (as "
                                      f"'{self.texts[self.ids[key]]}' and '{text}'); list each "
                                      f"class once")
            self.ids[key] = len(self.texts)
            self.texts.append(text)

    @classmethod
    def parse(cls, spec):
        """``--classes 1,2,3``."""
        names = [name.strip() for name in spec.split(",")]
        if not names or any(not name or any(c.isspace() for c in name) or ":" in name
                            for name in names):
            raise StreamherdError(f"--classes '{spec}' is not a comma-separated list of labels; "
                                  f"write it as --classes 1,2,3 or --classes sports,politics")
        return cls(names, fixed=True)

    @classmethod
    def from_meta(cls, meta):
        return cls(meta.get("classes", []), fixed=bool(meta.get("fixed_classes", False)))

    @classmethod
    def check_meta(cls, saved):
        """A multiclass model's "classes" and "fixed_classes" (``saved``: errors.SavedMeta):
        class names without blanks (what breaks a token in the data files) or a lone surrogate
        (no UTF-8 text holds one), each class once."""
        classes = saved.get("classes", lambda v: isinstance(v, list) and len(v) > 0,
                            "a list of class names")
        for text in classes:
            if not (isinstance(text, str) and text and not any(
                    c in " \t\r\n" or "\ud800" <= c <= "\udfff" for c in text)):
                raise saved.damaged(f"its class list holds {shown(text)}, expected a class name "
                                    f"(a non-empty text without blanks)")
        try:
            cls(classes)
        except StreamherdError:   # two names of one class (e.g. "1" and "1.0")
            raise saved.damaged(f"its class list names a class twice: {shown(classes)}") from None
        saved.get("fixed_classes", lambda v: isinstance(v, bool), "true or false", required=False)

    @classmethod
    def of_values(cls, values):
        """A fixed set of numeric classes, in the order given (as their label texts)."""
        return cls([label_text(value) for value in values], fixed=True)

    def to_meta(self):
        return {"classes": list(self.texts), "fixed_classes": self.fixed}

    def __len__(self):
        return len(self.texts)

    def observe(self, chunk, skip_bad=False, learning=True):
        """(chunk, class ids): -1 for an unlabeled row. New labels become classes (unless the set
        is fixed, or ``learning`` is False as in predict, where they get id -2: never right).
        A label outside a fixed set is a bad line: an error naming it, or with ``skip_bad``
        the row is dropped (and counted)."""
        cls = np.empty(chunk.n_examples, np.int64)
        sorted_keys, sorted_ids = self._sorted_keys()
        if _known_class_ids(chunk.labels, chunk.block, chunk.label_start, chunk.label_end,
                            sorted_keys, sorted_ids, cls):   # the usual chunk: one pass
            return chunk, cls
        labeled = chunk.label_start >= 0
        cls[:] = -1
        keys = chunk_label_keys(chunk, labeled)
        distinct, first, inverse = np.unique(keys[labeled], return_index=True,
                                             return_inverse=True)
        rows = np.flatnonzero(labeled)
        ids = np.empty(len(distinct), np.int64)
        for q in np.argsort(first, kind="stable"):   # new classes in order of appearance
            key = int(distinct[q])
            if key not in self.ids:
                token = chunk.label_token(rows[first[q]])
                if np.isnan(chunk.labels[rows[first[q]]]) and looks_like_number(token):
                    ids[q] = _DAMAGED_NUMBER
                    continue
                if self.fixed or not learning:
                    ids[q] = _OUTSIDE
                    continue
                self.ids[key] = len(self.texts)
                self.texts.append(token)
            ids[q] = self.ids[key]
        cls[rows] = ids[inverse.ravel()]
        if not learning:   # predict: a label no class has is a mistake, never predicted
            cls[cls == _DAMAGED_NUMBER] = _OUTSIDE
            return chunk, cls
        bad = (cls == _DAMAGED_NUMBER) | ((cls == _OUTSIDE) & self.fixed)
        if bad.any():
            if skip_bad:
                return chunk.select(~bad), cls[~bad]
            i = int(np.argmax(bad))
            where = f"{chunk.source}:{int(chunk.line_numbers[i])}: label '{chunk.label_token(i)}'"
            if cls[i] == _DAMAGED_NUMBER:
                raise StreamherdError(
                    f"{where} reads as a number but is not a finite one, so it is no class "
                    f"name; fix the line, or pass --skip-bad to skip such lines")
            raise StreamherdError(
                f"{where} is not one of --classes {','.join(self.texts)}; fix the line, add the "
                f"class to --classes, or pass --skip-bad to skip such lines")
        return chunk, cls

    def _sorted_keys(self):
        """(the classes' keys, ascending, and their ids), remade when a class joins."""
        if getattr(self, "_sorted", (None, None, -1))[2] != len(self.ids):
            order = sorted(self.ids)
            self._sorted = (np.array(order, np.uint64),
                            np.array([self.ids[key] for key in order], np.int64), len(self.ids))
        return self._sorted[:2]

    def value_ids(self, values):
        """(rows whose label value is a class, their class ids): in-memory numeric labels, keyed
        as label_keys keys a number (by value), one dict lookup per distinct value."""
        keys = (np.asarray(values, np.float64) + 0.0).view(np.uint64)   # + 0.0: -0 is 0
        distinct, inverse = np.unique(keys, return_inverse=True)
        ids = np.array([self.ids.get(int(key), _OUTSIDE) for key in distinct.tolist()],
                       np.int64)[inverse.ravel()]
        rows = np.flatnonzero(ids >= 0)
        return rows, ids[rows]

    def text(self, class_id):
        return self.texts[class_id] if 0 <= class_id < len(self.texts) else "?"

