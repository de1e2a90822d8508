"""Crosses of namespaces (VW's -q, --cubic, --interactions) and the namespaces kept or ignored
(--keep, --ignore, --ignore_linear), with VW 9's slots.

A namespace is named by its first byte, its "letter", as in VW (case-sensitive: ``a`` and ``A``
are two namespaces; every namespace whose name starts with ``a`` is namespace ``a``). The bare
``|`` and every svmlight feature are VW's default namespace, the letter ' ' (space). ``:`` in a
letter interaction stands for every namespace of the line (``-q ::``). An interaction of
``|``-separated full names (``--interactions user|item``) crosses only the namespaces of exactly
those names, as VW's --experimental_full_name_interactions.

A crossed feature's slot is VW's: h = slot(first); h = h * 16777619 ^ slot(next) for each next
term (uint64), masked to the bits; its value is the product of the values. VW's rules kept here:
the constant feature is never crossed; the same namespace twice in a row in an interaction
pairs each feature with itself and the ones after it (``-q aa``: i <= j), VW's default without
--permutations; duplicate interactions (the same namespaces in another order) are dropped and
the ones that name a namespace twice sorted, as VW does without --leave_duplicate_interactions.

The parse kernels (features/stage.py) note each feature's namespace at the mirror position of
the output arrays (``len - 1 - k`` for the row's k-th feature: the top half, which the rows
never reach, see space.max_block_features; the same few pages for every row, so they stay in
the cache and a block's notes fault in no memory of their own), and ``cross_row`` forms the
crosses when the row ends (``cross_letter_pairs`` the usual -q's), before repeated slots are
merged (VW crosses the features as written).
"""
import numpy as np
from numba import njit

from streamherd.errors import StreamherdError
from streamherd.features.hashing import hashstring
from streamherd.features.names import mark_unread, note_cross, note_cross_members
from streamherd.io.lexing import swar_separators
from streamherd.io.positions import unsigned
from streamherd.io.references import uncounted

FNV_PRIME = np.uint64(16777619)
WILDCARD = ord(":")
# VW expands ':' over the namespaces whose letter is printable ASCII (interactions.h)
_FIRST_INTERACTING, _LAST_INTERACTING = ord(" "), ord("~")
ANY_NAMESPACE = -1.0  # the seed of a letter term: any namespace of that letter


def _letters(flag, text):
    """The letters of ``text`` as bytes (ASCII only: a letter is a namespace's first byte)."""
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:
        raise StreamherdError(f"{flag} {text!r}: namespace letters must be ASCII (a namespace "
                              f"is named by its first byte); use the letters as written in "
                              f"the data") from None


def letter_interactions(quadratic=(), cubic=(), interactions=()):
    """VW's list of letter interactions (bytes each) of -q, --cubic and the letter items of
    --interactions, deduplicated and ordered as VW's parse_args does; the full-name items of
    --interactions go to ``full_name_interactions``."""
    terms = []
    for flag, specs, order in (("-q", quadratic, 2), ("--cubic", cubic, 3)):
        for spec in specs:
            letters = _letters(flag, spec)
            if len(letters) != order:
                raise StreamherdError(f"{flag} {spec!r} names {len(letters)} namespaces, not "
                                      f"{order}; give {order} namespace letters, e.g. "
                                      f"{flag} {'ab'[:order] if order == 2 else 'abc'}")
            terms.append(letters)
    for item in _items(interactions):
        if "|" not in item:
            letters = _letters("--interactions", item)
            if len(letters) < 2:
                raise StreamherdError(f"--interactions {item!r} names one namespace; an "
                                      f"interaction crosses at least two, e.g. ab")
            terms.append(letters)
    for letters in terms:
        if WILDCARD in letters and set(letters) != {WILDCARD}:
            raise StreamherdError(f"interaction {letters.decode()!r}: ':' stands for every "
                                  f"namespace only as a whole interaction (::, :::); name the "
                                  f"namespaces instead")
    return _vw_sorted_and_deduplicated(terms)


