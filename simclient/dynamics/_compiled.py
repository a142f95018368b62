"""Kernels of a packed system and of the Dormand-Prince 8(5,3) step, compiled.

A system is packed (:func:`simclient.dynamics.pack_system`) into the five arrays
:mod:`simclient.geometry.layout` describes, passed as one tuple ``system = (bodies, contact_i,
contact_f, ligament_i, ligament_f)``: its right-hand side (:func:`system_rates`) places the bodies,
solves each point contact in contact mode on its pair's windows (the pair's arrays by the address
its row holds), applies the force law, friction and the ligaments, and runs Newton-Euler. The
integrator's step (:func:`attempt`) runs its twelve stages on it, the step-size control and the
error estimate included, in one call; the dense output's three extra stages likewise
(:func:`extra_stages`). The same helpers serve the Python path of
:class:`simclient.dynamics.Dop853` (:func:`stage_state`, :func:`error_norm`, :func:`step_factor`,
:func:`dense_coefficients`), so each rule of the method exists once.

Outcomes: :func:`system_rates` returns -1, or the index of a contact whose solve did not converge
(a window to move, a warm start to restart, a failure) or whose law gave no force: the caller hands
that evaluation to the Python right-hand side, which moves the window or raises.
"""

from __future__ import annotations

import math

import numpy as np

from simclient.contact._newton import CONVERGED, LEFT_WINDOW_I, LEFT_WINDOW_J, pair_arrays, solve_contact
from simclient.contact._rules import friction_force, law_force
from simclient.dynamics._rules import apply_load, ligament_tension, poses, rates, spring_force
from simclient.dynamics._tableau import A, A_EXTRA, B, C, C_EXTRA, D, E3, E5, ERROR_ORDER
from simclient.geometry import layout as L
from simclient.geometry._poses import place_at, to_global
from simclient.geometry.kernels import helper, kernel

__all__ = ["system_rates", "probe", "attempt", "extra_stages", "stage_state", "error_norm", "step_factor",
           "dense_coefficients", "ligament_history", "ACCEPTED", "TOO_SMALL", "STAGE_FAILED", "PROBE_CONVERGED",
           "PROBE_LEFT_WINDOW", "PROBE_FAILED"]

#: the types of a packed system: (bodies, contact_i, contact_f, ligament_i, ligament_f)
SYSTEM = "Tuple((f8[:, ::1], i8[:, ::1], f8[:, ::1], i8[:, ::1], f8[:, ::1]))"
# outcome of an attempt at a step, and of a probe
ACCEPTED, TOO_SMALL, STAGE_FAILED = 0, 1, 2
PROBE_CONVERGED, PROBE_LEFT_WINDOW, PROBE_FAILED = 0, 1, 2
# the step-size control (Hairer, Norsett & Wanner I, eq. II.4.13): safety factor, the least and
# the most a step may change by, and the error's exponent
SAFETY, MIN_FACTOR, MAX_FACTOR, EXPONENT = 0.9, 0.2, 10.0, -1.0 / (ERROR_ORDER + 1)
_STAGES = L.DOP_STAGES


@helper(inline=True)
def _velocity_along(bodies: np.ndarray, b: int, P: np.ndarray, po: int, n: np.ndarray, no: int) -> float:
    """``(r'_b + omega_b x (P - r_b)) . n``: body b's material point at global ``P[po:]``, its
    velocity (m/s) along ``n[no:]``."""
    row = bodies[b]
    p0, p1, p2 = P[po] - row[L.BODY_R], P[po + 1] - row[L.BODY_R + 1], P[po + 2] - row[L.BODY_R + 2]
    w0, w1, w2 = row[L.BODY_W], row[L.BODY_W + 1], row[L.BODY_W + 2]
    return ((row[L.BODY_V] + w1 * p2 - w2 * p1) * n[no] + (row[L.BODY_V + 1] + w2 * p0 - w0 * p2) * n[no + 1]
            + (row[L.BODY_V + 2] + w0 * p1 - w1 * p0) * n[no + 2])


@helper(inline=True)
def _velocity(bodies: np.ndarray, b: int, P: np.ndarray, out: np.ndarray, sign: float) -> None:
    """``out += sign (r'_b + omega_b x (P - r_b))`` (m/s): body b's material point at global ``P``."""
    row = bodies[b]
    p0, p1, p2 = P[0] - row[L.BODY_R], P[1] - row[L.BODY_R + 1], P[2] - row[L.BODY_R + 2]
    w0, w1, w2 = row[L.BODY_W], row[L.BODY_W + 1], row[L.BODY_W + 2]
    out[0] += sign * (row[L.BODY_V] + w1 * p2 - w2 * p1)
    out[1] += sign * (row[L.BODY_V + 1] + w2 * p0 - w0 * p2)
    out[2] += sign * (row[L.BODY_V + 2] + w0 * p1 - w1 * p0)


