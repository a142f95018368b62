"""Bei & Fregly's natural knee (2004, Table 3) on a real tibial cartilage surface: a static settle at
30 deg flexion under an axial load, small and large strain.

The tibial cartilage of the lenhart2015 healthy right knee (``natural_tibial_cartilage``, fitted by
``sample_surfaces/real/natural_knee.toml``; both plateaus in one table, its ``thickness`` field the
distance to the tibia bone) is the fixed body; element grids cover each plateau (split at the gap
between them, z = 1 mm; medial: z < 0 in this frame, +x anterior, +y superior, +z lateral). No
femoral cartilage mesh is available, so each femoral condyle is a stated ellipsoid placed over its
plateau (``sample_surfaces/natural_knee_femur.toml``) carrying a 2 mm cartilage layer: the springs
have the combined thickness (Bei & Fregly's one combined layer). E = 4 MPa, nu = 0.45 (Table 3's),
small strain (eq. 1) or large strain (eq. 2).

The model is the artificial knee's (:class:`simclient.scenarios.artificial_knee.ImplantKnee`):
flexion 30 deg, internal-external rotation and anterior-posterior translation held; superior-
inferior and medial-lateral translation and varus-valgus rotation in equilibrium with the load,
found by settling from the first touch and Newton. Assumptions (not in the paper for this knee):
the load of 1000 N acts along -y through the point midway between the compartments' centroids
(Bei & Fregly's split came out 52/48 medial/lateral); 30 x 30 elements per compartment (theirs:
20 x 15), femoral cartilage 2 mm.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simclient.contact import FoundationContact, LinearLayer, element_grid
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.io import Source, read_field
from simclient.scenarios._base import Progress, Scenario, Summary, Tables, check_positive, extent_param, param
from simclient.scenarios.artificial_knee import REPORT_ROWS, ImplantKnee, ImplantKneeParams

__all__ = ["NaturalKneeParams", "NaturalKnee", "natural_knee", "TABLE_3"]

#: Bei & Fregly's Table 3 (their knee): strain -> side -> (force N, torque N m, peak Pa, mean Pa, area m^2)
TABLE_3 = {"large": {"medial": (565.6, 14.17, 4.216e6, 1.640e6, 344.9e-6), "lateral": (513.7, 7.145, 4.225e6, 2.208e6, 232.6e-6)},
           "small": {"medial": (565.5, 14.27, 3.893e6, 1.640e6, 344.7e-6), "lateral": (513.1, 7.146, 3.854e6, 2.190e6, 234.3e-6)}}
KEYS = ("force_N", "torque_Nm", "peak_pressure_Pa", "mean_pressure_Pa", "area_m2")
SPLIT_Z = 0.001  # m: the gap between the plateaus in the lenhart2015 frame


@dataclass(frozen=True)
class NaturalKneeParams:
    """Model parameters (SI); see the module docstring for the assumptions."""

    load_N: float = param(1000.0, "axial load", "N")
    flexion_deg: float = param(30.0, "flexion", "deg")
    E: float = param(4e6, "cartilage Young's modulus", "Pa")
    nu: float = param(0.45, "cartilage Poisson's ratio")
    femoral_thickness: float = param(0.002, "femoral cartilage thickness", "m")
    grid: tuple[int, int] = extent_param((30, 30), "elements per compartment")

    def __post_init__(self) -> None:
        check_positive(self, "natural-knee", "load_N", "E", "femoral_thickness")
        if not 0 <= self.nu < 0.5:
            raise ParameterError(f"natural-knee: nu must lie in [0, 0.5), got {self.nu}")
        if self.femoral_thickness > 0.01:
            raise ParameterError(f"natural-knee: a femoral cartilage of {self.femoral_thickness * 1e3:g} mm is "
                                 "thicker than the joint allows (at most 10 mm)")


@dataclass
class NaturalKnee(ImplantKnee):
    """The artificial knee's model with cartilage: ``insert`` is the tibial cartilage table,
    ``condyles`` the femoral condyle tables (``femoral`` is unused)."""

    layer: LinearLayer = field(default_factory=lambda: LinearLayer(4e6, 0.45))
    femoral_thickness: float = 0.002

    def __post_init__(self) -> None:
        h = self.insert.header
        if "thickness" not in h.extras:
            raise ParameterError(f"natural-knee: the tibial table {self.insert.name!r} has no 'thickness' field; build "
                                 "it with a back surface (sample_surfaces/real/natural_knee.toml)")
        if self.condyles is None:
            raise ParameterError("natural-knee: the femoral condyle tables are needed")
        pts = self.insert.read_block(0, h.n_rec_u, 0, h.n_rec_v)
        inside = read_field(self.insert, "data_distance") <= h.source["fit"]["footprint_radius_m"]
        # the planar fit's v runs along z (nearly): split where the points cross z = SPLIT_Z
        v_split = float(np.median(pts[..., 1][np.abs(pts[..., 4] - SPLIT_Z) < 5e-4]))
        low, high = (h.v0, v_split), (v_split, h.v1)
        if pts[..., 4][pts[..., 1] < v_split].mean() > SPLIT_Z:  # v runs along -z
            low, high = high, low
        sides = {"medial": (low, pts[..., 4] < SPLIT_Z), "lateral": (high, pts[..., 4] > SPLIT_Z)}
        grids = [element_grid(self.insert, name, (h.u0, h.u1), v_range, self.params.grid, "thickness")
                 for name, (v_range, _) in sides.items()]
        self.contact = FoundationContact(grids, self.condyles, self.layer, extent=self.window_extent(),
                                         moving_thickness=self.femoral_thickness, margin=self.params.margin,
                                         full_every=self.params.full_every)
        self.neutral = np.zeros(3)  # the femoral tables are placed in the tibia's frame
        self.centres = {n: float(pts[..., 4][inside & sel].mean()) for n, (_, sel) in sides.items()}
        self.load_z = self.params.medial_share * self.centres["medial"] + (1 - self.params.medial_share) \
            * self.centres["lateral"]


def natural_knee(tibial: Source, condyles: dict[str, Source], params: NaturalKneeParams | None = None,
                 out: str | Path | None = None, progress: Progress | None = None) -> Summary:
    """The static settle with small and large strain; the summary's ``strain`` -> ``small`` /
    ``large`` -> ``compartments`` (the artificial knee's keys), the large/small ratios and Table 3."""
    p = params or NaturalKneeParams()
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    base = ImplantKneeParams(grid=p.grid, medial_share=0.5)
    values: dict[str, Any] = {"status": "ok", "load_N": p.load_N, "flexion_deg": p.flexion_deg, "E_Pa": p.E,
                              "nu": p.nu, "femoral_thickness_m": p.femoral_thickness, "element_grid": list(p.grid),
                              "strain": {}}
    knees = {}
    try:
        for strain in ("small", "large"):
            say(f"static settle, {strain} strain")
            knee = NaturalKnee(tibial, tibial, base, condyles, LinearLayer(p.E, p.nu, strain == "large"),
                               p.femoral_thickness)
            y, r = knee.static(p.flexion_deg, p.load_N)
            knees[strain] = (knee, r)
            values["strain"][strain] = {
                "compartments": {n: c.summary() for n, c in r["results"].items()},
                "si_mm": r["si_mm"], "ml_mm": r["ml_mm"], "varus_valgus_deg": r["varus_valgus_deg"],
                "residual_force_N": r["residual_force_N"], "residual_torque_Nm": r["residual_torque_Nm"]}
    except (SimulationError, ContactError) as exc:
        values.update(status="failed", message=str(exc))
    if values["status"] == "ok":
        s, lg = values["strain"]["small"]["compartments"], values["strain"]["large"]["compartments"]
        values["large_over_small"] = {n: {k: lg[n][k] / s[n][k] for k in KEYS} for n in ("medial", "lateral")}
        values["force_sum_over_load"] = {st: sum(c["force_vector_N"][1] for c in v["compartments"].values()) / p.load_N
                                         for st, v in values["strain"].items()}
    values["table_3"] = {st: {n: dict(zip(KEYS, v)) for n, v in sides.items()} for st, sides in TABLE_3.items()}
    values["wall_s"] = time.perf_counter() - t0
    summary = Summary("natural-knee", values, {"knees": knees})
    if out is not None and knees:
        from simclient.scenarios.report import save_natural_knee

        values["files"] = save_natural_knee(Path(out), summary)
    return summary


class NaturalKneeScenario(Scenario, name="natural-knee", params=NaturalKneeParams,
                          tables={"tibial": "natural_tibial_cartilage", "femoral_medial": "natural_femoral_medial",
                                  "femoral_lateral": "natural_femoral_lateral"},
                          title="Bei & Fregly 2004: the natural knee's static contact on a real tibial cartilage "
                                "(Table 3), small and large strain"):

    def run(self, params: NaturalKneeParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        condyles = {s: tables.open(f"femoral_{s}", self.tables[f"femoral_{s}"]) for s in ("medial", "lateral")}
        return natural_knee(tables.open("tibial", self.tables["tibial"]), condyles, params, out=out, progress=progress)

    def report(self, summary: Summary) -> str:
        lines = [f"natural-knee: {summary['load_N']:g} N at {summary['flexion_deg']:g} deg flexion, E = "
                 f"{summary['E_Pa'] / 1e6:g} MPa, {summary['element_grid'][0]} x {summary['element_grid'][1]} elements "
                 f"per compartment: {summary['wall_s']:.1f} s wall"]
        if not summary.ok:
            return "\n".join([*lines, f"  FAILED: {summary['message']}"])
        lines.append(f"  {'':24s}{'large m':>10s}{'large l':>10s}{'small m':>10s}{'small l':>10s}   "
                     f"{'B&F large m / l':>17s}{'B&F small m / l':>18s}")
        for key, label, scale in REPORT_ROWS:
            ours = [summary["strain"][st]["compartments"][n][key] * scale for st in ("large", "small")
                    for n in ("medial", "lateral")]
            paper = [summary["table_3"][st][n][key] * scale for st in ("large", "small") for n in ("medial", "lateral")]
            lines.append(f"  {label:24s}" + "".join(f"{v:10.4g}" for v in ours)
                         + f"   {paper[0]:8.4g} / {paper[1]:<8.4g}{paper[2]:8.4g} / {paper[3]:<8.4g}")
        r = summary["large_over_small"]
        lines.append("  large / small strain: " + "; ".join(
            f"{n}: force {r[n]['force_N']:.4f}, area {r[n]['area_m2']:.4f}, peak pressure {r[n]['peak_pressure_Pa']:.4f}"
            for n in ("medial", "lateral")) + " (Bei & Fregly: peak 1.083 medial, 1.096 lateral)")
        lines.append("  compartment forces over the load: " + ", ".join(
            f"{st} {v:.5f}" for st, v in summary["force_sum_over_load"].items()))
        lines.extend(f"  wrote {f}" for f in summary.get("files", []))
        return "\n".join(lines)
