"""A seeded mutation fuzzer for ``streamherd train`` and ``predict``, shared by the bounded test
(tests/test_fuzz.py) and the longer campaign run by hand (benchmarks/fuzz.py).

Three parts:

- generation: ``make_case(seed, index)`` writes a small valid svmlight or VW file (binary,
  multiclass or regression labels, qid, comments, tags, importance weights, namespaces with
  scales, blank lines, CRLF), applies byte- and token-level mutations to it (NUL, non-UTF-8,
  ``:``/``|``/``#``, huge and long numbers, nan/inf, fullwidth characters, lone CR, truncation...)
  and maybe compresses it (gzip, bzip2, xz; sometimes corrupting the compressed bytes), and picks
  the options of its runs. The same (seed, index) always gives the same case.
- a reference grammar, in plain Python: ``reference(data, fmt, bits)`` classifies every line of
  a file as skipped (blank, comment), an example, or malformed; ``label_level`` adds the lines
  that are malformed for the task (class names in a binary file, damaged numbers, labels outside
  --classes). It follows the README ("Input formats", "Commands", "Your files and exit codes");
  see "Grammar decisions" below for what the README leaves open.
- the oracle: ``check_case`` runs ``python -m streamherd`` as subprocesses (train, train
  --skip-bad, train on the file with the reference's malformed lines blanked, predict --skip-bad
  with the trained model, and train on a canonical rewrite of the numbers) and returns every
  broken expectation as a ``Failure``: ``signature`` names its class (for counting), ``detail``
  says what happened.

Grammar decisions (where the README does not settle a case; a disagreement with streamherd there
is a finding to judge, not necessarily a streamherd bug):

- Lines end at LF, or at a CR that no LF follows (old Mac line ends: each such CR is a line end
  of its own); the CR of CRLF is a blank before the LF. Blanks are space, tab and CR.
- Numbers are ``[+-]digits[.digits][(e|E)[+-]digits]`` (at least one digit) and must be finite,
  also after a VW namespace scale and after summing a line's repeated slots.
- A label that is not a number is a class name, unless it holds ':' or NUL (malformed) or reads
  as a damaged number (nan, inf, 1e400, a lone sign, ``＋1``: see ``damaged_number``): then the
  line is malformed for every task.
- A VW line with no '|' before any '#' and a token after the first that holds ':' (not a tag)
  is an svmlight line, malformed in VW.
- auto format: the format of most of the first lines that tell one (VW: a '|' before any '#';
  svmlight: a token after the first with ':'), the first of them on a tie. Under auto, a
  malformed line of the other format (an svmlight line with a '|' before any '#'; a VW line
  without one whose features are ``index:value``) may stop even a --skip-bad run.
- auto task (no --multiclass/--classes/--loss): the numeric labels are a binary labelling when at
  most one value is > 0 and one <= 0, or one is negative; the stream is binary when they are and
  class names are fewer than numeric labels (then those class-name lines are malformed),
  otherwise multiclass. A binary stream with more than two values stops at the third.
- --skip-bad fails when it skips more lines than it reads examples; a run with no labeled
  example fails; predict --skip-bad writes an empty line for each malformed line it skips.
- Decimal numbers are read correctly rounded: a file and its numbers rewritten by Python's
  ``repr(float(token))`` train exactly the same model.

The CR, format-vote, damaged-number, binary-with-class-names and --skip-bad rules follow the
fixes made alongside this fuzzer (README "Commands", "Your files and exit codes"; io/block.py,
io/reader.py, labels.py, tasks/); when the README changes them, change ``reference`` and
``label_level``.
"""
import bz2
import contextlib
import gzip
import json
import lzma
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
import unicodedata
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VW_CONSTANT = 11650396

# ---------------------------------------------------------------- the reference grammar

_TOKEN = re.compile(rb"[^ \t\r]+")
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NONFINITE = re.compile(rb"[+-]?(?:nan|inf|infinity)\Z", re.I)
_DIGITS = re.compile(rb"[0-9]+\Z")
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
          (b"\x28\xb5\x2f\xfd", "zstd"))


class Bad(Exception):
    """A malformed line; ``args[0]`` is the reason (a short class name for counting)."""


def number(token):
    """The finite value of a decimal token, or raise Bad (overflow, nan/inf, not a number)."""
    if _NUMBER.match(token):
        value = float(token)
        if math.isinf(value):
            raise Bad("number overflows")
        return value
    if _NONFINITE.match(token):
        raise Bad("nan/inf")
    raise Bad("not a number")


def is_hard_number(token):
    """Whether a number is off the exact fast path of a decimal parser (more than 15
    significant digits, or a decimal exponent beyond +-22): the canonical-rewrite oracle runs."""
    m = re.match(rb"[+-]?([0-9]*)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?\Z", token)
    if not m:
        return False
    digits = (m.group(1) + m.group(2)).lstrip(b"0")
    exponent = int(m.group(3) or 0) - len(m.group(2))
    return len(digits) > 15 or (len(digits) > 0 and not -22 <= exponent <= 22)


_DAMAGED = re.compile(r"[+-]|[+-]?(?:\d+\.?\d*|\.\d*)(?:[eE][+-]?\d*)?|[+-]?(?:nan|inf|infinity)",
                      re.I)


def damaged_number(token):
    """A label token that is no finite number but reads as one was meant (README: nan, inf,
    1e400, a lone '+', a fullwidth '＋1'): after Unicode compatibility folding (fullwidth
    characters to ASCII) and trimming, a sign alone, a decimal with an unfinished exponent or a
    bare point, or nan/inf."""
    text = unicodedata.normalize("NFKC", token.decode("utf-8", "replace")).strip()
    return _DAMAGED.fullmatch(text) is not None


def label_of(token):
    """(value, is_class_name, damage) of a label token; raise Bad when the line is malformed
    whatever the task (':' or NUL in the label)."""
    try:
        return number(token), False, None
    except Bad as e:
        if e.args[0] != "not a number":
            return None, False, f"label {e.args[0]}"
    if b":" in token or b"\x00" in token:
        raise Bad("label with ':' or NUL")
    if damaged_number(token):
        return None, False, "label is a damaged number"
    return None, True, None


def label_key(token):
    """How streamherd tells classes apart: numbers by value (1 and 1.0 are one class), other
    labels by their bytes."""
    try:
        return ("number", number(token) + 0.0)
    except Bad:
        return ("text", token)


def hashstring(name, seed):
    """VW's hashstring: bytes <= 0x20 trimmed from both ends, all-digit (or empty) names are
    integers, the others MurmurHash3 x86_32 with the seed's low 32 bits (the mmh3 package)."""
    name = name.strip(bytes(range(33)))
    if _DIGITS.match(name) or not name:
        return (int(name or b"0") + seed) % 2 ** 64
    import mmh3

    return mmh3.hash(name, seed % 2 ** 32, signed=False)


@dataclass
class Row:
    """An example line as the reference reads it."""
    line: int                 # 1-based line number in the (decompressed) file
    label: bytes = None       # the label token (None: a VW line without label)
    value: float = None       # its number (None for a class name or no label)
    text: bool = False        # a class name
    damage: str = None        # the label is a damaged number (malformed for training)
    tag: bytes = None
    importance: float = 1.0
    canonical: bytes = b""    # the same example with every number written by repr(float)
    hard: bool = False        # a number off parse_float's exact fast path


