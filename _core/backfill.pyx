"""Backfill rules from Python (the pass kernel is backfill.pxd, compiled into the event
loop and `plan`): the expected-end rule every mode plans with."""
from _types cimport simtime_t
from sched cimport expected_end as _expected_end


def expected_end(simtime_t start, simtime_t est, simtime_t request, simtime_t now,
                 bint is_incremental=False):
    """Expected end (seconds) at ``now`` of a job running since ``start`` that started
    with planning estimate ``est`` and requested ``request``: start + est; when that is
    <= now, start + request (``is_incremental``: first start + est + 60, then
    start + est + 300, ..., Tsafrir's increments, while below the request); when that too
    is <= now, now + 1.

    Examples:
        >>> expected_end(0, 10, 100, 5), expected_end(0, 10, 100, 10), expected_end(0, 10, 100, 200)
        (10, 100, 201)
        >>> expected_end(0, 10, 9000, 10, True), expected_end(0, 10, 9000, 70, True)
        (70, 310)
    """
    return _expected_end(start, est, request, now, is_incremental)
