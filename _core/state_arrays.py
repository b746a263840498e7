"""The arrays a replay's scheduler state points at (allocated once per replay, in numpy).

Both event loops (loop.pyx, malleable_loop.pyx) start from the same fresh state; each
binds these arrays into its ``sched_t`` with ``sched.sched_bind``.
"""
import numpy as np

from malleo._core.priority import queue_partition_term


def replay_state_arrays(request, user, queue, partition, multifactor):
    """Fresh per-job and per-user state for a replay of ``len(request)`` jobs.

    Args:
        request: int64[n] requested times, seconds (the initial planning estimates).
        user, queue, partition: int32[n] SWF numbers of each job.
        multifactor: the policy's ``Multifactor`` (for the queue/partition term).

    Returns:
        A dict: ``user_code`` (int32[n], users renumbered 0..n_users-1), ``n_users`` (>= 1),
        ``qp`` (float64[n] queue/partition priority term), per job ``start`` (-1),
        ``exp_end`` (0), ``resv_first``/``resv_cur`` (-1), ``backfilled`` (0), ``est``
        (a copy of ``request``), ``key`` (0.0), ``prio`` (NaN); per user ``usage``,
        ``accrued``, ``hist1``, ``hist2``, ``hist_n``, ``is_seen`` (zeros).
    """
    n = len(request)
    users, user_code = np.unique(user, return_inverse=True)
    n_users = max(len(users), 1)
    return {
        "user_code": np.ascontiguousarray(user_code.reshape(-1), dtype=np.int32),
        "n_users": n_users,
        "qp": np.ascontiguousarray(queue_partition_term(queue, partition, multifactor),
                                   dtype=np.float64),
        "start": np.full(n, -1, dtype=np.int64),
        "exp_end": np.zeros(n, dtype=np.int64),
        "resv_first": np.full(n, -1, dtype=np.int64),
        "resv_cur": np.full(n, -1, dtype=np.int64),
        "backfilled": np.zeros(n, dtype=np.uint8),
        "est": np.array(request, dtype=np.int64, copy=True),
        "key": np.zeros(n, dtype=np.float64),
        "prio": np.full(n, np.nan, dtype=np.float64),
        "usage": np.zeros(n_users, dtype=np.float64),
        "accrued": np.zeros(n_users, dtype=np.int64),
        "hist1": np.zeros(n_users, dtype=np.int64),
        "hist2": np.zeros(n_users, dtype=np.int64),
        "hist_n": np.zeros(n_users, dtype=np.int32),
        "is_seen": np.zeros(n_users, dtype=np.uint8),
    }


def malleable_state_arrays(n, n_slot):
    """Fresh work state of the malleable kernel (``malleable.pxd``'s ``mall_t``) for ``n``
    jobs in ``n_slot`` slots (``2 n`` in slurm expand mode: slot ``n + j`` holds job j's
    expander; else ``n``).

    Returns:
        A dict of numpy arrays of ``n_slot`` entries, zero unless said: ``work``, ``done``,
        ``est_work``, ``req_work`` (float64, work units); ``upd``, ``resume``,
        ``next_point``, ``size_since``, ``proc_sec``, ``est0``, ``reconf_time`` (int64,
        seconds); ``true_end`` (int64, 0 for jobs, -1 for expander slots);
        ``last_reconf`` (int64, -1: never); ``n_expand``, ``n_shrink`` (int32);
        ``is_resized`` (uint8); ``parent`` (intp, -1); and of ``max(n, 1)`` entries
        ``expander`` (intp, -1) and the scratch ``cand`` (intp).  The caller adds the
        inputs ``mall_bind`` also reads: ``kind``, ``min_procs``, ``max_procs``,
        ``speedup_a``, ``speedup_b``, ``runtime``, ``p0``.
    """
    out = {name: np.zeros(n_slot, dtype=np.float64)
           for name in ("work", "done", "est_work", "req_work")}
    out.update({name: np.zeros(n_slot, dtype=np.int64)
                for name in ("upd", "resume", "next_point", "size_since", "proc_sec", "est0",
                             "reconf_time", "true_end")})
    out["true_end"][n:] = -1
    out["last_reconf"] = np.full(n_slot, -1, dtype=np.int64)
    out["n_expand"] = np.zeros(n_slot, dtype=np.int32)
    out["n_shrink"] = np.zeros(n_slot, dtype=np.int32)
    out["is_resized"] = np.zeros(n_slot, dtype=np.uint8)
    out["parent"] = np.full(n_slot, -1, dtype=np.intp)
    out["expander"] = np.full(max(n, 1), -1, dtype=np.intp)
    out["cand"] = np.zeros(max(n, 1), dtype=np.intp)
    return out
