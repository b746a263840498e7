# Queue-order keys and the Slurm-style multifactor priority.
#
# Header-only (`cdef inline`).  Every float is computed in the operation order written in
# docs/scheduling-semantics.md, with libm's log2/log10/pow (what CPython's math module
# calls), so a pure-Python reference computes the same doubles.  The build uses no FMA
# (baseline x86-64), so a * b + c is rounded twice, as in Python.
from libc.math cimport log2, log10, pow

from _types cimport (simtime_t, procs_t, intp_t, ORDER_FCFS, ORDER_SJF, ORDER_LJF, ORDER_SAF,
                     ORDER_WFP3, ORDER_UNICEP, ORDER_F1, ORDER_MULTIFACTOR)


cdef struct mf_t:
    double weight_age          # weight of the age factor
    double weight_size         # weight of the size factor
    double weight_fairshare    # weight of the fair-share factor
    simtime_t max_age          # seconds; the age factor saturates at 1 there
    simtime_t half_life        # seconds; usage halves over this span
    simtime_t calc_period      # seconds; priorities are recomputed when t // calc_period changes
    bint is_favor_small        # size factor favours small (True) or large (False) jobs
    simtime_t calc_time        # seconds; time of the last calculation, -1 before the first
    double total_usage         # processor-seconds; all users' decayed usage at that calculation
    intp_t users_at_calc       # users seen at that calculation (equal shares 1 / users_at_calc)


cdef inline double unicep_size(procs_t n) noexcept nogil:
    """The size term of unicep's key, log2(max(n, 2)) (a function of the size only: the
    event loop computes it once a job, sched.sched_unicep_sizes)."""
    return log2(<double> (n if n > 2 else 2))


cdef inline double unicep_key(simtime_t now, simtime_t submit, simtime_t est,
                              double size_term) noexcept nogil:
    """unicep's key (Tang et al. 2009: -w / (log2(max(n, 2)) * e)) from its size term."""
    cdef simtime_t e = est if est > 1 else 1
    return <double> (-(now - submit)) / (size_term * <double> e)


cdef inline double wfp3_key(simtime_t now, simtime_t submit, simtime_t est,
                            procs_t n) noexcept nogil:
    """wfp3's key (Tang et al. 2009: -(r^3) * n with r = w / max(e, 1))."""
    cdef simtime_t e = est if est > 1 else 1
    cdef double r = <double> (now - submit) / <double> e
    return -(r * r * r) * <double> n


cdef inline double order_key(int order, simtime_t now, simtime_t submit, simtime_t est,
                             procs_t n) noexcept nogil:
    """The queue key of a waiting job at ``now`` (smaller first), for every order but
    multifactor (whose key is minus the stored priority)."""
    cdef simtime_t e = est if est > 1 else 1
    if order == ORDER_FCFS:
        return <double> submit
    if order == ORDER_SJF:
        return <double> est
    if order == ORDER_LJF:
        return <double> (-est)
    if order == ORDER_SAF:
        return <double> (n * est)
    if order == ORDER_WFP3:
        return wfp3_key(now, submit, est, n)
    if order == ORDER_UNICEP:
        return unicep_key(now, submit, est, unicep_size(n))
    if order == ORDER_F1:
        # Carastan-Santos and de Camargo 2017
        return log10(<double> e) * <double> n + 870.0 * log10(<double> (submit if submit > 1 else 1))
    return 0.0


cdef struct keys_t:
    # The waiting jobs' queue keys (smaller first) as the queue and the holder index read
    # them: the stored ``key`` column, or, when ``is_lazy`` (wfp3 and unicep with a kept
    # profile: sched.sched_keys; unicep when ``unicep_sizes`` is set, else wfp3), computed
    # on each read at the pass time ``at`` from the job's fixed columns by the function the
    # stored key would have come from (the same double), so that a pass takes the keys of
    # the jobs it compares instead of keying the whole queue
    double* key                  # stored keys (not is_lazy)
    simtime_t* submit            # seconds
    simtime_t* est               # seconds; fixed while a job waits (all but predict)
    procs_t* procs               # processors
    double* unicep_sizes         # unicep: each job's size term, else NULL
    simtime_t at                 # seconds; the pass time of lazy keys
    bint is_lazy


