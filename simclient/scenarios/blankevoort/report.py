"""Blankevoort's knee's report: the text, the envelope's CSV and plots, the layer's stress maps,
and the studies' comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.results import pyplot
from simclient.scenarios._base import Progress, Summary

__all__ = ["text", "save", "study_figure"]

def text(summary: Summary) -> str:
    """The run's report: the envelope at each flexion on both paths, the forces at 95 deg, the largest strain and stress."""
    on = "the plateaus' planes" if summary["tibia"] == "planes" else "the polynomial plateaus"
    lines = [f"blankevoort ({summary['contact']} contact on {on}, E = "
             f"{summary['E_Pa'] / 1e6:g} MPa): {summary['wall_s']:.1f} s wall, {summary['path_solves']} solves; "
             f"largest residuals {summary['max_residual_N']:.2g} N, {summary['max_residual_Nm']:.2g} N m"]
    lines.append(f"  {'path':9s}{'flexion':>9s}{'int rot':>9s}{'varus':>8s}{'AP':>8s}{'ML':>8s}{'PD':>8s}"
                 f"{'medial':>9s}{'lateral':>9s}")
    lines.append(f"  {'':9s}{'[deg]':>9s}{'[deg]':>9s}{'[deg]':>8s}{'[mm]':>8s}{'[mm]':>8s}{'[mm]':>8s}"
                 f"{'[N]':>9s}{'[N]':>9s}")
    for r in summary["envelope"]:
        if abs(r["flexion_deg"] / 10 - round(r["flexion_deg"] / 10)) > 1e-9 and r["flexion_deg"] != 95:
            continue
        t = np.array(r["translation_m"]) * 1e3
        lines.append(f"  {r['path']:9s}{r['flexion_deg']:9.0f}{r['internal_rotation_deg']:9.2f}{r['varus_deg']:8.2f}"
                     f"{t[0]:8.2f}{t[1]:8.2f}{t[2]:8.2f}{r['medial_force_N']:9.1f}{r['lateral_force_N']:9.1f}")
    if "at_95_deg_internal" in summary:
        a = summary["at_95_deg_internal"]
        lines.append(f"  at 95 deg (internal path): medial {a['medial_force_N']:.0f} N, lateral "
                     f"{a['lateral_force_N']:.0f} N; the paper (its specimen): 620 N / 440 N")
    if summary.get("largest_stress"):
        w = summary["largest_stress"]
        lines.append(f"  largest layer stress {w['peak_stress_Pa'] / 1e6:.2f} MPa (displacement "
                     f"{w['max_displacement_m'] * 1e3:.2f} mm): {w['condyle']} condyle, {w['path']} path, "
                     f"{w['flexion_deg']:g} deg; the paper: lateral condyle, internal path, 90 deg")
    if summary.get("largest_strain"):
        e = summary["largest_strain"]
        lines.append(f"  largest bundle strain {e['strain'] * 100:.1f} % ({e['bundle']}, {e['force_N']:.0f} N): "
                     f"{e['path']} path, {e['flexion_deg']:g} deg")
    return "\n".join(lines)


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """Save Blankevoort's envelope to ``out``: ``blankevoort_envelope.csv`` (one row per solved
    flexion and path, with every bundle's strain and tension) and ``blankevoort_envelope.png``
    (internal-external rotation, varus, the femoral origin's translations, the per-condyle contact
    forces and each ligament's most strained bundle against flexion, both paths)."""
    plt = pyplot()
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
    files = [out / "blankevoort_envelope.csv", out / "blankevoort_envelope.png"]
    if summary["contact"] != "rigid":
        files += _maps(plt, out, summary)
    return files


def study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
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


def _maps(plt: Any, out: Path, summary: Summary) -> list[Path]:
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
        return [out / "blankevoort_maps.npz"]
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
    return [out / "blankevoort_maps.npz", out / "blankevoort_maps.png"]
