"""The quasi-static equilibrium solver: a ball pressed onto the ground table by its weight and a
growing load, held sideways by two springs, against the closed forms (Hertz's indentation, the
springs' balance) along a load path; prescribed coordinates; bad input and failure reported."""

from __future__ import annotations

import numpy as np
import pytest

from simclient.contact import make_law
from simclient.dynamics import Body, BodyEquilibrium, ContactModel, MultibodySystem, StaticProblem, Surface
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow
from simclient.io import open_surface

MASS, RADIUS, K = 0.092, 0.02, 5.5e9


def newton(fun, x0, *, tol, step, jacobian=None, **options):
    """``StaticProblem.newton`` on a residual of ``x`` alone."""
    return StaticProblem(lambda x, s: fun(x), tol=tol, step=step, **options).newton(x0, jacobian=jacobian)


def settle(fun, x0, *, damping, dt, tol, step, max_steps=200, max_step=None):
    """``StaticProblem.settle`` on a residual of ``x`` alone."""
    return StaticProblem(lambda x, s: fun(x), tol=tol, step=step, damping=damping,
                         max_step=max_step).settle(x0, dt=dt, max_steps=max_steps)
SPRINGS = ((200.0, -0.01), (600.0, 0.03))  # (N/m, anchor x in m): the ball's x settles at 0.02


def _system(tables, load_max=100.0):
    ball = Body("ball", mass=MASS, inertia=np.eye(3) * 0.4 * MASS * RADIUS**2, position=np.array([0.0, 0.0, 0.021]))
    ground = Body("ground", fixed=True)
    contact = ContactModel("ball-ground",
                           Surface(ball, StorageWindow(open_surface(tables / "ball_333.zarr"), (3, 3), centre=(0, 0))),
                           Surface(ground, StorageWindow(open_surface(tables / "ground.zarr"), (3, 9), centre=(0, 0))),
                           make_law("hertz", K))

    def loads(s, system):
        r = system.pose(ball)[0]
        push = np.array([0.0, 0.0, -load_max * s])  # the load step s in [0, 1]
        springs = np.array([-sum(k * (r[0] - a) for k, a in SPRINGS), 0.0, 0.0])
        return [(ball, r, push + springs)]
    return MultibodySystem([ball, ground], [contact], gravity=(0, 0, -9.81), loads=[loads]), ball


def test_ball_on_the_ground_along_a_load_path(sample_tables):
    system, ball = _system(sample_tables)
    problem = BodyEquilibrium(system, ball, {"y": 0.0, "rx": 0.0, "ry": 0.0, "rz": 0.0})
    steps = np.linspace(0.0, 1.0, 6)
    path = problem.path(steps)
    assert len(path) == len(steps) and all(r.converged for r in path), [r.message for r in path]
    x_expected = sum(k * a for k, a in SPRINGS) / sum(k for k, _ in SPRINGS)
    for r, s in zip(path, steps):
        assert max(problem.residuals(r)) <= 1e-6
        W = MASS * 9.81 + 100.0 * s
        delta = (W / K) ** (2 / 3)  # Hertz: W = K delta^1.5
        assert RADIUS - r.x[2] == pytest.approx(delta, rel=1e-3)
        assert r.x[0] == pytest.approx(x_expected, abs=1e-9)
        assert r.x[1] == 0.0 and not r.x[3:].any()


def test_each_step_of_the_path_starts_on_its_tangent(sample_tables):
    """``BodyEquilibrium.predicted`` (``StaticProblem.tangent``), the start of each step of ``path``: from the
    equilibrium at s = 0.5, the start for s + ds misses the next equilibrium by Hertz's second-order
    term, |delta''| ds^2 / 2 with delta(s) = ((m g + 100 N s) / K)^(2/3), where the unmoved
    equilibrium misses it by the first-order delta' ds."""
    system, ball = _system(sample_tables)
    problem = BodyEquilibrium(system, ball, {"y": 0.0, "rx": 0.0, "ry": 0.0, "rz": 0.0})
    here = problem.solve(0.5)
    assert here.converged and here.jacobian is not None
    W = MASS * 9.81 + 100.0 * 0.5
    first = 2 / 3 * (100.0 / K) * (W / K) ** (-1 / 3)  # d delta / ds (m)
    second = 2 / 9 * (100.0 / K) ** 2 * (W / K) ** (-4 / 3)  # |d2 delta / ds2| (m)
    for ds in (0.2, 0.1):
        truth = problem.solve(0.5 + ds, here.x)
        start = problem.predicted(here, 0.5 + ds)
        assert abs(start[2] - truth.x[2]) == pytest.approx(second * ds**2 / 2, rel=0.25)
        assert abs(here.x[2] - truth.x[2]) == pytest.approx(first * ds, rel=0.1)
        np.testing.assert_allclose(np.delete(start, 2), np.delete(here.x, 2), atol=1e-12)  # x: its springs