@helper
def _solve(k: int, check: int, x: np.ndarray, bodies: np.ndarray, contact_i: np.ndarray,
           contact_f: np.ndarray) -> int:
    """Contact ``k``'s common-normal solve from ``x`` at the bodies' poses (its surfaces placed by
    eq. 6.17) on its pair's windows, the output in the pair's work; its status."""
    buf_i, buf_j, ints, work = pair_arrays(contact_i[k, L.CI_PAIR])
    Ri, Rj, ci, cj = np.empty((3, 3)), np.empty((3, 3)), np.empty(3), np.empty(3)
    bi, bj, cf = contact_i[k, L.CI_BODY_I], contact_i[k, L.CI_BODY_J], contact_f[k]
    place_at(bodies[bi], L.BODY_R, bodies[bi], L.BODY_A, cf, L.CF_OFFSET_I, cf, L.CF_ROTATION_I, Ri, ci)
    place_at(bodies[bj], L.BODY_R, bodies[bj], L.BODY_A, cf, L.CF_OFFSET_J, cf, L.CF_ROTATION_J, Rj, cj)
    ints[L.PAIR_CHECK] = check
    status, _ = solve_contact(buf_i, buf_j, ints, work[L.PAIR_FLTS:L.PAIR_FLTS + L.PAIR_FLTS_SIZE], Ri, ci, Rj, cj, x,
                              work)
    return status


@helper
def _contact(k: int, bodies: np.ndarray, contact_i: np.ndarray, contact_f: np.ndarray) -> bool:
    """Contact ``k`` detected (from its pair's warm start) and its law's force, with friction,
    applied to its two bodies; False where the solve did not converge or the law gave no force."""
    work = pair_arrays(contact_i[k, L.CI_PAIR])[3]
    x = work[L.PAIR_X:L.PAIR_X + 4].copy()
    if _solve(k, 1, x, bodies, contact_i, contact_f) != CONVERGED:
        return False
    work[L.PAIR_X:L.PAIR_X + 4] = x  # the next warm start
    bi, bj = contact_i[k, L.CI_BODY_I], contact_i[k, L.CI_BODY_J]
    # the indentation rate: -(v_i(P_i) - v_j(P_j)) . n
    rate = (_velocity_along(bodies, bj, work, L.OUT_PJ, work, L.OUT_N)
            - _velocity_along(bodies, bi, work, L.OUT_PI, work, L.OUT_N))
    cf = contact_f[k]
    fn = law_force(contact_i[k, L.CI_LAW], cf[L.CF_LAW:L.CF_LAW + L.LAW_PARAMS_SIZE], work[L.OUT_DEPTH], rate,
                   cf[L.CF_IMPACT])
    if math.isnan(fn):
        return False
    f, Pi, Pj = np.empty(3), np.empty(3), np.empty(3)
    for a in range(3):
        f[a] = fn * work[L.OUT_N + a]
        Pi[a], Pj[a] = work[L.OUT_PI + a], work[L.OUT_PJ + a]
    if contact_i[k, L.CI_FRICTION]:
        # friction and the normal force both act at the middle of the indentation (simclient.contact.Friction)
        vel = np.zeros(3)
        for a in range(3):
            Pi[a] = Pj[a] = 0.5 * (work[L.OUT_PI + a] + work[L.OUT_PJ + a])
        _velocity(bodies, bi, Pi, vel, 1.0)
        _velocity(bodies, bj, Pi, vel, -1.0)
        friction_force(cf[L.CF_FRICTION:L.CF_FRICTION + L.FRICTION_PARAMS_SIZE], work[L.OUT_N:L.OUT_N + 3], vel, fn, f)
    apply_load(bodies, bi, Pi, f)
    for a in range(3):
        f[a] = -f[a]
    apply_load(bodies, bj, Pj, f)
    return True


