"""The voted perceptron (Freund & Schapire 1999; Gelfand, Chen, van der Maaten & Welling 2010,
Sec. 2.1); joint multiclass as Collins (2002).

Training, y in {-1, +1}, importance s: k = 1, v_1 = 0, c_1 = 0; for each example, if
y (v_k . x) > 0 then c_k += s, else v_{k+1} = v_k + s y x, c_{k+1} = s, k += 1.
Prediction: the vote sum_i c_i sign(v_i . x); its sign is the label, and ``predict --raw``
prints it. Joint multiclass: an update on (x, y) with the best wrong class y' adds s x to block y
and -s x to block y'; snapshot i gives its c_i votes to its argmax class (ties: the earliest).

The update list, not k vectors: v_i . x = base . x + sum_{j<i} a_j (x_j . x), so a test row's
margins are one cumulative sum over the stored updates (G = S x over the stored rows S, a
sparse-sparse product through S's columns, the slots most stored rows have kept dense; blocks of
test rows against tiles of S, so a tile is read from cache by the whole block).

--max-support K keeps the K most recent updates, each snapshot they made voting on its own;
the older snapshots (all of them with K = 0) fold into one collective vote: their average
P / C_f, weighted by their total count C_f. With u_f = sum over folded updates j of
C_{<j} a_j x_j (C_{<j}: the total count before update j), P = C_f base - u_f, where base is the
newest folded snapshot; so folding an update is two sparse additions. K = 0 is the averaged
perceptron (an importance-weighted average: counts grow by s).

The progressive margin of training is the averaged margin (all snapshots: w - u / C with
u = sum_j C_{<j} a_j x_j, the averaged perceptron's bookkeeping): a vote per training example
would make training quadratic in the updates.
"""
import numpy as np
from numba import njit

from streamherd.errors import StreamherdError, notice
from streamherd.learners.base import Learner
from streamherd.learners.kernels.multiclass import (best_class, class_scores, joint_prepare,
                                                    scores_finite, visible_classes)
from streamherd.learners.kernels.sparse import dot, finite

# the stored update list, saved as arrays of their own lengths (Learner.list_lengths): the
# rows (CSR, slots of one class block), a_j (binary: s y; joint: s), the count of the snapshot
# each made, the class the update raised and the one it lowered (binary: 0 and -1), and the
# total count C and the folded count C_f
SUPPORT = ("support_indptr", "support_indices", "support_values", "support_coefficients",
           "support_counts", "support_labels", "support_rivals", "vote_totals")
_TOTAL, _FOLDED = 0, 1
_FIRST, _END = 0, 1
_folding_said = []


@njit(cache=True, inline="always")
def _sign(m):
    return 1.0 if m > 0.0 else (-1.0 if m < 0.0 else 0.0)


@njit(cache=True, inline="always")
def _add_update(w, u, total, indices, values, start, end, a):
    """w += a x and u += C a x (C: the total count before this update); whether every entry
    written is finite."""
    ok = True
    for k in range(start, end):
        j = indices[k]
        w[j] += a * values[k]
        u[j] += total * a * values[k]
        ok = ok and np.isfinite(w[j]) and np.isfinite(u[j])
    return ok


@njit(cache=True, inline="always")
def _remember(support, bounds, indices, values, start, end, a, s, label, rival):
    """Append the update (row, a, its snapshot's count s, the classes it raised and lowered)."""
    indptr, row_indices, row_values, coefficients, counts, labels, rivals = support
    j = bounds[_END]
    p = indptr[j]
    for k in range(start, end):
        row_indices[p + k - start] = indices[k]
        row_values[p + k - start] = values[k]
    indptr[j + 1] = p + end - start
    coefficients[j] = a
    counts[j] = s
    labels[j] = label
    rivals[j] = rival
    bounds[_END] = j + 1


@njit(cache=True, inline="always")
def _vote(support, bounds, tallies, s):
    """A correct example: the newest snapshot's count grows by s (the collective one's when no
    update is stored)."""
    if bounds[_END] > bounds[_FIRST]:
        support[4][bounds[_END] - 1] += s
    else:
        tallies[_FOLDED] += s


