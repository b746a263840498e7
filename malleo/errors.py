"""Errors that mean "bad input", shared by the emulator, the plugin and the CLI.

The CLI turns every :class:`MalleoError` into one line on stderr and exit status 2,
never a traceback.  Raise them with a message that names what is wrong and where
(``FILE:LINE: field N (name): ...`` for traces, the option name for the CLI).
"""


class MalleoError(Exception):
    """Bad input the user can fix; the CLI prints it and exits with status 2."""

    exit_code = 2


class TraceError(MalleoError):
    """A trace file that cannot be read: ``FILE:LINE: field N (name): what is wrong``."""


class PolicyError(MalleoError):
    """An invalid policy (option or policy file): names the option or ``FILE:LINE: key``."""
