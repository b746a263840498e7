# Learned runtime predictions (Gaussier, Glesser, Reis and Trystram, "Improving backfilling
# by using machine learning to predict running times", SC 2015): an online linear
# regression, trained with the normalized adaptive gradient (NAG, Ross, Mineiro and
# Langford 2013) on an asymmetric loss that costs under-prediction more.
#
# Header-only (`cdef inline`), driven by the scheduler state (sched.pxd) at three events:
#   learn_predict  at a job's submission (admit_arrivals): its features from the present
#                  state and the jobs finished so far, the prediction from the weights so
#                  far; both frozen (features kept for the update);
#   learn_on_start at a start / completion: the user's running totals (features 10-12);
#   learn_observe  at a completion (release_job): the user's history, then one NAG step on
#                  the job's frozen features and its runtime.
# The model only ever sees a runtime through learn_observe, called at the job's end: a
# prediction made at t is a function of the jobs ended by t (and of running jobs' sizes
# and start times), never of a later end (no future information; tests/test_learned.py).
# Times are integer seconds; features and weights doubles.
from libc.math cimport cos, sin, sqrt, fabs, M_PI
from libc.stdlib cimport malloc, calloc, free as c_free
from libc.stdint cimport int32_t

from _types cimport simtime_t, procs_t, intp_t

cdef enum:
    N_FEAT = 17               # features per job (learn_features)


cdef struct learn_t:
    double eta                # NAG learning rate
    double under              # loss weight of an under-prediction (over-prediction: 1)
    double w[N_FEAT]          # weights
    double scale[N_FEAT]      # NAG: largest |x_i| seen in an update
    double grad2[N_FEAT]      # NAG: sum of squared gradients
    double norm               # NAG: sum over updates of sum_i (x_i / scale_i)^2
    double n_upd              # updates made
    double* x                 # per job: its N_FEAT features at submission (n_jobs rows)
    # per user (n_users)
    simtime_t* last           # last three completed runtimes, 3 per user (seconds)
    simtime_t* n_done         # completed jobs
    double* sum_done          # their summed runtimes (seconds)
    simtime_t* last_end       # time of the last completion (seconds), -1 none
    simtime_t* run_procs      # processors held by the user's running jobs
    simtime_t* run_n          # the user's running jobs
    simtime_t* run_start      # sum of their start times (seconds)


cdef inline int learn_alloc(learn_t* l, intp_t n_jobs, intp_t n_users, double eta,
                            double under) except -1:
    """Zeroed model for n_jobs jobs and n_users users (release with learn_release)."""
    cdef intp_t k
    l.eta = eta
    l.under = under
    for k in range(N_FEAT):
        l.w[k] = 0.0
        l.scale[k] = 0.0
        l.grad2[k] = 0.0
    l.norm = 0.0
    l.n_upd = 0.0
    l.x = <double*> malloc((n_jobs if n_jobs > 0 else 1) * N_FEAT * sizeof(double))
    l.last = <simtime_t*> calloc(3 * n_users, sizeof(simtime_t))
    l.n_done = <simtime_t*> calloc(n_users, sizeof(simtime_t))
    l.sum_done = <double*> calloc(n_users, sizeof(double))
    l.last_end = <simtime_t*> malloc(n_users * sizeof(simtime_t))
    l.run_procs = <simtime_t*> calloc(n_users, sizeof(simtime_t))
    l.run_n = <simtime_t*> calloc(n_users, sizeof(simtime_t))
    l.run_start = <simtime_t*> calloc(n_users, sizeof(simtime_t))
    if (l.x == NULL or l.last == NULL or l.n_done == NULL or l.sum_done == NULL
            or l.last_end == NULL or l.run_procs == NULL or l.run_n == NULL
            or l.run_start == NULL):
        raise MemoryError("learned predictions")
    for k in range(n_users):
        l.last_end[k] = -1
    return 0


cdef inline void learn_release(learn_t* l) noexcept nogil:
    """Free what learn_alloc allocated (safe on a zeroed model)."""
    c_free(l.x)
    c_free(l.last)
    c_free(l.n_done)
    c_free(l.sum_done)
    c_free(l.last_end)
    c_free(l.run_procs)
    c_free(l.run_n)
    c_free(l.run_start)
    l.x = NULL
    l.last = NULL
    l.n_done = NULL
    l.sum_done = NULL
    l.last_end = NULL
    l.run_procs = NULL
    l.run_n = NULL
    l.run_start = NULL