@dataclass
class Reference:
    fmt: str                  # "svmlight" or "vw"
    lines: list               # the file's lines (without LF)
    rows: list                # Row per line that parses (damaged labels included)
    bad: dict                 # line number -> reason: malformed whatever the task
    skipped: set              # blank and comment lines
    other_format: set         # malformed lines that look like the other format (auto only)


def line_ends(data):
    """The text with LF at every line end: LF ends a line, and so does a CR without an LF
    after it (the CR of CRLF stays, a blank)."""
    return re.sub(rb"\r(?!\n)", b"\n", data)


def split_lines(data):
    lines = line_ends(data).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def line_format(line):
    """The format a line tells: 'vw' when it has a '|' before any '#', 'svmlight' when a token
    after the first (before any '#') holds ':', else None (blank, comment, a label alone)."""
    text = line.split(b"#", 1)[0]
    if b"|" in text:
        return "vw"
    if any(b":" in token for token in text.split()[1:]):
        return "svmlight"
    return None


def detect_format(data, lines=1000):
    """--format auto: the format most of the first ``lines`` lines that tell one have (the
    first of them on a tie, svmlight when none tells); the last line counts only when it is
    the only one (a block may cut it)."""
    parts = data[:1 << 20].split(b"\n")
    votes = {"vw": 0, "svmlight": 0}
    first = None
    for line in parts[:-1] or parts:
        kind = line_format(line)
        if kind is not None:
            votes[kind] += 1
            first = first or kind
            if sum(votes.values()) == lines:
                break
    if votes["vw"] != votes["svmlight"]:
        return max(votes, key=votes.get)
    return first or "svmlight"


def _check_sums(slots_values):
    """Repeated slots of a line are summed (in line order): the sums must stay finite."""
    sums = {}
    for slot, value in slots_values:
        sums[slot] = sums.get(slot, 0.0) + value
    if not all(math.isfinite(v) for v in sums.values()):
        raise Bad("sum of repeated features overflows")


def parse_svmlight(line, line_number, mask):
    """Row for one svmlight line that is not blank or a comment, or raise Bad."""
    data = []
    for m in _TOKEN.finditer(line):
        if data and m.group().startswith(b"#"):
            break
        data.append((m.start(), m.group()))
    label = data[0][1]
    value, text, damage = label_of(label)
    row = Row(line_number, label=label, value=value, text=text, damage=damage)
    hard = value is not None and is_hard_number(label)
    features, slots = [], []
    for _, token in data[1:]:
        colon = token.find(b":")
        if colon < 0:
            raise Bad("feature without ':'")
        name, rest = token[:colon], token[colon + 1:]
        if name == b"qid":
            if not _DIGITS.match(rest):
                raise Bad("bad qid")
            continue
        if not _DIGITS.match(name):
            raise Bad("bad feature index")
        if not rest:
            raise Bad("feature without value")
        try:
            v = number(rest)
        except Bad as e:
            raise Bad(f"value {e.args[0]}") from None
        hard |= is_hard_number(rest)
        if v != 0.0:
            slot = (int(name) % 2 ** 63) & mask
            slots.append((slot, v))
            features.append(b"%d:%s" % (slot, repr(v).encode()))
    _check_sums(slots)
    row.hard = hard
    row.canonical = b" ".join([label if text or damage else repr(value).encode(), *features])
    return row


def _vw_token_end(line, p):
    while p < len(line) and line[p] not in b" \t\r|":
        p += 1
    return p


def _svmlight_shaped(line):
    """A VW line that reads as svmlight: no '|' before any '#', and a token after the first
    (before any '#') that holds ':' and is not a tag."""
    if line.lstrip(b" \t\r").startswith(b"|"):
        return False
    before = line.split(b"#", 1)[0]
    if b"|" in before:
        return False
    return any(b":" in t and not t.startswith(b"'") for t in _TOKEN.findall(before)[1:])


def parse_vw(line, line_number, mask):
    """Row for one VW line that is not blank or a comment, or raise Bad."""
    if _svmlight_shaped(line):
        raise Bad("svmlight features in a VW line")
    if b"\x00" in line:
        raise Bad("NUL byte")
    bar = line.find(b"|")
    if bar < 0:
        bar = len(line)
    row = Row(line_number)
    hard = False
    numbers = 0
    for m in _TOKEN.finditer(line, 0, bar):
        token = m.group()
        if token.startswith(b"'"):
            row.tag = token[1:]
        elif m.end() == bar and numbers > 0:
            row.tag = token
        elif numbers == 0:
            row.value, row.text, row.damage = label_of(token)
            row.label = token
            hard |= row.value is not None and is_hard_number(token)
            numbers = 1
        elif numbers == 1:
            try:
                weight = number(token)
            except Bad as e:
                raise Bad(f"importance {e.args[0]}") from None
            if weight < 0:
                raise Bad("negative importance")
            row.importance = weight
            hard |= is_hard_number(token)
            numbers = 2
        elif numbers == 2:
            try:
                number(token)
            except Bad as e:
                raise Bad(f"base {e.args[0]}") from None
            numbers = 3
        else:
            raise Bad("extra token before '|'")
    head = []
    if row.label is not None:
        head.append(repr(row.value).encode() if row.value is not None else row.label)
        if numbers >= 2:
            head.append(repr(row.importance).encode())
    if row.tag is not None:
        head.append(b"'" + row.tag)
    parts = [b" ".join(head)]
    slots = []
    scale = 1.0
    seed = 0
    p, n = bar, len(line)
    while p < n:
        c = line[p]
        if c == 0x7C:  # '|'
            p += 1
            scale, seed, name = 1.0, 0, b""
            if p < n and line[p] not in b" \t\r|":
                end = _vw_token_end(line, p)
                name = line[p:end]
                colon = name.find(b":")
                if colon >= 0:
                    try:
                        scale = number(name[colon + 1:])
                    except Bad as e:
                        raise Bad(f"scale {e.args[0]}") from None
                    hard |= is_hard_number(name[colon + 1:])
                    name = name[:colon]
                seed = hashstring(name, 0)
                p = end
            parts.append(b"|" + name)
            continue
        if c in b" \t\r":
            p += 1
            continue
        name_end = p
        while name_end < n and line[name_end] not in b" \t\r|:":
            name_end += 1
        value = 1.0
        end = name_end
        if name_end < n and line[name_end] == 0x3A:  # ':'
            end = _vw_token_end(line, name_end + 1)
            token = line[name_end + 1:end]
            if not token:
                raise Bad("feature without value")
            try:
                value = number(token)
            except Bad as e:
                raise Bad(f"value {e.args[0]}") from None
            hard |= is_hard_number(token)
        product = value * scale
        if math.isinf(product):
            raise Bad("scale times value overflows")
        if product != 0.0:
            slots.append((hashstring(line[p:name_end], seed) & mask, product))
            parts.append(line[p:name_end] + b":" + repr(product).encode())
        p = end
    _check_sums(slots)
    row.hard = hard
    row.canonical = b" ".join(parts)
    return row


