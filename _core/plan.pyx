"""The live form of the scheduling core: ``plan``, called by the Slurm agent.

``plan`` builds the same C scheduler state the event loop keeps (sched.pxd) from the
running and pending tables, orders the queue (sched.queue_prepare) and runs the same
pass kernel (backfill.schedule_pass).  Calling it at every event time of a replay, with
the completions recorded in a :class:`PlanState`, gives exactly the schedule of
``simulate`` (tests/test_core_plan.py).  Times are integer seconds, sizes processors.
"""
import numpy as np

from libc.string cimport memset
from libc.stdint cimport int32_t, uint8_t

from _types cimport simtime_t, procs_t, intp_t, ORDER_MULTIFACTOR, ESTIMATE_ACTUAL
from sched cimport (sched_t, sched_set_policy, sched_alloc, sched_bind, sched_release,
                   queue_prepare)
from backfill cimport schedule_pass
from malleable cimport (mall_t, mall_set_options, mall_bind, mall_release, mall_on_start,
                        malleable_phase, speedup)
from libc.stdint cimport INT64_MAX

from malleo._core.priority import queue_partition_term
from malleo._core.state_arrays import malleable_state_arrays


class PlanState:
    """What ``plan`` remembers between calls: per-user runtime history (predict mode) and
    multifactor usage.  Keys are user ids (ints).

    Attributes:
        history: user -> (last runtime, the one before, completed runs), seconds.
        usage: user -> decayed usage (processor-seconds) at the last priority calculation.
        accrued: user -> processor-seconds of jobs completed since that calculation.
        total_usage: processor-seconds, all users' decayed usage at that calculation.
        users_at_calc: users seen at that calculation (equal shares).
        seen: users that ever had a pending or running job (fair share: 1 / len(seen)).
        calc_time: seconds, time of the last priority calculation, -1 before the first.

    The caller reports each completed job with :meth:`record_completion` (in increasing
    job order at one time) before the next ``plan`` call; ``plan`` never mutates the
    state it is given and returns an updated copy in ``Decisions.state``.
    """

    __slots__ = ("history", "usage", "accrued", "total_usage", "users_at_calc", "seen",
                 "calc_time")

    def __init__(self):
        self.history = {}
        self.usage = {}
        self.accrued = {}
        self.total_usage = 0.0
        self.users_at_calc = 0
        self.seen = set()
        self.calc_time = -1

    def copy(self):
        """An independent copy."""
        other = PlanState()
        other.history = dict(self.history)
        other.usage = dict(self.usage)
        other.accrued = dict(self.accrued)
        other.total_usage = self.total_usage
        other.users_at_calc = self.users_at_calc
        other.seen = set(self.seen)
        other.calc_time = self.calc_time
        return other

    def record_completion(self, user, procs, start, end):
        """A job of ``user`` that held ``procs`` processors from ``start`` to ``end``
        (seconds) completed: its runtime joins the user's history and its usage since the
        last priority calculation accrues to the user.  Mutates this state."""
        user = int(user)
        start = int(start)
        end = int(end)
        if end < start:
            raise ValueError(f"record_completion: end {end} before start {start}")
        last, _, count = self.history.get(user, (0, 0, 0))
        self.history[user] = (end - start, last, count + 1)
        since = max(start, self.calc_time)
        self.accrued[user] = self.accrued.get(user, 0) + int(procs) * (end - since)
        self.seen.add(user)

    def fairshare(self, user):
        """The user's multifactor fair-share factor as of the last calculation:
        2 ** -((usage / total_usage) * users_at_calc), 1.0 when nothing was used."""
        if self.total_usage > 0.0:
            return 2.0 ** -((self.usage.get(int(user), 0.0) / self.total_usage)
                            * self.users_at_calc)
        return 1.0

    def __repr__(self):
        return (f"PlanState(users={len(self.seen)}, calc_time={self.calc_time}, "
                f"histories={len(self.history)})")


