"""Statistics of the study: medians, 95% bootstrap confidence intervals, paired win fractions.

Why bootstrap: a handful of seeds per (scenario, mode) and skewed metrics (tails of FCT
distributions) make normal-theory intervals wrong; the percentile bootstrap of the median makes
no shape assumption.  Win fractions pair runs by seed (every mode ran the same seeds), so a hash
draw that is kind to one mode is kind to it in the comparison too.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np


def median(xs: Sequence[float]) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def bootstrap_ci(xs: Sequence[float], level: float = 0.95, resamples: int = 2000,
                 seed: int = 0) -> tuple[Optional[float], Optional[float]]:
    """Percentile-bootstrap interval of the median of ``xs`` (None values ignored)."""
    a = np.array([x for x in xs if x is not None], dtype=float)
    if len(a) == 0:
        return None, None
    if len(a) == 1:
        return float(a[0]), float(a[0])
    rng = np.random.default_rng(seed)
    meds = np.median(a[rng.integers(0, len(a), size=(resamples, len(a)))], axis=1)
    lo, hi = np.percentile(meds, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


def win_fraction(ours: dict[int, float], theirs: dict[int, float]) -> Optional[float]:
    """Fraction of the seeds both have where ours is lower (better) than theirs."""
    seeds = [s for s in ours if s in theirs and ours[s] is not None and theirs[s] is not None]
    if not seeds:
        return None
    return sum(ours[s] < theirs[s] for s in seeds) / len(seeds)


def ratio_per_seed(num: dict[int, float], den: dict[int, float]) -> list[float]:
    """num[s] / den[s] for every seed both have (a paired ratio, e.g. ECMP time / Stellar time)."""
    return [num[s] / den[s] for s in num if s in den and num[s] is not None and den[s]]
