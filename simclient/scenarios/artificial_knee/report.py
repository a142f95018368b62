"""The artificial knee's report: the text, and the gait cycle's pressure maps (a Zarr series for the
store's pages, a VTK series for ParaView) and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.results import draw_compartments, pressure_levels, pyplot, save_pressure_vtk, save_pressure_zarr
from simclient.scenarios._base import Progress, Summary
from simclient.scenarios.artificial_knee import REPORT_ROWS

__all__ = ["text", "save", "save_gait"]


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """The gait cycle's maps and plots (:func:`save_gait`), where the run had one."""
    gait = summary.artifacts.get("gait")
    if gait is None:
        return []
    return save_gait(out, gait, summary.artifacts["knee"], summary.artifacts["knee"].params)


def text(summary: Summary) -> str:
    """The run's report: the static settles, the gait cycle's figures and the compartments at maximum load."""
    lines = [f"artificial-knee ({summary['material']} UHMWPE, {summary['element_grid'][0]} x "
             f"{summary['element_grid'][1]} elements per compartment, {summary['usable_elements']} usable): "
             f"{summary['wall_s']:.1f} s wall"]
    if not summary.ok:
        return "\n".join([*lines, f"  FAILED: {summary['message']}"])
    for row in summary.get("static", []):
        c = row["compartments"]
        lines.append(f"  static {row['flexion_deg']:4.0f} deg {row['load_N']:6.0f} N: medial "
                     f"{c['medial']['force_N']:7.1f} N, lateral {c['lateral']['force_N']:7.1f} N, SI "
                     f"{row['si_mm']:+.3f} mm, ML {row['ml_mm']:+.3f} mm, VV {row['varus_valgus_deg']:+.3f} deg")
    if "gait" in summary:
        g = summary["gait"]
        lines.append(f"  gait cycle: {g['wall_s']:.2f} s wall, {g['evaluations']} contact evaluations, "
                     f"{g['element_casts']} ray casts ({g['us_per_element']:.1f} us each with everything, "
                     f"{g['us_per_element_full_search']:.2f} us per element evaluation alone); force imbalance <= "
                     f"{g['max_force_imbalance_stance']:.1%} of the load in stance, {g['max_force_imbalance']:.1%} "
                     f"overall; maximum axial load at t = {summary['t_max_load_s']:.2f} s:")
    lines.append(f"  {'':24s}{'medial':>12s}{'lateral':>12s}")
    c = summary["compartments"]
    for key, label, scale in (*REPORT_ROWS, ("active_elements", "active elements", 1)):
        lines.append(f"  {label:24s}{c['medial'][key] * scale:12.4g}{c['lateral'][key] * scale:12.4g}")
    if "pressure_pass" in summary:
        pp = summary["pressure_pass"]
        lines.append(f"  pressure pass, {pp['element_grid'][0]} x {pp['element_grid'][1]} elements at the same pose:")
        for key, label, scale in REPORT_ROWS:
            lines.append(f"  {label:24s}" + "".join(f"{pp['compartments'][n][key] * scale:12.4g}"
                                                    for n in ("medial", "lateral")))
        r = pp["over_forward_run"]
        lines.append("  pass / forward run: force " + " / ".join(f"{r[n]['force_N']:.3f}" for n in ("medial", "lateral"))
                     + ", torque " + " / ".join(f"{r[n]['torque_Nm']:.3f}" for n in ("medial", "lateral"))
                     + " (medial / lateral; Bei & Fregly: insensitive to the grid)")
    if "refined_pass" in summary:
        rp = summary["refined_pass"]
        last = rp["levels"][-1]
        grids = " / ".join(f"{g[0]} x {g[1]}" for g in last["element_grid"].values())
        lines.append(f"  refined pass at the same pose: {len(rp['levels']) - 1} zooms, last {grids} elements "
                     f"(medial / lateral), last change {last['change']:.2%} "
                     f"({'converged' if rp['converged'] else 'NOT converged'} to {rp['tol']:.2%}), "
                     f"{rp['wall_s']:.2f} s:")
        for key, label, scale in REPORT_ROWS:
            lines.append(f"  {label:24s}" + "".join(f"{rp['compartments'][n][key] * scale:12.4g}"
                                                    for n in ("medial", "lateral")))
    return "\n".join(lines)


