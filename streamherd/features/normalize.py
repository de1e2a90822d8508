"""``--normalize``: each example's features scaled to unit L2 norm, the bias feature kept at 1.

``train --normalize`` and ``experiment --normalize l2`` mean this same thing (one kernel): the
bias stays a bias, whatever the scale of the raw features; scaling it with them would give long
documents a smaller intercept than short ones. A model records the rule it was trained with
(meta ``normalize``: ``"l2"``); a model from before, whose ``normalize`` is ``true``, scaled the
bias with the features, and ``predict`` keeps doing that for it (``RULES``).
"""
import numpy as np
from numba import njit

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


@njit(cache=True, nogil=True)
def unit_norm_rows(indptr, indices, values, kept_slot):
    """Scale each row to unit L2 norm in place, leaving out the entries at ``kept_slot`` (the
    bias slot; -1: none), which keep their value; all-zero rows stay zero."""
    for i in range(len(indptr) - 1):
        norm2 = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            if indices[k] != kept_slot:
                norm2 += values[k] * values[k]
        if norm2 > 0.0:
            scale = 1.0 / np.sqrt(norm2)
            for k in range(indptr[i], indptr[i + 1]):
                if indices[k] != kept_slot:
                    values[k] *= scale


def normalize(rule, indptr, indices, values, bias_slot):
    """Apply ``rule`` to the rows in place; ``bias_slot``: the bias feature's slot, or -1."""
    if rule == L2:
        unit_norm_rows(indptr, indices, values, bias_slot)
    elif rule == L2_WITH_BIAS:
        unit_norm_rows(indptr, indices, values, -1)