@helper
def _ligament(m: int, bodies: np.ndarray, ligament_i: np.ndarray, ligament_f: np.ndarray, Pa: np.ndarray,
              Pb: np.ndarray) -> tuple[float, float]:
    """Ligament ``m``'s tension (N, pulling its insertions together; :func:`ligament_tension`) and
    length (m), its global insertion points into ``Pa``, ``Pb`` (:meth:`Ligament.state`)."""
    ba, bb, lf = ligament_i[m, L.LI_BODY_A], ligament_i[m, L.LI_BODY_B], ligament_f[m]
    to_global(bodies[ba], L.BODY_R, bodies[ba], L.BODY_A, lf, L.LF_POINT_A, Pa, 0)
    to_global(bodies[bb], L.BODY_R, bodies[bb], L.BODY_A, lf, L.LF_POINT_B, Pb, 0)
    d = np.empty(3)
    for a in range(3):
        d[a] = Pb[a] - Pa[a]
    length = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    # the lengthening rate: (v_b(P_b) - v_a(P_a)) . d / l
    rate = (_velocity_along(bodies, bb, Pb, 0, d, 0) - _velocity_along(bodies, ba, Pa, 0, d, 0)) / length
    fn = spring_force(ligament_i[m, L.LI_LAW], lf[L.LF_LAW:L.LF_LAW + L.SPRING_PARAMS_SIZE], length)
    return ligament_tension(fn, rate, lf[L.LF_DAMPING], ligament_i[m, L.LI_TENSION_ONLY] != 0), length


@helper
def _ligaments(bodies: np.ndarray, ligament_i: np.ndarray, ligament_f: np.ndarray) -> None:
    """Every ligament's tension on its two bodies."""
    Pa, Pb, f = np.empty(3), np.empty(3), np.empty(3)
    for m in range(ligament_i.shape[0]):
        fn, length = _ligament(m, bodies, ligament_i, ligament_f, Pa, Pb)
        if fn == 0.0:
            continue
        for a in range(3):
            f[a] = fn * (Pb[a] - Pa[a]) / length
        apply_load(bodies, ligament_i[m, L.LI_BODY_A], Pa, f)
        for a in range(3):
            f[a] = -f[a]
        apply_load(bodies, ligament_i[m, L.LI_BODY_B], Pb, f)


@kernel(f"i8(f8, f8[::1], f8[::1], {SYSTEM})")
def system_rates(t: float, y: np.ndarray, dy: np.ndarray, system: tuple) -> int:
    """``dy = f(t, y)`` of a packed system (see :meth:`MultibodySystem.rhs`); -1, or the index of a
    contact the Python right-hand side must evaluate (see the module's docstring)."""
    bodies, contact_i, contact_f, ligament_i, ligament_f = system
    poses(y, bodies)
    bodies[:, L.BODY_F:L.BODY_N + 3] = 0.0
    for k in range(contact_i.shape[0]):
        if contact_i[k, L.CI_ACTIVE] and not _contact(k, bodies, contact_i, contact_f):
            return k
    _ligaments(bodies, ligament_i, ligament_f)
    rates(y, bodies, dy)
    return -1


@kernel(f"Tuple((i8, f8))(f8[::1], i8, {SYSTEM})")
def probe(y: np.ndarray, k: int, system: tuple) -> tuple[int, float]:
    """A probe of contact ``k`` at state ``y`` with the windows in place (see
    :meth:`MultibodySystem.gap`): ``(outcome, indentation in m)``; a converged probe's solution
    becomes the pair's warm start."""
    bodies, contact_i, contact_f, _, _ = system
    poses(y, bodies)
    work = pair_arrays(contact_i[k, L.CI_PAIR])[3]
    x = work[L.PAIR_X:L.PAIR_X + 4].copy()
    status = _solve(k, 0, x, bodies, contact_i, contact_f)
    if status == CONVERGED:
        work[L.PAIR_X:L.PAIR_X + 4] = x
        return PROBE_CONVERGED, work[L.OUT_DEPTH]
    if status == LEFT_WINDOW_I or status == LEFT_WINDOW_J:
        return PROBE_LEFT_WINDOW, work[L.OUT_DEPTH]
    return PROBE_FAILED, 0.0


@helper(inline=True)
def _combine(vectors: np.ndarray, a: np.ndarray, s: int, h: float, out: int) -> None:
    """``vectors[out] = y + h sum_m a[m] K[m]`` over the first ``s`` stages."""
    y = vectors[L.VEC_Y]
    for i in range(vectors.shape[1]):
        acc = 0.0
        for m in range(s):
            acc += a[m] * vectors[m, i]
        vectors[out, i] = y[i] + acc * h


