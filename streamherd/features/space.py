"""The feature space: how the tokens the lexers find become a model's features.

One ``FeatureSpace`` goes from the command line to the parser and into the model (its meta holds
``bits``, ``bias``, ``normalize``, the namespace flags and ``hash_all``), so ``predict`` and a
continued ``train -i`` see the features the model was trained on. The lexers (io/svmlight.py,
io/vw.py) only find tokens; the feature stage (features/stage.py, numba functions inlined into
the parse kernels) turns each token into a slot (hashing.py), writes the row and adds the bias;
``transform`` then scales whole rows (normalize.py) on the parser threads.
"""
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.features import interactions as crossing
from streamherd.features import normalize as normalization
# the calls io/feature_stage.py declares, implemented for kernel_params: loaded with the space,
# so that they are there whenever a parse kernel compiles for one
from streamherd.features import stage  # noqa: F401
from streamherd.features.hashing import VW_CONSTANT_HASH
from streamherd.features.options import FEATURE_OPTIONS, check_bits
from streamherd.features.rows import new_merge_table

DEFAULT_BITS = 18
# the options a model's meta holds only when given (a model without them reads as before)
_WHEN_GIVEN = tuple(o.key for o in FEATURE_OPTIONS if o.key not in ("bits", "bias", "normalize"))
# the features of one block of lines with its crosses (12 bytes each, twice: io/csr)
MAX_CROSSED_FEATURES = 1 << 28
# the features a crossed row's usual -q gathers in its merge table
# (interactions.cross_letter_pairs): a longer row's crosses take the general way
CROSSED_ROW_SCRATCH = 1 << 12


