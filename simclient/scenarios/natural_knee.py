"""Bei & Fregly's natural knee (2004, Table 3) on a real tibial cartilage surface: a static settle at
30 deg flexion under an axial load, small and large strain.

The tibial cartilage of the lenhart2015 healthy right knee (``natural_tibial_cartilage``, fitted by
``sample_surfaces/real/natural_knee.toml``; both plateaus in one table, its ``thickness`` field the
distance to the tibia bone) is the fixed body; element grids cover each plateau (split at the gap
between them, z = 1 mm; medial: z < 0 in this frame, +x anterior, +y superior, +z lateral).

No femoral cartilage mesh is available, so each femoral condyle is a stand-in congruent with its
plateau (:func:`conforming_condyle`): the tibial cartilage table's own records over the
compartment, lifted along +y by a paraboloidal clearance ``r^2 / (2 R)`` (r the x-z distance from
the compartment's centroid, R the femur-tibia relative radius of curvature; ``clearance_exponent``
n: ``r^n / (n R^(n - 1))``, flatter-bottomed and steeper-sided), facing down, and
carrying a 2 mm cartilage layer: the springs have the combined thickness (Bei & Fregly's one
combined layer). What the contact sees of two surfaces is their gap, and this stand-in states the
gap directly, as Hertz theory does with relative radii; an analytic condyle (an ellipsoid, as
before) rests on the real plateau's high spots and spine instead and carries the load on half of
Bei & Fregly's areas. The one unknown per compartment, R, is set from one published figure each:
R = 53.3 mm medially and 22.35 mm laterally give Table 3's small-strain contact areas (344.7 /
234.3 mm^2); the large-strain figures are then predictions. The stand-in is built at the
settle's pose (30 deg flexion), so the flexion angle does not enter the contact. E = 4 MPa,
nu = 0.45 (Table 3's), small strain (eq. 1) or large strain (eq. 2); the quadratic element
quadrature (areas that do not step with whole elements).

The model is the artificial knee's (:class:`simclient.scenarios.artificial_knee.ImplantKnee`):
flexion 30 deg, internal-external rotation and anterior-posterior translation held; superior-
inferior and medial-lateral translation and varus-valgus rotation in equilibrium with the load,
found by settling from the first touch and Newton. Assumptions (not in the paper for this knee):
the load of 1000 N acts along -y through the point 54.5 % of the way from the lateral to the
medial compartment's centroid, which gives Table 3's split (medial / lateral force 1.10; a load
midway gives 0.97); 30 x 30 elements per compartment (theirs: 20 x 15), femoral cartilage 2 mm,
the relative radii above.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from simclient.contact import QUADRATURES, FoundationContact, LinearLayer, element_grid
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.io import MemorySource, Source
from simclient.scenarios._base import Progress, Scenario, Summary, Tables, check_positive, extent_param, param
from simclient.scenarios.artificial_knee import REPORT_ROWS, ImplantKnee, ImplantKneeParams, femoral_rotation
from simclient.scenarios.studies import Study, register
from surfacestore.format import RecordBlock

__all__ = ["NaturalKneeParams", "NaturalKnee", "natural_knee", "conforming_condyle", "TABLE_3", "CLEARANCES"]

#: Bei & Fregly's Table 3 (their knee): strain -> side -> (force N, torque N m, peak Pa, mean Pa, area m^2)
TABLE_3 = {"large": {"medial": (565.6, 14.17, 4.216e6, 1.640e6, 344.9e-6), "lateral": (513.7, 7.145, 4.225e6, 2.208e6, 232.6e-6)},
           "small": {"medial": (565.5, 14.27, 3.893e6, 1.640e6, 344.7e-6), "lateral": (513.1, 7.146, 3.854e6, 2.190e6, 234.3e-6)}}
KEYS = ("force_N", "torque_Nm", "peak_pressure_Pa", "mean_pressure_Pa", "area_m2")
SPLIT_Z = 0.001  # m: the gap between the plateaus in the lenhart2015 frame
FLEXION_DEG = 30.0  # Bei & Fregly's pose


@dataclass(frozen=True)
class NaturalKneeParams:
    """Model parameters (SI); see the module docstring for the assumptions."""

    load_N: float = param(1000.0, "axial load", "N")
    E: float = param(4e6, "cartilage Young's modulus", "Pa")
    nu: float = param(0.45, "cartilage Poisson's ratio")
    femoral_thickness: float = param(0.002, "femoral cartilage thickness", "m")
    medial_radius: float = param(0.0533, "femur-tibia relative radius of curvature, medial compartment (Table 3's "
                                 "small-strain area)", "m")
    lateral_radius: float = param(0.02235, "femur-tibia relative radius of curvature, lateral compartment (Table 3's "
                                  "small-strain area)", "m")
    clearance_exponent: float = param(2.0, "the clearance's exponent n: rho^n / (n R^(n - 1)) with R the radii "
                                      "above (n = 2: the paraboloid of relative radius R; larger n: a flatter "
                                      "bottom and steeper sides, with other radii for the same areas)")
    medial_share: float = param(0.545, "the load line's place between the compartments' centroids, from lateral (0) "
                                "to medial (1) (Table 3's force split)")
    grid: tuple[int, int] = extent_param((30, 30), "elements per compartment")
    quadrature: str = param("quadratic", "element quadrature (see ElementDetector): the centre rule counts whole "
                            "elements, so its areas step by 1-3 % here", choices=QUADRATURES)
    refine_tol: float = param(0.0, "each settle's contact also on grids zoomed on it and refined until no "
                                   "compartment's force, peak pressure or area changes by more than this (relative) "
                                   "(FoundationContact.refine); 0: none")

    def __post_init__(self) -> None:
        check_positive(self, "natural-knee", "load_N", "E", "femoral_thickness", "medial_radius", "lateral_radius")
        for side, radius in (("medial", self.medial_radius), ("lateral", self.lateral_radius)):
            if radius < 0.001:  # (a condyle of a smaller radius rises to infinity across a plateau)
                raise ParameterError(f"natural-knee: {side}_radius must be at least 1 mm, got {radius} m")
        if not 0 <= self.medial_share <= 1:
            raise ParameterError(f"natural-knee: medial_share must lie in [0, 1], got {self.medial_share}")
        if not 2 <= self.clearance_exponent <= 16:
            raise ParameterError(f"natural-knee: clearance_exponent must lie in [2, 16], got {self.clearance_exponent}")
        if not 0 <= self.nu < 0.5:
            raise ParameterError(f"natural-knee: nu must lie in [0, 0.5), got {self.nu}")
        if not 0 <= self.refine_tol < 1:
            raise ParameterError(f"natural-knee: refine_tol must lie in [0, 1) (0: no refined pass), got {self.refine_tol}")
        if self.femoral_thickness > 0.01:
            raise ParameterError(f"natural-knee: a femoral cartilage of {self.femoral_thickness * 1e3:g} mm is "
                                 "thicker than the joint allows (at most 10 mm)")


def conforming_condyle(tibial: MemorySource, records: tuple[int, int], centre: tuple[float, float], radius: float,
                       rotation: np.ndarray, name: str, exponent: float = 2.0) -> MemorySource:
    """A femoral condyle congruent with a tibial plateau: the tibial table's records ``[rj0, rj1)``
    (every u) lifted along +y by the clearance ``rho^n / (n radius^(n - 1))``, rho the x-z distance
    from ``centre`` = (cx, cz) (m), n = ``exponent`` (>= 2): for n = 2 the paraboloid
    ``rho^2 / (2 radius)`` of relative radius of curvature ``radius`` (m); for any n the clearance's
    slope is 1 at rho = ``radius``. Normals face -y (the tibia); positions, normals and tangents are
    expressed in the femoral frame whose rotation in the tibia's frame is ``rotation`` (the femoral
    origin at the tibia's)."""
    h = tibial.header
    i0, i1, j0, j1 = h.block_points(RecordBlock(0, h.n_rec_u, *records))
    pts = tibial.points[i0:i1, j0:j1].copy()
    offset = pts[..., [2, 4]] - centre
    rho = np.hypot(offset[..., 0], offset[..., 1]) / radius
    pts[..., 3] += radius * rho ** exponent / exponent
    slope = offset / radius * rho[..., None] ** (exponent - 2)  # d(lift)/dx, d(lift)/dz
    for t in (8, 11):  # the lifted surface's partials: tu + (d lift / du) e_y, likewise tv
        pts[..., t + 1] += slope[..., 0] * pts[..., t] + slope[..., 1] * pts[..., t + 2]
    n = np.cross(pts[..., 8:11], pts[..., 11:14])
    pts[..., 5:8] = -n / np.linalg.norm(n, axis=-1, keepdims=True)
    for k in (2, 5, 8, 11):  # to the femoral frame: R^T x (row vectors: x R)
        pts[..., k:k + 3] = pts[..., k:k + 3] @ rotation
    header = replace(h, v_npts=j1 - j0, v0=h.v0 + j0 * h.dv, normal_sign=-1, extras=(), bbox=None, rmax=None,
                     digest="", source={"family": "conforming", "tibial": tibial.name, "records_v": list(records),
                                        "centre_xz_m": list(centre), "relative_radius_m": radius,
                                        "clearance_exponent": exponent})
    return MemorySource(header, pts, name)


