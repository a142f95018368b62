"""The natural knee's report: the text against Bei & Fregly's Table 3, the pressure maps, and the
clearance study's ratios."""

from __future__ import annotations

from pathlib import Path
from typing import Any


from simclient.results import draw_compartments, pressure_levels, pyplot
from simclient.scenarios._base import Progress, Summary
from simclient.scenarios.artificial_knee import REPORT_ROWS

__all__ = ["text", "save", "study_figure"]


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """The run's pressure maps (:func:`save_maps`)."""
    return save_maps(out, summary)


def text(summary: Summary) -> str:
    """The run's report: the compartments at large and small strain against Bei & Fregly's Table 3."""
    lines = [f"natural-knee: {summary['load_N']:g} N at {summary['flexion_deg']:g} deg flexion, E = "
             f"{summary['E_Pa'] / 1e6:g} MPa, {summary['element_grid'][0]} x {summary['element_grid'][1]} elements "
             f"per compartment: {summary['wall_s']:.1f} s wall"]
    if not summary.ok:
        return "\n".join([*lines, f"  FAILED: {summary['message']}"])
    lines.append(f"  {'':24s}{'large m':>10s}{'large l':>10s}{'small m':>10s}{'small l':>10s}   "
                 f"{'B&F large m / l':>17s}{'B&F small m / l':>18s}")
    for key, label, scale in REPORT_ROWS:
        ours = [summary["strain"][st]["compartments"][n][key] * scale for st in ("large", "small")
                for n in ("medial", "lateral")]
        paper = [summary["table_3"][st][n][key] * scale for st in ("large", "small") for n in ("medial", "lateral")]
        lines.append(f"  {label:24s}" + "".join(f"{v:10.4g}" for v in ours)
                     + f"   {paper[0]:8.4g} / {paper[1]:<8.4g}{paper[2]:8.4g} / {paper[3]:<8.4g}")
    r = summary["large_over_small"]
    lines.append("  large / small strain: " + "; ".join(
        f"{n}: force {r[n]['force_N']:.4f}, area {r[n]['area_m2']:.4f}, peak pressure {r[n]['peak_pressure_Pa']:.4f}"
        for n in ("medial", "lateral")) + " (Bei & Fregly: peak 1.083 medial, 1.096 lateral)")
    if "large_over_small_refined" in summary:
        r = summary["large_over_small_refined"]
        conv = all(summary["strain"][st]["refined"]["converged"] for st in ("small", "large"))
        lines.append(f"  on grids refined to {summary['refine_tol']:.2%} ({'converged' if conv else 'NOT converged'}): "
                     + "; ".join(f"{n}: force {r[n]['force_N']:.4f}, area {r[n]['area_m2']:.4f}, peak pressure "
                                 f"{r[n]['peak_pressure_Pa']:.4f}" for n in ("medial", "lateral")))
    lines.append("  compartment forces over the load: " + ", ".join(
        f"{st} {v:.5f}" for st, v in summary["force_sum_over_load"].items()))
    return "\n".join(lines)


def save_maps(out: Path, summary: Summary) -> list[Path]:
    """Save the natural knee's pressure maps: ``natural_knee_pressure.png`` (small and large strain,
    both compartments on the tibia's x-z plane, mm, MPa) and the maps as ``natural_knee.zarr`` (per
    strain and compartment, aligned with the element grid, Pa)."""
    import zarr

    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    knees = summary.artifacts["knees"]
    group = zarr.open_group(out / "natural_knee.zarr", mode="w")
    fig, axes = plt.subplots(1, len(knees), figsize=(5.5 * len(knees), 4.2), squeeze=False, layout="constrained")
    levels = pressure_levels(max(r.peak_pressure for _, res in knees.values() for r in res["results"].values()) / 1e6)
    for ax, (strain, (knee, res)) in zip(axes[0], knees.items()):
        maps = {name: (knee.contact.compartments[name].grid, r.pressure) for name, r in res["results"].items()}
        cs = draw_compartments(ax, maps, levels)
        for name, (grid, pressure) in maps.items():
            group.create_array(f"{strain}/{name}", data=pressure.reshape(grid.shape))
        ax.set_title(f"{strain} strain: peak {max(r.peak_pressure for r in res['results'].values()) / 1e6:.2f} MPa")
        ax.set_xlabel("z (lateral) [mm]")
        ax.set_ylabel("x (anterior) [mm]")
        ax.set_aspect("equal")
    fig.colorbar(cs, ax=axes[0].tolist(), label="pressure [MPa]")
    fig.savefig(out / "natural_knee_pressure.png", dpi=110)
    plt.close(fig)
    return [out / "natural_knee.zarr", out / "natural_knee_pressure.png"]


def study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
    """Per compartment, the peak pressure's against the contact area's large/small-strain ratio of
    every case, the closed form for its gap at its small-strain peak strain, Bei & Fregly's Table 3
    and the done-when's box (area within 3 %, peak 1.08-1.10)."""
    from simclient.contact import LinearLayer, power_gap_strain_ratios

    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    t = cases[0][1]["table_3"] if cases else {}
    for ax, side in zip(axes, ("medial", "lateral")):
        ax.add_patch(plt.Rectangle((0.97, 1.08), 0.04, 0.02, color="0.9", label="area within 3 %, peak 1.08-1.10"))
        for k, (label, s) in enumerate(cases):
            if not s.ok:
                continue
            r = s["large_over_small"][side]
            M = LinearLayer(s["E_Pa"], s["nu"]).aggregate_modulus  # Pa
            eps0 = s["strain"]["small"]["compartments"][side]["peak_pressure_Pa"] / M
            peak, area = power_gap_strain_ratios(eps0, s["clearance_exponent"])
            ax.plot(r["area_m2"], r["peak_pressure_Pa"], "o", color=f"C{k}", label=f"{label} measured")
            ax.plot(area, peak, "o", mfc="none", color=f"C{k}", label=f"{label} closed form")
        if not t:
            continue
        ax.plot(t["large"][side]["area_m2"] / t["small"][side]["area_m2"],
                t["large"][side]["peak_pressure_Pa"] / t["small"][side]["peak_pressure_Pa"], "k*", ms=12,
                label="Bei & Fregly, Table 3")
        ax.set(xlabel="contact area, large / small strain", title=f"{side} compartment", xlim=(0.94, 1.01))
    axes[0].set_ylabel("peak pressure, large / small strain")
    axes[1].legend(fontsize=7, loc="lower left")
    return fig
