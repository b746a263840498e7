"""Digests of rigid replays on every shared trace, for every rigid policy: the net that
keeps the core's schedules byte-identical across refactors (tests/test_rigid_digests.py).

A digest is the SHA-256 of the core's output arrays (``start``, ``reservation``,
``backfilled``, ``est``; int64/uint8 little-endian bytes) for one (trace, policy); the
input arrays are digested too, so a change of the trace reader shows as such and not as a
scheduling change.  Policies: every order x every backfill mode x every estimate source
(8 x 4 x 3 = 96, ``slurm`` with its defaults) on the first :data:`HEAD` jobs of each
trace, plus every order with ``easy`` and ``none`` on the whole trace.

Regenerate (only on purpose, from a build of the code whose schedules are the reference)::

    python tests/rigid_digests.py --write

reads the traces in place from ``MALLEO_TRACES`` (default ``../shared/traces`` next to the
repository, else /work/shared/traces) and writes tests/golden/rigid_digests.json.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

HEAD = 3000
"""Jobs of each trace replayed under every policy (the whole trace under the cheap ones)."""

ORDERS = ("fcfs", "sjf", "ljf", "saf", "wfp3", "unicep", "f1", "multifactor")
BACKFILLS = ("none", "easy", "conservative", "slurm")
ESTIMATES = ("request", "actual", "predict")
WHOLE_BACKFILLS = ("none", "easy")

DIGESTS = Path(__file__).resolve().parent / "golden" / "rigid_digests.json"


def traces_dir() -> Path:
    """Where the shared traces are: ``MALLEO_TRACES``, ``../shared/traces`` beside the
    repository, or /work/shared/traces."""
    env = os.environ.get("MALLEO_TRACES")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[2] / "shared" / "traces"
    return beside if beside.is_dir() else Path("/work/shared/traces")


def load(path: Path) -> tuple[dict[str, np.ndarray], int]:
    """The core's input columns of a trace (read with the default options) and its size."""
    from malleo.emulator import read_swf

    jobs, meta = read_swf(path)
    cols = {"submit": jobs["submit_time"].to_numpy(np.int64),
            "runtime": jobs["runtime"].to_numpy(np.int64),
            "estimate": jobs["estimate"].to_numpy(np.int64),
            "procs": jobs["procs"].to_numpy(np.int32),
            "user": jobs["user_id"].to_numpy(np.int32),
            "queue": jobs["queue"].to_numpy(np.int32),
            "partition": jobs["partition"].to_numpy(np.int32)}
    return cols, int(meta.procs)


def _sha(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()


def input_digest(cols: dict[str, np.ndarray]) -> str:
    """SHA-256 of the input columns (detects a change of the reader, not of the core)."""
    return _sha(cols[k] for k in sorted(cols))


def cases(n_jobs: int):
    """(label, n, order, backfill, estimate) for one trace of ``n_jobs`` jobs."""
    for order in ORDERS:
        for backfill in BACKFILLS:
            for estimate in ESTIMATES:
                yield f"head{HEAD}:{order}+{backfill}/{estimate}", min(HEAD, n_jobs), \
                    order, backfill, estimate
        for backfill in WHOLE_BACKFILLS:
            yield f"all:{order}+{backfill}/request", n_jobs, order, backfill, "request"


def replay_digest(cols, total, n, order, backfill, estimate) -> str:
    """SHA-256 of the core's schedule of the first ``n`` jobs under that policy."""
    from malleo._core import simulate
    from malleo.policy import Policy

    part = {k: v[:n] for k, v in cols.items()}
    r = simulate(part["submit"], part["runtime"], part["estimate"], part["procs"],
                 part["user"], part["queue"], part["partition"], total,
                 Policy(order=order, backfill=backfill, estimate=estimate))
    return _sha([np.asarray(r["start"], np.int64), np.asarray(r["reservation"], np.int64),
                 np.asarray(r["backfilled"], np.uint8), np.asarray(r["est"], np.int64)])


def compute(trace: Path) -> dict:
    """{"input": digest, "replays": {label: digest}} of one trace."""
    cols, total = load(trace)
    n = len(cols["submit"])
    return {"input": input_digest(cols),
            "replays": {label: replay_digest(cols, total, k, o, b, e)
                        for label, k, o, b, e in cases(n)}}


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    out = {}
    for trace in sorted(traces_dir().glob("*.swf.gz")):
        print(trace.name, file=sys.stderr, flush=True)
        out[trace.name] = compute(trace)
    DIGESTS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
