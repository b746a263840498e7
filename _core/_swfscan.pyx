"""One-pass tokenizer for the body of a Standard Workload Format (SWF) trace.

``scan`` reads the whole decompressed text once, without building a Python object per
field: each job line must hold exactly ``nfields`` numbers separated by runs of spaces or
tabs.  Values land field-major (each field is one contiguous row) in an int64 array for
the integer fields, which must hold integral values, and a float64 array for the others.
Lines starting with ``;`` are comments (their byte ranges are returned for the header
parser); blank lines are skipped.  The first bad line stops the scan unless ``lenient``
is true, in which case bad lines are skipped and reported.  Used by
:mod:`malleo.emulator.swf`, which turns the reports into ``FILE:LINE: field N (name): ...``
messages.
"""
import numpy as np

from libc.stdint cimport INT64_MAX, int64_t, uint64_t, uint8_t
from libc.stdlib cimport strtod
from libc.math cimport floor

# Kinds of bad line, as reported in ``scan``'s ``bad`` list (mirrored in swf.py).
BAD_FIELD_COUNT = 1   # not exactly nfields tokens on a job line
BAD_NUMBER = 2        # a token that is not a decimal number
BAD_INTEGER = 3       # a decimal with a fractional part in an integer field
BAD_RANGE = 4         # an integral value beyond int64 in an integer field

cdef double INT64_BOUND = 9223372036854775808.0   # 2**63

# Powers of ten exactly representable in a double (Clinger's fast path bound).
cdef double[23] POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]

cdef enum:
    MAX_TOKEN = 255      # longest token handed to strtod (bytes)
    MAX_DIGITS = 19      # digits accumulated exactly (10**19 - 1 < 2**64)


cdef inline bint is_blank(uint8_t c) noexcept nogil:
    """Field separators inside a line (space, tab, carriage return, form feed, vt)."""
    return c == 32 or c == 9 or c == 13 or c == 12 or c == 11


cdef int parse_number(const uint8_t* s, Py_ssize_t n, double* out,
                      int64_t* exact) noexcept nogil:
    """Parse one token ``[+-]digits[.digits][(e|E)[+-]digits]``; -1 if not a number,
    1 if it is a plain integer that fits in int64 (its exact value also in ``exact``),
    else 0.
    Up to 15 significant digits and a power of ten <= 22 are converted exactly by one
    division or product (Clinger's fast path); longer tokens go through strtod."""
    cdef Py_ssize_t i = 0
    cdef bint negative = False
    cdef uint64_t mantissa = 0
    cdef int digits = 0, frac_digits = 0, exponent = 0, exp_sign = 1, exp_digits = 0
    cdef bint plain = True
    cdef int scale
    cdef double value
    cdef char buf[MAX_TOKEN + 1]
    if n == 0:
        return -1
    if s[0] == 45 or s[0] == 43:          # '-' or '+'
        negative = s[0] == 45
        i = 1
    while i < n and 48 <= s[i] <= 57:
        if digits < MAX_DIGITS:
            mantissa = mantissa * 10 + (s[i] - 48)
        digits += 1
        i += 1
    if i < n and s[i] == 46:              # '.'
        plain = False
        i += 1
        while i < n and 48 <= s[i] <= 57:
            if digits < MAX_DIGITS:
                mantissa = mantissa * 10 + (s[i] - 48)
                frac_digits += 1
            digits += 1
            i += 1
    if digits == 0:
        return -1
    if i < n and (s[i] == 101 or s[i] == 69):   # 'e' or 'E'
        plain = False
        i += 1
        if i < n and (s[i] == 45 or s[i] == 43):
            exp_sign = -1 if s[i] == 45 else 1
            i += 1
        while i < n and 48 <= s[i] <= 57:
            if exponent < 10000:
                exponent = exponent * 10 + (s[i] - 48)
            exp_digits += 1
            i += 1
        if exp_digits == 0:
            return -1
    if i != n:
        return -1
    if plain and digits <= MAX_DIGITS and (
            mantissa <= <uint64_t>INT64_MAX or (negative and mantissa == <uint64_t>INT64_MAX + 1)):
        exact[0] = <int64_t>(0 - mantissa) if negative else <int64_t>mantissa
        out[0] = <double>exact[0]
        return 1
    scale = exp_sign * exponent - frac_digits
    if digits <= 15 and -22 <= scale <= 22:
        value = <double>mantissa
        if scale < 0:
            value = value / POW10[-scale]
        elif scale > 0:
            value = value * POW10[scale]
        out[0] = -value if negative else value
        return 0
    if n > MAX_TOKEN:
        return -1
    for i in range(n):
        buf[i] = <char>s[i]
    buf[n] = 0
    out[0] = strtod(buf, NULL)
    return 0