cdef inline void learn_on_start(learn_t* l, int32_t u, procs_t procs, simtime_t start,
                                int sign) noexcept nogil:
    """A job of user u started at ``start`` (sign 1) or that job ended (sign -1)."""
    l.run_procs[u] += sign * procs
    l.run_n[u] += sign
    l.run_start[u] += sign * start


cdef inline void learn_features(learn_t* l, double* x, int32_t u, procs_t procs,
                                simtime_t request, simtime_t now) noexcept nogil:
    """The features of a job submitted now (docs/policies.md, "Learned predictions")."""
    cdef simtime_t c = l.n_done[u]
    cdef simtime_t r
    cdef int k
    x[0] = 1.0
    for k in range(3):                   # last three completed runtimes, capped
        r = l.last[3 * u + k] if c > k else request
        x[1 + k] = <double> (r if r < request else request)
    x[4] = <double> request
    x[5] = (x[1] + x[2]) / 2.0
    x[6] = (x[1] + x[2] + x[3]) / 3.0
    x[7] = l.sum_done[u] / <double> c if c > 0 else 0.0
    x[8] = <double> (now - l.last_end[u]) if l.last_end[u] >= 0 else 0.0
    x[9] = <double> procs
    x[10] = <double> l.run_procs[u]
    x[11] = <double> (l.run_n[u] * now - l.run_start[u])
    x[12] = <double> l.run_n[u]
    x[13] = cos(2.0 * M_PI * <double> (now % 86400) / 86400.0)
    x[14] = sin(2.0 * M_PI * <double> (now % 86400) / 86400.0)
    x[15] = cos(2.0 * M_PI * <double> (now % 604800) / 604800.0)
    x[16] = sin(2.0 * M_PI * <double> (now % 604800) / 604800.0)


cdef inline simtime_t learn_predict(learn_t* l, intp_t j, int32_t u, procs_t procs,
                                    simtime_t request, simtime_t now) noexcept nogil:
    """Job j of user u submitted now: freeze its features, return its prediction
    max(1, floor(|w . x|)) capped at the request (seconds)."""
    cdef double* x = &l.x[j * N_FEAT]
    cdef double f = 0.0
    cdef simtime_t p
    cdef int k
    learn_features(l, x, u, procs, request, now)
    for k in range(N_FEAT):
        f += l.w[k] * x[k]
    f = fabs(f)
    p = <simtime_t> f if f < 4.0e18 else request
    if p < 1:
        p = 1
    return p if p < request else request


cdef inline void learn_observe(learn_t* l, intp_t j, int32_t u, procs_t procs,
                               simtime_t runtime, simtime_t now) noexcept nogil:
    """Job j of user u ended now after ``runtime`` seconds: update the user's history, then
    one NAG step on the job's frozen features with the asymmetric squared loss
    L = under * (y - f)^2 if f < y else (f - y)^2 (y the runtime, f = w . x)."""
    cdef double* x = &l.x[j * N_FEAT]
    cdef double f = 0.0
    cdef double y = <double> runtime
    cdef double dl, g, a, step
    cdef int k
    l.last[3 * u + 2] = l.last[3 * u + 1]
    l.last[3 * u + 1] = l.last[3 * u]
    l.last[3 * u] = runtime
    l.n_done[u] += 1
    l.sum_done[u] += y
    l.last_end[u] = now
    # NAG (Ross et al. 2013, algorithm 1): rescale weights of features seen larger than
    # ever, accumulate the normaliser, then a per-feature normalised gradient step
    for k in range(N_FEAT):
        a = fabs(x[k])
        if a > l.scale[k]:
            if l.scale[k] > 0.0:
                l.w[k] = l.w[k] * l.scale[k] * l.scale[k] / (a * a)
            l.scale[k] = a
    for k in range(N_FEAT):
        if l.scale[k] > 0.0:
            l.norm += (x[k] / l.scale[k]) * (x[k] / l.scale[k])
        f += l.w[k] * x[k]
    l.n_upd += 1.0
    dl = 2.0 * l.under * (f - y) if f < y else 2.0 * (f - y)
    if l.norm <= 0.0:
        return
    step = l.eta * sqrt(l.n_upd / l.norm)
    for k in range(N_FEAT):
        g = dl * x[k]
        if g == 0.0:
            continue
        l.grad2[k] += g * g
        l.w[k] -= step * g / (l.scale[k] * sqrt(l.grad2[k]))
