"""Histories (NPZ, CSV) and plots of scenario runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from simclient.errors import SimClientError
from simclient.scenarios._base import Summary

__all__ = ["save_bouncing_ball", "save_knee3d", "save_knee2d", "save_study", "save_prosthetic_knee",
           "save_artificial_knee", "save_surfaces_vtk", "save_pressure_vtk", "save_pressure_zarr", "save_layer_drop"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save_table(history: dict[str, Any], npz: Path, csv: Path) -> None:
    np.savez(npz, **history)
    keys = list(history)
    np.savetxt(csv, np.column_stack([history[k] for k in keys]), delimiter=",", header=",".join(keys), comments="")


def save_bouncing_ball(summary: Summary, out: Path) -> list[Path]:
    """Save the ball's trajectory, the indentation and force histories and plots to ``out``."""
    plt = _pyplot()
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
        hit = system.place_windows(yy)[0]  # (on windows moved to it: the run has moved them on since)
        ind[k] = max(hit.indentation if hit.converged else -system.gap(contact), 0.0)
        force[k] = contact.law.normal_force(ind[k], 0.0, 1.0)  # the elastic part
    files = [out / "bouncing_ball.npz", out / "bouncing_ball.csv", out / "bouncing_ball.png"]
    np.savez(files[0], t=t, position=y[:, 0:3], velocity=y[:, 7:10], angular_velocity=y[:, 10:13], indentation=ind,
             force_elastic=force)
    np.savetxt(files[1], np.column_stack([t, y[:, 0:3], y[:, 7:10], y[:, 10:13], ind, force]), delimiter=",",
               header="t_s,x_m,y_m,z_m,vx_m_s,vy_m_s,vz_m_s,wx_rad_s,wy_rad_s,wz_rad_s,indentation_m,elastic_force_N",
               comments="")
    fig, ax = plt.subplots(2, 3, figsize=(16, 7))
    p = summary.artifacts["params"]
    ax[0, 2].plot(t, y[:, 7], label="vx")
    ax[0, 2].plot(t, y[:, 11] * p.radius, label="omega_y R (body frame)")
    if "rolling" in summary.values:
        ax[0, 2].axhline(summary["rolling"]["closed_form_vx_m_s"], ls="--", c="k", lw=0.8, label="5/7 vx (rolling)")
    ax[0, 2].set(xlabel="t [s]", ylabel="[m/s]", title=f"sliding and rolling (friction {p.friction:g})")
    ax[0, 2].legend()
    ax[1, 2].axis("off")
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
    return files + save_surfaces_vtk(summary, out, "bouncing_ball")


