"""The reference scheduler checked by hand: tiny schedules worked out on paper.

Each case states the workload, then the schedule the rules of
docs/scheduling-semantics.md give, step by step in the comments.  Jobs are
``(submit, runtime, request, procs)``; times are seconds, sizes processors.
"""
import pytest

from oracle import oracle_simulate


def run(jobs, total_procs, **policy):
    submit, runtime, request, procs = (list(column) for column in zip(*jobs))
    return oracle_simulate(submit, runtime, request, procs, total_procs, **policy)


# A blocker holding 3 of 4 processors, a head that needs all 4, a short 1-processor job.
BLOCKED_HEAD = [(0, 10, 10, 3), (1, 5, 5, 4), (2, 1, 1, 1)]


def test_none_keeps_a_fitting_job_behind_a_blocked_head():
    # t=2: job 2 fits the one free processor, but job 1 (4 procs) is the head: wait
    # until job 1 ends at 15.
    result = run(BLOCKED_HEAD, 4, backfill="none")
    assert result["start"] == [0, 10, 15]
    assert result["reservation"] == [-1, -1, -1]
    assert result["backfilled"] == [0, 0, 0]


def test_easy_backfills_a_job_that_ends_by_the_shadow_time():
    # t=1: head 1 reserved at 10 (job 0's expected end), extra = 4 - 4 = 0.
    # t=2: 2 + 1 <= 10: start.
    result = run(BLOCKED_HEAD, 4, backfill="easy")
    assert result["start"] == [0, 10, 2]
    assert result["end"] == [10, 15, 3]
    assert result["reservation"] == [-1, 10, -1]
    assert result["backfilled"] == [0, 0, 1]


def test_easy_extra_processors_rule():
    # P=4.  t=0: job 0 (2 procs) starts; job 1 (3 procs) is the head, shadow 10, and 4
    # processors are free at 10, so extra = 1.  Job 2 runs past the shadow but fits in
    # the extra processor: starts, extra 0.  Job 3 also runs past it: waits.  Job 4 ends
    # by the shadow time: starts.  t=10: job 1 starts; job 3 is head, reserved at 20
    # (job 1's end frees enough).
    jobs = [(0, 10, 10, 2), (0, 10, 10, 3), (0, 100, 100, 1), (0, 100, 100, 1), (0, 5, 5, 1)]
    result = run(jobs, 4, backfill="easy")
    assert result["start"] == [0, 10, 0, 20, 0]
    assert result["reservation"] == [-1, 10, -1, 20, -1]
    assert result["backfilled"] == [0, 0, 1, 0, 1]


def test_easy_counts_every_job_ending_at_the_shadow_time_in_extra():
    # P=4.  Jobs 0 and 1 (1 proc each) both end at 10; the head (3 procs) sees 2 free:
    # the walk stops at job 0 (2 + 1 = 3), shadow 10.  Job 1 also ends at 10, so 4 are
    # free at the shadow: extra = 4 - 3 = 1 and the long 1-proc job 3 backfills.
    jobs = [(0, 10, 10, 1), (0, 10, 10, 1), (0, 10, 10, 3), (0, 50, 50, 1)]
    result = run(jobs, 4, backfill="easy")
    assert result["reservation"][2] == 10
    assert result["start"] == [0, 0, 10, 0]


def test_easy_only_protects_the_head_where_conservative_protects_everyone():
    # P=3.  t=0: job 0 (2 procs) runs to 10; head 1 (2 procs) reserved at 10 with
    # extra = 3 - 2 = 1; job 2 needs the whole machine.  t=1: job 3 (1 proc, 30 s).
    # EASY: job 3 fits in the extra processor and starts, delaying job 2 to 31.
    # Conservative: job 2 holds [20, 25), so job 3 cannot span it and goes to 25.
    jobs = [(0, 10, 10, 2), (0, 10, 10, 2), (0, 5, 5, 3), (1, 30, 30, 1)]
    easy = run(jobs, 3, backfill="easy")
    assert easy["start"] == [0, 10, 31, 1]
    assert easy["reservation"] == [-1, 10, 31, -1]
    assert easy["backfilled"] == [0, 0, 0, 1]
    conservative = run(jobs, 3, backfill="conservative")
    assert conservative["start"] == [0, 10, 20, 25]
    assert conservative["reservation"] == [0, 10, 20, 25]
    assert conservative["backfilled"] == [0, 0, 0, 0]


