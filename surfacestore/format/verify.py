"""Verifying a table: digest, header, every record's presence and checksum, the geometry's invariants
(:func:`verify_table`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from surfacestore.errors import (
    RecordCorrupt,
)
from surfacestore.format.header import DEGENERATE_TOL, NFIELDS, RecordBlock
from surfacestore.format.reading import Table, _Digest, open_table

@dataclass
class VerifyReport:
    """Outcome of :func:`verify_table`: ``ok`` when the table is sound.

    ``problems`` holds table-level findings; ``bad_records`` maps ``(ri, rj)`` to the reasons that
    record failed.
    """

    path: str
    digest_expected: str = ""
    digest_actual: str = ""
    problems: list[str] = field(default_factory=list)
    bad_records: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    degenerate_points: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.bad_records

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "ok": self.ok, "digest_expected": self.digest_expected,
                "digest_actual": self.digest_actual, "problems": self.problems,
                "bad_records": [{"record": list(k), "reasons": v} for k, v in sorted(self.bad_records.items())],
                "degenerate_points": self.degenerate_points}


def check_points(p: np.ndarray, normal_sign: int, tol: float = 1e-9) -> tuple[list[str], int]:
    """Physical checks of a block of points ``(..., 14)``.

    Returns the failed checks and the number of points with a degenerate ``tu x tv`` (where the
    family supplied an analytic normal, so the parallel test does not apply).
    """
    reasons = []
    if not np.isfinite(p).all():
        return ["non-finite values"], 0
    n, tu, tv = p[..., 5:8], p[..., 8:11], p[..., 11:14]
    if np.abs(np.linalg.norm(n, axis=-1) - 1.0).max(initial=0.0) > tol:
        reasons.append("|n| != 1")
    ltu, ltv = np.linalg.norm(tu, axis=-1), np.linalg.norm(tv, axis=-1)
    if (np.abs(np.einsum("...k,...k", n, tu)) > tol * (1 + ltu)).any() or \
       (np.abs(np.einsum("...k,...k", n, tv)) > tol * (1 + ltv)).any():
        reasons.append("n not orthogonal to tu, tv")
    c = np.cross(tu, tv)
    lc = np.linalg.norm(c, axis=-1)
    regular = lc > DEGENERATE_TOL * ltu.max(initial=0.0) * ltv.max(initial=0.0)
    cos = np.einsum("...k,...k", n, c)[regular] / lc[regular]
    if (cos * normal_sign < 1 - tol).any():
        reasons.append("n not parallel to tu x tv" + (" (flipped)" if normal_sign < 0 else ""))
    return reasons, int((~regular).sum())


def _seam_gap(table: Table) -> str | None:
    """A table periodic in v whose seam does not close: its first column of points is not one step
    on from its last (within a quarter of a step of where the last column's tangent ``tv`` puts it,
    for a surface whose v-curves turn by much less than a radian per step); else None."""
    h = table.header
    first = table.read_block(RecordBlock(0, h.n_rec_u, 0, 1))[:, 0]
    last = table.read_block(RecordBlock(0, h.n_rec_u, h.n_rec_v - 1, h.n_rec_v))[:, -1]
    step = h.dv * np.linalg.norm(last[:, 11:14], axis=-1)
    off = np.linalg.norm(first[:, 2:5] - (last[:, 2:5] + h.dv * last[:, 11:14]), axis=-1)
    bad = off > 0.25 * step + 1e-12 * (1 + np.abs(last[:, 2:5]).max())
    if not bad.any():
        return None
    i = int(np.argmax(off - 0.25 * step))
    return (f"periodic_v, but the seam does not close: at u = {h.u0 + i * h.du:.6g} the first column's point is "
            f"{off[i]:.3g} m from one step on from the last ({step[i]:.3g} m a step)")


def verify_table(path: str | os.PathLike[str], progress: Any = None) -> VerifyReport:
    """Check a table: header against arrays, every record present with a valid checksum, the
    parameter grid, finite values, ``|n| = 1``, ``n`` orthogonal to ``tu`` and ``tv`` and parallel
    to ``tu x tv``, a periodic table's seam closing, and the digest recomputed from the data.
    ``progress(n)`` is called per record row.
    """
    report = VerifyReport(path=str(path))
    table = open_table(path)
    h = table.header
    report.digest_expected = h.digest
    try:
        group = table.zarr_group()
        for name in ("points", *h.extras):
            arr = group[name]
            want = (h.u_npts, h.v_npts) + ((NFIELDS,) if name == "points" else ())
            if tuple(arr.shape) != want:
                report.problems.append(f"array {name} has shape {tuple(arr.shape)}, header says {want}")
            if tuple(arr.chunks[:2]) != (h.u_pts, h.v_pts):
                report.problems.append(f"array {name} has records {tuple(arr.chunks[:2])}, "
                                       f"header says {(h.u_pts, h.v_pts)}")
    except Exception as exc:
        report.problems.append(f"arrays unreadable through zarr: {exc!r}")
    if report.problems:
        return report
    digest = _Digest(["points", *h.extras])
    for ri in range(h.n_rec_u):
        for rj in range(h.n_rec_v):
            for name in ("points", *h.extras):
                try:
                    rec = table.read_record(ri, rj, name)
                except RecordCorrupt as exc:
                    report.bad_records.setdefault((ri, rj), []).append(str(exc))
                    rec = np.full((*h.record_extent(ri, rj),) + ((NFIELDS,) if name == "points" else ()),
                                  np.nan)
                    digest.update(name, rec)
                    continue
                digest.update(name, rec)
                if name != "points":
                    if not np.isfinite(rec).all():
                        report.bad_records.setdefault((ri, rj), []).append(f"non-finite {name} values")
                    continue
                reasons, ndeg = check_points(rec, h.normal_sign)
                report.degenerate_points += ndeg
                i0, j0 = ri * h.u_pts, rj * h.v_pts
                uu = h.u0 + (i0 + np.arange(rec.shape[0]))[:, None] * h.du
                vv = h.v0 + (j0 + np.arange(rec.shape[1]))[None, :] * h.dv
                if not reasons and (
                        np.abs(rec[..., 0] - uu).max() > 1e-9 * (1 + abs(uu).max())
                        or np.abs(rec[..., 1] - vv).max() > 1e-9 * (1 + abs(vv).max())):
                    reasons.append("u, v fields differ from the header's parameter grid")
                if reasons:
                    report.bad_records.setdefault((ri, rj), []).extend(reasons)
        if progress is not None:
            progress(1)
    if h.periodic_v and not report.bad_records:
        seam = _seam_gap(table)
        if seam is not None:
            report.problems.append(seam)
    report.digest_actual = digest.hexdigest()
    if report.digest_actual != h.digest:
        report.problems.append(f"digest mismatch: header {h.digest}, data {report.digest_actual}")
    return report
