"""The agent's reconfiguration endpoint for malleable jobs (see docs/malleable.md)."""
from malleo.plugin.reconfig.decide import Decision, decide
from malleo.plugin.reconfig.server import Endpoint, JobView

__all__ = ["Decision", "Endpoint", "JobView", "decide"]
