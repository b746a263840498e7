"""malleo: an HPC batch scheduler core with an SWF replay emulator and a Slurm policy agent.

Subpackages:
    malleo._core     the compiled scheduling core (``plan`` and the event loop)
    malleo.emulator  trace I/O, workload models, the replay driver, metrics, the CLI
    malleo.plugin    the Slurm integration (backends, the policy agent)
"""
from importlib.metadata import PackageNotFoundError, version as _dist_version

try:
    __version__ = _dist_version("malleo")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