@dataclass(frozen=True)
class FeatureSpace:
    """``bits``: 2^bits hashed slots; ``bias``: add VW's constant feature to every row;
    ``normalize``: a rule of normalize.RULES, applied to every row. Namespaces, named by
    their first letter (case-sensitive, as VW's; see features/interactions.py):
    ``quadratic``, ``cubic``, ``interactions``: VW's -q, --cubic, --interactions (items
    of letters, or of full names joined by '|'); ``ignore``, ``keep``: the letters whose
    features are dropped, or the only ones read (VW: --keep overrides --ignore);
    ``ignore_linear``: the letters whose features are crossed but not themselves features.
    ``hash_all``: all-digit names hashed as strings too, as VW's ``--hash all`` (else such a
    name is its number plus the namespace's seed)."""

    bits: int = DEFAULT_BITS
    bias: bool = True
    normalize: str = normalization.NONE
    quadratic: tuple = ()
    cubic: tuple = ()
    interactions: tuple = ()
    ignore: str = ""
    keep: str = ""
    ignore_linear: str = ""
    hash_all: bool = False

    def __post_init__(self):
        check_bits(self.bits)
        if self.normalize not in normalization.RULES:
            raise ValueError(f"unknown normalization rule {self.normalize!r}")
        for name in ("quadratic", "cubic", "interactions"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        # checked here, once: a flag a kernel cannot use is a user error now, not later
        object.__setattr__(self, "_program", crossing.program(
            crossing.letter_interactions(self.quadratic, self.cubic, self.interactions),
            crossing.full_name_interactions(self.interactions)))
        object.__setattr__(self, "_read", crossing.kept_masks(self.ignore, self.keep))
        object.__setattr__(self, "_linear_ignored",
                           crossing.letter_masks("--ignore_linear", self.ignore_linear))
        object.__setattr__(self, "_usual_pairs",
                           crossing.usual_pairs(self._program, self._linear_ignored))

    @property
    def crosses_namespaces(self):
        """Whether any namespace is crossed, ignored or kept (the parse kernels then note the
        namespace of each feature)."""
        return bool(self.quadratic or self.cubic or self.interactions or self.ignore
                    or self.keep or self.ignore_linear)

    def _cross_orders(self):
        """The order of each interaction, wildcard ones included (for the output bound)."""
        _, _, orders, _, wildcard_orders = self._program
        return np.concatenate([orders, wildcard_orders])

    @property
    def dim(self):
        """Slots per class block."""
        return 1 << self.bits

    @property
    def mask(self):
        return self.dim - 1

    @property
    def bias_slot(self):
        """The constant feature's slot, as VW's (``Constant``), whether or not it is added."""
        return VW_CONSTANT_HASH & self.mask

    def kernel_params(self, naming=()):
        """What the feature stage's numba functions take (features/stage.py): (mask, bias,
        bias slot, crossing, hashing, naming). Crossing: when namespaces are crossed or kept,
        (the letters read, the letters of --ignore_linear: bit sets of numbers; whether
        interactions.cross_letter_pairs makes the crosses: no arrays, the crosses' program
        goes in the merge table, see there); hashing: (True,) with --hash all; ``naming``:
        the arrays of names.new_naming, when the parse kernels are to note where each
        feature's name is. Each empty when not used: its code is then not compiled
        (io/feature_stage.py)."""
        crossed = ((self._read, self._linear_ignored, self._usual_pairs)
                   if self.crosses_namespaces else ())
        hashing = (True,) if self.hash_all else ()
        return (self.mask, self.bias, self.bias_slot, crossed, hashing, naming)

    def new_merge_table(self):
        """The scratch the parse kernels end a row with (rows.merge_row's table, and the bit
        set of interactions.repeats_a_slot): one per thread that parses. A space that crosses
        or keeps namespaces adds the scratch of interactions.cross_letter_pairs and the
        crosses' program (interactions.program: its arrays, each an item, so that a row takes
        only those it uses), which the crosses read when a row ends (stage.merge_repeats): in
        the kernel params, which every feature's inlined call takes, numba would count
        references to them on every feature."""
        table = new_merge_table()
        if not self.crosses_namespaces:
            return table
        return (*table, np.empty(CROSSED_ROW_SCRATCH, np.uint64),
                np.empty(CROSSED_ROW_SCRATCH, np.float64), *self._program)

    @property
    def cross_width(self):
        """The most terms of any of its crosses (0 without)."""
        return int(max(self._cross_orders(), default=0))

    def max_block_features(self, tokens, lines):
        """An upper bound on the features that ``tokens`` tokens on ``lines`` lines make
        without crosses: one per token, plus the bias of each line (the parser's output arrays
        are sized with it, see io/csr.allocate_outputs)."""
        return tokens + lines

    def max_crossed_features(self, block):
        """An upper bound on the features of the lines of ``block`` (bytes) with this space's
        crosses (0 without): a line's crosses grow as a power of its tokens, so only the lines
        tell (io/reader sizes the output arrays with it)."""
        if not self.crosses_namespaces:
            return 0
        bound = crossing.max_crossed_features(block, len(block), self._cross_orders())
        if bound > MAX_CROSSED_FEATURES:
            raise StreamherdError(
                f"the crosses of a block's lines would make up to {bound:.3g} features, more "
                f"than streamherd holds at once ({MAX_CROSSED_FEATURES:,}; the crosses of a "
                f"line grow as a power of its features); cross fewer or smaller namespaces")
        return int(bound) + 1   # (rounding of the float count)

    def transform(self, chunk):
        """Scale the chunk's rows in place by the ``normalize`` rule (the bias kept, unless the
        rule is the old "l2+bias")."""
        if self.normalize != normalization.NONE:
            normalization.normalize(self.normalize, chunk.indptr, chunk.indices, chunk.values,
                                    self.bias_slot if self.bias else -1)

    def to_meta(self):
        """The model meta's entries for this space."""
        meta = {"bits": self.bits, "bias": self.bias,
                "normalize": normalization.meta_of_rule(self.normalize)}
        meta.update({key: list(value) if isinstance(value, tuple) else value
                     for key in _WHEN_GIVEN if (value := getattr(self, key))})
        return meta

    @classmethod
    def from_meta(cls, meta):
        flags = {key: tuple(meta[key]) if isinstance(meta[key], list) else meta[key]
                 for key in _WHEN_GIVEN if key in meta}
        return cls(meta["bits"], meta["bias"], normalization.rule_of_meta(meta.get("normalize")),
                   **flags)

    @staticmethod
    def check_meta(saved):
        """Each of the space's keys in a model's meta (``saved``: errors.SavedMeta), of the type
        and range its option declares; returns the model's bits."""
        for option in FEATURE_OPTIONS:
            saved.get(option.key, *option.saved, required=option.required)
        return saved.meta["bits"]
