"""Arrays whose references numba does not count, for a kernel's inner calls.

numba counts the references to every array a compiled function holds: each array argument of
a call that is not inlined, and each array taken out of a tuple, costs an atomic increment and
decrement of its owner's count (NRT_incref, NRT_decref). A kernel that makes such a call once
per row (the crosses of a row: features/stage.py) spends as long on the counts as on the row.
``uncounted`` gives the same arrays without an owner (a null meminfo, which numba's counting
skips), to be used inside the kernel that holds the counted ones: they live as long as the
kernel's arguments do, so nothing is freed under them. An uncounted array must not outlive the
call it was made in: never returned, stored or given to Python.
"""
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def uncounted(typingctx, value):
    """``value`` (an array, or a tuple of arrays, numbers and such tuples) with each array's
    owner dropped: numba then counts no reference to it."""
    def codegen(context, builder, signature, args):
        return _without_owners(context, builder, signature.args[0], args[0])
    return value(value), codegen


def _without_owners(context, builder, typ, value):
    if isinstance(typ, types.Array):
        model = context.data_model_manager[typ]
        for field in ("meminfo", "parent"):   # its owner, and the Python object it came from
            position = model.get_field_position(field)
            value = builder.insert_value(value, ir.Constant(value.type.elements[position], None),
                                         position)
        return value
    if isinstance(typ, types.BaseTuple):
        for i, member in enumerate(typ):
            item = _without_owners(context, builder, member, builder.extract_value(value, i))
            value = builder.insert_value(value, item, i)
        return value
    return value