def reference(data, fmt="auto", bits=18):
    """Classify every line of ``data`` (decompressed bytes) under ``--format fmt``."""
    # a byte-order mark that starts a file is skipped (io/sources.py), as editors write one;
    # anywhere else it is a malformed line
    data = line_ends(data.removeprefix(b"\xef\xbb\xbf"))
    detected = detect_format(data) if fmt == "auto" else fmt
    mask = (1 << bits) - 1
    lines = split_lines(data)
    rows, bad, skipped, other = [], {}, set(), set()
    for i, line in enumerate(lines, 1):
        text = line.strip(b" \t\r")
        if not text or text.startswith(b"#"):
            skipped.add(i)
            continue
        try:
            if detected == "vw":
                rows.append(parse_vw(line, i, mask))
            else:
                rows.append(parse_svmlight(line, i, mask))
        except Bad as e:
            bad[i] = e.args[0]
            if fmt == "auto" and (detected == "vw" and _svmlight_shaped(line)
                                  or detected == "svmlight" and b"|" in line.split(b"#", 1)[0]):
                other.add(i)
    return Reference(detected, lines, rows, bad, skipped, other)


# the README's rule for the task the labels choose (Multiclass; streamherd's tasks.detect):
# whole numbers, up to this many, are classes
FEW_CLASSES, MAX_CLASSES, ROWS_PER_CLASS = 20, 1000, 5


def task_of_labels(names, numeric):
    """The task of a file with ``names`` class-name labels and the ``numeric`` labels: class
    names as many as the numbers make it multiclass; else a binary labelling is binary, a few
    whole numbers classes, a fraction or mostly distinct values regression, and many repeated
    whole numbers are classes when each has ROWS_PER_CLASS rows on average (else an error, which
    a fuzzed file of a few dozen lines never reaches)."""
    values = set(numeric)
    whole = all(v == int(v) for v in values)
    few = whole and len(values) <= FEW_CLASSES
    if names and names >= len(numeric):
        return "multiclass"
    if (sum(v > 0 for v in values) <= 1 and sum(v <= 0 for v in values) <= 1) or \
            (few and values and min(values) < 0):
        return "binary"
    if few:
        return "multiclass"
    if not whole or len(values) > MAX_CLASSES or 2 * len(values) > len(numeric):
        return "regression"
    return "multiclass" if len(values) <= len(numeric) / ROWS_PER_CLASS else "neither"


def label_level(ref, task, classes=None):
    """(task, malformed): the task the run takes (auto resolved from the labels) and the lines
    that parse but are malformed for it, line -> reason (damaged numbers, class names under a
    binary or regression task, labels outside --classes)."""
    rows = [r for r in ref.rows if r.line not in ref.bad]
    if task == "auto":
        task = task_of_labels(sum(r.text for r in rows),
                              [r.value for r in rows if r.value is not None])
    bad = {}
    for row in rows:
        if row.damage:
            bad[row.line] = row.damage
        elif row.text and task in ("binary", "regression"):
            bad[row.line] = f"class name in a {task} file"
        elif classes is not None and row.label is not None and \
                label_key(row.label) not in classes:
            bad[row.line] = "label outside --classes"
    return task, bad


def binary_conflict(rows):
    """A binary stream whose labels are more than one value on a side of 0: it stops."""
    values = {r.value + 0.0 for r in rows if r.value is not None}
    return sum(v > 0 for v in values) > 1 or sum(v <= 0 for v in values) > 1


def decompress(raw):
    """(kind, data, error): kind None for plain text; data None when it does not decompress.
    The rule streamherd reads by, for the three formats alike: whole streams one after another,
    then nothing but zeros (padding)."""
    kind = next((k for magic, k in _MAGIC if raw[:6].startswith(magic)), None)
    if kind is None:
        return None, raw, None
    if kind == "zstd":
        return kind, None, "zstd is not read"
    magic = next(m for m, k in _MAGIC if k == kind)
    new = {"gzip": lambda: zlib.decompressobj(16 + 15), "bzip2": bz2.BZ2Decompressor,
           "xz": lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ)}[kind]
    parts, rest = [], raw
    try:
        while True:
            stream = new()
            parts.append(stream.decompress(rest))
            if not stream.eof:
                return kind, None, "EOFError: a stream is cut short"
            rest = stream.unused_data.lstrip(b"\0")
            if not rest:
                return kind, b"".join(parts), None
            if not rest.startswith(magic):
                return kind, None, "trailing data after the compressed stream"
    except Exception as e:  # noqa: BLE001 - zlib.error, OSError, EOFError, LZMAError...
        return kind, None, f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------- generation

SPECIAL_NUMBERS = [
    "1e400", "-1e400", "1e-400", "1e308", "1.7976931348623159e308", "1.7976931348623157e308",
    "12345678901234567890", "99999999999999999999", "9999999999999999999", "9223372036854775808",
    "18446744073709551616", "0.1234567890123456789012", "00000000000000000000001",
    "0.000000000000000000000000000001e30", "123456789012345678e-30", "1e-320", "4.9e-324",
    "2.2250738585072014e-308", "1e22", "1e23", "1.0000000000000000000001", "nan", "NaN", "-nan",
    "inf", "-inf", "Infinity", "1e", "1.2.3", "+", "-", ".", "0x1F", "1_000", "\uff11", "\uff0b1",
    "-0", "1e99999", "1e-99999", "5.", ".5", "+.5e+1", "1E+2", "-0.0e-0",
]
SPECIAL_LABELS = ["nan", "inf", "-inf", "1e400", "\uff0b1", "2", "0", "-0", "1.0", "spam", "1:2",
                  "-", "+1e0", "NaN", "-1e400", "12345678901234567890", "\ufeff1", "3.5", "1e-400"]
SPECIAL_BYTES = [b":", b"|", b"#", b"\x00", b"\r", b"\t", b" ", b"'", b"\xff", b"\xc3", b"\x80",
                 b"\x0b", b"\x0c", b"\x1a", b"\xef\xbc\x8b", b"\xef\xbc\x91", b"\xc2\xa0",
                 b"\xef\xbb\xbf", b"\xe2\x80\xa8", b"\r\n", b"\n", b"e", b"-", b"."]
WORDS = [b"a", b"b", b"word", b"x1", b"price", b"42", b"7", b"0", b"caf\xc3\xa9", b"\xe6\x97\xa5",
         b"A_B", b"q-1", b"1.5", b"12345678", b"x\x1ay"]
NAMESPACES = [b"f", b"user", b"ad", b"a1", b"9", b"\xc3\xa9t\xc3\xa9", b"N"]
CLASS_NAMES = ["sports", "politics", "tech", "b", "x-y", "caf\u00e9", "7up"]
BINARY_ALGOS = [None, None, None, None, "perceptron", "avg-perceptron", "pa", "pa1", "arow",
                "arow-d", "nherd", "nherd-e", "nherd-d", "cw", "scw1", "scw2", "sop"]
REGRESSION_ALGOS = [None, None, "pa", "pa1", "arow", "arow-d", "nherd", "nherd-e"]
GAUSSIAN = ("arow", "arow-d", "nherd", "nherd-e", "nherd-d", "cw", "scw1", "scw2")


@dataclass
class Case:
    """One fuzz input and how to run it."""
    name: str
    fmt: str                  # the generator's format (the file may no longer be one)
    raw: bytes                # the file's bytes (maybe compressed)
    suffix: str               # file name suffix
    train_args: list          # options for every train run
    predict_args: list        # options of the predict run
    task: str                 # "auto", "regression", "multiclass" (--multiclass/--classes)
    classes: list = None      # --classes names, when given
    stdin: bool = False       # feed the plain train run through stdin
    mutations: list = field(default_factory=list)
    existing_model: bool = False  # the plain run's -f names a file that exists (not a model)

    @property
    def filename(self):
        return f"case{self.suffix}"

    def bits(self):
        if "-b" in self.train_args:
            return int(self.train_args[self.train_args.index("-b") + 1])
        return 18

    def explicit_format(self):
        if "--format" in self.train_args:
            return self.train_args[self.train_args.index("--format") + 1]
        return "auto"