class Decisions:
    """What one ``plan`` pass decided.

    Attributes:
        start: int64 indices into ``pending`` of the jobs to start now, in start order.
        reservation: int64 per pending job: its planned start from this pass (seconds),
            -1 if none.  Conservative plans every job, so a job it starts now has ``now``;
            EASY reserves only the head, slurm at most bf_max_job_test jobs.
        order: int64 indices into ``pending`` in queue order at ``now``.
        backfilled: uint8 per pending job, 1 if it starts now while a job ahead of it
            in queue order keeps waiting.
        est: int64 per pending job, the planning estimate used (seconds).
        priority: float64 per pending job, the multifactor priority (NaN for other orders).
        resize: int64 array of shape (k, 2), rows (running index, new size in
            processors) for the running malleable jobs the reconfiguration policy
            (``policy.malleability.policy``: dmr or head-unblock) resizes now; shape (0, 2)
            when nothing changes.
        start_procs: int64 per started job (aligned with ``start``), the size to start it
            at: its ``procs`` unless the reconfiguration policy resized it in this pass.
            A started pending expander row (``parent`` >= 0) is merged, not started: its
            parent's new size is in ``resize``.
        expand: int64 array of shape (k, 3), rows (job, processors, estimate in
            seconds) of the expander requests made in this call that did not start in it
            (slurm expand mode), ``job`` a running index, or ``len(running)`` + a pending
            index for a job started in this call: the caller queues each, as a pending row
            with ``parent`` = that job once running, submitted now; shape (0, 3) otherwise.
            Expanders made and started in this call show only as the parent's ``resize``.
        state: the updated :class:`PlanState` to pass to the next call.
    """

    __slots__ = ("start", "reservation", "order", "backfilled", "est", "priority", "resize",
                 "state", "start_procs", "expand")

    def __init__(self, start, reservation, order, backfilled, est, priority, resize, state,
                 start_procs=None, expand=None):
        self.start = start
        self.reservation = reservation
        self.order = order
        self.backfilled = backfilled
        self.est = est
        self.priority = priority
        self.resize = resize
        self.state = state
        self.start_procs = start_procs
        self.expand = np.zeros((0, 3), np.int64) if expand is None else expand

    def __repr__(self):
        return (f"Decisions(start={self.start.tolist()}, order={self.order[:10].tolist()}"
                f"{'...' if len(self.order) > 10 else ''})")


def _columns(table, name, required, optional):
    """Pull columns out of a DataFrame or a dict of arrays as numpy arrays of one length."""
    out = {}
    n = None
    for col, (dtype, default) in {**{c: (d, None) for c, d in required.items()}, **optional}.items():
        present = table is not None and col in table
        if not present:
            if col in required:
                raise ValueError(f"{name}: missing column {col!r}")
            out[col] = default
            continue
        arr = np.asarray(table[col])
        if arr.ndim != 1:
            raise ValueError(f"{name}.{col}: must be 1-D, got shape {arr.shape}")
        try:
            arr = np.ascontiguousarray(arr, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}.{col}: not convertible to {np.dtype(dtype).name}: {exc}")
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise ValueError(f"{name}.{col}: length {arr.shape[0]} differs from {n}")
        out[col] = arr
    n = 0 if n is None else n
    for col, (dtype, default) in optional.items():
        if not isinstance(out[col], np.ndarray):
            out[col] = np.full(n, default, dtype=dtype)
    return out, n


_FLEX_COLUMNS = {"kind": (np.int64, 0), "min_procs": (np.int64, -1),
                 "max_procs": (np.int64, -1), "speedup_a": (np.float64, 0.0),
                 "speedup_b": (np.float64, 0.0)}
"""Optional malleability columns of both tables (docs/malleability.md)."""


def _size_range(cols, label, total):
    """min/max columns with -1 meaning the job's procs; checked 1 <= min <= procs <= max."""
    procs = cols["procs"].astype(np.int64)
    lo = np.where(cols["min_procs"] < 0, procs, cols["min_procs"])
    hi = np.where(cols["max_procs"] < 0, procs, cols["max_procs"])
    bad = (lo < 1) | (lo > procs) | (hi < procs) | (hi > total)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"{label}.min_procs/max_procs: need 1 <= min <= procs <= max <= "
                         f"{total}, row {row} has {lo[row]} <= {procs[row]} <= {hi[row]}")
    if ((cols["kind"] < 0) | (cols["kind"] > 2)).any():
        raise ValueError(f"{label}.kind: must be 0 (rigid), 1 (moldable) or 2 (malleable)")
    return lo.astype(np.int32), hi.astype(np.int32)


