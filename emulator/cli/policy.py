"""``malleo policy``: inspect and create TOML policy files."""
from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import click

from malleo.errors import MalleoError


@click.group(short_help="Show or create policy files (TOML).")
def policy() -> None:
    """Show or create policy files (reference: docs/policy-file.md)."""


@policy.command(short_help="Print the effective policy of FILE, defaults filled in.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
def show(file: str, as_json: bool) -> None:
    """Validate FILE and print the policy it describes with every default filled in
    (as TOML that `malleo replay --config` reads back unchanged).  A [flexible] table
    (workload synthesis, emulator only) is shown too; the live agent refuses it."""
    from malleo.policy_file import dump_policy, load_config, policy_to_dict

    loaded, flexible = load_config(file)
    name = loaded.describe(flexible)
    if as_json:
        click.echo(json.dumps({"name": name, **policy_to_dict(loaded, flexible)}, indent=2))
    else:
        click.echo(f"# effective policy of {file}: {name}")
        click.echo(dump_policy(loaded, flexible=flexible), nl=False)


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
    if (path.exists() or path.is_symlink()) and not force:
        raise click.BadParameter(f"{output} exists (use --force to overwrite)",
                                 param_hint="'-o' / '--output'")
    # Missing folders are created first (mode 0755), then the output checks every command
    # makes run on the complete path.
    created = _make_parents(path.parent)
    check_outputs(files={"--output": output})
    _write_no_follow(path, text)
    for folder in created:
        click.echo(f"created {folder}/ (mode 0755)", err=True)
    click.echo(f"wrote {output}", err=True)


def _make_parents(folder: Path) -> list[Path]:
    """Create the missing folders of ``folder``, outermost first, each with mode 0755
    (whatever the umask); return those created.

    Raises:
        MalleoError: a component exists but is not a folder, or cannot be created.
    """
    missing = []
    probe = folder
    while not probe.exists():
        if probe.is_symlink():  # a dangling link: never create through it
            raise MalleoError(f"-o/--output: {probe} is a symbolic link to nothing; "
                              "create its target or choose another path")
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise MalleoError(f"-o/--output: {probe} is not a folder")
    created = []
    for part in reversed(missing):
        try:
            os.mkdir(part, 0o755)
            os.chmod(part, 0o755, follow_symlinks=False)
        except OSError as exc:
            raise MalleoError(f"-o/--output: cannot create the folder {part}: "
                              f"{exc.strerror}") from None
        created.append(part)
    return created


def _write_no_follow(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (mode 0644 when new), refusing to write through a
    symbolic link at ``path`` itself.

    Raises:
        MalleoError: ``path`` is a link or a folder, or cannot be written.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MalleoError(f"-o/--output: {path} is a symbolic link; "
                              "write to its target instead") from None
        raise MalleoError(f"-o/--output: cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _register() -> None:
    from malleo.emulator.cli.policy_slurm import from_slurm

    policy.add_command(from_slurm)


_register()