def save_gait(out: Path, gait: dict[str, Any], knee: Any, params: Any) -> list[Path]:
    """Save the artificial knee's gait cycle to ``out``: the pressure maps as a Zarr v3 group
    ``pressure.zarr`` (one array per compartment, shape (times, nu, nv) in Pa aligned with the
    element grid, chunked one time step per chunk, NaN where no element is usable, plus ``t_s``
    and the element centres ``x_m``/``z_m``), the histories (CSV), contour plots of the
    pressure at the instant of maximum axial load and the histories' plot."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h = gait["history"]
    centres = {name: knee.contact.compartments[name].grid.centre.reshape(*knee.contact.compartments[name].grid.shape, 3)
               for name in gait["maps"]}
    save_pressure_zarr(out / "pressure.zarr", np.asarray(h["t_s"]), centres, gait["maps"],
                       {"material": params.material, "element_grid": list(params.grid),
                        "frame": "insert (tibial) table frame: +y superior, +z medial"})
    series = save_pressure_vtk(out, "artificial_knee_pressure", np.asarray(h["t_s"]), centres, gait["maps"])
    keys = [k for k in h if len(h[k]) == len(h["t_s"])]
    np.savetxt(out / "artificial_knee.csv", np.column_stack([h[k] for k in keys]), delimiter=",",
               header=",".join(keys), comments="")
    # contour maps at maximum axial load, both compartments on the insert's x-z plane (mm)
    k_max = int(np.argmax(h["load_N"]))
    fig, ax = plt.subplots(1, 1, figsize=(7, 6))
    levels = pressure_levels(max(np.nanmax(m[k_max]) for m in gait["maps"].values()) / 1e6)
    cs = draw_compartments(ax, {name: (knee.contact.compartments[name].grid, maps[k_max])
                                for name, maps in gait["maps"].items()}, levels)
    fig.colorbar(cs, label="contact pressure [MPa]")
    ax.set(xlabel="z (medial +) [mm]", ylabel="x (posterior +) [mm]", aspect="equal",
           title=f"{params.material} UHMWPE, t = {h['t_s'][k_max]:.2f} s, axial load {h['load_N'][k_max]:.0f} N")
    fig.tight_layout()
    fig.savefig(out / "artificial_knee_pressure.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    t = np.asarray(h["t_s"])
    panels: list[tuple[Any, list[tuple[str, str | None]], dict[str, str]]] = [  # axes, curves (key, label), labels
        (ax[0, 0], [("load_N", "axial load"), ("medial_N", "medial contact"), ("lateral_N", "lateral contact")],
         {"ylabel": "force [N]", "title": "loads"}),
        (ax[0, 1], [("flexion_deg", None)], {"ylabel": "flexion [deg]", "title": "prescribed flexion"}),
        (ax[1, 0], [("si_mm", "superior-inferior"), ("ml_mm", "medial-lateral")],
         {"ylabel": "translation from neutral [mm]", "title": "predicted translations"}),
        (ax[1, 1], [("varus_valgus_deg", None)], {"ylabel": "varus-valgus [deg]", "title": "predicted rotation"}),
    ]
    for a, curves, labels in panels:
        for key, label in curves:
            a.plot(t, h[key], label=label)
        a.set(xlabel="t [s]", **labels)
        if len(curves) > 1:
            a.legend()
    fig.tight_layout()
    fig.savefig(out / "artificial_knee.png", dpi=110)
    plt.close(fig)
    files = ["pressure.zarr", "artificial_knee.csv", "artificial_knee_pressure.png", "artificial_knee.png"]
    if "refined_pass" in gait:
        refined = gait["refined_pass"]
        _refinement_figure(refined, f"{params.material} UHMWPE, refined pass at t = "
                           f"{h['t_s'][k_max]:.2f} s").savefig(out / "artificial_knee_refined.png", dpi=110)
        plt.close("all")
        files.append("artificial_knee_refined.png")
        finest = refined.grids[-1]  # (its pressure maps for ParaView too: one instant)
        series += save_pressure_vtk(out, "artificial_knee_refined", np.array([h["t_s"][k_max]]),
                                    {n: g.centre.reshape(*g.shape, 3) for n, g in finest.items()},
                                    {n: refined.result[n].pressure.reshape(1, *g.shape) for n, g in finest.items()})
    return [out / f for f in files] + list(series)


def _refinement_figure(refinement: Any, title: str) -> Any:
    """A refined pass (:class:`simclient.contact.Refinement`) on the insert's x-z plane: per
    compartment, the finest level's pressure map (with the first level's contact outline) and its
    force, peak pressure and area against the level's element size, relative to the finest."""
    plt = pyplot()
    names = list(refinement.result)
    fig, ax = plt.subplots(2, len(names), figsize=(6 * len(names), 7), squeeze=False)
    for col, name in enumerate(names):
        g, res = refinement.grids[-1][name], refinement.result[name]
        X, Z = (g.centre[:, k].reshape(g.shape) * 1e3 for k in (0, 2))
        cs = ax[0, col].contourf(Z, X, res.pressure.reshape(g.shape) / 1e6, levels=15, cmap="viridis")
        first = refinement.grids[0][name]
        ax[0, col].contour(first.centre[:, 2].reshape(first.shape) * 1e3, first.centre[:, 0].reshape(first.shape) * 1e3,
                           refinement.results[0][name].active.reshape(first.shape).astype(float), levels=[0.5],
                           colors="white", linewidths=0.8)
        fig.colorbar(cs, ax=ax[0, col], label="contact pressure [MPa]")
        ax[0, col].set(xlabel="z (medial +) [mm]", ylabel="x (posterior +) [mm]", aspect="equal",
                       xlim=(Z.min(), Z.max()), ylim=(X.min(), X.max()),
                       title=f"{name}, finest level: {g.shape[0]} x {g.shape[1]} elements")
        size = [np.linalg.norm(lv[name].edges[lv[name].usable], axis=2).mean() * 1e3 for lv in refinement.grids]
        for key, label in (("force_N", "force"), ("peak_pressure_Pa", "peak pressure"), ("area_m2", "area")):
            values = np.array([r[name].summary()[key] for r in refinement.results])
            ax[1, col].plot(size, values / values[-1], "o-", label=label)
        ax[1, col].set(xscale="log", xlabel="mean element edge [mm]", ylabel="over the finest level",
                       title=f"{name}: by level (tolerance {refinement.tol:g})")
        ax[1, col].tick_params(axis="x", which="minor", labelbottom=False)
        ax[1, col].legend()
    fig.suptitle(f"{title} (white: the first grid's contact)")
    fig.tight_layout()
    return fig
