"""Run slurm-docker/compose.yaml's services with plain podman (no compose tool, no Docker).

The subset of the Compose specification that compose.yaml uses, translated to ``podman run``:
``image``, ``hostname``, ``init``, ``command``, ``environment``, ``volumes`` (named volumes),
``depends_on`` (start order), ``profiles``. Not translated, and said so on stderr: ``ports``
(publishing on the host's loopback could collide with other users of the machine: reach a port
with ``podman exec``), ``healthcheck`` (podman-cluster.sh waits for the cluster itself) and
``build`` (podman-cluster.sh builds the image).

Names resolve without a DNS plugin: the project's network is created ``--internal`` (no route
to any address outside it), every container gets a fixed address in it (the subnet's host
number 10 upwards, in start order) and an ``--add-host`` entry for every service name and
hostname of the project. All the project's objects carry the label ``malleo.compose=PROJECT``,
so ``down`` finds every one of them even after a failed ``up``.

    python3 compose_podman.py up   COMPOSE [--profile P]... [--project NAME]
    python3 compose_podman.py down COMPOSE [--project NAME]
    python3 compose_podman.py plan COMPOSE [--profile P]... [--project NAME] [--subnet CIDR]

``plan`` prints the podman commands ``up`` would run (one JSON array a line), starting nothing.
Exit status: 0 done, 1 a podman command failed, 2 a bad compose file or usage.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import yaml

LABEL = "malleo.compose"
NOT_TRANSLATED = ("ports", "healthcheck")


class ComposeError(Exception):
    """compose.yaml uses something this translator does not handle (exit 2)."""


def load(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ComposeError(f"{path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict):
        raise ComposeError(f"{path}: no 'services' mapping")
    return doc


def project_name(doc: dict, override: str | None) -> str:
    return override or doc.get("name") or "malleo-slurm"


def active_services(doc: dict, profiles: list[str]) -> list[str]:
    """Service names enabled by PROFILES, dependencies first (then file order)."""
    services = doc["services"]
    enabled = [name for name, svc in services.items()
               if not svc.get("profiles") or set(svc["profiles"]) & set(profiles)]
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise ComposeError(f"services: depends_on cycle {' -> '.join(path + (name,))}")
        deps = services[name].get("depends_on") or []
        for dep in (deps if isinstance(deps, list) else list(deps)):
            if dep not in services:
                raise ComposeError(f"services.{name}.depends_on: no service {dep!r}")
            if dep in enabled:           # a dependency behind an inactive profile is optional
                visit(dep, path + (name,))
        order.append(name)

    for name in enabled:
        visit(name, ())
    return order


def _environment(svc: dict, where: str) -> list[str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        return [str(e) for e in env]
    if not isinstance(env, dict):
        raise ComposeError(f"{where}.environment: expected a mapping or a list")
    return [f"{k}={'' if v is None else v}" for k, v in env.items()]


def _volumes(svc: dict, project: str, named: set[str], where: str) -> list[str]:
    out = []
    for spec in svc.get("volumes") or []:
        if not isinstance(spec, str) or ":" not in spec:
            raise ComposeError(f"{where}.volumes: {spec!r}: only 'NAME:PATH' is handled")
        source, rest = spec.split(":", 1)
        if source not in named:
            raise ComposeError(f"{where}.volumes: {source!r} is not a named volume of the file")
        out.append(f"{project}_{source}:{rest}")
    return out


def plan(doc: dict, profiles: list[str], project: str, subnet: str) -> list[list[str]]:
    """The podman commands that start the active services on SUBNET, in order."""
    net = ipaddress.ip_network(subnet)
    names = active_services(doc, profiles)
    if len(names) + 10 >= net.num_addresses - 1:
        raise ComposeError(f"subnet {subnet} is too small for {len(names)} services")
    address = {name: str(net.network_address + 10 + i) for i, name in enumerate(names)}
    hosts = []
    for name in names:
        svc = doc["services"][name]
        for alias in dict.fromkeys([name, svc.get("hostname", name)]):
            hosts += ["--add-host", f"{alias}:{address[name]}"]
    named = set(doc.get("volumes") or {})
    network = f"{project}_default"
    label = f"{LABEL}={project}"
    cmds = [["podman", "volume", "create", "--label", label, f"{project}_{v}"] for v in sorted(named)]
    for name in names:
        svc, where = doc["services"][name], f"services.{name}"
        if "image" not in svc:
            raise ComposeError(f"{where}: no image (build it first and name it)")
        cmd = ["podman", "run", "--detach", "--name", f"{project}_{name}", "--label", label,
               "--network", network, "--ip", address[name],
               "--hostname", str(svc.get("hostname", name)), *hosts]
        if svc.get("init"):
            cmd.append("--init")
        for env in _environment(svc, where):
            cmd += ["--env", env]
        for vol in _volumes(svc, project, named, where):
            cmd += ["--volume", vol]
        command = svc.get("command") or []
        if isinstance(command, str):
            raise ComposeError(f"{where}.command: give it as a list")
        cmds.append(cmd + [str(svc["image"]), *map(str, command)])
    return cmds


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"compose_podman: {' '.join(cmd[:3])} ...: exit {proc.returncode}: "
              f"{proc.stderr.strip()}", file=sys.stderr)
        raise SystemExit(1)


def up(doc: dict, profiles: list[str], project: str) -> None:
    for name in active_services(doc, profiles):
        skipped = [k for k in NOT_TRANSLATED if k in doc["services"][name]]
        if skipped:
            print(f"compose_podman: services.{name}: {', '.join(skipped)} not translated",
                  file=sys.stderr)
    network = f"{project}_default"
    _run(["podman", "network", "create", "--internal", "--disable-dns",
          "--label", f"{LABEL}={project}", network])
    info = json.loads(subprocess.run(["podman", "network", "inspect", network],
                                     capture_output=True, text=True, check=True).stdout)
    subnet = info[0]["subnets"][0]["subnet"]
    for cmd in plan(doc, profiles, project, subnet):
        _run(cmd)
        if cmd[1] == "run":
            print(f"compose_podman: started {cmd[cmd.index('--name') + 1]} "
                  f"({cmd[cmd.index('--ip') + 1]})", file=sys.stderr)


def down(project: str) -> None:
    """Remove every container, network and volume labelled for PROJECT (missing ones are fine)."""
    label = f"label={LABEL}={project}"
    for kind in ("container", "network", "volume"):
        listed = subprocess.run(["podman", kind, "ls", "-q", "--filter", label]
                                + (["--all"] if kind == "container" else []),
                                capture_output=True, text=True)
        ids = listed.stdout.split()
        if ids:
            extra = ["--force", "--time", "10"] if kind == "container" else ["--force"]
            subprocess.run(["podman", kind, "rm", *extra, *ids], capture_output=True, text=True)
            print(f"compose_podman: removed {len(ids)} {kind}(s) of {project}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down", "plan"))
    parser.add_argument("compose", type=Path)
    parser.add_argument("--profile", action="append", default=[])
    parser.add_argument("--project", default=None)
    parser.add_argument("--subnet", default="10.89.0.0/24", help="for plan only")
    args = parser.parse_args(argv)
    try:
        doc = load(args.compose)
        project = project_name(doc, args.project)
        if args.command == "plan":
            for cmd in plan(doc, args.profile, project, args.subnet):
                print(json.dumps(cmd))
        elif args.command == "up":
            up(doc, args.profile, project)
        else:
            down(project)
    except ComposeError as exc:
        print(f"compose_podman: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
