"""``malleo policy``: inspect and create TOML policy files."""
from __future__ import annotations

import json
from pathlib import Path

import click


@click.group(short_help="Show or create policy files (TOML).")
def policy() -> None:
    """Show or create policy files (reference: docs/policy-file.md)."""


@policy.command(short_help="Print the effective policy of FILE, defaults filled in.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
def show(file: str, as_json: bool) -> None:
    """Validate FILE and print the policy it describes with every default filled in
    (as TOML that `malleo replay --config` reads back unchanged)."""
    from malleo.policy_file import dump_policy, load_policy, policy_to_dict

    loaded = load_policy(file)
    if as_json:
        click.echo(json.dumps({"name": loaded.describe(), **policy_to_dict(loaded)}, indent=2))
    else:
        click.echo(f"# effective policy of {file}: {loaded.describe()}")
        click.echo(dump_policy(loaded), nl=False)


@policy.command(short_help="Write a commented default policy file.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write to FILE instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def init(output: str | None, force: bool) -> None:
    """Write the default policy (FCFS, EASY backfill) as a TOML file with a comment on
    every key; edit it and pass it to `malleo replay --config`."""
    from malleo.policy import Policy
    from malleo.policy_file import dump_policy

    from malleo.emulator.outputs import check_outputs

    text = dump_policy(Policy(), comments=True)
    if output is None:
        click.echo(text, nl=False)
        return
    path = Path(output)
    if path.exists() and not force:
        raise click.BadParameter(f"{output} exists (use --force to overwrite)",
                                 param_hint="'-o' / '--output'")
    check_outputs(files={"--output": output})
    path.write_text(text, encoding="utf-8")
    click.echo(f"wrote {output}", err=True)


def _register() -> None:
    from malleo.emulator.cli.policy_slurm import from_slurm

    policy.add_command(from_slurm)


_register()
