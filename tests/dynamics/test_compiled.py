"""The compiled integrator (``DOP853-jit``) and the batched contact API against the reference path
(scipy's DOP853 with the Python right-hand side, ``ContactPair.detect`` one pose at a time)."""

from __future__ import annotations

import numpy as np
import pytest

from simclient.contact import ContactPair, ContactStatus, ViscoelasticLaw, make_law, solve_contact
from simclient.dynamics import (BlankevoortLaw, Body, ContactModel, Ligament, LinearSpring, MultibodySystem, PlanarBody,
                                PointLoad, QuadraticLaw, Surface, compile_system, ligament_forces, simulate,
                                spring_damper)
from simclient.errors import ParameterError
from simclient.geometry import StorageWindow, euler_from_axis_angle, rotation_matrix
from simclient.geometry import layout as L
from simclient.io import LocalSource
from simclient.scenarios import Tables, locate
from simclient.scenarios.bouncing_ball import BallParams, bouncing_ball


def _ball(tables, method, **params):
    return bouncing_ball(locate("ball_333", tables=tables), locate("ground", tables=tables),
                         BallParams(method=method, **params))


@pytest.mark.parametrize("params", [{}, {"law": "hunt-crossley", "cr": 0.7}, {"law": "double-layer"},
                                    {"law": "penalty-step", "t_end": 0.1}])
def test_compiled_ball_matches_the_reference_path(sample_tables, params):
    """The steps of scipy's DOP853 (a step or two more or less where round-off tips a step-size
    choice: the penalty step's 100 steps are 102 compiled on some processors) and the same
    impacts to the integrator's accuracy: the compiled stages are the Python right-hand side's
    arithmetic, the laws one compiled function. Where round-off tips a step
    size, the two paths part by the integrator's local error (rtol 1e-10) and agree from then on
    to that error on the motion's scale, not on the scale of each later, smaller bounce (the
    Hunt-Crossley ball's 17th bounce leaves at 1.7 mm/s against the first's 372 mm/s): each
    impact's quantities are compared to 1e-8 of their largest value (measured 1e-12 to 1.7e-9)."""
    ref, jit = _ball(sample_tables, "DOP853", **params), _ball(sample_tables, "DOP853-jit", **params)
    assert ref["status"] == jit["status"] == "ok"
    assert abs(jit["steps"] - ref["steps"]) <= max(2, 0.01 * ref["steps"])
    assert jit["impacts"] == ref["impacts"] >= 1
    for key in ("impact_times_s", "max_indentation_m", "separation_velocities_m_s"):
        scale = np.max(np.abs(ref[key]))
        np.testing.assert_allclose(jit[key], ref[key], rtol=0, atol=1e-8 * scale, err_msg=key)
    if params.get("law", "hertz") in ("hertz", "double-layer"):  # elastic: energy is conserved
        assert jit["energy_drift"] < 1e-8 and ref["energy_drift"] < 1e-8


def test_compiled_ball_hands_window_moves_to_python(sample_tables):
    """A 3 x 3 ground window must move as the ball travels: the compiled stages hand those stages
    to the Python right-hand side, and the impacts are the reference run's. (Which records a
    window visits on its way depends on the trial stages, which round-off shifts: the counts of
    moves may differ.)"""
    ref = _ball(sample_tables, "DOP853", window_ground=(3, 3))
    jit = _ball(sample_tables, "DOP853-jit", window_ground=(3, 3))
    assert jit["windows"]["ground"]["updates"] >= 2 and ref["windows"]["ground"]["updates"] >= 2
    np.testing.assert_allclose(jit["impact_times_s"], ref["impact_times_s"], rtol=1e-9)
    np.testing.assert_allclose(jit["max_indentation_m"], ref["max_indentation_m"], rtol=1e-7)


@pytest.mark.slow
def test_compiled_knee3d_matches_the_reference_path(sample_tables):
    """The 3D knee (two point contacts, eight ligaments) compiled and in Python: the same
    behaviours, rotations within 0.005 deg and ligament forces within 0.1 % (the runs differ by
    round-off, which window moves at slightly different stages amplify a little)."""
    from simclient.scenarios.knee3d import KneeParams, knee3d

    ref = knee3d(Tables(folder=sample_tables), KneeParams(method="DOP853"))
    jit = knee3d(Tables(folder=sample_tables), KneeParams(method="DOP853-jit"))
    assert ref["status"] == jit["status"] == "ok"
    for key in ("first_contact", "contacts", "peak_ligament", "peak_ligament_above_30_deg"):
        assert jit[key] == ref[key], key
    assert jit["internal_rotation_deg"].keys() == ref["internal_rotation_deg"].keys()
    for a, rot in ref["internal_rotation_deg"].items():
        assert jit["internal_rotation_deg"][a] == pytest.approx(rot, abs=5e-3), a
    for name, f in ref["peak_ligament_forces_N"].items():
        assert jit["peak_ligament_forces_N"][name] == pytest.approx(f, rel=1e-3), name