cdef inline double key_at(const keys_t* k, intp_t j) noexcept nogil:
    """Job j's queue key: stored, or computed at ``k.at`` (keys_t)."""
    if not k.is_lazy:
        return k.key[j]
    if k.unicep_sizes != NULL:
        return unicep_key(k.at, k.submit[j], k.est[j], k.unicep_sizes[j])
    return wfp3_key(k.at, k.submit[j], k.est[j], k.procs[j])


cdef inline bint order_is_time_dependent(int order) noexcept nogil:
    """Orders whose key changes with the pass time (re-sorted at every pass)."""
    return order == ORDER_WFP3 or order == ORDER_UNICEP


cdef inline bint order_keys_move(int order) noexcept nogil:
    """Orders whose waiting jobs' keys change between passes: with the pass time (wfp3,
    unicep) or at each calculation (multifactor: age and fair share)."""
    return order_is_time_dependent(order) or order == ORDER_MULTIFACTOR


cdef inline bint order_uses_estimate(int order) noexcept nogil:
    """Orders whose key reads the planning estimate (re-sorted when a predict estimate changed)."""
    return order != ORDER_FCFS


cdef inline simtime_t floor_div(simtime_t a, simtime_t b) noexcept nogil:
    """Floor division for b > 0 (C division truncates toward zero)."""
    cdef simtime_t q = a // b
    if (a % b) != 0 and a < 0:
        q -= 1
    return q


cdef inline bint mf_needs_calc(const mf_t* mf, simtime_t now) noexcept nogil:
    """True at the first pass and whenever floor(now / calc_period) changed."""
    return mf.calc_time < 0 or (floor_div(now, mf.calc_period)
                                != floor_div(mf.calc_time, mf.calc_period))


cdef inline void mf_recalc_usage(mf_t* mf, simtime_t now, intp_t n_users, intp_t n_seen,
                                 double* usage, simtime_t* accrued) noexcept nogil:
    """Decay every user's usage to ``now`` and add what accrued since the last calculation
    (``accrued``, exact integer processor-seconds, is reset to 0); record the total and the
    users seen for the fair-share factors.  Users are walked in increasing user id so the
    total is summed in one fixed order."""
    cdef double decay = 1.0
    cdef double total = 0.0
    cdef intp_t u
    if mf.calc_time >= 0:
        decay = pow(2.0, -(<double> (now - mf.calc_time)) / <double> mf.half_life)
    for u in range(n_users):
        usage[u] = usage[u] * decay + <double> accrued[u]
        accrued[u] = 0
        total = total + usage[u]
    mf.total_usage = total
    mf.users_at_calc = n_seen
    mf.calc_time = now


cdef inline double mf_fairshare(const mf_t* mf, double usage) noexcept nogil:
    """The fair-share factor of a user with this decayed usage at the last calculation:
    2 ** -((usage / total) * users), 1 when nobody has used anything."""
    if mf.total_usage > 0.0:
        return pow(2.0, -((usage / mf.total_usage) * <double> mf.users_at_calc))
    return 1.0


cdef inline double mf_priority(const mf_t* mf, simtime_t now, simtime_t submit, procs_t n,
                               procs_t total, double fairshare, double qp) noexcept nogil:
    """The multifactor priority (larger first):
    ((wa * age_f + ws * size_f) + wf * fairshare) + qp, where qp is the queue and
    partition term wq * queue_factor + wp * partition_factor."""
    cdef simtime_t age = now - submit
    cdef double age_f, size_f
    if age > mf.max_age:
        age = mf.max_age
    if age < 0:
        age = 0
    age_f = <double> age / <double> mf.max_age
    if mf.is_favor_small:
        size_f = <double> (total - n + 1) / <double> total
    else:
        size_f = <double> n / <double> total
    return mf.weight_age * age_f + mf.weight_size * size_f + mf.weight_fairshare * fairshare + qp
