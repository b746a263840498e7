"""The ``malleo`` command line (click). One module per command group, registered here.

Every command turns a :class:`malleo.errors.MalleoError` into ``malleo: error: ...`` on
stderr and exit status 2 (:class:`MalleoGroup` does it once for all commands).
"""
import click

import malleo
from malleo.errors import MalleoError


class MalleoGroup(click.Group):
    """A click group whose commands exit 2 with a one-line message on bad input."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except MalleoError as exc:
            raise click.exceptions.Exit(_report(exc)) from None


def _report(exc: MalleoError) -> int:
    click.echo(f"malleo: error: {exc}", err=True)
    return exc.exit_code


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from malleo._core import BUILD_INFO

    click.echo(f"malleo {malleo.__version__}, {BUILD_INFO}")
    ctx.exit()


@click.group(cls=MalleoGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and which core build runs.")
def cli() -> None:
    """malleo: replay SWF workloads through an HPC scheduler core, compare and tune policies,
    and run the same core as a Slurm scheduling policy."""


def main() -> None:
    """Console entry point."""
    cli.main(prog_name="malleo")