@dataclass
class NaturalKnee(ImplantKnee):
    """The artificial knee's model with cartilage: ``insert`` is the tibial cartilage table (held in
    memory); the femoral ``condyles`` are built on it (:func:`conforming_condyle`), whatever was
    passed (``femoral`` is unused)."""

    layer: LinearLayer = field(default_factory=lambda: LinearLayer(4e6, 0.45))
    femoral_thickness: float = 0.002
    radii: tuple[float, float] = (NaturalKneeParams.medial_radius, NaturalKneeParams.lateral_radius)  # m, medial, lateral
    clearance_exponent: float = 2.0
    #: one settle on tables held in memory (no window re-centring, whose interpolation noise sets the
    #: artificial knee's 5e-4): in equilibrium to 1e-6 of the load, so that the large/small-strain
    #: ratios compared with Table 3 are not blurred by the solver's tolerance
    tol_rel: ClassVar[float] = 1e-6
    label: ClassVar[str] = "natural knee"

    def __post_init__(self) -> None:
        h = self.insert.header
        missing = [f"{x!r} field" for x in ("thickness", "data_distance") if x not in h.extras]
        if missing or "fit" not in h.source:
            raise ParameterError(f"natural-knee: the tibial table {self.insert.name!r} has no "
                                 f"{' or '.join(missing or ['fit report'])}; build it as a fit with a back surface "
                                 "(sample_surfaces/real/natural_knee.toml)")
        tibial = MemorySource.load(self.insert)
        pts = tibial.points
        inside = tibial.fields["data_distance"] <= h.source["fit"]["footprint_radius_m"]
        # the planar fit's v runs along z (nearly): split where the points cross z = SPLIT_Z
        v_split = float(np.median(pts[..., 1][np.abs(pts[..., 4] - SPLIT_Z) < 5e-4]))
        j_split = round((v_split - h.v0) / h.dv)
        r_split = j_split // h.v_pts
        low, high = ((h.v0, v_split), (0, r_split + 1)), ((v_split, h.v1), (r_split, h.n_rec_v))
        if pts[..., 4][pts[..., 1] < v_split].mean() > SPLIT_Z:  # v runs along -z
            low, high = high, low
        sides = {"medial": (low, pts[..., 4] < SPLIT_Z), "lateral": (high, pts[..., 4] > SPLIT_Z)}
        grids = [element_grid(self.insert, name, (h.u0, h.u1), v_range, self.params.grid, "thickness")
                 for name, ((v_range, _), _) in sides.items()]
        centroids = {n: (float(pts[..., 2][inside & sel].mean()), float(pts[..., 4][inside & sel].mean()))
                     for n, (_, sel) in sides.items()}  # (x, z), m
        rotation = femoral_rotation(0.0, 0.0, math.radians(FLEXION_DEG))
        self.condyles = {n: conforming_condyle(tibial, records, centroids[n], radius, rotation,
                                               f"{n} condyle on {self.insert.name}", self.clearance_exponent)
                         for (n, ((_, records), _)), radius in zip(sides.items(), self.radii)}
        self.contact = FoundationContact(grids, self.condyles, self.layer, extent=self.window_extent(),
                                         moving_thickness=self.femoral_thickness, quadrature=self.params.quadrature,
                                         margin=self.params.margin, full_every=self.params.full_every)
        self.neutral = np.zeros(3)  # the condyles are built in the tibia's frame, at the settle's pose
        self.centres = {n: c[1] for n, c in centroids.items()}
        self.load_z = self.params.medial_share * self.centres["medial"] + (1 - self.params.medial_share) \
            * self.centres["lateral"]


