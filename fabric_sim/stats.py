"""Statistics of the study: medians, BCa bootstrap intervals, paired per-seed ratios with the
Wilcoxon signed-rank test, and win fractions.

Why these: every mode runs the same seeds (a seed fixes the hash salt, QP numbers, start skew,
flow sizes and arrivals), so the comparison of two modes is *paired*: the per-seed ratio
removes the seed's own difficulty.  The ratios are skewed and few (10-30), so no normal theory:
the Wilcoxon signed-rank test on the log ratios asks "is one mode consistently faster?" without a
shape assumption, and the BCa bootstrap (bias-corrected and accelerated, Efron 1987) gives the
median ratio's interval; with a handful of seeds the plain percentile interval of a median is
little more than [min, max].
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

LEVEL = 0.95


def median(xs: Sequence[float]) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def bootstrap_ci(xs: Sequence[float], level: float = LEVEL, resamples: int = 2000,
                 seed: int = 0) -> tuple[Optional[float], Optional[float]]:
    """BCa bootstrap interval of the median of ``xs`` (None values ignored).  All-equal data
    (the interval is that value) and fewer than 3 points (min and max) are answered directly."""
    a = np.array([x for x in xs if x is not None], dtype=float)
    if len(a) == 0:
        return None, None
    if len(a) < 3 or np.all(a == a[0]):
        return float(a.min()), float(a.max())
    import warnings

    from scipy.stats import bootstrap

    with warnings.catch_warnings():  # a degenerate jackknife is handled below
        warnings.simplefilter("ignore")
        res = bootstrap((a,), np.median, confidence_level=level, n_resamples=resamples, method="BCa",
                        random_state=np.random.default_rng(seed))
    lo, hi = res.confidence_interval
    if not (math.isfinite(lo) and math.isfinite(hi)):  # degenerate jackknife: percentile instead
        res = bootstrap((a,), np.median, confidence_level=level, n_resamples=resamples,
                        method="percentile", random_state=np.random.default_rng(seed))
        lo, hi = res.confidence_interval
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


def wilcoxon_p(ratios: Sequence[float]) -> Optional[float]:
    """Two-sided Wilcoxon signed-rank p-value of log(ratio) against 0 (ratio 1: no difference);
    None with fewer than 5 pairs, 1.0 when every ratio is exactly 1."""
    logs = np.log(np.array([r for r in ratios if r is not None and r > 0], dtype=float))
    if len(logs) < 5:
        return None
    if np.all(logs == 0):
        return 1.0
    from scipy.stats import wilcoxon

    return float(wilcoxon(logs, zero_method="wilcox", alternative="two-sided").pvalue)


@dataclass(frozen=True)
class Paired:
    """Mode A against mode B on one metric, paired by seed.  ``ratio`` = B / A per seed (for a
    lower-is-better metric, > 1 means A is better); ``wins`` = fraction of seeds where A < B."""
    n: int
    ratio: Optional[float]
    lo: Optional[float]
    hi: Optional[float]
    p: Optional[float]
    wins: Optional[float]
    ratios: tuple[float, ...] = ()

    def text(self) -> str:
        if self.ratio is None:
            return "n/a"
        p = "" if self.p is None else f", p={self.p:.2g}"
        w = "" if self.wins is None else f", wins {self.wins:.0%}"
        return f"{self.ratio:.2f}x [{self.lo:.2f}, {self.hi:.2f}]{p}{w} (n={self.n})"

    @property
    def significant(self) -> bool:
        return self.p is not None and self.p < 1 - LEVEL


def paired(a: dict[int, float], b: dict[int, float]) -> Paired:
    """``a`` and ``b``: seed -> metric (lower is better)."""
    r = ratio_per_seed(b, a)
    if not r:
        return Paired(0, None, None, None, None, None)
    lo, hi = bootstrap_ci(r)
    return Paired(len(r), median(r), lo, hi, wilcoxon_p(r), win_fraction(a, b), tuple(r))