def _items(interactions):
    """The comma-separated items of the --interactions flags."""
    return [item for spec in interactions for item in spec.split(",") if item]


def _vw_sorted_and_deduplicated(terms):
    """VW's sort_interactions_comparator, then sort_and_filter_duplicate_interactions: of the
    interactions with the same namespaces the first in (length, bytes) order stays, and one
    that names a namespace twice apart from another ('aba', 'aab') gets its letters sorted."""
    terms = sorted(set(terms), key=lambda t: (len(t), t))
    kept, seen = [], set()
    for term in terms:
        key = bytes(sorted(term))
        if key not in seen:
            seen.add(key)
            # (VW asks must_be_left_sorted of the sorted letters: 'uiu' -> 'iuu' has a pair)
            kept.append(key if _must_be_sorted(key) else term)
    return kept


def _must_be_sorted(term):
    """VW's must_be_left_sorted: a repeated neighbour and a different namespace both occur."""
    pairs = any(a == b for a, b in zip(term, term[1:]))
    different = any(a != b for a, b in zip(term, term[1:]))
    return pairs and different


def full_name_interactions(interactions=()):
    """The ``|``-separated items of --interactions as tuples of (letter, seed) terms, sorted
    within each and deduplicated as VW's --experimental_full_name_interactions."""
    result = set()
    for item in _items(interactions):
        if "|" in item:
            names = item.split("|")
            if len(names) < 2 or not all(names) or ":" in item:
                raise StreamherdError(f"--interactions {item!r}: a full-name interaction is at "
                                      f"least two namespace names joined by '|', e.g. "
                                      f"user|item (no ':' wildcard)")
            result.add(tuple(sorted((_letters("--interactions", name)[0], _seed(name))
                                    for name in names)))
    return sorted(result)


def _seed(name):
    """A namespace's seed: VW's hashstring of its name with seed 0."""
    raw = np.frombuffer(name.encode("ascii"), np.uint8)
    return int(hashstring(raw, 0, len(raw), np.uint64(0)))


def letter_masks(flag, text):
    """The letters of ``text`` as a bit set: four uint64 words (bit ``c & 63`` of word
    ``c >> 6`` for letter c)."""
    words = [0, 0, 0, 0]
    for c in _letters(flag, text):
        words[c >> 6] |= 1 << (c & 63)
    return tuple(np.uint64(w) for w in words)


def kept_masks(ignore="", keep=""):
    """The namespaces whose features are read: all but --ignore's, or only --keep's (VW: --keep
    overrides --ignore)."""
    if keep:
        return letter_masks("--keep", keep)
    ignored = letter_masks("--ignore", ignore)
    return tuple(np.uint64(~int(w) & 0xFFFFFFFFFFFFFFFF) for w in ignored)


def program(letter_terms, full_name_terms):
    """The arrays cross_row takes: (letters, seeds, orders, letters sorted, wildcard orders).

    A wildcard interaction stands for the combinations of the namespaces seen, deduplicated
    with the explicit ones as VW's compile_interactions does: of the same namespaces the
    first in byte order stays. VW's quadratic wildcard makes them in rising order, which is
    first: an explicit pair of printable letters goes. Its wildcard of three or more makes
    them falling (sorted when a letter repeats beside another): an explicit one stays, and
    the row's kernel skips the combination it stands for (the sorted letters)."""
    wildcard_orders = sorted({len(t) for t in letter_terms if t[0] == WILDCARD})
    explicit = [[(c, ANY_NAMESPACE) for c in t] for t in letter_terms
                if t[0] != WILDCARD and not (len(t) == 2 and 2 in wildcard_orders and all(
                    _FIRST_INTERACTING <= c <= _LAST_INTERACTING for c in t))]
    explicit += [[(c, float(seed)) for c, seed in t] for t in full_name_terms]
    width = max([len(t) for t in explicit] + wildcard_orders + [1])
    letters = np.full((len(explicit), width), -1, np.int64)
    seeds = np.full((len(explicit), width), ANY_NAMESPACE, np.float64)
    for i, term in enumerate(explicit):
        letters[i, :len(term)] = [c for c, _ in term]
        seeds[i, :len(term)] = [s for _, s in term]
    orders = np.array([len(t) for t in explicit], np.int64)
    letters_sorted = np.sort(letters, axis=1)   # -1 pads first: compared with the pads
    return letters, seeds, orders, letters_sorted, np.array(wildcard_orders, np.int64)


