# The job table: every column a scheduling pass reads or writes (per job slot, per user,
# and the malleable kernel's), owned by one @final object, and the scheduler state wired
# to them.  Included (`include "jobs.pxi"`) by the three entrances of the core
# (loop.simulate, malleable_loop.simulate_malleable, plan.plan): each builds one JobTable,
# fills its input columns, calls wire() and runs the pass function (passes.pxd).  One
# source; an include rather than a cimported class because the modules are installed as
# malleo._core.* while Cython resolves _core/*.pxd as top-level modules.
#
# Slots: rows 0..n-1 are jobs (plan: running rows, then pending rows); in slurm expand
# mode rows n..2n-1 are expander slots (slot n + j: job j's).  Adding a per-job column:
# one entry in SLOT_COLUMNS (dtype, fill of rows nobody sets), its pointer in sched_t
# (sched.pxd) and one line in JobTable.wire.  Times are integer seconds, sizes processors.
cimport cython
from libc.string cimport memset
from libc.stdint cimport int32_t, uint8_t

from _types cimport simtime_t, procs_t, intp_t
from sched cimport sched_t, sched_set_params, sched_alloc, sched_release
from malleable cimport mall_t, mall_set_params, mall_bind, mall_release, KIND_RIGID

SLOT_COLUMNS = {
    # name: (dtype, fill of unset rows and expander slots)
    "submit": (np.int64, 0),          # submit time (seconds); plan's running rows: start
    "request": (np.int64, 0),         # requested time (seconds)
    "procs": (np.int32, 1),           # size (processors)
    "user": (np.int32, 0),            # dense user code 0..n_users-1
    "qp": (np.float64, 0.0),          # multifactor queue + partition term
    "est": (np.int64, 0),             # planning estimate (seconds)
    "key": (np.float64, 0.0),         # queue key (smaller first)
    "prio": (np.float64, np.nan),     # multifactor priority, NaN: not computed yet
    "start": (np.int64, -1),          # start time (seconds), -1 while waiting
    "exp_end": (np.int64, 0),         # running: expected end, its running-set key (seconds)
    "resv_first": (np.int64, -1),     # first planned start given (seconds), -1 none
    "resv_cur": (np.int64, -1),       # planned start of the latest pass (seconds), -1 none
    "backfilled": (np.uint8, 0),      # 1 if started while a job ahead in queue order waited
}
"""Per-slot columns of the scheduler state (``sched_t``)."""

USER_COLUMNS = {
    "usage": (np.float64, 0.0),       # multifactor decayed usage (processor-seconds)
    "accrued": (np.int64, 0),         # processor-seconds completed since the last calculation
    "fs": (np.float64, 0.0),          # multifactor fair-share factor, cached (sched.user_fairshare)
    "fs_calc": (np.int64, -2),        # its calculation's time; -2 none (calc_time is -1 or >= 0)
    "hist_sum": (np.int64, 0),        # predict: sum of the last min(hist_n, K) runtimes (s)
    "hist_n": (np.int32, 0),          # predict: completed runs recorded
    "is_seen": (np.uint8, 0),         # 1 once the user had an arrived job
}
"""Per-user columns of the scheduler state."""

MALL_COLUMNS = {
    "kind": (np.uint8, KIND_RIGID),   # KIND_* (expander slots are rigid)
    "min_procs": (np.int32, 1),       # size range (processors)
    "max_procs": (np.int32, 1),
    "speedup_a": (np.float64, 0.0),   # Amdahl f / Downey A
    "speedup_b": (np.float64, 0.0),   # Downey sigma
    "runtime": (np.int64, 0),         # runtime at the trace size p0 (seconds)
    "p0": (np.int32, 1),              # trace size (processors)
    "work": (np.float64, 0.0),        # demanded work
    "done": (np.float64, 0.0),        # work done up to upd
    "est_work": (np.float64, 0.0),    # estimate as work
    "req_work": (np.float64, 0.0),    # request as work
    "upd": (np.int64, 0),             # seconds
    "resume": (np.int64, 0),          # seconds
    "next_point": (np.int64, 0),      # seconds
    "size_since": (np.int64, 0),      # seconds
    "proc_sec": (np.int64, 0),        # processor-seconds held
    "est0": (np.int64, 0),            # estimate at start (seconds)
    "reconf_time": (np.int64, 0),     # seconds reconfiguring
    "true_end": (np.int64, 0),        # seconds; expander slots -1
    "last_reconf": (np.int64, -1),    # seconds, -1 never
    "n_expand": (np.int32, 0),
    "n_shrink": (np.int32, 0),
    "is_resized": (np.uint8, 0),
    "pref": (np.int32, 0),            # preferred size (processors), 0 until computed
    "parent": (np.intp, -1),          # per slot: the job an expander grows, -1 none
}
"""Per-slot columns of the malleable kernel (``mall_t``, malleable.pxd)."""