@kernel("void(f8[:, ::1], i8, f8)")
def stage_state(vectors: np.ndarray, s: int, h: float) -> None:
    """The state a stage ``s`` is evaluated at, from the step's start ``VEC_Y`` and the stages before
    it (step ``h``, s): into ``VEC_STAGE`` for the 12 stages (1 to 11) and the dense output's
    extra stages (13 to 15), into ``VEC_Y_NEW`` (the 8th-order solution) for s = 12."""
    if s < _STAGES:
        _combine(vectors, A[s], s, h, L.VEC_STAGE)
    elif s == _STAGES:
        _combine(vectors, B, _STAGES, h, L.VEC_Y_NEW)
    else:
        _combine(vectors, A_EXTRA[s - _STAGES - 1], s, h, L.VEC_STAGE)


@kernel("f8(f8[:, ::1], f8, f8, i8[:, ::1])")
def error_norm(vectors: np.ndarray, h: float, rtol: float, groups: np.ndarray) -> float:
    """DOP853's error norm of a step ``h`` (Hairer's ``err5^2 / sqrt(err5^2 + 0.01 err3^2)``, each
    the root mean square of the scaled estimator over the states, times ``|h|``), the states scaled
    by ``atol + rtol max(|y|, |y_new|)``. ``groups`` (rows ``[start, stop)``, after every ungrouped
    state) count as one state each, their largest scaled error: a thousand states of elements out
    of contact, whose errors are zero, would otherwise shrink the norm some tenfold and let the
    bodies' errors grow as much past the tolerance."""
    n = vectors.shape[1]
    first = groups[0, 0] if groups.shape[0] > 0 else n
    y, y_new, atol = vectors[L.VEC_Y], vectors[L.VEC_Y_NEW], vectors[L.VEC_ATOL]
    e5 = e3 = 0.0
    g5 = np.zeros(groups.shape[0])
    g3 = np.zeros(groups.shape[0])
    g = 0
    for i in range(n):
        scale = atol[i] + max(abs(y[i]), abs(y_new[i])) * rtol
        a5 = b3 = 0.0
        for m in range(_STAGES + 1):
            a5 += vectors[m, i] * E5[m]
            b3 += vectors[m, i] * E3[m]
        a5, b3 = (a5 / scale) ** 2, (b3 / scale) ** 2
        if i < first:
            e5 += a5
            e3 += b3
            continue
        while i >= groups[g, 1]:
            g += 1
        g5[g] = max(g5[g], a5)
        g3[g] = max(g3[g], b3)
    e5 += g5.sum()
    e3 += g3.sum()
    if e5 == 0.0 and e3 == 0.0:
        return 0.0
    return abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * (first + groups.shape[0]))


@kernel("f8(f8, b1)", inline=True)
def step_factor(norm: float, rejected: bool) -> float:
    """What the step is multiplied by after an attempt of error ``norm``: accepted (``norm < 1``),
    the next step's factor (at most ``MAX_FACTOR``, and at most 1 right after a rejection); rejected,
    the retry's (at least ``MIN_FACTOR``)."""
    if norm < 1.0:
        factor = MAX_FACTOR if norm == 0.0 else min(MAX_FACTOR, SAFETY * norm ** EXPONENT)
        return min(1.0, factor) if rejected else factor
    return max(MIN_FACTOR, SAFETY * norm ** EXPONENT)


