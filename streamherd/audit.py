"""The audit: the names of the features, read from the input files again and printed as VW's
``--audit`` prints them, for ``inspect --names`` (inspection.py), ``train --audit`` and
``predict --audit`` (training.py).

The parse kernels note where each feature's name is (features/names.py) when their space is
given a naming; this module reads the files for it, in blocks of whole lines, and spells the
names. A name ends where the lexers end it: at a blank, ':', '|' or the line's end; a VW audit's
name is ``namespace^name`` (``name`` in the default namespace), a cross's its members' joined by
``*``, the bias's ``Constant``.
"""
import dataclasses
import re

import numpy as np
from numba import njit

from streamherd.features.names import BIAS, CONSTANT, LINE_FEATURE, UNREAD, new_naming
from streamherd.io.block import SVMLIGHT, VW, count_newlines, end_of_last_line, parse_block
from streamherd.io.csr import allocate_outputs
from streamherd.io.reader import detect_format
from streamherd.io.sources import Source

# ------------------------------------------------------------ the names of a model's slots

_NAME = re.compile(rb"[^ \t\n\r|:]*")
BLOCK_SIZE = 8 << 20


def feature_names(paths, space, fmt="auto", wanted=None):
    """The names of the features of ``paths`` read with the FeatureSpace ``space`` (a model's:
    its bits, crosses, kept namespaces and hash mode), as VW's audit spells them: {slot:
    [names, sorted]}; only of the slots where ``wanted`` (a bool array over the slots, when
    given) is set. Malformed lines are skipped: their names are not the model's features."""
    names = _Names(space, wanted)
    merge_table = space.new_merge_table()
    for path in paths:
        for buf, n, fmt_code in _blocks(path, fmt):
            names.add_block(buf, n, fmt_code, merge_table)
    return names.by_slot()


def _format_code(fmt, buf):
    """The parse kernel's format (io/block.py) of ``fmt``, or of the lines in ``buf`` (auto)."""
    name = fmt if fmt != "auto" else detect_format(buf[:1 << 16].tobytes())
    return VW if name == "vw" else SVMLIGHT


def _blocks(path, fmt):
    """(buffer, length, format code) of each block of whole lines of one input."""
    source = Source(path).open()
    try:
        buf = np.empty(BLOCK_SIZE, np.uint8)
        kept, code = 0, None
        while True:
            if kept == len(buf):   # a line longer than the buffer
                buf = np.concatenate([buf, np.empty(len(buf), np.uint8)])
            got = source.read_into(memoryview(buf)[kept:])
            n = kept + got
            if code is None:
                code = _format_code(fmt, buf[:n])
            if got == 0:
                if n:
                    yield buf, n, code
                return
            complete = end_of_last_line(buf, n)
            if complete:
                yield buf, complete, code
            kept = n - complete
            buf[:kept] = buf[complete:n].copy()
    finally:
        source.close()