def _value_text(rng):
    r = rng.random()
    if r < 0.3:
        return str(rng.randrange(0, 10))
    if r < 0.6:
        return f"{rng.uniform(-3, 3):.{rng.randrange(1, 6)}f}"
    return rng.choice(["0.25", ".5", "5.", "-1.5", "+2", "1e-3", "2.5E+2", "0", "-0.0", "3",
                       "0.1234567890123", "1234567", "12345678.5", "7e0", "-.75"])


def _labels(rng, scheme):
    if scheme == "pm1":
        return lambda: rng.choice(["1", "+1", "1.0"] if rng.random() < 0.5
                                  else ["-1", "-1.0", "-1e0"])
    if scheme == "01":
        return lambda: rng.choice(["0", "1"])
    if scheme == "multi-int":
        k = rng.randrange(3, 7)
        return lambda: str(rng.randrange(1, k + 1))
    if scheme == "multi-name":
        names = rng.sample(CLASS_NAMES, rng.randrange(3, 6))
        return lambda: rng.choice(names)
    return lambda: rng.choice([f"{rng.uniform(-100, 100):.3f}", f"{rng.uniform(-5, 5):.2e}",
                               str(rng.randrange(-20, 20))])


def _svmlight_line(rng, label):
    parts = [label]
    if rng.random() < 0.2:
        parts.append(f"qid:{rng.randrange(1, 100)}")
    indices = [rng.choice([rng.randrange(0, 40), rng.randrange(0, 40),
                           rng.randrange(0, 10 ** 6), rng.randrange(0, 2 ** 40)])
               for _ in range(rng.randrange(0, 9))]
    if rng.random() < 0.7:
        indices.sort()
    parts += [f"{i}:{_value_text(rng)}" for i in indices]
    line = rng.choice([" "] * 8 + ["\t", "  "]).join(parts)
    if rng.random() < 0.15:
        line += rng.choice([" # a comment", " #x|y 1:2", "\t# caf\u00e9", " #"])
    return line.encode()


def _vw_line(rng, label):
    head = []
    if label is not None:
        head.append(label.encode())
        if rng.random() < 0.25:
            head.append(rng.choice([b"0.5", b"2", b"1e0", b"0", b"3.25"]))
            if rng.random() < 0.2:
                head.append(rng.choice([b"0.1", b"-2"]))
    tag = None
    if rng.random() < 0.25:
        tag = rng.choice([b"t1", b"row-7", b"caf\xc3\xa9", b"x.y", b"1"])
    touching = tag is not None and len(head) > 0 and rng.random() < 0.3
    if tag is not None and not touching:
        head.append(b"'" + tag)
    line = b" ".join(head)
    if touching:
        line += b" " + tag
    elif head and rng.random() < 0.85:
        line += b" "
    for k in range(rng.randrange(1, 4)):
        r = rng.random()
        if r < 0.3:
            ns = b"|"
        elif r < 0.75:
            ns = b"|" + rng.choice(NAMESPACES)
        else:
            ns = b"|" + rng.choice(NAMESPACES) + b":" + rng.choice(
                [b"0.5", b"2", b"1", b"-1", b"1e-2", b"3.25"])
        feats = []
        for _ in range(rng.randrange(0, 7)):
            name = rng.choice(WORDS)
            if rng.random() < 0.5:
                name += b":" + _value_text(rng).encode()
            feats.append(name)
        sep = rng.choice([b" "] * 6 + [b"\t", b"  "])
        line += (b" " if k else b"") + sep.join([ns, *feats])
    return line


def _tokens(line):
    return [(m.start(), m.end()) for m in _TOKEN.finditer(line)]


def _random_line(rng, lines):
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    return rng.choice(candidates) if candidates else None


def _mutate_token(rng, lines, make):
    """Replace a random token (or its value after ':') of a random line by make(token)."""
    i = _random_line(rng, lines)
    if i is None:
        return "no line"
    spans = _tokens(lines[i])
    if not spans:
        return "no token"
    s, e = rng.choice(spans)
    token = lines[i][s:e]
    new = make(token)
    lines[i] = lines[i][:s] + new + lines[i][e:]
    return f"line {i + 1}: {token!r} -> {new!r}"


def _replace_number(rng, token):
    special = rng.choice(SPECIAL_NUMBERS).encode()
    colon = token.rfind(b":")
    if colon >= 0 and rng.random() < 0.8:
        return token[:colon + 1] + special
    return special


