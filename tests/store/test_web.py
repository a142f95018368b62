"""Looking at tables and results: VTK files read back by VTK itself, the store's preview and
result endpoints against local reads, and the store's pages in headless Chromium with every host
but the store unreachable (as on a machine without internet access)."""

from __future__ import annotations

import io
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import numpy as np
import pytest

from preprocess.cli import main as preprocess_main
from simclient.bench import StoreProcess
from simclient.scenarios import Tables, get_scenario
from simclient.results import save_pressure_vtk, save_pressure_zarr
from surfacestore.format import RecordBlock, create_table, open_table

CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)


def _read_vts(path: Path):
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    r = vtk.vtkXMLStructuredGridReader()
    r.SetFileName(str(path))
    r.Update()
    g = r.GetOutput()
    pd, cd = g.GetPointData(), g.GetCellData()
    points = {pd.GetArrayName(k): vtk_to_numpy(pd.GetArray(k)) for k in range(pd.GetNumberOfArrays())}
    cells = {cd.GetArrayName(k): vtk_to_numpy(cd.GetArray(k)) for k in range(cd.GetNumberOfArrays())}
    return g, vtk_to_numpy(g.GetPoints().GetData()), points, cells


def _plate(folder: Path, name: str = "plate") -> Path:
    """A 41 x 37-point plane z = 0 with a thickness field 2 mm + 10 u (records of 9 x 8)."""
    path = folder / f"{name}.zarr"
    nu, nv = 41, 37
    u, v = np.meshgrid(np.linspace(0, 0.04, nu), np.linspace(0, 0.036, nv), indexing="ij")
    pts = np.zeros((nu, nv, 14))
    pts[..., 0], pts[..., 1], pts[..., 2], pts[..., 3] = u, v, u, v
    pts[..., 7], pts[..., 8], pts[..., 12] = 1.0, 1.0, 1.0  # n = z, tu = x, tv = y
    w = create_table(path, u_npts=nu, v_npts=nv, u_pts=9, v_pts=8, u0=0.0, v0=0.0, du=0.001, dv=0.001,
                     extras=("thickness",), shard=0)
    with w:
        for ri in range(w.header.n_rec_u):
            i0, i1 = ri * 9, min(ri * 9 + 9, nu)
            w.write_records(ri, 0, w.header.n_rec_v, pts[i0:i1], extras={"thickness": 0.002 + 10 * u[i0:i1] ** 2})
        w.commit()
    return path