# ------------------------------------------------------------------ the kernel (per row)

@njit(cache=True, nogil=True)
def cross_row(indices, values, start, nnz, mask, program, linear_masks, naming):
    """Append the crosses of the row ``indices[start:nnz]`` (namespaces noted at the mirror
    positions) after it, as ``program`` (see there) says, then drop the linear features of the
    --ignore_linear namespaces (``linear_masks``, a bit set); returns the row's new end. A
    ``naming`` (features/names.py) notes each cross's members, and marks the linear features
    of --ignore_linear unread instead of dropping them (the positions of the members stay)."""
    mirror = len(indices) - 1 + start   # position p's note at mirror - p
    out = _crosses(indices, values, start, nnz, mirror, mask, program, naming)
    if linear_masks[0] | linear_masks[1] | linear_masks[2] | linear_masks[3]:
        if len(naming) > 0:
            mark_unread(naming, indices, start, nnz, mirror, linear_masks)
            return out
        return _drop_ignored_linear(indices, values, start, nnz, out, mirror, linear_masks)
    return out


def usual_pairs(program, linear_masks):
    """Whether cross_letter_pairs makes this program's crosses: every interaction crosses two
    letters (no wildcard, no full names, no third term), and no namespace's linear features
    are dropped (--ignore_linear)."""
    _, seeds, orders, _, wildcard_orders = program
    return bool(len(wildcard_orders) == 0 and np.all(orders == 2)
                and np.all(seeds[:, :2] == ANY_NAMESPACE) and not any(linear_masks))


@njit(cache=True, nogil=True)
def cross_letter_pairs(indices, values, start, nnz, mask, letters, slots, products):
    """cross_row for a program of usual_pairs, its interactions' ``letters``; ``slots`` and
    ``products``: scratch (uint64, float64) as long as the row. The same crosses in the same
    order as _cross's: for each feature of the first letter in row order, each of the second
    letter in row order (from that feature itself when the letters are the same). Read
    straight from the row's notes, with no grouping by letter: its arrays would cost more than
    these crosses (allocation, numba's reference counting of each); the second letter's slots
    and values gathered first, so that the loop over them is one the compiler vectorises."""
    mirror = len(indices) - 1 + start
    umask = np.uint64(mask)
    out = nnz
    for i in range(letters.shape[0]):
        first = letters[i, 0]
        second = letters[i, 1]
        seconds = 0   # the second letter's features, in row order
        for k in range(start, nnz):
            if indices[mirror - k] == second:
                slots[seconds] = np.uint64(indices[k])
                products[seconds] = values[k]
                seconds += 1
        same = first == second
        firsts = 0
        for k in range(start, nnz):
            if indices[mirror - k] != first:
                continue
            half_hash = np.uint64(indices[k]) * FNV_PRIME
            value = values[k]
            skipped = firsts if same else 0
            out = _write_crosses(indices, values, out, half_hash, value, slots, products,
                                 skipped, seconds, umask)
            firsts += 1
    return out


@njit(cache=True, nogil=True, inline="always")
def _write_crosses(indices, values, out, half_hash, value, slots, products, first, end, umask):
    """The crosses of one feature (its hash times FNV_PRIME, ``half_hash``; its ``value``)
    with the gathered ``slots[first:end]`` and ``products[first:end]``, at ``out``; returns
    the new end."""
    # at unsigned positions (io/positions.py) the loop is a plain one the compiler vectorises
    to, source = unsigned(out), unsigned(first)
    for j in range(unsigned(end - first)):
        indices[to + j] = np.int32((half_hash ^ slots[source + j]) & umask)
        values[to + j] = value * products[source + j]
    return out + end - first