def save_knee3d(summary: Summary, out: Path) -> list[Path]:
    """Save the knee's histories (NPZ, CSV) and plots against flexion to ``out``."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h = summary.artifacts["history"]
    files = [out / "knee3d.npz", out / "knee3d.csv", out / "knee3d.png"]
    _save_table(h, files[0], files[1])
    keys = list(h)
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
    return files + save_surfaces_vtk(summary, out, "knee3d")


def save_surfaces_vtk(summary: Summary, out: Path, name: str, frames: int = 100, max_side: int = 64) -> list[Path]:
    """The bodies' surfaces over the run, for ParaView: at ``frames`` instants, every contact
    surface as the records its window holds then (the window following the contact as in the
    run; at most ``max_side`` points a side), placed by its body's pose (global frame, m), with the
    normals and the record indices; one ``.vts`` per surface and frame under ``out/vtk/`` and the
    collection ``out/NAME.pvd`` (open it and press play)."""
    from preprocess.export import record_cells, write_grid, write_pvd

    res, system = summary.artifacts["result"], summary.artifacts["system"]
    surfaces: dict[int, tuple[str, Any]] = {}
    for c in system.contacts:
        for side in (c.i, c.j):
            surfaces.setdefault(id(side), (side.window.name, side))
    entries = []
    for k, t in enumerate(np.linspace(0.0, float(res.t[-1]), frames)):
        try:
            system.place_windows(res.sol(t))  # the windows on the contact points, as in the run
        except SimClientError:
            pass  # no contact point at this pose: the windows stay where they are
        for label, surface in surfaces.values():
            w = surface.window
            pts = w.points()
            # at most max_side points a side (the last row and column kept): frames stay small
            su, sv = (np.unique(np.r_[np.arange(0, n, -(-n // max_side)), n - 1]) for n in pts.shape[:2])
            pts = pts[su][:, sv]
            R, origin = system.surface_pose(surface)
            h, b = w.header, w.block
            rows, cols = b.ri0 * h.u_pts + su, b.rj0 * h.v_pts + sv
            f = write_grid(out / "vtk" / f"{name}_{label}_{k:04d}.vts", pts[..., 2:5] @ R.T + origin,
                           {"Normals": pts[..., 5:8] @ R.T, "uv": pts[..., 0:2]},
                           record_cells(rows, cols, h.u_pts, h.v_pts, h.n_rec_v))
            entries.append((t, label, f))
    return [write_pvd(out / f"{name}.pvd", entries)]


def save_pressure_zarr(path: Path, t: np.ndarray, grids: dict[str, np.ndarray], maps: dict[str, np.ndarray],
                       attrs: dict[str, Any]) -> Path:
    """A pressure-map series as a Zarr v3 group (what the store's ``/results`` page plays): ``t_s``
    (s), per compartment ``NAME`` the maps ``(times, nu, nv)`` in Pa (NaN: no usable element), one
    time step per chunk, and the element centres' ``NAME_x_m``/``NAME_z_m`` from ``grids[NAME]``
    (``(nu, nv, 3)``, m); attributes ``units: Pa`` and ``attrs``."""
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.attrs.update({"units": "Pa", **attrs})
    root.create_array("t_s", data=np.asarray(t, dtype=float))
    for name, m in maps.items():
        arr = root.create_array(name, shape=m.shape, chunks=(1, *m.shape[1:]), dtype="f8", fill_value=np.nan)
        arr[:] = m
        for axis, k in (("x_m", 0), ("z_m", 2)):
            root.create_array(f"{name}_{axis}", data=np.ascontiguousarray(grids[name][..., k]))
    return path


def save_pressure_vtk(out: Path, name: str, t: np.ndarray, grids: dict[str, np.ndarray],
                      maps: dict[str, np.ndarray]) -> list[Path]:
    """A pressure-map series for ParaView: per time step and compartment, the element grid
    ``grids[c]`` (element centres, ``(nu, nv, 3)``, m) with point data ``pressure_Pa`` from
    ``maps[c]`` (``(times, nu, nv)``, Pa, NaN where no element is usable); ``out/vtk/*.vts`` and
    the collection ``out/NAME.pvd``."""
    from preprocess.export import write_grid, write_pvd

    entries = []
    for k, tk in enumerate(t):
        for comp, xyz in grids.items():
            f = write_grid(out / "vtk" / f"{name}_{comp}_{k:04d}.vts", xyz, {"pressure_Pa": maps[comp][k]})
            entries.append((float(tk), comp, f))
    return [write_pvd(out / f"{name}.pvd", entries)]


def _knee2d_axes(ax: Any, h: dict[str, np.ndarray], label: str | None = None, first: tuple[float, float] | None = None) -> None:
    """Draw one planar-knee run on the 2 x 3 axes of :func:`save_knee2d` and :func:`save_study`."""
    f, t = h["flexion_deg"], h["t_s"]
    ax[0, 0].plot(t, f, label=label)
    ax[0, 1].plot(f, h["indentation_m"] * 1e3, label=label)
    ax[0, 2].plot(f, h["force_N"], label=label)
    m = h["indentation_m"] > 0
    if first is not None:
        m &= (t >= first[0]) & (t <= first[1])
    ax[1, 0].plot(h["indentation_m"][m] * 1e3, h["force_N"][m], label=label)
    ax[1, 2].plot(h["contact_y_m"] * 1e3, h["contact_x_m"] * 1e3, label=label)
    ax[0, 0].set(xlabel="time [s]", ylabel="flexion [deg]", title="knee flexion")
    ax[0, 1].set(xlabel="flexion [deg]", ylabel="indentation [mm]", title="indentation")
    ax[0, 2].set(xlabel="flexion [deg]", ylabel="normal force [N]", title="contact force")
    ax[1, 0].set(xlabel="indentation [mm]", ylabel="normal force [N]",
                 title="force-indentation" + (" (first impact)" if first is not None else ""))
    ax[1, 2].set(xlabel="y [mm] (global, proximal)", ylabel="x [mm] (global, anterior)",
                 title="contact point on the tibia")
    for a in ax[0, 1:]:
        if not a.xaxis_inverted():
            a.invert_xaxis()  # the knee extends: flexion falls with time


def save_knee2d(summary: Summary, out: Path) -> list[Path]:
    """Save the planar knee's histories (NPZ, CSV) and plots (flexion, indentation, force,
    force-indentation loops, ligament forces, contact-point trajectory) to ``out``."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h = summary.artifacts["history"]
    files = [out / "knee2d.npz", out / "knee2d.csv", out / "knee2d.png"]
    _save_table(h, files[0], files[1])
    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    _knee2d_axes(ax, h)
    for k in h:
        if k.startswith("ligament_"):
            ax[1, 1].plot(h["flexion_deg"], h[k], label=k[len("ligament_"):-2].upper())
    ax[1, 1].set(xlabel="flexion [deg]", ylabel="force [N]", title="ligament forces")
    ax[1, 1].invert_xaxis()
    ax[1, 1].legend()
    fig.suptitle(f"planar knee: {summary['geometry']}, {summary['law']}, {summary['material']}, "
                 f"A = {summary['amplitude_N']:g} N")
    fig.tight_layout()
    fig.savefig(files[2], dpi=110)
    plt.close(fig)
    return files


def save_study(study: Any, cases: list[tuple[str, Summary]], out: Path) -> list[Path]:
    """The comparison plot of a study (a :class:`simclient.scenarios.studies.Study`): for the planar
    knee every case's run on shared axes (the thesis' figures 5.9-5.28) with each case's
    first-impact force-indentation loop; for the 3D knee's placements, which reported behaviours
    each case shows."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    if study.plot == "prosthetic-knee":
        return save_prosthetic_knee(cases, out, name=study.name)
    figures = {"knee3d-checks": _placement_figure, "natural-knee-clearance": _clearance_figure,
               "layer-drop": _layer_drop_figure, "blankevoort": _blankevoort_study_figure}
    fig = figures.get(study.plot, _knee2d_study_figure)(plt, cases)
    fig.suptitle(f"study {study.name}: {study.title}")
    fig.tight_layout()
    files = [out / f"{study.name}.png"]
    fig.savefig(files[0], dpi=110)
    plt.close(fig)
    return files


def _knee2d_study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    for label, s in cases:
        h = s.artifacts["history"]
        periods = s["contact_periods"]
        first = (periods[0]["start_s"], periods[0]["end_s"]) if periods else None
        _knee2d_axes(ax, h, label, first)
        ax[1, 1].plot(h["flexion_deg"], sum(h[k] for k in h if k.startswith("ligament_")), label=label)
    ax[1, 1].set(xlabel="flexion [deg]", ylabel="force [N]", title="total ligament force")
    ax[1, 1].invert_xaxis()  # drawn once, after every case
    peaks = [line.get_ydata().max() for line in ax[1, 0].lines if len(line.get_ydata())]
    if peaks and min(peaks) > 0 and max(peaks) > 20 * min(peaks):
        # loops of very different sizes (the amplitude study's 50 N graze is 1/800 of the 150 N loop)
        low = min(peaks) / 100  # N: the smallest loop over two decades
        xs = [x for line in ax[1, 0].lines for x, y in zip(line.get_xdata(), line.get_ydata()) if y >= low and x > 0]
        ax[1, 0].set(xscale="log", yscale="log", ylim=(low, 2 * max(peaks)), xlim=(min(xs) / 2, 2 * max(xs)),
                     title="force-indentation (first impact, log-log)")
    for a in ax.flat:
        a.legend(fontsize=7)
    return fig


def _clearance_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
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


def _layer_drop_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
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


def _placement_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
    """A matrix: one row per case, one column per reported behaviour (green where it holds), and
    the flexion of the largest internal rotation per case."""
    labels = [label for label, _ in cases]
    keys = list(cases[0][1]["thesis"]) if cases else []
    holds = np.array([[float(s["thesis"][k]) for k in keys] for _, s in cases]).reshape(len(cases), len(keys))
    fig, ax = plt.subplots(1, 2, figsize=(12, max(4, 0.22 * len(cases) + 1.5)), width_ratios=(1, 2))
    ax[0].imshow(holds, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    ax[0].set_xticks(range(len(keys)), keys)
    ax[0].set_yticks(range(len(labels)), labels, fontsize=6)
    ax[0].set_title("holds (green)")
    at = [s["max_internal_rotation_at_flexion_deg"] for _, s in cases]
    peak = [max(s["internal_rotation_deg"].values()) for _, s in cases]
    ax[1].scatter(at, range(len(cases)), c=["g" if p > 0 else "r" for p in peak])
    ax[1].axvspan(65, 75, color="0.9")
    ax[1].set_yticks(range(len(labels)), labels, fontsize=6)
    ax[1].set_ylim(len(cases) - 0.5, -0.5)  # rows aligned with the matrix
    ax[1].set(xlabel="flexion of the largest internal rotation [deg] (red: never internal)",
              title="R27: internal rotation largest at 70 +- 5 deg")
    return fig


def save_prosthetic_knee(cases: list[tuple[str, Summary]], out: Path, name: str = "prosthetic_knee") -> list[Path]:
    """The prosthetic knee's histories (NPZ, CSV per case) and the paper's Fig. 6 for every case side
    by side: the knee angle, body 1's angular velocity and acceleration, the stop's penetration and
    force (zoomed on the first contact)."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for label, s in cases:
        npz, csv = out / f"{name}_{label}.npz", out / f"{name}_{label}.csv"
        _save_table(s.artifacts["history"], npz, csv)
        files += [npz, csv]
    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    for label, s in cases:
        h = s.artifacts["history"]
        t = h["t_s"]
        ax[0, 0].plot(t, h["knee_angle_deg"], label=label)
        ax[0, 1].plot(t, h["body1_omega_rad_s"], label=label)
        ax[0, 2].plot(t, h["body1_alpha_rad_s2"], label=label)
        on = np.nonzero(h["penetration_m"] > 0)[0]
        window = (t >= t[on[0]] - 0.002) & (t <= t[on[0]] + 0.03) if len(on) else np.ones(len(t), bool)
        ax[1, 0].plot(t[window], h["penetration_m"][window] * 1e3, label=label)
        ax[1, 1].plot(t[window], h["contact_force_N"][window], label=label)
        ax[1, 2].plot(t, h["contact_force_N"], label=label)
    ax[0, 0].set(xlabel="time [s]", ylabel="knee angle [deg]", title="knee angle (thigh less shank)")
    ax[0, 1].set(xlabel="time [s]", ylabel="[rad/s]", title="body 1: angular velocity")
    ax[0, 2].set(xlabel="time [s]", ylabel="[rad/s^2]", title="body 1: angular acceleration")
    ax[1, 0].set(xlabel="time [s]", ylabel="penetration [mm]", title="stop: penetration (first contact)")
    ax[1, 1].set(xlabel="time [s]", ylabel="force [N]", title="stop: contact force (first contact)")
    ax[1, 2].set(xlabel="time [s]", ylabel="force [N]", title="stop: contact force (whole run)")
    for a in ax.flat:
        a.legend(fontsize=8)
    fig.suptitle("prosthetic four-bar knee (Markus et al. 2019, Fig. 6)")
    fig.tight_layout()
    files.append(out / f"{name}.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    return files


def save_artificial_knee(out: Path, gait: dict[str, Any], knee: Any, params: Any) -> list[str]:
    """Save the artificial knee's gait cycle to ``out``: the pressure maps as a Zarr v3 group
    ``pressure.zarr`` (one array per compartment, shape (times, nu, nv) in Pa aligned with the
    element grid, chunked one time step per chunk, NaN where no element is usable, plus ``t_s``
    and the element centres ``x_m``/``z_m``), the histories (CSV), contour plots of the
    pressure at the instant of maximum axial load and the histories' plot."""
    plt = _pyplot()
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
    return [str(out / f) for f in files] + [str(f) for f in series]


def _refinement_figure(refinement: Any, title: str) -> Any:
    """A refined pass (:class:`simclient.contact.Refinement`) on the insert's x-z plane: per
    compartment, the finest level's pressure map (with the first level's contact outline) and its
    force, peak pressure and area against the level's element size, relative to the finest."""
    plt = _pyplot()
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


def save_blankevoort(out: Path, summary: Summary) -> list[str]:
    """Save Blankevoort's envelope to ``out``: ``blankevoort_envelope.csv`` (one row per solved
    flexion and path, with every bundle's strain and tension) and ``blankevoort_envelope.png``
    (internal-external rotation, varus, the femoral origin's translations, the per-condyle contact
    forces and each ligament's most strained bundle against flexion, both paths)."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    rows = summary["envelope"]
    bundles = list(rows[0]["bundle_strain"]) if rows else []
    cols = ["flexion_deg", "internal_rotation_deg", "varus_deg", "ap_mm", "ml_mm", "pd_mm", "medial_force_N",
            "lateral_force_N", "residual_N", "residual_Nm", *(f"strain_{n}" for n in bundles),
            *(f"force_N_{n}" for n in bundles)]
    table = [[r["flexion_deg"], r["internal_rotation_deg"], r["varus_deg"], *(np.array(r["translation_m"]) * 1e3),
              r["medial_force_N"], r["lateral_force_N"], r["residual_N"], r["residual_Nm"],
              *r["bundle_strain"].values(), *r["bundle_force_N"].values()] for r in rows]
    with open(out / "blankevoort_envelope.csv", "w") as f:
        f.write("path," + ",".join(cols) + "\n")
        for r, values in zip(rows, table):
            f.write(r["path"] + "," + ",".join(f"{v:.9g}" for v in values) + "\n")
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for path, style in (("internal", "-"), ("external", "--")):
        sel = [v for r, v in zip(rows, table) if r["path"] == path]
        if not sel:
            continue
        a = np.array(sel)
        axes[0, 0].plot(a[:, 0], a[:, 1], style, label=f"internal rotation, {path} torque")
        axes[0, 0].plot(a[:, 0], a[:, 2], style, label=f"varus, {path} torque")
        for k, name in ((3, "AP"), (4, "ML"), (5, "PD")):
            axes[0, 1].plot(a[:, 0], a[:, k], style, label=f"{name}, {path}")
        axes[1, 0].plot(a[:, 0], a[:, 6], style, label=f"medial, {path}")
        axes[1, 0].plot(a[:, 0], a[:, 7], style, label=f"lateral, {path}")
        # each ligament's most strained bundle (the bundles named by ligament: aAC, pAC -> AC)
        strain = a[:, 10:10 + len(bundles)] * 100
        for k, ligament in enumerate(dict.fromkeys(n[1:] for n in bundles)):
            of = [i for i, n in enumerate(bundles) if n[1:] == ligament]
            axes[1, 1].plot(a[:, 0], strain[:, of].max(axis=1), style, color=f"C{k}", label=f"{ligament}, {path}")
    if "at_95_deg_internal" in summary:
        paper = summary["at_95_deg_internal"]["paper"]
        axes[1, 0].plot([95, 95], [paper["medial_force_N"], paper["lateral_force_N"]], "k*", label="paper, 95 deg")
    axes[0, 0].set_ylabel("rotation of the tibia [deg]")
    axes[0, 1].set_ylabel("femoral origin in the tibia frame [mm]")
    axes[1, 0].set_ylabel("contact force [N]")
    axes[1, 1].set_ylabel("strain of the ligament's most strained bundle [%]")
    axes[1, 1].axhline(0, color="k", lw=0.6)
    fig.suptitle(f"Blankevoort 1991 model, {summary['contact']} contact, E = {summary['E_Pa'] / 1e6:g} MPa: "
                 f"largest residuals {summary['max_residual_N']:.1g} N, {summary['max_residual_Nm']:.1g} N m")
    for ax in axes.ravel():
        ax.set_xlabel("flexion [deg]")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "blankevoort_envelope.png", dpi=110)
    plt.close(fig)
    files = [str(out / "blankevoort_envelope.csv"), str(out / "blankevoort_envelope.png")]
    if summary["contact"] != "rigid":
        files += _blankevoort_maps(plt, out, summary)
    return files


def _blankevoort_study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
    """Every case's envelope on shared axes against flexion (the internal path solid, the external
    dashed): the tibia's internal rotation and varus, the femoral origin's AP, ML and PD
    translations, and the two condyles' contact forces together."""
    fig, axes = plt.subplots(2, 3, figsize=(16, 8))
    panels = [("internal rotation [deg]", lambda r: r["internal_rotation_deg"]),
              ("varus [deg]", lambda r: r["varus_deg"]),
              ("AP, anterior [mm]", lambda r: r["translation_m"][0] * 1e3),
              ("ML, medial [mm]", lambda r: r["translation_m"][1] * 1e3),
              ("PD, proximal [mm]", lambda r: r["translation_m"][2] * 1e3),
              ("contact force, both condyles [N]", lambda r: r["medial_force_N"] + r["lateral_force_N"])]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (label, s) in enumerate(cases):
        for path, style in (("internal", "-"), ("external", "--")):
            rows = [r for r in s["envelope"] if r["path"] == path and r["converged"]]
            for ax, (_, value) in zip(axes.flat, panels):
                ax.plot([r["flexion_deg"] for r in rows], [value(r) for r in rows], style,
                        color=colours[k % len(colours)], label=f"{label}, {path}")
    for ax, (name, _) in zip(axes.flat, panels):
        ax.set(xlabel="flexion [deg]", ylabel=name)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    return fig


def _blankevoort_maps(plt: Any, out: Path, summary: Summary) -> list[str]:
    """The paper's Fig. 10: the layer's displacement (mm) and stress (MPa) over each condyle's
    contact at 45 and 90 deg flexion on each path, seen from above in the tibia frame (ML against
    AP, mm): ``blankevoort_maps.png``, and the maps as ``blankevoort_maps.npz`` (per path, flexion
    and condyle: the element centres (m, tibia frame), displacements (m) and stresses (Pa) of the
    elements in contact)."""
    knee = summary.artifacts["knee"]
    rows = {(r["path"], r["flexion_deg"]): r for r in summary["envelope"] if r["converged"]}
    shown = [(path, fl) for fl in (45.0, 90.0) for path in ("internal", "external") if (path, fl) in rows]
    maps = {}
    for path, fl in shown:
        r = rows[(path, fl)]
        q = np.array([*r["translation_m"], *np.radians([fl, r["varus_deg"], r["internal_rotation_deg"]])])
        maps.update({(path, fl, side): m for side, m in knee.layer_map(q).items()})
    np.savez(out / "blankevoort_maps.npz", **{f"{path}_{fl:g}deg_{side}_{name}": a
                                                for (path, fl, side), m in maps.items()
                                                for name, a in zip(("centre_m", "displacement_m", "stress_Pa"), m)})
    if not maps:
        return [str(out / "blankevoort_maps.npz")]
    d_max = max(float(d.max(initial=0.0)) for _, d, _ in maps.values()) * 1e3
    p_max = max(float(p.max(initial=0.0)) for _, _, p in maps.values()) / 1e6
    fig, axes = plt.subplots(2, 4, figsize=(17, 8), squeeze=False)
    for path, fl in shown:
        row, col = (0 if fl == 45.0 else 1), (0 if path == "internal" else 2)
        for j, (quantity, scale, vmax, unit, cmap) in enumerate((("displacement", 1e3, d_max, "mm", "magma"),
                                                                 ("stress", 1e-6, p_max, "MPa", "viridis"))):
            ax = axes[row, col + j]
            peaks = []
            for side in ("medial", "lateral"):
                if (path, fl, side) not in maps:
                    continue
                at, depth, stress = maps[(path, fl, side)]
                value = (depth if quantity == "displacement" else stress) * scale
                if len(value):
                    sc = ax.scatter(at[:, 1] * 1e3, at[:, 0] * 1e3, c=value, s=6, marker="s", cmap=cmap, vmin=0,
                                    vmax=vmax)
                    peaks.append(f"{side[0]} {value.max():.2f}")
            ax.set_title(f"{path} path, {fl:g} deg: {quantity} [{unit}]\npeak {', '.join(peaks)}", fontsize=9)
            ax.set(xlabel="y, medial [mm]", ylabel="x, anterior [mm]", xlim=(-45, 45), ylim=(-30, 30))
            ax.set_aspect("equal")
            if peaks:
                fig.colorbar(sc, ax=ax, shrink=0.7)
    fig.suptitle(f"Blankevoort model, {summary['contact']} layer, E = {summary['E_Pa'] / 1e6:g} MPa: the layer's "
                 "displacement and stress (the paper's Fig. 10)")
    fig.tight_layout()
    fig.savefig(out / "blankevoort_maps.png", dpi=110)
    plt.close(fig)
    return [str(out / "blankevoort_maps.npz"), str(out / "blankevoort_maps.png")]


def save_natural_knee(out: Path, summary: Summary) -> list[str]:
    """Save the natural knee's pressure maps: ``natural_knee_pressure.png`` (small and large strain,
    both compartments on the tibia's x-z plane, mm, MPa) and the maps as ``natural_knee.zarr`` (per
    strain and compartment, aligned with the element grid, Pa)."""
    import zarr

    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    knees = summary.artifacts["knees"]
    group = zarr.open_group(str(out / "natural_knee.zarr"), mode="w")
    fig, axes = plt.subplots(1, len(knees), figsize=(5.5 * len(knees), 4.2), squeeze=False, layout="constrained")
    vmax = max(r.peak_pressure for _, res in knees.values() for r in res["results"].values()) / 1e6
    levels = np.linspace(0, max(vmax, 1e-3), 15)
    for ax, (strain, (knee, res)) in zip(axes[0], knees.items()):
        for name, r in res["results"].items():
            grid = knee.contact.compartments[name].grid
            X = grid.centre[:, 0].reshape(grid.shape) * 1e3
            Z = grid.centre[:, 2].reshape(grid.shape) * 1e3
            P = np.nan_to_num(r.pressure.reshape(grid.shape)) / 1e6
            cs = ax.contourf(Z, X, P, levels=levels, cmap="viridis")
            ax.contour(Z, X, grid.usable.reshape(grid.shape).astype(float), levels=[0.5], colors="grey", linewidths=0.5)
            group.create_array(f"{strain}/{name}", data=r.pressure.reshape(grid.shape))
        ax.set_title(f"{strain} strain: peak {max(r.peak_pressure for r in res['results'].values()) / 1e6:.2f} MPa")
        ax.set_xlabel("z (lateral) [mm]")
        ax.set_ylabel("x (anterior) [mm]")
        ax.set_aspect("equal")
    fig.colorbar(cs, ax=axes[0].tolist(), label="pressure [MPa]")
    fig.savefig(out / "natural_knee_pressure.png", dpi=110)
    plt.close(fig)
    return [str(out / "natural_knee.zarr"), str(out / "natural_knee_pressure.png")]


def save_layer_drop(summary: Summary, out: Path) -> list[Path]:
    """The layer drop's history (``layer_drop.npz``, ``.csv``) and plots (``layer_drop.png``): the
    force against the indentation (a loop where the layer dissipates) with the closed forms' ``k
    d^2``, the force and contact area against time, the ball's height and speed, and the pressure
    map at the peak force (MPa, over the elements, mm)."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h, load, system, res = (summary.artifacts[k] for k in ("history", "load", "system", "result"))
    files = [out / "layer_drop.npz", out / "layer_drop.csv", out / "layer_drop.png"]
    _save_table(h, files[0], files[1])
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