MALL_JOB_COLUMNS = {
    "expander": (np.intp, -1),        # per job: its pending expander's slot, -1 none
    "cand": (np.intp, 0),             # scratch
}
"""Per-job (not per-slot) columns of the malleable kernel."""


def _alloc_columns(spec, length, skip=()):
    return {name: np.full(max(length, 1), fill, dtype=dtype)
            for name, (dtype, fill) in spec.items() if name not in skip}


@cython.final
cdef class JobTable:
    """The columns of one replay or one plan call and the state wired to them.

    Columns are numpy arrays in ``cols`` (per slot, SLOT_COLUMNS), ``users`` (per user,
    USER_COLUMNS) and ``mall`` (the malleable kernel's, MALL_COLUMNS and
    MALL_JOB_COLUMNS; None without ``use_mall``).  The state never frees an array; the
    table keeps them alive while the state is used, and releases the state's scratch."""
    cdef readonly intp_t n            # jobs
    cdef readonly intp_t n_slot       # slots: n, or 2 n with expander slots
    cdef readonly intp_t n_users      # distinct users (>= 1)
    cdef readonly dict cols           # per-slot columns, name -> numpy array
    cdef readonly dict users          # per-user columns, name -> numpy array
    cdef readonly dict mall           # malleable columns, name -> numpy array, or None
    cdef readonly object ring         # predict: per user K = predict_runs runtimes (seconds)
    cdef sched_t s                    # the scheduler state (sched.pxd), wired to cols, users
    cdef mall_t m                     # the malleable kernel's state, wired to mall
    cdef mall_t* mp                   # &m once wired with malleable columns, else NULL

    def __cinit__(self, intp_t n, intp_t n_slot, intp_t n_users, bint use_mall=False,
                  tuple adopted=()):
        """Fresh columns for ``n`` jobs in ``n_slot`` slots and ``n_users`` users, every
        row at its fill value; with ``use_mall`` also the malleable kernel's columns.
        The per-slot columns named in ``adopted`` are left out: :meth:`adopt` gives them."""
        memset(&self.s, 0, sizeof(sched_t))
        memset(&self.m, 0, sizeof(mall_t))
        self.mp = NULL
        self.n = n
        self.n_slot = n_slot
        self.n_users = n_users if n_users > 1 else 1
        self.cols = _alloc_columns(SLOT_COLUMNS, n_slot, adopted)
        self.users = _alloc_columns(USER_COLUMNS, self.n_users)
        self.mall = None
        self.ring = None
        if use_mall:
            self.mall = _alloc_columns(MALL_COLUMNS, n_slot)
            self.mall.update(_alloc_columns(MALL_JOB_COLUMNS, n))
            self.mall["true_end"][n:] = -1

    def __dealloc__(self):
        sched_release(&self.s)
        mall_release(&self.m)

    def set(self, dict values):
        """Copy ``name -> array`` into the first rows of those columns (any table)."""
        for name, value in values.items():
            col = self.cols.get(name)
            if col is None:
                col = self.mall[name] if self.mall is not None and name in self.mall \
                    else self.users[name]
            col[:len(value)] = value

    def adopt(self, dict values):
        """Use ``name -> array`` as those per-slot columns without a copy when the array
        is C-contiguous, of the column's dtype and n_slot long (else copy it as
        :meth:`set`).  Only for columns the pass never writes in this table (submit,
        request, procs, user, qp of a rigid replay): the array may be the caller's and
        read-only."""
        for name, value in values.items():
            dtype = SLOT_COLUMNS[name][0]
            if (isinstance(value, np.ndarray) and value.dtype == dtype and value.ndim == 1
                    and value.shape[0] == self.n_slot and self.n_slot > 0
                    and value.flags.c_contiguous):
                self.cols[name] = value
            else:
                fill = SLOT_COLUMNS[name][1]
                self.cols[name] = np.full(max(self.n_slot, 1), fill, dtype=dtype)
                self.cols[name][:len(value)] = value

    def set_ring(self, ring):
        """Give the predict-mode ring (n_users x predict_runs runtimes, user-major, run
        number c in slot c % predict_runs) before :meth:`wire`."""
        self.ring = np.ascontiguousarray(ring, dtype=np.int64).reshape(-1)

    def slot_view(self, name):
        """The first n rows (the jobs, not the expander slots) of a per-slot column."""
        col = self.cols[name] if name in self.cols else self.mall[name]
        return col[:self.n]

    cdef int wire(self, object core, procs_t total, procs_t free) except -1:
        """Point the scheduler state (and, with the malleable columns, the malleable
        kernel's) at the columns, set the policy's codes and parameters from ``core``
        (a ``CorePolicy``) and allocate the state's scratch for n_slot slots."""
        cdef sched_t* s = &self.s
        c = self.cols
        u = self.users
        sched_set_params(s, core)
        s.total = total
        s.free = free
        s.n_jobs = self.n
        s.n_users = self.n_users
        s.submit = _i64(c["submit"])
        s.request = _i64(c["request"])
        s.procs = _i32(c["procs"])
        s.user = _i32(c["user"])
        s.qp = _f64(c["qp"])
        s.est = _i64(c["est"])
        s.key = _f64(c["key"])
        s.prio = _f64(c["prio"])
        s.start = _i64(c["start"])
        s.exp_end = _i64(c["exp_end"])
        s.resv_first = _i64(c["resv_first"])
        s.resv_cur = _i64(c["resv_cur"])
        s.backfilled = _u8(c["backfilled"])
        s.usage = _f64(u["usage"])
        s.accrued = _i64(u["accrued"])
        s.fs = _f64(u["fs"])
        s.fs_calc = _i64(u["fs_calc"])
        s.hist_sum = _i64(u["hist_sum"])
        s.hist_n = _i32(u["hist_n"])
        if self.ring is None:
            self.ring = np.zeros(self.n_users * max(int(core.predict_runs), 1), np.int64)
        s.hist_ring = _i64(self.ring)
        s.is_seen = _u8(u["is_seen"])
        sched_alloc(s, self.n_slot)
        if self.mall is not None:
            mall_set_params(&self.m, core)
            mall_bind(&self.m, self.mall, self.n)
            self.mp = &self.m
        return 0