@njit(cache=True, nogil=True)
def _crosses(indices, values, start, nnz, mirror, mask, program, naming):
    """The crosses of any program, written at ``nnz``; returns the new end."""
    letters, seeds, orders, letters_sorted, wildcard_orders = program
    n = nnz - start
    width = letters.shape[1]
    # one allocation per kind for the scratch: a row's allocations cost as much as its crosses
    whole = np.empty(4 * n + 4 + 2 * width, np.int64)
    members = whole[:n]      # row positions grouped by letter, in row order
    group_letter = whole[n:2 * n + 1]
    group_start = whole[2 * n + 1:3 * n + 3]
    filled = whole[3 * n + 3:4 * n + 4]
    term_letters = whole[4 * n + 4:4 * n + 4 + width]
    cursors = whole[4 * n + 4 + width:]
    reals = np.empty(2 * width, np.float64)
    term_seeds = reals[:width]
    products = reals[width:]
    hashes = np.empty(width, np.uint64)
    groups = _group_by_letter(indices, start, n, mirror, members, group_letter, group_start,
                              filled)
    out = nnz
    scratch = (term_letters, term_seeds, cursors, hashes, products, naming)
    grouping = (members, group_letter, group_start, groups)
    for i in range(len(orders)):
        for t in range(orders[i]):
            term_letters[t] = letters[i, t]
            term_seeds[t] = seeds[i, t]
        out = _cross(indices, values, mirror, grouping, orders[i], scratch, mask, out)
    explicit = (seeds, orders, letters_sorted)
    for i in range(len(wildcard_orders)):
        out = _cross_wildcard(indices, values, mirror, grouping, wildcard_orders[i], scratch,
                              explicit, mask, out)
    return out


@njit(cache=True, nogil=True)
def _group_by_letter(indices, start, n, mirror, members, group_letter, group_start, filled):
    """Sort the row's positions by letter (stable, letters in rising order) into ``members``:
    group g holds members[group_start[g]:group_start[g + 1]]. Returns the number of groups."""
    groups = 0
    for k in range(n):   # the distinct letters, rising (insertion: a row has few namespaces)
        c = np.int64(indices[mirror - start - k])
        g = 0
        while g < groups and group_letter[g] < c:
            g += 1
        if g < groups and group_letter[g] == c:
            continue
        for h in range(groups, g, -1):
            group_letter[h] = group_letter[h - 1]
        group_letter[g] = c
        groups += 1
    for g in range(groups + 1):
        group_start[g] = 0
    for k in range(n):
        group_start[_group_of(group_letter, groups, indices[mirror - start - k]) + 1] += 1
    for g in range(groups):
        group_start[g + 1] += group_start[g]
    filled[:groups] = group_start[:groups]
    for k in range(n):
        g = _group_of(group_letter, groups, indices[mirror - start - k])
        members[filled[g]] = start + k
        filled[g] += 1
    return groups


@njit(cache=True, nogil=True, inline="always")
def _group_of(group_letter, groups, letter):
    g = 0
    while g < groups and group_letter[g] != letter:
        g += 1
    return g


