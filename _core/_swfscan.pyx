"""Incremental tokenizer for the body of a Standard Workload Format (SWF) trace.

A :class:`Scanner` is fed the decompressed text in chunks of whole lines and keeps only
what it parsed: each job line must hold exactly ``nfields`` numbers separated by runs of
spaces or tabs.  Values are stored field-major (each field one growing anonymous memory
mapping, doubled by ``mremap``: no copy, and the pages not yet written use no memory) as
int64 for the integer fields, which must hold integral values, and float64 for the
others, plus the 1-based line number of each job line; :meth:`Scanner.result` hands the
mappings to numpy as they are (no copy; issue 16: peak memory).  Memory is therefore
proportional to the job lines (8 bytes a stored field a row), never to the bytes read,
and is returned to the system when the arrays are freed: blank lines cost nothing, comment lines are kept up to a byte budget (the header), and the caller holds
one chunk at a time.  Lines starting with ``;`` are comments; blank lines are skipped.
The first bad line stops the scan (``stopped``) unless ``lenient`` is true, in which case
bad lines are skipped and reported.  Line ends are ``\\n`` only: the caller turns ``\\r\\n``
and lone ``\\r`` into ``\\n`` before feeding.  Used by :mod:`malleo.emulator.swf`, which
turns the reports into ``FILE:LINE: field N (name): ...`` messages.
"""
import numpy as np

from libc.stdint cimport INT64_MAX, int64_t, uint64_t, uint8_t
from libc.stdlib cimport free, realloc, strtod
from libc.math cimport floor, isfinite

cimport cython

cdef extern from *:
    """
    #include <string.h>
    #include <sys/mman.h>
    /* Column buffers are anonymous mappings (issue 16): they never fragment the heap,
       pages not yet written use no memory, growing one moves no data (mremap on Linux),
       and unmapping returns the memory to the system at once. */
    static void* swfscan_map(size_t nbytes) {
        void* p = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static void swfscan_unmap(void* p, size_t nbytes) {
        if (p != NULL) munmap(p, nbytes);
    }
    /* The mapping of old_bytes at old resized to new_bytes (its data kept), NULL on
       failure (old is then untouched). */
    static void* swfscan_remap(void* old, size_t old_bytes, size_t new_bytes) {
        void* p;
        if (old == NULL) return swfscan_map(new_bytes);
    #ifdef MREMAP_MAYMOVE
        p = mremap(old, old_bytes, new_bytes, MREMAP_MAYMOVE);
        return p == MAP_FAILED ? NULL : p;
    #else
        p = swfscan_map(new_bytes);
        if (p == NULL) return NULL;
        memcpy(p, old, old_bytes < new_bytes ? old_bytes : new_bytes);
        munmap(old, old_bytes);
        return p;
    #endif
    }
    """
    void* swfscan_map(size_t nbytes) nogil
    void swfscan_unmap(void* p, size_t nbytes) nogil
    void* swfscan_remap(void* old, size_t old_bytes, size_t new_bytes) nogil

# Kinds of bad line, as reported in ``Scanner.bad`` (mirrored in swf.py).
BAD_FIELD_COUNT = 1   # not exactly nfields tokens on a job line
BAD_NUMBER = 2        # a token that is not a decimal number
BAD_INTEGER = 3       # a decimal with a fractional part in an integer field
BAD_RANGE = 4         # an integral value beyond int64 (or infinite) in an integer field
BAD_INEXACT = 5       # an integer field in float notation at or beyond 2**53 (inexact)
BAD_INFINITE = 6      # a value beyond the largest double (e.g. 1e400) in a float field

cdef double INT64_BOUND = 9223372036854775808.0   # 2**63
cdef double EXACT_BOUND = 9007199254740992.0      # 2**53: doubles are exact integers below

# Powers of ten exactly representable in a double (Clinger's fast path bound).
cdef double[23] POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]

cdef enum:
    MAX_TOKEN = 255      # longest token handed to strtod (bytes)
    MAX_DIGITS = 19      # digits accumulated exactly (10**19 - 1 < 2**64)
    FIRST_CAPACITY = 4096  # rows: 32 KiB a buffer, a whole number of pages (doubled)
    PAGE = 4096            # bytes; mapping sizes are rounded up to it
    REPORTS_PER_KIND = 3 # bad-line reports kept per kind (the others are only counted)


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


