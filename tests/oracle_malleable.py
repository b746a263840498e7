"""A deliberately naive reference model of malleable jobs under dmr, head-unblock and
efficiency (docs/malleability.md, read aloud), for tiny workloads.

Shares no code with ``malleo._core`` (never imports it).  Covered: FCFS order, backfill
``none`` (strict queue order), ``easy`` (the strict walk, then the jobs behind the blocked
head that fit now and end by its shadow time or use only its extra processors,
docs/scheduling-semantics.md) and ``conservative`` (every waiting job re-planned at its
earliest fit each pass, holders of a reservation first).  Under none and easy the queue
head's reservation is protected: its shadow time, the earliest time the running jobs'
expected ends free its size; under conservative every waiting job's planned start.  Linear and Amdahl speedups,
reconfiguration cost, minimum interval, points at any pass, estimates fixed (expected
end = start + request, extended to now + 1 when overdue) or scaled with the speedup (the
requested time is work: a job queued or started at another size, or resized, gets the time
its remaining requested work takes at its new size), policies ``dmr``,
``head-unblock`` and ``efficiency``, start sizes ``full``, ``min``, ``preferred`` and
``fit``, moldable start, the minimum gain, expand modes ``in-place`` and ``slurm`` (an expansion queues a
rigid expander job submitted at the decision, estimate the job's remaining expected time;
it merges into its job when a pass starts it, is cancelled at the job's end; one more pass
runs at the same instant after a phase that requested expanders).  Every decision is taken
only if the head still finds its processors free at its shadow time (or is itself
started); under conservative only if the free count, with every planned start held, never
falls below zero where the decision lowered it.  Plain lists; every pass recomputes everything from scratch.  Times are integer
seconds, sizes processors.
"""
from __future__ import annotations

import math


def speedup(model: str, f: float, p: int) -> float:
    return float(p) if model == "linear" else 1.0 / (f + (1.0 - f) / p)


def whole_seconds(work: float, rate: float) -> int:
    """Seconds to do ``work`` at ``rate``, rounded up (1e-9 absorbs float noise)."""
    return 0 if work <= 0.0 else math.ceil(work / rate - 1e-9)


