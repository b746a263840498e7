"""A deliberately naive reference scheduler: docs/scheduling-semantics.md, read aloud.

This module is the reference the differential tests hold ``malleo._core`` to.  It shares
no code with the core (it never imports it) and favours being obviously right over being
fast: plain lists and dicts, a heap of event times, the queue re-sorted from scratch at
every pass, the conservative availability profile rebuilt from scratch at every pass.
Comments of the form ``[semantics: <section>]`` name the rule of the semantics page the
code below them implements.

Times are integer seconds, sizes are processors.  Covered: orders ``fcfs``, ``sjf``,
``ljf``, ``saf``, ``wfp3``, ``unicep``, ``f1``, ``multifactor`` (docs/policies.md,
"Multifactor priority"); backfill ``none``, ``easy``, ``conservative``, ``slurm``;
estimates ``request``, ``actual``, ``predict`` (with its variants ``predict_runs``,
``predict_cold``, ``predict_at``) and ``learned``; corrections ``request``, ``incremental``;
backfill-candidate orders ``queue`` and ``sjf`` (SJBF).
"""
from __future__ import annotations

import bisect
import heapq
import math
from typing import Sequence

ORACLE_ORDERS = ("fcfs", "sjf", "ljf", "saf", "wfp3", "unicep", "f1", "multifactor")
ORACLE_BACKFILLS = ("none", "easy", "conservative", "slurm")
ORACLE_ESTIMATES = ("request", "actual", "predict", "learned")
ORACLE_CORRECTIONS = ("request", "incremental")

# [semantics: Planning estimate] Tsafrir et al.'s increments, in minutes
TSAFRIR_STEPS_MIN = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 3000, 6000)
ORACLE_BACKFILL_ORDERS = ("queue", "sjf")
ORACLE_PREDICT_ATS = ("pass", "submit")


def oracle_simulate(
    submit: Sequence[int],
    runtime: Sequence[int],
    estimate: Sequence[int],
    procs: Sequence[int],
    total_procs: int,
    order: str = "fcfs",
    backfill: str = "easy",
    est_mode: str = "request",
    user: Sequence[int] | None = None,
    bf_max_job_test: int = 500,
    bf_window: int = 86400,
    bf_resolution: int = 60,
    bf_rounding: str = "up",
    queue: Sequence[int] | None = None,
    partition: Sequence[int] | None = None,
    multifactor=None,
    predict_runs: int = 2,
    predict_cold: str = "fewer",
    correction: str = "request",
    backfill_order: str = "queue",
    predict_at: str = "pass",
) -> dict[str, list[int]]:
    """Replay one workload under one policy, naively.

    Args:
        submit: submit time of each job, seconds, non-decreasing (jobs are indexed in
            (submit, job number) order; the index breaks every remaining tie).
        runtime: seconds each job really runs (>= 0).
        estimate: the user's requested time, seconds (>= 0); ``request`` in the page.
        procs: processors each job holds, each in ``1..total_procs``.
        total_procs: processors of the machine (``P``).
        order, backfill, est_mode: the policy (see module docstring).
        user: user of each job (only ``predict`` reads it); default: all one user.
        bf_max_job_test, bf_window, bf_resolution: the ``slurm`` backfill knobs
            (jobs, seconds, seconds).
        bf_rounding: ``up`` or ``down`` (Slurm's own use of bf_resolution).
        queue, partition: SWF queue / partition numbers (multifactor factors); default 0.
        multifactor: an object with the attributes of ``malleo.policy.Multifactor``
            (weights, ``max_age``, ``half_life``, ``calc_period`` in seconds,
            ``size_favor``, ``queue_factors``, ``partition_factors``); default: Slurm's
            defaults as documented (weights 1000 for age and fair share, 7 days, 300 s).
        predict_runs, predict_cold: ``predict``: runs averaged, ``fewer`` or ``request``.
        correction: ``request`` or ``incremental`` (an overdue running job's expected end).
        backfill_order: ``queue`` or ``sjf``: the order in which the jobs behind the head
            (conservative: the jobs without a reservation) are tried.
        predict_at: ``predict``: ``pass`` (the user's runs completed so far) or ``submit``
            (the user's runs completed by the job's submit time, ends at that time included).

    Returns:
        ``start``, ``end`` (seconds), ``reservation`` (first planned start, seconds, or
        -1) and ``backfilled`` (0/1), one list entry per job.
    """
    if order not in ORACLE_ORDERS:
        raise ValueError(f"oracle: unsupported order {order!r}")
    if backfill not in ORACLE_BACKFILLS:
        raise ValueError(f"oracle: unsupported backfill {backfill!r}")
    if est_mode not in ORACLE_ESTIMATES:
        raise ValueError(f"oracle: unsupported estimate {est_mode!r}")
    if backfill_order not in ORACLE_BACKFILL_ORDERS:
        raise ValueError(f"oracle: unsupported backfill order {backfill_order!r}")
    if predict_at not in ORACLE_PREDICT_ATS:
        raise ValueError(f"oracle: unsupported predict_at {predict_at!r}")
    sim = _Oracle(
        [int(x) for x in submit], [int(x) for x in runtime], [int(x) for x in estimate],
        [int(x) for x in procs], int(total_procs), order, backfill, est_mode,
        [0] * len(submit) if user is None else [int(x) for x in user],
        int(bf_max_job_test), int(bf_window), int(bf_resolution), str(bf_rounding),
    )
    n = len(submit)
    if correction not in ORACLE_CORRECTIONS:
        raise ValueError(f"oracle: unsupported correction {correction!r}")
    sim.predict_runs, sim.predict_cold = int(predict_runs), str(predict_cold)
    sim.correction = correction
    sim.predict_at = predict_at
    if est_mode == "learned":
        sim.learner = _Learner()
    sim.backfill_order = backfill_order
    sim.mf = _MultifactorState(multifactor, [0] * n if queue is None else list(queue),
                               [0] * n if partition is None else list(partition))
    sim.run()
    return {"start": sim.start, "end": sim.end, "reservation": sim.reservation,
            "backfilled": sim.backfilled}


