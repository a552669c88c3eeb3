"""The pictures: ratios to ECMP, Stellar in one colour, identical lines named, no panel of zeros."""
from pathlib import Path

from fabric_sim import plots as P
from fabric_sim.demo import ModeResult, plot


def test_stellar_has_one_colour_and_every_mode_keeps_its_own():
    assert P.colour("stellar") == P.STELLAR_COLOUR
    modes = ["ecmp", "wcmp", "least", "conga", "drill", "spray", "ecmp-em", "letflow-50", "letflow-200"]
    assert len({P.colour(m) for m in modes}) == len(modes)
    assert P.STELLAR_COLOUR not in {P.colour(m) for m in modes}
    assert P.colour("stellar-nodrain-50") == P.colour("stellar-static-ecn") != P.STELLAR_COLOUR


def test_identical_series_are_grouped_to_be_named_together():
    groups = P.identical_groups({"letflow-50": [1, 2], "ecmp": [3, 4], "letflow-200": [1, 2]})
    assert groups == [["letflow-50", "letflow-200"], ["ecmp"]]
    assert P._label(groups[0]) == "letflow-50 = letflow-200 (identical)"


def test_the_demo_image_has_a_panel_per_scenario_and_no_ratio_where_ecmp_is_zero(tmp_path: Path, monkeypatch):
    seen = {}
    real = P.ratio_panels

    def spy(panels, path, title):
        seen["panels"] = panels
        return real(panels, path, title)

    monkeypatch.setattr(P, "ratio_panels", spy)
    results = [ModeResult("congestion", "ecmp", {"job completion (us)": 200.0, "PSN regressions at receivers": 0}),
               ModeResult("congestion", "stellar", {"job completion (us)": 150.0, "PSN regressions at receivers": 0}),
               ModeResult("together (all QPs at t=0)", "ecmp", {"job completion (us)": 100.0}),
               ModeResult("together (all QPs at t=0)", "stellar", {"job completion (us)": 80.0}),
               ModeResult("failure", "ecmp", {"go-back-N retransmissions": 10}),
               ModeResult("failure", "stellar", {"go-back-N retransmissions": 4})]
    plot(results, tmp_path / "report.png")
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert [s for s, _ in seen["panels"]] == ["congestion", "together (all QPs at t=0)", "failure"]
    # an all-zero metric has no ratio: it is printed under the panel, never drawn as a bar of zeros
    assert P.ratio_panels([("x", {"PSN": {"ecmp": 0, "stellar": 0}})], tmp_path / "z.png", "t") is not None
