"""The live form of the scheduling core: ``plan``, called by the Slurm agent.

``plan`` is: columns (job_columns.plan_columns, checked) -> job table (jobs.pxi, the same
the event loops fill) -> the pass function (passes.run_pass, the one both event loops
call) -> :class:`Decisions`.  Calling it at every event time of a replay, with
the completions recorded in a :class:`PlanState`, gives exactly the schedule of
``simulate`` (tests/test_core_plan.py).  Times are integer seconds, sizes processors.
"""
import numpy as np

from libc.stdint cimport INT64_MAX

from _types cimport simtime_t, procs_t, intp_t, ESTIMATE_PREDICT
from passes cimport run_pass
from malleable cimport speedup

from malleo._core.job_columns import plan_columns, user_codes
from malleo._core.priority import queue_partition_term
from malleo.limits import MAX_PREDICT_RUNS

include "jobs.pxi"


class PlanState:
    """What ``plan`` remembers between calls: per-user runtime history (predict mode) and
    multifactor usage.  Keys are user ids (ints).

    Attributes:
        history: user -> (last runtime, the one before, completed runs), seconds.
        recent: user -> the user's last completed runtimes, newest first, at most
            MAX_PREDICT_RUNS (seconds); a user missing here falls back to ``history``'s
            two (a state restored from that form).
        usage: user -> decayed usage (processor-seconds) at the last priority calculation.
        accrued: user -> processor-seconds of jobs completed since that calculation.
        total_usage: processor-seconds, all users' decayed usage at that calculation.
        users_at_calc: users seen at that calculation (equal shares).
        seen: users that ever had a pending or running job (fair share: 1 / len(seen)).
        calc_time: seconds, time of the last priority calculation, -1 before the first.
        timeline: user -> ((end, runtime), ...) in completion order, seconds: what
            ``predict_at = "submit"`` predicts from (the runs ended by a job's submit time).
            Only the last MAX_PREDICT_RUNS runs ended by ``horizon`` are kept, and every
            run after it.
        horizon: seconds, the earliest submit time a later call is expected to predict
            for: the smallest of ``plan``'s ``now`` and its pending submits (-1 before
            the first call).  A job submitted before it, first seen later, is predicted
            from the runs kept (MAX_PREDICT_RUNS ended by the horizon: exact for every
            ``predict_runs`` when no run ended between its submit and the horizon).

    The caller reports each completed job with :meth:`record_completion` (in increasing
    job order at one time) before the next ``plan`` call; ``plan`` never mutates the
    state it is given and returns an updated copy in ``Decisions.state``.
    """

    __slots__ = ("history", "recent", "usage", "accrued", "total_usage", "users_at_calc", "seen",
                 "calc_time", "timeline", "horizon")

    def __init__(self):
        self.history = {}
        self.recent = {}
        self.usage = {}
        self.accrued = {}
        self.total_usage = 0.0
        self.users_at_calc = 0
        self.seen = set()
        self.calc_time = -1
        self.timeline = {}
        self.horizon = -1

    def copy(self):
        """An independent copy."""
        other = PlanState()
        other.history = dict(self.history)
        other.recent = dict(self.recent)
        other.usage = dict(self.usage)
        other.accrued = dict(self.accrued)
        other.total_usage = self.total_usage
        other.users_at_calc = self.users_at_calc
        other.seen = set(self.seen)
        other.calc_time = self.calc_time
        other.timeline = dict(self.timeline)
        other.horizon = self.horizon
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
        self.recent[user] = ((end - start,) + self.runs(user))[:MAX_PREDICT_RUNS]
        self.timeline[user] = _pruned(self.timeline.get(user, ()) + ((end, end - start),),
                                      self.horizon)
        since = max(start, self.calc_time)
        self.accrued[user] = self.accrued.get(user, 0) + int(procs) * (end - since)
        self.seen.add(user)

    def runs(self, user):
        """The user's last completed runtimes, newest first (seconds)."""
        user = int(user)
        if user in self.recent:
            return tuple(self.recent[user])
        last, before, count = self.history.get(user, (0, 0, 0))
        return (last, before)[:min(count, 2)]

    def runs_by(self, user, submit):
        """The user's runtimes of the runs ended at or before ``submit``, newest first
        (seconds; ``predict_at = "submit"``).  A user without a timeline (a state restored
        from the older form) gets :meth:`runs`."""
        user = int(user)
        if user not in self.timeline:
            return self.runs(user)
        return tuple(runtime for end, runtime in reversed(self.timeline[user])
                     if end <= submit)

    def predict(self, user, request, submit, runs=2, cold="fewer"):
        """The ``predict`` estimate of a job of ``user`` asking ``request`` seconds,
        submitted at ``submit`` (``predict_at = "submit"``): the mean (floor) of the user's
        last ``runs`` runtimes ended by ``submit``; with fewer, their mean (``cold``
        "fewer"; none: the request) or the request (``cold`` "request"); capped at the
        request (docs/scheduling-semantics.md)."""
        user = int(user)
        request = int(request)
        window = self.runs_by(user, submit)
        count = (len(window) if user in self.timeline
                 else int(self.history.get(user, (0, 0, 0))[2]))
        window = window[:runs]
        if not window or (count < runs and cold == "request"):
            return request
        return min(sum(window) // len(window), request)

    def set_horizon(self, horizon):
        """Runs before ``horizon`` (seconds) are needed no more than MAX_PREDICT_RUNS per
        user: drop the older ones.  Mutates this state."""
        self.horizon = int(horizon)
        for u, runs in self.timeline.items():
            if len(runs) > MAX_PREDICT_RUNS:
                self.timeline[u] = _pruned(runs, self.horizon)

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


def _pruned(runs, horizon):
    """``runs`` ((end, runtime), ... in completion order) without those ended by
    ``horizon`` but the last MAX_PREDICT_RUNS of them."""
    if len(runs) <= MAX_PREDICT_RUNS:
        return tuple(runs)
    old = [k for k, (end, _) in enumerate(runs) if end <= horizon]
    if len(old) <= MAX_PREDICT_RUNS:
        return tuple(runs)
    drop = set(old[:-MAX_PREDICT_RUNS])
    return tuple(r for k, r in enumerate(runs) if k not in drop)


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
        policy: a malleo.policy.Policy (or its compiled ``policy.core``).
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
        ValueError: a missing or malformed column, ``now`` or a time outside 0..MAX_TIME,
            a machine size outside 1..MAX_PROCS (malleo.limits), a job size outside
            1..total_procs, a submit or start after ``now``, or more processors running
            than the machine has.

    Examples:
        >>> from malleo.policy import Policy
        >>> d = plan(0, 4, {"procs": [], "start": [], "est": [], "request": []},
        ...          {"submit": [0, 0], "procs": [4, 2], "request": [60, 30]}, Policy())
        >>> d.start.tolist(), d.reservation.tolist()
        ([0], [-1, 60])
    """
    core = policy.core
    if core.is_learned:
        raise ValueError("estimate 'learned' is for replays (simulate): plan does not keep "
                         "the learned model between calls; use 'request' or 'predict'")
    t, total, busy, run_cols, n_run, pend_cols, n_pend = plan_columns(
        now, cluster, running, pending, core)
    state = PlanState() if state is None else state.copy()
    if n_pend:
        state.set_horizon(min(int(t), int(pend_cols["submit"].min())))
    else:
        state.set_horizon(int(t))
    n = n_run + n_pend
    if n == 0:
        return Decisions(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                         np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0),
                         np.zeros((0, 2), np.int64), state, np.zeros(0, np.int64))
    table, users_list = _plan_table(t, run_cols, n_run, pend_cols, n_pend, core, state)
    cdef JobTable jt = table
    jt.wire(core, total, total - busy)
    _plan_state(jt, t, run_cols, n_run, n_pend, state)
    order_out = np.empty(max(n_pend, 1), dtype=np.intp)
    cdef intp_t[::1] v_order = order_out
    with nogil:
        run_pass(&jt.s, jt.mp, True, &v_order[0])
    return _decisions(jt, users_list, run_cols, n_run, n_pend, order_out[:n_pend] - n_run,
                      state, core)


def _plan_table(t, run_cols, n_run, pend_cols, n_pend, core, state):
    """The job table of one plan call: running rows, then pending rows, then (slurm expand
    mode) one expander slot per row; per-user columns from ``state``."""
    n = n_run + n_pend
    state.seen.update(int(u) for u in np.unique(np.concatenate([run_cols["user"],
                                                                pend_cols["user"]])))
    known = set(state.seen) | set(state.usage) | set(state.history) | set(state.accrued)
    users = np.array(sorted(known), dtype=np.int64)
    users_list = users.tolist()
    user_code = np.searchsorted(users, np.concatenate([run_cols["user"], pend_cols["user"]]))
    has_exp = pend_cols["parent"] >= 0
    kind = np.concatenate([run_cols["kind"], pend_cols["kind"]])
    use_mall = ((core.mall_policy != 0 and bool((kind == 2).any()))
                or (core.is_moldable_start and bool((kind == 1).any()))
                or (core.start_size != 0 and bool((kind != 0).any()))
                or bool(has_exp.any()))
    # slurm mode: slots n..2n-1 hold the expanders requested in this call (slot n + k:
    # job k's, k indexing running rows then pending rows: a job started in this call may
    # get one)
    n_slot = 2 * n if core.is_slurm_expand else n
    table = JobTable(n, n_slot, len(users_list), use_mall)
    prio = np.concatenate([np.full(n_run, np.nan), pend_cols["priority"]])
    if core.is_predict_at_submit and core.estimate == ESTIMATE_PREDICT:
        cold = "request" if core.is_cold_request else "fewer"
        pend_est = np.array([state.predict(u, r, sub, int(core.predict_runs), cold)
                             for u, r, sub in zip(pend_cols["user"].tolist(),
                                                  pend_cols["request"].tolist(),
                                                  pend_cols["submit"].tolist())], np.int64)
    else:
        pend_est = pend_cols["runtime"] if core.is_actual else pend_cols["request"]
    est = np.concatenate([run_cols["est"], pend_est])
    table.set({
        "submit": np.concatenate([run_cols["start"], pend_cols["submit"]]),
        "request": np.concatenate([run_cols["request"], pend_cols["request"]]),
        "procs": np.concatenate([run_cols["procs"], pend_cols["procs"]]),
        "user": user_code,
        "qp": np.concatenate([np.zeros(n_run), queue_partition_term(
            pend_cols["queue"], pend_cols["partition"], core)]),
        "est": est, "prio": prio, "key": np.where(np.isnan(prio), 0.0, -prio),
        "start": run_cols["start"],
        "resv_cur": np.concatenate([np.full(n_run, -1, dtype=np.int64),
                                    pend_cols["reservation"]]),
        "usage": [float(state.usage.get(u, 0.0)) for u in users_list],
        "accrued": [int(state.accrued.get(u, 0)) for u in users_list],
        **_predict_columns(table, state, users_list, core)})
    if use_mall:
        table.set({name: np.concatenate([run_cols[name], pend_cols[name]])
                   for name in ("kind", "min_procs", "max_procs", "speedup_a", "speedup_b")})
        table.set({"runtime": est,
                   "p0": np.concatenate([run_cols["p0"], pend_cols["procs"]]),
                   "last_reconf": run_cols["last_reconf"]})
        parent, expander = table.mall["parent"], table.mall["expander"]
        for k in np.flatnonzero(has_exp).tolist():
            parent[n_run + k] = pend_cols["parent"][k]
            expander[pend_cols["parent"][k]] = n_run + k
    return table, users_list


def _predict_columns(table, state, users_list, core):
    """Predict mode: each user's last K = predict_runs runtimes from ``state`` into the
    table's ring (run number c in slot c % K, as the replay leaves it) and their sum."""
    k = max(int(core.predict_runs), 1)
    ring = np.zeros((max(len(users_list), 1), k), np.int64)
    sums, counts = [], []
    for code, u in enumerate(users_list):
        count = int(state.history.get(u, (0, 0, 0))[2])
        runs = state.runs(u)[:min(count, k)]
        for i, runtime in enumerate(runs):       # newest first: run number count - 1 - i
            ring[code, (count - 1 - i) % k] = runtime
        sums.append(sum(runs))
        counts.append(min(count, 2**31 - 1))
    table.set_ring(ring)
    return {"hist_sum": sums, "hist_n": counts}


cdef int _plan_state(JobTable jt, simtime_t t, dict run_cols, intp_t n_run, intp_t n_pend,
                     state) except -1:
    """The state a plan call starts from: the running set in (expected end, row) order,
    the queue of pending rows, the multifactor calculation of ``state`` and (malleable
    kernel wired) each running row's work state."""
    cdef sched_t* s = &jt.s
    cdef mall_t* m = jt.mp
    cdef intp_t k, j
    cdef double rate
    cdef simtime_t begin
    s.now = t
    s.n_seen = len(state.seen)
    s.mf.calc_time = int(state.calc_time)
    s.mf.total_usage = float(state.total_usage)
    s.mf.users_at_calc = int(state.users_at_calc)
    run_end = run_cols["start"] + run_cols["est"]
    cdef const simtime_t[::1] v_end = run_end
    cdef const intp_t[::1] v_rows = np.ascontiguousarray(
        np.lexsort((np.arange(n_run), run_end)), dtype=np.intp)
    for k in range(n_run):
        j = v_rows[k]
        s.run[k].end = v_end[j]
        s.run[k].id = j
        s.exp_end[j] = v_end[j]
    s.n_run = n_run
    for k in range(n_pend):
        s.wait[k] = n_run + k
    s.n_wait = n_pend
    s.n_sorted = 0
    if m == NULL:
        return 0
    resume = np.maximum(run_cols["resume"], run_cols["start"])
    run_done = run_cols["work_done"]
    for k in range(n_run):
        rate = speedup(m, k, s.procs[k])
        begin = max(t, int(resume[k]))
        m.resume[k] = resume[k]
        m.upd[k] = t
        m.done[k] = (float(run_done[k]) if run_done[k] == run_done[k]
                     else rate * max(0, t - int(resume[k])))
        m.est_work[k] = m.done[k] + rate * max(
            0, int(run_cols["start"][k] + run_cols["est"][k]) - begin)
        m.req_work[k] = m.done[k] + rate * max(
            0, int(run_cols["start"][k] + run_cols["request"][k]) - begin)
        m.work[k] = m.est_work[k]
        m.true_end[k] = INT64_MAX
        m.size_since[k] = t
        m.next_point[k] = t
        if not run_cols["at_point"][k]:
            m.true_end[k] = 0   # not at a reconfiguration point: at_point() says no
                                # (a queued expander still merges; its resume stays real)
    return 0


def _decisions(JobTable jt, users_list, run_cols, intp_t n_run, intp_t n_pend, order, state, core):
    """The Decisions of a finished pass, and the updated PlanState."""
    cdef sched_t* s = &jt.s
    cdef intp_t n = jt.n
    cdef intp_t k
    started = np.array([s.started[k] for k in range(s.n_started)], dtype=np.int64)
    started = started[started < n] - n_run
    c = jt.cols
    procs, est = c["procs"], c["est"]
    parent = jt.mall["parent"] if jt.mall is not None else None
    new_exp = [(k, int(procs[n + k]), int(est[n + k])) for k in range(n)
               if jt.n_slot > n and parent is not None and parent[n + k] >= 0]
    if core.is_multifactor and s.mf.calc_time != state.calc_time:
        usage = jt.users["usage"]
        state.usage = {u: float(usage[i]) for i, u in enumerate(users_list)
                       if usage[i] != 0.0}
        state.accrued = {}
        state.total_usage = float(s.mf.total_usage)
        state.users_at_calc = int(s.mf.users_at_calc)
        state.calc_time = int(s.mf.calc_time)
    changed = np.flatnonzero(procs[:n_run] != run_cols["procs"])
    resize = np.stack([changed, procs[:n_run][changed]], axis=1).astype(np.int64) \
        if changed.size else np.zeros((0, 2), np.int64)
    return Decisions(started, c["resv_first"][n_run:n].copy(),
                     np.asarray(order, dtype=np.int64), c["backfilled"][n_run:n].copy(),
                     est[n_run:n].copy(),
                     c["prio"][n_run:n].copy() if core.is_multifactor
                     else np.full(n_pend, np.nan), resize, state,
                     procs[n_run + started].astype(np.int64),
                     np.array(new_exp, dtype=np.int64).reshape(-1, 3))
