"""What the store's browser pages need: the static pages themselves, a strided preview of a table
for the 3D view, and the pressure-map series scenarios write.

The pages (``surfacestore/web/``: plain HTML and JavaScript with hand-written WebGL, no build step
and nothing loaded from outside the store) are ``/`` (the tables with their headers and sizes),
``/view/{name}`` (the surface in 3D, orbit and zoom, records drawn, coloured by an extra field)
and ``/results?path=...`` (a pressure-map series played over time). They read everything through
the store's API, sending ``Authorization: Bearer TOKEN`` when the page's address carries
``#token=TOKEN`` (a fragment never reaches the server or its logs).
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from surfacestore.catalog import Catalog
from surfacestore.errors import BlockTooLarge, TableNotFound, UnknownField
from surfacestore.format import NFIELDS, RecordBlock

__all__ = ["SCRIPTS", "CSP", "page", "preview", "pressure_series", "MAX_PREVIEW"]

WEB = Path(__file__).resolve().parent / "web"
#: the scripts the pages load from /web/
SCRIPTS = ("common.js", "index.js", "view.js", "results.js")
#: the Content-Security-Policy of every page and script: scripts only from the store itself (no
#: inline script, so markup that data might smuggle in runs nothing), no <base> (a digest once
#: rewrote every API call's host), no plugins
CSP = "script-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
#: the most points a side of a preview
MAX_PREVIEW = 512


def page(name: str) -> bytes:
    """The bytes of a static page or script of ``surfacestore/web``."""
    return (WEB / name).read_bytes()


def preview(catalog: Catalog, name: str, n: int, array: str = "points",
            max_bytes: int | None = None) -> tuple[np.ndarray, tuple[int, int]]:
    """About ``n`` points a side of table ``name``: every ``(su, sv)``-th point in u and v, the last
    row and column included; returns the array (``(nu', nv', 14)`` points or ``(nu', nv')`` of an
    extra field) and the steps. Only the records holding sampled points are read (through the
    record cache), so the cost is bounded by ``min(n, records)`` a side; a table whose records are
    each larger than ``max_bytes`` is :class:`BlockTooLarge` (the record and block endpoints' limit)."""
    table = catalog.get(name)
    h = table.header
    if max_bytes is not None and h.record_bytes > max_bytes:
        raise BlockTooLarge(f"{name}: its records of {h.record_bytes} bytes exceed the limit of {max_bytes}")
    if array != "points" and array not in h.extras:
        raise UnknownField(f"{name}: no per-point array {array!r} (extras: {list(h.extras)})")
    su, sv = (max(1, math.ceil((npts - 1) / max(n - 1, 1))) for npts in (h.u_npts, h.v_npts))
    rows = np.unique(np.r_[np.arange(0, h.u_npts, su), h.u_npts - 1])
    cols = np.unique(np.r_[np.arange(0, h.v_npts, sv), h.v_npts - 1])
    out = np.empty((len(rows), len(cols)) + ((NFIELDS,) if array == "points" else ()))
    for ri in np.unique(rows // h.u_pts):
        r_sel = rows[rows // h.u_pts == ri]
        for rj in np.unique(cols // h.v_pts):
            c_sel = cols[cols // h.v_pts == rj]
            _, rec = catalog.read_block(name, RecordBlock(int(ri), int(ri) + 1, int(rj), int(rj) + 1), array)
            out[np.ix_(np.searchsorted(rows, r_sel), np.searchsorted(cols, c_sel))] = \
                rec[np.ix_(r_sel - ri * h.u_pts, c_sel - rj * h.v_pts)]
    return out, (su, sv)


def pressure_series(root: str | Path, path: str, max_bytes: int) -> dict[str, Any]:
    """The pressure-map series (a scenario's ``pressure.zarr``: ``t_s`` and per compartment the
    maps ``(times, nu, nv)`` in Pa with the element centres ``NAME_x_m``/``NAME_z_m``) at ``path``
    under the store's root (a folder), as JSON-ready lists (NaN as ``None``).

    Files under the root are untrusted: the series must be a folder under the root holding only
    folders and regular files (no link, wherever it leads: :class:`TableNotFound`), and what it
    declares is bounded before anything is read (:class:`BlockTooLarge` past ``max_bytes`` of
    values); errors name the series, never what lies outside the root."""
    import zarr

    if not isinstance(root, Path):
        raise TableNotFound("result series are served from a folder root only")
    parts = path.split("/")
    if not path or any(p in ("", ".", "..") or p.startswith(".") for p in parts) or "\\" in path:
        raise TableNotFound(f"no result series {path!r}")
    real = Path(os.path.realpath(root / path))
    if root.resolve() not in real.parents or not (real / "zarr.json").is_file():
        raise TableNotFound(f"no result series {path!r}")
    stored = _plain_files(real, path)
    if stored > max_bytes:
        raise BlockTooLarge(f"result series {path!r}: {stored} bytes stored, more than the limit of {max_bytes}")
    try:
        g = zarr.open_group(str(real), mode="r")
        if g.attrs.get("units") != "Pa" or "t_s" not in g:
            raise KeyError("not a pressure series")
        keys = list(g.array_keys())
        values = sum(int(np.prod(arr.shape)) for _, arr in g.arrays())
        if 8 * values > max_bytes:
            raise BlockTooLarge(f"result series {path!r}: {values} values declared, more than the limit of "
                                f"{max_bytes // 8}")
        names = [k for k in keys if k != "t_s" and not k.endswith(("_x_m", "_z_m"))]

        def listed(key: str) -> Any:
            a = np.asarray(g[key], dtype=float)
            return np.where(np.isfinite(a), a, np.nan).astype(object).tolist() if a.size else []
        out = {"path": path, "units": "Pa", "frame": str(g.attrs.get("frame", ""))[:200], "t_s": listed("t_s"),
               "compartments": {k: {"x_m": listed(f"{k}_x_m"), "z_m": listed(f"{k}_z_m"), "pressure_Pa": listed(k)}
                                for k in sorted(names)}}
    except BlockTooLarge:
        raise
    except (KeyError, ValueError, TypeError, OSError) as exc:
        raise TableNotFound(f"no result series {path!r} ({type(exc).__name__})") from None
    return _nulls(out)


def _plain_files(folder: Path, path: str) -> int:
    """The bytes of the regular files under ``folder``; :class:`TableNotFound` where it holds a link
    or anything but folders and regular files (a link could lead outside the root)."""
    total = 0
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            st = os.lstat(os.path.join(top, name))
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise TableNotFound(f"no result series {path!r} (it holds a link or a special file)")
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def _nulls(x: Any) -> Any:
    """NaN -> None in nested lists (JSON has no NaN)."""
    if isinstance(x, dict):
        return {k: _nulls(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nulls(v) for v in x]
    return None if isinstance(x, float) and x != x else x
