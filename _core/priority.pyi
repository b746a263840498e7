import numpy as np
from malleo.policy import Multifactor
from malleo.policy_codes import CorePolicy

def queue_keys(code: int, now: int, submit: np.ndarray,  # int64[n] seconds
               est: np.ndarray,  # int64[n] seconds
               procs: np.ndarray,  # int32[n]
               ) -> np.ndarray: ...  # float64[n]
def multifactor_priority(multifactor: Multifactor, now: int, submit: int, procs: int,
                         total_procs: int, fairshare: float, qp: float = 0.0) -> float: ...
def queue_partition_term(queue: np.ndarray, partition: np.ndarray,
                         multifactor: Multifactor | CorePolicy) -> np.ndarray: ...  # float64[n]
