"""Benchmark one planning pass of the Slurm agent (figures only, no assertions).

A synthetic cluster of 10,000 nodes with 10,000 pending jobs (and, by default, 2,000 running
jobs holding 60 % of the nodes), built as the backend's own model objects, then per pass:

* ``parse``: ``squeue --json`` of the whole queue decoded into typed records
  (``parse_json.decode_squeue``, msgspec, as the CLI backend does; the standard library's
  ``json`` and orjson beside it for comparison: decoding to dicts, no Job yet) then turned
  into the backend's Job records by ``parse_json.jobs_from_squeue`` (the document is built
  here from the captured records of one Slurm version, ``--schema``; Slurm itself is not called);
* ``sinfo_nodes``: ``sinfo -N --json`` of the 10,000 nodes (captured node records of the
  same version) decoded into typed records (msgspec, as the CLI backend does) then into
  Node records (``parse_json.nodes_from_sinfo``);
* ``convert``: ``plan_inputs`` (Snapshot -> plan's tables);
* ``plan``: ``malleo._core.plan`` with the policy (FCFS+EASY by default);
* ``priorities``: ``wanted_order`` + ``assign_priorities``, first pass (every job written)
  and steady state (the previous pass's values already in Slurm);
* ``compact_*``: the agent's default read (``plugin/backends/columns.py``): the same jobs and
  nodes as ``squeue``/``sinfo --Format`` text (about 75 bytes a job), parsed into columns,
  converted by ``plan_inputs`` on those columns (checked equal to the Job path's tables) and
  planned; ``compact_cycle_parse_convert_plan_s`` is the cycle without the Slurm processes;
* ``--live``: one run of each of the cycle's Slurm commands (compact squeue, squeue --json,
  compact sinfo, the fingerprint squeue, scontrol) against the cluster ``SLURM_CONF`` names,
  with the parse of the real output: the process time the synthetic parts leave out.

The stated target (issue 16): parse + convert + plan under 100 ms at 10,000 pending jobs on
10,000 nodes, conservative included (``cycle_parse_convert_plan_s``).

    python bench/plan_agent.py [--pending 10000] [--nodes 10000] [--running 2000]
                               [--policy fcfs+easy] [--repeat 5] [--schema 22.05|24.11|25.11|26.05]
                               [--live [--slurm-conf FILE]]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def build(pending: int, nodes: int, running: int, seed: int = 0):
    from malleo.plugin.agent.state import Snapshot
    from malleo.plugin.backends.model import Job, Node

    rng = np.random.default_rng(seed)
    now = 1_800_000_000
    node_names = [f"n{k + 1}" for k in range(nodes)]
    busy_target = int(0.6 * nodes)
    sizes = np.maximum(1, rng.integers(1, max(2, 2 * busy_target // max(running, 1)), running))
    jobs, nodes_used = [], 0
    for k, size in enumerate(sizes.tolist()):
        if nodes_used + size > busy_target:
            break
        names = tuple(node_names[nodes_used:nodes_used + size])
        nodes_used += size
        start = now - int(rng.integers(0, 3600))
        jobs.append(Job(job_id=k + 1, name="r", user=f"u{k % 97}", user_id=1000 + k % 97,
                        partition="batch", state="RUNNING", reason="", submit_time=start - 60,
                        start_time=start, expected_start=None, end_time=start + 7200,
                        time_limit=7200, num_nodes=size, max_nodes=None, num_cpus=size * 32,
                        priority=4294901000, node_list=names))
    base = len(jobs)
    limits = rng.choice([600, 1800, 3600, 7200, 14400, 86400], pending)
    want = np.minimum(np.maximum(1, rng.geometric(0.02, pending)), nodes)
    submits = np.sort(now - rng.integers(0, 86400, pending))
    for k in range(pending):
        jobs.append(Job(job_id=base + k + 1, name="p", user=f"u{k % 211}",
                        user_id=2000 + k % 211, partition="batch", state="PENDING",
                        reason="Priority", submit_time=int(submits[k]), start_time=None,
                        expected_start=None, end_time=None, time_limit=int(limits[k]),
                        num_nodes=int(want[k]), max_nodes=None, num_cpus=int(want[k]) * 32,
                        priority=4294901760 - (base + k + 1)))
    node_objs = tuple(Node(name=n, state="ALLOCATED" if i < nodes_used else "IDLE", cpus=32,
                           alloc_cpus=32 if i < nodes_used else 0, partitions=("batch",))
                      for i, n in enumerate(node_names))
    return Snapshot(float(now), node_objs, tuple(jobs), {"batch": None}, "batch")


SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "data" / "slurm"
"""Captured ``squeue --json`` documents, one per Slurm version (their records are the
templates of the synthetic queue)."""


def _set(rec: dict, key: str, value) -> None:
    """Write ``value`` into ``rec[key]`` in the template's own shape (plain or wrapped)."""
    old = rec.get(key)
    if isinstance(old, dict) and "number" in old:
        rec[key] = {"set": value is not None, "infinite": False, "number": value or 0}
    elif isinstance(old, list):
        rec[key] = [value]
    else:
        rec[key] = value


