"""The compiled core: the project's DOP853 against scipy's, Brent's methods against scipy's, each
kernel's rule against its closed form or definition (property tests), the kernels' declared shape
(parameters, layout offsets), the compiled module's rebuild when a callee changes, and the pointer
checks."""

from __future__ import annotations

import ast
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simclient.geometry import kernels
from simclient.geometry import layout as L

ROOT = Path(__file__).resolve().parents[2]
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
positive = st.floats(1e-6, 1e3, allow_nan=False, allow_infinity=False)


# -- the integrator ------------------------------------------------------------------------------

def _oscillator(t, y):
    return np.array([y[1], -y[0] - 0.1 * y[1] ** 3])


def _van_der_pol(t, y):
    return np.array([y[1], 2.0 * (1 - y[0] ** 2) * y[1] - y[0]])


def _kepler(t, y):
    r3 = (y[0] ** 2 + y[1] ** 2) ** 1.5
    return np.array([y[2], y[3], -y[0] / r3, -y[1] / r3])


PROBLEMS = {"oscillator": (_oscillator, [1.0, 0.0], 20.0), "van der Pol": (_van_der_pol, [2.0, 0.0], 20.0),
            "Kepler, e = 0.5": (_kepler, [0.5, 0.0, 0.0, math.sqrt(3.0)], 20.0)}


def _steps(solver, fun, y0, t_end, rtol):
    s = solver(fun, 0.0, np.array(y0, dtype=float), t_end, rtol=rtol, atol=rtol * 1e-2)
    ts = [0.0]
    while s.status == "running":
        s.step()
        ts.append(s.t)
    return np.array(ts), s.y, s.nfev


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("rtol", [1e-6, 1e-10])
def test_dop853_takes_scipys_steps(problem, rtol):
    """Hairer's DOP853 as the project writes it against scipy's public ``DOP853`` on the same
    problems: the same first steps to the last bit (the same starting step and tableau), the same
    number of steps within 2 % (round-off in the error estimate, a small difference of large
    stages, tips later step sizes apart by parts in 10^10) and the same end to the tolerances."""
    from scipy.integrate import DOP853

    from simclient.dynamics import Dop853

    fun, y0, t_end = PROBLEMS[problem]
    ours, theirs = _steps(Dop853, fun, y0, t_end, rtol), _steps(DOP853, fun, y0, t_end, rtol)
    np.testing.assert_array_equal(ours[0][:3], theirs[0][:3])
    assert abs(len(ours[0]) - len(theirs[0])) <= max(2, 0.02 * len(theirs[0]))
    scale = np.abs(theirs[1]).max()
    assert np.abs(ours[1] - theirs[1]).max() <= 1e3 * rtol * scale


def test_dop853_dense_output_is_scipys_and_seventh_order():
    """The dense output of one step equals scipy's (the same coefficients, Hairer's CONTD8) to
    round-off, and its error inside a long step falls as h^8 (the interpolant's order 7)."""
    from scipy.integrate import DOP853

    from simclient.dynamics import Dop853

    for h in (0.4, 0.2):
        a = Dop853(_oscillator, 0.0, np.array([1.0, 0.0]), 10.0, first_step=h, rtol=1e-3, atol=1e-3)
        b = DOP853(_oscillator, 0.0, np.array([1.0, 0.0]), 10.0, first_step=h, rtol=1e-3, atol=1e-3)
        a.step()
        b.step()
        ts = np.linspace(0.0, a.t, 7)
        # (round-off: the same polynomial evaluated in another order, compiled with or without fused
        # multiply-adds as the CPU offers; 50 ulps of the solution's size, |y| <= 1)
        np.testing.assert_allclose(a.dense_output()(ts), b.dense_output()(ts), rtol=0, atol=50 * np.finfo(float).eps)
    f = lambda t, y: np.array([y[1], -y[0]])  # noqa: E731  (cos t, exactly)
    errors = []
    for h in (0.8, 0.4):
        a = Dop853(f, 0.0, np.array([1.0, 0.0]), 10.0, first_step=h, rtol=1.0, atol=1.0)
        a.step()
        mid = a.t / 2
        errors.append(abs(a.dense_output()(mid)[0] - math.cos(mid)))
    assert 2 ** 7.5 < errors[0] / errors[1] < 2 ** 9


