"""Storage windows and common-normal contact detection against analytic geometry."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from preprocess.build import build_surface, parse_surface
from simclient import LocalSource, open_surface
from simclient.contact import ContactPair, ContactStatus
from simclient.errors import SourceError, WindowError
from simclient.geometry import StorageWindow, euler_from_axis_angle, rotation_matrix
from simclient.io import CountingSource
from surfacestore.format import RecordBlock

rng = np.random.default_rng(42)


def _table(tmp_path, name, **d):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_surface(parse_surface(name, d), tmp_path, overwrite=True).path


def _random_rotation() -> np.ndarray:
    return rotation_matrix(euler_from_axis_angle(rng.normal(size=3), rng.uniform(0, math.pi)))


@pytest.fixture(scope="module")
def geometry(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("geom")
    sphere = {"family": "sphere", "radius": 0.02, "pole_axis": [1, 0, 0], "zero_meridian": [0, 0, -1],
              "u_range_deg": [-90, 90], "v_range_deg": [-180, 180]}
    return {
        "sphere": _table(tmp, "sphere", **sphere, grid=[181, 361], record=[20, 40]),
        "plane": _table(tmp, "plane", family="plane", u_range=[-0.1, 0.1], v_range=[-0.1, 0.1], grid=[41, 41],
                        record=[5, 5]),
        "shell": _table(tmp, "shell", **{**sphere, "radius": 0.025}, grid=[181, 361], record=[20, 40], flip=True),
        "ellipsoid": _table(tmp, "ellipsoid", family="ellipsoid", a=0.03, b=0.02, c=0.015,
                            pole_axis=[1, 0, 0], zero_meridian=[0, 0, -1], u_range_deg=[-90, 90],
                            v_range_deg=[-180, 180], grid=[181, 361], record=[20, 40]),
    }


def _windows(geometry, a, b, interpolation, extent_a=(9, 9), extent_b=(9, 9)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # extents larger than the table: clamped
        return (StorageWindow(open_surface(geometry[a]), extent_a, interpolation),
                StorageWindow(open_surface(geometry[b]), extent_b, interpolation))


def _regular(local: np.ndarray) -> bool:
    """True if a direction in a sample sphere's frame (poles on x, u = v = 0 at -z) is away from
    the poles and from the longitude seam v = +-180 deg, where the table ends."""
    x, y, z = local / np.linalg.norm(local)
    lon = math.degrees(math.atan2(y, -z))  # longitude measured from the zero meridian -z
    return abs(x) < 0.85 and abs(lon) < 150


def _chordal_bound(R: float, du: float, dv: float) -> float:
    """Largest distance between a sphere of radius R and the bilinear patch through the corners of
    a grid cell of R du by (at most) R dv: (h_u^2 + h_v^2) / (8 R)."""
    return ((R * du) ** 2 + (R * dv) ** 2) / (8 * R)


@pytest.mark.parametrize("interpolation", ["bilinear", "hermite"])
def test_sphere_on_plane_random_poses(geometry, interpolation):
    wi, wj = _windows(geometry, "sphere", "plane", interpolation)
    R = 0.02
    bound = _chordal_bound(R, wi.header.du, wi.header.dv)
    errors = []
    for _ in range(40):
        Rb = _random_rotation()  # ball orientation: the contact point lands anywhere on the ball
        Rp = _random_rotation()  # plane orientation
        cp = rng.uniform(-0.01, 0.01, 3)
        n = Rp[:, 2]
        depth = rng.uniform(-2e-3, 2e-3)
        if not _regular(Rb.T @ -n):  # keep the contact point off the ball's poles and seam
            continue
        centre = cp + (R - depth) * n + 0.02 * (Rp[:, 0] * rng.uniform(-1, 1) + Rp[:, 1] * rng.uniform(-1, 1))
        pair = ContactPair(wi, wj)
        c = pair.detect(Rb, centre, Rp, cp)
        assert c.converged, c
        true_depth = R - (centre - cp) @ n
        errors.append(abs(c.indentation - true_depth))
        np.testing.assert_allclose(c.normal, n, atol=1e-12)
        np.testing.assert_allclose(c.point_i, centre - R * n, atol=4 * math.sqrt(bound * R))
    errors = np.array(errors)
    assert len(errors) > 20
    if interpolation == "bilinear":
        assert errors.max() <= bound * 1.0001, (errors.max(), bound)
    else:
        assert errors.max() <= bound / 50, (errors.max(), bound)  # far more accurate at equal density


def test_poses_of_any_array_form_give_the_same_contact(geometry):
    """The compiled fast path reads its pose arrays' memory as C-contiguous float64: a transposed
    (Fortran-ordered) rotation, integer or list positions, a strided view give the contact of their
    values, bit for bit; a wrong shape is a ParameterError naming the argument, never a read."""
    from simclient.errors import ParameterError

    Rb = _random_rotation()
    centre = np.array([0.001, -0.002, 0.0199])

    def twice(*pose):  # from a coarse search (the general path), then warm (the one-call fast path)
        pair = ContactPair(*_windows(geometry, "sphere", "plane", "hermite"))
        first, second = pair.detect(*pose), pair.detect(*pose)
        assert first.converged and second.converged, pose
        return np.concatenate([first.params, second.params, [first.indentation, second.indentation]])

    expected = twice(Rb, centre, np.eye(3), np.zeros(3))
    wide = np.zeros((3, 6))
    wide[:, ::2] = Rb
    forms = [(np.asfortranarray(Rb), centre, np.eye(3), np.zeros(3)),
             (Rb, centre.tolist(), np.eye(3, dtype=int), np.zeros(3, dtype=np.int32)),
             (wide[:, ::2], np.repeat(centre, 2)[::2], np.eye(3, dtype=np.float32), [0, 0, 0])]
    for form in forms:
        assert np.array_equal(twice(*form), expected), form
    reference = ContactPair(*_windows(geometry, "sphere", "plane", "hermite"))
    reference.detect(Rb, centre, np.eye(3), np.zeros(3))
    for bad, name in (((Rb[:2], centre), "R_i"), ((Rb, centre.reshape(3, 1)), "c_i"),
                      ((Rb, centre[:2]), "c_i"), ((Rb, "centre"), "c_i")):
        with pytest.raises(ParameterError, match=name):
            reference.detect(*bad, np.eye(3), np.zeros(3))


@pytest.mark.parametrize("interpolation", ["bilinear", "hermite"])
def test_sphere_in_concave_sphere(geometry, interpolation):
    wi, wj = _windows(geometry, "sphere", "shell", interpolation)
    R1, R2 = 0.02, 0.025
    bound = _chordal_bound(R1, wi.header.du, wi.header.dv) + _chordal_bound(R2, wj.header.du, wj.header.dv)
    for _ in range(20):
        Rb, Rs = _random_rotation(), _random_rotation()
        direction = Rs @ np.array([0, 0, -1.0])  # towards the shell's bottom (regular, off its poles)
        offset = rng.uniform(R2 - R1 - 1e-3, R2 - R1 + 1e-3)
        shell_c = rng.uniform(-0.01, 0.01, 3)
        centre = shell_c + offset * direction
        if not (_regular(Rb.T @ direction) and _regular(Rs.T @ direction)):
            continue
        c = ContactPair(wi, wj).detect(Rb, centre, Rs, shell_c)
        assert c.converged, c
        true = offset + R1 - R2
        assert abs(c.indentation - true) <= bound * 1.0001
        np.testing.assert_allclose(c.normal, -direction, atol=1e-3)  # the shell's inward (outward-side) normal


@pytest.mark.parametrize("interpolation", ["bilinear", "hermite"])
def test_ellipsoid_on_plane(geometry, interpolation):
    wi, wj = _windows(geometry, "ellipsoid", "plane", interpolation)
    # with pole_axis x and zero_meridian -z the semi-axes a, b, c lie along z, y, x of the table frame
    D2 = np.diag([0.015, 0.02, 0.03]) ** 2
    for _ in range(20):
        Re = _random_rotation()
        M = Re @ D2 @ Re.T
        ez = np.array([0, 0, 1.0])
        support = math.sqrt(ez @ M @ ez)
        lowest_local = Re.T @ (-(M @ ez) / support)  # lowest point in the ellipsoid's frame
        if not _regular(lowest_local / [0.015, 0.02, 0.03]):
            continue
        depth = rng.uniform(-1e-3, 1e-3)
        centre = np.array([0.0, 0.0, support - depth])
        c = ContactPair(wi, wj).detect(Re, centre, np.eye(3), np.zeros(3))
        assert c.converged
        h = 0.03 * max(wi.header.du, wi.header.dv)  # longest cell side; 0.015 m the smallest radius
        assert abs(c.indentation - depth) <= 2 * h * h / (8 * 0.015) * 1.0001
        np.testing.assert_allclose(c.point_i, centre - M @ ez / support, atol=2 * h)


def test_window_update_rule_and_strips(sample_tables):
    src = CountingSource(LocalSource(sample_tables / "ground.zarr"))
    h = src.header
    w = StorageWindow(src, (3, 3), centre=(h.u0 + 18.5 * 9 * h.du, h.v0 + 18.5 * 9 * h.dv))
    assert w.block == RecordBlock(17, 20, 17, 20)
    assert (src.requests, src.records_fetched) == (1, 9)

    def at(ri, rj):  # a point inside record (ri, rj)
        return h.u0 + (ri * 9 + 4.3) * h.du, h.v0 + (rj * 9 + 4.6) * h.dv

    # Fig. 6.13: impacts inside the central record need no update
    for _ in range(8):
        assert not w.update(*at(18, 18))
    assert w.stats["updates"] == 0
    # the ninth lands on a border record: re-centre on it, fetching one new strip of 3 records
    assert w.update(*at(19, 18))
    assert w.block == RecordBlock(18, 21, 17, 20)
    assert (src.requests, src.records_fetched) == (2, 12)
    # a diagonal move fetches an L of 5 records in 2 strips
    assert w.update(*at(20, 19))
    assert w.block == RecordBlock(19, 22, 18, 21)
    assert (src.requests, src.records_fetched) == (4, 17)
    assert w.stats == {"updates": 2, "records_fetched": 17, "bytes_fetched": 17 * 9072, "bytes_read": 17 * 9072,
                       "requests": 4, "wait_s": pytest.approx(w.stats["wait_s"]), "extent": [3, 3]}
    # the buffer holds exactly the window's records
    np.testing.assert_array_equal(w.points(), LocalSource(sample_tables / "ground.zarr").read_block(19, 22, 18, 21))
    # at the table's corner the window is shifted inward, and border records there need no update
    w.update(*at(0, 0))
    assert w.block == RecordBlock(0, 3, 0, 3)
    assert not w.update(*at(0, 1))
    # far jump: the whole window is fetched in one request
    before = src.requests
    w.update(*at(30, 30))
    assert src.requests == before + 1 and w.block == RecordBlock(29, 32, 29, 32)
    # interpolation inside the window reproduces the table's nodes
    s = w.sample(h.u0 + 30 * 9 * h.du, h.v0 + 30 * 9 * h.dv)
    # the sample ground maps (u, v) to (x, y) = (v, -u)
    np.testing.assert_allclose(s.point, [h.v0 + 270 * h.dv, -(h.u0 + 270 * h.du), 0], atol=1e-15)


def test_time_to_a_windows_edge(sample_tables):
    """How long a parameter point moving at given rates stays on the window's points: the
    distance to the last point it holds over the rate, the nearer edge first, none at rest or
    towards an edge that is the table's own."""
    h = LocalSource(sample_tables / "ground.zarr").header
    w = StorageWindow(LocalSource(sample_tables / "ground.zarr"), (3, 3), centre=(h.u0 + 18.5 * 9 * h.du,
                                                                                h.v0 + 18.5 * 9 * h.dv))
    assert w.block == RecordBlock(17, 20, 17, 20)  # points 153 to 179 in u and v
    u, v = h.u0 + 160 * h.du, h.v0 + 170 * h.dv
    assert w.time_to_edge(u, v, 2 * h.du, 0.0) == pytest.approx(19 / 2)  # to point 179 in u
    assert w.time_to_edge(u, v, -h.du, 0.0) == pytest.approx(7.0)  # back to point 153
    assert w.time_to_edge(u, v, h.du, h.dv) == pytest.approx(9.0)  # v's edge first
    assert w.time_to_edge(u, v, 0.0, 0.0) == math.inf
    w.update(h.u0 + 4.3 * h.du, h.v0 + 4.6 * h.dv)  # at the table's corner
    assert w.block == RecordBlock(0, 3, 0, 3)
    assert w.time_to_edge(h.u0 + 5 * h.du, h.v0, -h.du, -h.dv) == math.inf  # the table's edges
    assert w.time_to_edge(h.u0 + 5 * h.du, h.v0, h.du, 0.0) == pytest.approx(21.0)