def squeue_document(snapshot, schema: str = "22.05") -> bytes:
    """The snapshot's jobs as ``squeue --json`` output of Slurm ``schema``: each job is a
    captured record of that version (tests/data/slurm/squeue-VERSION.json, a running one or
    a pending one, with every field Slurm writes: 2.4-6 KB a job) with malleo's fields
    replaced, so the parser meets the real size and shapes."""
    import orjson

    from malleo.plugin.backends import hostlist

    sample = orjson.loads((SAMPLES / f"squeue-{schema}.json").read_bytes())

    def template(state: str) -> bytes:
        for rec in sample["jobs"]:
            states = rec["job_state"] if isinstance(rec["job_state"], list) else [rec["job_state"]]
            if states == [state]:
                return orjson.dumps(rec)
        raise SystemExit(f"{SAMPLES}/squeue-{schema}.json has no {state} job to copy")

    templates = {"RUNNING": template("RUNNING"), "PENDING": template("PENDING")}
    recs = []
    for j in snapshot.jobs:
        rec = orjson.loads(templates[j.state])
        for key, value in (("job_id", j.job_id), ("name", j.name), ("user_name", j.user),
                           ("user_id", j.user_id), ("partition", j.partition),
                           ("job_state", j.state), ("state_reason", j.reason or "None"),
                           ("priority", j.priority), ("submit_time", j.submit_time),
                           ("start_time", j.start_time or 0), ("end_time", j.end_time or 0),
                           ("time_limit", (j.time_limit or 0) // 60),
                           ("node_count", j.num_nodes), ("max_nodes", 0), ("cpus", j.num_cpus),
                           ("required_nodes", "")):
            _set(rec, key, value)
        nodes = hostlist.compress(list(j.node_list)) if j.node_list else ""
        rec["nodes"] = nodes
        res = rec.get("job_resources")
        if isinstance(res, dict) and isinstance(res.get("nodes"), dict):
            res["nodes"]["list"] = nodes
        elif isinstance(res, dict) and "nodes" in res:
            res["nodes"] = nodes
        if "hold" in rec:
            rec["hold"] = j.is_held
        recs.append(rec)
    return orjson.dumps({"meta": sample.get("meta", {}), "errors": [], "jobs": recs})


def sinfo_document(snapshot, schema: str = "22.05") -> bytes:
    """The snapshot's nodes as ``sinfo -N --json`` output of Slurm ``schema``: each node a
    copy of the captured first node record of that version, renamed, its state and CPUs
    set (22.05: a ``nodes`` list; 24.11+: ``sinfo`` entries, one per node)."""
    import orjson

    sample = orjson.loads((SAMPLES / f"sinfo-{schema}.json").read_bytes())
    legacy = isinstance(sample.get("nodes"), list)
    template = orjson.dumps(sample["nodes" if legacy else "sinfo"][0])
    recs = []
    for node in snapshot.nodes:
        rec = orjson.loads(template)
        if legacy:
            rec.update(name=node.name, state=node.state.lower(), state_flags=[],
                       cpus=node.cpus, alloc_cpus=node.alloc_cpus, partitions=["batch"])
        else:
            rec["nodes"]["nodes"] = [node.name]
            rec["node"]["state"] = [node.state]
            rec["cpus"].update(maximum=node.cpus, allocated=node.alloc_cpus)
            rec["partition"]["name"] = "batch"
        recs.append(rec)
    return orjson.dumps({"meta": sample.get("meta", {}), "errors": [],
                         ("nodes" if legacy else "sinfo"): recs})


def squeue_text(snapshot) -> bytes:
    """The snapshot's jobs as the compact read's squeue output
    (``columns.squeue_argv()`` with ``SLURM_TIME_FORMAT=%s``): the fields in
    ``columns.SQUEUE_FIELDS`` order, each followed by ``|``, as squeue 22.05-26.05 prints them."""
    from malleo.plugin.backends import hostlist

    def limit(seconds):
        if seconds is None:
            return "UNLIMITED"
        minutes = seconds // 60
        d, rem = divmod(minutes, 1440)
        h, m = divmod(rem, 60)
        return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h}:{m:02d}:00" if h else f"{m}:00"

    out = []
    for j in snapshot.jobs:
        nodes = hostlist.compress(list(j.node_list)) if j.node_list else ""
        start = j.start_time if j.start_time is not None else j.expected_start
        out.append(f"{j.job_id}|{j.user_id}|{j.user}|{j.partition}|{j.state}|{j.priority}|"
                   f"{j.submit_time}|{start or 'N/A'}|{j.end_time or 'N/A'}|"
                   f"{limit(j.time_limit)}|{j.num_nodes}|{j.max_nodes or j.num_nodes}|"
                   f"{j.num_cpus}|{nodes}|{j.reason or 'None'}|\n")
    return "".join(out).encode()


