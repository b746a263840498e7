"""Run every bench/ script in turn (``make bench``); each prints its own figures.

Benchmarks read the real traces in ../shared/traces in place. They report figures
(jobs/s, latency, peak RSS); they assert nothing about speed.
"""
import argparse
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    failed = []
    for script in sorted(HERE.glob("*.py")):
        if script.name in {"run_all.py", "__init__.py"} or script.name.startswith("_"):
            continue
        print(f"=== {script.name}", flush=True)
        if subprocess.call([sys.executable, str(script)]) != 0:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