@pytest.mark.slow
def test_a_trial_step_off_the_contact_is_retried_from_the_accepted_state(sample_tables):
    """A placement of the knee3d study where an explicit method's large trial stage (steps
    unbounded: a max_step of 1 s in a 0.27 s run) carries the medial contact point off its windows
    and table: the segment is retried with smaller steps from the accepted state's warm starts and
    windows (from the failed trial's, the retry's first evaluation failed too and the run stopped
    at 25 deg). Both explicit paths reach 80 deg with BDF's behaviours."""
    from simclient.scenarios.knee3d import KneeParams, knee3d

    # inverse-x21-gap1-drop0
    placement = {"reading": "inverse", "plateau_z": KneeParams.plateau_z - 0.5e-3, "max_step": 1.0}
    runs = {m: knee3d(Tables(folder=sample_tables), KneeParams(method=m, **placement))
            for m in ("BDF", "DOP853", "DOP853-jit")}
    for method, s in runs.items():
        assert s["status"] == "ok" and s["final_flexion_deg"] == pytest.approx(80.0, abs=0.01), (method, s["message"])
        for key in ("thesis", "first_contact", "peak_ligament", "peak_ligament_above_30_deg"):
            assert s[key] == runs["BDF"][key], (method, key)


@pytest.mark.slow
def test_knee3d_default_steps_count_the_shortest_graze(sample_tables):
    """The knee3d placement with the study's shortest contact (a 0.83 ms lateral graze,
    inverse-x21-gap1-drop2): the default run (DOP853-jit, steps of at most 0.2 ms) counts the
    contacts of a converged reference (BDF at rtol 1e-8, atol 1e-12), and so does an unbounded
    run, whose 1.4 ms steps passed over that graze while contacts were looked for at step ends
    only."""
    from simclient.scenarios.knee3d import KneeParams, knee3d

    placement = {"reading": "inverse", "plateau_z": KneeParams.plateau_z - 0.5e-3, "lateral_drop": 2e-3}
    ref = knee3d(Tables(folder=sample_tables), KneeParams(method="BDF", rtol=1e-8, atol=1e-12, **placement))
    assert ref["contacts"] == {"medial": 8, "lateral": 3}
    for max_step in (KneeParams.max_step, 1.0):
        run = knee3d(Tables(folder=sample_tables), KneeParams(max_step=max_step, **placement))
        assert run["contacts"] == ref["contacts"], max_step
        assert run["thesis"] == ref["thesis"]


def _ball_system(tables, law, push=False):
    ball = Body("ball", mass=0.092, inertia=np.eye(3) * 1.5e-5, position=np.array([-0.03, 0, 0.032]))
    loads = [PointLoad(ball, np.zeros(3), np.array([1.0, 0, 0]), lambda t: 0.01)] if push else []
    w_ball = StorageWindow(LocalSource(tables / "ball_333.zarr"), (3, 3), centre=(0.0, 0.0))
    w_ground = StorageWindow(LocalSource(tables / "ground.zarr"), (3, 9), centre=(0.0, -0.03))
    contact = ContactModel("c", Surface(ball, w_ball), Surface(Body("ground", fixed=True), w_ground), law)
    return MultibodySystem([ball, contact.j.body], [contact], loads=loads)


