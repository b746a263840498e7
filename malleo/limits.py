"""The largest times and sizes the scheduling core supports, checked at every boundary.

The core keeps times in int64 seconds (``simtime_t``) and processor counts in int32
(``procs_t``). It adds times (submit + wait + runtime, start + estimate, a window past now)
and multiplies sizes by durations (areas, processor-seconds, fair-share usage), so the
inputs must stay well inside those types for every sum and product to be exact:

- a time or a duration (seconds): 0 <= t <= MAX_TIME (2**36 s, about 2,177 years; the
  Unix epoch now is about 2**30.7, so live timestamps fit with room to spare);
- a processor or node count: 1 <= p <= MAX_PROCS (2**24 = 16,777,216 processors,
  more than any machine built), so p * t <= 2**60 stays exact in int64 and in float64
  up to 2**53 per job.

Every reader of outside input (the SWF reader, the CLI options, the policy and space
TOML files, ``plan``'s columns, the live Slurm state) refuses a value above these with
an error naming the value and where it came from, never wraps or saturates silently.
"""

MAX_TIME = 2**36
"""The largest time or duration the core accepts, in seconds."""

MAX_PROCS = 2**24
"""The largest processor (or node) count the core accepts."""

__all__ = ["MAX_TIME", "MAX_PROCS", "MAX_PREDICT_RUNS"]

MAX_PREDICT_RUNS = 32
"""The most completed runs ``predict_runs`` averages (``PlanState`` keeps that many per user)."""
