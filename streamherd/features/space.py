"""The feature space: how the tokens the lexers find become a model's features.

One ``FeatureSpace`` goes from the command line to the parser and into the model (its meta
holds ``bits``, ``bias`` and ``normalize``), so ``predict`` and a continued ``train -i`` see the
features the model was trained on. The lexers (io/svmlight.py, io/vw.py) only find tokens; the
feature stage (features/stage.py, numba functions inlined into the parse kernels) turns each
token into a slot (hashing.py), writes the row and adds the bias; ``transform`` then scales
whole rows (normalize.py) on the parser threads.
"""
from dataclasses import dataclass

from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.hashing import VW_CONSTANT_HASH

DEFAULT_BITS = 18
MAX_BITS = 30


@dataclass(frozen=True)
class FeatureSpace:
    """``bits``: 2^bits hashed slots; ``bias``: add VW's constant feature to every row;
    ``normalize``: a rule of normalize.RULES, applied to every row."""

    bits: int = DEFAULT_BITS
    bias: bool = True
    normalize: str = normalization.NONE

    def __post_init__(self):
        if not 1 <= self.bits <= MAX_BITS:
            raise StreamherdError(f"--bits {self.bits} is out of range; use 1 to {MAX_BITS} "
                                  f"(2^bits weight slots)")
        if self.normalize not in normalization.RULES:
            raise ValueError(f"unknown normalization rule {self.normalize!r}")

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

    def kernel_params(self):
        """What the feature stage's numba functions take (features/stage.py)."""
        return (self.mask, self.bias, self.bias_slot)

    def max_block_features(self, tokens, lines):
        """An upper bound on the features that ``tokens`` tokens on ``lines`` lines make: one
        per token, plus the bias of each line (the parser's output arrays are sized with it,
        see io/csr.allocate_outputs)."""
        return tokens + lines

    def transform(self, chunk):
        """Scale the chunk's rows in place by the ``normalize`` rule (the bias kept, unless the
        rule is the old "l2+bias")."""
        if self.normalize != normalization.NONE:
            normalization.normalize(self.normalize, chunk.indptr, chunk.indices, chunk.values,
                                    self.bias_slot if self.bias else -1)

    def to_meta(self):
        """The model meta's entries for this space."""
        return {"bits": self.bits, "bias": self.bias,
                "normalize": normalization.meta_of_rule(self.normalize)}

    @classmethod
    def from_meta(cls, meta):
        return cls(meta["bits"], meta["bias"], normalization.rule_of_meta(meta.get("normalize")))