def mutate(rng, lines, fmt):
    """Apply one random mutation to ``lines`` (a list of bytes, without line ends) in place;
    returns its description. Mutations that work on the joined text return it as lines again."""
    kind = rng.choice([
        "byte_flip", "byte_insert", "byte_insert", "byte_delete", "number", "number", "number",
        "label", "label", "dup_token", "swap_tokens", "del_token", "separator", "line_end",
        "truncate", "line_ops", "index", "vw_special", "long_line",
    ])
    text = b"\n".join(lines)
    if kind in ("byte_flip", "byte_insert", "byte_delete", "separator", "line_end", "truncate"):
        if kind == "byte_flip" and text:
            p = rng.randrange(len(text))
            text = text[:p] + bytes([text[p] ^ (1 << rng.randrange(8))]) + text[p + 1:]
            desc = f"flip a bit at byte {p}"
        elif kind == "byte_insert":
            p = rng.randrange(len(text) + 1)
            b = rng.choice(SPECIAL_BYTES + [bytes([rng.randrange(256)])])
            if rng.random() < 0.2:   # at a line start (a BOM, a NUL, a '|' first...)
                starts = [0] + [m.end() for m in re.finditer(b"\n", text)]
                p = rng.choice(starts)
            text = text[:p] + b + text[p:]
            desc = f"insert {b!r} at byte {p}"
        elif kind == "byte_delete" and text:
            p = rng.randrange(len(text))
            k = rng.randrange(1, 4)
            desc = f"delete {text[p:p + k]!r} at byte {p}"
            text = text[:p] + text[p + k:]
        elif kind == "separator":
            i = _random_line(rng, lines)
            if i is None:
                return "separator: no line"
            spans = _tokens(lines[i])
            s, e = rng.choice(spans)
            p = rng.randrange(s, e + 1)
            b = rng.choice([b":", b"|", b"#", b"'", b"::", b"||"])
            lines[i] = lines[i][:p] + b + lines[i][p:]
            return f"line {i + 1}: insert {b!r} at column {p}"
        elif kind == "line_end":
            newlines = [m.start() for m in re.finditer(b"\n", text)]
            choice = rng.randrange(4)
            if choice == 0 and newlines:   # an old Mac line end: lone CR
                p = rng.choice(newlines)
                text = text[:p] + b"\r" + text[p + 1:]
                desc = f"LF at byte {p} -> CR"
            elif choice == 1:               # every line end CR
                text = text.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
                desc = "all line ends CR"
            elif choice == 2 and newlines:  # two lines joined
                p = rng.choice(newlines)
                text = text[:p] + b" " + text[p + 1:]
                desc = f"join lines at byte {p}"
            else:
                p = rng.randrange(len(text) + 1)
                text = text[:p] + b"\r" + text[p:]
                desc = f"lone CR at byte {p}"
        elif kind == "truncate" and text:
            p = rng.randrange(len(text))
            text = text[:p]
            desc = f"truncate at byte {p}"
        else:
            return f"{kind}: empty file"
        lines[:] = text.split(b"\n")
        return desc
    if kind == "number":
        return "number " + _mutate_token(rng, lines, lambda t: _replace_number(rng, t))
    if kind == "label":
        i = _random_line(rng, lines)
        if i is None:
            return "label: no line"
        spans = _tokens(lines[i])
        s, e = spans[0]
        new = rng.choice(SPECIAL_LABELS).encode()
        old = lines[i][s:e]
        if fmt == "vw" and old.startswith(b"|"):
            lines[i] = lines[i][:s] + new + b" " + lines[i][s:]
        else:
            lines[i] = lines[i][:s] + new + lines[i][e:]
        return f"label line {i + 1}: {old!r} -> {new!r}"
    if kind in ("dup_token", "swap_tokens", "del_token"):
        i = _random_line(rng, lines)
        if i is None:
            return f"{kind}: no line"
        line = lines[i]
        spans = _tokens(line)
        if kind == "dup_token":
            s, e = rng.choice(spans)
            lines[i] = line[:e] + b" " + line[s:e] + line[e:]
            return f"line {i + 1}: duplicate {line[s:e]!r}"
        if kind == "swap_tokens" and len(spans) >= 2:
            (s1, e1), (s2, e2) = sorted(rng.sample(spans, 2))
            lines[i] = line[:s1] + line[s2:e2] + line[e1:s2] + line[s1:e1] + line[e2:]
            return f"line {i + 1}: swap {line[s1:e1]!r} and {line[s2:e2]!r}"
        s, e = rng.choice(spans)
        lines[i] = line[:s] + line[e:]
        return f"line {i + 1}: delete {line[s:e]!r}"
    if kind == "line_ops":
        choice = rng.randrange(4)
        p = rng.randrange(len(lines) + 1)
        if choice == 0 and lines:
            lines.insert(p, lines[min(p, len(lines) - 1)])
            return f"duplicate a line at {p + 1}"
        if choice == 1:
            lines.insert(p, rng.choice([b"", b"   ", b"\t", b"\r"]))
            return f"blank line at {p + 1}"
        if choice == 2:
            lines.insert(p, rng.choice([b"# comment", b"  #1 1:2", b"#|x", b"#\x00\xff"]))
            return f"comment line at {p + 1}"
        lines.insert(p, rng.choice([b"1", b"-1", b"|", b"'tag", b"1 |", b"0 'x|", b":", b"|ns:"]))
        return f"short line {lines[p]!r} at {p + 1}"
    if kind == "index":
        if fmt != "svmlight":
            return "index: not svmlight"

        def make(token):
            colon = token.find(b":")
            new = rng.choice([b"-3", b"0", b"99999999999999999999", b"qid", b"QID", b"1.5", b"",
                              b"9223372036854775807", b"18446744073709551616", b"\xef\xbc\x91",
                              b"007", b"1e3"])
            return new + (token[colon:] if colon >= 0 else b":1")
        return "index " + _mutate_token(rng, lines, make)
    if kind == "vw_special":
        if fmt != "vw":
            return "vw_special: not vw"
        i = _random_line(rng, lines)
        if i is None:
            return "vw_special: no line"
        choice = rng.choice([b" |big:1e300 huge:1e300", b" |s:1e200 f:1e200", b" ||", b" | |",
                             b" |:2 a", b" |ns: a", b" |x:nan a", b" |f a:", b" |f a:1:2",
                             b" |f :5", b" |f a:-1e308 b:1e308"])
        where = rng.randrange(3)
        if where == 0:
            lines[i] += choice
        elif where == 1:   # header changes
            head = rng.choice([b"-1 ", b"1 -2 ", b"1 2 3 4 ", b"1 2 3 4 5 ", b"1 nan ", b"1 1e400 ",
                               b"'t\xff ", b"1 'a 'b ", b"1 0.5 zz"])
            bar = lines[i].find(b"|")
            lines[i] = head + (lines[i][bar:] if bar >= 0 else lines[i])
            choice = head
        else:              # bar removed
            lines[i] = lines[i].replace(b"|", b" ", 1)
            choice = b"(first '|' removed)"
        return f"vw line {i + 1}: {choice!r}"
    if kind == "long_line":
        # a row with more repeated slots than the merge table holds (merge_row's sort path)
        if fmt == "svmlight":
            body = b" ".join(b"%d:%d" % (rng.randrange(0, 3000), rng.randrange(1, 5))
                             for _ in range(2500))
            line = b"1 " + body
        else:
            body = b" ".join(rng.choice(WORDS) + b":%d" % rng.randrange(1, 5) for _ in range(2500))
            line = b"1 |f " + body
        lines.insert(rng.randrange(len(lines) + 1), line)
        return "a line of 2500 features"
    return kind


