"""malleo.plugin: the Slurm integration (backends, the policy agent, the malleable-job client).

Imported lazily by the CLI: nothing here is needed to replay traces.
"""