# const views: an adopted column may be read-only (the pass never writes those)
cdef inline simtime_t* _i64(object a) except NULL:
    cdef const simtime_t[::1] v = a
    return <simtime_t*> &v[0]


cdef inline int32_t* _i32(object a) except NULL:
    cdef const int32_t[::1] v = a
    return <int32_t*> &v[0]


cdef inline double* _f64(object a) except NULL:
    cdef const double[::1] v = a
    return <double*> &v[0]


cdef inline uint8_t* _u8(object a) except NULL:
    cdef uint8_t[::1] v = a
    return &v[0]


def replay_table(dict c, intp_t n_slot, intp_t n_users, core, bint use_mall):
    """A fresh JobTable for a replay of the checked columns ``c``
    (job_columns.replay_columns): submit, request, procs, user codes, the multifactor
    term, and the planning estimates (the requests; the runtimes under estimate
    ``actual``)."""
    cdef intp_t n = c["submit"].shape[0]
    inputs = {"submit": c["submit"], "request": c["request"], "procs": c["procs"],
              "user": c["user"], "qp": c["qp"]}
    if use_mall:               # the reconfiguration phase writes procs and request
        table = JobTable(n, n_slot, n_users, True)
        table.set(inputs)
    else:
        table = JobTable(n, n_slot, n_users, False, tuple(inputs))
        table.adopt(inputs)
    table.set({"est": c["runtime"] if core.is_actual else c["request"]})
    return table
