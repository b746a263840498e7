"""Queue-order keys and the multifactor priority, from Python (the kernels live in
priority.pxd; the event loop and `plan` inline them)."""
import numpy as np

from malleo.order_stats import distinct_inverse

from _types cimport simtime_t, procs_t, intp_t, ORDER_MULTIFACTOR
from priority cimport order_key, mf_t, mf_priority


def queue_keys(int code, simtime_t now, submit, est, procs):
    """Queue keys at ``now`` (smaller first) of jobs with these submit times (seconds),
    planning estimates (seconds) and sizes (processors); for every order but multifactor.

    Args:
        code: the order's code (``malleo.policy_codes.ORDER_CODES[name]``).

    Returns:
        float64 array, the same doubles the core sorts by.
    """
    cdef simtime_t[::1] s = np.ascontiguousarray(submit, dtype=np.int64)
    cdef simtime_t[::1] e = np.ascontiguousarray(est, dtype=np.int64)
    cdef procs_t[::1] n = np.ascontiguousarray(procs, dtype=np.int32)
    if code == ORDER_MULTIFACTOR:
        raise ValueError("queue_keys: multifactor keys need usage; use multifactor_priority")
    if not (s.shape[0] == e.shape[0] == n.shape[0]):
        raise ValueError("queue_keys: submit, est and procs must have one length")
    out = np.empty(s.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    cdef intp_t i
    for i in range(s.shape[0]):
        o[i] = order_key(code, now, s[i], e[i], n[i])
    return out


def multifactor_priority(multifactor, simtime_t now, simtime_t submit, procs_t procs,
                         procs_t total_procs, double fairshare, double qp=0.0):
    """The multifactor priority of one job (larger first), as the core computes it.

    Args:
        multifactor: a malleo.policy.Multifactor.
        now: the calculation time (seconds).
        submit: the job's submit time (seconds).
        procs: the job's size (processors).
        total_procs: processors in the machine.
        fairshare: the user's fair-share factor in [0, 1].
        qp: the queue and partition term (see queue_partition_term).
    """
    cdef mf_t mf
    mf.weight_age = multifactor.weight_age
    mf.weight_size = multifactor.weight_size
    mf.weight_fairshare = multifactor.weight_fairshare
    mf.max_age = multifactor.max_age
    mf.half_life = multifactor.half_life
    mf.calc_period = multifactor.calc_period
    mf.is_favor_small = multifactor.size_favor == "small"
    mf.calc_time = -1
    return mf_priority(&mf, now, submit, procs, total_procs, fairshare, qp)


def queue_partition_term(queue, partition, multifactor):
    """``multifactor``: a Multifactor or a compiled policy (``policy.core``); per job: weight_queue * queue_factors[queue] + weight_partition *
    partition_factors[partition] (missing keys count 0), as float64.

    Computed once per job by numpy with the same two roundings everywhere (simulate and
    plan both call this), so replays and live plans agree to the bit.
    """
    q = np.asarray(queue, dtype=np.int64).reshape(-1)
    p = np.asarray(partition, dtype=np.int64).reshape(-1)
    qf = dict(multifactor.queue_factors)
    pf = dict(multifactor.partition_factors)
    # one job-sized column at a time, products and sum in place: the same doubles as
    # ``wq * qv + wp * pv`` with fewer job-sized temporaries (issue 16: replay memory)
    qv = _factor_per_job(q, qf)
    qv *= float(multifactor.weight_queue)
    pv = _factor_per_job(p, pf)
    pv *= float(multifactor.weight_partition)
    qv += pv
    return qv


def _factor_per_job(values, factors):
    """``factors[v]`` (0.0 when missing) of each job's ``v``, float64: the distinct values
    looked up once."""
    uniq, where = distinct_inverse(values)
    table = np.array([float(factors.get(int(x), 0.0)) for x in uniq], dtype=np.float64)
    return table[where]
