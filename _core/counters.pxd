# Counters of the conservative kept pass (issue 16; docs/core.md "The whole trace,
# counted"), compiled in only when the core is built with MALLEO_COUNT=1 (setup.py): by
# default COUNT_ON is the C constant 0 and every ``count`` call and ``if COUNT_ON:`` block
# is removed by the compiler.  ``loop.kept_counters()`` reads them per tenth of the jobs
# (the segment of the last job arrived at the pass, set by the event loop).

cdef extern from *:
    """
    #ifndef MALLEO_COUNT
    #define MALLEO_COUNT 0
    #endif
    static long long malleo_cnt[10][23];
    static int malleo_cnt_seg = 0;
    """
    const bint COUNT_ON "MALLEO_COUNT"
    long long malleo_cnt[10][23]
    int malleo_cnt_seg

cdef enum:
    CNT_SEGMENTS = 10
    CNT_KINDS = 23
    CNT_PASSES = 0
    CNT_QUEUE_SUM = 1
    CNT_KEPT_PASSES = 2
    CNT_REBUILT_PASSES = 3
    CNT_INDEX_BLOCKS = 4
    CNT_INDEX_BLOCKS_SKIPPED = 5
    CNT_HOLDER_VISITS = 6
    CNT_DEC_TESTS = 7
    CNT_SEARCHES = 8
    CNT_MOVED_HOLDERS = 9
    CNT_UPDATE_PAIRS = 10
    CNT_MOVED_IN_RUNS = 11
    CNT_RANGE_UPDATES = 12
    CNT_BREAKPOINTS_AT_MOVES = 13
    CNT_NEW_JOBS = 14
    CNT_EARLY_COMPLETIONS = 15
    CNT_PAIRS_SAME_SHAPE_OFFSET = 16
    CNT_PAIRS_SAME_SHAPE = 17
    CNT_VISITS_SAME_ENTRY = 18
    CNT_VISITS_SAME_SHAPE = 19
    CNT_OFFSET_SUM = 20
    CNT_MOVING_PASSES = 21
    CNT_PAIRS_CHAIN = 22


cdef inline void count(int kind, long long v) noexcept nogil:
    """Add ``v`` to counter ``kind`` of the current segment (nothing unless COUNT_ON)."""
    if COUNT_ON:
        malleo_cnt[malleo_cnt_seg][kind] += v