def test_free_rotation_of_a_ball_is_not_held(sample_tables):
    """A frictionless ball's spin is held by nothing: leaving it free is an input error naming it;
    y (no spring along y) likewise."""
    system, ball = _system(sample_tables)
    with pytest.raises(ParameterError, match="rz"):
        BodyEquilibrium(system, ball, {"y": 0.0, "rx": 0.0, "ry": 0.0}).solve(0.5)
    with pytest.raises(ParameterError, match=r"coordinate\(s\) y"):
        BodyEquilibrium(system, ball, {"rx": 0.0, "ry": 0.0, "rz": 0.0}).solve(0.5)


def test_bad_input_and_failure(sample_tables):
    system, ball = _system(sample_tables)
    with pytest.raises(ParameterError, match="unknown coordinate"):
        BodyEquilibrium(system, ball, {"flexion": 0.0})
    with pytest.raises(ParameterError, match="every coordinate"):
        BodyEquilibrium(system, ball, dict.fromkeys(("x", "y", "z", "rx", "ry", "rz"), 0.0))
    with pytest.raises(ParameterError, match="not a free body"):
        BodyEquilibrium(system, system.bodies[1])
    problem = BodyEquilibrium(system, ball, {"y": 0.0, "rx": 0.0, "ry": 0.0, "rz": 0.0}, max_iter=1)
    r = problem.solve(1.0)
    assert not r.converged and "step s = 1" in r.message and problem.residuals(r)[0] > 1e-6


def test_newton_finds_a_known_root_and_reports_a_stall():
    """``newton`` on the intersection of a circle and a line (root (3, 4) from (1, 1)), and on
    ``|x| - 1 + 2`` which has no root: stalled, not converged, at the kink's bottom."""

    r = newton(lambda x: np.array([x[0] ** 2 + x[1] ** 2 - 25.0, x[1] - 4.0 / 3.0 * x[0]]), np.array([1.0, 1.0]),
               tol=np.array([1e-12, 1e-12]), step=np.array([1e-6, 1e-6]))
    assert r.converged and np.allclose(r.x, [3.0, 4.0], atol=1e-12)
    r = newton(lambda x: np.abs(x) + 1.0, np.array([0.3]), tol=np.array([1e-9]), step=np.array([1e-7]), max_iter=40)
    assert not r.converged and r.iterations < 40 and abs(r.x[0]) < 0.3 and r.f[0] >= 1.0


def test_newton_on_a_residual_too_large_to_square_warns_of_nothing():
    """A residual whose measure ``sum((f / tol)^2)`` overflows (a knee loaded with 1e300 N) is still
    solved where Newton's step is finite, and ends not converged where the step overflows; no
    RuntimeWarning reaches the user either way (both once printed numpy's overflow warnings, and
    the natural knee's settle took a step of NaN into the contact search)."""
    import warnings


    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = newton(lambda x: 1e200 * (x - 1.0), np.array([0.0]), tol=np.array([1e-6]), step=np.array([1e-7]))
        assert r.converged and r.x[0] == pytest.approx(1.0, abs=1e-12)
        r = newton(lambda x: 1e300 + 1e-300 * x, np.array([0.0]), tol=np.array([1e-6]), step=np.array([1.0]))
        assert not r.converged and r.x[0] == 0.0
        # settle: a step that overflows is taken again with a shorter time step (it became NaN)
        r = settle(lambda x: 1e308 - x, np.array([0.0]), damping=np.array([1e-10]), dt=1.0, tol=np.array([1e-6]),
                   step=np.array([1.0]), max_steps=40, max_step=np.array([1e300]))
        assert not r.converged and 0 < r.x[0] < np.inf


def test_settle_comes_to_rest_where_the_viscous_model_does_not_where_newton_does():
    """``settle`` on a double well, ``V = (x^2 - 1)^2 + 2 (y - x^2 / 2)^2`` (minima (+-1, 1/2), a
    saddle at the origin), ``f = -grad V``, damping (1, 5): from beside the saddle it comes to rest
    in the minimum that the viscous model, integrated to rest (a second method), reaches, where
    Newton converges to the saddle; near the minimum it becomes Newton's method (few steps to 1e-10);
    cut short it reports no convergence."""
    from scipy.integrate import solve_ivp


    def f(q):
        x, y = q
        return -np.array([4 * x * (x * x - 1) - 4 * x * (y - x * x / 2), 4 * (y - x * x / 2)])

    c, tol, step = np.array([1.0, 5.0]), np.array([1e-10, 1e-10]), np.array([1e-6, 1e-6])
    for x0 in ([0.05, -0.3], [-0.05, -0.3], [0.3, 2.0]):
        rest = solve_ivp(lambda t, q: f(q) / c, (0.0, 100.0), x0, rtol=1e-10, atol=1e-12).y[:, -1]
        r = settle(f, np.array(x0), damping=c, dt=0.1, tol=tol, step=step)
        assert r.converged and r.iterations < 50
        np.testing.assert_allclose(r.x, rest, atol=1e-8)
        np.testing.assert_allclose(abs(r.x), [1.0, 0.5], atol=1e-10)
    assert np.allclose(newton(f, np.array([0.05, -0.3]), tol=tol, step=step).x, 0.0, atol=1e-10)  # the saddle
    r = settle(f, np.array([0.3, 2.0]), damping=c, dt=0.1, tol=tol, step=step, max_steps=3)
    assert not r.converged and r.iterations == 3 and np.any(np.abs(r.f) > tol)