def sinfo_text(snapshot) -> bytes:
    """The snapshot's nodes as the compact read's ``sinfo --Node --Format`` output."""
    return "".join(f"{n.name}|{','.join(n.partitions)}|{n.state.lower()}|{n.cpus}|"
                   f"{n.alloc_cpus}/{n.cpus - n.alloc_cpus}/0/{n.cpus}|\n"
                   for n in snapshot.nodes).encode()


def live_reads(conf: str | None) -> dict:
    """One run each of the cycle's Slurm commands against the running cluster (``SLURM_CONF``
    or ``conf``): wall seconds of the process and of the parse, bytes, jobs listed."""
    import os
    import subprocess

    from malleo.plugin.backends import columns, parse_json

    env = dict(os.environ, **columns.TIME_ENV)
    if conf:
        env["SLURM_CONF"] = conf

    def run(argv):
        t0 = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, env=env, check=True).stdout
        return time.perf_counter() - t0, out

    compact_s, text = run(columns.squeue_argv())
    t0 = time.perf_counter()
    table = columns.parse_squeue(text)
    parse_s = time.perf_counter() - t0
    json_s, doc = run(["squeue", "--json", "--states=all"])
    t0 = time.perf_counter()
    jobs = parse_json.jobs_from_squeue(doc)
    json_parse_s = time.perf_counter() - t0
    nodes_s, nodes_text = run(columns.sinfo_argv())
    fp_s, _ = run(columns.fingerprint_argv())
    part_s, _ = run(["scontrol", "show", "partition", "-o"])
    ping_s, _ = run(["scontrol", "ping"])
    return {"live_jobs": len(table), "live_jobs_json": len(jobs),
            "live_squeue_compact_process_s": round(compact_s, 4),
            "live_squeue_compact_bytes": len(text),
            "live_parse_squeue_compact_s": round(parse_s, 4),
            "live_squeue_json_process_s": round(json_s, 4), "live_squeue_json_bytes": len(doc),
            "live_parse_squeue_json_s": round(json_parse_s, 4),
            "live_sinfo_compact_process_s": round(nodes_s, 4),
            "live_sinfo_nodes": len(columns.parse_sinfo(nodes_text).name),
            "live_fingerprint_process_s": round(fp_s, 4),
            "live_scontrol_partition_s": round(part_s, 4), "live_scontrol_ping_s": round(ping_s, 4)}