class _Names:
    """The names found so far: each distinct feature of a line (namespace seed, key) once, and
    the slots named by each name of a line or of a cross."""

    def __init__(self, space, wanted):
        self.space = space
        self.wanted = wanted
        self.ids = {}        # (seed, key, name length) -> index in texts
        self.texts = []
        self.slots = {}      # slot -> set of names

    def parse(self, buf, n, fmt_code, merge_table, skip_bad=True):
        """Parse the lines of ``buf[:n]`` in names mode: (indptr, slots, values, kind, ids,
        members) of its features as written (unmerged), ``kind`` their members[:, 0] and
        ``ids`` their names' index in texts (features of a line)."""
        space = self.space
        outputs = allocate_outputs(n, count_newlines(buf, n), space,
                                   space.max_crossed_features(buf[:n]))
        naming = new_naming(len(outputs[4]), space.cross_width)
        rows, nnz = parse_block(buf, n, fmt_code, space.kernel_params(naming), skip_bad, 1,
                                outputs, merge_table)[:2]
        slots = outputs[4][:nnz].astype(np.int64)
        records, members = naming[0][:nnz], naming[1][:nnz]
        kind = members[:, 0]
        # an --ignore_linear feature (UNREAD) is no feature itself, but a cross's member: it
        # needs its name's id as a line's feature does (a cross read ids[member] of -1, and
        # took the name of another feature)
        ids = self._line_feature_ids(buf, slots, records, kind == LINE_FEATURE,
                                     kind == UNREAD)
        return outputs[3][:rows + 1], slots, outputs[5][:nnz], kind, ids, members

    def add_block(self, buf, n, fmt_code, merge_table):
        _, slots, _, kind, ids, members = self.parse(buf, n, fmt_code, merge_table)
        crossed = kind >= 0
        if self.space.bias and (kind == BIAS).any():
            self._name(np.array([self.space.bias_slot]), [CONSTANT])
        if crossed.any():
            self._name_crosses(slots[crossed], members[crossed], ids)

    def _line_feature_ids(self, buf, slots, records, line, unread):
        """The index in texts of each position's feature of a line, read (``line``: its slot
        named) or only crossed (``unread``: --ignore_linear's), -1 elsewhere."""
        ids = np.full(len(slots), -1, np.int64)
        where = np.flatnonzero(line | unread)
        if not len(where):
            return ids
        # a feature is its namespace's seed, its key and its name's length: "03" and "3" are
        # two names of one key
        identities = np.column_stack([records[where][:, 2:4],
                                      _name_lengths(buf, records[where][:, 1])])
        pairs, first, inverse = np.unique(identities, axis=0, return_index=True,
                                          return_inverse=True)
        raw = buf.tobytes()
        known = np.empty(len(pairs), np.int64)
        for u, identity in enumerate(map(tuple, pairs.tolist())):
            known[u] = self.ids.get(identity, -1)
            if known[u] < 0:
                ns_start, name_start = records[where[first[u]], :2]
                known[u] = self.ids[identity] = len(self.texts)
                self.texts.append(_audit_name(raw, ns_start, name_start))
        ids[where] = known[inverse.reshape(-1)]
        named = line[where[first]]   # (a feature is read or unread by its namespace alone)
        self._name(slots[where[first][named]], [self.texts[i] for i in known[named]])
        return ids

    def position_names(self, kind, ids, members):
        """The name of the feature at each position (None: not a feature, --ignore_linear)."""
        texts = self.texts
        names = [None] * len(kind)
        for k, (what, name_id, terms) in enumerate(zip(kind.tolist(), ids.tolist(),
                                                       members.tolist())):
            if what == LINE_FEATURE:
                names[k] = texts[name_id]
            elif what == BIAS:
                names[k] = CONSTANT
            elif what >= 0:
                names[k] = "*".join(texts[ids[m]] for m in terms if m >= 0)
        return names

    def _name_crosses(self, slots, members, ids):
        """Name the crosses (their members' positions in ``members``, -1 padded) by their
        members' names joined by '*'."""
        terms = np.where(members >= 0, ids[np.maximum(members, 0)], -1)
        if self.wanted is not None:
            keep = self.wanted[slots]
            slots, terms = slots[keep], terms[keep]
        distinct = np.unique(np.column_stack([slots, terms]), axis=0)
        self._name(distinct[:, 0], ["*".join(self.texts[i] for i in row if i >= 0)
                                    for row in distinct[:, 1:].tolist()])

    def _name(self, slots, texts):
        for slot, text in zip(slots.tolist(), texts):
            if self.wanted is None or self.wanted[slot]:
                self.slots.setdefault(slot, set()).add(text)

    def by_slot(self):
        return {slot: sorted(texts) for slot, texts in self.slots.items()}


@njit(cache=True, nogil=True)
def _name_lengths(buf, starts):
    """The length of each name starting at ``starts``: up to a blank, ':', '|' or a line end
    (_NAME)."""
    lengths = np.empty(len(starts), np.int64)
    for k in range(len(starts)):
        p = starts[k]
        while p < len(buf) and not (buf[p] == 32 or buf[p] == 9 or buf[p] == 10
                                    or buf[p] == 13 or buf[p] == 124 or buf[p] == 58):
            p += 1
        lengths[k] = p - starts[k]
    return lengths


def _audit_name(raw, ns_start, name_start):
    """A feature's name as VW's audit prints it: ``namespace^name``, or ``name`` in the
    default namespace."""
    name = _NAME.match(raw, name_start).group().decode("utf-8", "replace")
    if ns_start < 0:
        return name
    return _NAME.match(raw, ns_start).group().decode("utf-8", "replace") + "^" + name


# ------------------------------------------------------------------------- --audit

