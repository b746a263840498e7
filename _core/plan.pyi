from typing import Any, Mapping
import numpy as np
from malleo.policy import Policy
from malleo.policy_codes import CorePolicy

class PlanState:
    history: dict[int, tuple[int, int, int]]
    usage: dict[int, float]
    accrued: dict[int, int]
    total_usage: float
    users_at_calc: int
    seen: set[int]
    calc_time: int
    recent: dict[int, tuple[int, ...]]
    timeline: dict[int, tuple[tuple[int, int], ...]]   # user -> ((end, runtime), ...), s
    horizon: int                                       # seconds, -1 before the first plan
    def __init__(self) -> None: ...
    def copy(self) -> PlanState: ...
    def record_completion(self, user: int, procs: int, start: int, end: int) -> None: ...
    def runs(self, user: int) -> tuple[int, ...]: ...
    def runs_by(self, user: int, submit: int) -> tuple[int, ...]: ...
    def predict(self, user: int, request: int, submit: int, runs: int = ...,
                cold: str = ...) -> int: ...
    def set_horizon(self, horizon: int) -> None: ...
    def fairshare(self, user: int) -> float: ...

class Decisions:
    start: np.ndarray        # int64 pending indices, start order
    reservation: np.ndarray  # int64 per pending job, -1 if none
    order: np.ndarray        # int64 pending indices, queue order
    backfilled: np.ndarray   # uint8 per pending job
    est: np.ndarray          # int64 per pending job, seconds
    priority: np.ndarray     # float64 per pending job (NaN unless multifactor)
    resize: np.ndarray       # int64[k, 2]: (running index, new size) rows
    state: PlanState
    start_procs: np.ndarray  # int64 per started job: size to start it at

def plan(now: int, cluster: Any, running: Mapping[str, Any], pending: Mapping[str, Any],
         policy: Policy | CorePolicy, state: PlanState | None = None) -> Decisions: ...
