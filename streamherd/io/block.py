"""The parse kernel turns a block of complete text lines into a CSR chunk: one kernel per format."""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from streamherd.io import linecodes as codes
from streamherd.io.feature_stage import finish_row, merge_repeats, new_row
from streamherd.io.lexing import CR, HASH, LF, find_byte, skip_blanks
from streamherd.io.references import uncounted
from streamherd.io.svmlight import (NOT_A_ROW, ROW, USE_GENERAL, parse_svmlight_line,
                                    scan_svmlight_line, vw_shaped)
from streamherd.io.vw import parse_vw_line, scan_vw_line

SVMLIGHT = 0
VW = 1


def parse_block(buf, n, fmt, space, skip_bad, first_line, outputs, merge_table,
                general_only=False, strict_format=False):
    """Parse the complete lines in ``buf[:n]`` (fmt SVMLIGHT or VW) into ``outputs``
    (io/csr.allocate_outputs) with the feature stage's ``space`` (FeatureSpace.kernel_params)
    and ``merge_table`` (features/rows.new_merge_table): the parse kernel of that format (see
    _block_parser)."""
    return _BLOCK_PARSERS[fmt](buf, n, space, skip_bad, first_line, outputs, merge_table,
                               general_only, strict_format)


def _block_parser(fmt):
    """The parse kernel of one format. ``fmt`` is a constant of the kernel (a closure cell), so
    numba prunes the other format's branches before typing: a command compiles the line
    parsers of the format it reads, not both. (numba's cache keys an entry by the closure's
    contents too, so the two kernels share an index file and each finds its own entries.)"""

    @njit(cache=True, nogil=True)
    def parse_format_block(buf, n, space, skip_bad, first_line, outputs, merge_table,
                           general_only, strict_format):
        """Parse the complete lines in ``buf[:n]`` (fmt SVMLIGHT or VW) into the output arrays.

        Blank lines and lines whose first non-blank byte is '#' are skipped but counted, so line
        numbers stay those of the file (``first_line`` is the number of the block's first line).
        The line parsers find the tokens; the feature stage (features/stage.py) makes the rows
        of them, and ends each (the bias feature, repeated slots summed).
        Returns (rows, nnz, lines, bad_lines, error_code, error_line, error_start, error_end);
        on a malformed line without skip_bad, parsing stops there and rows holds the lines before
        it. With skip_bad, the line numbers of the malformed lines go to
        bad_line_numbers[:bad_lines]; a line of the other format (linecodes.OTHER_FORMAT) still
        stops parsing when ``strict_format`` (the format was guessed: see reader.ChunkReader).

        Most lines go through a one-pass scanner that finds the line end as it parses; a line it
        does not accept goes to the general line parser. ``general_only`` sends every line there
        (the tests compare both ways).
        """
        # the kernel's inner calls (a row's crosses, a feature's name hashed) take these arrays
        # once a row or a feature: uncounted, they cost no atomic count each time (references.py)
        buf, outputs, merge_table, space = uncounted((buf, outputs, merge_table, space))
        (labels, importance, line_numbers, indptr, indices, values, tag_start, tag_end,
         label_start, label_end, bad_line_numbers) = outputs
        merge_table[1][:] = -1
        # np.int64(0), not 0: with a literal 0, numba types the loop's first round with
        # Literal[int](0) and compiles every parser the loop calls once more for that type
        p = np.int64(0)
        line = first_line
        row = np.int64(0)
        nnz = np.int64(0)
        bad = 0
        indptr[0] = 0
        while p < n:
            status = USE_GENERAL
            next_p = n
            row_features = new_row(nnz)
            label = 0.0
            ls = le = tgs = tge = -1
            weight = 1.0
            q = skip_blanks(buf, p, n)
            if q == n or buf[q] == LF:
                status = NOT_A_ROW
                next_p = q + 1
            elif buf[q] == HASH:
                status = NOT_A_ROW
                next_p = find_byte(buf, q, n, LF) + 1
            elif not general_only:
                if fmt == VW:
                    status, next_p, row_features, label, ls, le = scan_vw_line(
                        buf, q, n, space, indices, values, row_features)
                else:
                    status, next_p, row_features, label, ls, le = scan_svmlight_line(
                        buf, q, n, space, indices, values, row_features)
            if status == USE_GENERAL:
                eol = find_byte(buf, p, n, LF)
                next_p = eol + 1
                end = eol
                if end > p and buf[end - 1] == CR:
                    end -= 1
                q = skip_blanks(buf, p, end)
                if q == end or buf[q] == HASH:
                    status = NOT_A_ROW
                else:
                    row_features = new_row(nnz)   # the scanner's, if any, is left
                    if fmt == VW:
                        (code, row_features, ts, te, label, weight, ls, le, tgs,
                         tge) = parse_vw_line(buf, q, end, space, indices, values, row_features)
                    else:
                        (code, row_features, ts, te, label, weight, ls, le, tgs,
                         tge) = parse_svmlight_line(buf, q, end, space, indices, values,
                                                    row_features)
                    if (code != codes.OK and code != codes.BINARY_BYTES and fmt != VW
                            and vw_shaped(buf, q, end)):
                        code, ts, te = codes.VW_LINE, q, end
                    if code != codes.OK:
                        if not skip_bad or (strict_format and (code == codes.VW_LINE
                                                               or code == codes.SVMLIGHT_LINE)):
                            return row, nnz, line - first_line, bad, code, line, ts, te
                        bad_line_numbers[bad] = line
                        bad += 1
                        status = NOT_A_ROW
                    else:
                        status = ROW
            if status == ROW:
                new_nnz, distinct = finish_row(space, indices, values, row_features)
                if not distinct:   # (the usual line has nothing to merge)
                    # stamped with the line, not the row: a row dropped here leaves its stamps
                    new_nnz = merge_repeats(space, indices, values, nnz, new_nnz, merge_table,
                                            line)
                if new_nnz < 0:  # repeated features summed to infinity: a bad line
                    if not skip_bad:
                        q = skip_blanks(buf, p, n)
                        end = find_byte(buf, q, n, LF)
                        if end > q and buf[end - 1] == CR:
                            end -= 1
                        return (row, nnz, line - first_line, bad, codes.VALUE_OVERFLOW, line, q,
                                end)
                    bad_line_numbers[bad] = line
                    bad += 1
                    line += 1
                    p = next_p
                    continue
                nnz = new_nnz
                labels[row] = label
                importance[row] = weight
                line_numbers[row] = line
                tag_start[row] = tgs
                tag_end[row] = tge
                label_start[row] = ls
                label_end[row] = le
                row += 1
                indptr[row] = nnz
            line += 1
            p = next_p
        return row, nnz, line - first_line, bad, codes.OK, 0, 0, 0

    return parse_format_block


