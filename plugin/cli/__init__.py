"""The ``malleo slurm`` command group: the Slurm integration's commands (docs/agent.md).

:mod:`~malleo.plugin.cli.slurm` defines the group and its commands; the top-level ``malleo``
group (:mod:`malleo.emulator.cli`) loads it on first use.
"""
