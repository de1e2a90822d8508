"""Software prefetch of the weight slots of the examples ahead.

While the parser threads stream input through the shared cache, the learner's weight arrays
(8 MiB and more at -b 20) are evicted, and every feature of an example becomes a wait on main
memory. Asking for the slots of a row ahead while the current row is being computed hides that
latency: the kernels call ``prefetch_ahead`` for row i + 2 before working on row i. Two rows
ahead rather than one, on the 1M-line benchmark (whole commands, medians of 5 to 8 alternating
runs, the per-pair ratios' median): nherd-p 1.07-1.21x as fast, cw 1.13x, pa2 1.20x, predict
1.13x. Learners with two per-slot arrays keep them as the two columns of one array
(``Learner.interleaved``): slot j of both lies in one 16-byte pair, in one cache line, so one
prefetch serves both.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _prefetch(typingctx, array, index):
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
        _prefetch(w, indices[k])


# Rows between the one being computed and the one whose slots are asked for.
PREFETCH_DISTANCE = 2


@njit(cache=True, inline="always")
def prefetch_ahead(w, indptr, indices, i):
    """prefetch_row for row i + PREFETCH_DISTANCE, if there is one."""
    ahead = i + PREFETCH_DISTANCE
    if ahead + 1 < len(indptr):
        prefetch_row(w, indices, indptr[ahead], indptr[ahead + 1])