@njit(cache=True, inline="always")
def _fold_beyond(limit, D, base, folded, support, bounds, tallies):
    """Fold the oldest updates into base and u_f until at most ``limit`` are stored; whether
    every entry written is finite."""
    indptr, row_indices, row_values, coefficients, counts, labels, rivals = support
    ok = True
    while bounds[_END] - bounds[_FIRST] > limit:
        j = bounds[_FIRST]
        a = coefficients[j]
        for block, sign in ((labels[j], 1.0), (rivals[j], -1.0)):
            if block < 0:
                continue
            for k in range(indptr[j], indptr[j + 1]):
                slot = block * D + row_indices[k]
                base[slot] += sign * a * row_values[k]
                folded[slot] += tallies[_FOLDED] * sign * a * row_values[k]
                ok = ok and np.isfinite(base[slot]) and np.isfinite(folded[slot])
        tallies[_FOLDED] += counts[j]
        bounds[_FIRST] = j + 1
    return ok


@njit(cache=True, nogil=True, error_model="numpy")
def _voted_chunk(y, importance, indptr, indices, values, w, u, base, folded, support, bounds,
                 tallies, limit, margins_out):
    """Predict (the averaged margin) then learn, over one chunk; returns (updates, index of a
    bad example or -1)."""
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        wx = dot(w, indices, values, start, end)
        total = tallies[_TOTAL]
        margins_out[i] = wx - dot(u, indices, values, start, end) / total if total > 0 else 0.0
        if not finite(wx, margins_out[i]):
            return updates, i
        s = importance[i]
        if np.isnan(y[i]) or s <= 0.0:
            continue
        if y[i] * wx > 0.0:
            _vote(support, bounds, tallies, s)
        else:
            a = s * y[i]
            ok = _add_update(w, u, total, indices, values, start, end, a)
            _remember(support, bounds, indices, values, start, end, a, s, 0, -1)
            updates += 1
            ok = _fold_beyond(limit, 0, base, folded, support, bounds, tallies) and ok
            if not ok:
                return updates, i
        tallies[_TOTAL] += s
    return updates, -1


@njit(cache=True, nogil=True, error_model="numpy")
def _voted_joint(cls, importance, indptr, indices, values, w, u, base, folded, support, bounds,
                 tallies, limit, D, known, predicted_out, work):
    """The joint form of _voted_chunk: the averaged class scores predict, w's pick the rival;
    returns (updates, index of a bad example or -1, known)."""
    updates = 0
    scores = work[0]
    average = np.zeros(len(scores))
    in_blocks = (D, 1)   # its update list and sums are over class blocks (multiclass.slot_of)
    for i in range(len(cls)):
        start, end = indptr[i], indptr[i + 1]
        visible = visible_classes(known, cls[i])
        class_scores(u, in_blocks, visible, indices, values, start, end, average)
        class_scores(w, in_blocks, visible, indices, values, start, end, scores)
        if not scores_finite(scores, visible):   # w's: they choose the rival
            return updates, i, known
        total = tallies[_TOTAL]
        for z in range(visible):
            average[z] = scores[z] - average[z] / total if total > 0 else 0.0
        predicted_out[i], known, n = joint_prepare(average, known, cls, importance, indices,
                                                   values, start, end, in_blocks, i, work)
        if n < 0:
            return updates, i, known
        s = importance[i]
        if cls[i] < 0 or s <= 0.0:
            continue
        m = dot(w, work[1], work[2], 0, n) if n > 0 else 1.0   # one class yet: nothing to learn
        if not finite(m):
            return updates, i, known
        if m > 0.0:
            _vote(support, bounds, tallies, s)
        else:
            ok = _add_update(w, u, total, work[1], work[2], 0, n, s)
            _remember(support, bounds, indices, values, start, end, s, s, cls[i],
                      best_class(scores, known, cls[i]))
            updates += 1
            ok = _fold_beyond(limit, D, base, folded, support, bounds, tallies) and ok
            if not ok:
                return updates, i, known
        tallies[_TOTAL] += s
    return updates, -1, known


