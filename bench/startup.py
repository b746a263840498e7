"""Start-up cost of the ``malleo`` command (figures only, no assertions; issue 16).

For ``malleo --version`` and a 10-job replay (the first 10 jobs of the embedded default
workload, ``malleo replay --jobs 0:10 --quiet``), each in fresh processes started from a
temporary directory (so the installed malleo runs, whatever the current directory):

- wall-clock seconds, best and median of N runs (``--repeat``, default 5), and the best CPU
  seconds (user + system, steadier than wall on a shared machine), against a bare
  ``python -c pass`` (the interpreter's own start-up) and ``python -c "import numpy"`` (the
  floor of any command that computes);
- ``python -X importtime``: the total import time and the heaviest top-level packages by
  cumulative import time, and whether pandas, matplotlib and the Slurm plugin were loaded.

    python bench/startup.py [--repeat N]

Each command runs once unmeasured first, and every child runs without
``PYTHONDONTWRITEBYTECODE``: with it set, every module is compiled from source at each start
(about 0.1 s more), which is not what an installed malleo does (pip writes the ``.pyc``
files at install time).

Runs from any directory (it never imports the checkout's malleo itself).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import numpy'": ["-c", "import numpy"],
    "malleo --version": ["-m", "malleo", "--version"],
    "malleo replay (10 jobs)": ["-m", "malleo", "replay", "--jobs", "0:10", "--quiet"],
}
WATCH = ("pandas", "matplotlib", "malleo.plugin", "numpy", "click")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(argv: list[str], cwd: str, repeat: int) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds) of ``repeat`` runs, after one unmeasured run."""
    subprocess.run([sys.executable, *argv], cwd=cwd, check=True, capture_output=True,
                   env=_env())
    times, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run([sys.executable, *argv], cwd=cwd, check=True, capture_output=True,
                       env=_env())
        times.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return times, cpu


def import_profile(argv: list[str], cwd: str) -> tuple[float, list[tuple[str, float]], set[str]]:
    """(total import seconds, heaviest top-level packages, watched packages loaded)."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, check=True,
                         capture_output=True, text=True, env=_env()).stderr
    tops: dict[str, float] = {}
    loaded: set[str] = set()
    for line in err.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not match:
            continue
        cumulative, indent, name = int(match.group(2)), len(match.group(3)), match.group(4)
        loaded.update(w for w in WATCH if name == w or name.startswith(w + "."))
        if indent == 1:   # imported at the top level of the program
            tops[name] = tops.get(name, 0.0) + cumulative / 1e6
    heaviest = sorted(tops.items(), key=lambda kv: -kv[1])
    return sum(tops.values()), heaviest[:6], loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="malleo-startup-") as cwd:
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            print("(PYTHONDONTWRITEBYTECODE is set here: unset for the measured commands)")
        print(f"{'command':<26} {'best s':>7} {'median s':>9} {'best CPU s':>11} "
              f"{'imports s':>10}  loaded; heaviest imports (s)")
        for label, argv in COMMANDS.items():
            times, cpu = wall(argv, cwd, args.repeat)
            total, heaviest, loaded = import_profile(argv, cwd)
            print(f"{label:<26} {min(times):>7.3f} {statistics.median(times):>9.3f} "
                  f"{min(cpu):>11.3f} {total:>10.3f}  "
                  f"{','.join(sorted(loaded)) or '-'}; "
                  + ", ".join(f"{name} {seconds:.3f}" for name, seconds in heaviest[:4]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
