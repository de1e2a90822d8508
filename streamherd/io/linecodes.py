"""Codes the parse kernels return for a malformed line, and the words a user reads for each."""

OK = 0
BAD_LABEL = 1
MISSING_COLON = 2
BAD_INDEX = 3
MISSING_VALUE = 4
BAD_VALUE = 5
BINARY_BYTES = 6
BAD_IMPORTANCE = 7
EXTRA_TOKEN = 8
BAD_SCALE = 9
MISSING_LABEL = 10
# Finite values whose product (VW's namespace scale times value) or sum (repeated features
# of a line) is not.
VALUE_OVERFLOW = 11
# A line of the other format: svmlight input with a '|' before any '#' that the svmlight parser
# does not take; VW input with no '|' before a '#' (or at all) and index:value tokens. Under
# --format auto they stop the run even with --skip-bad (see reader.ChunkReader._parse).
VW_LINE = 12
SVMLIGHT_LINE = 13
OTHER_FORMAT = (VW_LINE, SVMLIGHT_LINE)

# code -> (what is wrong, what was expected), in words that fit a line of either format; a
# code whose words are the format's own (an svmlight index, a VW name or namespace) is in
# SVMLIGHT_MESSAGES and VW_MESSAGES instead: see message()
MESSAGES = {
    BAD_LABEL: ("bad label", "a number such as 1, -1 or 0"),
    BAD_VALUE: ("bad feature value", "a finite number (nan and inf are not allowed)"),
    BINARY_BYTES: ("binary bytes in a text line", "text in svmlight or VW format"),
    BAD_IMPORTANCE: ("bad importance weight", "a finite non-negative number after the label"),
    EXTRA_TOKEN: ("unexpected token before the first '|'",
                  "label [importance] ['tag]|namespace features"),
    BAD_SCALE: ("bad namespace scale", "|namespace:scale with a finite number"),
    MISSING_LABEL: ("line has no label", "a label before the features (train needs labels)"),
    VW_LINE: ("line in VW format (a '|' before any '#')", "svmlight lines"),
    SVMLIGHT_LINE: ("line in svmlight format (index:value features, no '|')", "VW lines"),
}

# (only the svmlight parser returns MISSING_COLON and BAD_INDEX: a VW feature is a name, with
# or without ':value')
SVMLIGHT_MESSAGES = {
    MISSING_COLON: ("feature without ':'", "index:value"),
    BAD_INDEX: ("bad feature index", "a non-negative integer index, as in 12:0.5"),
    MISSING_VALUE: ("feature index without a value", "index:value, as in 12:0.5"),
    VALUE_OVERFLOW: ("feature value out of range",
                     "values whose sums over a repeated index stay finite (below 1.8e308)"),
}

VW_MESSAGES = {
    MISSING_VALUE: ("feature without a value",
                    "name:value, as in a:0.5, or the name alone for the value 1"),
    VALUE_OVERFLOW: ("feature value out of range",
                     "values whose products with their namespace scale and sums over repeated "
                     "features stay finite (below 1.8e308)"),
}


def message(code, vw):
    """(what is wrong, what was expected) for a line of the format the parse kernel that
    returned ``code`` reads (``vw``: VW, else svmlight)."""
    return (VW_MESSAGES if vw else SVMLIGHT_MESSAGES).get(code) or MESSAGES[code]


# A UTF-8 byte-order mark (some Windows editors write one) before a label: the sources skip
# one at a file's start (io/sources.py); one further on comes from files joined together
BYTE_ORDER_MARK = b"\xef\xbb\xbf"


def byte_order_mark_error(where, token, path):
    """The message for a malformed token that begins with a byte-order mark, or None."""
    if not token.startswith(BYTE_ORDER_MARK):
        return None
    return (f"{where}: the line begins with a UTF-8 byte-order mark (bytes EF BB BF: files "
            f"joined together?), which is no part of an svmlight or VW line; remove it, e.g. "
            f"sed -i 's/^\\xEF\\xBB\\xBF//' {path}, or pass --skip-bad to skip such lines")


# A line longer than this is an error (--max-line-bytes raises it): an input without line ends
# (/dev/zero, a binary file) would otherwise be carried over, block after block, without bound.
MAX_LINE_BYTES = 64 << 20


def line_too_long(where, limit):
    """The message for a line (at ``where``, file:line) longer than ``limit`` bytes."""
    return (f"{where}: a line longer than {limit} bytes (no line end in them): is the input a "
            f"text file? Pass --max-line-bytes N to read longer lines")