# Prediction works on blocks of test rows against tiles of the update list, so that a tile's
# stored rows are read from cache by every row of the block (row by row over the whole list,
# each test row streamed the list's columns from memory: ~7 entries per update on a9a).
ROWS_PER_BLOCK = 64
TILE = 2048            # updates per tile: a test row's overlaps with them (16 KiB) stay in L1
DENSE_SHARE = 0.25     # a slot in at least this share of the stored rows is kept as a dense column
LANES = 4              # rows whose votes are summed side by side (independent chains)
DENSE_BYTES = 64 << 20  # at most this much for those dense columns (the bound on G)


@njit(cache=True)
def _add_scaled(G, column, x):
    """G += x column (a call of its own: LLVM vectorises it there, not inlined)."""
    for t in range(len(column)):
        G[t] += column[t] * x


@njit(cache=True, inline="always")
def _tile_overlaps(stored, indices, values, start, end, cursor, j0, j1, G):
    """G[t] = x_{j0+t} . x for the stored rows j0 <= j < j1 and the row x (entries start..end).
    Each G[t] is summed in the row's entry order whatever the tiling, so it is the same number
    bit for bit (a dense column adds exact zeros where a stored row lacks the slot: a zero's
    sign is all that can change, and sign(0) = 0 either way). cursor[k]: where the column of
    entry k continues (its stored rows before j0 are done)."""
    column_indptr, column_rows, column_values, dense_of, dense = stored
    for t in range(j1 - j0):
        G[t] = 0.0
    for k in range(start, end):
        f = indices[k]
        x = values[k]
        d = dense_of[f]
        if d >= 0:
            _add_scaled(G, dense[d, j0:j1], x)
        else:
            p = cursor[k]
            stop = column_indptr[f + 1]
            while p < stop and column_rows[p] < j1:
                G[column_rows[p] - j0] += column_values[p] * x
                p += 1
            cursor[k] = p


@njit(cache=True, inline="always")
def _cursors(indices, column_indptr):
    """Each entry's column start (_tile_overlaps' cursor before the first tile)."""
    cursor = np.empty(len(indices), np.int64)
    for k in range(len(indices)):
        cursor[k] = column_indptr[indices[k]]
    return cursor


@njit(cache=True, nogil=True)
def _vote_margins(indptr, indices, values, base, prefix_average, prefix_count, stored,
                  coefficients, counts, blocking, out):
    """out[r] = the vote sum of row r: C_f sign(prefix average . x) + sum_j c_j sign(v_j . x),
    with v_j . x = base . x + sum_{i<j} a_i G[i], summed in j order tile after tile."""
    n = len(indptr) - 1
    rows_per_block, tile = blocking
    G = np.empty((LANES, tile))
    margin = np.empty(rows_per_block)
    cursor = _cursors(indices, stored[0])
    for first in range(0, n, rows_per_block):
        last = min(first + rows_per_block, n)
        for r in range(first, last):
            start, end = indptr[r], indptr[r + 1]
            out[r] = 0.0
            if prefix_count > 0.0:
                out[r] = prefix_count * _sign(dot(prefix_average, indices, values, start, end))
            margin[r - first] = dot(base, indices, values, start, end)
        for j0 in range(0, len(coefficients), tile):
            j1 = min(j0 + tile, len(coefficients))
            for r in range(first, last, LANES):
                lanes = min(LANES, last - r)
                for q in range(lanes):
                    _tile_overlaps(stored, indices, values, indptr[r + q], indptr[r + q + 1],
                                   cursor, j0, j1, G[q])
                _add_votes(G, lanes, coefficients, counts, j0, j1, margin[r - first:],
                           out[r:])


@njit(cache=True, inline="always")
def _add_votes(G, lanes, coefficients, counts, j0, j1, margin, vote):
    """The snapshots j0 <= j < j1 vote on ``lanes`` rows at once (G[q]: row q's overlaps): each
    row's margin and vote summed in j order, the rows' independent sums interleaved so the CPU
    overlaps them."""
    if lanes == LANES:
        m = margin[:LANES].copy()
        v = vote[:LANES].copy()
        for t in range(j1 - j0):
            a, c = coefficients[j0 + t], counts[j0 + t]
            for q in range(LANES):
                m[q] += a * G[q, t]
                v[q] += c * _sign(m[q])
        margin[:LANES] = m
        vote[:LANES] = v
        return
    for q in range(lanes):
        m, v = margin[q], vote[q]
        for t in range(j1 - j0):
            m += coefficients[j0 + t] * G[q, t]
            v += counts[j0 + t] * _sign(m)
        margin[q], vote[q] = m, v