def test_conservative_compresses_after_an_early_end():
    # P=2.  Job 0 requests 10 s but ends at 5.  t=0: job 1 reserved at 10; t=1: job 2
    # reserved at 13 (after job 1's planned [10, 13)).  t=5: job 0 ends; job 1, re-planned
    # first (earliest reservation), starts now; job 2 is re-planned to 8, before its 13.
    jobs = [(0, 5, 10, 2), (0, 3, 3, 2), (1, 2, 2, 1)]
    result = run(jobs, 2, backfill="conservative")
    assert result["start"] == [0, 5, 8]
    assert result["reservation"] == [0, 10, 13]


def test_conservative_records_a_reservation_planned_now():
    # The job behind the head is planned at t itself, so it starts now and its first
    # reservation is t; it passed the waiting head, so it is backfilled.
    result = run(BLOCKED_HEAD, 4, backfill="conservative")
    assert result["start"] == [0, 10, 2]
    assert result["reservation"] == [0, 10, 2]
    assert result["backfilled"] == [0, 0, 1]


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative", "slurm"])
def test_equal_submit_times_start_in_index_order(backfill):
    jobs = [(0, 1, 1, 1)] * 3
    result = run(jobs, 1, backfill=backfill)
    assert result["start"] == [0, 1, 2]


def test_sjf_ties_break_by_submit_then_index():
    # P=1.  Job 0 (2 s) runs first.  At t=2: jobs 2 and 3 (3 s; submits 0 and 0) before
    # job 1 (5 s); job 4 (3 s, submitted at 1) after jobs 2 and 3.
    jobs = [(0, 2, 2, 1), (0, 5, 5, 1), (0, 3, 3, 1), (0, 3, 3, 1), (1, 3, 3, 1)]
    result = run(jobs, 1, order="sjf", backfill="none")
    assert result["start"] == [0, 11, 2, 5, 8]


@pytest.mark.parametrize("order, expected", [
    ("fcfs", [0, 100, 110]),
    ("wfp3", [0, 101, 100]),      # A: r = 99/10, key -970.299; B: r = 50/1, key -125000
    ("unicep", [0, 101, 100]),    # A: -99/(1*10) = -9.9;        B: -50/(1*1) = -50
    ("f1", [0, 100, 110]),        # A: 1 + 870*log10(1) = 1;     B: 0 + 870*log10(50)
    ("sjf", [0, 101, 100]),
    ("ljf", [0, 100, 110]),
    ("saf", [0, 101, 100]),
])
def test_queue_orders_at_the_pass_time(order, expected):
    # P=1.  Job 0 runs 0..100.  Job A (submit 1, 10 s) and job B (submit 50, 1 s) wait;
    # at t=100 the order decides who goes first.
    jobs = [(0, 100, 100, 1), (1, 10, 10, 1), (50, 1, 1, 1)]
    assert run(jobs, 1, order=order, backfill="none")["start"] == expected


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative", "slurm"])
def test_zero_runtime_jobs_end_at_once_and_the_pass_repeats(backfill):
    # P=1: two 0-second jobs and a 3-second one, all at t=0: three passes at t=0.
    jobs = [(0, 0, 0, 1), (0, 0, 0, 1), (0, 3, 3, 1)]
    result = run(jobs, 1, backfill=backfill, bf_resolution=1)
    assert result["start"] == [0, 0, 0]
    assert result["end"] == [0, 0, 3]


def test_easy_shadow_of_a_zero_estimate_job_is_one_second_later():
    # t=0: job 0 (0 s) starts; job 1 is the head.  Job 0's expected end 0 + 0 is <= t and
    # so is 0 + request: it becomes t + 1 = 1, the shadow.  The repeated pass at t=0
    # (after job 0 ended) starts job 1 before that reservation.
    result = run([(0, 0, 0, 1), (0, 5, 5, 1)], 1, backfill="easy")
    assert result["start"] == [0, 0]
    assert result["reservation"] == [-1, 1]


