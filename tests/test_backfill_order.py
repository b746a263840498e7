"""The backfill-candidate order (``backfill_order``, issue 18 point 1): ``queue`` or ``sjf``
(SJBF), on hand-made cases whose schedule is worked out below, through the core and the
oracle, and through the policy file and the command line.  The generated cases are in
test_differential.py, test_properties.py and test_core_plan.py.  Times are seconds, sizes
processors.
"""
import json

import pytest

from cli_runner import invoke
from helpers import core_run, oracle_run
from strategies import Workload

from malleo.errors import PolicyError
from malleo.policy import Policy
from malleo.policy_file import dump_policy, loads_policy

RUNNERS = {"core": core_run, "oracle": oracle_run}

EASY_CASE = Workload(submit=[0, 1, 1, 1], runtime=[100, 10, 90, 10], estimate=[100, 10, 90, 10],
                     procs=[2, 4, 2, 2], user=[0, 0, 0, 0], total_procs=4)
"""P=4.  Job 0 holds 2 processors until 100.  At t=1 job 1 (4 processors) is the head,
reserved at the shadow time 100 with no extra processors; jobs 2 (90 s) and 3 (10 s), 2
processors each, may backfill if they end by 100.  Queue order tries job 2 first (it
starts, job 3 no longer fits and waits for the head: 110); SJBF tries job 3 first (it
starts at 1; job 2, tried after, no longer fits, and at 11 it would end past the shadow
time: 110).  The head starts at its reservation, 100, either way."""


@pytest.mark.parametrize("runner", sorted(RUNNERS))
@pytest.mark.parametrize("backfill", ["easy", "slurm"])
def test_sjbf_tries_the_shortest_candidate_first(runner, backfill):
    knobs = {"bf_resolution": 1} if backfill == "slurm" else {}
    run = RUNNERS[runner]
    queue = run(EASY_CASE, "fcfs", backfill, "request", **knobs)
    sjbf = run(EASY_CASE, "fcfs", backfill, "request", backfill_order="sjf", **knobs)
    assert queue["start"] == [0, 100, 1, 110]
    assert sjbf["start"] == [0, 100, 110, 1]
    assert queue["reservation"][1] == sjbf["reservation"][1] == 100
    # backfilled keeps its meaning: started while a job ahead in queue order waited
    assert sjbf["backfilled"] == [0, 0, 0, 1] and queue["backfilled"] == [0, 0, 1, 0]


CONSERVATIVE_CASE = Workload(submit=[0, 1, 1], runtime=[10, 50, 5], estimate=[10, 50, 5],
                             procs=[2, 2, 1], user=[0, 0, 0], total_procs=2)
"""P=2.  Job 0 holds both processors until 10.  At t=1 jobs 1 (2 processors, 50 s) and 2
(1 processor, 5 s) arrive without a reservation.  Queue order plans job 1 at 10 (to 60)
and job 2 after it at 60; SJBF plans job 2 first, at 10 (to 15), then job 1 at 15."""


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_sjbf_plans_jobs_without_a_reservation_shortest_first(runner):
    run = RUNNERS[runner]
    queue = run(CONSERVATIVE_CASE, "fcfs", "conservative", "request")
    sjbf = run(CONSERVATIVE_CASE, "fcfs", "conservative", "request", backfill_order="sjf")
    assert queue["start"] == [0, 10, 60] and queue["reservation"] == [0, 10, 60]
    assert sjbf["start"] == [0, 15, 10] and sjbf["reservation"] == [0, 15, 10]


SLURM_BUDGET_CASE = Workload(submit=[0, 1, 1, 1], runtime=[100, 10, 500, 20],
                             estimate=[100, 10, 500, 20], procs=[4, 4, 4, 4], user=[0] * 4,
                             total_procs=4)
"""P=4, every job 4 processors.  At t=1 job 1 is the head and jobs 2 (500 s) and 3 (20 s)
are blocked behind it; bf_max_job_test = 2: the head and one more get a reservation.  Queue
order gives the second to job 2 (the next in priority order: 110) and job 3 gets its first
one only at t=100, behind job 2 (610); SJBF gives it to job 3 (the shortest: 110 at t=1),
and job 2 gets its first one at t=100, as the head (110): docs/scheduling-semantics.md,
what bf_max_job_test means with sjf."""


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_sjbf_gives_the_slurm_reservation_budget_to_the_shortest(runner):
    knobs = {"bf_max_job_test": 2, "bf_resolution": 1}
    run = RUNNERS[runner]
    queue = run(SLURM_BUDGET_CASE, "fcfs", "slurm", "request", **knobs)
    sjbf = run(SLURM_BUDGET_CASE, "fcfs", "slurm", "request", backfill_order="sjf", **knobs)
    assert queue["reservation"] == [-1, 100, 110, 610]
    assert sjbf["reservation"] == [-1, 100, 110, 110]


def test_oracle_refuses_an_unknown_backfill_order():
    with pytest.raises(ValueError, match="backfill order"):
        oracle_run(EASY_CASE, "fcfs", "easy", "request", backfill_order="ljf")


def test_policy_file_and_describe():
    policy = loads_policy('backfill = "easy"\nbackfill_order = "sjf"\n')
    assert policy.backfill_order == "sjf" and policy.core.backfill_order == 1
    assert Policy().core.backfill_order == 0
    assert policy.describe() == "fcfs+easy+sjbf"
    assert loads_policy(dump_policy(policy)) == policy
    with pytest.raises(PolicyError, match=r"site.toml:2: backfill_order: must be one of "
                                          r"queue, sjf, got 'shortest'"):
        loads_policy('backfill = "easy"\nbackfill_order = "shortest"\n', "site.toml")


def test_command_line_option(tmp_path):
    short = ["--jobs", "0:300", "--quiet", "--json"]
    queue = json.loads(invoke("replay", *short).output)
    sjbf = json.loads(invoke("replay", *short, "--backfill-order", "sjf").output)
    assert sjbf["policy"]["backfill_order"] == "sjf" and sjbf["policy_name"] == "fcfs+easy+sjbf"
    assert queue["policy"]["backfill_order"] == "queue"
    config = tmp_path / "p.toml"
    config.write_text('backfill_order = "sjf"\n')
    assert json.loads(invoke("replay", *short, "--config", config).output)["policy"] \
        == sjbf["policy"]
    bad = invoke("replay", *short, "--backfill-order", "longest")
    assert bad.exit_code == 2 and "--backfill-order" in bad.output
    assert "Traceback" not in bad.output


@pytest.mark.parametrize("backfill", ["easy", "slurm"])
def test_malleable_replay_with_expanders(backfill):
    """The malleable kernel with expander requests (slurm expand mode) under SJBF: its
    start_waiting leaves expanders unordered at the queue tail, where the SJBF walk must
    still find each candidate's queue position (it once started the wrong slot, and the
    replay failed with an IndexError in the size log)."""
    out = invoke("replay", "--jobs", "0:800", "-q", "--json", "--malleable", "0.5",
                 "--reconfig-policy", "dmr", "--expand-mode", "slurm", "--backfill", backfill,
                 "--backfill-order", "sjf")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["jobs"] == 800 and data["policy_name"].startswith(f"fcfs+{backfill}")
    assert "+sjbf[" in data["policy_name"]
