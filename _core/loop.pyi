from typing import Callable

import numpy as np
from malleo.policy import Policy
from malleo.policy_codes import CorePolicy

PROGRESS_EVENTS: int

def simulate(submit: np.ndarray,  # int64[n] seconds, sorted
             runtime: np.ndarray,  # int64[n] seconds
             estimate: np.ndarray,  # int64[n] seconds (the request)
             procs: np.ndarray,  # int32[n] in 1..total_procs
             user: np.ndarray,  # int32[n]
             queue: np.ndarray,  # int32[n]
             partition: np.ndarray,  # int32[n]
             total_procs: int,
             policy: Policy | CorePolicy,
             progress: Callable[[int, int, int], object] | None = None,  # (ended, n, now s)
             progress_events: int = 4096,  # event times per progress call
             ) -> dict[str, np.ndarray]: ...  # start, end, reservation, backfilled, est

COUNTER_NAMES: tuple[str, ...]

def kept_counters() -> list[dict[str, int]] | None: ...  # per tenth of the jobs; None unless
                                                        # built with MALLEO_COUNT=1