def test_brents_methods_find_scipys_root_and_minimum():
    from scipy.optimize import brentq, fminbound

    from simclient.dynamics import find_minimum, find_root

    for f, a, b in ((lambda x: x ** 3 - 2 * x - 5, 2.0, 3.0), (lambda x: math.cos(x) - x, 0.0, 1.0),
                    (lambda x: math.exp(x) - 10.0, 0.0, 5.0), (lambda x: (x - 1e-9) * 1e6, -1.0, 1.0)):
        assert find_root(f, a, b, xtol=1e-14, rtol=4e-16) == pytest.approx(brentq(f, a, b, xtol=1e-14), abs=4e-14)
    with pytest.raises(ValueError):
        find_root(lambda x: x * x + 1.0, -1.0, 1.0)
    for f, a, b in ((lambda x: (x - 0.3) ** 2, 0.0, 1.0), (lambda x: math.sin(x), 3.0, 6.0),
                    (lambda x: abs(x - 0.71), 0.0, 1.0)):
        x, fx = find_minimum(f, a, b, xatol=1e-10)
        assert x == pytest.approx(fminbound(f, a, b, xtol=1e-10), abs=1e-8) and fx == f(x)


# -- each rule against its definition ------------------------------------------------------------

def _step5(z):
    return 10 * z ** 3 - 15 * z ** 4 + 6 * z ** 5


@settings(max_examples=200, deadline=None)
@given(mu_d=st.floats(0.0, 1.0), extra=st.floats(0.0, 1.0), mu_v=st.floats(0.0, 2.0), v_t=st.floats(1e-5, 1e-1),
       slip=st.floats(0.0, 1.0), fn=st.floats(-10.0, 100.0), n=st.tuples(finite, finite, finite),
       vel=st.tuples(finite, finite, finite))
def test_friction_force_is_its_closed_form(mu_d, extra, mu_v, v_t, slip, fn, n, vel):
    """Simbody's regularized Coulomb friction: against the slip (the relative velocity less its
    normal part), of magnitude mu(|slip|) F_N with mu = mu_s step5(x) below the transition
    velocity, mu_s - (mu_s - mu_d) step5((x - 1) / 2) up to three times it, mu_d beyond, plus
    mu_v |slip|; none without slip or pushing normal force."""
    from simclient.contact import friction_coefficient, friction_force

    normal = np.array(n)
    if np.linalg.norm(normal) < 1e-3:
        normal = np.array([0.0, 0.0, 1.0])
    normal /= np.linalg.norm(normal)
    p = np.array([mu_d + extra, mu_d, mu_v, v_t])
    x = slip / v_t
    mu = (p[0] * _step5(x) if x < 1 else p[0] - (p[0] - p[1]) * _step5((x - 1) / 2) if x < 3 else p[1]) + mu_v * slip
    # (round-off: step5's terms, up to 15 times the coefficient's scale, cancel near x = 3; both sides
    # sum them, in other orders)
    assert friction_coefficient(p, slip) == pytest.approx(mu, rel=1e-12, abs=64 * np.finfo(float).eps * (p[0] + mu_v * slip))
    v = np.array(vel)
    s = v - (v @ normal) * normal
    f = np.zeros(3)
    friction_force(p, normal, v, fn, f)
    speed = np.linalg.norm(s)
    if fn <= 0:
        assert not f.any()
        return
    tiny = 1e-9 * (np.abs(v).max() + 1)
    if speed <= tiny:  # (no slip but round-off's: at most the coefficient of a slip that small, with the kernel's round-off)
        most = tiny + 8 * np.finfo(float).eps * np.abs(v).max()
        assert np.linalg.norm(f) <= (p[0] * _step5(min(most / v_t, 1.0)) + mu_v * most) * fn * (1 + 1e-9) + 1e-300
        return
    mu = friction_coefficient(p, speed)
    expected = -mu * fn * s / speed
    # the slip is v less its normal part: where it is small against v, its direction carries the
    # round-off of that difference, about 8 eps |v| / |slip| (both sides compute it, in other orders)
    cancel = 8 * np.finfo(float).eps * np.abs(v).max() / speed * mu * fn
    np.testing.assert_allclose(f, expected, rtol=1e-9, atol=1e-12 * (abs(fn) + 1) * (np.abs(v).max() + 1) + cancel)


