"""Histories (NPZ, CSV) and plots of scenario runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.scenarios._base import Summary

__all__ = ["save_bouncing_ball", "save_knee3d", "save_artificial_knee"]


def save_bouncing_ball(summary: Summary, out: Path) -> list[Path]:
    """Save the ball's trajectory, the indentation and force histories and plots to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    res, system, contact = summary.artifacts["result"], summary.artifacts["system"], summary.artifacts["contact"]
    t = np.linspace(0.0, float(res.t[-1]), 4001)
    for on in (e for e in res.events if e["type"] == "onset"):  # resolve every impact finely
        t = np.concatenate([t, np.linspace(on["t"] - 1e-4, on["t"] + 4e-4, 301)])
    t = np.unique(np.clip(t, 0.0, float(res.t[-1])))
    y = np.array([res.sol(tt) for tt in t])
    ind = np.empty(len(t))
    force = np.empty(len(t))
    for k, yy in enumerate(y):
        system.set_state(yy)
        ind[k] = max(-system.gap(contact), 0.0)
        force[k] = contact.law.normal_force(ind[k], 0.0, 1.0)  # the elastic part
    files = [out / "bouncing_ball.npz", out / "bouncing_ball.csv", out / "bouncing_ball.png"]
    np.savez(files[0], t=t, position=y[:, 0:3], velocity=y[:, 7:10], indentation=ind, force_elastic=force)
    np.savetxt(files[1], np.column_stack([t, y[:, 0:3], y[:, 7:10], ind, force]), delimiter=",",
               header="t_s,x_m,y_m,z_m,vx_m_s,vy_m_s,vz_m_s,indentation_m,elastic_force_N", comments="")
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    ax[0, 0].plot(t, y[:, 2] * 1e3)
    ax[0, 0].set(xlabel="t [s]", ylabel="ball centre height z [mm]", title="trajectory")
    ax[0, 1].plot(t, ind * 1e6)
    ax[0, 1].axhline(summary["analytic"]["max_indentation"] * 1e6, ls="--", c="k", lw=0.8, label="Hertz closed form")
    ax[0, 1].set(xlabel="t [s]", ylabel="indentation [um]", title="indentation")
    ax[0, 1].legend()
    ax[1, 0].plot(t, force)
    ax[1, 0].set(xlabel="t [s]", ylabel="elastic normal force [N]", title="contact force")
    moves = summary.artifacts["moves"]
    t0 = moves["ground"][0][0]
    for name in ("ground", "ball"):
        m = moves[name] + [(res.wall_s + t0, moves[name][-1][1])]
        ax[1, 1].step([x[0] - t0 for x in m], [x[1].rj0 for x in m], where="post", label=f"{name} window rj0")
    ax[1, 1].set(xlabel="wall time of the run [s]", ylabel="first record of the window (v)",
                 title="window moves during the run")
    ax[1, 1].legend()
    fig.tight_layout()
    fig.savefig(files[2], dpi=110)
    plt.close(fig)
    return files


def save_knee3d(summary: Summary, out: Path) -> list[Path]:
    """Save the knee's histories (NPZ, CSV) and plots against flexion to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    h = summary.artifacts["history"]
    files = [out / "knee3d.npz", out / "knee3d.csv", out / "knee3d.png"]
    np.savez(files[0], **h)
    keys = list(h)
    np.savetxt(files[1], np.column_stack([h[k] for k in keys]), delimiter=",", header=",".join(keys), comments="")
    f = h["flexion_deg"]
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    for side in ("medial", "lateral"):
        ax[0, 0].plot(f, h[f"{side}_indentation_m"] * 1e3, label=side)
        ax[0, 1].plot(f, h[f"{side}_force_N"], label=side)
    ax[0, 0].set(xlabel="flexion [deg]", ylabel="indentation [mm]", title="contact indentation")
    ax[0, 1].set(xlabel="flexion [deg]", ylabel="elastic normal force [N]", title="contact force")
    for k in keys:
        if k.startswith("ligament_"):
            ax[1, 0].plot(f, h[k], label=k[len("ligament_"):-2])
    ax[1, 0].set(xlabel="flexion [deg]", ylabel="force [N]", title="ligament forces")
    ax[1, 1].plot(f, h["internal_rotation_deg"])
    ax[1, 1].set(xlabel="flexion [deg]", ylabel="internal rotation [deg]", title="tibial rotation")
    for a in (ax[0, 0], ax[0, 1]):
        a.legend()
    ax[1, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(files[2], dpi=110)
    plt.close(fig)
    return files


def save_artificial_knee(out: Path, gait: dict[str, Any], knee: Any, params: Any) -> list[str]:
    """Save the artificial knee's gait cycle to ``out``: the pressure maps as a Zarr v3 group
    ``pressure.zarr`` (one array per compartment, shape (times, nu, nv) in Pa aligned with the
    element grid, chunked one time step per chunk, NaN where no element is usable, plus ``t_s``
    and the element centres ``x_m``/``z_m``), the histories (CSV), contour plots of the
    pressure at the instant of maximum axial load and the histories' plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import zarr

    out.mkdir(parents=True, exist_ok=True)
    h = gait["history"]
    root = zarr.open_group(str(out / "pressure.zarr"), mode="w", zarr_format=3)
    root.attrs.update({"units": "Pa", "material": params.material, "element_grid": list(params.grid),
                       "frame": "insert (tibial) table frame: +y superior, +z medial"})
    root.create_array("t_s", data=np.asarray(h["t_s"]))
    for name, maps in gait["maps"].items():
        grid = knee.contact.compartments[name].grid
        arr = root.create_array(name, shape=maps.shape, chunks=(1, *maps.shape[1:]), dtype="f8", fill_value=np.nan)
        arr[:] = maps
        for axis, k in (("x_m", 0), ("z_m", 2)):
            root.create_array(f"{name}_{axis}", data=grid.centre[:, k].reshape(grid.shape))
    keys = [k for k in h if len(h[k]) == len(h["t_s"])]
    np.savetxt(out / "artificial_knee.csv", np.column_stack([h[k] for k in keys]), delimiter=",",
               header=",".join(keys), comments="")
    # contour maps at maximum axial load, both compartments on the insert's x-z plane (mm)
    k_max = int(np.argmax(h["load_N"]))
    fig, ax = plt.subplots(1, 1, figsize=(7, 6))
    vmax = max(np.nanmax(m[k_max]) for m in gait["maps"].values()) / 1e6
    levels = np.linspace(0, max(vmax, 1e-3), 15)
    for name, maps in gait["maps"].items():
        grid = knee.contact.compartments[name].grid
        X = grid.centre[:, 0].reshape(grid.shape) * 1e3
        Z = grid.centre[:, 2].reshape(grid.shape) * 1e3
        P = np.where(grid.usable.reshape(grid.shape), maps[k_max] / 1e6, np.nan)
        cs = ax.contourf(Z, X, P, levels=levels, cmap="viridis")
        ax.contour(Z, X, grid.usable.reshape(grid.shape).astype(float), levels=[0.5], colors="grey", linewidths=0.5)
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
    return [str(out / f) for f in ("pressure.zarr", "artificial_knee.csv", "artificial_knee_pressure.png",
                                   "artificial_knee.png")]
