"""``python -m malleo.plugin.reconfig --socket PATH [--slurm-conf FILE] [--config POLICY.toml]``"""
import argparse

from malleo.plugin.malleable.protocol import DEFAULT_SOCKET
from malleo.plugin.reconfig.serve import serve_forever

parser = argparse.ArgumentParser(prog="python -m malleo.plugin.reconfig",
                                 description="Serve malleable jobs' reconfiguration requests.")
parser.add_argument("--socket", default=DEFAULT_SOCKET, help=f"socket path (default {DEFAULT_SOCKET})")
parser.add_argument("--slurm-conf", default=None, help="slurm.conf (default: $SLURM_CONF)")
parser.add_argument("--config", default=None, help="the agent's policy file (queue order)")
args = parser.parse_args()
policy = None
if args.config:
    from malleo.plugin.agent.loop import load_agent_policy
    policy = load_agent_policy(args.config)
serve_forever(args.socket, slurm_conf=args.slurm_conf, policy=policy)
