"""The natural knee's model (see :mod:`simclient.scenarios.natural_knee`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from simclient.contact import FoundationContact, LinearLayer, element_grid
from simclient.errors import ContactError, ParameterError, SimulationError
from simclient.io import MemorySource, Source
from simclient.scenarios._base import Progress, Summary, Tables, save_outputs
from simclient.scenarios.artificial_knee import ImplantKneeParams
from simclient.scenarios.artificial_knee.model import ImplantKnee, femoral_rotation
from simclient.scenarios.natural_knee import NaturalKneeParams, NaturalKneeScenario
from surfacestore.format import RecordBlock

__all__ = ["run", "NaturalKnee", "natural_knee", "conforming_condyle", "TABLE_3"]

#: Bei & Fregly's Table 3 (their knee): strain -> side -> (force N, torque N m, peak Pa, mean Pa, area m^2)
TABLE_3 = {"large": {"medial": (565.6, 14.17, 4.216e6, 1.640e6, 344.9e-6), "lateral": (513.7, 7.145, 4.225e6, 2.208e6, 232.6e-6)},
           "small": {"medial": (565.5, 14.27, 3.893e6, 1.640e6, 344.7e-6), "lateral": (513.1, 7.146, 3.854e6, 2.190e6, 234.3e-6)}}
KEYS = ("force_N", "torque_Nm", "peak_pressure_Pa", "mean_pressure_Pa", "area_m2")
SPLIT_Z = 0.001  # m: the gap between the plateaus in the lenhart2015 frame
FLEXION_DEG = 30.0  # Bei & Fregly's pose


def run(params: NaturalKneeParams, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
    """The scenario on ``tables``; with ``out``, its report's files there."""
    summary = natural_knee(tables.open("tibial", NaturalKneeScenario.tables["tibial"]), params, progress=progress)
    return save_outputs(summary, out, progress)


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


def natural_knee(tibial: Source, params: NaturalKneeParams | None = None, progress: Progress | None = None) -> Summary:
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
    return Summary("natural-knee", values, {"knees": knees})


