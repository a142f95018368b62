"""Histories (NPZ, CSV) and plots of scenario runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["save_bouncing_ball", "save_knee3d"]


def save_bouncing_ball(summary: dict[str, Any], out: Path) -> list[Path]:
    """Save the ball's trajectory, the indentation and force histories and plots to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    res, system = summary["_result"], summary["_system"]
    contact = system.contacts[0]
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
        force[k] = contact.law.force(ind[k], 0.0, 1.0) if ind[k] > 0 else 0.0
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
    moves = summary["_moves"]
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


def save_knee3d(summary: dict[str, Any], out: Path) -> list[Path]:
    """Save the knee's histories (NPZ, CSV) and plots against flexion to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    h = summary["_history"]
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
