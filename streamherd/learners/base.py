"""What every learner is: hyperparameters, named state arrays, and a kernel over CSR chunks."""
import contextlib
import mmap
import os

import numpy as np

from streamherd.errors import StreamherdError

# Class blocks grow into spare capacity, this factor larger than the last (Learner.grow), so
# that discovering K classes one chunk at a time copies O(K) blocks, not O(K^2).
GROWTH = 1.5


class UnstableUpdate(Exception):
    """Raised by ``learn`` when the update on example ``index`` of the chunk made the state
    non-finite; training turns it into a StreamherdError naming the file and line."""

    def __init__(self, index, what):
        super().__init__(what)
        self.index = index
        self.what = what


# ---------------------------------------------------------------- memory

def available_memory():
    """Bytes of memory this process may still take, or None when nothing says: the least of
    what the host has available, what the process's control groups allow beyond what they hold
    (containers set these), and what RLIMIT_AS / RLIMIT_DATA leave of the address space."""
    rooms = [room for room in (resident_room(), address_room()) if room is not None]
    return min(rooms) if rooms else None


def resident_room(proc_cgroup="/proc/self/cgroup", cgroup_root="/sys/fs/cgroup"):
    """Bytes of physical memory the process may still fill: the host's MemAvailable (else its
    physical memory), less when a memory control group (v2 memory.max, v1
    memory.limit_in_bytes, of the process's group or an ancestor) leaves less beyond what the
    group uses (its reclaimable inactive page cache not counted as used)."""
    host = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    host = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if host is None:
        with contextlib.suppress(ValueError, OSError, AttributeError):
            host = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    rooms = [room for room in (host, cgroup_room(proc_cgroup, cgroup_root)) if room is not None]
    return min(rooms) if rooms else None


