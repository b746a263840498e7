"""Shadow mode's comparison: how the order Slurm started jobs in differs from the plan.

Also used by the live proof (tests/test_agent_live.py) to compare an observed schedule with
the emulator's.
"""
from __future__ import annotations

from dataclasses import dataclass, field


def inversions(planned: dict[int, int], starts: dict[int, int]) -> list[tuple[int, int]]:
    """Pairs started in the opposite of the planned order.

    Args:
        planned: job id -> planned rank or planned start time (smaller: earlier).
        starts: job id -> observed start time (seconds); only ids in both are compared.

    Returns:
        (a, b) pairs with ``planned[a] < planned[b]`` but ``starts[a] > starts[b]``: b
        started strictly before a although a was planned first.  Equal observed starts
        (Slurm records whole seconds) or equal planned values never count.  The count is
        Kendall's tau distance restricted to strict disagreements.
    """
    ids = sorted((j for j in starts if j in planned), key=lambda j: (planned[j], j))
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if planned[a] < planned[b] and starts[a] > starts[b]:
                out.append((a, b))
    return out


@dataclass
class ShadowReport:
    """One shadow-mode comparison between the previous plan and what Slurm did since.

    Attributes:
        started: ids that started since the previous cycle, by observed start.
        inversions: pairs (a, b) the plan ranked a before b but Slurm started b first:
            b started strictly before a, or b started while a is still pending.
        early: started although the previous plan did not start them then (Slurm's own
            backfill, or a change of state).
        late: the previous plan started them then, but they are still pending.
    """

    started: list[int] = field(default_factory=list)
    inversions: list[tuple[int, int]] = field(default_factory=list)
    early: list[int] = field(default_factory=list)
    late: list[int] = field(default_factory=list)


def compare(previous_order: list[int], previous_starts: set[int], starts: dict[int, int],
            still_pending: set[int]) -> ShadowReport:
    """Compare the previous cycle's plan with what Slurm did since.

    Args:
        previous_order: the ids the previous plan wanted first-to-last.
        previous_starts: the ids it started at once.
        starts: id -> observed start (seconds) of the jobs of ``previous_order`` that
            started since.
        still_pending: ids of ``previous_order`` still pending now.
    """
    rank = {job: k for k, job in enumerate(previous_order)}
    started = sorted(starts, key=lambda j: (starts[j], rank.get(j, len(rank))))
    return ShadowReport(
        started=started,
        inversions=inversions(rank, starts) + [
            (a, b) for b in started for a in sorted(still_pending, key=rank.get)
            if a in rank and rank[a] < rank.get(b, -1)],
        early=[j for j in started if j not in previous_starts],
        late=sorted(j for j in previous_starts if j in still_pending))
