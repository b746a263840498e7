"""A deliberately naive reference model of malleable jobs under dmr and head-unblock
(docs/malleability.md, read aloud), for tiny workloads.

Shares no code with ``malleo._core`` (never imports it).  Covered: FCFS order, backfill
``none`` (strict queue order), linear and Amdahl speedups, reconfiguration cost, minimum
interval, points at any pass, fixed estimates (expected end = start + request, extended
to now + 1 when overdue), policies ``dmr`` and ``head-unblock``.  Plain lists; every pass
recomputes everything from scratch.  Times are integer seconds, sizes processors.
"""
from __future__ import annotations

import math


def speedup(model: str, f: float, p: int) -> float:
    return float(p) if model == "linear" else 1.0 / (f + (1.0 - f) / p)


def whole_seconds(work: float, rate: float) -> int:
    """Seconds to do ``work`` at ``rate``, rounded up (1e-9 absorbs float noise)."""
    return 0 if work <= 0.0 else math.ceil(work / rate - 1e-9)


def oracle_malleable(jobs, total, *, policy, model="linear", cost=(0.0, 0.0),
                     min_interval=0, pow2=False):
    """jobs: rows (submit, runtime, request, procs, kind, min, max, f), submit-sorted; kind 2
    is malleable.  Returns (start, end, log) with log a list of (job, time, size)."""
    n = len(jobs)
    start = [-1] * n
    end = [-1] * n
    size = [j[3] for j in jobs]
    done = [0.0] * n
    work = [0.0] * n
    upd = [0] * n
    resume = [0] * n
    finish = [0] * n
    last = [-1] * n
    log = []
    waiting = []
    running = []

    def rate(j):
        return speedup(model, jobs[j][7], size[j])

    def expected_end(j, t):
        e = start[j] + jobs[j][2]
        return e if e > t else t + 1

    def free():
        return total - sum(size[j] for j in running)

    def eligible(j, t):
        return (jobs[j][4] == 2 and finish[j] > t and resume[j] <= t
                and (last[j] < 0 or t - last[j] >= min_interval))

    def allowed(j, p):
        if pow2:
            p = 2 ** int(math.floor(math.log2(p) + 1e-12))
            return p if p >= jobs[j][5] else 0
        return p

    def begin(j, t):
        start[j] = t
        upd[j] = resume[j] = t
        work[j] = jobs[j][1] * rate(j)
        finish[j] = t + jobs[j][1]
        running.append(j)
        waiting.remove(j)
        log.append((j, t, size[j]))

    def resize(j, p, t):
        b = max(upd[j], resume[j])
        if t > b:
            done[j] += rate(j) * (t - b)
        upd[j] = t
        c = cost[0] + cost[1] * abs(p - size[j])
        size[j] = p
        resume[j] = max(resume[j], t) + (math.ceil(c - 1e-9) if c > 0 else 0)
        last[j] = t
        finish[j] = max(resume[j] + whole_seconds(work[j] - done[j], rate(j)), t + 1)
        log.append((j, t, p))

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
        waiting += [j for j in range(n) if jobs[j][0] == t]
        waiting.sort()
        for j in list(waiting):          # strict queue order
            if jobs[j][3] > free():
                break
            begin(j, t)
        if policy == "dmr":
            order = sorted(running, key=lambda j: (expected_end(j, t), start[j], j))
            for j in order:
                if not eligible(j, t):
                    continue
                shrunk = False
                for w in list(waiting):
                    need = jobs[w][3] - free()
                    if need <= 0 or need > size[j] - jobs[j][5]:
                        continue
                    p = allowed(j, size[j] - need)
                    if p == 0:
                        continue
                    resize(j, p, t)
                    begin(w, t)
                    shrunk = True
                    break
                if shrunk or size[j] >= jobs[j][6] or free() == 0:
                    continue
                if waiting and free() >= min(jobs[w][3] for w in waiting):
                    continue
                p = allowed(j, min(jobs[j][6], size[j] + free()))
                if p > size[j]:
                    resize(j, p, t)
        elif policy == "head-unblock":
            while waiting and jobs[waiting[0]][3] > free():
                head = waiting[0]
                need = jobs[head][3] - free()
                donors = sorted([j for j in running if eligible(j, t) and size[j] > jobs[j][5]],
                                key=lambda j: (-start[j], -j))
                can = 0
                for j in donors:
                    p = allowed(j, jobs[j][5])
                    can += size[j] - (p if p else size[j])
                if can < need:
                    break
                for j in donors:
                    if need <= 0:
                        break
                    p = allowed(j, size[j] - min(size[j] - jobs[j][5], need))
                    if p == 0 or p >= size[j]:
                        continue
                    need -= size[j] - p
                    resize(j, p, t)
                if need > 0:
                    break
                begin(head, t)
    return start, end, log