def _compress(rng, data, desc):
    kind = rng.choice(["gzip", "bzip2", "xz"])
    if kind == "gzip":
        raw = gzip.compress(data, mtime=0)
        if rng.random() < 0.15:   # two members
            raw += gzip.compress(b"", mtime=0)
    elif kind == "bzip2":
        raw = bz2.compress(data)
    else:
        raw = lzma.compress(data)
    desc.append(f"compressed with {kind}")
    if rng.random() < 0.4:
        how = rng.randrange(5)
        if how == 0 and len(raw) > 12:
            p = rng.randrange(10, len(raw))
            raw = raw[:p] + bytes([raw[p] ^ (1 << rng.randrange(8))]) + raw[p + 1:]
            desc.append(f"flip a bit of compressed byte {p}")
        elif how == 1:
            p = rng.randrange(6, len(raw))
            raw = raw[:p]
            desc.append(f"compressed bytes truncated at {p}")
        elif how == 2:
            garbage = rng.choice([b"\x00\x00\x00", b"garbage\n", b"\x1f\x8b", b"BZh9",
                                  raw[:len(raw) // 2]])
            raw += garbage
            desc.append(f"append {garbage[:12]!r} after the compressed stream")
        elif how == 3 and len(raw) > 8:
            raw = raw[:-8] + bytes(8)
            desc.append("zero the last 8 compressed bytes (checksum, size)")
        else:
            raw = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind](raw)
            desc.append(f"compressed twice with {kind}")
    return raw, {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz"}[kind]


def make_case(seed, index, max_lines=30, mutations=None):
    """The case (seed, index): the same arguments always give the same bytes and options."""
    rng = random.Random(f"streamherd-fuzz:{seed}:{index}")
    fmt = rng.choice(["svmlight", "vw"])
    scheme = rng.choice(["pm1", "pm1", "01", "01", "multi-int", "multi-name", "real"])
    label = _labels(rng, scheme)
    train_args, predict_args = [], []
    task, classes = "auto", None
    if scheme == "real":
        task = "regression"
        train_args += ["--loss", "squared"]
        algo = rng.choice(REGRESSION_ALGOS)
    else:
        algo = rng.choice(BINARY_ALGOS)
        if scheme.startswith("multi"):
            r = rng.random()
            if r < 0.25:
                task = "multiclass"
                train_args += ["--multiclass", "ova"]
            elif r < 0.5:
                task = "multiclass"
                pool = sorted({label() for _ in range(40)})
                if rng.random() < 0.5 and len(pool) > 2:
                    pool.remove(rng.choice(pool))        # a class outside the set: bad lines
                classes = pool
                train_args += ["--classes", ",".join(pool)]
    if algo is not None:
        train_args += ["--algo", algo]
    r = rng.random()
    if r < 0.3:
        train_args += ["-b", "10"]
    elif r < 0.5:
        train_args += ["-b", "4"]
    if rng.random() < 0.15:
        train_args.append("--normalize")
    if rng.random() < 0.15:
        train_args += ["--format", fmt if rng.random() < 0.8 else rng.choice(["svmlight", "vw"])]
    r = rng.random()
    if r < 0.2:
        predict_args.append("--raw")
    elif r < 0.35 and algo in GAUSSIAN and task != "regression":
        predict_args.append("--proba")
    elif r < 0.45 and scheme.startswith("multi"):
        predict_args.append("--scores")

    n = rng.randrange(5, max_lines + 1)
    lines = []
    for _ in range(n):
        r = rng.random()
        if r < 0.06:
            lines.append(rng.choice([b"", b"  ", b"\t"]))
        elif r < 0.1:
            lines.append(rng.choice([b"# a comment line", b"#", b"  # 1 1:2 |f"]))
        elif fmt == "svmlight":
            lines.append(_svmlight_line(rng, label()))
        else:
            lines.append(_vw_line(rng, None if rng.random() < 0.08 else label()))
    desc = []
    count = rng.choice([0, 1, 1, 2, 2, 3, 4]) if mutations is None else mutations
    for _ in range(count):
        desc.append(mutate(rng, lines, fmt))
    r = rng.random()
    if r < 0.2:
        ending = b"\r\n"
    elif r < 0.25:
        ending = None  # mixed
    else:
        ending = b"\n"
    if ending is None:
        data = b"".join(line + rng.choice([b"\n", b"\r\n"]) for line in lines)
    else:
        data = b"".join(line + ending for line in lines)
    if data and rng.random() < 0.15:
        data = data.rstrip(b"\n")   # no final newline (maybe a last CR stays)
        desc.append("no final newline")
    suffix = ".svm" if fmt == "svmlight" else ".vw"
    if rng.random() < 0.25:
        raw, extension = _compress(rng, data, desc)
        suffix += extension
    else:
        raw = data
    stdin = rng.random() < 0.15
    return Case(name=f"s{seed}-{index}", fmt=fmt, raw=raw, suffix=suffix,
                train_args=train_args, predict_args=predict_args, task=task, classes=classes,
                stdin=stdin, mutations=desc, existing_model=rng.random() < 0.2)


# ---------------------------------------------------------------- the oracle

EXPECTED_CODES = (0, 2)
_LOCATION = re.compile(r"^streamherd: (.+?):(\d+): ")


@dataclass
class Failure:
    signature: str            # the failure's class, for counting
    detail: str

    def __str__(self):
        return f"[{self.signature}] {self.detail}"


@dataclass
class Run:
    args: list
    code: int                 # None on timeout
    stdout: bytes
    stderr: str
    seconds: float
    stdin: str = None
    what: str = ""            # which run of the oracle (train, train-skip-bad, predict...)

    def command(self):
        text = " ".join(_quote(a) for a in ["python", "-m", "streamherd", *self.args])
        return text + (f" < {self.stdin}" if self.stdin else "")

    def last_line(self):
        lines = self.stderr.rstrip("\n").split("\n")
        return lines[-1] if lines else ""

    def location(self):
        """(line number, is a malformed-line error) of the error message; line None when the
        message names no line (a learner's error names one too, but is no malformed line)."""
        last = self.last_line()
        m = _LOCATION.match(last)
        malformed = "--skip-bad" in last or re.search(r": line in \w+ format", last) is not None
        return (int(m.group(2)) if m else None), malformed


def _quote(arg):
    return arg if re.fullmatch(r"[\w.,:/=+-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def run_streamherd(args, cwd, timeout, stdin=None):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    started = time.monotonic()
    with open(Path(cwd) / stdin, "rb") if stdin else contextlib.nullcontext(
            subprocess.DEVNULL) as infile:
        try:
            proc = subprocess.run([sys.executable, "-m", "streamherd", *args], cwd=cwd, env=env,
                                  stdin=infile, capture_output=True, timeout=timeout)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:
            code, out, err = None, e.stdout or b"", e.stderr or b""
    return Run(list(args), code, out, err.decode("utf-8", "replace"),
               time.monotonic() - started, stdin)


def _exception_name(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\w*)\b", line)
        if m:
            return m.group(1)
    return lines[-1][:60] if lines else "?"


def check_run(run, what, one_line=True):
    """What every run must do: finish, exit 0 or 2, no traceback, an error in one line."""
    if run.code is None:
        return [Failure(f"timeout:{what}", f"{run.command()} did not finish in "
                                            f"{run.seconds:.0f} s")]
    if "Traceback" in run.stderr:
        return [Failure(f"traceback:{what}:{_exception_name(run.stderr)}",
                        f"{run.command()} exited {run.code} with a traceback:\n"
                        f"{run.stderr[-1500:]}")]
    if run.code not in EXPECTED_CODES:
        return [Failure(f"exit-code:{what}:{run.code}",
                        f"{run.command()} exited {run.code}; stderr: {run.stderr[-600:]}")]
    if run.code == 2:
        lines = run.stderr.rstrip("\n").split("\n")
        if not lines[-1].startswith("streamherd: ") or (one_line and len(lines) != 1):
            return [Failure(f"stderr-format:{what}",
                            f"{run.command()} exited 2 but stderr is not one line "
                            f"'streamherd: ...': {run.stderr[-600:]!r}")]
    return []


def ok(run):
    """Exited 0 or 2 without a traceback (its other checks are then meaningful)."""
    return run.code in EXPECTED_CODES and "Traceback" not in run.stderr


def load_npz(path):
    """(arrays with meta as a str array, problem or None)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except Exception as e:  # noqa: BLE001 - any way a model cannot be read is the finding
        return None, f"np.load failed: {type(e).__name__}: {e}"
    if "meta" not in arrays:
        return arrays, "no meta array"
    try:
        json.loads(arrays["meta"].item())
    except ValueError as e:
        return arrays, f"meta is not JSON: {e}"
    for name, array in arrays.items():
        # format 3 (streamherd/model.py): a float64 array's values, and its int64 indices
        if name.endswith((".indices", ".slots")) and array.dtype == np.int64:
            continue
        if name != "meta" and (array.dtype.kind != "f" or not np.all(np.isfinite(array))):
            return arrays, f"array {name!r} ({array.dtype}) holds non-finite values"
    return arrays, None


SENTINEL = b"not a model: a file that a failed run must leave as it is\n"


def check_model(run, path, what):
    """exit 0 with -f: a loadable model of finite arrays; any other exit: no model file (or the
    file that was there before, untouched)."""
    if run.code is not None and run.code != 0 and path.exists() and \
            path.read_bytes() == SENTINEL:
        return None, []
    if run.code == 0:
        if not path.exists():
            return None, [Failure(f"model-missing:{what}",
                                  f"{run.command()} exited 0 but wrote no model")]
        arrays, problem = load_npz(path)
        if problem:
            sig = "model-nonfinite" if "non-finite" in problem else "model-unloadable"
            return None, [Failure(f"{sig}:{what}", f"{run.command()}: {problem}")]
        return arrays, []
    if run.code is not None and path.exists():
        replaced = " (it replaced the file that was there)" if what == "train" and \
            path.read_bytes()[:2] == b"PK" else ""
        return None, [Failure(f"model-written-on-error:{what}",
                              f"{run.command()} exited {run.code} but {path.name} "
                              f"exists{replaced}")]
    return None, []


def models_differ(a, b, exact=True):
    """None when the models are equal (np.array_equal, and the same meta when exact), else
    what differs."""
    if set(a) != set(b):
        return f"arrays {sorted(a)} against {sorted(b)}"
    for name in sorted(a):
        x, y = a[name], b[name]
        if name == "meta":
            if exact and str(x) != str(y):
                return f"meta differs:\n  {str(x)[:700]}\n  {str(y)[:700]}"
            continue
        if x.shape != y.shape:
            return f"array {name!r} has shapes {x.shape} and {y.shape}"
        if not np.array_equal(x, y):
            worst = float(np.max(np.abs(x - y)))
            largest = max(float(np.max(np.abs(x), initial=0)), float(np.max(np.abs(y), initial=0)))
            return (f"array {name!r} differs in {int(np.sum(x != y))} of {x.size} entries, by up "
                    f"to {worst:.3g} (largest entry {largest:.3g})")
    return None


def _close(a, b):
    """Equal up to a few roundings (a value one ulp off, carried through the updates)."""
    for name in a:
        if name != "meta" and a[name].shape == b[name].shape:
            x, y = a[name], b[name]
            scale = max(float(np.max(np.abs(x), initial=0)), float(np.max(np.abs(y), initial=0)))
            if not np.allclose(x, y, rtol=1e-6, atol=1e-9 * scale):
                return False
    return True


def _reasons(reasons):
    return ",".join(sorted(set(reasons))) or "none"


def _meta(arrays):
    return json.loads(arrays["meta"].item())


def _line(ref, line):
    if line is None or not 1 <= line <= len(ref.lines):
        return b"?"
    return ref.lines[line - 1][:120]


def _what(message):
    """The kind of a streamherd error message, e.g. 'bad feature value'."""
    m = re.match(r"^streamherd: .+?:\d+: ([^'(;]+)", message)
    return m.group(1).strip() if m else re.sub(r"[\d'\"].*", "", message[12:52]).strip()


def _same_message(a, b, names_a, names_b):
    for name in names_a:
        a = a.replace(name, "FILE")
    for name in names_b:
        b = b.replace(name, "FILE")
    return a == b, a, b


def check_case(case, workdir, timeout=60.0):
    """Run the oracle on ``case`` in the folder ``workdir`` (made, or reused).

    Returns (failures, runs, info): the broken expectations, the Run of every process, and what
    the reference found (for the campaign's counts and reports).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for old in workdir.glob("*.npz"):
        old.unlink()
    (workdir / case.filename).write_bytes(case.raw)
    failures, runs = [], []
    info = {"bad": 0, "rows": 0, "compressed": None, "corrupt": False, "format": None}

    def go(args, what, one_line=True, stdin=None):
        run = run_streamherd(args, workdir, timeout, stdin)
        run.what = what
        runs.append(run)
        failures.extend(check_run(run, what, one_line))
        return run

    def fail(signature, detail):
        failures.append(Failure(signature, detail))

    kind, data, decompress_error = decompress(case.raw)
    info["compressed"] = kind
    base = case.train_args
    if case.existing_model:
        (workdir / "plain.npz").write_bytes(SENTINEL)
    # 1. train, quiet: an error is exactly one line.
    plain = go(["train", "-" if case.stdin else case.filename, *base, "--quiet", "-f",
                "plain.npz"], "train", stdin=case.filename if case.stdin else None)
    if plain.code is not None and plain.stdout:
        fail("train-stdout", f"{plain.command()} wrote to stdout: {plain.stdout[:200]!r}")
    plain_model, problems = check_model(plain, workdir / "plain.npz", "train")
    failures.extend(problems)
    # 2. train --skip-bad, with its table and summary ("bad lines skipped = N").
    skip = go(["train", case.filename, *base, "--skip-bad", "-f", "skip.npz"], "train-skip-bad",
              one_line=False)
    skip_model, problems = check_model(skip, workdir / "skip.npz", "train-skip-bad")
    failures.extend(problems)

    if data is None:   # not decompressible (or zstd): every run fails, in one line
        info["corrupt"] = True
        for run in (plain, skip):
            if run.code == 0:
                fail(f"accepted-corrupt-compressed:{kind}",
                     f"{run.command()} exited 0 on {kind} input that Python cannot decompress "
                     f"({decompress_error}); {'; '.join(case.mutations)}")
        return failures, runs, info

    fmt = case.explicit_format()
    ref = reference(data, fmt, case.bits())
    classes = {label_key(c.encode()) for c in case.classes} if case.classes is not None else None
    task, label_bad = label_level(ref, case.task, classes)
    bad = {**label_bad, **ref.bad}
    good = [r for r in ref.rows if r.line not in bad]
    labeled = any(r.label is not None for r in good)
    conflict = task == "binary" and binary_conflict(good)
    info.update(format=ref.fmt, task=task, bad=len(bad), rows=len(good),
                reasons=sorted(set(bad.values())))
    what_bad = _reasons(bad.values())

    def rejected(run, line, where=""):
        reason = ref.bad.get(line) or label_bad.get(line)
        status = (f"malformed ({reason})" if reason else "blank or comment"
                  if line in ref.skipped else "a good example")
        fail(f"rejected-good-line:{_what(run.last_line())}",
             f"{run.command()} rejected line {line} {_line(ref, line)!r}{where}, which the "
             f"reference reads as {status}: {run.last_line()[:300]}")

    # The plain run against the reference: the first malformed line named (one the parser
    # finds before the labels are looked at), or a clean run.
    if ok(plain):
        line, line_error = plain.location()
        first = min(ref.bad) if ref.bad else min(label_bad) if label_bad else None
        if first is not None:
            reason = bad[first]
            said = "exited 0" if plain.code == 0 else f"said: {plain.last_line()[:300]}"
            if line_error and line is not None and line < first:
                rejected(plain, line)
            elif plain.code == 0 or not line_error or line != first:
                fail(f"accepted-bad-line:{reason}",
                     f"line {first} is malformed ({reason}): {_line(ref, first)!r}; "
                     f"{plain.command()} {said}")
        elif plain.code == 2 and line_error:
            rejected(plain, line)
        elif not labeled and plain.code == 0:
            fail("no-labeled-example-accepted",
                 f"{plain.command()} exited 0 (and wrote a model) without a labeled example")
        elif conflict and plain.code == 0:
            values = sorted({r.value for r in good if r.value is not None})
            fail("label-conflict-accepted", f"{plain.command()} exited 0 on binary labels "
                                            f"{values}")

    # 3. --skip-bad against training on the file with the malformed lines blanked (blanked,
    # not removed: line numbers, and so messages, stay the same).
    cleaned = b"\n".join(b"" if i in bad else line for i, line in enumerate(ref.lines, 1))
    cleaned += b"\n" if line_ends(data).endswith(b"\n") else b""
    clean_name = "cleaned" + (".svm" if ref.fmt == "svmlight" else ".vw")
    (workdir / clean_name).write_bytes(cleaned)
    fixed_format = [] if "--format" in base else ["--format", ref.fmt]
    if bad or kind is not None or case.stdin:
        clean = go(["train", clean_name, *base, *fixed_format, "--quiet", "-f", "clean.npz"],
                   "train-cleaned")
        clean_model, problems = check_model(clean, workdir / "clean.npz", "train-cleaned")
        failures.extend(problems)
        if ok(clean):
            line, line_error = clean.location()
            if clean.code == 2 and line_error:
                rejected(clean, line, " of the cleaned file")
    else:
        clean, clean_model = plain, plain_model
    too_many = len(bad) > len(good)
    if ok(skip) and ok(clean):
        line, line_error = skip.location()
        if skip.code == 2 and line_error and line in ref.other_format:
            pass   # a line of the other format under --format auto: it may stop the run
        elif too_many:
            if skip.code == 0:
                fail("skip-bad-mostly-malformed",
                     f"{skip.command()} exited 0 after skipping {len(bad)} malformed lines of "
                     f"{len(bad) + len(good)} ({what_bad})")
        elif skip.code != clean.code:
            fail(f"skip-bad-exit:{skip.code}-vs-{clean.code}",
                 f"{skip.command()} exited {skip.code}, {clean.command()} exited {clean.code} "
                 f"(malformed: {what_bad}): {skip.last_line()[:300]} | "
                 f"{clean.last_line()[:300]}")
        elif skip.code == 0 and skip_model is not None and clean_model is not None:
            difference = models_differ(skip_model, clean_model)
            if difference:
                fail(f"skip-bad-model:{what_bad}",
                     f"{skip.command()} and {clean.command()} give different models: "
                     f"{difference}")
            m = re.search(r"^bad lines skipped = (\d+)$", skip.stderr, re.M)
            if m and int(m.group(1)) != len(bad):
                fail(f"skip-bad-count:{what_bad}",
                     f"{skip.command()} skipped {m.group(1)} lines, the reference {len(bad)}: "
                     f"{dict(sorted(bad.items())[:8])}")
        elif skip.code == 2:
            same, a, b = _same_message(skip.last_line(), clean.last_line(),
                                       [case.filename], [clean_name, case.filename, "<stdin>"])
            if not same:
                fail("skip-bad-error", f"{skip.command()}: {a} | {clean.command()}: {b}")

    # 4. predict --skip-bad with the trained model, on the same file: one output line per line
    # that is not blank or a comment, empty for each malformed line.
    model, arrays = next(((n, a) for n, a in (("skip.npz", skip_model), ("plain.npz", plain_model),
                                              ("clean.npz", clean_model)) if a is not None),
                         (None, None))
    if model is not None:
        meta = _meta(arrays)
        model_task = meta.get("task", "binary")
        args = ["predict", "-m", model, case.filename, "--skip-bad", "--quiet",
                *case.predict_args]
        if "--format" in base:
            args += ["--format", fmt]
        if "--scores" in args and model_task != "multiclass":
            args.remove("--scores")
        pred = go(args, "predict")
        _, predict_bad = label_level(ref, model_task)
        if model_task == "multiclass":
            predict_bad = {}
        either = {r.line for r in ref.rows if r.damage} if model_task == "multiclass" else set()
        predict_bad.update(ref.bad)
        lines_in = sorted(set(predict_bad) | {r.line for r in ref.rows})
        kept = len(lines_in) - len(predict_bad)
        line, line_error = pred.location()
        if pred.code == 2 and ok(pred):
            if not (line_error and line in ref.other_format) and \
                    not len(predict_bad) > kept:
                fail("predict-failed", f"{pred.command()} exited 2 on the file its model was "
                                       f"trained on: {pred.last_line()[:300]}")
        elif pred.code == 0:
            failures.extend(_check_predictions(pred, ref, lines_in, predict_bad, either))

    # 5. numbers off the exact fast path: the same model from the examples rewritten with
    # Python's float and repr.
    if any(r.hard for r in good) and clean_model is not None:
        canonical = b"".join(r.canonical + b"\n" for r in good)
        name = "canonical" + (".svm" if ref.fmt == "svmlight" else ".vw")
        (workdir / name).write_bytes(canonical)
        canon = go(["train", name, *base, *fixed_format, "--quiet", "-f", "canonical.npz"],
                   "train-canonical")
        canon_model, problems = check_model(canon, workdir / "canonical.npz", "train-canonical")
        failures.extend(problems)
        if canon.code == 0 and canon_model is not None:
            difference = models_differ(clean_model, canon_model, exact=False)
            if difference:
                size = "rounding" if _close(clean_model, canon_model) else "value"
                hard = [t for r in good if r.hard for t in _TOKEN.findall(ref.lines[r.line - 1])
                        if is_hard_number(t.rsplit(b":", 1)[-1])]
                fail(f"number-parsing:{size}",
                     f"{clean.command()} and {canon.command()} (numbers rewritten by Python's "
                     f"float and repr) give different models: {difference}; numbers "
                     f"{hard[:6]}")
        elif ok(canon) and canon.code == 2 and clean.code == 0:
            fail("number-parsing:rejected", f"{canon.command()} failed where {clean.command()} "
                                            f"succeeded: {canon.last_line()[:300]}")
    if re.search(rb"\r(?!\n)", data):   # old Mac line ends: say so (line numbers depend on them)
        for failure in failures:
            failure.signature += " [lone CR]"
    return failures, runs, info


def _check_predictions(run, ref, lines_in, predict_bad, either):
    out = run.stdout.split(b"\n")
    if out and out[-1] == b"":
        out.pop()
    if len(out) != len(lines_in):
        return [Failure("predict-lines", f"{run.command()} wrote {len(out)} lines for "
                                         f"{len(lines_in)} lines that are not blank or comments "
                                         f"({len(predict_bad)} of them malformed)")]
    rows = {r.line: r for r in ref.rows}
    for text, line in zip(out, lines_in):
        if line in either:
            continue
        if line in predict_bad:
            if text:
                return [Failure("predict-lines", f"{run.command()}: malformed line {line} "
                                                 f"({predict_bad[line]}) has output {text[:80]!r}")]
            continue
        if not text:
            return [Failure("predict-lines", f"{run.command()}: example line {line} "
                                             f"{_line(ref, line)!r} has an empty output line")]
        tag = rows[line].tag
        if tag is not None:
            tag = tag.decode("utf-8", "replace").encode("utf-8")
            if not text.endswith(b" " + tag):
                return [Failure("predict-tag", f"{run.command()}: the output for line {line} is "
                                               f"{text[:80]!r}, without its tag {tag!r}")]
    return []


# ---------------------------------------------------------------- warm-up

def warm_up(workdir, timeout=900):
    """Train and predict once in each task and format, so that numba compiling streamherd's
    kernels (the first run after an install or an edit) is not charged to a case's timeout.
    (A learner's own kernels still compile in the first case that uses it.)"""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "w.svm").write_bytes(b"1 1:0.5 2:1e-3\n-1 qid:2 3:2\n")
    (workdir / "w.vw").write_bytes(b"1 0.5 't|f a:2 b |g:2 c\n-1 |f d\n")
    (workdir / "m.svm").write_bytes(b"a 1:1\nb 2:1\nc 3:1\n")
    for name, train, predict in (("w.svm", [], []), ("w.vw", ["--skip-bad"], ["--raw"]),
                                 ("w.svm", ["--loss", "squared", "--algo", "arow"], []),
                                 ("w.vw", ["--multiclass", "ova"], ["--scores"]),
                                 ("m.svm", [], ["--skip-bad"])):
        run_streamherd(["train", name, "--quiet", "-f", "w.npz", *train], workdir, timeout)
        run_streamherd(["predict", "-m", "w.npz", name, "--quiet", *predict], workdir, timeout)
    shutil.rmtree(workdir, ignore_errors=True)
