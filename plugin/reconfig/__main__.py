"""``python -m malleo.plugin.reconfig --socket PATH [--slurm-conf FILE] [--config POLICY.toml]
[--request-timeout S] [--max-connections N] [--max-per-uid N] [--workers N]``"""
import argparse
import sys

from malleo.plugin.malleable.protocol import DEFAULT_SOCKET
from malleo.plugin.reconfig.serve import serve_forever


def _positive(kind):
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not 0 < value < 10**6:
            raise argparse.ArgumentTypeError(f"{text!r}: need 0 < value < 1000000")
        return value
    return convert


parser = argparse.ArgumentParser(prog="python -m malleo.plugin.reconfig",
                                 description="Serve malleable jobs' reconfiguration requests.")
parser.add_argument("--socket", default=DEFAULT_SOCKET, help=f"socket path (default {DEFAULT_SOCKET})")
parser.add_argument("--slurm-conf", default=None, help="slurm.conf (default: $SLURM_CONF)")
parser.add_argument("--config", default=None, help="the agent's policy file (queue order)")
parser.add_argument("--request-timeout", type=_positive(float), default=5.0,
                    help="seconds a client has to send its whole request (default 5)")
parser.add_argument("--max-connections", type=_positive(int), default=128,
                    help="connections held at once (default 128)")
parser.add_argument("--max-per-uid", type=_positive(int), default=32,
                    help="of which from one uid; more get a busy answer (default 32)")
parser.add_argument("--workers", type=_positive(int), default=4,
                    help="threads answering requests (default 4)")
args = parser.parse_args()
policy = None
if args.config:
    from malleo.plugin.agent.loop import load_agent_policy
    policy = load_agent_policy(args.config)
try:
    serve_forever(args.socket, slurm_conf=args.slurm_conf, policy=policy,
                  timeout=args.request_timeout, max_connections=args.max_connections,
                  max_per_uid=args.max_per_uid, workers=args.workers)
except OSError as exc:
    print(f"python -m malleo.plugin.reconfig: --socket {args.socket}: {exc.strerror or exc}",
          file=sys.stderr)
    sys.exit(2)