def test_settle_steps_back_from_where_the_residual_is_not_finite():
    """A model ``x' = 1 - x^3`` defined only for x < 1.2 (a contact off its table, say), relaxing to
    x = 1 from x = 0, where it has no stiffness, with a large first time step: the steps that land
    beyond are taken again shorter and the settle still comes to rest at 1; a start where the
    residual is not finite is an error naming it."""
    from simclient.errors import SimulationError

    calls = {"outside": 0}

    def f(x):
        if x[0] >= 1.2:
            calls["outside"] += 1
            return np.array([np.nan])
        return np.array([1.0 - x[0] ** 3])

    r = settle(f, np.array([0.0]), damping=np.array([1.0]), dt=10.0, tol=np.array([1e-12]), step=np.array([1e-6]))
    assert r.converged and abs(r.x[0] - 1.0) < 1e-12 and calls["outside"] > 0
    with pytest.raises(SimulationError, match="not finite"):
        settle(f, np.array([2.0]), damping=np.array([1.0]), dt=1.0, tol=np.array([1e-12]), step=np.array([1e-6]))


def test_quasi_newton_from_a_given_jacobian_solves_a_path_with_fewer_evaluations():
    """Along a path of problems (the circle's radius growing), starting each solve from the last
    one's Jacobian (Broyden updates) finds the same roots as central differences at every
    iteration, with fewer evaluations; a wrong Jacobian is recomputed where a step along it fails."""

    def count(fun):
        calls = [0]

        def f(x):
            calls[0] += 1
            return fun(x)
        return f, calls

    tol, step = np.array([1e-10, 1e-10]), np.array([1e-6, 1e-6])
    x_fd = x_q = np.array([3.0, 4.0])
    J, n_fd, n_q = None, 0, 0
    for radius in np.linspace(5.0, 6.0, 11)[1:]:
        def system(x, r=radius):
            return np.array([x[0] ** 2 + x[1] ** 2 - r * r, x[1] - 4.0 / 3.0 * x[0]])
        f, calls = count(system)
        x_fd = newton(f, x_fd, tol=tol, step=step).x
        n_fd += calls[0]
        f, calls = count(system)
        r = newton(f, x_q, tol=tol, step=step, jacobian=J)
        assert r.converged and r.jacobian is not None
        x_q, J, n_q = r.x, r.jacobian, n_q + calls[0]
        np.testing.assert_allclose(x_q, [0.6 * radius, 0.8 * radius], atol=1e-10)
        np.testing.assert_allclose(x_fd, x_q, atol=1e-10)
    assert n_q < n_fd / 2, (n_q, n_fd)
    # a Jacobian of the wrong sign: the step along it fails, central differences take over
    r = newton(lambda x: np.array([x[0] ** 2 + x[1] ** 2 - 25.0, x[1] - 4.0 / 3.0 * x[0]]), np.array([3.5, 4.5]),
               tol=tol, step=step, jacobian=-np.eye(2) * 1e3)
    assert r.converged and np.allclose(r.x, [3.0, 4.0], atol=1e-10)


def test_a_step_that_fails_is_taken_in_halves():
    """``StaticProblem.continued`` on a path whose solves converge only over steps of at most 0.25: from 0 to
    1 it tries the whole step, then halves, then quarters, which go through; with too few halvings
    it returns the whole step's failure."""
    continue_step = StaticProblem.continued
    tried = []

    def solve(s, state):
        tried.append(s)
        return {"s": s, "ok": s - state["s"] <= 0.25 + 1e-12}

    def ok(state):
        return state["ok"]

    result = continue_step(solve, ok, 0.0, 1.0, {"s": 0.0, "ok": True})
    assert result == {"s": 1.0, "ok": True}
    assert tried == [1.0, 0.5, 0.25, 0.5, 0.75, 1.0]
    tried.clear()
    result = continue_step(solve, ok, 0.0, 1.0, {"s": 0.0, "ok": True}, max_halvings=1)
    assert result == {"s": 1.0, "ok": False} and tried == [1.0, 0.5]
