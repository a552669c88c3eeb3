"""Published flow-size distributions and Poisson flow arrivals at real sizes (no scaling).

Why: the reference setup from the literature (ConWeave, Song et al., SIGCOMM'23, Section 5) runs
the AliStorage2019 and FbHdp2015 distributions at 50% and 80% load; comparing with its figures
needs the same distributions at their real sizes, not the scaled-down ones of
``fabric_sim.workloads``.

Sources (the points are data, transcribed; sizes in bytes, cumulative fraction):

* AliStorage2019: Alibaba's production distributed storage, 2019, as published with HPCC's
  traffic generator (Li et al., SIGCOMM'19; github.com/alibaba-edu/High-Precision-Congestion-
  Control, ``traffic_gen/AliStorage2019.txt``), used by ConWeave's artifact
  (github.com/conweave-project/conweave-ns3).  All nine points.
* FbHdp2015: Facebook Hadoop cluster (Roy et al., SIGCOMM'15), as distributed with ConWeave's
  artifact (``traffic_gen/FbHdp2015.txt``, HPCC's ``FbHdp_distribution.txt``).  The file has
  401 points: its CDF is linear between every tenth point (sizes geometric in between); these
  are those anchor points, plus a few in the 2-10 MB tail where linear interpolation in size
  would otherwise overstate the mean.

Arrivals follow the artifacts' generator convention: flows arrive as one Poisson process over
the whole fabric at rate load x hosts x NIC rate / mean size; source and destination uniform
over hosts (destination != source).  On a 2:1 oversubscribed fabric the cross-leaf share of that
load makes the uplinks busier than ``load``.
"""
from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass
from typing import Sequence

ALI_STORAGE_2019 = [(0, 0.0), (4_000, 0.2293), (8_000, 0.6921), (16_000, 0.8061), (32_000, 0.9047),
                    (64_000, 0.9353), (128_000, 0.9677), (256_000, 0.9753), (2_000_000, 1.0)]

FB_HDP_2015 = [(size, pct / 100) for size, pct in (
    (0, 0.0), (53, 0.074), (100, 0.815), (199, 1.415), (217, 1.49), (271, 4.09), (300, 5.2),
    (326, 13.75), (376, 20.26), (425, 22.3), (480, 26.39), (600, 45.91), (679, 51.67), (737, 55.2),
    (800, 57.62), (885, 59.12), (1042, 60.97), (1277, 62.82), (1413, 63.94), (1664, 66.73),
    (2214, 67.47), (5210, 69.33), (7830, 70.82), (31946, 72.12), (39973, 73.98), (47050, 77.88),
    (51046, 81.6), (62583, 82.34), (75180, 84.2), (81565, 87.17), (102058, 88.85), (115331, 89.78),
    (133013, 90.7), (156563, 91.64), (184284, 92.57), (212546, 93.49), (240177, 94.42),
    (288520, 95.35), (470507, 96.28), (736642, 96.84), (940700, 97.21), (1769244, 98.14),
    (2169118, 98.7), (3430822, 99.09), (5426418, 99.48), (7366423, 99.74), (10_000_000, 100.0))]

CDFS = {"alistorage": ALI_STORAGE_2019, "fbhdp": FB_HDP_2015}


def sample_size(cdf: Sequence[tuple[float, float]], rng: random.Random) -> int:
    """Inverse-CDF sample, linear between the published points; at least one byte."""
    u = rng.random()
    i = bisect.bisect_left([c for _, c in cdf], u)
    if i == 0:
        return max(1, int(cdf[0][0]))
    (x0, p0), (x1, p1) = cdf[i - 1], cdf[i]
    return max(1, int(x0 if p1 == p0 else x0 + (x1 - x0) * (u - p0) / (p1 - p0)))


def mean_size(cdf: Sequence[tuple[float, float]]) -> float:
    """Mean of the piecewise-linear CDF."""
    return sum((x0 + x1) / 2 * (p1 - p0) for (x0, p0), (x1, p1) in zip(cdf, cdf[1:]))


@dataclass(frozen=True)
class Arrival:
    src: str
    dst: str
    nbytes: int
    start_us: float


def poisson_arrivals(hosts: Sequence[str], cdf_name: str, load: float, duration_us: float, seed: int,
                     nic_gbps: float = 100.0) -> list[Arrival]:
    """Flows arriving over ``duration_us`` so the hosts' NICs are offered ``load`` of their line
    rate on average; sizes from the named published CDF, unscaled."""
    cdf = CDFS[cdf_name]
    rng = random.Random(seed)
    rate = load * len(hosts) * nic_gbps * 1e3 / 8 / mean_size(cdf)  # flows per µs
    gaps = iter(lambda: rng.expovariate(rate), None)
    times = itertools.takewhile(lambda t: t <= duration_us, itertools.accumulate(gaps))
    return [_arrival(rng, hosts, cdf, t) for t in times]


def _arrival(rng: random.Random, hosts: Sequence[str], cdf, t: float) -> Arrival:
    src = rng.choice(hosts)
    return Arrival(src, rng.choice([h for h in hosts if h != src]), sample_size(cdf, rng), t)


def poisson(net, hosts: Sequence[str], cdf_name: str, load: float, duration_us: float, seed: int):
    """The same arrivals as RDMA transfers on an ``RdmaNetwork`` (one QP per flow)."""
    return [net.transfer(a.src, a.dst, a.nbytes, "flow", cdf_name, a.start_us)
            for a in poisson_arrivals(hosts, cdf_name, load, duration_us, seed)]
