"""The options that make a model's features, each declared once: its flags, the FeatureSpace
field and model meta key it sets, its value's type, its help and Vowpal Wabbit's spelling.

The command line builds train's and dist-train's feature flags from these declarations and
tells predict that they come from the model; a new feature option is one declaration here plus
its transform (a FeatureSpace field and the kernel that reads it).

This module imports neither numpy nor numba: the command line reads it before it knows whether
it will run a kernel.
"""
from dataclasses import dataclass
from collections.abc import Callable

from streamherd.errors import StreamherdError, is_int

MAX_BITS = 30


def check_bits(bits):
    """--bits: 2^bits weight slots, bits from 1 to MAX_BITS."""
    if not 1 <= bits <= MAX_BITS:
        raise StreamherdError(f"--bits {bits} is out of range; use 1 to {MAX_BITS} (2^bits "
                              f"weight slots)")


@dataclass(frozen=True)
class FeatureOption:
    """``key``: the FeatureSpace field and the model meta's key it sets; ``flags``: streamherd's
    spellings (the first is the one messages name); ``vw``: Vowpal Wabbit's spellings where
    they differ; ``type``: bool (a switch, no value), int or str; ``repeatable``: the flag may be
    given several times, its values collected in a list; ``default``: the command line's value
    when the flag is absent; ``to_space``: the command line's value as the FeatureSpace field's,
    None when the option was not given (a model continued with -i then keeps its own); ``saved``:
    (check, expected words) of its value in a model's meta, there in every model if ``required``."""

    key: str
    flags: tuple
    type: type
    help: str
    metavar: str = ""
    repeatable: bool = False
    default: object = None
    vw: tuple = ()
    to_space: Callable = lambda value: value
    saved: tuple = ()
    required: bool = False

    @property
    def flag(self):
        return self.flags[0]

    @property
    def spellings(self):
        return (*self.flags, *self.vw)


def _hashes_all(mode):
    """--hash: whether all-digit names are hashed as strings too."""
    if mode not in ("strings", "all"):
        raise StreamherdError(f"--hash {mode!r} is not a hash mode; use --hash strings "
                              f"(the default) or --hash all")
    return mode == "all"


_SWITCH = (lambda v: isinstance(v, bool), "true or false")


def _crossing(key, flags, help, metavar):
    """A repeatable flag of crosses, saved as their list."""
    return FeatureOption(key, flags, str, help, metavar, repeatable=True, saved=(
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "a list of interactions"))


def _namespace_letters(key, flags, help):
    """A repeatable flag of namespace letters, saved joined as one string."""
    return FeatureOption(key, flags, str, help, "LETTERS", repeatable=True,
                         to_space=lambda values: "".join(values or ()),
                         saved=(lambda v: isinstance(v, str), "a string of namespace letters"))


FEATURE_OPTIONS = (
    FeatureOption(
        "bits", ("-b", "--bits"), int, "2^bits hashed weight slots (default 18).", "BITS",
        vw=("--bit_precision",), required=True,
        saved=(lambda v: is_int(v) and 1 <= v <= MAX_BITS, f"an integer from 1 to {MAX_BITS}")),
    FeatureOption(
        "bias", ("--no-bias",), bool, "Do not add the constant feature.", vw=("--noconstant",),
        to_space=lambda given: False if given else None, saved=_SWITCH, required=True),
    # saved "l2": unit norm, bias kept; true: the older rule, bias scaled too (normalize.py)
    FeatureOption(
        "normalize", ("--normalize",), bool,
        "Scale each example's features to unit L2 norm, the bias kept at 1 (saved in the "
        "model, applied by predict; as experiment --normalize l2).",
        to_space=lambda given: "l2" if given else None,
        saved=(lambda v: isinstance(v, bool) or v == "l2", 'true, false or "l2"')),
    _crossing(
        "quadratic", ("-q", "--quadratic"),
        "Cross two namespaces, as VW's -q ab (repeatable). A namespace is named by the first "
        "letter of its name, case-sensitive as in VW (a and A differ); ' ' is the default "
        "namespace (a bare '|', and all of svmlight's features); ':' alone means every "
        "namespace (-q ::). Slots as VW's; saved in the model.", "AB"),
    _crossing("cubic", ("--cubic",),
              "Cross three namespaces, as VW's --cubic abc (letters as for -q).", "ABC"),
    _crossing(
        "interactions", ("--interactions",),
        "Crosses of any order, comma-separated: letters (ab,abc, as -q) or full namespace names "
        "joined by '|' (user|item: only the namespaces of exactly those names, as VW's "
        "--experimental_full_name_interactions).", "ITEMS"),
    _namespace_letters(
        "ignore", ("--ignore",),
        "Drop the namespaces beginning with these letters (case-sensitive), as VW."),
    _namespace_letters(
        "keep", ("--keep",),
        "Read only the namespaces beginning with these letters (case-sensitive; overrides "
        "--ignore, as in VW)."),
    _namespace_letters(
        "ignore_linear", ("--ignore_linear", "--ignore-linear"),
        "Use the namespaces beginning with these letters only in crosses, not as features "
        "themselves (case-sensitive), as VW."),
    FeatureOption(
        "hash_all", ("--hash",), str,
        "strings: a feature name of digits only is its number plus the namespace's seed (VW's "
        "default); all: every name hashed as a string, as VW's --hash all (saved in the model).",
        "strings|all", default="strings", to_space=_hashes_all, saved=_SWITCH),
)


def space_flags(given):
    """The FeatureSpace fields the command line's values set: ``given`` maps each option's key
    to its command-line value; a field is None where its option was not given."""
    return {option.key: option.to_space(given[option.key]) for option in FEATURE_OPTIONS}