@cython.final
cdef class Scanner:
    """Tokenize an SWF body fed in chunks of whole lines.

    Args:
        is_int: one flag per field (1 = an integer field: int64, must hold an integral
            value); its length is the number of fields per job line.
        lenient: skip bad lines (and report them all) instead of stopping at the first.
        comment_budget: bytes of comment-line text kept (the header); comment lines past
            it are counted in ``comments_skipped`` but not kept.
        keep: one flag per field (1 = store its values); None stores every field.  A field
            not stored is still parsed and checked (a bad token is still a bad line) but
            takes no memory, and :meth:`result` gives None in its place (issue 16).

    Attributes:
        stopped: a bad line was met in strict mode; further feeds are ignored.
        lines, blank, ncomment: physical, blank and comment line counts so far.
        comments: ``(line number, bytes)`` of each kept comment line (no newline).
        bad: ``(line number, kind, field, token bytes)`` of the first bad lines of each
            kind (at most 3 per kind: memory stays bounded however many there are),
            ``field`` 1-based (the token count for BAD_FIELD_COUNT, token ``b""``).
        bad_counts: kind -> number of bad lines of that kind.
    """

    cdef Py_ssize_t nfields, n_int, cap, budget
    cdef readonly Py_ssize_t rows           # good job lines stored so far
    cdef uint8_t* flags                     # nfields flags: 1 = integer field
    cdef uint8_t* keep                      # nfields flags: 1 = values stored
    cdef Py_ssize_t* slot                   # field -> its buffer in ints or floats
    cdef int64_t** ints                     # n_int buffers of cap values
    cdef double** floats                    # nfields - n_int buffers of cap values
    cdef int64_t* numbers                   # 1-based line number of each stored row
    cdef readonly bint lenient, stopped
    cdef readonly Py_ssize_t lines, blank, ncomment, comments_skipped
    cdef readonly list comments, bad
    cdef readonly dict bad_counts

    def __cinit__(self, const uint8_t[::1] is_int, bint lenient,
                  Py_ssize_t comment_budget=1 << 24, keep=None):
        cdef Py_ssize_t k, i_slot = 0, f_slot = 0
        self.nfields = is_int.shape[0]
        if keep is not None and len(keep) != self.nfields:
            raise ValueError(f"keep: {len(keep)} flags for {self.nfields} fields")
        self.flags = <uint8_t*>realloc(NULL, self.nfields + 1)
        self.keep = <uint8_t*>realloc(NULL, self.nfields + 1)
        self.slot = <Py_ssize_t*>realloc(NULL, (self.nfields + 1) * sizeof(Py_ssize_t))
        if self.flags == NULL or self.keep == NULL or self.slot == NULL:
            raise MemoryError()
        for k in range(self.nfields):
            self.keep[k] = 1 if keep is None else (1 if keep[k] else 0)
            self.flags[k] = is_int[k] != 0
            if self.flags[k]:
                self.slot[k] = i_slot
                i_slot += 1
            else:
                self.slot[k] = f_slot
                f_slot += 1
        self.n_int = i_slot
        self.ints = <int64_t**>realloc(NULL, (self.n_int + 1) * sizeof(int64_t*))
        self.floats = <double**>realloc(NULL, (self.nfields - self.n_int + 1) * sizeof(double*))
        if self.ints == NULL or self.floats == NULL:
            raise MemoryError()
        for k in range(self.n_int):
            self.ints[k] = NULL
        for k in range(self.nfields - self.n_int):
            self.floats[k] = NULL
        self.numbers = NULL
        self.lenient = lenient
        self.budget = comment_budget
        self.comments = []
        self.bad = []
        self.bad_counts = {}

    def __dealloc__(self):
        self._release()
        free(self.flags)
        free(self.keep)
        free(self.slot)
        free(self.ints)
        free(self.floats)

    cdef void _release(self) noexcept:
        cdef Py_ssize_t k
        cdef size_t nbytes = self.cap * 8
        if self.ints != NULL:
            for k in range(self.n_int):
                swfscan_unmap(self.ints[k], nbytes)
                self.ints[k] = NULL
        if self.floats != NULL:
            for k in range(self.nfields - self.n_int):
                swfscan_unmap(self.floats[k], nbytes)
                self.floats[k] = NULL
        swfscan_unmap(self.numbers, nbytes)
        self.numbers = NULL
        self.cap = 0

    cdef int _grow(self) except -1:
        """Double the capacity of every buffer (mremap: the mapping grows or moves without
        copying, and the new pages use no memory until written)."""
        cdef Py_ssize_t k, cap = FIRST_CAPACITY if self.cap == 0 else 2 * self.cap
        cdef size_t old_bytes = self.cap * 8, new_bytes = cap * 8
        cdef void* p
        for k in range(self.nfields):
            if not self.keep[k]:
                continue
            if self.flags[k]:
                p = swfscan_remap(self.ints[self.slot[k]], old_bytes, new_bytes)
                if p == NULL:
                    raise MemoryError()
                self.ints[self.slot[k]] = <int64_t*>p
            else:
                p = swfscan_remap(self.floats[self.slot[k]], old_bytes, new_bytes)
                if p == NULL:
                    raise MemoryError()
                self.floats[self.slot[k]] = <double*>p
        p = swfscan_remap(self.numbers, old_bytes, new_bytes)
        if p == NULL:
            raise MemoryError()
        self.numbers = <int64_t*>p
        self.cap = cap
        return 0

    cdef bint _kept(self, Py_ssize_t slot, bint is_int) noexcept:
        """True when the field in ``slot`` of the int (or float) buffers is stored."""
        cdef Py_ssize_t k
        for k in range(self.nfields):
            if self.flags[k] == is_int and self.slot[k] == slot:
                return self.keep[k]
        return 0

    def feed(self, const uint8_t[::1] text):
        """Scan ``text``: whole lines ending in ``\\n`` (the file's last may lack it)."""
        cdef Py_ssize_t n = text.shape[0]
        cdef const uint8_t* s = &text[0] if n > 0 else NULL
        cdef Py_ssize_t pos = 0, line_start, tok_start, field, k
        cdef Py_ssize_t bad_field = 0, bad_tok_start = 0, bad_tok_end = 0
        cdef int bad_kind = 0, parsed
        cdef uint8_t is_int
        cdef double value = 0
        cdef int64_t exact = 0
        cdef int64_t* ivals[64]
        cdef double* fvals[64]
        if self.stopped:
            return
        if self.nfields > 64:
            raise ValueError("at most 64 fields per line")
        while pos < n:
            line_start = pos
            self.lines += 1
            field = 0
            bad_kind = 0
            while pos < n and is_blank(s[pos]):
                pos += 1
            if pos >= n or s[pos] == 10:
                self.blank += 1
                pos += 1
                continue
            if s[pos] == 59:                               # ';' comment line
                while pos < n and s[pos] != 10:
                    pos += 1
                self.ncomment += 1
                if pos - line_start <= self.budget:
                    self.budget -= pos - line_start
                    self.comments.append((self.lines, bytes(text[line_start:pos])))
                else:
                    self.budget = 0
                    self.comments_skipped += 1
                pos += 1
                continue
            if self.rows == self.cap:
                self._grow()
            for k in range(self.n_int):
                ivals[k] = self.ints[k]
            for k in range(self.nfields - self.n_int):
                fvals[k] = self.floats[k]
            while True:
                while pos < n and is_blank(s[pos]):
                    pos += 1
                if pos >= n or s[pos] == 10 or s[pos] == 59:   # end of line or trailing comment
                    break
                tok_start = pos
                while pos < n and s[pos] != 10 and not is_blank(s[pos]):
                    pos += 1
                if bad_kind == 0 and field < self.nfields:
                    is_int = self.flags[field]
                    parsed = parse_number(s + tok_start, pos - tok_start, &value, &exact)
                    if parsed < 0:
                        bad_kind = BAD_NUMBER
                    elif not is_int:
                        if not isfinite(value):
                            bad_kind = BAD_INFINITE
                        elif self.keep[field]:
                            fvals[self.slot[field]][self.rows] = value
                    elif parsed == 1:
                        if self.keep[field]:
                            ivals[self.slot[field]][self.rows] = exact
                    elif not isfinite(value):
                        bad_kind = BAD_RANGE
                    elif value != floor(value):
                        bad_kind = BAD_INTEGER
                    elif not (-INT64_BOUND < value < INT64_BOUND):
                        bad_kind = BAD_RANGE
                    elif not (-EXACT_BOUND < value < EXACT_BOUND):
                        bad_kind = BAD_INEXACT
                    elif self.keep[field]:
                        ivals[self.slot[field]][self.rows] = <int64_t>value
                    if bad_kind != 0:
                        bad_field = field + 1
                        bad_tok_start = tok_start
                        bad_tok_end = pos
                field += 1
            while pos < n and s[pos] != 10:                # skip a trailing comment
                pos += 1
            pos += 1
            if bad_kind == 0 and field != self.nfields:
                bad_kind = BAD_FIELD_COUNT
                bad_field = field
                bad_tok_start = line_start
                bad_tok_end = line_start
            if bad_kind != 0:
                seen = self.bad_counts.get(bad_kind, 0)
                self.bad_counts[bad_kind] = seen + 1
                if seen < REPORTS_PER_KIND:
                    self.bad.append((self.lines, bad_kind, bad_field,
                                     bytes(text[bad_tok_start:bad_tok_end])))
                if not self.lenient:
                    self.stopped = True
                    return
                continue
            self.numbers[self.rows] = self.lines
            self.rows += 1

    def result(self):
        """The stored rows, handing the buffers over (call once, after the last feed).

        Returns:
            ``(ints, floats, line_numbers)``: lists of 1-D arrays, one per integer field
            (int64) and per other field (float64) in field order (None for a field not
            kept), and the int64 line number of each row.  The arrays are writable and
            own their memory through their base (a :class:`Column`): the scanner's
            buffers themselves, cut to the rows, not copies.
        """
        cdef Py_ssize_t k, rows = self.rows
        ints, floats = [], []
        for k in range(self.n_int):
            if self._kept(k, 1):
                ints.append(self._take(<void**>&self.ints[k], np.int64))
            else:
                ints.append(None)
        for k in range(self.nfields - self.n_int):
            if self._kept(k, 0):
                floats.append(self._take(<void**>&self.floats[k], np.float64))
            else:
                floats.append(None)
        numbers = self._take(<void**>&self.numbers, np.int64)
        self._release()
        self.rows = 0
        return ints, floats, numbers

    cdef object _take(self, void** buffer, dtype):
        """The ``rows`` values of ``*buffer`` as an array owning the mapping (cut to the
        pages they fill); ``*buffer`` is then NULL (the scanner no longer holds it)."""
        cdef size_t cap_bytes = self.cap * 8
        cdef size_t nbytes = self.rows * 8
        cdef size_t keep_bytes = (nbytes + PAGE - 1) // PAGE * PAGE
        cdef void* p = buffer[0]
        if p == NULL or nbytes == 0:
            return np.empty(0, dtype=dtype)
        if keep_bytes < cap_bytes:
            p = swfscan_remap(p, cap_bytes, keep_bytes)    # shrinks in place
            if p == NULL:
                raise MemoryError()
        else:
            keep_bytes = cap_bytes
        buffer[0] = NULL
        column = Column.__new__(Column)
        (<Column>column).data = p
        (<Column>column).nbytes = nbytes
        (<Column>column).mapped = keep_bytes
        return np.frombuffer(column, dtype=dtype)


@cython.final
cdef class Column:
    """A scanner buffer handed to numpy: ``nbytes`` writable bytes in an anonymous
    mapping of ``mapped`` bytes, unmapped when the last array viewing it is freed."""

    cdef void* data
    cdef Py_ssize_t nbytes, mapped
    cdef Py_ssize_t shape[1]

    def __cinit__(self):
        self.data = NULL
        self.nbytes = 0
        self.mapped = 0

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = self.nbytes
        view.buf = self.data
        view.obj = self
        view.len = self.nbytes
        view.readonly = 0
        view.itemsize = 1
        view.format = b"B"
        view.ndim = 1
        view.shape = self.shape
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        swfscan_unmap(self.data, self.mapped)
        self.data = NULL
