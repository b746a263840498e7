# Shared typedefs of the compiled core (one place, lowercase *_t names).
from libc.stdint cimport int64_t, int32_t, uint8_t

ctypedef int64_t simtime_t   # a time or a duration, integer seconds
ctypedef int32_t procs_t     # a processor count
ctypedef Py_ssize_t intp_t   # an index into job arrays
ctypedef double work_t       # processor-seconds of work (malleable jobs)
