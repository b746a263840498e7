import numpy as np

def group_means(group: np.ndarray,  # const intp_t[::1], each in [0, n_groups)
                values: np.ndarray,  # const double[::1]
                n_groups: int) -> np.ndarray: ...  # float64, one mean per group
