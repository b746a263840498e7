"""The 18 fields of the Standard Workload Format, named once (Feitelson et al., PWA).

Every module that needs an SWF field name or number takes it from here.  Field numbers
are 1-based as in the format's definition; -1 in a file means "missing".
"""

FIELDS: tuple[str, ...] = (
    "job_number",        # 1  job number, unique in the trace
    "submit_time",       # 2  seconds since the trace's start (UnixStartTime)
    "wait_time",         # 3  seconds between submit and start
    "run_time",          # 4  seconds between start and end (wall clock)
    "allocated_procs",   # 5  processors allocated
    "avg_cpu_time",      # 6  average CPU seconds per processor (often decimal)
    "used_memory",       # 7  average kilobytes used per processor
    "requested_procs",   # 8  processors requested
    "requested_time",    # 9  seconds requested (the user's runtime estimate)
    "requested_memory",  # 10 kilobytes requested per processor
    "status",            # 11 1 completed, 0 failed, 5 cancelled (others: see docs/traces.md)
    "user_id",           # 12 user number
    "group_id",          # 13 group number
    "executable",        # 14 application number
    "queue",             # 15 queue number
    "partition",         # 16 partition number
    "preceding_job",     # 17 job number this job depends on
    "think_time",        # 18 seconds between the preceding job's end and this submit
)

FIELD_NUMBER: dict[str, int] = {name: i + 1 for i, name in enumerate(FIELDS)}
"""Field name -> 1-based SWF field number."""

FLOAT_FIELDS: frozenset[str] = frozenset({"avg_cpu_time", "used_memory", "requested_memory"})
"""Fields kept as float64 (decimal values are common there); every other field is int64."""

MISSING = -1
"""The SWF value for "not recorded"."""