@njit(cache=True, nogil=True)
def _cross(indices, values, mirror, grouping, order, scratch, mask, out):
    """Write the crosses of one interaction (``order`` terms in scratch's term arrays) at
    ``out``; returns the new end. Depth-first over the terms; a term equal to the one before
    starts at that one's feature (VW's combinations)."""
    members, group_letter, group_start, groups = grouping
    term_letters, term_seeds, cursors, hashes, products, naming = scratch
    for t in range(order):
        if _group_of(group_letter, groups, term_letters[t]) == groups:
            return out   # a namespace the row lacks: no crosses
    if order == 2 and term_seeds[0] == -1.0 and term_seeds[1] == -1.0:
        return _letter_pairs(indices, values, grouping, term_letters[0], term_letters[1], mask,
                             out, naming)
    t = 0
    cursors[0] = _next_member(values, mirror, grouping, term_letters[0], term_seeds[0],
                              group_start[_group_of(group_letter, groups, term_letters[0])])
    while t >= 0:
        g = _group_of(group_letter, groups, term_letters[t])
        if cursors[t] >= group_start[g + 1]:
            t -= 1
            if t >= 0:
                cursors[t] = _next_member(values, mirror, grouping, term_letters[t],
                                          term_seeds[t], cursors[t] + 1)
            continue
        p = members[cursors[t]]
        slot = np.uint64(indices[p])
        if t == 0:
            hashes[0] = slot
            products[0] = values[p]
        else:
            hashes[t] = (hashes[t - 1] * FNV_PRIME) ^ slot
            products[t] = products[t - 1] * values[p]
        if t == order - 1:
            if order == 2:   # the usual -q: the last term's loop written out
                out = _pairs(indices, values, mirror, grouping, term_letters[1], term_seeds[1],
                             cursors[1], (hashes[0], products[0], members[cursors[0]]), mask,
                             out, naming)
                t = 0
                cursors[0] = _next_member(values, mirror, grouping, term_letters[0],
                                          term_seeds[0], cursors[0] + 1)
                continue
            indices[out] = np.int32(hashes[t] & np.uint64(mask))
            values[out] = products[t]
            note_cross_members(naming, out, members, cursors, order)
            out += 1
            cursors[t] = _next_member(values, mirror, grouping, term_letters[t], term_seeds[t],
                                      cursors[t] + 1)
        else:
            same = term_letters[t + 1] == term_letters[t] and term_seeds[t + 1] == term_seeds[t]
            first = cursors[t] if same else group_start[
                _group_of(group_letter, groups, term_letters[t + 1])]
            t += 1
            cursors[t] = _next_member(values, mirror, grouping, term_letters[t], term_seeds[t],
                                      first)
    return out


@njit(cache=True, nogil=True)
def _letter_pairs(indices, values, grouping, first, second, mask, out, naming):
    """The crosses of two letters (the usual -q): two loops over their groups."""
    members, group_letter, group_start, groups = grouping
    g = _group_of(group_letter, groups, first)
    h = _group_of(group_letter, groups, second)
    umask = np.uint64(mask)
    for a in range(group_start[g], group_start[g + 1]):
        p = members[a]
        half_hash = np.uint64(indices[p]) * FNV_PRIME
        value = values[p]
        for b in range(a if g == h else group_start[h], group_start[h + 1]):
            out = _write_pair(indices, values, out, half_hash, value, p, members[b], umask,
                              naming)
    return out


@njit(cache=True, nogil=True, inline="always")
def _pairs(indices, values, mirror, grouping, letter, seed, cursor, first, mask, out, naming):
    """The crosses of one feature (``first``: its hash, its value, its position) with the
    members of the last term from ``cursor`` on."""
    members, group_letter, group_start, groups = grouping
    half_hash, product, first_position = first
    end = group_start[_group_of(group_letter, groups, letter) + 1]
    half_hash = half_hash * FNV_PRIME
    umask = np.uint64(mask)
    if seed == -1.0:   # a letter term: every member
        for c in range(cursor, end):
            out = _write_pair(indices, values, out, half_hash, product, first_position,
                              members[c], umask, naming)
        return out
    for c in range(cursor, end):
        if values[mirror - members[c]] == seed:
            out = _write_pair(indices, values, out, half_hash, product, first_position,
                              members[c], umask, naming)
    return out


@njit(cache=True, nogil=True, inline="always")
def _write_pair(indices, values, out, half_hash, value, first, second, umask, naming):
    """Write at ``out`` the cross of the feature at ``first`` (its hash times FNV_PRIME,
    ``half_hash``; its value, ``value``) with the one at ``second``; returns out + 1."""
    indices[out] = np.int32((half_hash ^ np.uint64(indices[second])) & umask)
    values[out] = value * values[second]
    note_cross(naming, out, first, second)
    return out + 1


