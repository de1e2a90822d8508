"""In-memory matrices into chunks: the rows of a scipy CSR matrix (the Python API's X) as the
Chunks every task and learner takes, over a FeatureSpace's slots.

Column j is slot j + 1 (modulo 2^bits), as load_svmlight/load_vw read files (svmlight index j + 1
is column j), so a matrix row and the file line it came from make the same Chunk row. One numba
kernel fills reused buffers: the rows in any order (a shuffled epoch), each slot masked (the
learner kernels do no bounds checks), the bias appended as the parser appends it, a row's
repeated slots summed in the rows that may hold one; no Python work per row.
"""
import numpy as np
from numba import njit

from streamherd.errors import StreamherdError
from streamherd.features.rows import merge_row, new_merge_table
from streamherd.features.options import MAX_BITS
from streamherd.features.space import FeatureSpace
from streamherd.io.csr import Chunk

# Rows per chunk: enough that the per-chunk Python work (a few calls) is noise, few enough that
# the buffers stay in cache-friendly sizes.
CHUNK_ROWS = 4096


@njit(cache=True, nogil=True)
def fill_rows(src_indptr, src_indices, src_values, order, mask, add_bias, bias_slot, table,
              stamp, indptr, indices, values):
    """Rows ``order`` of the CSR matrix (src_*) into indptr/indices/values: column j at slot
    (j + 1) & mask, the bias (slot ``bias_slot``, value 1) last when ``add_bias``. A row that
    may hold a slot twice has its repeated slots summed (rows.merge_row, with
    ``table`` and the row stamps ``stamp``, ``stamp + 1``, ...). Returns the entries written,
    or -1 - i when the sum of row i's repeated slots overflowed.

    A row needs no merge, as the parser's feature stage tells (stage._append), when
    its slots rise strictly, or rise, wrap around the mask once and rise to a last slot below
    the first, and the bias slot is not among them: a canonical matrix's rows whose columns
    fit the slots, the usual case, are copied and never merged."""
    keys, stamps, positions = table[0], table[1], table[2]   # (its slot bit set unused here)
    nnz = 0
    indptr[0] = 0
    for i in range(len(order)):
        row = order[i]
        start = nnz
        last = -1
        falls = 0
        bias_seen = False
        for k in range(src_indptr[row], src_indptr[row + 1]):
            slot = (src_indices[k] + 1) & mask
            indices[nnz] = slot
            values[nnz] = src_values[k]
            nnz += 1
            falls += slot <= last
            last = slot
            bias_seen |= slot == bias_slot
        distinct = (falls == 0) or (falls == 1 and last < indices[start])
        if add_bias:
            distinct = distinct and not bias_seen
            indices[nnz] = bias_slot
            values[nnz] = 1.0
            nnz += 1
        if not distinct:
            nnz = merge_row(indices, values, start, nnz, keys, stamps, positions, stamp + i)
            if nnz < 0:
                return -1 - i
        indptr[i + 1] = nnz
    return nnz


def injective(n_columns, space):
    """Whether the ``n_columns`` columns and the bias have slots of their own at ``space``'s
    bits."""
    if n_columns > space.dim:
        return False
    bias_column = (space.bias_slot - 1) & space.mask
    return not space.bias or bias_column >= n_columns


def fitting_bits(n_columns, bias, least=1):
    """The fewest bits (>= ``least``) at which ``n_columns`` columns and the bias each have a
    slot of their own, and no column sits at slot 0 (so that an svmlight file's indices up to
    ``n_columns`` are read, by ``streamherd predict`` too, at the slots the columns had)."""
    for bits in range(max(least, 1), MAX_BITS + 1):
        space = FeatureSpace(bits, bias)
        if n_columns < space.dim and injective(n_columns, space):
            return bits
    return MAX_BITS


class MatrixRows:
    """Chunks of a CSR matrix's rows over the slots of ``space`` (features/space.FeatureSpace:
    its bits, its bias and its normalization), through buffers kept from call to call.

    A chunk's ``labels`` are the targets given (for the task's learn), ``importance`` the
    weights, ``line_numbers`` the rows' 0-based indices in the matrix; its arrays hold the
    chunk until the next one is made (as ChunkReader's)."""

    def __init__(self, space, chunk_rows=CHUNK_ROWS):
        self.space = space
        self.chunk_rows = chunk_rows
        self.table = new_merge_table()
        self.stamp = 0
        self.capacity = 0
        self.chunk_capacity = 0

    def chunks(self, X, order=None, targets=None, importance=None, source="X"):
        """The chunks of rows ``order`` (default: all, in order) of the CSR matrix ``X``."""
        n = X.shape[0]
        order = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, np.int64)
        targets = np.zeros(n) if targets is None else np.asarray(targets, np.float64)
        importance = np.ones(n) if importance is None else np.asarray(importance, np.float64)
        lengths = np.diff(X.indptr)
        self._reserve(lengths, order)
        space = self.space
        for first in range(0, len(order), self.chunk_rows):
            rows = order[first:first + self.chunk_rows]
            written = fill_rows(X.indptr, X.indices, X.data, rows, space.mask, space.bias,
                                space.bias_slot, self.table, self.stamp, self.indptr,
                                self.indices, self.values)
            self.stamp += len(rows)
            if written < 0:
                raise StreamherdError(f"row {int(rows[-1 - written])} of {source}: the sum of "
                                      f"its columns that share a slot overflows; use more "
                                      f"bits or smaller values")
            chunk = self._chunk(rows, targets[rows], importance[rows], source)
            space.transform(chunk)
            yield chunk

    def _reserve(self, lengths, order):
        """Buffers for the largest chunk of ``order``: its entries, a bias per row, and the
        scratch merge_row's sort takes after a row (the longest row's length)."""
        if not len(order):
            need = 1
        else:
            per_chunk = np.add.reduceat(lengths[order] + 1, np.arange(0, len(order),
                                                                        self.chunk_rows))
            need = int(per_chunk.max()) + int(lengths.max()) + 2
        if need > self.capacity:
            self.capacity = max(need, int(self.capacity * 1.5))
            self.indices = np.empty(self.capacity, np.int32)
            self.values = np.empty(self.capacity)
        if self.chunk_capacity < self.chunk_rows:
            self.chunk_capacity = self.chunk_rows
            self.indptr = np.zeros(self.chunk_rows + 1, np.int64)
            self.absent = np.full(self.chunk_rows, -1, np.int64)

    def _chunk(self, rows, targets, importance, source):
        n = len(rows)
        nnz = self.indptr[n]
        absent = self.absent[:n]
        return Chunk(source, np.zeros(0, np.uint8), targets, importance, rows,
                     self.indptr[:n + 1], self.indices[:nnz], self.values[:nnz],
                     absent, absent, absent, absent, n, 0, 0)