def test_window_bad_input(sample_tables):
    src = LocalSource(sample_tables / "ground.zarr")
    with pytest.warns(UserWarning, match="clamped"):
        w = StorageWindow(src, (50, 3))
    assert w.extent == (37, 3)
    with pytest.raises(WindowError, match="outside the table"):
        w.update(1.0, 0.0)
    with pytest.raises(WindowError, match="outside the window"):
        w.sample(0.09, 0.04)

    class Failing:
        name, header = src.name, src.header

        def read_block(self, *a):
            raise SourceError("connection reset")

    good = StorageWindow(src, (3, 3))
    bad = StorageWindow(src, (3, 3))
    bad.source = Failing()
    before, block = bad.buffer.copy(), bad.block
    with pytest.raises(SourceError, match=r"ground: window update .* records \[.*connection reset"):
        bad.update(-0.049, -0.099)
    assert bad.block == block and np.array_equal(bad.buffer, before, equal_nan=True)
    assert good.block == block


def test_singular_and_wrong_way_normals(geometry, tmp_path):
    wi, wj = _windows(geometry, "plane", "plane", "hermite")
    c = ContactPair(wi, wj).detect(np.diag([1.0, -1, -1]), np.array([0, 0, 0.001]), np.eye(3), np.zeros(3))
    assert not c.converged and c.status in (ContactStatus.SINGULAR, ContactStatus.NOT_CONVERGED)
    flipped = _table(tmp_path, "flipped", family="sphere", radius=0.02, pole_axis=[1, 0, 0],
                     zero_meridian=[0, 0, -1], grid=[91, 181], record=[10, 20], flip=True)
    wf = StorageWindow(open_surface(flipped), (9, 9))
    c = ContactPair(wf, wj).detect(np.eye(3), np.array([0, 0, 0.0199]), np.eye(3), np.zeros(3))
    assert not c.converged and c.status == ContactStatus.NORMALS_ALIGNED
    assert str(c.status) == "normals point the same way"


