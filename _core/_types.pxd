# Shared typedefs of the compiled core (one place, lowercase *_t names).
from libc.stdint cimport int64_t, int32_t, uint8_t

ctypedef int64_t simtime_t   # a time or a duration, integer seconds
ctypedef int32_t procs_t     # a processor count
ctypedef Py_ssize_t intp_t   # an index into job arrays
ctypedef double work_t       # processor-seconds of work (malleable jobs)

# Queue orders, in the order of malleo.knobs.ORDERS (tests/test_core_codes.py checks).
cdef enum:
    ORDER_FCFS = 0
    ORDER_SJF = 1
    ORDER_LJF = 2
    ORDER_SAF = 3
    ORDER_WFP3 = 4
    ORDER_UNICEP = 5
    ORDER_F1 = 6
    ORDER_MULTIFACTOR = 7

# Backfill modes, in the order of malleo.knobs.BACKFILLS (tests/test_core_codes.py checks).
cdef enum:
    BACKFILL_NONE = 0
    BACKFILL_EASY = 1
    BACKFILL_CONSERVATIVE = 2
    BACKFILL_SLURM = 3

# Planning estimate sources, in the order of malleo.knobs.ESTIMATES (checked likewise).
cdef enum:
    ESTIMATE_REQUEST = 0
    ESTIMATE_ACTUAL = 1
    ESTIMATE_PREDICT = 2

# Backfill-candidate orders, in the order of malleo.knobs.BACKFILL_ORDERS (checked likewise).
cdef enum:
    BFORDER_QUEUE = 0
    BFORDER_SJF = 1