def scan(const uint8_t[::1] text, const uint8_t[::1] is_int, bint lenient):
    """Tokenize an SWF body.

    Args:
        text: the whole decompressed file, bytes.
        is_int: one flag per field (1 = an integer field: int64, must hold an integral
            value); its length is the number of fields per job line.
        lenient: skip bad lines (and report them all) instead of stopping at the first.

    Returns:
        ``(ints, floats, offsets, comments, bad, counts)``: ``ints`` int64 of shape
        (integer fields, rows) and ``floats`` float64 of shape (other fields, rows), each
        in field order, one column per good job line in file order; ``offsets`` int64[rows],
        the byte offset where each of those lines starts; ``comments`` a list of
        ``(start, end)`` byte ranges of comment lines (without the newline); ``bad`` a
        list of ``(line_start, kind, field, token_start, token_end)`` with ``field``
        1-based (the token count for BAD_FIELD_COUNT); ``counts`` a dict with ``lines``
        (physical lines), ``blank`` and ``comment`` line counts.
    """
    cdef Py_ssize_t n = text.shape[0]
    cdef Py_ssize_t nfields = is_int.shape[0]
    cdef Py_ssize_t cap = 1, n_int = 0, k
    for k in range(nfields):
        n_int += is_int[k] != 0
    for k in range(n):
        if text[k] == 10:
            cap += 1
    ints_arr = np.empty((n_int, cap), dtype=np.int64)
    floats_arr = np.empty((nfields - n_int, cap), dtype=np.float64)
    offsets_arr = np.empty(cap, dtype=np.int64)
    slot_arr = np.empty(nfields, dtype=np.intp)       # field -> row in ints or floats
    cdef int64_t[:, ::1] ints = ints_arr
    cdef double[:, ::1] floats = floats_arr
    cdef int64_t[::1] offsets = offsets_arr
    cdef Py_ssize_t[::1] slot = slot_arr
    cdef Py_ssize_t i_slot = 0, f_slot = 0
    for k in range(nfields):
        if is_int[k]:
            slot[k] = i_slot
            i_slot += 1
        else:
            slot[k] = f_slot
            f_slot += 1
    cdef const uint8_t* s = &text[0] if n > 0 else NULL
    cdef Py_ssize_t pos = 0, line_start, tok_start, field, rows = 0
    cdef Py_ssize_t lines = 0, blank = 0, ncomment = 0
    cdef Py_ssize_t bad_field = 0, bad_tok_start = 0, bad_tok_end = 0
    cdef int bad_kind = 0, parsed
    cdef double value = 0
    cdef int64_t exact = 0
    comments = []
    bad = []
    while pos < n:
        line_start = pos
        lines += 1
        field = 0
        bad_kind = 0
        while pos < n and is_blank(s[pos]):
            pos += 1
        if pos >= n or s[pos] == 10:
            blank += 1
            pos += 1
            continue
        if s[pos] == 59:                               # ';' comment line
            while pos < n and s[pos] != 10:
                pos += 1
            comments.append((line_start, pos))
            ncomment += 1
            pos += 1
            continue
        while True:
            while pos < n and is_blank(s[pos]):
                pos += 1
            if pos >= n or s[pos] == 10 or s[pos] == 59:   # end of line or trailing comment
                break
            tok_start = pos
            while pos < n and s[pos] != 10 and not is_blank(s[pos]):
                pos += 1
            if bad_kind == 0 and field < nfields:
                parsed = parse_number(s + tok_start, pos - tok_start, &value, &exact)
                if parsed < 0:
                    bad_kind = BAD_NUMBER
                elif not is_int[field]:
                    floats[slot[field], rows] = value
                elif parsed == 1:
                    ints[slot[field], rows] = exact
                elif value != floor(value):
                    bad_kind = BAD_INTEGER
                elif not (-INT64_BOUND < value < INT64_BOUND):
                    bad_kind = BAD_RANGE
                else:
                    ints[slot[field], rows] = <int64_t>value
                if bad_kind != 0:
                    bad_field = field + 1
                    bad_tok_start = tok_start
                    bad_tok_end = pos
            field += 1
        while pos < n and s[pos] != 10:                # skip a trailing comment
            pos += 1
        pos += 1
        if bad_kind == 0 and field != nfields:
            bad_kind = BAD_FIELD_COUNT
            bad_field = field
            bad_tok_start = line_start
            bad_tok_end = line_start
        if bad_kind != 0:
            bad.append((line_start, bad_kind, bad_field, bad_tok_start, bad_tok_end))
            if not lenient:
                break
            continue
        offsets[rows] = line_start
        rows += 1
    counts = {"lines": lines, "blank": blank, "comment": ncomment}
    return (ints_arr[:, :rows], floats_arr[:, :rows], offsets_arr[:rows], comments, bad,
            counts)
