"""An endpoint in its own process under a 64-descriptor limit, for the fd-exhaustion test.

    python reconfig_fd_child.py SOCKET LIMITS_JSON

Serves job 10 (root's, malleable, on 2 nodes: answered expand to 3) through a scripted Slurm
until its standard input closes; logs to stderr; prints "ready" once listening.
"""
import json
import logging
import resource
import sys

from malleo.plugin.reconfig import Decision, Endpoint
from reconfig_clients import ScriptedSlurm, json_record

resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format="%(asctime)s %(levelname)s %(message)s")


def decide(backend, job_id, bounds, nodes, policy):
    return Decision("expand", min(bounds.max_nodes, nodes + 1), "test")


with Endpoint(sys.argv[1], ScriptedSlurm({10: json_record(10, 0, "root")}), decide=decide,
              **json.loads(sys.argv[2])):
    print("ready", flush=True)
    sys.stdin.read()