@settings(max_examples=200, deadline=None)
@given(elastic=st.floats(-1e3, 1e3), rate=finite, damping=st.floats(0.0, 1e3), tension_only=st.booleans())
def test_ligament_tension_is_its_definition(elastic, rate, damping, tension_only):
    """A spring-damper pushes and pulls (``F + c l'``); a tension-only ligament is damped only
    while taut and never pushes."""
    from simclient.dynamics import ligament_tension

    got = ligament_tension(elastic, rate, damping, tension_only)
    if not tension_only:
        assert got == pytest.approx(elastic + damping * rate)
    else:
        assert got == pytest.approx(max(0.0, elastic + damping * rate) if elastic > 0 else max(0.0, elastic))


@settings(max_examples=200, deadline=None)
@given(K=positive, n=st.floats(1.0, 2.5), D=st.floats(0.0, 3.0), delta=st.floats(-1e-3, 1e-3),
       rate=st.floats(-2.0, 2.0), rate0=st.floats(1e-3, 2.0))
def test_force_laws_are_their_closed_forms(K, n, D, delta, rate, rate0):
    """Table 5.4 (``K delta^n (1 + D delta' / delta'_0)``, never pulling), eq. 5.33 (continuous at
    the layers' interface) and the penalty step, against their formulas."""
    from simclient.contact import law_force, step

    p = np.array([K, n, D, 0.0, 0.0])
    hertzian = 0.0 if delta <= 0 else max(0.0, K * delta ** n * (1 + D * rate / rate0))
    assert law_force(L.LAW_HERTZIAN, p, delta, rate, rate0) == pytest.approx(hertzian, rel=1e-12)
    h1 = 2e-4
    layers = np.array([K, 10 * K, h1, n, 0.0])
    below, above = (law_force(L.LAW_DOUBLE_LAYER, layers, h1 * (1 + s), 0.0, 1.0) for s in (-1e-12, 1e-12))
    assert below == pytest.approx(above, rel=1e-9)
    if delta > h1:
        assert law_force(L.LAW_DOUBLE_LAYER, layers, delta, 0.0, 1.0) == pytest.approx(
            K * h1 ** n + 10 * K * (delta - h1) ** n, rel=1e-12)
    penalty = np.array([K, n, 1e-4, 50.0, 0.0])
    expected = 0.0 if delta <= 0 else max(0.0, K * delta ** n + step(delta, 0.0, 0.0, 1e-4, 50.0) * rate)
    assert law_force(L.LAW_PENALTY_STEP, penalty, delta, rate, 1.0) == pytest.approx(expected, rel=1e-12)
    z = min(max(delta / 1e-4, 0.0), 1.0)
    assert step(delta, 0.0, 0.0, 1e-4, 50.0) == pytest.approx(50.0 * z * z * (3 - 2 * z), rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(k=positive, l0=st.floats(1e-3, 0.1), eps_l=st.floats(0.01, 0.1), length=st.floats(1e-4, 0.2))
def test_spring_laws_are_their_closed_forms(k, l0, eps_l, length):
    from simclient.dynamics import spring_force

    eps = (length - l0) / l0
    quadratic = k * (length - l0) ** 2 if length > l0 else 0.0
    toe = 0.0 if eps <= 0 else (k * eps * eps / (4 * eps_l) if eps <= 2 * eps_l else k * (eps - eps_l))
    assert spring_force(L.SPRING_QUADRATIC, np.array([k, l0, 0.0]), length) == pytest.approx(quadratic, rel=1e-12)
    assert spring_force(L.SPRING_BLANKEVOORT, np.array([k, l0, eps_l]), length) == pytest.approx(toe, rel=1e-12)
    assert spring_force(L.SPRING_LINEAR, np.array([k, l0, 0.0]), length) == pytest.approx(k * (length - l0), rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(axis=st.tuples(finite, finite, finite), angle=st.floats(-10.0, 10.0), scale=st.floats(0.5, 2.0),
       r=st.tuples(finite, finite, finite), s=st.tuples(finite, finite, finite))
def test_eq_6_3_and_the_placement_are_rodrigues_rotations(axis, angle, scale, r, s):
    """Eq. 6.3 (with its factor 2) of Euler parameters for a rotation by ``angle`` about ``axis``,
    scaled (a drifted state), is Rodrigues' rotation matrix; eq. 6.17 places a surface at
    ``R = A A_Q``, ``c = r + A s_Q``."""
    from simclient.geometry import euler_from_axis_angle, place, rotation_into

    k = np.array(axis)
    if np.linalg.norm(k) < 1e-3:
        k = np.array([1.0, 0.0, 0.0])
    k /= np.linalg.norm(k)
    A = np.empty((3, 3))
    rotation_into(scale * euler_from_axis_angle(k, angle), A)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    rodrigues = np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K
    np.testing.assert_allclose(A, rodrigues, atol=1e-13)
    A_Q = rodrigues.T.copy()
    R, c = np.empty((3, 3)), np.empty(3)
    place(np.array(r), A, np.array(s), A_Q, R, c)
    np.testing.assert_allclose(R, A @ A_Q, atol=1e-13)
    np.testing.assert_allclose(c, np.array(r) + A @ np.array(s), rtol=1e-13, atol=1e-10)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 400), flat=st.booleans())