def test_http_and_local_windows_agree(store, sample_tables):
    results = []
    for loc in (f"{store.url}/v1/surfaces", str(sample_tables)):
        sep = "/" if loc.startswith("http") else "/"
        suffix = "" if loc.startswith("http") else ".zarr"
        ball = StorageWindow(open_surface(f"{loc}{sep}ball_333{suffix}"), (3, 3))
        ground = StorageWindow(open_surface(f"{loc}{sep}ground{suffix}"), (3, 9))
        pair = ContactPair(ball, ground)
        out = []
        for k in range(30):
            c = pair.detect(np.eye(3), np.array([-0.03 + 0.002 * k, 0.001, 0.02 - 1e-5]), np.eye(3), np.zeros(3))
            out.append((c.indentation, *c.point_i, *c.params))
        results.append((np.array(out), ball.stats["records_fetched"], ground.stats["updates"]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1:] == results[1][1:]
    assert results[0][2] > 0  # the ground window moved as the ball travelled


def test_window_narrower_than_three_records_is_refused(sample_tables):
    src = LocalSource(sample_tables / "ground.zarr")
    with pytest.raises(WindowError, match="narrower than 3 records"):
        StorageWindow(src, (2, 2))
    with pytest.raises(WindowError, match="narrower than 3 records"):
        StorageWindow(src, (3, 1))
    # three records are enough
    ball9 = LocalSource(sample_tables / "ball_9.zarr")
    assert StorageWindow(ball9, (3, 3)).extent == (3, 3)