class _Oracle:
    """The state of one naive replay; ``run`` does it all."""

    def __init__(self, submit, runtime, request, procs, total_procs, order, backfill,
                 est_mode, user, bf_max_job_test, bf_window, bf_resolution, bf_rounding="up"):
        n = len(submit)
        for i in range(n):
            if i and submit[i] < submit[i - 1]:
                raise ValueError(f"oracle: submit times must be sorted (job {i})")
            if not 1 <= procs[i] <= total_procs:
                raise ValueError(f"oracle: job {i} needs {procs[i]} of {total_procs} procs")
            if runtime[i] < 0 or request[i] < 0:
                raise ValueError(f"oracle: job {i} has a negative time")
        self.n = n
        self.submit, self.runtime, self.request, self.procs = submit, runtime, request, procs
        self.user = user
        self.P = total_procs
        self.order, self.backfill, self.est_mode = order, backfill, est_mode
        self.bf_max_job_test, self.bf_window = bf_max_job_test, bf_window
        self.bf_resolution = bf_resolution
        self.bf_rounding = bf_rounding
        self.backfill_order = "queue"      # or "sjf"; set by oracle_simulate

        self.start = [-1] * n
        self.end = [-1] * n
        self.reservation = [-1] * n
        self.backfilled = [0] * n
        self.est_at_start = [0] * n        # the estimate a job had when it started
        self.waiting: list[int] = []       # submitted, not started
        self.running: list[int] = []       # started, not completed
        self.free = total_procs            # processors not held by a running job
        # user -> (end time, runtime) of each completed job, in completion order
        self.history: dict[int, list[tuple[int, int]]] = {}
        self.held: dict[int, int] = {}     # conservative: job -> its current reservation
        self.predict_runs, self.predict_cold, self.correction = 2, "fewer", "request"
        self.predict_at = "pass"
        self.learner = None                # learned: the online model (_Learner)
        self.learned: dict[int, int] = {}  # learned: job -> its prediction at submission

    # [semantics: Event order]
    def run(self) -> None:
        events = sorted(set(self.submit))
        heapq.heapify(events)
        next_arrival = 0
        while events:
            t = heapq.heappop(events)
            while events and events[0] == t:
                heapq.heappop(events)
            # 1. completions at t, in increasing job index
            self.complete_at(t)
            # 2. arrivals with submit == t join the queue
            while next_arrival < self.n and self.submit[next_arrival] == t:
                if self.learner is not None:
                    j = next_arrival
                    self.learned[j] = self.learner.predict(
                        j, self.user[j], self.procs[j], self.request[j], t,
                        [(self.procs[k], self.start[k]) for k in sorted(self.running)
                         if self.user[k] == self.user[j]])
                self.waiting.append(next_arrival)
                self.mf.seen.add(self.user[next_arrival])
                next_arrival += 1
            # 3. one scheduling pass; repeat 1 and 3 while a pass starts a 0-runtime job
            while True:
                started = self.schedule_pass(t)
                for j in started:
                    if self.end[j] > t:
                        heapq.heappush(events, self.end[j])
                if not any(self.runtime[j] == 0 for j in started):
                    break
                self.complete_at(t)

    def complete_at(self, t: int) -> None:
        for j in sorted(self.running):
            if self.end[j] == t:
                self.running.remove(j)
                self.free += self.procs[j]
                # predict mode: the runtime joins the user's history
                self.history.setdefault(self.user[j], []).append((t, self.runtime[j]))
                if self.learner is not None:
                    self.learner.observe(j, self.user[j], self.runtime[j], t)
                # multifactor: processor-seconds since the last calculation accrue
                self.mf.accrue(self.user[j], self.procs[j], self.start[j], t)

    def start_job(self, j: int, t: int) -> None:
        self.waiting.remove(j)
        self.running.append(j)
        self.free -= self.procs[j]
        self.held.pop(j, None)
        self.start[j] = t
        self.end[j] = t + self.runtime[j]   # [semantics: Jobs and the machine]
        self.est_at_start[j] = self.est(j)

    def free_now(self) -> int:
        return self.free

    # [semantics: Planning estimate]
    def est(self, j: int) -> int:
        """The planning estimate of job j now (predict: from the user's history now, or,
        predict_at ``submit``, from the runs that had ended by the job's submit time)."""
        if self.est_mode == "request":
            return self.request[j]
        if self.est_mode == "actual":
            return self.runtime[j]
        if self.est_mode == "learned":
            return self.learned[j]
        past = [runtime for end, runtime in self.history.get(self.user[j], [])
                if self.predict_at == "pass" or end <= self.submit[j]]
        window = past[-self.predict_runs:]
        if not window or (len(window) < self.predict_runs and self.predict_cold == "request"):
            guess = self.request[j]
        else:
            guess = sum(window) // len(window)
        return min(guess, self.request[j])

    def expected_end(self, j: int, t: int) -> int:
        """s + est (est as at the start); if <= t while running: (incremental) s + est
        plus 1 min, then s + est plus 5 min, ... while below the request; then
        s + request; if that too is <= t, t + 1.  [semantics: Planning estimate]"""
        s = self.start[j]
        if s + self.est_at_start[j] > t:
            return s + self.est_at_start[j]
        if self.correction == "incremental":
            for minutes in TSAFRIR_STEPS_MIN:     # each in place of the one before
                grown = self.est_at_start[j] + 60 * minutes
                if grown >= self.request[j]:
                    break
                if s + grown > t:
                    return s + grown
        if s + self.request[j] > t:
            return s + self.request[j]
        return t + 1

    # [semantics: Queue order]
    def queue_key(self, j: int, t: int) -> tuple:
        est = self.est(j)
        w = t - self.submit[j]
        e = max(est, 1)
        n = self.procs[j]
        if self.order == "multifactor":
            return (-self.mf.priority[j], self.submit[j], j)
        if self.order == "fcfs":
            key = self.submit[j]
        elif self.order == "sjf":
            key = est
        elif self.order == "ljf":
            key = -est
        elif self.order == "saf":
            key = n * est
        elif self.order == "wfp3":
            r = w / e
            key = -(r * r * r) * n
        elif self.order == "unicep":
            key = -w / (math.log2(max(n, 2)) * e)
        else:  # f1
            key = math.log10(e) * n + 870 * math.log10(max(self.submit[j], 1))
        # smaller keys first; ties by submit, then index
        return (key, self.submit[j], j)

    # [semantics: Backfill]
    def schedule_pass(self, t: int) -> list[int]:
        if self.order == "multifactor":
            self.mf.update(self, t)
        queue = sorted(self.waiting, key=lambda j: self.queue_key(j, t))
        started: list[int] = []
        if self.backfill == "conservative":
            # conservative has no first walk: the re-plan places every waiting job
            self.conservative_replan(t, queue, started)
            self.mark_backfilled(queue)
            return started
        # none, easy and slurm first start every job that fits in the free processors
        # now, in queue order, until the first that does not fit (the head)
        head = None
        for j in queue:
            if self.procs[j] <= self.free_now():
                self.start_job(j, t)
                started.append(j)
            else:
                head = j
                break
        behind = queue[queue.index(head):] if head is not None else []
        if head is None or self.backfill == "none":
            pass                  # none: nothing behind the head starts
        elif self.backfill == "easy":
            self.easy_backfill(t, behind, started)
        else:
            self.slurm_backfill(t, behind, started)
        self.mark_backfilled(queue)
        return started

    # [semantics: Backfill, backfill-candidate order]
    def candidates(self, jobs: list[int]) -> list[int]:
        """``jobs`` (in queue order) in the order backfill tries them: as they are, or
        (``sjf``) by planning estimate now, ties in queue order (a stable sort)."""
        if self.backfill_order == "sjf":
            return sorted(jobs, key=self.est)
        return list(jobs)

    def mark_backfilled(self, queue: list[int]) -> None:
        """[semantics: What the replay records] backfilled: a job ahead of it in this
        pass's queue was left waiting."""
        left_waiting = set(self.waiting)
        first_left = next((p for p, k in enumerate(queue) if k in left_waiting), len(queue))
        for position, j in enumerate(queue):
            if position > first_left and j not in left_waiting:
                self.backfilled[j] = 1

    # [semantics: Backfill, easy]
    def easy_backfill(self, t: int, behind: list[int], started: list[int]) -> None:
        """Reserve the head (``behind[0]``) at the shadow time; start later jobs that fit
        now and end by it or fit in the extra processors."""
        head = behind[0]
        # shadow time: running jobs (incl. those started in this pass) by expected end,
        # ties by index, add their procs to the free count until it reaches the head's size
        by_end = sorted((self.expected_end(j, t), j) for j in self.running)
        free = self.free_now()
        shadow = None
        for end, j in by_end:
            free += self.procs[j]
            if free >= self.procs[head]:
                shadow = end
                break
        assert shadow is not None, "the head fits an empty machine"
        # extra = free processors at the shadow time minus the head's size
        free_at_shadow = self.free_now() + sum(
            self.procs[j] for end, j in by_end if end <= shadow)
        extra = free_at_shadow - self.procs[head]
        if self.reservation[head] == -1:
            self.reservation[head] = shadow
        for j in self.candidates(behind[1:]):
            if self.procs[j] > self.free_now():
                continue
            ends_by_shadow = t + self.est(j) <= shadow
            if ends_by_shadow or self.procs[j] <= extra:
                if not ends_by_shadow:
                    extra -= self.procs[j]
                self.start_job(j, t)
                started.append(j)

    def running_profile(self, t: int, resolution: int = 1) -> "_Profile":
        """Free processors from t on, running jobs held until their expected end
        (rounded up to a multiple of ``resolution``)."""
        profile = _Profile(t, self.free_now())
        for j in self.running:
            end = -(-self.expected_end(j, t) // resolution) * resolution
            profile.release(end, self.procs[j])
        return profile

    # [semantics: Backfill, conservative]
    def conservative_replan(self, t: int, behind: list[int], started: list[int]) -> None:
        """Re-plan every waiting job (the whole queue) from the profile of
        running jobs; those planned at t start now."""
        profile = self.running_profile(t)
        position = {j: i for i, j in enumerate(behind)}
        # first the jobs already holding a reservation, by that reservation (ties by
        # queue order), then the others in queue order
        holders = sorted((j for j in behind if j in self.held),
                         key=lambda j: (self.held[j], position[j]))
        others = self.candidates([j for j in behind if j not in self.held])
        for j in holders + others:
            hold = max(self.est(j), 1)    # [semantics: Backfill] planned jobs hold >= 1 s
            s = profile.earliest_fit(t, self.procs[j], hold)
            profile.occupy(s, s + hold, self.procs[j])
            self.held[j] = s
            if self.reservation[j] == -1:
                self.reservation[j] = s
            if s == t:       # jobs planned at t start now
                self.start_job(j, t)
                started.append(j)

    # [semantics: Backfill, slurm]
    def slurm_backfill(self, t: int, behind: list[int], started: list[int]) -> None:
        """Walk the queue from the head: start what fits now for its whole estimate,
        reserve up to ``bf_max_job_test`` others on the ``bf_resolution`` grid within
        ``bf_window``; reservations last for this pass only."""
        res = self.bf_resolution
        down = self.bf_rounding == "down"
        profile = self.running_profile(t, 1 if down else res)
        reserved = 0
        # the head first, then the jobs behind it in the candidate order
        for j in behind[:1] + self.candidates(behind[1:]):
            hold = max(self.est(j), 1)            # [semantics: Backfill] planned jobs hold >= 1 s
            n = self.procs[j]
            if profile.fits(t, n, hold):          # fits now for its whole estimate
                profile.occupy(t, t + hold, n)
                self.start_job(j, t)
                started.append(j)
            elif reserved < self.bf_max_job_test:
                s = profile.earliest_fit(t, n, hold, step=1 if down else res)
                if s > t + self.bf_window:
                    continue                      # beyond the window: no reservation
                if down:
                    # [semantics: Slurm's own scheduler, bf_resolution] held from the grid
                    # instant before s: early, the processors not released at s
                    grid = s - s % res
                    early = min(n, n - (profile.free_at(s) - profile.free_at(s - 1))) \
                        if s > t else n
                    if early > 0:
                        profile.occupy(max(grid, t), s, early)
                    profile.occupy(s, max(grid + max(hold, res), s + 1), n)
                else:
                    profile.occupy(s, s + hold, n)
                reserved += 1
                if self.reservation[j] == -1:
                    self.reservation[j] = s


class _MultifactorState:
    """Slurm-style multifactor priority, read off docs/policies.md: per-user decayed usage
    recalculated when floor(t / calc_period) changes, a job's priority frozen between
    recalculations (a job arriving in between gets one at its first pass)."""

    def __init__(self, mf, queue, partition):
        get = (lambda name, default: getattr(mf, name, default)) if mf is not None \
            else (lambda name, default: default)
        self.weight_age = float(get("weight_age", 1000.0))
        self.weight_size = float(get("weight_size", 0.0))
        self.weight_fairshare = float(get("weight_fairshare", 1000.0))
        self.max_age = int(get("max_age", 7 * 86400))
        self.half_life = int(get("half_life", 7 * 86400))
        self.calc_period = int(get("calc_period", 300))
        self.favor_small = get("size_favor", "small") == "small"
        qf = dict(get("queue_factors", {}))
        pf = dict(get("partition_factors", {}))
        wq = float(get("weight_queue", 0.0))
        wp = float(get("weight_partition", 0.0))
        # queue and partition term of each job: wq * queue factor + wp * partition factor
        self.qp = [wq * float(qf.get(q, 0.0)) + wp * float(pf.get(p, 0.0))
                   for q, p in zip(queue, partition)]
        self.calc_time = -1            # time of the last calculation (-1: none yet)
        self.usage: dict[int, float] = {}    # user -> decayed processor-seconds
        self.accrued: dict[int, int] = {}    # user -> processor-seconds since the calculation
        self.total = 0.0               # all users' usage at the calculation
        self.shares = 0                # users seen at the calculation (equal shares)
        self.seen: set[int] = set()    # users with an arrived job
        self.priority: dict[int, float] = {}   # job -> its priority (larger first)

    def accrue(self, user: int, procs: int, start: int, t: int) -> None:
        since = max(start, self.calc_time)
        self.accrued[user] = self.accrued.get(user, 0) + procs * (t - since)

    def update(self, sim: "_Oracle", t: int) -> None:
        """At a pass at t: recalculate usage and every waiting job's priority when the
        calc period changed, else give the new arrivals theirs."""
        period = self.calc_period
        if self.calc_time < 0 or t // period != self.calc_time // period:
            for j in sim.running:      # running jobs' usage so far accrues
                self.accrue(sim.user[j], sim.procs[j], sim.start[j], t)
            decay = 1.0
            if self.calc_time >= 0:
                decay = 2.0 ** (-float(t - self.calc_time) / float(self.half_life))
            total = 0.0
            for u in sorted(set(self.usage) | set(self.accrued) | set(sim.user)):
                self.usage[u] = self.usage.get(u, 0.0) * decay + float(self.accrued.get(u, 0))
                total = total + self.usage[u]
            self.accrued = {}
            self.total = total
            self.shares = len(self.seen)
            self.calc_time = t
            for j in sim.waiting:
                self.priority[j] = self.compute(sim, j, t)
        else:
            for j in sim.waiting:
                if j not in self.priority:
                    self.priority[j] = self.compute(sim, j, t)

    def compute(self, sim: "_Oracle", j: int, t: int) -> float:
        age = min(max(t - sim.submit[j], 0), self.max_age)
        age_f = age / self.max_age
        n, P = sim.procs[j], sim.P
        size_f = (P - n + 1) / P if self.favor_small else n / P
        fairshare = 1.0
        if self.total > 0.0:
            fairshare = 2.0 ** -((self.usage.get(sim.user[j], 0.0) / self.total) * self.shares)
        return (self.weight_age * age_f + self.weight_size * size_f
                + self.weight_fairshare * fairshare + self.qp[j])


class _Profile:
    """Free processors over time from ``now``: a sorted list of [time, free] steps."""

    def __init__(self, now: int, free: int):
        self.steps = [[now, free]]

    def split(self, time: int) -> int:
        """Make ``time`` a step boundary; return its index."""
        i = bisect.bisect_left(self.steps, [time, -float("inf")])
        if i < len(self.steps) and self.steps[i][0] == time:
            return i
        self.steps.insert(i, [time, self.steps[i - 1][1]])
        return i

    def release(self, time: int, n: int) -> None:
        """``n`` processors become free at ``time`` (for good)."""
        for step in self.steps[self.split(time):]:
            step[1] += n

    def occupy(self, begin: int, end: int, n: int) -> None:
        """Hold ``n`` processors during [begin, end); nothing when end == begin."""
        if end <= begin:
            return
        i = self.split(begin)
        k = self.split(end)
        for step in self.steps[i:k]:
            step[1] -= n

    def blocker(self, begin: int, n: int, duration: int) -> int | None:
        """Index of the first step overlapping [begin, begin + duration) (just ``begin``
        when duration is 0) with fewer than ``n`` free processors, or None."""
        steps = self.steps
        i = bisect.bisect_right(steps, [begin, float("inf")]) - 1
        if steps[i][1] < n:
            return i
        for k in range(i + 1, len(steps)):
            if steps[k][0] >= begin + duration:
                break
            if steps[k][1] < n:
                return k
        return None

    def free_at(self, time: int) -> int:
        """Free processors at ``time`` (>= the origin)."""
        return self.steps[bisect.bisect_right(self.steps, [time, float("inf")]) - 1][1]

    def fits(self, begin: int, n: int, duration: int) -> bool:
        """``n`` processors free during [begin, begin + duration) (at ``begin`` if 0)."""
        return self.blocker(begin, n, duration) is None

    def earliest_fit(self, now: int, n: int, duration: int, step: int = 1) -> int:
        """The earliest start >= now (a multiple of ``step``) at which ``n`` processors
        are free for ``duration`` seconds."""
        begin = -(-now // step) * step
        while (blocked := self.blocker(begin, n, duration)) is not None:
            # no start in [begin, blocked] can work (each would span the blocked step, or
            # start inside it); the next candidate is the step boundary after it
            begin = -(-self.steps[blocked + 1][0] // step) * step
        return begin


class _Learner:
    """Learned predictions read off docs/policies.md ("Learned predictions"): a linear
    model over 17 features of a job at its submission, trained at each completion by one
    NAG step (Ross et al. 2013) on the asymmetric squared loss.  Plain lists and dicts."""

    ETA = 100.0
    UNDER = 10.0

    def __init__(self):
        self.w = [0.0] * 17
        self.scale = [0.0] * 17
        self.grad2 = [0.0] * 17
        self.norm = 0.0
        self.updates = 0.0
        self.x: dict[int, list[float]] = {}        # job -> its features at submission
        self.done: dict[int, list[int]] = {}       # user -> completed runtimes, oldest first
        self.last_end: dict[int, int] = {}         # user -> time of the last completion

    def predict(self, j, user, procs, request, t, running_mine):
        past = self.done.get(user, [])
        last3 = [min(past[-1 - k], request) if len(past) > k else request for k in range(3)]
        day, week = (t % 86400) / 86400.0, (t % 604800) / 604800.0
        x = [1.0, float(last3[0]), float(last3[1]), float(last3[2]), float(request),
             (float(last3[0]) + float(last3[1])) / 2.0,
             (float(last3[0]) + float(last3[1]) + float(last3[2])) / 3.0,
             float(sum(past)) / len(past) if past else 0.0,
             float(t - self.last_end[user]) if user in self.last_end else 0.0,
             float(procs), float(sum(p for p, _ in running_mine)),
             float(sum(t - s for _, s in running_mine)), float(len(running_mine)),
             math.cos(2.0 * math.pi * day), math.sin(2.0 * math.pi * day),
             math.cos(2.0 * math.pi * week), math.sin(2.0 * math.pi * week)]
        self.x[j] = x
        f = 0.0
        for wk, xk in zip(self.w, x):
            f += wk * xk
        guess = max(1, int(abs(f)))
        return min(guess, request)

    def observe(self, j, user, runtime, t):
        self.done.setdefault(user, []).append(runtime)
        self.last_end[user] = t
        x = self.x.pop(j)
        for k in range(17):
            a = abs(x[k])
            if a > self.scale[k]:
                if self.scale[k] > 0.0:
                    self.w[k] = self.w[k] * self.scale[k] * self.scale[k] / (a * a)
                self.scale[k] = a
        f = 0.0
        for k in range(17):
            if self.scale[k] > 0.0:
                self.norm += (x[k] / self.scale[k]) * (x[k] / self.scale[k])
            f += self.w[k] * x[k]
        self.updates += 1.0
        y = float(runtime)
        slope = 2.0 * self.UNDER * (f - y) if f < y else 2.0 * (f - y)
        if self.norm <= 0.0:
            return
        step = self.ETA * math.sqrt(self.updates / self.norm)
        for k in range(17):
            g = slope * x[k]
            if g == 0.0:
                continue
            self.grad2[k] += g * g
            self.w[k] -= step * g / (self.scale[k] * math.sqrt(self.grad2[k]))
