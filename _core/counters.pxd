# Counters of the conservative kept pass and of the slurm walk's reservations (issue 16;
# docs/core.md "The whole trace, counted"), compiled in only when the core is built with
# MALLEO_COUNT=1 (setup.py): by default COUNT_ON is the C constant 0 and every ``count``
# call and ``if COUNT_ON:`` block is removed by the compiler.  ``loop.kept_counters()``
# reads them per tenth of the jobs (the segment of the last job arrived at the pass, set by
# the event loop).

# The counters are numbered and named once, in the C list MALLEO_COUNTERS below: it makes
# both the indices (CNT_*) and the names ``loop.COUNTER_NAMES`` reads, so the two cannot
# disagree.  The ``enum:`` block only declares the C names to Cython (a name missing from
# the C list fails to compile); a new counter goes in both.
cdef extern from *:
    """
    #ifndef MALLEO_COUNT
    #define MALLEO_COUNT 0
    #endif
    #define MALLEO_COUNTERS(X) \
        X(PASSES, "passes") \
        X(QUEUE_SUM, "queue_sum") \
        X(KEPT_PASSES, "kept_passes") \
        X(REBUILT_PASSES, "rebuilt_passes") \
        X(INDEX_BLOCKS, "index_blocks") \
        X(INDEX_BLOCKS_SKIPPED, "index_blocks_skipped") \
        X(HOLDER_VISITS, "holder_visits") \
        X(DEC_TESTS, "dec_tests") \
        X(SEARCHES, "searches") \
        X(MOVED_HOLDERS, "moved_holders") \
        X(UPDATE_PAIRS, "update_pairs") \
        X(MOVED_IN_RUNS, "moved_in_runs") \
        X(RANGE_UPDATES, "range_updates") \
        X(BREAKPOINTS_AT_MOVES, "breakpoints_at_moves") \
        X(NEW_JOBS, "new_jobs") \
        X(EARLY_COMPLETIONS, "early_completions") \
        X(PAIRS_SAME_SHAPE_OFFSET, "pairs_same_shape_offset") \
        X(PAIRS_SAME_SHAPE, "pairs_same_shape") \
        X(VISITS_SAME_ENTRY, "visits_same_entry") \
        X(VISITS_SAME_SHAPE, "visits_same_shape") \
        X(OFFSET_SUM, "offset_sum") \
        X(MOVING_PASSES, "moving_passes") \
        X(PAIRS_CHAIN, "pairs_chain") \
        X(SLURM_RESERVATIONS, "slurm_reservations") \
        X(SLURM_IN_RUNS, "slurm_in_runs") \
        X(STRETCHES, "stretches") \
        X(MOVED_IN_STRETCHES, "moved_in_stretches") \
        X(POINT_TESTS, "point_tests") \

    #define MALLEO_CNT_INDEX(id, name) CNT_##id,
    #define MALLEO_CNT_NAME(id, name) name,
    enum { MALLEO_COUNTERS(MALLEO_CNT_INDEX) CNT_KINDS, CNT_SEGMENTS = 10 };
    #if defined(__GNUC__)
    #define MALLEO_MAYBE_UNUSED __attribute__((unused))
    #else
    #define MALLEO_MAYBE_UNUSED
    #endif
    static const char* const malleo_cnt_names[CNT_KINDS] MALLEO_MAYBE_UNUSED = { MALLEO_COUNTERS(MALLEO_CNT_NAME) };
    static long long malleo_cnt[CNT_SEGMENTS][CNT_KINDS];
    static int malleo_cnt_seg = 0;
    """
    enum:
        CNT_SEGMENTS
        CNT_KINDS
        CNT_PASSES
        CNT_QUEUE_SUM
        CNT_KEPT_PASSES
        CNT_REBUILT_PASSES
        CNT_INDEX_BLOCKS
        CNT_INDEX_BLOCKS_SKIPPED
        CNT_HOLDER_VISITS
        CNT_DEC_TESTS
        CNT_SEARCHES
        CNT_MOVED_HOLDERS
        CNT_UPDATE_PAIRS
        CNT_MOVED_IN_RUNS
        CNT_RANGE_UPDATES
        CNT_BREAKPOINTS_AT_MOVES
        CNT_NEW_JOBS
        CNT_EARLY_COMPLETIONS
        CNT_PAIRS_SAME_SHAPE_OFFSET
        CNT_PAIRS_SAME_SHAPE
        CNT_VISITS_SAME_ENTRY
        CNT_VISITS_SAME_SHAPE
        CNT_OFFSET_SUM
        CNT_MOVING_PASSES
        CNT_PAIRS_CHAIN
        CNT_SLURM_RESERVATIONS
        CNT_SLURM_IN_RUNS
        CNT_STRETCHES
        CNT_MOVED_IN_STRETCHES
        CNT_POINT_TESTS
    const bint COUNT_ON "MALLEO_COUNT"
    const char* const malleo_cnt_names[CNT_KINDS]
    long long malleo_cnt[CNT_SEGMENTS][CNT_KINDS]
    int malleo_cnt_seg


cdef inline void count(int kind, long long v) noexcept nogil:
    """Add ``v`` to counter ``kind`` of the current segment (nothing unless COUNT_ON)."""
    if COUNT_ON:
        malleo_cnt[malleo_cnt_seg][kind] += v
