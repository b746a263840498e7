"""``malleo tune``: search the policy space on a trace, honestly (train/test time split).

Modules: :mod:`space` (the space file), :mod:`objective` (scores), :mod:`evaluate` (one
trial, the time split), :mod:`search` (grid, random, optuna TPE), :mod:`results` (the
resumable results CSV), :mod:`runner` (local process pool, ranking), :mod:`slurm` (a
Slurm job array through submitit).  docs/tuning.md is the guide.
"""