def test_zero_estimate_job_with_a_request_is_expected_to_end_at_its_request():
    # actual estimates: job 0 runs 0 s (est 0) but requested 10.  Its expected end 0 + 0 is
    # <= t, so it becomes s + request = 10 (Planning estimate rule), not t + 1.
    result = run([(0, 0, 10, 1), (0, 5, 5, 1)], 1, backfill="easy", est_mode="actual")
    assert result["start"] == [0, 0]
    assert result["reservation"] == [-1, 10]


def test_overrunning_job_expected_end_moves_to_now_plus_one():
    # P=1.  Job 0 requests 3 s and runs 10.  At t=5 job 1 arrives: job 0's expected end
    # 0 + 3 <= 5 and 0 + request <= 5, so the shadow is 5 + 1 = 6.
    result = run([(0, 10, 3, 1), (5, 1, 1, 1)], 1, backfill="easy")
    assert result["start"] == [0, 10]
    assert result["reservation"] == [-1, 6]


def test_actual_estimates_plan_with_the_real_runtime():
    # The short job requests 50 s but runs 5: with request estimates it does not end by
    # the shadow (10) and extra is 0; with actual estimates it does, and backfills.
    jobs = [(0, 10, 10, 3), (0, 10, 10, 4), (0, 5, 50, 1)]
    assert run(jobs, 4, backfill="easy", est_mode="request")["start"] == [0, 10, 20]
    assert run(jobs, 4, backfill="easy", est_mode="actual")["start"] == [0, 10, 0]


def test_predict_uses_the_mean_of_the_users_last_two_runtimes():
    # P=2.  User 0's jobs 0 and 1 run 4 s and 8 s.  Job 2 (user 2) holds the machine
    # 9..19.  At t=19, job 3 (user 0, requests 50) is predicted (4 + 8) // 2 = 6 s, job 4
    # (user 1, no history) its request 20 s: SJF puts job 3 first.  With request
    # estimates, job 4 (20) goes first.
    submit = [0, 0, 9, 10, 10]
    runtime = [4, 8, 10, 1, 1]
    request = [50, 50, 10, 50, 20]
    procs = [1, 1, 2, 2, 2]
    user = [0, 0, 2, 0, 1]
    predict = oracle_simulate(submit, runtime, request, procs, 2, order="sjf",
                              backfill="none", est_mode="predict", user=user)
    assert predict["start"] == [0, 0, 9, 19, 20]
    request_mode = oracle_simulate(submit, runtime, request, procs, 2, order="sjf",
                                   backfill="none", est_mode="request", user=user)
    assert request_mode["start"] == [0, 0, 9, 20, 19]


def test_slurm_reservations_sit_on_the_resolution_grid():
    # P=2.  Job 1 waits for job 0 (ends at 5): its reservation is rounded up to 60.
    result = run([(0, 5, 5, 2), (0, 5, 5, 2)], 2, backfill="slurm", bf_resolution=60)
    assert result["start"] == [0, 5]
    assert result["reservation"] == [-1, 60]


def test_slurm_window_denies_far_reservations():
    result = run([(0, 500, 500, 2), (0, 5, 5, 2)], 2, backfill="slurm", bf_resolution=1,
                 bf_window=100)
    assert result["start"] == [0, 500]
    assert result["reservation"] == [-1, -1]


@pytest.mark.parametrize("jobs", [
    [(0, 10, 10, 2), (0, 10, 10, 3), (0, 100, 100, 1), (0, 100, 100, 1), (0, 5, 5, 1)],
    [(0, 10, 10, 2), (0, 10, 10, 2), (0, 5, 5, 3), (1, 30, 30, 1)],
    BLOCKED_HEAD,
])
def test_slurm_with_one_reservation_and_fine_grid_is_easy(jobs):
    total = 4
    easy = run(jobs, total, backfill="easy")
    slurm = run(jobs, total, backfill="slurm", bf_max_job_test=1, bf_resolution=1,
                bf_window=10**9)
    assert slurm["start"] == easy["start"]


