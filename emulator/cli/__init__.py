"""The ``malleo`` command line (click). One module per command group (Hatch layout).

Command modules are imported on first use (``COMMANDS`` maps a command name to the module
and attribute that define it), so ``malleo --help`` stays fast and the Slurm plugin is only
imported by the commands that need it.  Every command turns a
:class:`malleo.errors.MalleoError` into ``malleo: error: ...`` on stderr and exit status 2.
"""
import contextlib
import importlib
import importlib.util
import os
import sys

import click

import malleo
from malleo.errors import MalleoError

COMMANDS: dict[str, str] = {
    "trace": "malleo.emulator.cli.trace:trace",
    "replay": "malleo.emulator.cli.replay:replay",
    "compare": "malleo.emulator.cli.compare:compare",
    "policy": "malleo.emulator.cli.policy:policy",
    "tune": "malleo.emulator.cli.tune:tune",
    "report": "malleo.emulator.cli.report:report",
    "slurm": "malleo.plugin.cli.slurm:slurm",
}
"""Command name -> ``module:attribute``; names whose module is absent are not listed."""


@contextlib.contextmanager
def one_blas_thread():
    """While a command's module loads (numpy with it): ``OPENBLAS_NUM_THREADS=1`` unless
    set, then the environment as it was, so no child process (sbatch, an MPI launch)
    inherits it.  numpy's OpenBLAS reads it once, when numpy is first imported, and
    otherwise starts a thread per core there: 40-80 ms of wall and CPU time on a loaded
    2-core machine, most of a small command's start-up, for linear algebra malleo never
    does (issue 16: start-up)."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


class MalleoGroup(click.Group):
    """The top-level group: lazy command loading and clean exits on bad input."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        present = [name for name, target in COMMANDS.items()
                   if importlib.util.find_spec(target.split(":")[0]) is not None]
        return sorted(set(present) | set(super().list_commands(ctx)))

    def get_command(self, ctx: click.Context, name: str):
        target = COMMANDS.get(name)
        if target is None:
            return super().get_command(ctx, name)
        module, attr = target.split(":")
        if importlib.util.find_spec(module) is None:
            return None
        with one_blas_thread():
            return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except MalleoError as exc:
            click.echo(f"malleo: error: {exc}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from None


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from malleo._core._buildinfo import BUILD_INFO

    click.echo(f"malleo {malleo.__version__}, {BUILD_INFO}")
    ctx.exit()


@click.group(cls=MalleoGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and which core build runs.")
def cli() -> None:
    """malleo: replay SWF workloads through an HPC scheduler core, compare and tune policies,
    and run the same core as a Slurm scheduling policy."""
    from malleo.emulator.malloc_tuning import map_large_blocks

    map_large_blocks()      # freed job-sized arrays go back to the system (issue 16)


def main() -> None:
    """Console entry point."""
    cli.main(prog_name="malleo")
