"""The bouncing ball's report: the text, the histories (NPZ, CSV) and the plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simclient.scenarios._base import Progress, Summary
from simclient.results import pyplot as _pyplot
from simclient.results import save_surfaces_vtk

__all__ = ["text", "save"]


def text(summary: Summary) -> str:
    """The run's report: impacts, indentations against Hertz's closed form, energy, windows."""
    a = summary["analytic"]
    times = ", ".join(f"{t:.4f}" for t in summary["impact_times_s"])
    depths = ", ".join(f"{d * 1e6:.3f}" for d in summary["max_indentation_m"])
    lines = [f"bouncing-ball ({summary['law']}, {summary['method']}, {summary['interpolation']}): "
             f"{summary['impacts']} impacts" + (f" at {times} s" if times else ""),
             f"  max indentation {f'{depths} um' if depths else 'none'} "
             f"(Hertz closed form {a['max_indentation'] * 1e6:.3f} um)"]
    if "rolling" in summary.values:
        r = summary["rolling"]
        lines.append(f"  rolling at {r['vx_after_first_impact_m_s']:.6f} m/s after the first impact (5/7 vx: "
                     f"{r['closed_form_vx_m_s']:.6f} m/s), {r['vx_final_m_s']:.6f} m/s at the end"
                     + (f"; vy {r['vy_final_m_s']:.6f} m/s at the end (5/7 vy: {r['closed_form_vy_m_s']:.6f} m/s)"
                        if r["closed_form_vy_m_s"] else ""))
    if "chart_switches" in summary.values:
        n = summary["chart_switches"]
        lines.append(f"  the ball's atlas ({summary['tables']['ball']}, {summary['tables']['ball_chart']}): "
                     f"{n} chart switch{'' if n == 1 else 'es'}")
    lines.append(f"  energy drift {summary['energy_drift']:.2e}; {summary['steps']} steps, "
                 f"{summary['rhs_evaluations']} rhs evaluations, {summary['wall_s']:.3f} s wall")
    for name, st in summary["windows"].items():
        lines.append(f"  window {name} {st['extent'][0]}x{st['extent'][1]}: {st['updates']} updates, "
                     f"{st['records_fetched']} records ({st['bytes_fetched'] / 1e6:.2f} MB) in {st['requests']} "
                     f"requests, {st['wait_s'] * 1e3:.1f} ms waiting")
    return "\n".join(lines)


def window_steps(moves: dict[str, list[tuple[float, Any]]], ended: float) -> dict[str, tuple[list[float], list[int]]]:
    """Each window's first record in v (``rj0``) from its opening to the run's end, against the wall
    time (s) since the first window opened: ``moves`` as the windows record them (``(time, block)``,
    ``time.perf_counter`` seconds), ``ended`` when the run ended."""
    t0 = min(m[0][0] for m in moves.values())
    return {name: ([x[0] - t0 for x in m] + [ended - t0], [x[1].rj0 for x in m] + [m[-1][1].rj0])
            for name, m in moves.items()}


def save(summary: Summary, out: Path, progress: Progress | None = None) -> list[Path]:
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
    for name, (wall, rj0) in window_steps(summary.artifacts["moves"], summary.artifacts["ended"]).items():
        ax[1, 1].step(wall, rj0, where="post", label=f"{name} window rj0")
    ax[1, 1].set(xlabel="wall time since the windows opened [s]", ylabel="first record of the window (v)",
                 title="window moves during the run")
    ax[1, 1].legend()
    fig.tight_layout()
    fig.savefig(files[2], dpi=110)
    plt.close(fig)
    return files + save_surfaces_vtk(summary.artifacts["result"], summary.artifacts["system"], out, "bouncing_ball",
                                   progress=progress)
