"""Pictures of the study and the demo, made to answer "is Stellar better than ECMP, and where not".

* Everything is a ratio to ECMP (ECMP = 1, a dashed line), on a log axis where ratios span
  decades, with "lower is better" on the axis that needs it.
* Stellar has one colour everywhere (``STELLAR_COLOUR``); every other mode keeps its own colour
  across plots (``colour``).
* Modes whose per-seed values are identical would hide each other: they are drawn once and named
  together ("letflow-50 = letflow-200 (identical)").
* Nothing is drawn for a metric without data: a panel of zeros means no information, so it is
  left out (and says why where a whole panel would be empty).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

STELLAR_COLOUR = "#d62728"
_FIXED = {"ecmp": "#000000", "stellar": STELLAR_COLOUR, "wcmp": "#1f77b4", "least": "#2ca02c",
          "conga": "#9467bd", "drill": "#ff7f0e", "spray": "#8c564b", "ecmp-em": "#7f7f7f", "oracle": "#b0b0b0"}
_OTHERS = ("#17becf", "#bcbd22", "#e377c2", "#393b79", "#637939", "#8c6d31", "#aec7e8")  # 7: LetFlow 10..200 differ
def _topo(case: str) -> str:
    return case.split(" [")[0].partition("/")[2]


# panels of the headline picture, by case ("train-a2a/deg40 [PFC only]", fabric_sim.report.case_of)
KINDS = (("collectives", lambda s: not s.startswith(("websearch", "datamining")) and _topo(s) not in ("fail", "gray")),
         ("flow-size distributions", lambda s: s.startswith(("websearch", "datamining"))),
         ("failures", lambda s: _topo(s) in ("fail", "gray")))


def colour(mode: str) -> str:
    """A mode's colour, the same in every plot (Stellar's variants in a lighter red)."""
    if mode in _FIXED:
        return _FIXED[mode]
    if mode.startswith("stellar") or mode == "no-drain":  # the demo's Stellar without drain
        return "#ff9896"
    digits = "".join(c for c in mode if c.isdigit())
    return _OTHERS[(int(digits) if digits else sum(map(ord, mode))) % len(_OTHERS)]


def _plain_log(ax) -> None:
    """A log y axis with plain numbers (0.5, 1, 2), not powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def identical_groups(series: dict[str, Sequence]) -> list[list[str]]:
    """Modes grouped by identical values (the first of each group is drawn, the rest named)."""
    groups: list[list[str]] = []
    seen: dict[tuple, int] = {}
    for mode, vals in series.items():
        key = tuple(vals)
        if key in seen:
            groups[seen[key]].append(mode)
        else:
            seen[key] = len(groups)
            groups.append([mode])
    return groups


def _label(group: list[str]) -> str:
    return group[0] if len(group) == 1 else " = ".join(group) + " (identical)"