@njit(cache=True, nogil=True)
def _vote_classes(indptr, indices, values, base, prefix_average, prefix_count, D, K, stored,
                  coefficients, counts, labels, rivals, blocking, out):
    """out[r, z] = the votes class z gets for row r: the collective vote's C_f and each stored
    snapshot's c_j, each to the argmax of its class scores (tiled as _vote_margins)."""
    n = len(indptr) - 1
    in_blocks = (D, 1)   # the class blocks of multiclass.slot_of
    rows_per_block, tile = blocking
    G = np.empty(tile)
    scores = np.zeros((rows_per_block, max(K, 1)))
    cursor = _cursors(indices, stored[0])
    for first in range(0, n, rows_per_block):
        last = min(first + rows_per_block, n)
        for r in range(first, last):
            start, end = indptr[r], indptr[r + 1]
            out[r, :] = 0.0
            row_scores = scores[r - first]
            if prefix_count > 0.0:
                class_scores(prefix_average, in_blocks, K, indices, values, start, end,
                             row_scores)
                out[r, best_class(row_scores, K, -1)] += prefix_count
            class_scores(base, in_blocks, K, indices, values, start, end, row_scores)
        for j0 in range(0, len(coefficients), tile):
            j1 = min(j0 + tile, len(coefficients))
            for r in range(first, last):
                _tile_overlaps(stored, indices, values, indptr[r], indptr[r + 1], cursor, j0,
                               j1, G)
                row_scores = scores[r - first]
                for t in range(j1 - j0):
                    j = j0 + t
                    g = coefficients[j] * G[t]
                    row_scores[labels[j]] += g
                    row_scores[rivals[j]] -= g
                    out[r, best_class(row_scores, K, -1)] += counts[j]


def _stored_columns(indptr, indices, values, dim, dense_share=DENSE_SHARE):
    """The stored rows by column, as _tile_overlaps reads them: (column indptr, row of each
    entry, value) of the slots few stored rows have, ``dense_of`` (each slot's row in ``dense``,
    else -1) and ``dense``, the slots in at least DENSE_SHARE of the stored rows (the bias: all)
    as full columns (``dense_share``: DENSE_SHARE), added in one contiguous run instead of entry by
    entry. A slot twice in one
    stored row stays sparse (its two entries are added one after the other)."""
    n = len(indptr) - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    frequency = np.bincount(indices, minlength=dim)
    keys, times = np.unique(rows * dim + indices, return_counts=True)
    frequency[keys[times > 1] % dim] = 0
    room = DENSE_BYTES // (8 * n) if n else 0
    wide = np.flatnonzero(frequency >= max(dense_share * n, 1))
    wide = wide[np.argsort(-frequency[wide], kind="stable")][:room]
    dense_of = np.full(dim, -1, np.int32)
    dense_of[wide] = np.arange(len(wide))
    in_dense = dense_of[indices] >= 0
    dense = np.zeros((len(wide), n))
    dense[dense_of[indices[in_dense]], rows[in_dense]] = values[in_dense]
    sparse = ~in_dense
    order = np.argsort(indices[sparse], kind="stable")
    column_indptr = np.zeros(dim + 1, np.int64)
    np.cumsum(np.bincount(indices[sparse], minlength=dim), out=column_indptr[1:])
    return (column_indptr, rows[sparse][order], values[sparse][order], dense_of, dense)