def oracle_malleable(jobs, total, *, policy, model="linear", cost=(0.0, 0.0),
                     min_interval=0, pow2=False, start_size="full", threshold=0.8,
                     min_gain=0, backfill="none", expand_mode="in-place", xlog=None,
                     scaled=False, moldable_start=False):
    """jobs: rows (submit, runtime, request, procs, kind, min, max, f), submit-sorted; kind 2
    is malleable, 1 moldable.  Returns (start, end, log) with log a list of (job, time,
    size).  ``xlog`` (a list, optional) receives the expander log: (event, job, time,
    processors), event 0 request, 1 merge, 2 cancel.  ``scaled``: estimates scale with the
    speedup (a request is work: a job queued or started at another size, or resized, gets
    the time its remaining requested work takes at the new size); else fixed.
    ``moldable_start``: a blocked moldable queue head starts at the size that completes
    it earliest, if that size is free now."""
    assert backfill in ("none", "easy", "conservative") and expand_mode in ("in-place", "slurm")
    n = len(jobs)
    # slots 0..n-1: the jobs; slot n + j: job j's expander (a rigid queued job)
    sub = [j[0] for j in jobs] + [0] * n
    req = [j[2] for j in jobs] + [0] * n
    kind = [j[4] for j in jobs] + [0] * n
    start = [-1] * (2 * n)
    resv = [-1] * (2 * n)          # conservative: planned start from the latest pass
    end = [-1] * n
    size = [j[3] for j in jobs] + [0] * n
    done = [0.0] * n
    work = [0.0] * n
    req_work = [0.0] * n           # scaled: the requested time as work, from the start
    upd = [0] * n
    resume = [0] * n
    finish = [0] * n
    last = [-1] * n
    pending = [False] * n          # job j has an expander queued
    log = []
    xl = xlog if xlog is not None else []
    waiting = []
    running = []

    def rate_at(j, p):
        return speedup(model, jobs[j][7], p)

    def rate(j):
        return rate_at(j, size[j])

    def expected_end(j, t):
        e = start[j] + req[j]
        return e if e > t else t + 1

    def free():
        return total - sum(size[j] for j in running)

    def eligible(j, t):
        return (kind[j] == 2 and finish[j] > t and resume[j] <= t
                and (last[j] < 0 or t - last[j] >= min_interval))

    def allowed(j, p):
        if pow2:
            p = 2 ** int(math.floor(math.log2(p) + 1e-12))
            return p if p >= jobs[j][5] else 0
        return p

    def preferred(j):
        for p in range(jobs[j][6], jobs[j][5], -1):
            if allowed(j, p) == p and rate_at(j, p) >= threshold * p - 1e-12:
                return p
        return jobs[j][5]

    def cost_of(moved):
        c = cost[0] + cost[1] * moved
        return math.ceil(c - 1e-9) if c > 0 else 0

    def model_end(j, p, t):
        base = max(resume[j], t)
        e = expected_end(j, t)
        rest = rate(j) * (e - base) if e > base else 0.0
        if p != size[j]:
            base += cost_of(abs(p - size[j]))
        return base + whole_seconds(rest, rate_at(j, p))

    def queue_size(j, p):
        """Waiting job j asks for p processors; scaled: its request follows."""
        if scaled and p != size[j]:
            req[j] = whole_seconds(req[j] * rate_at(j, size[j]), rate_at(j, p))
        size[j] = p

    def start_end(w, p, t):
        """Waiting job (or expander) w's expected end if it starts now at p."""
        r = req[w]
        if scaled and p != size[w]:
            r = whole_seconds(r * rate_at(w, size[w]), rate_at(w, p))
        return t + r if r > 0 else t + 1

    def new_end(j, p, t):
        """Running job j's expected end if resized to p now."""
        if not scaled:
            return expected_end(j, t)
        d = done[j] + (rate(j) * (t - max(upd[j], resume[j])) if t > max(upd[j], resume[j])
                       else 0.0)
        e = max(resume[j], t) + cost_of(abs(p - size[j]))
        e += whole_seconds(req_work[j] - d, rate_at(j, p))
        return e if e > t else t + 1

    def first_fit(need, t):
        """(earliest time ``need`` processors are free given the running jobs' expected
        ends, processors free then) or None."""
        avail = free()
        if avail >= need:
            return t, avail
        for e in sorted(set(expected_end(j, t) for j in running)):
            a = avail + sum(size[j] for j in running if expected_end(j, t) <= e)
            if a >= need:
                return e, a
        return None

    def shadow(t):
        """(head, shadow time, processors free then) or None."""
        if not waiting:
            return None
        fit = first_fit(size[waiting[0]], t)
        return None if fit is None else (waiting[0],) + fit

    def safe(t, resized, started):
        """resized: {running job: new size}; started: {waiting job: size}."""
        if backfill == "conservative":
            return safe_all(t, resized, started)
        sh = shadow(t)
        if sh is None or sh[0] in started:
            return True
        head, when, avail = sh
        after = total
        for j in running:
            if j in resized:
                if new_end(j, resized[j], t) > when:
                    after -= resized[j]
            elif expected_end(j, t) > when:
                after -= size[j]
        for w, p in started.items():
            if start_end(w, p, t) > when:
                after -= p
        return after >= size[head] or after >= avail

    def safe_all(t, resized, started):
        """Conservative: with every waiting job's planned start of the pass held (its size
        from then for max(estimate, 1) s; a job the decision starts gives its up), the free
        count after the decision never falls below zero at an instant where the decision
        lowered it."""
        held = [(resv[w], resv[w] + max(req[w], 1), size[w]) for w in waiting
                if resv[w] >= t and w not in started]
        ends = {expected_end(j, t) for j in running}
        moved = {j: new_end(j, p, t) for j, p in resized.items()}
        begun = {w: start_end(w, p, t) for w, p in started.items()}
        marks = {t} | ends | {b for b, _, _ in held} | {e for _, e, _ in held}
        marks |= set(moved.values()) | set(begun.values())

        def free_at(x, changed):
            f = total
            for j in running:
                if changed and j in resized:
                    f -= resized[j] if moved[j] > x else 0
                elif expected_end(j, t) > x:
                    f -= size[j]
            for b, e, p in held:
                if b <= x < e:
                    f -= p
            return f
        for x in sorted(marks):
            old = free_at(x, False)
            new = free_at(x, True)
            for w, p in started.items():
                if x < begun[w]:
                    new -= p
            if new < 0 and new < old:
                return False
        return True

    def fits_for(t, s0, p, hold, plan):
        """p processors free during [s0, s0 + hold) given the running jobs' expected ends
        and the reservations in ``plan`` (begin, end, size)."""
        marks = {s0} | {expected_end(j, t) for j in running} | {b for b, _, _ in plan}
        for x in sorted(marks):
            if x < s0 or x >= s0 + hold:
                continue
            f = total - sum(size[j] for j in running if expected_end(j, t) > x)
            f -= sum(q for b, e, q in plan if b <= x < e)
            if f < p:
                return False
        return True

    def gains(w, t):
        if min_gain <= 0:
            return True
        fit = first_fit(size[w], t)
        return fit is None or fit[0] - t > min_gain

    def resize(j, p, t):
        b = max(upd[j], resume[j])
        if t > b:
            done[j] += rate(j) * (t - b)
        upd[j] = t
        c = cost_of(abs(p - size[j]))
        size[j] = p
        resume[j] = max(resume[j], t) + c
        last[j] = t
        finish[j] = max(resume[j] + whole_seconds(work[j] - done[j], rate(j)), t + 1)
        if scaled:
            req[j] = resume[j] + whole_seconds(req_work[j] - done[j], rate(j)) - start[j]
        log.append((j, t, p))

    def take(j, t):
        """Waiting job (or expander) j starts holding its size now."""
        start[j] = t
        running.append(j)
        waiting.remove(j)

    def settle(j, t):
        """After its start: a job gets its work state; an expander merges into its job."""
        if j >= n:
            par = j - n
            running.remove(j)
            pending[par] = False
            xl.append((1, par, t, size[j]))
            resize(par, size[par] + size[j], t)
            return
        upd[j] = resume[j] = t
        req_work[j] = req[j] * rate(j)
        work[j] = jobs[j][1] * rate_at(j, jobs[j][3])
        finish[j] = t + jobs[j][1]
        if size[j] != jobs[j][3]:
            finish[j] = t + whole_seconds(work[j], rate(j))
        log.append((j, t, size[j]))

    def begin(j, t):
        take(j, t)
        settle(j, t)

    def schedule_pass(t):
        """The rigid pass: strict queue order, then (easy) backfill behind the head;
        conservative: every waiting job re-planned at its earliest fit, holders of a
        reservation first (by it, ties in queue order), those planned now start."""
        waiting.sort(key=lambda j: (sub[j], j))
        started = []
        if backfill == "conservative":
            pos = {j: k for k, j in enumerate(waiting)}
            order = sorted(waiting, key=lambda j: (resv[j] < 0, resv[j], pos[j]))
            plan = []
            for j in order:
                hold = max(req[j], 1)
                cands = sorted({t} | {expected_end(r, t) for r in running}
                               | {e for _, e, _ in plan})
                s0 = next(x for x in cands if x >= t and fits_for(t, x, size[j], hold, plan))
                resv[j] = s0
                if s0 == t:
                    take(j, t)
                    started.append(j)
                else:
                    plan.append((s0, s0 + hold, size[j]))
            for j in started:
                settle(j, t)
            return
        queue = list(waiting)
        k = 0
        while k < len(queue) and size[queue[k]] <= free():
            take(queue[k], t)
            started.append(queue[k])
            k += 1
        if backfill == "easy" and k < len(queue):
            head = queue[k]
            when, avail = first_fit(size[head], t)
            extra = avail - size[head]
            for j in queue[k + 1:]:
                if size[j] <= free() and (t + req[j] <= when or size[j] <= extra):
                    take(j, t)
                    started.append(j)
                    if t + req[j] > when:
                        extra -= size[j]
        for j in started:
            settle(j, t)

    def shrink_else_expand(t, efficient):
        order = sorted(running, key=lambda j: (expected_end(j, t), start[j], j))
        promised = 0                 # free processors asked for by this phase's expanders
        new = set()
        for j in order:
            if not eligible(j, t):
                continue
            floor, cap = jobs[j][5], jobs[j][6]
            if efficient:
                floor = max(floor, preferred(j))
                if waiting:
                    cap = min(cap, preferred(j))
            shrunk = False
            for w in list(waiting):
                need = size[w] - free()
                if need <= 0 or need > size[j] - floor:
                    continue
                p = allowed(j, size[j] - need)
                if p == 0 or p < floor:
                    continue
                if not gains(w, t) or not safe(t, {j: p}, {w: size[w]}):
                    continue
                resize(j, p, t)
                begin(w, t)
                shrunk = True
                break
            avail = free() - promised
            if shrunk or size[j] >= cap or avail <= 0:
                continue
            if any(free() >= size[w] for w in waiting if w not in new):
                continue
            p = allowed(j, min(cap, size[j] + avail))
            if p <= size[j] or pending[j] or model_end(j, size[j], t) - model_end(j, p, t) <= min_gain:
                continue
            if expand_mode == "in-place":
                if safe(t, {j: p}, {}):
                    resize(j, p, t)
                continue
            e = n + j                # slurm: queue an expander submitted now
            sub[e], size[e], start[e], resv[e] = t, p - size[j], -1, -1
            req[e] = max(expected_end(j, t) - t, 1)
            pending[j] = True
            waiting.append(e)
            new.add(e)
            promised += size[e]
            xl.append((0, j, t, size[e]))
        return bool(new)

    times = sorted({j[0] for j in jobs})
    t = None
    while True:
        candidates = [s for s in times if t is None or s > t]
        candidates += [finish[j] for j in running if t is None or finish[j] > t]
        if not candidates:
            break
        t = min(candidates)
        for j in sorted(running):
            if finish[j] == t:
                running.remove(j)
                end[j] = t
                if pending[j]:       # its expander leaves the queue unstarted
                    pending[j] = False
                    waiting.remove(n + j)
                    xl.append((2, j, t, size[n + j]))
        for j in range(n):
            if jobs[j][0] == t:
                waiting.append(j)
                if kind[j] and start_size == "min":
                    queue_size(j, allowed(j, jobs[j][5]) or jobs[j][3])
                elif kind[j] and start_size == "preferred":
                    queue_size(j, preferred(j))
        schedule_pass(t)
        if policy == "none" and start_size != "fit" and not moldable_start:
            continue
        if start_size == "fit":
            for w in list(waiting):
                if free() == 0:
                    break
                if not kind[w] or free() < jobs[w][5]:
                    continue
                for p in range(min(free(), jobs[w][6]), jobs[w][5] - 1, -1):
                    if allowed(w, p) == p and safe(t, {}, {w: p}):
                        queue_size(w, p)
                        begin(w, t)
                        break
        while moldable_start and waiting:
            j = waiting[0]
            if kind[j] != 1 or size[j] <= free():
                break
            # its estimated work: the estimate at the size it asks for (fixed: at p0)
            w = req[j] * rate_at(j, size[j] if scaled else jobs[j][3])
            best, best_done = 0, None
            for p in range(jobs[j][5], jobs[j][6] + 1):
                if allowed(j, p) != p:
                    continue
                fit = first_fit(p, t)
                if fit is None:
                    continue
                done_at = fit[0] + whole_seconds(w, rate_at(j, p))
                if best == 0 or done_at < best_done:
                    best, best_done = p, done_at
            if best == 0 or best > free() or not safe(t, {}, {j: best}):
                break
            queue_size(j, best)
            begin(j, t)
        requested = False
        if policy in ("dmr", "efficiency"):
            requested = shrink_else_expand(t, policy == "efficiency")
        elif policy == "head-unblock":
            while waiting and size[waiting[0]] > free():
                head = waiting[0]
                need = size[head] - free()
                donors = sorted([j for j in running if eligible(j, t) and size[j] > jobs[j][5]],
                                key=lambda j: (-start[j], -j))
                can = 0
                for j in donors:
                    p = allowed(j, jobs[j][5])
                    can += size[j] - (p if p else size[j])
                if can < need or not gains(head, t):
                    break
                plan = {}
                for j in donors:
                    if need <= 0:
                        break
                    p = allowed(j, size[j] - min(size[j] - jobs[j][5], need))
                    if p == 0 or p >= size[j]:
                        continue
                    need -= size[j] - p
                    plan[j] = p
                if need > 0 or not safe(t, plan, {head: size[head]}):
                    break
                for j, p in plan.items():
                    resize(j, p, t)
                begin(head, t)
        if requested:                # the new expanders get a pass now
            schedule_pass(t)
    return start[:n], end, log
