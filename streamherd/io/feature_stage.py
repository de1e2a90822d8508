"""The calls the line parsers (svmlight.py, vw.py) and the parse kernel (block.py) make to the
feature stage, which turns each token they find into a feature of the row being written.

They are declared here and implemented by features/stage.py (numba overloads, inlined into the
parse kernels; name_key excepted, see there) for the type of the ``space`` the kernels are
given: the kernel params of a FeatureSpace (features/space.py), whose module loads the stage.
So the lexers read bytes into tokens and call these, and io never imports the features layer,
which sits above it: what a feature is (hashing, crosses, the bias, the namespaces kept, the
names noted for the audit) is the stage's, and what a lexer holds of it (a namespace, a row) is
opaque to the lexer. Called outside a numba function, each raises TypeError.
"""


def _compiled_only(name):
    return TypeError(f"{name} is compiled into the parse kernels (features/stage.py implements "
                     f"it for a FeatureSpace's kernel params)")


def default_namespace():
    """VW's default namespace (a bare '|', and every svmlight feature)."""
    raise _compiled_only("default_namespace")


def namespace(buf, start, end):
    """The namespace named ``buf[start:end]`` (a VW ``|name``, without its scale; not empty)."""
    raise _compiled_only("namespace")


def new_row(nnz):
    """A row that starts at position ``nnz`` of the output arrays."""
    raise _compiled_only("new_row")


def number_key(space, namespace, number, buf, start):
    """The key of the feature named by the number ``number`` (all digits, or an svmlight index;
    uint64) whose name starts at ``buf[start]``, in ``namespace``."""
    raise _compiled_only("number_key")


def name_key(namespace, buf, start, end):
    """The key of the feature named ``buf[start:end]`` in ``namespace``, any name."""
    raise _compiled_only("name_key")


def add(space, indices, values, row, namespace, key, value, name_start):
    """Add the feature of ``key`` in ``namespace`` with ``value`` (not 0: the lexers drop
    explicit zeros), whose name starts at ``name_start`` in the block, to ``row``; returns the
    row."""
    raise _compiled_only("add")


def finish_row(space, indices, values, row):
    """End the row; returns (the position after it, distinct): ``distinct`` False when the row
    may hold a slot twice, which merge_repeats then sums (a space that crosses namespaces
    leaves the rest of the row to merge_repeats: the position is then its last feature's)."""
    raise _compiled_only("finish_row")


def merge_repeats(space, indices, values, start, end, merge_table, stamp):
    """Sum the repeated slots of the row at ``start:end`` (with crosses of namespaces, after
    adding what finish_row left: its crosses, from the space's ``merge_table``, and its bias);
    returns its new end, or -1 when a sum overflows (a malformed line)."""
    raise _compiled_only("merge_repeats")
