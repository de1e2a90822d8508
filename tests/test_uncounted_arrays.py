"""io/references.uncounted: the same arrays, without numba's reference counting."""
import re

import numpy as np
from numba import njit

from streamherd.io.references import uncounted


@njit
def _first_plus(arrays, number):
    a, (b, c) = uncounted(arrays)
    a[0] = 5.0                 # written through the uncounted view
    return a[0] + b[1] + c + number


def test_an_uncounted_array_is_the_same_memory_and_numbers_pass_unchanged():
    a, b = np.zeros(3), np.arange(4.0)
    assert _first_plus((a, (b, 7)), 0.5) == 5.0 + 1.0 + 7 + 0.5
    assert a[0] == 5.0


@njit
def _element(a, i):
    """A call that is not inlined and may raise: numba counts references to its array."""
    if a[i] < 0.0:
        raise ValueError("negative")
    return a[i]


def _sum_of(a):
    total = 0.0
    for i in range(len(a)):
        total += _element(a, i)
    return total


def _sum_of_uncounted(a):
    a = uncounted(a)
    total = 0.0
    for i in range(len(a)):
        total += _element(a, i)
    return total


def _reference_counts_in_the_function(kernel):
    """The NRT_incref and NRT_decref calls of the compiled function itself (its Python wrapper,
    which releases the argument it unboxed, left out)."""
    llvm = "\n".join(kernel.inspect_llvm().values())
    functions = re.split(r"^define ", llvm, flags=re.MULTILINE)[1:]
    own = [f for f in functions if "_sum_of" in f.split("{", 1)[0]
           and not re.search(r"@(_ZN7cpython|cfunc\.)", f.split("{", 1)[0])]
    assert own, "the compiled function was not found in its LLVM"
    return sum(len(re.findall(r"call void @NRT_(?:incref|decref)\(", f)) for f in own)


def test_a_call_per_element_on_an_uncounted_array_counts_no_reference():
    """The reason for uncounted: each call on a counted array costs an atomic increment and
    decrement of its owner's count (the crossed parse spent 17% of its time there)."""
    counted, without = njit(_sum_of), njit(_sum_of_uncounted)
    for kernel in (counted, without):
        assert kernel(np.ones(4)) == 4.0
    assert _reference_counts_in_the_function(counted) > 0
    assert _reference_counts_in_the_function(without) == 0