def _total_procs(cluster):
    total = getattr(cluster, "total_procs", cluster)
    try:
        total = int(total)
    except (TypeError, ValueError):
        raise ValueError(f"cluster: need an int or an object with total_procs, got {cluster!r}")
    if total < 1:
        raise ValueError(f"cluster: total_procs must be >= 1, got {total}")
    return total


def plan(now, cluster, running, pending, policy, state=None):
    """One scheduling pass at ``now`` over live state: what to start, what to reserve.

    Args:
        now: the pass time (seconds), >= 0.
        cluster: processors in the machine, an int or an object with ``total_procs``.
        running: DataFrame or dict of arrays, one row per running job: ``procs``
            (processors), ``start`` (seconds, <= now), ``est`` (the planning estimate it
            started with, seconds), ``request`` (requested time, seconds), optional
            ``user`` (multifactor usage; default 0).  Rows in job order (ties of equal
            expected ends follow it).
        pending: DataFrame or dict of arrays, one row per waiting job in job order (the
            last tie-breaker of the queue order): ``submit`` (seconds, <= now), ``procs``,
            ``request`` (seconds), optional ``user``, ``queue``, ``partition`` (default
            0), ``reservation`` (its planned start from the previous pass, -1; read by
            conservative backfill), ``priority`` (its multifactor priority from the
            previous pass, NaN if new), ``runtime`` (required by estimate "actual").
        policy: a malleo.policy.Policy.
        state: a :class:`PlanState` from the previous call, or None for a fresh one.

    Malleability (docs/malleability.md): both tables take optional ``kind`` (0 rigid,
    1 moldable, 2 malleable), ``min_procs``, ``max_procs`` (default: procs),
    ``speedup_a``, ``speedup_b``; running rows also ``p0``, ``work_done``, ``resume``,
    ``last_reconf`` and ``at_point``; pending rows also ``parent`` (slurm expand mode: the
    running row a queued expander grows, -1 for an ordinary job; at most one per running
    job; give expander rows after the ordinary ones, in their parents' job order).  With
    ``policy.malleability.policy`` other than none (or moldable start on), the
    reconfiguration kernel of the replay runs after the pass
    and fills ``Decisions.resize`` and ``Decisions.start_procs``.

    Returns:
        :class:`Decisions`.  ``plan`` is pure: the same inputs give the same decisions,
        and ``state`` is not modified.

    Raises:
        ValueError: a missing or malformed column, a job size outside 1..total_procs,
            negative times, a submit or start after ``now``, or more processors running
            than the machine has.

    Examples:
        >>> from malleo.policy import Policy
        >>> d = plan(0, 4, {"procs": [], "start": [], "est": [], "request": []},
        ...          {"submit": [0, 0], "procs": [4, 2], "request": [60, 30]}, Policy())
        >>> d.start.tolist(), d.reservation.tolist()
        ([0], [-1, 60])
    """
    cdef simtime_t t = int(now)
    cdef procs_t total = _total_procs(cluster)
    if t < 0:
        raise ValueError(f"now: must be >= 0, got {t}")
    run_cols, n_run = _columns(
        running, "running",
        {"procs": np.int32, "start": np.int64, "est": np.int64, "request": np.int64},
        {"user": (np.int64, 0), **_FLEX_COLUMNS, "p0": (np.int64, -1),
         "work_done": (np.float64, np.nan), "resume": (np.int64, -1),
         "last_reconf": (np.int64, -1), "at_point": (np.int64, 1)})
    pend_cols, n_pend = _columns(
        pending, "pending",
        {"submit": np.int64, "procs": np.int32, "request": np.int64},
        {"user": (np.int64, 0), "queue": (np.int64, 0), "partition": (np.int64, 0),
         "reservation": (np.int64, -1), "priority": (np.float64, np.nan),
         "runtime": (np.int64, -1), "parent": (np.int64, -1), **_FLEX_COLUMNS})
    for label, cols, names in (("running", run_cols, ("start", "est", "request")),
                               ("pending", pend_cols, ("submit", "request"))):
        for col in names:
            if (cols[col] < 0).any():
                row = int(np.argmax(cols[col] < 0))
                raise ValueError(f"{label}.{col}: must be >= 0, row {row} has {cols[col][row]}")
        bad = (cols["procs"] < 1) | (cols["procs"] > total)
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"{label}.procs: must be in 1..{total}, row {row} has {cols['procs'][row]}")
    if (run_cols["start"] > t).any():
        raise ValueError(f"running.start: a job starts after now={t}")
    if (pend_cols["submit"] > t).any():
        raise ValueError(f"pending.submit: a job submits after now={t}")
    busy = int(run_cols["procs"].sum(dtype=np.int64))
    if busy > total:
        raise ValueError(f"running: {busy} processors busy on a machine of {total}")
    if policy.estimate == "actual" and (pend_cols["runtime"] < 0).any():
        raise ValueError("pending.runtime: required (>= 0) by estimate 'actual'")
    pend_parent = pend_cols["parent"]
    has_exp = pend_parent >= 0
    if ((pend_parent >= n_run).any() or pend_parent.min(initial=-1) < -1
            or len(np.unique(pend_parent[has_exp])) != int(has_exp.sum())):
        raise ValueError(f"pending.parent: must be -1 or a running row (0..{n_run - 1}), "
                         "at most one expander per running job")

    state = PlanState() if state is None else state.copy()
    n = n_run + n_pend
    users_raw = np.concatenate([run_cols["user"], pend_cols["user"]])
    state.seen.update(int(u) for u in np.unique(users_raw))
    known = set(state.seen) | set(state.usage) | set(state.history) | set(state.accrued)
    users = np.array(sorted(known), dtype=np.int64)
    n_users = max(len(users), 1)
    user_code = np.ascontiguousarray(np.searchsorted(users, users_raw), dtype=np.int32)
    users_list = users.tolist()
    usage = np.array([float(state.usage.get(u, 0.0)) for u in users_list] or [0.0])
    accrued = np.array([int(state.accrued.get(u, 0)) for u in users_list] or [0], dtype=np.int64)
    hist = [state.history.get(u, (0, 0, 0)) for u in users_list] or [(0, 0, 0)]
    hist1 = np.array([h[0] for h in hist], dtype=np.int64)
    hist2 = np.array([h[1] for h in hist], dtype=np.int64)
    hist_n = np.array([min(h[2], 2) for h in hist], dtype=np.int32)

    submit = np.concatenate([run_cols["start"], pend_cols["submit"]])
    request = np.concatenate([run_cols["request"], pend_cols["request"]])
    procs = np.concatenate([run_cols["procs"], pend_cols["procs"]]).astype(np.int32)
    qp = np.concatenate([np.zeros(n_run), queue_partition_term(
        pend_cols["queue"], pend_cols["partition"], policy.multifactor)])
    est = np.concatenate([run_cols["est"], pend_cols["runtime"] if policy.estimate == "actual"
                          else pend_cols["request"]])
    prio = np.concatenate([np.full(n_run, np.nan), pend_cols["priority"]])
    key = np.where(np.isnan(prio), 0.0, -prio)
    start = np.concatenate([run_cols["start"], np.full(n_pend, -1, dtype=np.int64)])
    exp_end = np.zeros(n, dtype=np.int64)
    resv_first = np.full(n, -1, dtype=np.int64)
    resv_cur = np.concatenate([np.full(n_run, -1, dtype=np.int64), pend_cols["reservation"]])
    backfilled = np.zeros(n, dtype=np.uint8)
    run_end = run_cols["start"] + run_cols["est"]
    run_rows = np.lexsort((np.arange(n_run), run_end))
    mal = policy.malleability
    is_slurm = mal.expand_mode == "slurm"
    # slurm mode: slots n..2n-1 hold the expanders requested in this call (slot n + k:
    # job k's, k indexing running rows then pending rows: a job started in this call may
    # get one); every per-job column is padded to cover them
    n_slot = 2 * n if is_slurm else n

    def slots(arr, fill):
        if arr.shape[0] == n_slot:
            return arr
        return np.concatenate([arr, np.full(n_slot - n, fill, dtype=arr.dtype)])

    submit = slots(submit, 0)
    request = slots(request, 0)
    procs = slots(procs, 1)
    user_code = slots(user_code, 0)
    qp = slots(qp, 0.0)
    est = slots(est, 0)
    prio = slots(prio, np.nan)
    key = slots(key, 0.0)
    start = slots(start, -1)
    exp_end = slots(exp_end, 0)
    resv_first = slots(resv_first, -1)
    resv_cur = slots(resv_cur, -1)
    backfilled = slots(backfilled, 0)

    cdef sched_t s
    memset(&s, 0, sizeof(sched_t))
    sched_set_policy(&s, policy)
    if n == 0:
        return Decisions(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                         np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0),
                         np.zeros((0, 2), np.int64), state, np.zeros(0, np.int64))
    cdef simtime_t[::1] v_submit = submit, v_request = request, v_est = est, v_start = start
    cdef simtime_t[::1] v_exp = exp_end, v_rf = resv_first, v_rc = resv_cur
    cdef simtime_t[::1] v_acc = accrued, v_h1 = hist1, v_h2 = hist2, v_run_end = run_end
    cdef procs_t[::1] v_procs = procs
    cdef int32_t[::1] v_user = user_code, v_hist_n = hist_n
    cdef double[::1] v_qp = qp, v_key = key, v_prio = prio, v_usage = usage
    cdef uint8_t[::1] v_bf = backfilled
    cdef intp_t[::1] v_rows = np.ascontiguousarray(run_rows, dtype=np.intp)
    cdef intp_t k, j
    s.now = t
    s.total = total
    s.free = total - busy
    s.n_jobs = n
    sched_bind(&s, &v_submit[0], &v_request[0], &v_procs[0], &v_user[0], &v_qp[0], &v_est[0],
               &v_key[0], &v_prio[0], &v_start[0], &v_exp[0], &v_rf[0], &v_rc[0], &v_bf[0],
               &v_usage[0], &v_acc[0], &v_h1[0], &v_h2[0], &v_hist_n[0])
    s.n_users = n_users
    s.n_seen = len(state.seen)
    s.mf.calc_time = int(state.calc_time)
    s.mf.total_usage = float(state.total_usage)
    s.mf.users_at_calc = int(state.users_at_calc)
    order_out = np.empty(n_pend, dtype=np.int64)
    started_out = None
    # malleability: the same reconfiguration kernel as the event loop (malleable.pxd)
    kind = slots(np.concatenate([run_cols["kind"], pend_cols["kind"]]).astype(np.uint8), 0)
    run_lo, run_hi = _size_range(run_cols, "running", total)
    pend_lo, pend_hi = _size_range(pend_cols, "pending", total)
    cdef bint use_mall = ((mal.policy != "none" and bool((kind == 2).any()))
                          or (bool(mal.moldable_start) and bool((kind == 1).any()))
                          or bool(has_exp.any()))
    cdef mall_t m
    memset(&m, 0, sizeof(mall_t))
    ma = malleable_state_arrays(n, n_slot)
    ma["kind"] = kind
    ma["min_procs"] = slots(np.ascontiguousarray(np.concatenate([run_lo, pend_lo]),
                                                 dtype=np.int32), 1)
    ma["max_procs"] = slots(np.ascontiguousarray(np.concatenate([run_hi, pend_hi]),
                                                 dtype=np.int32), 1)
    ma["speedup_a"] = slots(np.ascontiguousarray(
        np.concatenate([run_cols["speedup_a"], pend_cols["speedup_a"]]), dtype=np.float64), 0.0)
    ma["speedup_b"] = slots(np.ascontiguousarray(
        np.concatenate([run_cols["speedup_b"], pend_cols["speedup_b"]]), dtype=np.float64), 0.0)
    ma["runtime"] = slots(est.copy(), 0)
    ma["p0"] = slots(np.ascontiguousarray(np.concatenate(
        [np.where(run_cols["p0"] < 0, run_cols["procs"], run_cols["p0"]), pend_cols["procs"]]),
        dtype=np.int32), 1)
    ma["last_reconf"][:n_run] = run_cols["last_reconf"]
    m_parent, m_expander = ma["parent"], ma["expander"]
    for k in np.flatnonzero(has_exp).tolist():
        m_parent[n_run + k] = pend_parent[k]
        m_expander[pend_parent[k]] = n_run + k
    m_work, m_done, m_ew, m_rw = ma["work"], ma["done"], ma["est_work"], ma["req_work"]
    m_upd, m_res, m_np, m_te, m_ss = (ma["upd"], ma["resume"], ma["next_point"],
                                      ma["true_end"], ma["size_since"])
    cdef double rate
    cdef simtime_t begin
    if use_mall:
        mall_set_options(&m, mal)
        mall_bind(&m, ma, n)
        run_resume = np.maximum(run_cols["resume"], run_cols["start"])
        run_done = run_cols["work_done"]
        run_at = run_cols["at_point"]
        for k in range(n_run):
            rate = speedup(&m, k, procs[k])
            begin = max(t, int(run_resume[k]))
            m_res[k] = run_resume[k]
            m_upd[k] = t
            m_done[k] = (float(run_done[k]) if run_done[k] == run_done[k]
                         else rate * max(0, t - int(run_resume[k])))
            m_ew[k] = m_done[k] + rate * max(0, int(run_cols["start"][k] + run_cols["est"][k]) - begin)
            m_rw[k] = m_done[k] + rate * max(0, int(run_cols["start"][k] + run_cols["request"][k]) - begin)
            m_work[k] = m_ew[k]
            m_te[k] = INT64_MAX
            m_ss[k] = t
            m_np[k] = t
            if not run_at[k]:
                m_te[k] = 0     # not at a reconfiguration point: at_point() says no
                                # (a queued expander still merges; its resume stays real)
    try:
        sched_alloc(&s, n_slot)
        for k in range(n_run):
            j = v_rows[k]
            s.run[k].end = v_run_end[j]
            s.run[k].id = j
            s.exp_end[j] = v_run_end[j]
        s.n_run = n_run
        for k in range(n_pend):
            s.wait[k] = n_run + k
        s.n_wait = n_pend
        s.n_sorted = 0
        with nogil:
            queue_prepare(&s, True)
        for k in range(n_pend):
            order_out[k] = s.wait[k] - n_run
        with nogil:
            schedule_pass(&s)
            if use_mall:
                for k in range(s.n_started):
                    mall_on_start(&s, &m, s.started[k])
                malleable_phase(&s, &m)
        started_all = [s.started[k] for k in range(s.n_started)]
        if use_mall and m.n_new_exp > 0:     # as the replay: the new expanders get a pass now
            with nogil:
                queue_prepare(&s, False)
                schedule_pass(&s)
                for k in range(s.n_started):
                    mall_on_start(&s, &m, s.started[k])
            started_all += [s.started[k] for k in range(s.n_started)]
        started_out = np.array([j - n_run for j in started_all if j < n], dtype=np.int64)
        new_exp = [(k, int(procs[n + k]), int(est[n + k])) for k in range(n)
                   if n_slot > n and m_parent[n + k] >= 0]
        calc_time = s.mf.calc_time
        total_usage = s.mf.total_usage
        users_at_calc = s.mf.users_at_calc
    finally:
        sched_release(&s)
        mall_release(&m)
    if policy.order == "multifactor" and calc_time != state.calc_time:
        state.usage = {u: float(usage[i]) for i, u in enumerate(users_list) if usage[i] != 0.0}
        state.accrued = {}
        state.total_usage = float(total_usage)
        state.users_at_calc = int(users_at_calc)
        state.calc_time = int(calc_time)
    pend_resv = resv_first[n_run:n].copy()
    pend_bf = backfilled[n_run:n].copy()
    changed = np.flatnonzero(procs[:n_run] != run_cols["procs"])
    resize = np.stack([changed, procs[:n_run][changed]], axis=1).astype(np.int64) \
        if changed.size else np.zeros((0, 2), np.int64)
    expand = np.array(new_exp, dtype=np.int64).reshape(-1, 3)
    return Decisions(started_out, pend_resv, order_out, pend_bf, est[n_run:n].copy(),
                     prio[n_run:n].copy() if policy.order == "multifactor"
                     else np.full(n_pend, np.nan), resize, state,
                     procs[n_run + started_out].astype(np.int64), expand)
