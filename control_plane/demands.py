"""Traffic demands of collective jobs: which GPU sends how much to which.

A job's `bandwidth_gbps` is what each member injects while the collective runs; the collective
decides how that is spread.  These are the patterns the placement reserves capacity for:

* AllReduce (ring): member i sends the full bandwidth to member i+1 (list order, wrapping).
* AlltoAll: every member sends bandwidth/(n-1) to every other member.
* ParameterServer: every worker pushes bandwidth to the root, and the root sends
  bandwidth/(n-1) back to each worker (its NIC is the limit, so it shares it).
* Broadcast (from the root): the root sends bandwidth/(n-1) to each other member.

Each (src, dst) pair is one RoCE flow (one QP), which hashing cannot split, so flows are the
unit that ECMP spreads and that the heuristic places.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import Fabric, Job


@dataclass(frozen=True, order=True)
class Flow:
    """One reserved flow of a job between two GPUs (Gbps while the collective runs)."""

    job: str
    src: str
    dst: str
    src_leaf: str
    dst_leaf: str
    gbps: float

    @property
    def crosses_fabric(self) -> bool:
        """Flows between GPUs on the same leaf never touch a spine."""
        return self.src_leaf != self.dst_leaf


def job_flows(fabric: Fabric, job: Job) -> list[Flow]:
    """All flows of `job`, in a deterministic order (member order, then peer order)."""
    members = list(job.hosts)
    n = len(members)
    pairs: list[tuple[str, str, float]] = []
    bw = job.bandwidth_gbps
    if job.collective == "AllReduce":
        pairs = [(members[i], members[(i + 1) % n], bw) for i in range(n)]
    elif job.collective == "AlltoAll":
        pairs = [(a, b, bw / (n - 1)) for a in members for b in members if a != b]
    elif job.collective == "ParameterServer":
        root = job.root or members[0]
        workers = [m for m in members if m != root]
        pairs = [(w, root, bw) for w in workers] + [(root, w, bw / len(workers)) for w in workers]
    elif job.collective == "Broadcast":
        root = job.root or members[0]
        pairs = [(root, m, bw / (n - 1)) for m in members if m != root]
    else:  # the model rejects other names; this guards against a new collective added there only
        raise ValueError(f"no demand pattern for collective {job.collective}")
    hosts = fabric.hosts
    return [Flow(job=job.name, src=a, dst=b, src_leaf=hosts[a].leaf, dst_leaf=hosts[b].leaf, gbps=g)
            for a, b, g in pairs]


def fabric_flows(fabric: Fabric) -> list[Flow]:
    """Flows of every job, job by job in file order."""
    return [flow for job in fabric.jobs.values() for flow in job_flows(fabric, job)]
