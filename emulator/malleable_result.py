"""The :class:`ReplayResult` of a malleable replay: extra job columns, the size log and the
summary additions (docs/malleability.md).

Times are integer seconds, sizes processors (allocation units on node-exclusive
machines: whole nodes for the size log, processors for ``proc_seconds``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from malleo.emulator import metrics
from malleo.emulator.results import JOB_COLUMNS, ReplayResult
from malleo.emulator.swf_fields import FIELDS
from malleo.policy import JOB_KINDS

__all__ = ["malleable_result", "MALLEABLE_COLUMNS", "EXPANDER_EVENTS"]

MALLEABLE_COLUMNS = ("kind", "min_procs", "max_procs", "elapsed", "n_expand", "n_shrink",
                     "reconfig_time", "proc_seconds")
"""Job columns a malleable replay adds after :data:`JOB_COLUMNS`."""

EXPANDER_EVENTS = ("request", "merge", "cancel")
"""Names of the core's expander-log events 0, 1, 2 (slurm expand mode)."""


def malleable_result(table: pd.DataFrame, core: dict[str, np.ndarray],
                     flex: dict[str, np.ndarray], alloc: np.ndarray, machine_procs: int,
                     node_procs: int, policy, meta, dropped: dict[str, int], source: str,
                     bsld_threshold: float, flexible=None) -> ReplayResult:
    """Assemble the result of ``simulate_malleable``.

    ``wait`` and ``response`` are as usual (response = end - submit); ``slowdown`` and
    ``bsld`` divide the response by the trace runtime (at the trace size), so a job that
    ran faster thanks to an expansion can score below its rigid self.  ``utilization``
    is processor-seconds held / (P x makespan); ``utilization_useful`` the work done
    (processor-seconds at full efficiency: S(p) per second while holding p and not
    reconfiguring, every job under its speedup model, rigid ones included) / (P x makespan).
    """
    unit = node_procs if node_procs else 1
    submit = table["submit_time"].to_numpy(dtype=np.int64)
    runtime = table["runtime"].to_numpy(dtype=np.int64)
    start = np.asarray(core["start"], dtype=np.int64)
    end = np.asarray(core["end"], dtype=np.int64)
    elapsed = end - start
    wait = start - submit
    response = end - submit
    slowdown = np.maximum(response / np.maximum(runtime, 1), 1.0)
    bsld = np.maximum(response / np.maximum(runtime, bsld_threshold), 1.0)
    user = table["user_id"].to_numpy()
    backfilled = np.asarray(core["backfilled"]).astype(bool)
    alloc = np.asarray(alloc, dtype=np.int64)
    proc_seconds = np.asarray(core["proc_seconds"], dtype=np.int64) * unit
    kind_names = np.array(JOB_KINDS)[np.asarray(flex["kind"], dtype=np.int64)]
    jobs = pd.DataFrame({
        "job_id": table["job_number"].to_numpy(dtype=np.int64, copy=True),
        "submit": submit.copy(), "start": start, "end": end, "wait": wait,
        "response": response, "procs": table["procs"].to_numpy(dtype=np.int64, copy=True),
        "alloc_procs": alloc.copy(), "runtime": runtime.copy(),
        "estimate": table["estimate"].to_numpy(dtype=np.int64, copy=True),
        "bsld": bsld, "slowdown": slowdown, "user": table["user_id"].to_numpy(copy=True),
        "queue": table["queue"].to_numpy(copy=True),
        "partition": table["partition"].to_numpy(copy=True), "backfilled": backfilled,
        "reservation": np.array(core["reservation"], dtype=np.int64, copy=True),
        "kind": kind_names,
        "min_procs": np.asarray(flex["min_procs"], dtype=np.int64) * unit,
        "max_procs": np.asarray(flex["max_procs"], dtype=np.int64) * unit,
        "elapsed": elapsed, "n_expand": np.asarray(core["n_expand"], dtype=np.int64),
        "n_shrink": np.asarray(core["n_shrink"], dtype=np.int64),
        "reconfig_time": np.asarray(core["reconfig_time"], dtype=np.int64),
        "proc_seconds": proc_seconds,
    }, columns=[*JOB_COLUMNS, *MALLEABLE_COLUMNS])
    summary, users = metrics.summarize(submit, start, end, elapsed, alloc, user, backfilled,
                                       machine_procs, bsld_threshold, dropped)
    makespan = summary.get("makespan")
    if len(jobs):
        summary["bsld_mean"] = float(np.mean(bsld))
        summary["slowdown_mean"] = float(np.mean(slowdown))
        summary["utilization"] = (float(proc_seconds.sum()) / (machine_procs * makespan)
                                  if makespan and makespan > 0 else float("nan"))
        # processors doing useful work: the work done (single-processor-equivalent
        # seconds, rate S(p) while holding p and not reconfiguring), so time spent
        # reconfiguring and the efficiency lost to a poor speedup are counted out
        useful = float(np.asarray(core["work_done"], dtype=np.float64).sum()) * unit
        summary["utilization_useful"] = (useful / (machine_procs * makespan)
                                         if makespan and makespan > 0 else float("nan"))
        users = metrics.user_metrics(user, bsld, wait)
        summary["fairness_jain"] = metrics.jain_index(users["bsld_mean"].to_numpy())
    exp_rows = np.asarray(core.get("exp_job", ()), dtype=np.int64)
    expander_log = pd.DataFrame({
        "job_id": jobs["job_id"].to_numpy()[exp_rows],
        "time": np.asarray(core.get("exp_time", ()), dtype=np.int64),
        "event": np.array(EXPANDER_EVENTS, dtype=object)[
            np.asarray(core.get("exp_event", ()), dtype=np.int64)],
        "procs": np.asarray(core.get("exp_procs", ()), dtype=np.int64) * unit,
        "estimate": np.asarray(core.get("exp_est", ()), dtype=np.int64)})
    summary.update(malleable_summary(jobs, policy, expander_log, flexible))
    summary.update({"policy": policy.describe(flexible), "procs": machine_procs,
                    "node_procs": node_procs, "source": source})
    log_rows = np.asarray(core["log_job"], dtype=np.int64)
    size_log = pd.DataFrame({"job_id": jobs["job_id"].to_numpy()[log_rows],
                             "time": np.asarray(core["log_time"], dtype=np.int64),
                             "size": np.asarray(core["log_size"], dtype=np.int64)})
    swf_cols = [c for c in FIELDS if c in table.columns]
    return ReplayResult(jobs=jobs, summary=summary, users=users, dropped=dict(dropped),
                        policy=policy, flexible=flexible, meta=meta, procs=machine_procs,
                        node_procs=node_procs,
                        source=source, swf_table=table[swf_cols].reset_index(drop=True),
                        size_log=size_log, expander_log=expander_log)


