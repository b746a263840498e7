"""The malleo policy agent: runs the scheduling core on a live Slurm cluster.

- :mod:`~malleo.plugin.agent.state`: live Slurm state -> the inputs of ``malleo._core.plan``.
- :mod:`~malleo.plugin.agent.live_plan`: plan from the live state, the one service behind the
  agent's cycle, ``malleo slurm status`` and the reconfiguration endpoint; which component acts
  on each field of ``Decisions``.
- :mod:`~malleo.plugin.agent.apply`: decisions -> Slurm job priorities (few ``scontrol`` calls).
- :mod:`~malleo.plugin.agent.loop`: the cycle (period and queue-change triggers, retries with
  backoff, signals, shadow mode, the periodic summary).
- :mod:`~malleo.plugin.agent.status_view`, :mod:`~malleo.plugin.agent.status_file`: the status
  document and the file the agent writes it to (read by ``slurm status`` and ``slurm diag``).
- :mod:`~malleo.plugin.agent.priority_factors`: the sprio-like multifactor breakdown.
- :mod:`~malleo.plugin.agent.metrics_http`: the Prometheus text endpoint.
- :mod:`~malleo.plugin.agent.logs`: structured logs (one setup for every long-running command).

The load generator of ``malleo slurm replay`` is :mod:`malleo.plugin.slurm_replay`; the
``malleo slurm`` commands are in :mod:`malleo.plugin.cli`.  The sysadmin guide is docs/agent.md.
"""