def headline(rows: list[dict], out: Path, fabric: str = "lab") -> Optional[Path]:
    """Per scenario, each mode's paired ratio to ECMP (median over seeds, BCa 95% interval) of
    the scenario's primary metric; one panel per kind of scenario; log axis."""
    import numpy as np

    from fabric_sim.report import by_seed, cases_of, modes_of, primary_metric
    from fabric_sim.stats import paired

    scen = cases_of([r for r in rows if not r.get("error")], fabric)
    panels = [(k, [s for s in scen if f(s)]) for k, f in KINDS]
    panels = [(k, ss) for k, ss in panels if ss]
    if not panels:
        return None
    plt = _pyplot()
    widths = [max(2, len(ss)) for _, ss in panels]  # room for each case's two-line label
    fig, axes = plt.subplots(1, len(panels), figsize=(2 + 1.9 * sum(widths), 4.4), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    drawn = {}
    for ax, (kind, ss) in zip(axes[0], panels):
        modes = [m for m in dict.fromkeys(m for s in ss for m in modes_of(rows, s, fabric)) if m != "ecmp"]
        width = 0.8 / max(1, len(modes))
        notes = []
        for j, s in enumerate(ss):
            metric = primary_metric(s)
            ecmp = by_seed(rows, fabric, s, "ecmp", metric)
            series = {m: [by_seed(rows, fabric, s, m, metric).get(k) for k in sorted(ecmp)] for m in modes}
            series = {m: v for m, v in series.items() if any(x is not None for x in v)}
            for group in identical_groups(series):
                m = group[0]
                # ratio mode / ECMP per seed: ``paired(mode, ecmp)`` gives ECMP / mode
                p = paired(by_seed(rows, fabric, s, "ecmp", metric), by_seed(rows, fabric, s, m, metric))
                if p.ratio is None:
                    continue
                x = j + (modes.index(m) - (len(modes) - 1) / 2) * width
                ax.errorbar([x], [p.ratio], yerr=[[p.ratio - p.lo], [p.hi - p.ratio]], fmt="o",
                            color=colour(m), ms=7 if m == "stellar" else 5, capsize=3,
                            zorder=3 if m == "stellar" else 2)
                drawn.setdefault(m, colour(m))
                if len(group) > 1:
                    notes.append(f"{s}: {_label(group)}")
        ax.axhline(1, color="k", ls="--", lw=0.8)
        _plain_log(ax)
        lo, hi = ax.get_ylim()
        ax.set_ylim(min(lo, 0.5), max(hi, 2.0))  # a ratio of 0.98 must not fill the panel
        ax.set_xlim(-0.6, len(ss) - 0.4)
        ax.set_xticks(np.arange(len(ss)))
        ax.set_xticklabels([s.replace(" [", "\n[") for s in ss], fontsize=7)
        ax.set_title(kind, fontsize=10)
        ax.set_ylabel("ratio to ECMP (median, 95% CI)\nlower is better", fontsize=8)
        if notes:
            ax.text(0.0, -0.12, "\n".join(notes), transform=ax.transAxes, fontsize=6.5, va="top")
    handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=m) for m, c in drawn.items()]
    fig.legend(handles=handles, loc="center right", fontsize=8, title="mode (ECMP = 1)", title_fontsize=8)
    fig.suptitle("Each mode against ECMP per case: iteration time (training), completion time (collectives, "
                 "failures) or short-flow p99 slowdown (flow sizes)", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 0.88, 0.95))
    path = out / "headline_ratio_to_ecmp.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ratio_cdfs(rows: list[dict], out: Path, scenarios: Sequence[str], fabric: str = "lab") -> Optional[Path]:
    """CDF over seeds of baseline / Stellar on each headline case (``fabric_sim.report.case_of``;
    > 1: Stellar better)."""
    from fabric_sim.report import by_seed, is_baseline, modes_of, primary_metric
    from fabric_sim.stats import ratio_per_seed

    scenarios = [s for s in scenarios if by_seed(rows, fabric, s, "stellar", primary_metric(s))]
    if not scenarios:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(scenarios), figsize=(5 * len(scenarios), 3.8), squeeze=False)
    for ax, s in zip(axes[0], scenarios):
        metric = primary_metric(s)
        st = by_seed(rows, fabric, s, "stellar", metric)
        series = {m: sorted(ratio_per_seed(by_seed(rows, fabric, s, m, metric), st))
                  for m in modes_of(rows, s, fabric) if is_baseline(m)}
        for group in identical_groups({m: v for m, v in series.items() if v}):
            xs = series[group[0]]
            ax.step([xs[0]] + xs, [0.0] + [(i + 1) / len(xs) for i in range(len(xs))], where="post",
                    color=colour(group[0]), label=_label(group))
        ax.axvline(1, color=STELLAR_COLOUR, lw=1.5, label="Stellar = 1")
        ax.set_xscale("log")
        from matplotlib.ticker import FuncFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2g}"))
        ax.set_xlabel(f"baseline / Stellar per seed ({metric})\n> 1: Stellar better")
        ax.set_ylabel("CDF over seeds")
        ax.set_title(s, fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "cdf_ratio_per_seed.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ratio_panels(panels: list[tuple[str, dict[str, dict[str, float]]]], path: Path, title: str) -> Optional[Path]:
    """The demo picture: one panel per scenario; each panel holds, per metric, every mode's value
    over ECMP's.  ``panels``: (scenario, {metric: {mode: value}}), ECMP among the modes.  Metrics
    where ECMP is 0 or missing have no ratio: their raw values are printed under the panel."""
    import textwrap

    import numpy as np

    plt = _pyplot()
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    usable = [{k: v for k, v in m.items() if isinstance(v.get("ecmp"), (int, float)) and v["ecmp"] > 0}
              for _, m in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(2 + 1.8 * sum(max(1, len(u)) for u in usable), 4.8),
                             squeeze=False, gridspec_kw={"width_ratios": [max(1, len(u)) for u in usable]})
    for ax, (scenario, metrics), use in zip(axes[0], panels, usable):
        modes = [m for m in dict.fromkeys(m for v in use.values() for m in v) if m != "ecmp"]
        width = 0.8 / max(1, len(modes))
        top = 1.0
        for i, m in enumerate(modes):
            xs, ys = [], []
            for j, v in enumerate(use.values()):
                if isinstance(v.get(m), (int, float)):
                    xs.append(j + (i - (len(modes) - 1) / 2) * width)
                    ys.append(v[m] / v["ecmp"])
            bars = ax.bar(xs, ys, width, color=colour(m), label=m)
            for bar, y in zip(bars, ys):
                ax.text(bar.get_x() + bar.get_width() / 2, y, f"{y:.2f}", ha="center", va="bottom", fontsize=7)
            top = max([top] + ys)
        ax.axhline(1, color="k", ls="--", lw=0.8, label="ECMP = 1")
        ax.set_ylim(0, top * 1.3)
        ax.set_xticks(np.arange(len(use)))
        ax.set_xticklabels([textwrap.fill(k, 16) for k in use], fontsize=7)
        ax.set_ylabel("ratio to ECMP (lower is better)", fontsize=8)
        ax.set_title(scenario, fontsize=10)
        ax.legend(fontsize=7, loc="upper right", ncol=len(modes) + 1)
        skipped = [k for k in metrics if k not in use]
        if skipped:
            note = "no ratio (ECMP is 0):\n" + "\n".join(
                textwrap.fill(f"{k}: " + ", ".join(f"{m} {v}" for m, v in metrics[k].items()), 44) for k in skipped)
            ax.text(0.0, -0.22, note, transform=ax.transAxes, fontsize=6.5, va="top")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def short_fct_cdfs(rows: list[dict], out: Path) -> list[Path]:
    """CDF of short-flow FCTs under the flow-size workloads, pooled over seeds; identical
    distributions are drawn once and named together."""
    from fabric_sim.report import case_of, cases_of

    written = []
    for s in [c for c in cases_of(rows, None) if c.startswith(("websearch", "datamining"))]:
        series = {}
        for r in rows:
            if case_of(r) == s and r.get("short_fcts"):
                series.setdefault(r["mode"], []).extend(r["short_fcts"])
        series = {m: sorted(v) for m, v in series.items()}
        if not series:
            continue
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(6, 4))
        for group in identical_groups(series):
            xs = series[group[0]]
            ax.plot(xs, [(i + 1) / len(xs) for i in range(len(xs))], color=colour(group[0]), label=_label(group),
                    lw=2 if group[0] == "stellar" else 1)
        ax.set_xscale("log")
        ax.set_xlabel("short-flow FCT (µs), lower is better")
        ax.set_ylabel("CDF")
        ax.set_title(s)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"cdf_short_fct_{''.join(c if c.isalnum() or c in '-_' else '_' for c in s).strip('_')}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
