from typing import Callable

import numpy as np
from malleo.policy import Policy
from malleo.policy_codes import CorePolicy

def simulate_malleable(submit: np.ndarray,  # int64[n] seconds, sorted
                       runtime: np.ndarray,  # int64[n] seconds at the trace size
                       estimate: np.ndarray,  # int64[n] seconds (the request)
                       procs: np.ndarray,  # int32[n] trace size p0, 1..total_procs
                       user: np.ndarray,  # int32[n]
                       queue: np.ndarray,  # int32[n]
                       partition: np.ndarray,  # int32[n]
                       total_procs: int,
                       policy: Policy | CorePolicy,
                       kind: np.ndarray,  # uint8[n]: 0 rigid, 1 moldable, 2 malleable
                       min_procs: np.ndarray,  # int32[n]
                       max_procs: np.ndarray,  # int32[n]
                       speedup_a: np.ndarray,  # float64[n]: Amdahl f or Downey A
                       speedup_b: np.ndarray,  # float64[n]: Downey sigma
                       progress: Callable[[int, int, int], object] | None = None,  # (ended, n, now s)
                       progress_events: int = 4096,  # event times per progress call
                       ) -> dict[str, np.ndarray]: ...
