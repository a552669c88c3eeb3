"""Paired statistics of the study: the Wilcoxon test separates a consistent effect from noise,
the BCa interval covers the median ratio, wins count seeds."""
import random

from fabric_sim.stats import bootstrap_ci, paired, wilcoxon_p


def _seeds(gain: float, noise: float, seed: int = 1):
    rng = random.Random(seed)
    a = {s: 100 * (1 + rng.random()) for s in range(10)}  # seeds differ a lot in difficulty
    b = {s: a[s] * gain * (1 + noise * (rng.random() - 0.5)) for s in range(10)}
    return a, b


def test_a_consistent_30_percent_gain_is_significant_and_its_interval_excludes_one():
    a, b = _seeds(1.3, 0.1)
    p = paired(a, b)  # b / a per seed: a is faster
    assert p.n == 10 and p.wins == 1.0
    assert 1.2 < p.lo <= p.ratio <= p.hi < 1.4
    assert p.significant and p.p < 0.01


def test_noise_around_one_is_not_significant_although_unpaired_medians_differ():
    a, b = _seeds(1.0, 0.1)
    p = paired(a, b)
    assert not p.significant
    assert p.lo < 1 < p.hi
    assert 0.2 <= p.wins <= 0.8


def test_identical_modes_and_too_few_seeds():
    a, _ = _seeds(1.0, 0.0)
    assert wilcoxon_p([1.0] * 10) == 1.0
    assert wilcoxon_p([1.3] * 4) is None  # fewer than 5 pairs: no test
    same = paired(a, dict(a))
    assert same.ratio == 1.0 and same.wins == 0.0 and not same.significant
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert bootstrap_ci([]) == (None, None)
