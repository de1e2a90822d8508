"""Software prefetch of the weight slots of the examples ahead.

While the parser threads stream input through the shared cache, the learner's weight arrays
(8 MiB and more at -b 20) are evicted, and every feature of an example becomes a wait on main
memory. Asking for the slots of a row ahead while the current row is being computed hides that
latency.

The kernels ask for the row two ahead (``row_ahead``): one slot of it per feature of the row
they are reading, inside the same loop, then ``prefetch_rest`` for what is left of a longer
row. Spread over the loop, the requests leave room for the row's own loads, where a burst of
prefetches before the loop filled the miss queue first and made the row's own loads wait.
The request is written out in each loop (``if ahead[0] + k - start < ahead[1]: prefetch(...)``)
rather than called as a helper: numba wraps an inlined helper that takes arrays and branches in
reference counting, NRT_incref and NRT_decref calls per feature, which cost more than the
prefetch saves.

Two rows ahead rather than one: one row's computation is too short to hide a load from main
memory. (The measurements behind these choices: benchmarks/README.md, "Design measurements".)

Learners with two per-slot arrays keep them as the two columns of one array
(``Learner.interleaved``): slot j of both lies in one 16-byte pair, in one cache line, so one
prefetch serves both.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from streamherd.io.positions import unsigned


@intrinsic
def prefetch(typingctx, array, index):
    """llvm.prefetch(&array[index], read, high locality, data cache)."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        array_value = context.make_array(array_type)(context, builder, args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        pointer = cgutils.get_item_pointer(context, builder, array_type, array_value, [index],
                                           wraparound=False)
        i8_pointer = builder.bitcast(pointer, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [i8_pointer.type, i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0")
        builder.call(function, [i8_pointer, ir.Constant(i32, 0), ir.Constant(i32, 3),
                                ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@njit(cache=True, inline="always")
def prefetch_row(w, indices, start, end):
    """Ask the cache for w at the slots of one row (a hint: no effect on results)."""
    for k in range(start, end):
        prefetch(w, indices[unsigned(k)])


# Rows between the one being computed and the one whose slots are asked for.
PREFETCH_DISTANCE = 2
# row_ahead past the last row: an empty range, so nothing is asked for.
NO_ROW = (0, 0)


@njit(cache=True, inline="always")
def row_ahead(indptr, i):
    """(start, end) in indices of row i + PREFETCH_DISTANCE; NO_ROW when there is none."""
    ahead = i + PREFETCH_DISTANCE
    if ahead + 1 < len(indptr):
        return indptr[ahead], indptr[ahead + 1]
    return 0, 0


@njit(cache=True, inline="always")
def prefetch_rest(w, indices, ahead, done):
    """The slots of the row ``ahead`` from the done-th on (those the loop did not reach)."""
    prefetch_row(w, indices, ahead[0] + done, ahead[1])