class AuditedFeatures:
    """The features of each example of a chunk as VW's audit names them: example r's are
    positions ``indptr[r]:indptr[r + 1]`` of ``names``, ``slots`` and ``values`` (as written,
    before --normalize). The chunk's block is parsed once more, in names mode, so that a run
    without --audit pays nothing for it."""

    def __init__(self, chunk, space, fmt="auto", skip_bad=False):
        names = _Names(space, None)
        buf = np.ascontiguousarray(chunk.block)
        indptr, slots, values, kind, ids, members = names.parse(
            buf, len(buf), _format_code(fmt, buf), space.new_merge_table(), skip_bad)
        assert len(indptr) == chunk.n_examples + 1, "the audit's parse differs from the reader's"
        texts = names.position_names(kind, ids, members)
        named = np.array([text is not None for text in texts], bool)
        self.names = [text for text in texts if text is not None]
        self.slots, self.values = slots[named], values[named]
        self.indptr = np.concatenate([[0], np.cumsum(named)])[indptr]

    def of_example(self, row):
        """(names, slots, values) of example ``row``."""
        start, end = self.indptr[row], self.indptr[row + 1]
        return self.names[start:end], self.slots[start:end], self.values[start:end]

    def lines(self, row, class_weights, heads=("",)):
        """Example ``row``'s audit: for each class (a row of ``class_weights``, the weights at
        every slot of the model's block; one row for a binary or regression model), a line of
        its head, then a tab before each feature's ``name:slot:value:weight``."""
        names, slots, values = self.of_example(row)
        return "\n".join(audit_line(head, names, slots, values, weights[slots])
                         for head, weights in zip(heads, class_weights))


def audit_line(head, names, slots, values, weights):
    """``head``, then VW's ``\tname:slot:value:weight`` of each feature."""
    return head + "".join(f"\t{name}:{slot}:{_number(value)}:{_number(weight)}"
                          for name, slot, value, weight in zip(
                              names, slots.tolist(), values.tolist(), weights.tolist()))


def class_heads(class_texts, scores):
    """The head of each class's audit line of a multiclass model: ``class:score``."""
    return [f"{text}:{score:.6f}" for text, score in zip(class_texts, scores.tolist())]


def _number(value):
    """A value or weight as few digits as read back the same (1 for 1.0, as VW prints it)."""
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


class LearningAudit:
    """train --audit: each example's prediction line, then its audit, the weights those the
    prediction read (before the example's update). Examples are learned one at a time (a
    Python loop per example: it prints text per feature anyway); a run without --audit never
    comes here."""

    def __init__(self, sink, space, fmt="auto", skip_bad=False):
        self.sink, self.space, self.fmt, self.skip_bad = sink, space, fmt, skip_bad
        self._example = None    # (names, slots, values) of the example being learned
        self._before = None     # (weights at its slots, scores) per class, before its update

    def one_by_one(self, chunks, settle):
        """The chunks' examples, each as a chunk of its own (the chunk's skipped lines counted
        with its first); ``settle(chunk)``: the task is chosen from the whole chunk first."""
        for chunk in chunks:
            settle(chunk)
            features = AuditedFeatures(chunk, self.space, self.fmt, self.skip_bad)
            for row in range(chunk.n_examples):
                example = chunk.take([row])
                if row:
                    example = dataclasses.replace(example, bad_lines=0,
                                                  bad_line_numbers=np.zeros(0, np.int64))
                self._example = features.of_example(row)
                yield example

    def before(self, learner, example):
        """Notes the weights ``learner`` holds for the example (a chunk of one) and each
        class's score, before it learns from it."""
        slots = self._example[1]
        at_row = class_weights_at(learner, example.indices)
        self._before = (class_weights_at(learner, slots),
                        at_row @ example.values)

    def write(self, prediction_line, class_texts=None):
        """The example's prediction line and audit; ``class_texts`` (multiclass): every class's
        (those new with this example weighed 0 before it)."""
        names, slots, values = self._example
        weights, scores = self._before
        if class_texts is None:
            lines = [audit_line("", names, slots, values, weights[0])]
        else:
            new = len(class_texts) - len(weights)
            weights = np.vstack([weights, np.zeros((new, len(slots)))])
            scores = np.concatenate([scores, np.zeros(new)])
            lines = [audit_line(head, names, slots, values, w)
                     for head, w in zip(class_heads(class_texts, scores), weights)]
        self.sink.write("\n".join([prediction_line, *lines]) + "\n")


def class_weights_at(learner, slots):
    """The weights (the ``mean`` the updates move) of every class block at ``slots``, one row
    per class: a one-versus-all stack's per learner, else class k's where the learner's
    layout puts it (kernels/multiclass.py)."""
    if hasattr(learner, "learners"):
        return np.array([one.mean[slots] for one in learner.learners]).reshape(-1, len(slots))
    class_stride, feature_stride = learner.layout
    return learner.mean[np.add.outer(np.arange(learner.blocks) * class_stride,
                                     np.asarray(slots) * feature_stride)]
