"""One-versus-all's per-chunk arithmetic around its classes' binary runs
(learners/reductions/ova.py): each class's labels, and the prediction from the classes' margins.

``learns_from[z]``: the first row of the chunk class z learns from: 0 for a class known before
the chunk, its first example's row for a class new in it, the chunk's length for a class that
has none yet.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def class_labels(cls, learns_from, lo, out):
    """out[i, k]: the label of row i in class lo + k's binary run: +1 for a row of that class,
    -1 for one of another, NaN for a row unlabeled (class < 0) or before the class learns."""
    for i in range(len(cls)):
        for k in range(out.shape[1]):
            if cls[i] < 0 or i < learns_from[lo + k]:
                out[i, k] = np.nan
            else:
                out[i, k] = 1.0 if cls[i] == lo + k else -1.0


@njit(cache=True, nogil=True)
def top_classes(margins, learns_from, known, predicted_out):
    """predicted_out[i]: the class of the largest margin of row i among its candidates, the
    earliest on ties, or -1 when it has none. A class known before the chunk is a candidate for
    every row; one new in it, for the rows after its first example (not for that example
    itself, as in the joint kernels of kernels/multiclass.py)."""
    for i in range(margins.shape[0]):
        best = -1
        for z in range(margins.shape[1]):
            if z >= known and i <= learns_from[z]:
                continue
            if best < 0 or margins[i, z] > margins[i, best]:
                best = z
        predicted_out[i] = best