def timed(fn, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--running", type=int, default=2_000)
    ap.add_argument("--policy", default="fcfs+easy")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--schema", choices=("22.05", "24.11", "25.11", "26.05"), default="22.05",
                    help="the Slurm version whose squeue --json records are copied")
    ap.add_argument("--live", action="store_true",
                    help="also time the cycle's Slurm commands once against the running "
                         "cluster (SLURM_CONF); submit the queue first (docs/core.md)")
    ap.add_argument("--slurm-conf", default=None, help="slurm.conf for --live")
    args = ap.parse_args()

    from malleo._core import plan
    from malleo.emulator.cli._options import parse_policy_spec
    from malleo.plugin.agent.apply import assign_priorities, wanted_order
    from malleo.plugin.agent.state import plan_inputs
    from malleo.plugin.backends import parse_json

    policy = parse_policy_spec(args.policy)
    snap = build(args.pending, args.nodes, args.running)
    doc = squeue_document(snap, args.schema)
    import orjson

    decode_json_s, _, _ = timed(lambda: json.loads(doc), args.repeat)
    decode_orjson_s, _, _ = timed(lambda: orjson.loads(doc), args.repeat)
    decode_s, _, decoded = timed(lambda: parse_json.decode_squeue(doc), args.repeat)
    to_jobs_s, _, jobs = timed(lambda: parse_json.jobs_from_squeue(decoded), args.repeat)
    parse_s = decode_s + to_jobs_s
    assert len(jobs) == len(snap.jobs)
    nodes_doc = sinfo_document(snap, args.schema)
    nodes_s, _, nodes = timed(lambda: parse_json.nodes_from_sinfo(nodes_doc), args.repeat)
    assert len(nodes) == len(snap.nodes)
    conv_s, conv_min, inputs = timed(lambda: plan_inputs(snap), args.repeat)
    plan_s, plan_min, decisions = timed(
        lambda: plan(inputs.now, inputs.total, inputs.running, inputs.pending, policy), args.repeat)
    order = wanted_order(decisions, inputs.pending_ids)
    current = dict(zip(inputs.pending_ids.tolist(), inputs.pending_priority.tolist()))
    first_s, _, writes = timed(lambda: assign_priorities(order, current), args.repeat)
    settled = {**current, **writes}
    steady_s, _, steady = timed(lambda: assign_priorities(order, settled), args.repeat)
    # The compact read (columns.py): text -> columns -> plan_inputs, no Job per row.
    from malleo.plugin.agent.state import Snapshot
    from malleo.plugin.backends import columns

    qtext, ntext = squeue_text(snap), sinfo_text(snap)
    cparse_s, _, table = timed(lambda: columns.parse_squeue(qtext), args.repeat)
    nparse_s, _, ntable = timed(lambda: columns.parse_sinfo(ntext), args.repeat)
    csnap = Snapshot(snap.read_time, ntable, table, snap.partitions, snap.default_partition)
    cconv_s, _, cinputs = timed(lambda: plan_inputs(csnap), args.repeat)
    for key in ("procs", "start", "est", "request", "user"):
        assert np.array_equal(cinputs.running[key], inputs.running[key]), key
    for key in ("submit", "procs", "request", "user", "reservation"):
        assert np.array_equal(cinputs.pending[key], inputs.pending[key]), key
    assert np.array_equal(cinputs.pending_ids, inputs.pending_ids) and cinputs.now == inputs.now
    cplan_s, _, _ = timed(
        lambda: plan(cinputs.now, cinputs.total, cinputs.running, cinputs.pending, policy),
        args.repeat)
    fp_s, _, _ = timed(table.fingerprint, args.repeat)
    figures = {
        "pending": len(inputs.pending_ids), "running": len(inputs.running_ids),
        "nodes": inputs.total, "busy_nodes": inputs.busy, "policy": policy.describe(),
        "starts_now": len(decisions.start),
        "decode_stdlib_json_s": round(decode_json_s, 4), "decode_orjson_s": round(decode_orjson_s, 4),
        "decode_msgspec_typed_s": round(decode_s, 4),
        "jobs_from_squeue_s": round(to_jobs_s, 4),
        "parse_squeue_json_s": round(parse_s, 4), "squeue_json_bytes": len(doc),
        "convert_s": round(conv_s, 4), "plan_s": round(plan_s, 4),
        "convert_plus_plan_s": round(conv_s + plan_s, 4),
        "convert_plus_plan_best_s": round(conv_min + plan_min, 4),
        "sinfo_nodes_s": round(nodes_s, 4), "sinfo_json_bytes": len(nodes_doc),
        "cycle_parse_convert_plan_s": round(parse_s + conv_s + plan_s, 4),
        "cycle_with_nodes_s": round(nodes_s + parse_s + conv_s + plan_s, 4),
        "priorities_first_pass_s": round(first_s, 4), "first_pass_writes": len(writes),
        "priorities_steady_s": round(steady_s, 4), "steady_writes": len(steady),
        "compact_squeue_bytes": len(qtext), "compact_sinfo_bytes": len(ntext),
        "compact_parse_squeue_s": round(cparse_s, 4),
        "compact_parse_sinfo_s": round(nparse_s, 4),
        "compact_convert_s": round(cconv_s, 4), "compact_plan_s": round(cplan_s, 4),
        "compact_fingerprint_s": round(fp_s, 4),
        "compact_cycle_parse_convert_plan_s": round(cparse_s + nparse_s + cconv_s + cplan_s, 4),
        "schema": args.schema,
        "target": "cycle_parse_convert_plan_s under 0.1 s (issue 16), decode_stdlib_json_s "
                  "for the machine's speed",
    }
    if args.live:
        figures.update(live_reads(args.slurm_conf))
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
