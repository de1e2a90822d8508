"""``--normalize``: each example's features scaled to unit L2 norm, the bias feature kept at 1.

``train --normalize`` and ``experiment --normalize l2`` mean this same thing (one kernel): the
bias stays a bias, whatever the scale of the raw features; scaling it with them would give long
documents a smaller intercept than short ones. A model records the rule it was trained with
(meta ``normalize``: ``"l2"``); a model from before, whose ``normalize`` is ``true``, scaled the
bias with the features, and ``predict`` keeps doing that for it (``RULES``).
"""
import numpy as np
from numba import njit

from streamherd.io.positions import unsigned

NONE = "none"
L2 = "l2"                  # unit L2 norm of the features, the bias kept
L2_WITH_BIAS = "l2+bias"   # unit L2 norm of the whole row: models saved with normalize = true
RULES = (NONE, L2, L2_WITH_BIAS)


def rule_of_meta(value):
    """The rule of a model's meta ``normalize`` (absent or false: none; true: the old rule)."""
    if value is True:
        return L2_WITH_BIAS
    if value in (None, False):
        return NONE
    return value


def meta_of_rule(rule):
    """What a model's meta records: false, "l2", or true for the old rule (so a model keeps the
    meta it was loaded with)."""
    return {NONE: False, L2: L2, L2_WITH_BIAS: True}[rule]


# below this a sum of squares has lost digits to underflow (the smallest normal double)
SMALLEST_NORMAL = 2.2250738585072014e-308


@njit(cache=True, nogil=True)
def _scaled_norm(start, end, indices, values, kept_slot):
    """The L2 norm of a row's entries (``kept_slot``'s left out) whose squares overflow or
    underflow: the largest magnitude times the norm of the entries divided by it."""
    largest = 0.0
    for k in range(start, end):
        if indices[unsigned(k)] != kept_slot:
            largest = max(largest, abs(values[unsigned(k)]))
    if largest == 0.0:
        return 0.0
    ratio2 = 0.0
    for k in range(start, end):
        if indices[unsigned(k)] != kept_slot:
            ratio2 += (values[unsigned(k)] / largest) * (values[unsigned(k)] / largest)
    return largest * np.sqrt(ratio2)


@njit(cache=True, nogil=True)
def unit_norm_rows(indptr, indices, values, kept_slot):
    """Scale each row to unit L2 norm in place, leaving out the entries at ``kept_slot`` (the
    bias slot; -1: none), which keep their value; all-zero rows stay zero. A row whose sum of
    squares is not a finite normal number (values beyond ~1e154, which squared overflowed and
    scaled the row to zeros, or below ~1e-154) has its norm taken over its largest value."""
    for i in range(len(indptr) - 1):
        norm2 = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            if indices[unsigned(k)] != kept_slot:
                norm2 += values[unsigned(k)] * values[unsigned(k)]
        if SMALLEST_NORMAL <= norm2 < np.inf:
            scale = 1.0 / np.sqrt(norm2)
            for k in range(indptr[i], indptr[i + 1]):
                if indices[unsigned(k)] != kept_slot:
                    values[unsigned(k)] *= scale
            continue
        norm = _scaled_norm(indptr[i], indptr[i + 1], indices, values, kept_slot)
        if norm > 0.0:   # divided: 1 / norm may overflow where each value / norm is <= 1
            for k in range(indptr[i], indptr[i + 1]):
                if indices[unsigned(k)] != kept_slot:
                    values[unsigned(k)] /= norm


def normalize(rule, indptr, indices, values, bias_slot):
    """Apply ``rule`` to the rows in place; ``bias_slot``: the bias feature's slot, or -1."""
    if rule == L2:
        unit_norm_rows(indptr, indices, values, bias_slot)
    elif rule == L2_WITH_BIAS:
        unit_norm_rows(indptr, indices, values, -1)