def test_nearest_is_the_brute_force_nearest(seed, m, flat):
    """The grid search finds the nearest point, for points on a surface or in a volume, queries
    inside and far outside their box."""
    from simclient.contact import nearest

    rng = np.random.default_rng(seed)
    points = rng.normal(size=(m, 3))
    if flat:
        points[:, 2] = 0.01 * np.sin(points[:, 0])
    queries = np.concatenate([rng.normal(size=(30, 3)), 50 * rng.normal(size=(5, 3))])
    found = np.empty(len(queries), np.int64)
    nearest(points, queries, found)
    d = np.linalg.norm(queries[:, None] - points[None], axis=-1)
    np.testing.assert_allclose(d[np.arange(len(queries)), found], d.min(axis=1), rtol=0, atol=0)


# -- the kernels' declared shape ----------------------------------------------------------------

def _kernel_functions():
    for module in kernels.KERNEL_MODULES:
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    "kernel" in ast.unparse(d) or "helper" in ast.unparse(d) for d in node.decorator_list):
                yield module, node


def test_no_kernel_takes_more_than_twelve_parameters():
    """Kernels take a system's packed arrays, not its parts one by one (a 39-parameter kernel's
    argument order was held only by the caller's tuple)."""
    wide = [f"{m}.{f.name}: {len(f.args.args)}" for m, f in _kernel_functions() if len(f.args.args) > 12]
    assert not wide, wide


PACKED = {"work", "w", "ints", "flts", "rays", "flags", "bodies", "row", "step", "vectors", "contact_i", "contact_f",
          "ligament_i", "ligament_f", "cf", "lf", "ip", "fp", "geometry", "settings", "grid"}


def test_no_layout_offset_is_a_bare_number():
    """Offsets into the packed arrays come from the layout module: no index of a packed array is a
    bare number beyond a vector's components (``work[160]``), and no kernel module but the layout
    keeps offsets of its own (module-level whole numbers used in such indices)."""
    bare = []
    for module, f in _kernel_functions():
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        own = {t.id for node in ast.parse(path.read_text()).body if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int)
               for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(f):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in PACKED:
                index = node.slice
                if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value > 3:
                    bare.append(f"{module}.{f.name}: {ast.unparse(node)}")
                names = {n.id for n in ast.walk(index) if isinstance(n, ast.Name)} & own
                if names and module != "simclient.geometry.layout":
                    bare.append(f"{module}.{f.name}: {ast.unparse(node)} uses {sorted(names)}")
    assert not bare, bare


def test_each_rule_is_written_once():
    """Friction's slip rule and the ligament's tension rule live in one kernel each (simclient.contact's
    friction_force, simclient.dynamics' ligament_tension): no other module computes a friction
    coefficient or a ligament's damping itself."""
    callers = {"friction_coefficient(": set(), "tension_only": set()}
    for path in (ROOT / "simclient").rglob("*.py"):
        text = path.read_text()
        for key in callers:
            if key in text:
                callers[key].add(path.relative_to(ROOT).as_posix())
    assert callers["friction_coefficient("] <= {"simclient/contact/_rules.py", "simclient/contact/_friction.py"}
    for path in callers["tension_only"]:
        text = (ROOT / path).read_text()
        assert "damping * " not in text or path == "simclient/dynamics/_rules.py", path


# -- the compiled module ------------------------------------------------------------------------