@kernel(f"i8(f8[::1], f8[:, ::1], {SYSTEM})")
def attempt(step: np.ndarray, vectors: np.ndarray, system: tuple) -> int:
    """Attempts at one step of DOP853 until one is accepted, every stage evaluated by
    :func:`system_rates`; the first attempt from stage ``STEP_RESUME`` (1: from the start; more:
    the stages before it are in ``vectors``, from an attempt with the same step that handed the one
    before it to Python). ``step`` holds the inputs and receives the outputs (``STEP_*``; ``K[0]`` is
    the start's slope). Returns ``ACCEPTED`` (``VEC_Y_NEW`` and ``K[12]`` the end and its slope),
    ``TOO_SMALL`` or ``STAGE_FAILED`` (``VEC_STAGE`` holds the failed stage's state, ``STEP_T_STAGE``
    its time and ``STEP_STAGE`` its number)."""
    t, h_abs, min_step = step[L.STEP_T], step[L.STEP_H_ABS], step[L.STEP_MIN]
    t_bound, direction, rtol = step[L.STEP_BOUND], step[L.STEP_DIRECTION], step[L.STEP_RTOL]
    rejected, resume = step[L.STEP_REJECTED] != 0.0, int(step[L.STEP_RESUME])
    nfev = 0
    no_groups = np.zeros((0, 2), np.int64)
    vectors[0] = vectors[L.VEC_F]
    while True:
        if h_abs < min_step:
            step[L.STEP_NFEV] = nfev
            return TOO_SMALL
        t_new = t + h_abs * direction
        if direction * (t_new - t_bound) > 0:
            t_new = t_bound
        h = t_new - t
        h_abs = abs(h)
        for s in range(resume, _STAGES + 1):
            stage_state(vectors, s, h)
            ts = t + C[s] * h if s < _STAGES else t_new
            nfev += 1
            if system_rates(ts, vectors[L.VEC_STAGE if s < _STAGES else L.VEC_Y_NEW], vectors[s], system) >= 0:
                if s == _STAGES:
                    vectors[L.VEC_STAGE] = vectors[L.VEC_Y_NEW]
                step[L.STEP_T_NEW], step[L.STEP_H], step[L.STEP_H_ABS] = t, h, h_abs
                step[L.STEP_T_STAGE], step[L.STEP_NFEV], step[L.STEP_STAGE] = ts, nfev, s
                step[L.STEP_REJECTED] = 1.0 if rejected else 0.0
                return STAGE_FAILED
        resume = 1
        norm = error_norm(vectors, h, rtol, no_groups)
        factor = step_factor(norm, rejected)
        if norm < 1.0:
            step[L.STEP_T_NEW], step[L.STEP_H], step[L.STEP_H_NEXT] = t_new, h, h_abs * factor
            step[L.STEP_NFEV], step[L.STEP_REJECTED] = nfev, 1.0 if rejected else 0.0
            return ACCEPTED
        h_abs *= factor
        rejected = True


@kernel(f"i8(f8[::1], f8[:, ::1], i8, {SYSTEM})")
def extra_stages(step: np.ndarray, vectors: np.ndarray, first: int, system: tuple) -> int:
    """The dense output's extra stages into ``K`` from stage ``first`` on, for the step from
    ``STEP_T`` (its start ``VEC_Y``) of ``STEP_H``; -1 when done, else the stage that failed (its
    state in ``VEC_STAGE``, its time in ``STEP_T_STAGE``)."""
    t_old, h = step[L.STEP_T], step[L.STEP_H]
    for s in range(first, L.VEC_K_ROWS):
        stage_state(vectors, s, h)
        ts = t_old + C_EXTRA[s - _STAGES - 1] * h
        if system_rates(ts, vectors[L.VEC_STAGE], vectors[s], system) >= 0:
            step[L.STEP_T_STAGE] = ts
            return s
    return -1


@kernel("void(f8[:, ::1], f8, f8[:, ::1])")
def dense_coefficients(vectors: np.ndarray, h: float, F: np.ndarray) -> None:
    """DOP853's dense output (Hairer's ``CONTD8``) of the step ``h`` from ``VEC_Y`` to ``VEC_Y_NEW``:
    its 7 coefficient rows into ``F`` (the start's and end's slopes ``K[0]`` and ``K[12]``, the extra
    stages in ``K[13:16]``)."""
    y_old, y = vectors[L.VEC_Y], vectors[L.VEC_Y_NEW]
    for i in range(y.shape[0]):
        dy = y[i] - y_old[i]
        F[0, i] = dy
        F[1, i] = h * vectors[0, i] - dy
        F[2, i] = 2 * dy - h * (vectors[_STAGES, i] + vectors[0, i])
        for p in range(D.shape[0]):
            acc = 0.0
            for m in range(L.VEC_K_ROWS):
                acc += D[p, m] * vectors[m, i]
            F[3 + p, i] = h * acc


@kernel(f"void(f8[:, ::1], {SYSTEM}, f8[:, ::1])")
def ligament_history(Y: np.ndarray, system: tuple, out: np.ndarray) -> None:
    """``out[n, m]``: ligament m's tension (N) at the state ``Y[:, n]``."""
    bodies, _, _, ligament_i, ligament_f = system
    Pa, Pb = np.empty(3), np.empty(3)
    y = np.empty(Y.shape[0])
    for n in range(Y.shape[1]):
        y[:] = Y[:, n]
        poses(y, bodies)
        for m in range(out.shape[1]):
            out[n, m] = _ligament(m, bodies, ligament_i, ligament_f, Pa, Pb)[0]
