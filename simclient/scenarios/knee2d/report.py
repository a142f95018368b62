"""The planar knee's report: the text, the histories and plots (the thesis' figures 5.9-5.28), and its
studies' comparison on shared axes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.results import pyplot, save_table
from simclient.scenarios._base import Progress, Summary

__all__ = ["text", "save", "study_figure"]


def text(summary: Summary) -> str:
    """The run's report: flexion, contact periods, the largest indentation, force and ligament forces."""
    periods = "; ".join(f"{c['start_flexion_deg']:.1f} -> {c['end_flexion_deg']:.1f} deg"
                        for c in summary["contact_periods"]) or "none"
    lig = ", ".join(f"{k} {v:.0f} N" for k, v in summary["max_ligament_force_N"].items())
    return "\n".join([
        f"knee2d ({summary['geometry']}, {summary['law']}, {summary['material']}, A = {summary['amplitude_N']:g} N): "
        f"flexion {summary['initial_flexion_deg']:.2f} -> {summary['final_flexion_deg']:.2f} deg in "
        f"{summary['t_final_s']:.2f} s; {summary['wall_s']:.2f} s wall",
        f"  contact periods: {periods}",
        f"  max indentation {summary['max_indentation_m'] * 1e3:.4f} mm, max force {summary['max_force_N']:.1f} N, "
        f"first impact's hysteresis {summary['first_impact_hysteresis_J']:.3e} J",
        f"  max ligament forces: {lig}"] + ([f"  FAILED: {summary['message']}"] if not summary.ok else []))


def _knee2d_axes(ax: Any, h: dict[str, np.ndarray], label: str | None = None, first: tuple[float, float] | None = None) -> None:
    """Draw one planar-knee run on the 2 x 3 axes of :func:`save` and :func:`study_figure`."""
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


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
    """Save the planar knee's histories (NPZ, CSV) and plots (flexion, indentation, force,
    force-indentation loops, ligament forces, contact-point trajectory) to ``out``."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    h = summary.artifacts["history"]
    files = [out / "knee2d.npz", out / "knee2d.csv", out / "knee2d.png"]
    save_table(h, files[0], files[1])
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


def study_figure(plt: Any, cases: list[tuple[str, Summary]]) -> Any:
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
