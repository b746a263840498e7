"""slurm-docker/compose_podman.py: compose.yaml's services as podman commands (no podman needed).

The translation is what `make test-containers` (slurm-docker/podman-cluster.sh) starts the
cluster with; these tests check it on the project's compose.yaml and on broken files:
profiles select services, depends_on orders them, every container resolves every service by
name through a fixed address on the project's network, and what is not translated (ports) is
left out rather than half-done.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

DOCKER = Path(__file__).resolve().parent.parent / "slurm-docker"
sys.path.insert(0, str(DOCKER))
import compose_podman  # noqa: E402

COMPOSE = DOCKER / "compose.yaml"


def _runs(cmds):
    """{service: argv} of the `podman run` commands, in order."""
    out = {}
    for cmd in cmds:
        if cmd[1] == "run":
            out[cmd[cmd.index("--name") + 1].split("_", 1)[1]] = cmd
    return out


def test_accounting_profile_starts_slurmdbd_first_then_controller_then_nodes():
    doc = compose_podman.load(COMPOSE)
    cmds = compose_podman.plan(doc, ["accounting"], "p", "10.89.7.0/24")
    assert cmds[0] == ["podman", "volume", "create", "--label", "malleo.compose=p", "p_shared"]
    runs = _runs(cmds)
    assert list(runs) == ["slurmdbd", "controller", "c1", "c2", "c3"]
    ctl = runs["controller"]
    # image, then the compose command, at the end; the image's entrypoint is kept
    assert ctl[-2:] == ["malleo-slurm:latest", "controller"]
    assert runs["c2"][-3:] == ["malleo-slurm:latest", "node", "c2"]
    assert "--init" in ctl and ctl[ctl.index("--hostname") + 1] == "controller"
    assert "MALLEO_COMPUTE=c[1-3]" in ctl
    assert ctl[ctl.index("--volume") + 1] == "p_shared:/shared"
    assert ctl[ctl.index("--network") + 1] == "p_default"


def test_without_the_profile_there_is_no_slurmdbd():
    doc = compose_podman.load(COMPOSE)
    runs = _runs(compose_podman.plan(doc, [], "p", "10.89.7.0/24"))
    assert list(runs) == ["controller", "c1", "c2", "c3"]
    # the controller's entrypoint looks the host slurmdbd up: it must not resolve now
    assert not any(a.startswith("slurmdbd:") for a in runs["controller"])


def test_every_container_resolves_every_service_at_its_fixed_address():
    doc = compose_podman.load(COMPOSE)
    runs = _runs(compose_podman.plan(doc, ["accounting"], "p", "10.89.7.0/24"))
    addresses = {name: cmd[cmd.index("--ip") + 1] for name, cmd in runs.items()}
    assert len(set(addresses.values())) == len(addresses)
    assert all(a.startswith("10.89.7.") for a in addresses.values())
    for cmd in runs.values():
        hosts = dict(cmd[i + 1].split(":") for i, a in enumerate(cmd) if a == "--add-host")
        assert hosts == addresses


def test_ports_are_not_published_on_the_host():
    doc = compose_podman.load(COMPOSE)
    assert doc["services"]["controller"]["ports"]          # compose.yaml does publish one
    for cmd in compose_podman.plan(doc, ["accounting"], "p", "10.89.7.0/24"):
        assert "--publish" not in cmd and "-p" not in cmd


def test_plan_command_prints_json_lines():
    proc = subprocess.run([sys.executable, str(DOCKER / "compose_podman.py"), "plan",
                           str(COMPOSE), "--project", "x"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cmds = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [c[1] for c in cmds] == ["volume", "run", "run", "run", "run"]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["services"]["controller"].update(depends_on=["c1"]), "depends_on cycle"),
    (lambda d: d["services"]["c1"].update(depends_on=["nosuch"]), "no service 'nosuch'"),
    (lambda d: d["services"]["c1"].update(volumes=["/host:/shared"]), "not a named volume"),
    (lambda d: d["services"]["c1"].pop("image"), "services.c1: no image"),
    (lambda d: d["services"]["c1"].update(command="node c1"), "services.c1.command"),
])
def test_a_file_outside_the_handled_subset_is_refused_with_exit_2(tmp_path, mutate, message):
    doc = yaml.safe_load(COMPOSE.read_text())
    mutate(doc)
    bad = tmp_path / "compose.yaml"
    bad.write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, str(DOCKER / "compose_podman.py"), "plan", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