def malleable_summary(jobs: pd.DataFrame, policy,
                      expander_log: pd.DataFrame | None = None,
                      flexible=None) -> dict[str, Any]:
    """The summary additions: reconfigurations by kind, time reconfiguring, workload
    completion time (last end - first submit, s), the expand mode used, per job kind
    the jobs, mean wait, mean response, mean bounded slowdown (``by_kind``), and in slurm
    expand mode the expander requests, merges and cancellations with the mean and maximum
    wait of a merged expander (request to merge, s; NaN when none merged)."""
    mal = policy.malleability
    out: dict[str, Any] = {
        "reconfigurations_expand": int(jobs["n_expand"].sum()),
        "reconfigurations_shrink": int(jobs["n_shrink"].sum()),
        "reconfig_time_total": int(jobs["reconfig_time"].sum()),
        "workload_completion": (int(jobs["end"].max() - jobs["submit"].min())
                                if len(jobs) else float("nan")),
        "expand_mode": mal.expand_mode,
        "reconfig_policy": mal.policy,
        "malleability": (f"{flexible.describe()} {mal.describe()}" if flexible is not None
                         else mal.describe()),
    }
    by_kind = {}
    for name, group in jobs.groupby("kind", sort=True):
        by_kind[str(name)] = {"jobs": int(len(group)),
                              "wait_mean": float(group["wait"].mean()),
                              "response_mean": float(group["response"].mean()),
                              "bsld_mean": float(group["bsld"].mean()),
                              "proc_seconds": int(group["proc_seconds"].sum())}
    out["by_kind"] = by_kind
    if mal.expand_mode == "slurm" and expander_log is not None:
        out.update(expander_summary(expander_log))
    return out


def expander_summary(log: pd.DataFrame) -> dict[str, Any]:
    """Counts of the expander log's events and the wait of the merged ones (seconds from a
    job's request to its merge; a job has at most one pending expander, so each merge
    closes the job's latest request)."""
    event = log["event"].to_numpy()
    requested = event == "request"
    merged = event == "merge"
    request_time: dict[int, int] = {}
    waits = []
    for job, time, kind in zip(log["job_id"].tolist(), log["time"].tolist(), event.tolist()):
        if kind == "request":
            request_time[job] = time
        elif kind == "merge":
            waits.append(time - request_time.pop(job))
        else:
            request_time.pop(job, None)
    return {"expanders_requested": int(requested.sum()),
            "expanders_merged": int(merged.sum()),
            "expanders_cancelled": int((event == "cancel").sum()),
            "expander_wait_mean": float(np.mean(waits)) if waits else float("nan"),
            "expander_wait_max": int(max(waits)) if waits else float("nan")}
