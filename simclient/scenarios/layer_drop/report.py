"""The layer drop's report: the text, the histories and plots of a drop, and the creep-time study's
restitution and largest indentation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from simclient.results import pyplot, save_table
from simclient.scenarios._base import Progress, Summary

__all__ = ["text", "save", "study_figure"]

def _restitution(summary: Summary) -> str:
    """The restitution as reported: none where the ball did not leave the layer."""
    e = summary["restitution"]
    return "none (the ball did not leave the layer)" if e is None else f"{e:.5f}"


def text(summary: Summary) -> str:
    """The run's report: the ball and the layer, the indentation and contact time against the closed forms."""
    layer = summary["layer"]
    kind = (f"viscoelastic (rho {layer['rho']:g}, creep time {layer['creep_time_s']:g} s)" if layer.get("viscoelastic")
            else "elastic")
    lines = [f"layer-drop: a {summary['mass_kg'] * 1e3:g} g ball (R {summary['radius_m'] * 1e3:g} mm) at "
             f"{summary['v0_m_s']:g} m/s on a {layer['thickness_m'] * 1e3:g} mm {kind} layer, E "
             f"{layer['E_Pa'] / 1e6:g} MPa, {layer['strain']} strain, {summary['element_grid'][0]} x "
             f"{summary['element_grid'][1]} elements: {summary['steps']} steps, {summary['rhs']} right-hand sides, "
             f"{summary['wall_s']:.2f} s wall"]
    closed = summary.get("closed_form", {})
    bounds = "".join(f"; {name} elastic layer {c['max_indentation_m'] * 1e6:.3f} um, {c['contact_time_s'] * 1e3:.4f} ms"
                     for name, c in closed.items())
    lines += [f"  largest indentation {summary['max_indentation_m'] * 1e6:.3f} um, contact time "
              f"{summary['contact_time_s'] * 1e3:.4f} ms (closed form{'s' if len(closed) > 1 else ''}{bounds or ': none'})",
              f"  restitution {_restitution(summary)}; energy lost {summary['energy_lost_J']:.4g} J of "
              f"{summary['energy_in_J']:.4g} J",
              f"  peak force {summary['peak_force_N']:.4g} N, peak pressure {summary['peak_pressure_Pa'] / 1e6:.4g} MPa, "
              f"largest contact area {summary['max_area_m2'] * 1e6:.4g} mm^2"]
    return "\n".join(lines)


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """The layer drop's history (``layer_drop.npz``, ``.csv``) and plots (``layer_drop.png``): the
    force against the indentation (a loop where the layer dissipates) with the closed forms' ``k
    d^2``, the force and contact area against time, the ball's height and speed, and the pressure
    map at the peak force (MPa, over the elements, mm)."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h, load, system, res = (summary.artifacts[k] for k in ("history", "load", "system", "result"))
    files = [out / "layer_drop.npz", out / "layer_drop.csv", out / "layer_drop.png"]
    save_table(h, files[0], files[1])
    fig, ax = plt.subplots(2, 2, figsize=(12, 9))
    d = h["indentation_m"] * 1e6
    ax[0, 0].plot(d, h["force_N"], label="layer")
    for name, c in summary.get("closed_form", {}).items():
        dd = np.linspace(0.0, max(d.max(), 1e-9) * 1e-6, 200)
        ax[0, 0].plot(dd * 1e6, c["k_N_m2"] * dd**2, "--", lw=0.8, label=f"k d^2, {name} elastic layer")
    ax[0, 0].set(xlabel="indentation [um]", ylabel="force [N]", title="force against indentation")
    ax[0, 0].legend(fontsize=8)
    ax[0, 1].plot(h["t_s"] * 1e3, h["force_N"])
    twin = ax[0, 1].twinx()
    twin.plot(h["t_s"] * 1e3, h["area_m2"] * 1e6, "C1")
    ax[0, 1].set(xlabel="t [ms]", ylabel="force [N]", title="force (blue) and contact area (orange)")
    twin.set_ylabel("contact area [mm^2]")
    ax[1, 0].plot(h["t_s"] * 1e3, h["height_m"] * 1e6)
    twin = ax[1, 0].twinx()
    twin.plot(h["t_s"] * 1e3, h["vz_m_s"], "C1")
    ax[1, 0].set(xlabel="t [ms]", ylabel="lowest point over the layer [um]",
                 title="height (blue) and speed (orange)" + ("" if summary["restitution"] is None
                                                             else f": restitution {summary['restitution']:.4f}"))
    twin.set_ylabel("vz [m/s]")
    k = int(np.argmax(h["force_N"]))
    system.set_state(res.sol(h["t_s"][k]))
    load(float(h["t_s"][k]), system)
    r, grid = load.last["layer"], load.contact.compartments["layer"].grid
    if r.active.any():
        X, Y = (grid.centre[:, i].reshape(grid.shape) * 1e3 for i in (0, 1))
        cs = ax[1, 1].contourf(X, Y, np.nan_to_num(r.pressure.reshape(grid.shape)) / 1e6, levels=15, cmap="viridis")
        fig.colorbar(cs, ax=ax[1, 1], label="pressure [MPa]")
    ax[1, 1].set(xlabel="x [mm]", ylabel="y [mm]", title=f"pressure at the peak force (t = {h['t_s'][k] * 1e3:.3f} ms)",
                 aspect="equal")
    layer = summary["layer"]
    fig.suptitle(f"layer-drop: {summary['mass_kg'] * 1e3:g} g ball, R {summary['radius_m'] * 1e3:g} mm, at "
                 f"{summary['v0_m_s']:g} m/s; layer {layer['thickness_m'] * 1e3:g} mm, E {layer['E_Pa'] / 1e6:g} MPa, "
                 f"nu {layer['nu']:g}, {layer['strain']} strain"
                 + (f", rho {layer['rho']:g}, creep time {layer['creep_time_s']:g} s" if layer.get("viscoelastic") else ""))
    fig.tight_layout()
    fig.savefig(files[2], dpi=110)
    plt.close(fig)
    return files


def study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
    """Against the creep time (log scale): the restitution, and the largest indentation between the
    closed forms of the elastic layers at the relaxed and the instantaneous modulus; each case's
    force-indentation loop."""
    fig, ax = plt.subplots(1, 3, figsize=(16, 5))
    runs = sorted(((s["layer"].get("creep_time_s", math.inf), label, s) for label, s in cases if s.ok),
                  key=lambda x: x[0])
    T = [t for t, _, _ in runs]
    ax[0].semilogx(T, [s["restitution"] for *_, s in runs], "o-")
    ax[0].set(xlabel="creep time [s]", ylabel="restitution", title="restitution")
    ax[1].semilogx(T, [s["max_indentation_m"] * 1e6 for *_, s in runs], "o-", label="layer")
    for name, style in (("relaxed", "--"), ("instantaneous", ":")):
        bound = [s["closed_form"][name]["max_indentation_m"] * 1e6 for *_, s in runs if name in s.get("closed_form", {})]
        if bound:
            ax[1].axhline(bound[0], ls=style, c="k", lw=0.8, label=f"{name} elastic layer (closed form)")
    ax[1].set(xlabel="creep time [s]", ylabel="largest indentation [um]", title="largest indentation")
    ax[1].legend(fontsize=8)
    for _, label, s in runs:
        h = s.artifacts["history"]
        ax[2].plot(h["indentation_m"] * 1e6, h["force_N"], label=label)
    ax[2].set(xlabel="indentation [um]", ylabel="force [N]", title="force against indentation")
    ax[2].legend(fontsize=8)
    return fig