def test_the_sources_hash_changes_with_any_kernel_module(tmp_path, monkeypatch):
    """The module's key covers every kernel module (a callee's file too)."""
    key = kernels.source_hash()
    copy = tmp_path / "simclient"
    shutil.copytree(ROOT / "simclient", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(kernels, "_ROOT", copy)
    assert kernels.source_hash() == key
    for module in kernels.KERNEL_MODULES:
        f = kernels._file_of(module)
        text = f.read_text()
        f.write_text(text + "\n# edited\n")
        assert kernels.source_hash() != key, module
        f.write_text(text)


@pytest.mark.slow
def test_an_edited_callee_runs_without_a_step_by_hand(tmp_path):
    """Edit a callee in another file than its kernel's (eq. 6.3, which the bodies' poses call) and
    run again: the compiled module is rebuilt for the new sources, and the run uses the new code
    (numba's own cache checked a kernel's own file only, and ran the old callee)."""
    for package in ("simclient", "surfacestore"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    poses = tmp_path / "simclient" / "geometry" / "_poses.py"
    poses.write_text(poses.read_text().replace("A[a + 8] = 2 * (e0 * e0 + e3 * e3) - 1",
                                               "A[a + 8] = 2 * (e0 * e0 + e3 * e3) - 1 + 0.5"))
    code = ("import numpy as np\nfrom simclient.dynamics._rules import poses\nfrom simclient.geometry import layout as L\n"
            "bodies = np.zeros((1, L.BODY_SIZE)); y = np.zeros(13); y[3] = 1.0\n"
            "poses(y, bodies)\nprint(bodies[0, L.BODY_A + 8])\n"
            "from simclient.geometry import kernels; print(kernels.mode())")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SIMCLIENT_KERNEL_DIR": str(tmp_path / "cache")}
    env.pop("SIMCLIENT_KERNELS", None)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1.5", "aot"], (r.stdout, r.stderr)
    assert "compiling the kernels" in r.stderr


POINTER_CHECK = """
import numpy as np
from simclient.contact import ContactPair
from simclient.errors import PointerError
from simclient.geometry import StorageWindow
from simclient.io import LocalSource
ball = StorageWindow(LocalSource({ball!r}), (3, 3), centre=(0.0, 0.0))
ground = StorageWindow(LocalSource({ground!r}), (3, 9), centre=(0.0, 0.0))
pair = ContactPair(ball, ground, name="ball-ground")
pose = (np.eye(3), np.array([0.0, 0.0, 0.02 - 1e-5]), np.eye(3), np.zeros(3))
assert pair.detect(*pose).converged
ground._buffer = ground.buffer.copy()  # a buffer replaced behind the pair's back
try:
    pair.detect(*pose)
except PointerError as exc:
    print(exc)
else:
    print("not caught")
"""


def test_a_stale_address_is_caught_naming_the_pair(sample_tables):
    """With ``SIMCLIENT_CHECK_POINTERS=1`` a compiled call whose window buffer was replaced without
    the pair's refresh fails before it reads, naming the pair and the window; without the check the
    same call would read the old, freed buffer."""
    code = POINTER_CHECK.format(ball=str(sample_tables / "ball_333.zarr"), ground=str(sample_tables / "ground.zarr"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "SIMCLIENT_CHECK_POINTERS": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("contact ball-ground (ball_333 / ground): window j (ground): the pair holds buffer"), r.stdout


def test_the_checks_pass_for_a_run_that_switches_charts_and_moves_windows(sample_tables):
    """A rolling ball on an atlas, its contact point going from chart to chart and its ground window
    moving, every kernel call checked (arguments and addresses)."""
    r = subprocess.run([sys.executable, "-m", "simclient.cli", "run", "bouncing-ball", "--tables", str(sample_tables),
                        "--atlas", "--vy", "0.1", "--friction", "0.3", "--json"], capture_output=True, text=True,
                       env={**os.environ, "SIMCLIENT_CHECK_POINTERS": "1"})
    assert r.returncode == 0, r.stderr
    import json

    s = json.loads(r.stdout)
    assert s["status"] == "ok" and s["chart_switches"] >= 1 and s["windows"]["ground"]["updates"] >= 1


def test_a_wrong_argument_is_caught_by_the_checks():
    """The compiled module's functions read any array as their signature says; with the checks on,
    an argument of another type or layout is refused naming the kernel and the argument."""
    checked = kernels.checked(lambda *a: None, "f8(f8[::1], f8[:, ::1], i8)", "demo")
    checked(np.zeros(3), np.zeros((3, 3)), 1)
    with pytest.raises(kernels.KernelArgumentError, match="kernel demo, argument 0: expected a C-contiguous"):
        checked(np.zeros(6)[::2], np.zeros((3, 3)), 1)
    with pytest.raises(kernels.KernelArgumentError, match="argument 1: expected a f8"):
        checked(np.zeros(3), np.zeros((3, 3), np.float32), 1)
    with pytest.raises(kernels.KernelArgumentError, match="argument 2: expected i8"):
        checked(np.zeros(3), np.zeros((3, 3)), 1.5)