@njit(cache=True, nogil=True, inline="always")
def _next_member(values, mirror, grouping, letter, seed, cursor):
    """The first member from ``cursor`` on in the namespace of ``seed`` (any: -1), within the
    letter's group (past its end when none)."""
    members, group_letter, group_start, groups = grouping
    end = group_start[_group_of(group_letter, groups, letter) + 1]
    if seed != -1.0:
        while cursor < end and values[mirror - members[cursor]] != seed:
            cursor += 1
    return cursor


@njit(cache=True, nogil=True)
def _cross_wildcard(indices, values, mirror, grouping, order, scratch, explicit, mask, out):
    """A wildcard interaction of ``order`` terms: every combination with repetition of the
    row's printable letters (VW's over the namespaces seen, which cross nothing in a row that
    lacks one), in VW's order of its terms: rising for a pair, else falling unless a letter
    repeats beside another (then sorted); one an explicit interaction names is skipped
    (program)."""
    members, group_letter, group_start, groups = grouping
    term_letters, term_seeds = scratch[0], scratch[1]
    interacting = np.empty(groups, np.int64)
    m = 0
    for g in range(groups):
        if 32 <= group_letter[g] <= 126:
            interacting[m] = group_letter[g]
            m += 1
    if m == 0:
        return out
    picks = np.zeros(order, np.int64)
    while True:
        repeats = False
        for t in range(order):
            repeats |= t > 0 and picks[t] == picks[t - 1]
        mixed = picks[0] != picks[order - 1]
        rising = order == 2 or (repeats and mixed)
        for t in range(order):
            term_letters[t] = interacting[picks[t] if rising else picks[order - 1 - t]]
            term_seeds[t] = -1.0
        if order == 2 or not _named_explicitly(interacting, picks, order, explicit):
            out = _cross(indices, values, mirror, grouping, order, scratch, mask, out)
        t = order - 1   # the next non-decreasing pick
        while t >= 0 and picks[t] == m - 1:
            t -= 1
        if t < 0:
            return out
        picks[t] += 1
        for u in range(t + 1, order):
            picks[u] = picks[t]


@njit(cache=True, nogil=True)
def _named_explicitly(interacting, picks, order, explicit):
    """Whether an explicit letter interaction crosses the namespaces of these picks."""
    seeds, orders, letters_sorted = explicit
    width = letters_sorted.shape[1]
    for i in range(len(orders)):
        if orders[i] != order or seeds[i, 0] != -1.0:
            continue
        same = True
        for t in range(order):
            same &= letters_sorted[i, width - order + t] == interacting[picks[t]]
        if same:
            return True
    return False