def test_systems_without_a_compiled_form_run_the_reference_path(sample_tables):
    """A law with internal states or a load other than a ligament: ``compile_system`` says why,
    and ``DOP853-jit`` then steps in Python (the project's DOP853, each stage a Python right-hand
    side): scipy's DOP853's steps within 3 % (round-off in the error estimate, a small difference of
    large stages, tips step sizes apart) and the same motion to the integrator's accuracy on the
    motion's scale (rtol 1e-10 of some 0.1 m/s: 1e-11 m over the run, 1e-9 m allowed)."""
    hertz = make_law("hertz", 5.5e9)
    visco = ViscoelasticLaw.from_elastic(hertz, 0.5, 2e-4)
    for law, push in ((visco, False), (hertz, True)):
        kernel, reason = compile_system(_ball_system(sample_tables, law, push))
        assert kernel is None and "no compiled form" in reason
        runs = [simulate(_ball_system(sample_tables, law, push), 0.06, method=m) for m in ("DOP853", "DOP853-jit")]
        assert abs(runs[0].steps - runs[1].steps) <= 0.03 * runs[0].steps
        assert [e["type"] for e in runs[0].events] == [e["type"] for e in runs[1].events]
        np.testing.assert_allclose([e["t"] for e in runs[1].events], [e["t"] for e in runs[0].events], rtol=1e-9)
        np.testing.assert_allclose(runs[1].y[:3, -1], runs[0].y[:3, -1], rtol=0, atol=1e-9)
    assert compile_system(_ball_system(sample_tables, hertz))[0] is not None


def test_ligament_forces_along_a_history_equal_ligament_state():
    """The compiled history of ligament forces against :meth:`Ligament.state` one state at a time,
    for every law, with damping (taut only, or a spring-damper that pushes too) and both bodies
    moving, on random states: equal to round-off; a slack ligament's force is 0."""
    rng = np.random.default_rng(3)
    ground = Body("ground", fixed=True, position=np.array([0.0, 0.0, 0.1]), euler=euler_from_axis_angle(
        np.array([0.0, 1.0, 0.0]), 0.3))
    a = Body("a", mass=1.0, inertia=np.eye(3) * 1e-3)
    b = Body("b", mass=2.0, inertia=np.eye(3) * 2e-3)
    ligs = [Ligament("quadratic", ground, np.array([0.01, 0.0, 0.0]), a, np.array([0.0, 0.02, 0.0]),
                     QuadraticLaw(5e6, 0.09)),
            Ligament("blankevoort", a, np.array([0.0, 0.0, 0.01]), b, np.array([0.01, 0.0, 0.0]),
                     BlankevoortLaw(800.0, 0.1), damping=30.0),
            Ligament("linear", b, np.array([0.0, -0.01, 0.0]), ground, np.zeros(3), LinearSpring(2e3, 0.12),
                     damping=5.0),
            spring_damper("spring-damper", a, np.zeros(3), b, np.array([0.0, 0.0, -0.02]), 1e3, 20.0, 0.1)]
    system = MultibodySystem([ground, a, b], loads=ligs)
    Y = np.empty((26, 200))
    for n in range(Y.shape[1]):
        for k in (0, 13):
            Y[k:k + 3, n] = rng.normal(0.0, 0.06, 3)
            Y[k + 3:k + 7, n] = euler_from_axis_angle(rng.normal(size=3), rng.uniform(0, np.pi))
            Y[k + 7:k + 13, n] = rng.normal(0.0, 1.0, 6)
    forces = ligament_forces(system, ligs, Y)
    expected = np.empty_like(forces)
    for n in range(Y.shape[1]):
        system.set_state(Y[:, n])
        for m, lig in enumerate(ligs):
            f = lig.state(system)[4]
            expected[n, m] = max(f, 0.0) if lig.tension_only else f
    np.testing.assert_allclose(forces, expected, rtol=1e-12, atol=1e-9)
    for m in range(len(ligs)):  # every ligament both taut and slack (or pushing) somewhere
        assert (expected[:, m] > 0).any() and (expected[:, m] <= 0).any(), ligs[m].name
    with pytest.raises(ParameterError, match="spatial ligaments"):
        ligament_forces(system, [Ligament("planar", PlanarBody("p", fixed=True), np.zeros(2), a, np.zeros(3),
                                          QuadraticLaw(1.0, 0.1))], Y)


def _sliding_poses(n):
    """The ball sliding along x and rolling about x over the ground, every 10 us (bench contact's motion)."""
    A = np.array([rotation_matrix(euler_from_axis_angle(np.array([1.0, 0, 0]), 0.15 * k * 1e-5 / 0.02))
                  for k in range(n)])
    c = np.array([[-0.03 + 0.15 * k * 1e-5, 0.0, 0.02 - 2e-5] for k in range(n)])
    return A, c