class VotedPerceptron(Learner):
    # prediction's (test rows per block, updates per tile) and dense share; tests make them
    # small, to check that blocks, tiles and dense columns give the same votes
    blocking = (ROWS_PER_BLOCK, TILE)
    dense_share = DENSE_SHARE
    state_arrays = ("weighted_updates", "base", "folded_updates")
    meta_scalars = ("support", "support_nonzeros")
    live_arrays = ("mean", "weighted_updates", "base", "folded_updates")
    interleaved = ("mean", "weighted_updates")

    @classmethod
    def saved_arrays(cls, covariance):
        return ("mean", *cls.state_arrays, *SUPPORT)

    def init_state(self):
        self.new_interleaved()
        self.base = np.zeros(self.size)
        self.folded_updates = np.zeros(self.size)
        self._set_support(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                          np.zeros(0), np.zeros(0), np.zeros(0, np.int64),
                          np.zeros(0, np.int64), np.zeros(2))
        self._check_limit()

    def _check_limit(self):
        limit = self.options["max_support"]
        if not float(limit).is_integer():
            raise StreamherdError(f"{self.name}: --max-support (the most updates kept) must be "
                                  f"a whole number, got {limit:g}")
        self.limit = int(min(limit, 2 ** 62))   # beyond any count of updates: never folds

    def _set_support(self, indptr, indices, values, coefficients, counts, labels, rivals,
                     totals):
        self.support = (indptr, indices, values, coefficients, counts, labels, rivals)
        self.bounds = np.array([0, len(coefficients)], np.int64)
        self.tallies = np.array(totals, np.float64)
        self._prediction = None

    def load_state(self, state, learner_meta):
        self.weighted_updates = state["weighted_updates"]
        self.base, self.folded_updates = state["base"], state["folded_updates"]
        integer = np.int64
        self._set_support(*(np.asarray(state[name], dtype)
                            for name, dtype in zip(SUPPORT, (integer, integer, float, float,
                                                             float, integer, integer, float))))
        self._check_limit()

    @classmethod
    def list_lengths(cls, metas):
        stored = sum(meta["support"] for meta in metas)
        nonzeros = sum(meta["support_nonzeros"] for meta in metas)
        lengths = (stored + len(metas), nonzeros, nonzeros, stored, stored, stored, stored,
                   2 * len(metas))
        return dict(zip(SUPPORT, lengths))

    @classmethod
    def check_saved(cls, arrays, metas, dim, classes):
        """What is wrong with a saved update list (one model per entry of ``metas``), or None."""
        rest = {name: arrays[name] for name in SUPPORT}
        for meta in metas:
            own = {name: rest[name][:length]
                   for name, length in cls.list_lengths([meta]).items()}
            rest = {name: rest[name][len(own[name]):] for name in SUPPORT}
            wrong = _list_fault(own, dim, classes)
            if wrong:
                return wrong
        return None

    def state(self):
        first, end = self.bounds
        indptr = self.support[0]
        rows = {"support_indptr": indptr[first:end + 1] - indptr[first],
                "support_indices": self.support[1][indptr[first]:indptr[end]],
                "support_values": self.support[2][indptr[first]:indptr[end]]}
        for name, array in zip(SUPPORT[3:7], self.support[3:]):
            rows[name] = array[first:end]
        return {"mean": self.mean, "weighted_updates": self.weighted_updates, "base": self.base,
                "folded_updates": self.folded_updates, **rows, "vote_totals": self.tallies}

    def meta(self):
        first, end = self.bounds
        return {"support": int(end - first),
                "support_nonzeros": int(self.support[0][end] - self.support[0][first])}

    # ------------------------------------------------------------ learning

    def _room(self, rows, nonzeros):
        """Room in the update list for ``rows`` more updates of ``nonzeros`` entries after the
        stored ones. When the arrays' end is reached, the kept updates move to the front of new
        arrays at least twice what they then need, so each stored update is moved O(1) times
        on average while at most K are kept."""
        first, end = (int(b) for b in self.bounds)
        indptr = self.support[0]
        low, high = int(indptr[first]), int(indptr[end])
        if len(self.support[3]) >= end + rows and len(self.support[1]) >= high + nonzeros:
            return
        capacity = max(2 * (end - first + rows), len(self.support[3]))
        values_capacity = max(2 * (high - low + nonzeros), len(self.support[1]))
        moved = [np.zeros(capacity + 1, np.int64)]
        moved[0][:end - first + 1] = indptr[first:end + 1] - low
        for array in self.support[1:3]:
            grown = np.zeros(values_capacity, array.dtype)
            grown[:high - low] = array[low:high]
            moved.append(grown)
        for array in self.support[3:]:
            grown = np.zeros(capacity, array.dtype)
            grown[:end - first] = array[first:end]
            moved.append(grown)
        self.support = tuple(moved)
        self.bounds[:] = (0, end - first)

    def _before_learning(self, indptr):
        self._room(len(indptr) - 1, int(indptr[-1] - indptr[0]))
        self._prediction = None
        self._stored_before = int(self.bounds[_FIRST])

    def _after_learning(self):
        """Say once, on stderr, when a run starts folding updates (K > 0); nothing with
        --quiet."""
        if self.limit > 0 and self.bounds[_FIRST] > self._stored_before and not _folding_said:
            _folding_said.append(True)
            notice(f"streamherd: {self.name}: more than --max-support {self.limit} updates: the "
                f"oldest now fold into one collective vote (their averaged weights)")

    def learn(self, y, importance, indptr, indices, values, margins_out):
        self._before_learning(indptr)
        updates, bad = _voted_chunk(y, importance, indptr, indices, values, self.mean,
                                    self.weighted_updates, self.base, self.folded_updates,
                                    self.support, self.bounds, self.tallies, self.limit,
                                    margins_out)
        self._after_learning()
        return self.checked(updates, bad)

    def scores_while_learning(self):
        return False   # (its joint kernel is its own, and reads none)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        self._before_learning(indptr)
        updates, bad, known = _voted_joint(
            cls, importance, indptr, indices, values, self.mean, self.weighted_updates,
            self.base, self.folded_updates, self.support, self.bounds, self.tallies,
            self.limit, self.dim, known, predicted_out, work)
        self._after_learning()
        return updates, bad, known

    def grow(self, blocks):
        super().grow(blocks)
        self._prediction = None

    # ------------------------------------------------------------ prediction

    def _prepared(self):
        """(prefix average, the stored rows by column (_stored_columns), their coefficients,
        counts, labels, rivals), kept until the next update."""
        cached = self._prediction
        if cached is not None and len(cached[0]) == self.size:
            return cached
        first, end = (int(b) for b in self.bounds)
        indptr = self.support[0][first:end + 1]
        low, high = int(indptr[0]), int(indptr[-1])
        folded = self.tallies[_FOLDED]
        average = self.base - self.folded_updates / folded if folded > 0 else self.base.copy()
        columns = _stored_columns(indptr - low, self.support[1][low:high],
                                  self.support[2][low:high], self.dim, self.dense_share)
        self._prediction = (average, columns,
                            *(np.ascontiguousarray(array[first:end])
                              for array in self.support[3:]))
        return self._prediction

    def predict_margins(self, indptr, indices, values, out):
        average, columns, coefficients, counts, _, _ = self._prepared()
        _vote_margins(indptr, indices, values, self.base, average, self.tallies[_FOLDED],
                      columns, coefficients, counts, np.array(self.blocking, np.int64), out)

    def class_scores(self, indptr, indices, values, out):
        average, columns, coefficients, counts, labels, rivals = self._prepared()
        _vote_classes(indptr, indices, values, self.base, average, self.tallies[_FOLDED],
                      self.dim, self.blocks, columns, coefficients, counts, labels, rivals,
                      np.array(self.blocking, np.int64), out)


def _list_fault(arrays, dim, classes):
    """What is wrong with one model's saved update list (float64 arrays), or None."""
    for name in ("support_indptr", "support_indices", "support_labels", "support_rivals"):
        if not np.array_equal(arrays[name], np.round(arrays[name])):
            return f"its '{name}' holds a number that is not whole"
    indptr, indices = arrays["support_indptr"], arrays["support_indices"]
    labels, rivals = arrays["support_labels"], arrays["support_rivals"]
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices):
        return "its 'support_indptr' is not the row offsets of 'support_indices'"
    if np.any(indices < 0) or np.any(indices >= dim):
        return f"its 'support_indices' holds a slot out of range (0 to {dim - 1})"
    joint = classes > 1   # a binary model's updates raise block 0 and lower none
    if np.any(labels < 0) or np.any(labels >= classes) or np.any(rivals >= classes) \
            or np.any(rivals == labels) or np.any(rivals < 0 if joint else rivals != -1):
        return "its 'support_labels' or 'support_rivals' name a class the model has not"
    if np.any(arrays["support_counts"] < 0) or np.any(arrays["vote_totals"] < 0):
        return "its 'support_counts' or 'vote_totals' hold a negative count"
    return None
