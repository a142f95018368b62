"""The prosthetic knee's report: the text, and the paper's Fig. 6 (knee angle, body 1's motion, the
stop's penetration and force) with the histories, for one run or a study's cases side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.results import pyplot, save_table
from simclient.scenarios._base import Progress, Summary

__all__ = ["text", "save", "save_cases", "save_study"]


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """One run's histories and Fig. 6 (:func:`save_cases` of the run alone, named by its law)."""
    return save_cases([(summary["law"], summary)], out)


def save_study(study: Any, cases: list[tuple[str, Summary]], out: Path) -> list[Path]:
    """A study's cases side by side (:func:`save_cases`, named by the study)."""
    return save_cases(cases, out, name=study.name)


def text(summary: Summary) -> str:
    """The run's report: the assembly, the joints' drift, the stop's penetration and force, the knee angle."""
    k = summary["knee_flexion_deg"]
    return "\n".join([
        f"prosthetic-knee ({summary['law']}): assembly residual {summary['assembly_residual_m']:.1e} m, joint "
        f"drift <= {summary['max_link_length_drift_m']:.1e} m; {summary['wall_s']:.2f} s wall",
        f"  stop: max penetration {summary['max_penetration_m'] * 1e3:.3f} mm, peak force "
        f"{summary['peak_contact_force_N']:.0f} N (width {summary['peak_width_s'] * 1e3:.1f} ms at half height), "
        f"in contact {summary['contact_duration_s']:.3f} s, {summary['impacts']} onset(s)",
        f"  knee angle {k['min']:.2f} .. {k['max']:.2f} deg"])


def save_cases(cases: list[tuple[str, Summary]], out: Path, name: str = "prosthetic_knee") -> list[Path]:
    """The prosthetic knee's histories (NPZ, CSV per case) and the paper's Fig. 6 for every case side
    by side: the knee angle, body 1's angular velocity and acceleration, the stop's penetration and
    force (zoomed on the first contact)."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for label, s in cases:
        npz, csv = out / f"{name}_{label}.npz", out / f"{name}_{label}.csv"
        save_table(s.artifacts["history"], npz, csv)
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