def natural_knee(tibial: Source, params: NaturalKneeParams | None = None,
                 out: str | Path | None = None, progress: Progress | None = None) -> Summary:
    """The static settle with small and large strain; the summary's ``strain`` -> ``small`` /
    ``large`` -> ``compartments`` (the artificial knee's keys), the large/small ratios and Table 3."""
    p = params or NaturalKneeParams()
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    base = ImplantKneeParams(grid=p.grid, medial_share=p.medial_share, quadrature=p.quadrature)
    values: dict[str, Any] = {"status": "ok", "load_N": p.load_N, "flexion_deg": FLEXION_DEG, "E_Pa": p.E,
                              "nu": p.nu, "femoral_thickness_m": p.femoral_thickness,
                              "relative_radius_m": {"medial": p.medial_radius, "lateral": p.lateral_radius},
                              "clearance_exponent": p.clearance_exponent,
                              "medial_share": p.medial_share, "element_grid": list(p.grid),
                              "quadrature": p.quadrature, "refine_tol": p.refine_tol, "strain": {}}
    knees = {}
    tibial = MemorySource.load(tibial)  # read once: both settles build their grids and condyles on it
    try:
        for strain in ("small", "large"):
            say(f"static settle, {strain} strain")
            knee = NaturalKnee(tibial, tibial, base, None, LinearLayer(p.E, p.nu, strain == "large"),
                               p.femoral_thickness, (p.medial_radius, p.lateral_radius), p.clearance_exponent)
            y, r = knee.static(FLEXION_DEG, p.load_N)
            knees[strain] = (knee, r)
            values["strain"][strain] = {
                "compartments": {n: c.summary() for n, c in r["results"].items()},
                "si_mm": r["si_mm"], "ml_mm": r["ml_mm"], "varus_valgus_deg": r["varus_valgus_deg"],
                "residual_force_N": r["residual_force_N"], "residual_torque_Nm": r["residual_torque_Nm"]}
            if p.refine_tol > 0:  # the same pose on grids refined on the contact
                refined = knee.contact.refine(np.eye(3), np.zeros(3), *knee.pose(y, math.radians(FLEXION_DEG), 0.0, 0.0),
                                              shape=p.grid, tol=p.refine_tol)
                values["strain"][strain]["refined"] = refined.summary()
    except (SimulationError, ContactError) as exc:
        values.update(status="failed", message=str(exc))
    if values["status"] == "ok":
        s, lg = values["strain"]["small"]["compartments"], values["strain"]["large"]["compartments"]
        values["large_over_small"] = {n: {k: lg[n][k] / s[n][k] for k in KEYS} for n in ("medial", "lateral")}
        if p.refine_tol > 0:
            s, lg = (values["strain"][st]["refined"]["compartments"] for st in ("small", "large"))
            values["large_over_small_refined"] = {n: {k: lg[n][k] / s[n][k] for k in KEYS} for n in ("medial", "lateral")}
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
                          tables={"tibial": "natural_tibial_cartilage"},
                          title="Bei & Fregly 2004: the natural knee's static contact on a real tibial cartilage "
                                "(Table 3), small and large strain"):

    def run(self, params: NaturalKneeParams, tables: Tables, *, out: Path | None = None,
            progress: Progress | None = None) -> Summary:
        return natural_knee(tables.open("tibial", self.tables["tibial"]), params, out=out, progress=progress)

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
        if "large_over_small_refined" in summary:
            r = summary["large_over_small_refined"]
            conv = all(summary["strain"][st]["refined"]["converged"] for st in ("small", "large"))
            lines.append(f"  on grids refined to {summary['refine_tol']:.2%} ({'converged' if conv else 'NOT converged'}): "
                         + "; ".join(f"{n}: force {r[n]['force_N']:.4f}, area {r[n]['area_m2']:.4f}, peak pressure "
                                     f"{r[n]['peak_pressure_Pa']:.4f}" for n in ("medial", "lateral")))
        lines.append("  compartment forces over the load: " + ", ".join(
            f"{st} {v:.5f}" for st, v in summary["force_sum_over_load"].items()))
        lines.extend(f"  wrote {f}" for f in summary.get("files", []))
        return "\n".join(lines)


#: clearance exponents and the radii (m, medial and lateral) that give Table 3's small-strain areas
#: with them (found by iterating the radii; 2 is the default paraboloid)
CLEARANCES = ((2.0, NaturalKneeParams.medial_radius, NaturalKneeParams.lateral_radius), (3.0, 0.02104, 0.01233),
              (4.0, 0.01555, 0.01023), (6.0, 0.01237, 0.00896), (8.0, 0.01132, 0.00854))

register(Study("natural-knee-clearance", "natural-knee", "the large/small-strain ratios against the femoral "
               "clearance's exponent, Table 3's small-strain areas each", tuple(
                   (f"n={n:g}", {"clearance_exponent": n, "medial_radius": rm, "lateral_radius": rl})
                   for n, rm, rl in CLEARANCES), plot="natural-knee-clearance"))