def test_multifactor_size_factor_worked_by_hand():
    # P=4, job 0 holds the machine until 10.  At 10, job 1 (3 procs) and job 2 (2 procs)
    # wait with age weight 0: favour large gives job 1 100 * 3/4 = 75 > job 2's 50, so
    # job 1 starts and job 2 (2 > 1 free) waits for 15; favour small gives job 1
    # 100 * (4-3+1)/4 = 50 < job 2's 75: job 2 starts, job 1 (3 > 2 free) waits for 15.
    jobs = [(0, 10, 10, 4), (1, 5, 5, 3), (2, 5, 5, 2)]

    class MF:
        weight_age, weight_size, weight_fairshare = 0.0, 100.0, 0.0
        max_age, half_life, calc_period = 100, 100, 1000

    MF.size_favor = "large"
    assert run(jobs, 4, order="multifactor", multifactor=MF)["start"] == [0, 10, 15]
    MF.size_favor = "small"
    assert run(jobs, 4, order="multifactor", multifactor=MF)["start"] == [0, 15, 10]


def test_multifactor_fair_share_worked_by_hand():
    # P=4.  User 0's job 0 runs 0..10 on all 4.  At 5 (calc period 1: a calculation),
    # user 0 has accrued 4 x 5 = 20 processor-seconds, the total is 20, 2 users seen:
    # fair share 2^-(20/20 x 2) = 0.25 for user 0, 1 for user 1.  So user 1's job 2
    # (priority 1000) starts at 10 before user 0's job 1 (250), which waits for 15.
    jobs = [(0, 10, 10, 4), (5, 5, 5, 4), (5, 5, 5, 4)]

    class MF:
        weight_age, weight_size, weight_fairshare = 0.0, 0.0, 1000.0
        max_age, half_life, calc_period, size_favor = 100, 10**9, 1, "small"

    result = run(jobs, 4, order="multifactor", multifactor=MF, user=[0, 0, 1])
    assert result["start"] == [0, 15, 10]
    assert run(jobs, 4, order="fcfs", user=[0, 0, 1])["start"] == [0, 10, 15]


def test_rejects_what_it_does_not_model():
    with pytest.raises(ValueError, match="order"):
        run(BLOCKED_HEAD, 4, order="lottery")
    with pytest.raises(ValueError, match="procs"):
        run([(0, 1, 1, 5)], 4)


def test_conservative_keeps_an_earlier_reservation_after_an_early_end():
    # P=2.  Jobs 0 and 1 run 0..1 (job 0 requested 2 s).  Job 2 (2 procs) is reserved at
    # 2, job 3 (1 proc) at 1.  At t=1 there is no greedy walk: job 3, holding the earlier
    # reservation, is re-planned first and starts; job 2 keeps its slot at 2.
    jobs = [(0, 1, 2, 1), (0, 1, 1, 1), (0, 1, 1, 2), (0, 1, 1, 1)]
    result = run(jobs, 2, backfill="conservative")
    assert result["reservation"] == [0, 0, 2, 1]
    assert result["start"] == [0, 0, 2, 1]


def test_conservative_zero_estimate_holds_a_second_and_never_oversubscribes():
    # P=2.  Job 0 (1 proc) runs 0..10; job 1 (2 procs) is reserved at 10.  Job 2 requests
    # 0 s but runs 10: planned at 0 it holds [0, 1), so job 3 cannot start at 0 and is
    # reserved at 1; once running, job 2's expected end keeps moving to t + 1, so job 3
    # starts only when jobs 0 and 2 end at 10, and job 1 (behind it) at 15.
    jobs = [(0, 10, 10, 1), (0, 1, 1, 2), (0, 10, 0, 1), (0, 5, 5, 1)]
    result = run(jobs, 2, backfill="conservative")
    assert result["start"] == [0, 15, 0, 10]
    assert result["reservation"] == [0, 10, 0, 1]