_BLOCK_PARSERS = (_block_parser(SVMLIGHT), _block_parser(VW))


@njit(cache=True, nogil=True)
def count_newlines(buf, n):
    # a sum without a branch: LLVM vectorises it
    count = 0
    for p in range(n):
        count += buf[p] == LF
    return count


@njit(cache=True, nogil=True)
def end_of_last_line(buf, n):
    """Length of the prefix of buf[:n] that ends with a newline (0 when there is none)."""
    for p in range(n - 1, -1, -1):
        if buf[p] == LF:
            return p + 1
    return 0


@njit(cache=True, nogil=True)
def complete_lines(buf, n, at_end):
    """(complete, newlines) for the bytes buf[:n] just read: the length of the prefix that ends
    with a line end (n at the end of the input, where the last line needs none; 0 when there
    is none) and the LF count in it, after lone CRs (old Mac line ends) became LFs
    (lone_carriage_returns_to_newlines), so that every later step sees one LF per line end.

    One pass of 64-byte vector compares counts the LFs and looks for CRs, in less time than
    count_newlines counts the LFs alone (numba's own vectorisation of a loop with two sums is
    slower than either): an LF file, without CRs, costs no more than counting its newlines.
    """
    newlines = 0
    crs = np.uint64(0)
    p = 0
    while p + 64 <= n:
        lfs, crs_here = _line_end_masks(buf, p)
        newlines += _popcount(lfs)
        crs |= crs_here
        p += 64
    for k in range(p, n):
        newlines += buf[k] == LF
        crs |= np.uint64(buf[k] == CR)
    if crs != 0:
        newlines += lone_carriage_returns_to_newlines(buf, n, at_end)
    if at_end:
        return n, newlines
    return end_of_last_line(buf, n), newlines  # no LF after it: the count holds


@intrinsic
def _line_end_masks(typingctx, array, index):
    """(LFs, CRs) of the 64 bytes at array[index:index + 64] (the caller keeps them in the
    array): bit i of each uint64 is set when byte i is an LF, a CR. One vector compare per
    byte value, in LLVM's portable vector IR."""
    signature = types.UniTuple(types.uint64, 2)(array, types.intp)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        vector = ir.VectorType(ir.IntType(8), 64)
        loaded = builder.load(builder.bitcast(builder.gep(data, [args[1]]), vector.as_pointer()),
                              align=1)
        masks = [builder.bitcast(builder.icmp_unsigned(
            "==", loaded, ir.Constant(vector, [ir.Constant(ir.IntType(8), byte)] * 64)),
            ir.IntType(64)) for byte in (LF, CR)]
        return context.make_tuple(builder, sig.return_type, masks)

    return signature, codegen


@intrinsic
def _popcount(typingctx, word):
    """The number of bits set in a uint64."""
    def codegen(context, builder, sig, args):
        count = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
        return builder.zext(builder.call(count, [args[0]]), ir.IntType(64))
    return types.int64(types.uint64), codegen


@njit(cache=True, nogil=True)
def lone_carriage_returns_to_newlines(buf, n, at_end):
    """Rewrite each CR in buf[:n] not followed by LF as LF; returns how many. A CRLF stays as
    it is (its CR a blank before the newline). A CR last in buf[:n] is left alone unless
    ``at_end`` (the end of the input): the next read may bring its LF, and it goes on with the
    partial last line to the next block, where this runs again."""
    rewritten = 0
    for p in range(n - 1):
        if buf[p] == CR and buf[p + 1] != LF:
            buf[p] = LF
            rewritten += 1
    if at_end and n > 0 and buf[n - 1] == CR:
        buf[n - 1] = LF
        rewritten += 1
    return rewritten
