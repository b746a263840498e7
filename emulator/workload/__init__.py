"""Synthetic workloads: the Lublin-Feitelson model with Tsafrir user estimates.

``generate_lublin(jobs, procs, seed, **params)`` returns an SWF job table (see
docs/workload-model.md); ``malleo trace generate`` writes one to a file.
"""
from malleo.emulator.workload.estimates import (POPULARITY_RANK, draw_estimates,
                                                 estimate_popularity)
from malleo.emulator.workload.lublin import (COMBINED_PARAMS, INTERACTIVE_PARAMS,
                                             LublinParams, daily_cycle_weights,
                                             generate_lublin, size_bounds)

__all__ = [
    "COMBINED_PARAMS", "INTERACTIVE_PARAMS", "LublinParams", "POPULARITY_RANK",
    "daily_cycle_weights", "draw_estimates", "estimate_popularity", "generate_lublin",
    "size_bounds",
]