def test_detect_many_equals_detect_one_pose_at_a_time(sample_tables):
    """The batched detection gives the single calls' results bit for bit, window moves included."""
    def pair():
        return ContactPair(StorageWindow(LocalSource(sample_tables / "ball_333.zarr"), (3, 3), centre=(0.0, 0.0)),
                           StorageWindow(LocalSource(sample_tables / "ground.zarr"), (3, 3), centre=(0.0, -0.03)))
    A, c = _sliding_poses(4000)
    I, z = np.eye(3), np.zeros(3)
    one, many = pair(), pair()
    singles = [one.detect(A[k], c[k], I, z) for k in range(len(c))]
    batch = many.detect_many(A, c, I, z)
    assert many.wj.updates == one.wj.updates >= 1
    assert len(batch) == len(c) and batch.converged.all()
    np.testing.assert_array_equal(batch.indentation, [s.indentation for s in singles])
    np.testing.assert_array_equal(batch.point_i, [s.point_i for s in singles])
    np.testing.assert_array_equal(batch.params, [s.params for s in singles])
    assert batch[17].indentation == singles[17].indentation and batch[17].status == ContactStatus.CONVERGED
    # the analytic sphere on the plane: 20 um deep everywhere
    np.testing.assert_allclose(batch.indentation, 2e-5, atol=1e-9)
    assert one.evaluations == many.evaluations == len(c)
    assert one.newton_iterations == sum(s.iterations for s in singles)


class _GeneralPathOnly(ContactPair):
    """A pair whose compiled fast path always declines (it reports nothing tried, as without a warm
    start), so that every evaluation goes through :meth:`ContactPair.detect`'s general path."""

    warm_kernel = staticmethod(lambda *args: -1)


def test_detect_fast_path_equals_general_path(sample_tables):
    """The one-call fast path (the pair's arrays passed by address) gives the general path's
    results bit for bit, window moves included, and counts evaluations and iterations alike."""
    def windows():
        return (StorageWindow(LocalSource(sample_tables / "ball_333.zarr"), (3, 3), centre=(0.0, 0.0)),
                StorageWindow(LocalSource(sample_tables / "ground.zarr"), (3, 3), centre=(0.0, -0.03)))
    A, c = _sliding_poses(3000)
    I, z = np.eye(3), np.zeros(3)
    fast, general = ContactPair(*windows()), _GeneralPathOnly(*windows())
    for k in range(len(c)):
        a, b = fast.detect(A[k], c[k], I, z), general.detect(A[k], c[k], I, z)
        assert a.status == b.status == ContactStatus.CONVERGED and a.iterations == b.iterations
        np.testing.assert_array_equal(a._d, b._d)
    assert fast.wj.updates == general.wj.updates >= 1
    assert (fast.evaluations, fast.newton_iterations) == (general.evaluations, general.newton_iterations)


def test_the_solves_memory_of_its_last_evaluations_changes_nothing(sample_tables):
    """A warm start reuses the surfaces' evaluations where the last solve ended (keyed by the
    parameters and the windows' placement): the same results bit for bit as a solve that remembers
    nothing, right after window moves too; and a contact's parameters are a copy (the pair's warm
    start cannot be changed through them)."""
    pair = ContactPair(StorageWindow(LocalSource(sample_tables / "ball_333.zarr"), (3, 3), centre=(0.0, 0.0)),
                       StorageWindow(LocalSource(sample_tables / "ground.zarr"), (3, 3), centre=(0.0, -0.03)))
    A, c = _sliding_poses(3000)
    I, z = np.eye(3), np.zeros(3)
    hit = pair.detect(A[0], c[0], I, z)
    compared, after_move, last = 0, 0, (pair.wi.version, pair.wj.version)
    for k in range(1, len(c)):
        x0, before = pair.x.copy(), (pair.wi.version, pair.wj.version)
        hit = pair.detect(A[k], c[k], I, z)
        assert hit.converged
        if (pair.wi.version, pair.wj.version) != before:
            continue  # the window moved during this call: its last solve did not start from x0
        # the same solve from the same warm start, with a scratch space that remembers nothing
        ints, fresh = pair.ints.copy(), np.full(L.SOLVE_WORK_SIZE, np.nan)
        ints[L.PAIR_CHECK] = 0
        code, _ = solve_contact(pair.wi.buffer, pair.wj.buffer, ints, pair.flts, A[k], c[k], I, z, x0, fresh)
        assert code == int(ContactStatus.CONVERGED)
        np.testing.assert_array_equal(x0, hit.params)
        np.testing.assert_array_equal(fresh[:L.OUT_SIZE], pair.work[:L.OUT_SIZE])
        compared += 1
        after_move += before != last
        last = before
    assert compared > 2900 and after_move >= 1
    hit.params[:] = 0.0
    assert pair.x is not None and pair.x[1] != 0.0
