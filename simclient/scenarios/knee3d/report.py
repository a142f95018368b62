"""The 3D knee's report: the text, the histories and plots against flexion, the surfaces' VTK series,
and the placement study's matrix of the thesis' behaviours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.results import pyplot, save_surfaces_vtk, save_table
from simclient.scenarios._base import Progress, Summary

__all__ = ["text", "save", "study_figure"]


def text(summary: Summary) -> str:
    """The run's report: flexion reached, contacts, the largest ligament force, internal rotation."""
    return "\n".join([
        f"knee3d: {summary['final_flexion_deg']:.1f} deg flexion at t = {summary['t_final_s']:.3f} s; first "
        f"contact {summary['first_contact']}; contact periods {summary['contacts']}; largest ligament force "
        f"{summary['peak_ligament']}; {summary['wall_s']:.2f} s wall",
        "  internal rotation [deg] by flexion: " + ", ".join(
            f"{k}: {v:.1f}" for k, v in summary["internal_rotation_deg"].items())])


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """Save the knee's histories (NPZ, CSV) and plots against flexion to ``out``."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h = summary.artifacts["history"]
    files = [out / "knee3d.npz", out / "knee3d.csv", out / "knee3d.png"]
    save_table(h, files[0], files[1])
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
    return files + save_surfaces_vtk(summary.artifacts["result"], summary.artifacts["system"], out, "knee3d",
                                   progress=progress)


def study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
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
