"""A scripted Slurm for the agent's unit tests: a fixed list of jobs on 16 nodes of one
partition, behind the real :class:`~malleo.plugin.backends.SlurmBackend` interface.  It keeps
the priorities the agent writes; every other action fails the test.  (The same paths are
exercised on the real local Slurm by the ``slurm``-marked tests.)"""
import msgspec

from malleo.plugin.backends import SlurmBackend
from malleo.plugin.backends.model import Node, Partition

TOTAL = 16
"""Nodes n1..n16, 2 CPUs each, partition ``debug``."""


class ScriptedSlurm(SlurmBackend):
    """A Slurm whose state is the list ``jobs`` on 16 nodes; priority writes are kept."""

    name = "scripted"

    def __init__(self, jobs, now):
        self.jobs, self.now, self.writes = list(jobs), now, {}

    def version(self):
        return (22, 5, 8)

    def ping(self):
        pass

    def partitions(self):
        return [Partition("debug", tuple(f"n{i}" for i in range(1, TOTAL + 1)), 2 * TOTAL,
                          None, is_default=True)]

    def nodes(self):
        busy = {n for j in self.jobs if j.state == "RUNNING" for n in j.node_list}
        return [Node(f"n{i}", "ALLOCATED" if f"n{i}" in busy else "IDLE", cpus=2,
                     alloc_cpus=2 if f"n{i}" in busy else 0, partitions=("debug",))
                for i in range(1, TOTAL + 1)]

    def all_jobs(self):
        return list(self.jobs)

    def job(self, job_id):
        return next(j for j in self.jobs if j.job_id == job_id)

    def set_priority(self, job_id, priority):
        self.writes[job_id] = priority
        self.jobs = [msgspec.structs.replace(j, priority=priority) if j.job_id == job_id else j
                     for j in self.jobs]

    def hold(self, job_id):
        raise AssertionError("the agent never holds")

    release = hold

    def update_job(self, job_id, **kw):
        raise AssertionError("no range job here")

    def resize(self, job_id, num_nodes):
        raise AssertionError("the agent never resizes")

    def cancel(self, job_id):
        raise AssertionError("the agent never cancels")

    def submit(self, **kw):
        raise AssertionError("the agent never submits")
