"""The one way tests run the ``malleo`` command: click's CliRunner with
``catch_exceptions=False``, so a traceback fails the test instead of hiding in
``result.exception`` (Hatch's habit).  A refusal is ``SystemExit(2)`` and still gives a
result with ``exit_code == 2``.

    from cli_runner import invoke
    result = invoke("replay", trace, "--json")
    assert result.exit_code == 0, result.output

The ``malleo_cli`` fixture (conftest.py) returns :func:`invoke`.
"""
from __future__ import annotations

from click.testing import CliRunner, Result


class MalleoRunner(CliRunner):
    """A CliRunner whose ``invoke`` never catches exceptions (unless told)."""

    def invoke(self, *args, **kwargs) -> Result:
        kwargs.setdefault("catch_exceptions", False)
        return super().invoke(*args, **kwargs)


def invoke(*args, **kwargs) -> Result:
    """Run ``malleo ARGS...`` (each argument str()-ed) in-process; keyword arguments go to
    :meth:`click.testing.CliRunner.invoke` (``input``, ``env``, ...)."""
    from malleo.emulator.cli import cli

    return MalleoRunner().invoke(cli, [str(a) for a in args], **kwargs)