@njit(cache=True, nogil=True)
def _drop_ignored_linear(indices, values, start, nnz, out, mirror, linear_masks):
    """Remove the linear features of the --ignore_linear letters (their crosses stay)."""
    kept = start
    for k in range(start, nnz):
        c = indices[mirror - k]
        if not (linear_masks[c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
            indices[kept] = indices[k]
            values[kept] = values[k]
            kept += 1
    for k in range(nnz, out):
        indices[kept] = indices[k]
        values[kept] = values[k]
        kept += 1
    return kept


@njit(cache=True, nogil=True)
def max_crossed_features(buf, n, orders):
    """An upper bound on the features of the lines in ``buf[:n]`` with crosses of these
    ``orders``: each line's tokens t
    between blanks and '|' (a feature is at most one), t + 1 linear,
    and t^k crosses for each interaction of order k (a wildcard's combinations included).

    Eight bytes at a time (the bytes of a word that holds no line end counted at once, see
    _token_starts): the bound is counted on every block's bytes, as many as the parse reads."""
    buf, orders = uncounted((buf, orders))   # (_counted_byte's orders: counted at every byte)
    total = 0.0   # a float: a long line's t^k would overflow an int64
    tokens = np.int64(0)
    in_token = np.uint64(0)   # whether the byte before is a token's (1 or 0)
    whole_words = n // 8
    words = buf[:whole_words * 8].view(np.uint64)
    for w in range(whole_words):
        word = words[w]
        if _zero_bytes(word ^ _LINE_FEEDS) == 0:
            starts, in_token = _token_starts(word, in_token)
            tokens += np.int64((starts * _LOW_BITS) >> _BYTE_SUM_SHIFT)
            continue
        for p in range(8 * w, 8 * w + 8):   # a line ends in this word
            total, tokens, in_token = _counted_byte(buf[p], total, tokens, in_token, orders)
    for p in range(8 * whole_words, n):
        total, tokens, in_token = _counted_byte(buf[p], total, tokens, in_token, orders)
    return _plus_line_bound(total, tokens, orders)   # the rest after the last line end


@njit(cache=True, nogil=True, inline="always")
def _counted_byte(c, total, tokens, in_token, orders):
    """max_crossed_features's count after one byte ``c``: a line end adds its line's bound."""
    if c == 10:
        return _plus_line_bound(total, tokens, orders), np.int64(0), np.uint64(0)
    token_byte = np.uint64((c > 32) & (c != 124))
    return total, tokens + np.int64(token_byte & (_ONE - in_token)), token_byte


_SIX = np.uint64(6)
_LOW_6_BITS = np.uint64(63)
_ONE = np.uint64(1)
_LOW_7_BITS = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH_BITS = np.uint64(0x8080808080808080)
_LOW_BITS = np.uint64(0x0101010101010101)
_LINE_FEEDS = np.uint64(0x0A0A0A0A0A0A0A0A)
_BARS = np.uint64(0x7C7C7C7C7C7C7C7C)
_SEVEN = np.uint64(7)
_EIGHT = np.uint64(8)
_BYTE_SUM_SHIFT = np.uint64(56)


@njit(cache=True, nogil=True, inline="always")
def _zero_bytes(word):
    """The high bit of each byte of ``word`` that is 0 (exact: no carry between bytes)."""
    return ~(((word & _LOW_7_BITS) + _LOW_7_BITS) | word) & _HIGH_BITS


@njit(cache=True, nogil=True, inline="always")
def _token_starts(word, in_token):
    """(bit 0 of each byte of ``word`` that starts a token: above 0x20, not '|', after a byte
    that is not; whether its last byte is a token's), ``in_token`` for the byte before the
    word. The word's first byte is its lowest, as the lexers' SWAR reads words."""
    above_space = swar_separators(word) ^ _HIGH_BITS
    token_bytes = (above_space & ~_zero_bytes(word ^ _BARS)) >> _SEVEN
    starts = token_bytes & ~((token_bytes << _EIGHT) | in_token)
    return starts, token_bytes >> _BYTE_SUM_SHIFT


@njit(cache=True, nogil=True, inline="always")
def _plus_line_bound(total, tokens, orders):
    """``total`` plus the bound of a line of ``tokens`` tokens."""
    total += tokens + 1
    for i in range(len(orders)):   # (by index: an array's iterator costs reference counting)
        total += float(tokens) ** orders[i]
    return total


@njit(cache=True, nogil=True)
def repeats_a_slot(indices, start, end, seen):
    """Whether a slot occurs twice in the row ``indices[start:end]`` (True, at times, for
    distinct slots of a mask wider than the bit set ``seen``, which leaves such a row to
    merge_row too); ``seen`` is clear before and after.

    Most crossed rows hold no slot twice, and a bit per slot tells so in two short passes (set
    the bits, then clear their words) for less than merge_row's table costs (the rows with
    repeats still go there, unchanged)."""
    words = np.uint64(len(seen) - 1)
    repeated = np.uint64(0)
    for k in range(start, end):
        slot = unsigned(indices[unsigned(k)])
        word = (slot >> _SIX) & words
        bit = _ONE << (slot & _LOW_6_BITS)
        repeated |= seen[word] & bit
        seen[word] |= bit
    for k in range(start, end):
        seen[(unsigned(indices[unsigned(k)]) >> _SIX) & words] = 0
    return repeated != 0
