"""The malleo policy agent: runs the scheduling core on a live Slurm cluster.

- :mod:`~malleo.plugin.agent.state`: live Slurm state -> the inputs of ``malleo._core.plan``.
- :mod:`~malleo.plugin.agent.apply`: decisions -> Slurm job priorities (few ``scontrol`` calls).
- :mod:`~malleo.plugin.agent.loop`: the cycle (period and queue-change triggers, retries with
  backoff, signals, shadow mode).
- :mod:`~malleo.plugin.agent.metrics_http`: the Prometheus text endpoint.
- :mod:`~malleo.plugin.agent.load`: ``malleo slurm replay``, a trace as sleep jobs on a real Slurm.

The sysadmin guide is docs/agent.md.
"""