def test_export_table_reads_back(tmp_path, sample_tables, capsys):
    """``preprocess export``: every point, normal, tangent and extra field, and each cell's record,
    as VTK reads them; with --stride every other point; a bad --out is an error."""
    plate = _plate(tmp_path)
    h = open_table(plate).header
    full = open_table(plate).read_block(RecordBlock(0, h.n_rec_u, 0, h.n_rec_v))
    thick = open_table(plate).read_block(RecordBlock(0, h.n_rec_u, 0, h.n_rec_v), "thickness")
    assert preprocess_main(["export", str(plate), "--out", str(tmp_path / "plate.vts")]) == 0
    g, xyz, pts, cells = _read_vts(tmp_path / "plate.vts")
    assert g.GetNumberOfPoints() == h.u_npts * h.v_npts and g.GetNumberOfCells() == (h.u_npts - 1) * (h.v_npts - 1)
    np.testing.assert_array_equal(xyz, full[..., 2:5].reshape(-1, 3))
    np.testing.assert_array_equal(pts["Normals"], full[..., 5:8].reshape(-1, 3))
    np.testing.assert_array_equal(pts["tv"], full[..., 11:14].reshape(-1, 3))
    np.testing.assert_array_equal(pts["thickness"], thick.reshape(-1))
    ri, rj = np.meshgrid(np.arange(h.u_npts - 1) // 9, np.arange(h.v_npts - 1) // 8, indexing="ij")
    np.testing.assert_array_equal(cells["record"], (ri * h.n_rec_v + rj).reshape(-1))
    capsys.readouterr()
    assert preprocess_main(["export", str(sample_tables / "ball_333.zarr"), "--stride", "2", "--out",
                            str(tmp_path / "ball.vts"), "--json"]) == 0
    _, xyz, _, _ = _read_vts(tmp_path / "ball.vts")
    assert len(xyz) == 167 * 167
    np.testing.assert_allclose(np.linalg.norm(xyz, axis=1), 0.02, rtol=1e-12)  # on the ball
    assert preprocess_main(["export", str(plate), "--out", str(tmp_path / "plate.txt")]) == 1
    assert ".vts" in capsys.readouterr().err


def test_an_export_that_fails_says_why_in_one_line_and_keeps_the_earlier_file(tmp_path, capfd, monkeypatch):
    import vtk

    plate = _plate(tmp_path)
    (tmp_path / "file").write_text("x")
    assert preprocess_main(["export", str(plate), "--out", str(tmp_path / "file" / "plate.vts")]) == 1
    assert capfd.readouterr().err == f"preprocess: error: {tmp_path / 'file' / 'plate.vts'}: cannot write there " \
                                     f"(File exists: {tmp_path / 'file'})\n"
    # VTK failing to write (here: pointed at a folder that is not there, as a full disk fails it)
    earlier = tmp_path / "plate.vts"
    earlier.write_text("an earlier export")

    class Failing(vtk.vtkXMLStructuredGridWriter):
        def SetFileName(self, name):
            super().SetFileName(str(tmp_path / "gone" / "plate.vts"))

    monkeypatch.setattr(vtk, "vtkXMLStructuredGridWriter", Failing)
    assert preprocess_main(["export", str(plate), "--out", str(earlier)]) == 1
    err = capfd.readouterr().err
    assert err == f"preprocess: error: {earlier}: VTK could not write the file (a full disk?); nothing was written\n"
    assert earlier.read_text() == "an earlier export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "plate.vts", "plate.zarr"]


@pytest.mark.slow
def test_bouncing_ball_series(sample_tables, tmp_path):
    """``simclient run bouncing-ball --out``: a .pvd over the ball's and the ground's window records;
    every frame's ball points lie on the ball (radius 20 mm about its centre at that time)."""
    cls = get_scenario("bouncing-ball")
    s = cls().run(cls.Params(t_end=0.06), Tables(folder=str(sample_tables)), out=tmp_path)
    pvd = tmp_path / "bouncing_ball.pvd"
    assert str(pvd) in s["outputs"]
    sets = ET.parse(pvd).getroot().findall("./Collection/DataSet")
    assert len(sets) == 200 and {d.get("name") for d in sets} == {"ball", "ground"}
    res = s.artifacts["result"]
    for d in [x for x in sets if x.get("name") == "ball"][::33]:
        _, xyz, pts, cells = _read_vts(tmp_path / d.get("file"))
        centre = res.sol(float(d.get("timestep")))[0:3]
        np.testing.assert_allclose(np.linalg.norm(xyz - centre, axis=1), 0.02, rtol=1e-9)
        assert "Normals" in pts and "record" in cells and len(xyz) <= 64 * 64


def test_pressure_series_files_and_endpoint(tmp_path):
    """A pressure series: the .pvd/.vts files read back, and the store's /v1/results serves the
    Zarr series a scenario writes (NaN as null); a missing series is 404, a path that could leave
    the root 422."""
    t = np.linspace(0, 1, 5)
    x, z = np.meshgrid(np.linspace(-0.01, 0.01, 6), np.linspace(-0.01, 0.01, 7), indexing="ij")
    grid = np.stack([x, np.zeros_like(x), z], -1)
    maps = {"medial": np.array([np.where(x > -0.009, 1e6 * (1 + tt) * np.ones_like(x), np.nan) for tt in t])}
    save_pressure_vtk(tmp_path, "knee", t, {"medial": grid}, maps)
    sets = ET.parse(tmp_path / "knee.pvd").getroot().findall("./Collection/DataSet")
    assert [float(d.get("timestep")) for d in sets] == list(t)
    _, xyz, pts, _ = _read_vts(tmp_path / sets[3].get("file"))
    np.testing.assert_array_equal(xyz, grid.reshape(-1, 3))
    np.testing.assert_array_equal(pts["pressure_Pa"], maps["medial"][3].reshape(-1))
    save_pressure_zarr(tmp_path / "run" / "pressure.zarr", t, {"medial": grid}, maps, {"frame": "test"})
    with StoreProcess(tmp_path) as store, httpx.Client(base_url=store.url) as c:
        r = c.get("/v1/results", params={"path": "run/pressure.zarr"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["t_s"] == list(t) and body["frame"] == "test"
        got = np.array(body["compartments"]["medial"]["pressure_Pa"], dtype=float)
        np.testing.assert_array_equal(got, maps["medial"])  # null -> NaN
        assert body["compartments"]["medial"]["x_m"] == x.tolist()
        assert c.get("/v1/results", params={"path": "run/nothing.zarr"}).status_code == 404
        for bad in ("../x", "run/../../etc", ".hidden", "/etc", "a\x00b"):  # outside the path's pattern
            assert c.get("/v1/results", params={"path": bad}).status_code == 422


def test_preview_endpoint_is_a_strided_read(tmp_path, sample_tables):
    """/v1/surfaces/NAME/preview: the table's every su-th, sv-th point (last row and column kept),
    equal to a local read; the extra field alike; bounds and unknown fields answered."""
    _plate(tmp_path)
    shutil.copytree(sample_tables / "ball_333.zarr", tmp_path / "ball_333.zarr")
    with StoreProcess(tmp_path) as store, httpx.Client(base_url=store.url) as c:
        for name, n, array in (("ball_333", 100, "points"), ("plate", 10, "thickness"), ("plate", 512, "points")):
            r = c.get(f"/v1/surfaces/{name}/preview", params={"n": n, "array": array})
            assert r.status_code == 200, r.text
            su, sv = map(int, r.headers["x-preview-step"].split(","))
            got = np.load(io.BytesIO(r.content))
            t = open_table(tmp_path / f"{name}.zarr")
            h = t.header
            full = t.read_block(RecordBlock(0, h.n_rec_u, 0, h.n_rec_v), array)
            rows = np.unique(np.r_[np.arange(0, h.u_npts, su), h.u_npts - 1])
            cols = np.unique(np.r_[np.arange(0, h.v_npts, sv), h.v_npts - 1])
            np.testing.assert_array_equal(got, full[rows][:, cols])
            assert max(len(rows), len(cols)) <= n + 1
        assert c.get("/v1/surfaces/plate/preview", params={"n": 1}).status_code == 422
        assert c.get("/v1/surfaces/plate/preview", params={"array": "nope"}).status_code == 422
        assert c.get("/v1/surfaces/nothing/preview").status_code == 404


def _chromium(url: str, out: Path | None, dump: bool = False) -> str:
    """Load ``url`` in headless Chromium with every host but loopback unresolvable; a screenshot
    to ``out`` or the DOM after the scripts ran."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-dev-shm-usage", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--hide-scrollbars", "--window-size=1000,700",
           "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--virtual-time-budget=15000"]
    cmd += ["--dump-dom"] if dump else [f"--screenshot={out}"]
    r = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _content(png: Path) -> tuple[float, int]:
    """Fraction of pixels that are not the white background, and the number of distinct colours."""
    import matplotlib.image

    img = (matplotlib.image.imread(png)[..., :3] * 255).astype(int)
    flat = img.reshape(-1, 3)
    return float((flat.min(axis=1) < 235).mean()), len(np.unique(flat[:, 0] * 65536 + flat[:, 1] * 256 + flat[:, 2]))


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run "
                    "installs it where it can)")
def test_pages_in_headless_chromium(tmp_path, sample_tables):
    """``/`` lists the tables, ``/view/NAME`` draws the surface (records, or an extra field's
    colours), ``/results`` plays a pressure series and ``/docs`` renders, with no host but the
    store reachable; the pages carry a token to the API."""
    _plate(tmp_path)
    shutil.copytree(sample_tables / "ball_333.zarr", tmp_path / "ball_333.zarr")
    t = np.linspace(0, 1, 4)
    x, z = np.meshgrid(np.linspace(-0.01, 0.01, 20), np.linspace(-0.01, 0.01, 20), indexing="ij")
    save_pressure_zarr(tmp_path / "run" / "pressure.zarr", t, {"medial": np.stack([x, 0 * x, z], -1)},
                       {"medial": np.array([1e6 * (1 + tt) * np.exp(-(x**2 + z**2) / 4e-5) for tt in t])}, {})
    with StoreProcess(tmp_path, env={"SURFACESTORE_TOKEN": "s3cret"}) as store:
        dom = _chromium(f"{store.url}/#token=s3cret", None, dump=True)
        assert "ball_333" in dom and "plate" in dom and "41 x 37" in dom, dom[-2000:]
        dom = _chromium(f"{store.url}/", None, dump=True)  # without the token: the API's 401, shown
        assert "401" in dom
        for page, name, (min_fraction, min_colours) in (
                ("/view/ball_333#token=s3cret", "view_ball", (0.05, 100)),
                ("/view/plate?field=thickness#token=s3cret", "view_plate", (0.05, 100)),
                ("/results?path=run/pressure.zarr#token=s3cret", "results", (0.05, 20)),
                ("/docs", "docs", (0.02, 10))):
            png = tmp_path / f"{name}.png"
            _chromium(store.url + page, png)
            fraction, colours = _content(png)
            assert fraction > min_fraction and colours > min_colours, (name, fraction, colours)
        dom = _chromium(f"{store.url}/view/plate?field=thickness#token=s3cret", None, dump=True)
        assert 'data-ready="1"' in dom and 'id="error" hidden' in dom, dom[-2000:]
    with StoreProcess(sample_tables) as store:  # the thesis' 10^6-point ball (81 records of 111 x 111)
        _chromium(f"{store.url}/view/ball", tmp_path / "ball.png")
        fraction, colours = _content(tmp_path / "ball.png")
        assert fraction > 0.05 and colours > 100, (fraction, colours)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run "
                    "installs it where it can)")
def test_markup_in_data_shows_as_text_and_runs_nothing(tmp_path):
    """A table whose header digest is markup (listed unreadable, with the reason) and a result
    series whose compartment is named with markup: both pages show the markup as text, no element
    of it exists in the page, and its script (which would retitle the page) never runs."""
    import json

    evil = "<img src=x onerror=\"document.title='pwned'\">"
    _plate(tmp_path)
    shutil.copytree(tmp_path / "plate.zarr", tmp_path / "marked.zarr")
    meta = tmp_path / "marked.zarr" / "zarr.json"
    doc = json.loads(meta.read_text())
    doc["attributes"]["surface"]["digest"] = evil
    meta.write_text(json.dumps(doc))
    t = np.linspace(0, 1, 3)
    x, z = np.meshgrid(np.linspace(-0.01, 0.01, 8), np.linspace(-0.01, 0.01, 8), indexing="ij")
    save_pressure_zarr(tmp_path / "run" / "pressure.zarr", t, {evil: np.stack([x, 0 * x, z], -1)},
                       {evil: np.array([1e6 * (1 + tt) * np.exp(-(x**2 + z**2) / 4e-5) for tt in t])}, {})
    with StoreProcess(tmp_path) as store:
        for page, shown in (("/", "unreadable"), ("/results?path=run/pressure.zarr", "&lt;img src=x")):
            dom = _chromium(store.url + page, None, dump=True)
            assert shown in dom and "&lt;img src=x onerror=" in dom, (page, dom[-2000:])
            assert "<img" not in dom and "pwned" not in dom.split("</title>")[0], (page, dom[-2000:])