# the files of a memory control group: (limit, usage, the memory.stat key of its inactive page
# cache), for cgroup v2 and v1; "max" (v2) or a huge number (v1) means no limit
_CGROUP_FILES = (("memory.max", "memory.current", "inactive_file"),
                 ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"))
_NO_LIMIT = 2 ** 62


def cgroup_room(proc_cgroup="/proc/self/cgroup", cgroup_root="/sys/fs/cgroup"):
    """The least room (limit - usage + inactive page cache) of the memory control groups the
    process is in, its own and its ancestors' (the tightest limit binds), or None when none
    sets a limit (or none can be read)."""
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    folders = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, group = parts
        if controllers == "":                       # v2: one unified hierarchy
            folders.append((os.path.join(cgroup_root, "unified"), group))
            folders.append((cgroup_root, group))
        elif "memory" in controllers.split(","):    # v1: the memory controller's hierarchy
            folders.append((os.path.join(cgroup_root, "memory"), group))
    rooms = []
    for mount, group in folders:
        # inside a container's cgroup namespace the group is "/" and the mount is its own
        steps = [step for step in group.strip("/").split("/") if step]
        for depth in range(len(steps), -1, -1):
            folder = os.path.join(mount, *steps[:depth])
            for limit_file, usage_file, inactive_key in _CGROUP_FILES:
                room = _group_room(folder, limit_file, usage_file, inactive_key)
                if room is not None:
                    rooms.append(room)
    return max(0, min(rooms)) if rooms else None


def _group_room(folder, limit_file, usage_file, inactive_key):
    try:
        with open(os.path.join(folder, limit_file)) as f:
            limit = f.read().strip()
        if limit == "max" or int(limit) >= _NO_LIMIT:
            return None
        with open(os.path.join(folder, usage_file)) as f:
            usage = int(f.read())
    except (OSError, ValueError):
        return None
    inactive = 0
    try:
        with open(os.path.join(folder, "memory.stat")) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == inactive_key:
                    inactive = int(value)
                    break
    except (OSError, ValueError):
        pass
    return int(limit) - max(0, usage - inactive)


def address_room(status="/proc/self/status"):
    """Bytes of address space the process may still map under RLIMIT_AS (less its VmSize) and
    RLIMIT_DATA (less its VmData), or None when neither is set. Every array counts here, even
    the zero pages the physical memory holds only once written."""
    try:
        import resource
    except ImportError:   # not a POSIX system
        return None
    sizes = {}
    try:
        with open(status) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmSize", "VmData"):
                    sizes[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    rooms = []
    for limit_name, used in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        limit = resource.getrlimit(getattr(resource, limit_name))[0]
        if limit != resource.RLIM_INFINITY and used in sizes:
            rooms.append(max(0, limit - sizes[used]))
    return min(rooms) if rooms else None


def populated_zeros(count):
    """``count`` zero doubles whose pages are all mapped at once (MAP_POPULATE, where the
    system has it), for a state whose starting values go into every page of it at once (a
    bank's, a multiclass learner's new class blocks): one mapping of them all takes a fraction
    of the time a page fault per page does (a virtual machine's page faults are dear)."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if not populate:
        return np.zeros(count)
    mapping = mmap.mmap(-1, 8 * count, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return np.frombuffer(mapping, np.float64)


def memory_text(size):
    return f"{size:,} bytes ({size / 2 ** 30:.1f} GiB)"


def check_memory(need, needs, remedy, held=0, untouched=0):
    """Refuse, in one line, ``need`` bytes (``held`` of them allocated already) beyond the
    available memory: "``needs`` <bytes>, more than the <bytes> of available memory;
    ``remedy``". ``untouched``: bytes of ``need`` in zero pages never written until used, which
    take address space (RLIMIT_AS) but no physical memory."""
    rooms = [(need - held - untouched, resident_room()), (need - held, address_room())]
    for more, room in rooms:
        if room is not None and more > room:
            raise StreamherdError(f"{needs} {memory_text(need)}, more than the "
                                  f"{memory_text(room)} of available memory; {remedy}")


def check_blocks_fit(what, slot_bytes, dim, blocks, held=0):
    """Refuse, in one line, a state of ``blocks`` class blocks of ``dim`` slots (2^bits) of
    ``slot_bytes`` bytes each when the part of it not ``held`` already (allocated) is more than
    the available memory; the error says which -b, or how many classes, would fit."""
    need = slot_bytes * dim * blocks
    available = available_memory()
    if available is None or need - held <= available:
        return
    bits = dim.bit_length() - 1
    room = available + held
    fit_bits = int(np.floor(np.log2(room / (slot_bytes * blocks)))) if room >= slot_bytes * blocks \
        else -1
    fit_classes = room // (slot_bytes * dim)
    smaller = f"a smaller -b (-b {fit_bits} fits {blocks:,} classes) or " if fit_bits >= 1 else ""
    raise StreamherdError(
        f"{what} with -b {bits} and {blocks:,} classes needs {memory_text(need)} for its state"
        f"{f' ({memory_text(need - held)} more than it holds)' if held else ''}, more than the "
        f"{memory_text(available)} of available memory; use {smaller}fewer classes (-b {bits} "
        f"fits {fit_classes:,}; are the labels classes? real-valued ones want --loss squared)")


def check_full_fits(name, dim, what="covariance", blocks=1):
    """Refuse a dim x dim float64 matrix (dim = blocks x 2^bits slots) that would not fit in the
    available memory; the error suggests the diagonal variant of ``name``'s family."""
    from streamherd.learners import diagonal_variant

    bits = (dim // max(blocks, 1)).bit_length() - 1   # (0 blocks: a state not grown yet)
    classes = f" and {blocks} classes" if blocks > 1 else ""
    check_memory(8 * dim * dim, f"{name} with -b {bits}{classes} needs a {dim}x{dim} {what} "
                                f"matrix of",
                 f"use a smaller -b{' or fewer classes' if blocks > 1 else ''} or the "
                 f"diagonal variant --algo {diagonal_variant(name)}")


class Learner:
    """Base class. A subclass sets the class attributes: its entry points (``entry_points``, see
    there) and state. One class serves the variants of a family: the registry line of each
    (``spec``) gives its covariance kind and its ``rule``.

    Its hyperparameters are declared in the registry (learners/__init__.py, spec.py), which
    gives ``options``, every one of them with its value; ``state_arrays`` names the arrays
    saved in the model besides ``mean`` (``saved_arrays``).
    ``learn`` runs one chunk through the learner in order: for each example it predicts with the
    current state, writes the margin that prediction used to ``margins_out`` (the progressive
    prediction), then updates once. Labels y are +1/-1, or NaN for an unlabeled line (predicted,
    not learned). It returns the number of updates made.
    """

    name = ""
    rules: tuple = ("",)      # the registry rules (LearnerSpec.rule) the class tells apart
    state_arrays: tuple = ()
    # the arrays that hold one entry (full: one row and column) per slot of every class block;
    # ``grow`` extends them when a new class appears
    live_arrays: tuple = ("mean",)
    # live arrays the kernels read together for every feature (e.g. mean and variance), kept
    # as the columns of one (size, k) array: a slot's entries then share a cache line, so a
    # random feature costs one miss instead of k. The attributes are views into it; saved
    # models hold plain arrays. (Not in a joint learner that keeps its classes side by side:
    # see ``paired``.)
    interleaved: tuple = ()
    # whether, for joint multiclass, the 1-d live arrays keep the classes of a feature side by
    # side (``layout``, kernels/multiclass.py) rather than in blocks as model files hold them:
    # a feature's classes then lie on a few cache lines instead of one line each. The learners
    # whose every joint kernel reads slots through the layout; each such learner does
    # (``classes_side_by_side``) unless it was loaded where a second copy of its arrays, to
    # rearrange them, does not fit in memory.
    side_by_side = False
    # what a model file's check reads of the saved arrays: those that are matrices over the
    # slots (square blocks), those whose entries (a matrix's diagonal) must be > 0, and the
    # scalars of meta() (each a count)
    matrix_arrays: tuple = ()
    positive_arrays: tuple = ()
    meta_scalars: tuple = ()

    def __init__(self, dim, options=None, state=None, learner_meta=None, name=None, blocks=1,
                 task=None):
        """``dim`` slots per block (2^bits); ``blocks`` class blocks (1 for binary and regression;
        K for joint multiclass: the state covers K * dim slots, class z's slot j at z * dim + j).
        With ``state``, the number of blocks is that of its mean. ``options``: hyperparameter
        values, checked against the registry's declarations for ``task`` (the others take their
        defaults)."""
        from streamherd.learners import spec

        self.name = name or self.name
        self.spec = spec(self.name)
        assert self.spec.rule in self.rules, f"{self.name}: no rule {self.spec.rule!r}"
        self.dim = dim
        self.options = self.spec.options(options, task)
        self.task = task
        self.classes_side_by_side = self.side_by_side   # this learner's (layout)
        if state is None:
            self.blocks = blocks
            self.size = dim * blocks
            self.check_size(self.size, self.blocks)
            self.mean = np.zeros(self.size)
            self.init_state()
        else:
            self.mean = state["mean"]
            self.size = len(self.mean)
            self.blocks = max(1, self.size // dim)
            self.load_state(state, learner_meta or {})
            if self.classes_side_by_side and self.blocks > 1:
                if self._fits(self.blocks):   # the file's blocks, side by side
                    for attr in self.live_arrays:
                        setattr(self, attr, np.ascontiguousarray(
                            getattr(self, attr).reshape(self.blocks, dim).T).reshape(-1))
                else:   # no room for a second copy: the blocks as loaded
                    self.classes_side_by_side = False
            self._interleave()   # a fresh model's init_state made them so (new_interleaved)
        # class blocks allocated (grow); the 1-d live arrays are then the arrays in _whole
        # (none until a grow reallocates), or in blocks their views of the first ``blocks``
        self.capacity = self.blocks
        self._whole = {}

    def new_interleaved(self, **fill):
        """Fresh ``interleaved`` arrays, as columns of one array (or apart, see paired): each is
        zero, or ``fill[name]`` (init_state uses it, so the arrays are not built apart and
        copied)."""
        pairs = self.paired(self.blocks)
        packed = np.zeros((self.size, len(pairs)))
        for attr in self.interleaved:
            array = packed[:, pairs.index(attr)] if attr in pairs else np.zeros(self.size)
            if fill.get(attr, 0.0) != 0.0:
                array[:] = fill[attr]
            setattr(self, attr, array)

    def paired(self, blocks):
        """The ``interleaved`` arrays of a state of ``blocks`` class blocks: none when its
        classes lie side by side (a joint learner of that kind: each array then holds a
        feature's classes in a row of their own, which the class scores read at once)."""
        side_by_side = self.classes_side_by_side and (self.task == "multiclass" or blocks > 1)
        return () if side_by_side else self.interleaved

    def spread_over(self, dim, arrays):
        """A fresh learner of one slot (binary or regression) becomes one of ``dim`` slots whose
        state ``arrays`` (attribute -> array of ``dim`` entries: a bank's packed columns) already
        hold its one slot's starting values in every slot: a fresh learner's state is the same
        in every slot, so this is the learner made over ``dim`` slots, without its own arrays."""
        assert self.size == 1 and self.blocks == 1, "spread_over takes a fresh one-slot learner"
        for attr, array in arrays.items():
            assert len(array) == dim and array[0] == getattr(self, attr)[0], attr
            setattr(self, attr, array)
        self.dim = self.size = dim

    def hold_in(self, arrays):
        """Copy the state ``arrays`` names (attribute -> array of as many entries: a bank's
        packed columns, learners/packing.py) into them, and hold it there from now on."""
        for attr, array in arrays.items():
            array[:] = getattr(self, attr)
            setattr(self, attr, array)   # the old array is freed here, one at a time

    def own_state(self):
        """Hold the state in arrays of its own, as a learner made alone holds it (the
        ``interleaved`` arrays as columns of one array: its kernel is compiled for that
        layout), after holding views of a bank's packed arrays (spread_over)."""
        if self.interleaved:
            self._interleave()
        else:
            self.mean = np.ascontiguousarray(self.mean)

    def _interleave(self):
        """Copy the ``interleaved`` arrays (loaded or grown apart) into the columns of one array
        (see there); model.load_model reads them so already (then no copy). A joint learner
        with its classes side by side (``paired``: none) holds each as a contiguous array."""
        if not self.paired(self.blocks):
            for attr in self.interleaved:
                setattr(self, attr, np.ascontiguousarray(getattr(self, attr)))
            return
        if self._interleaved_already():
            return
        packed = np.empty((self.size, len(self.interleaved)))
        for k, attr in enumerate(self.interleaved):
            packed[:, k] = getattr(self, attr)
            setattr(self, attr, packed[:, k])   # the old array is freed here, one at a time

    def _interleaved_already(self):
        packed = getattr(self, self.interleaved[0]).base
        return isinstance(packed, np.ndarray) and packed.flags.c_contiguous \
            and packed.shape == (self.size, len(self.interleaved)) and packed.dtype == np.float64 \
            and all(getattr(self, attr).__array_interface__ == packed[:, k].__array_interface__
                    for k, attr in enumerate(self.interleaved))

    @classmethod
    def saved_arrays(cls, covariance):
        """The arrays a model of a variant with this covariance kind saves."""
        return ("mean", *cls.state_arrays)

    @classmethod
    def list_lengths(cls, metas):
        """The saved arrays whose length is not one entry per slot (the voted perceptron's update
        list), name -> length, in a model whose learner meta is each of ``metas`` (one per
        one-versus-all class: their lists are concatenated in class order)."""
        return {}

    @classmethod
    def check_saved(cls, arrays, metas, dim, classes):
        """What is wrong with the ``list_lengths`` arrays of a model (float64, read back), or
        None; ``dim`` slots per block, ``classes`` blocks per learner."""
        return None

    @classmethod
    def split_saved(cls, state, metas, blocks):
        """A one-versus-all model's arrays, one dict per class: block z of each slot array, and
        class z's part of each ``list_lengths`` array (``metas``: the classes' learner metas)."""
        offsets = dict.fromkeys(cls.list_lengths(metas[:1]) if metas else (), 0)
        pieces = []
        for z in range(blocks):
            lengths = cls.list_lengths([metas[z]]) if offsets else {}
            piece = {}
            for key, value in state.items():
                if key in lengths:
                    piece[key] = value[offsets[key]:offsets[key] + lengths[key]]
                    offsets[key] += lengths[key]
                else:
                    size = len(value) // blocks
                    piece[key] = value[z * size:(z + 1) * size]
            pieces.append({key: np.ascontiguousarray(value) for key, value in piece.items()})
        return pieces

    def init_state(self):
        """Create the extra state arrays of a fresh model."""

    def load_state(self, state, learner_meta):
        """Take the extra state arrays (and scalars from ``meta()``) of a saved model."""

    def meta(self):
        """Scalars of the learner's state, saved in the model's meta."""
        return {}

    def state(self):
        """Arrays to save: ``mean`` plus the learner's named state arrays."""
        return {"mean": self.in_blocks(self.mean)}

    @property
    def layout(self):
        """(class stride, feature stride) of the live arrays: class z's slot of feature j is
        z * layout[0] + j * layout[1] (kernels/multiclass.py)."""
        return (1, self.capacity) if self.classes_side_by_side else (self.dim, 1)

    def in_blocks(self, array):
        """A live 1-d array as model files hold it, class block after class block (a copy
        when the learner keeps its classes side by side, else the array itself)."""
        if not self.classes_side_by_side or self.capacity <= 1:
            return array
        by_feature = feature_rows(array, self.dim, self.capacity)
        return np.ascontiguousarray(by_feature[:, :self.blocks].T).reshape(-1)

    # The family's cached entry points (algorithms/, over kernels/loops.run_rules) by covariance
    # kind ("none", "diagonal", "full"); the variant's LearnerSpec says which it runs. One
    # serves every task: entry_point(<task>=..., args=...). ``kernel_state`` and
    # ``kernel_params`` give the tuples of arrays and of numbers the step rules take. Whether
    # the family has a squared-loss form is its LearnerSpec's (``regression``).
    entry_points = {}

    @property
    def entry_point(self):
        return self.entry_points[self.spec.covariance]

    def kernel_state(self):
        return (self.mean,)

    def kernel_params(self):
        return ()

    def _workspace(self):
        """(g, active): the zeroed workspace of kernels/covariance.full_sigma_x."""
        if getattr(self, "_g", None) is None:
            self._g = np.zeros(self.size)
            self._active = np.zeros(self.size, np.int64)
        return self._g, self._active

    def _run(self, importance, indptr, indices, values, **task):
        """The entry point on one chunk (kernels/loops.run_rules): (updates, index of a bad
        example or -1, known); ``task``: binary=, regression= or joint= its loop's arguments."""
        return self.entry_point(**task, args=(importance, indptr, indices, values,
                                              self.kernel_state(), self.kernel_params()))

    def learn(self, y, importance, indptr, indices, values, margins_out):
        """Predict-then-update over one chunk; returns the number of updates."""
        updates, bad, _ = self._run(importance, indptr, indices, values, binary=(y, margins_out))
        return self.checked(updates, bad)

    # what ``checked`` says failed (GaussianLearner adds its variances)
    failure = "its margin, its step or the weights it wrote are not finite"

    def checked(self, updates, bad, *rest):
        """A kernel's result (updates, bad[, more]) without ``bad``: the index of the example
        whose margin or update was not finite (learners/kernels/sparse.py), or -1. Raises
        UnstableUpdate for a bad example."""
        if bad >= 0:
            raise UnstableUpdate(int(bad), f"the {self.name} update failed: {self.failure}")
        return (updates, *rest) if rest else updates

    def predict_margins(self, indptr, indices, values, out):
        """Margins of the trained model (no update)."""
        from streamherd.learners.kernels.sparse import margins

        margins(self.mean, indptr, indices, values, out)

    # ------------------------------------------------------------ regression

    def learn_regression(self, y, importance, indptr, indices, values, margins_out):
        """``--loss squared``: predict mu.x (written to margins_out), then the learner's
        squared-loss update; y real (NaN: unlabeled). Returns the number of updates."""
        if self.spec.regression is None:
            # Reached only by a learner without a regression form, which training refuses
            # first (its registry line declares no regression): a programming error. Its entry
            # point has no regression loop.
            raise TypeError(f"{self.name} has no squared-loss update (its LearnerSpec "
                            f"declares no regression)")
        updates, bad, _ = self._run(importance, indptr, indices, values,
                                    regression=(y, margins_out))
        return self.checked(updates, bad)

    # ------------------------------------------------------------ joint multiclass

    def grow(self, blocks):
        """Extend the state to ``blocks`` class blocks: a new block starts as a fresh model (zero
        mean, the prior's variances, no covariance with the other blocks).

        The 1-d live arrays grow into spare capacity: when they run out they are reallocated
        for max(blocks, GROWTH x capacity) blocks (spare blocks already fresh) if that fits in
        memory, and are views of the first ``blocks`` blocks; so a stream that brings its
        classes one chunk at a time copies O(K) blocks, not O(K^2). Full matrices grow exactly
        (one copy per grow: they are 2^b x 2^b per class, for small -b only)."""
        if blocks <= self.blocks:
            return
        self.check_size(self.dim * blocks, blocks)
        if blocks > self.capacity:
            self._reallocate(blocks)
        self.blocks = blocks
        self.size = self.dim * blocks
        for attr, whole in self._whole.items():   # side by side: every class's in each slot
            setattr(self, attr, whole if self.classes_side_by_side else whole[:self.size])
        self._g = None   # workspaces sized for the old state

    def _reallocate(self, blocks):
        """New live arrays for ``blocks`` (or more, see grow) blocks: the old blocks, then fresh
        ones (those of a fresh one-block model: a fresh model's blocks are all alike). The old
        arrays are freed once the new ones are written, so the peak is old + new."""
        fresh = type(self)(self.dim, options=self.options, name=self.name, task=self.task)
        matrices = any(getattr(fresh, attr).ndim == 2 for attr in self.live_arrays)
        capacity = max(blocks, int(self.capacity * GROWTH))
        if matrices or not self._fits(capacity):
            capacity = blocks
        old_size, total, dim = self.size, self.dim * capacity, self.dim
        pairs = self.paired(capacity)
        packed = populated_zeros(total * len(pairs)).reshape(total, len(pairs)) \
            if pairs else None
        for attr in self.live_arrays:
            old, new = getattr(self, attr), getattr(fresh, attr)
            if old.ndim == 2:   # a full matrix over all slots: block-diagonal, old then new
                grown = np.zeros((total, total))
                grown[:old_size, :old_size] = old
                for z in range(self.blocks, capacity):
                    grown[z * dim:(z + 1) * dim, z * dim:(z + 1) * dim] = new
                setattr(self, attr, grown)
                continue
            grown = packed[:, pairs.index(attr)] if attr in pairs else populated_zeros(total)
            if self.classes_side_by_side:   # each feature's classes: old ones, then fresh
                by_feature = feature_rows(grown, dim, capacity)
                by_feature[:, :self.capacity] = feature_rows(old, dim, self.capacity)
                by_feature[:, self.capacity:] = new[:, None]
            else:
                grown[:old_size] = old
                for z in range(self.blocks, capacity):
                    grown[z * dim:(z + 1) * dim] = new
            self._whole[attr] = grown
        self.capacity = capacity

    def state_bytes_per_slot(self):
        """Bytes of the live 1-d arrays per slot (the full matrices count apart: check_size)."""
        return 8 * len(self.live_arrays)

    def _fits(self, blocks):
        available = available_memory()
        return available is None or \
            self.state_bytes_per_slot() * self.dim * blocks <= available

    def check_size(self, size, blocks):
        """Refuse, in one line, a state of ``size`` slots over ``blocks`` class blocks that would
        not fit in memory (the full-matrix learners override it: their matrix is what counts).
        A one-block (binary) state is not checked: its zero pages are allocated as written."""
        if blocks > 1:
            check_blocks_fit(self.name, self.state_bytes_per_slot(), self.dim, blocks)

    def scores_while_learning(self):
        """Whether learn_joint takes ``reads`` (model/online.py learn_calibrating): the family's
        joint kernel is kernels/loops.py joint_loop, which reads them with class_scores' rule."""
        return True

    def learn_joint(self, cls, importance, indptr, indices, values, known, predicted_out,
                    reads=None):
        """Joint multiclass predict-then-update over one chunk (see learners/kernels/multiclass.py).

        cls: the class id of each example (-1 when unlabeled), < self.blocks; known: the number
        of classes seen before the chunk. Writes the progressive prediction of each example
        (class id, -1 before any class is known) to ``predicted_out``, and the class scores of
        the ``reads`` (kernels/multiclass.Reads; when scores_while_learning) to theirs. Returns
        (updates, known).
        """
        from streamherd.learners.kernels.multiclass import joint_workspace

        if reads is not None and not self.scores_while_learning():
            raise ValueError(f"{self.name}'s joint kernel reads no rows on the way "
                             f"(scores_while_learning)")
        return self.checked(*self._run_joint(cls, importance, indptr, indices, values, known,
                                             predicted_out,
                                             joint_workspace(self, indptr, indices, reads)))

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        """The family's joint kernel (``work``: multiclass.joint_workspace); returns (updates,
        index of a bad update or -1, known)."""
        return self._run(importance, indptr, indices, values,
                         joint=(cls, self.layout, known, predicted_out, work))

    def class_scores(self, indptr, indices, values, out):
        """out[i, z] = the score of class z for example i (the model's own prediction rule)."""
        from streamherd.learners.kernels.multiclass import all_class_scores

        all_class_scores(self.mean, self.layout, self.blocks, indptr, indices, values, out)


def feature_rows(array, dim, classes):
    """A 1-d array of ``dim`` features' ``classes`` entries side by side, as a (dim, classes)
    view: writing it writes the array (a 1-d array's view, strided or not, reshapes in place)."""
    rows = array.reshape(dim, classes)
    assert np.may_share_memory(rows, array) or not array.size, "the reshape copied"
    return rows


def prediction_weights(arrays):
    """The weight vector predictions read, of a learner's state arrays (the averaged
    perceptron predicts with its average)."""
    return arrays["average"] if "average" in arrays else arrays["mean"]
