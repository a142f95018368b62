"""The layout of the compiled kernels' arrays, in one place.

Kernels take a few packed arrays rather than objects (:mod:`simclient.geometry.kernels`): every
module that packs or reads them uses these names, each offset derived from the one before it, and
nothing else knows an offset. Units are SI; frames as the docstrings of the packing functions say.

Window parameters (one per storage window)
    ``ip`` int64[IP_SIZE]: ``IP_BU, IP_BV`` the buffer's size in points (the buffer is addressed
    modulo it), ``IP_I_LO, IP_I_HI, IP_J_LO, IP_J_HI`` the grid points ``[i_lo, i_hi) x [j_lo, j_hi)``
    the window holds, ``IP_U_NPTS, IP_V_NPTS`` the table's grid size, ``IP_PERIODIC_V`` 1 where the
    table is periodic in v (its grid points past either end of v are points of the table),
    ``IP_MODE`` its interpolation (``BILINEAR`` or ``HERMITE``).
    ``fp`` float64[FP_SIZE]: ``FP_U0, FP_DU, FP_V0, FP_DV`` the parameter grid, ``FP_NORMAL_SIGN``.

Evaluation output ``ev`` float64[EV_SIZE] (surface frame, see :mod:`simclient.geometry`'s
interpolation): 3-vectors at ``EV_S`` (position), ``EV_SU``, ``EV_SV`` (derivatives of the
interpolated position), ``EV_TU``, ``EV_TV`` (tangents), ``EV_TUU``, ``EV_TUV``, ``EV_TVU``, ``EV_TVV``
(their derivatives) and ``EV_N`` (unit normal).

Contact-pair parameters (one per pair of windows i, j)
    ``ints`` int64[PAIR_INTS_SIZE]: ``ip`` of i at ``PAIR_IP_I``, of j at ``PAIR_IP_J`` (both windows
    interpolate alike); ``PAIR_MAX_ITER``, ``PAIR_CHECK`` (1: return at once when a guess lies outside
    a window's quiet records); the pair's counters ``PAIR_EVALUATIONS`` (contact evaluations) and
    ``PAIR_ITERATIONS`` (Newton iterations); the addresses of both windows' buffers
    (``PAIR_BUFFER_I``, ``PAIR_BUFFER_J``) and of the pair's ``work`` (``PAIR_WORK``), so that the
    address of ``ints`` alone hands a pair's arrays to a compiled call (the pair keeps them
    current: :meth:`simclient.contact.ContactPair.refresh`).
    ``flts`` float64[PAIR_FLTS_SIZE]: ``fp`` of i at ``PAIR_FP_I``, of j at ``PAIR_FP_J``; ``PAIR_TOL``
    (cells), ``PAIR_MAX_STEP`` (cells); the quiet boxes ``(u_lo, v_lo, u_hi, v_hi)`` of i at
    ``PAIR_QUIET_I`` and of j at ``PAIR_QUIET_J``.

A pair's ``work`` float64[PAIR_WORK_SIZE]: the contact output first (``OUT_*``, global frame:
``OUT_PI``, ``OUT_PJ`` points, ``OUT_N`` unit normal of j, ``OUT_DEPTH`` indentation, ``OUT_RESIDUAL``
|F|, ``OUT_NI`` unit normal of i), then the solve's scratch (``SOLVE_*``), its memory of the last
evaluations (``PAIR_EV_I``, ``PAIR_EV_J`` and the key ``PAIR_KEY`` they were taken at: a new work array
is filled with NaN, no memory), then the warm start ``PAIR_X`` (NaN: none) and the pair's ``flts`` at
``PAIR_FLTS``. A contact's data (``CONTACT_SIZE`` values) is the output followed by the solution
``(u_i, v_i, u_j, v_j)`` at ``CONTACT_X`` and the solve's Newton iterations at ``CONTACT_ITERATIONS``.

A system (:func:`simclient.dynamics.pack_system`)
    ``bodies`` float64[nb, BODY_SIZE], a row per body: its mass (kg), inertia and its inverse (body
    frame, row-major), the gravitational acceleration on it (m/s^2, global), the index of its first
    of 13 states (-1: fixed), and what kernels write at each evaluation: its pose (position,
    rotation matrix row-major), velocity and angular velocity (global), and the force (N) and
    torque about its origin (N m) applied to it.
    ``contact_i`` int64[nc, CI_SIZE] and ``contact_f`` float64[nc, CF_SIZE]: each point contact's
    bodies, law kind, mode (1 in contact), whether it has friction and its pair (the address of the
    pair's ``ints``); its impact velocity (m/s), law parameters, both surfaces' placements in their
    bodies (offset, rotation row-major) and friction parameters.
    ``ligament_i`` int64[nl, LI_SIZE] and ``ligament_f`` float64[nl, LF_SIZE]: each ligament's bodies,
    law kind (0: none), whether it is tension-only; its insertions (body frames), law parameters and
    damping (N s/m).

An elastic-foundation compartment (:class:`simclient.contact.ElementDetector`)
    ``rays`` float64[n, RAY_SIZE], a row per element: its centre and normal in the moving surface's
    frame, its ray's start (moving table parameters), the ray's outcome (distance along the normal,
    m; the hit's parameters and the moving surface's normal there; ``RAY_STATUS``: ``RAY_HIT``,
    ``RAY_LEFT_WINDOW`` or ``RAY_MISSED``), the signed interpenetration along the midsurface normal
    (m) and that normal (fixed frame). ``flags`` bool[n, FLAG_SIZE]: usable, warm (its start is a
    hit), started, tracked (by the last search), near (this search's), evaluated, queued.
    ``grid`` float64[GRID_SIZE]: the element grid's shape and the moving table's data footprint
    (the grid of its ``data_distance`` field and the footprint's radius, m). ``search``
    float64[SEARCH_SIZE]: a search's settings.

The compiled integrator's step (:mod:`simclient.dynamics._dop853`)
    ``vectors`` float64[VEC_SIZE, n]: the stages ``K`` (rows 0 to ``VEC_K_ROWS``), the step's start
    ``VEC_Y``, its slope ``VEC_F``, the end ``VEC_Y_NEW``, a stage's state ``VEC_STAGE`` and the absolute
    tolerances ``VEC_ATOL``. ``step`` float64[STEP_SIZE]: its inputs and outputs by name.
"""

from __future__ import annotations

#: fields of a table point (``u, v, x, y, z, nx, ny, nz, tux, tuy, tuz, tvx, tvy, tvz``; the format's)
NFIELDS = 14

# window parameters
IP_BU, IP_BV, IP_I_LO, IP_I_HI, IP_J_LO, IP_J_HI, IP_U_NPTS, IP_V_NPTS, IP_PERIODIC_V, IP_MODE = range(10)
IP_SIZE = IP_MODE + 1
#: the interpolations a window offers, by name: the values of ``IP_MODE`` (see
#: :mod:`simclient.geometry._interpolation`)
INTERPOLATIONS = {"bilinear": 0, "hermite": 1}
FP_U0, FP_DU, FP_V0, FP_DV, FP_NORMAL_SIGN = range(5)
FP_SIZE = FP_NORMAL_SIGN + 1

# evaluation output
EV_S, EV_SU, EV_SV, EV_TU, EV_TV, EV_TUU, EV_TUV, EV_TVU, EV_TVV, EV_N = range(0, 30, 3)
EV_SIZE = EV_N + 3

# contact-pair parameters
PAIR_IP_I, PAIR_IP_J = 0, IP_SIZE
PAIR_MAX_ITER = PAIR_IP_J + IP_SIZE
PAIR_CHECK = PAIR_MAX_ITER + 1
PAIR_EVALUATIONS = PAIR_CHECK + 1
PAIR_ITERATIONS = PAIR_EVALUATIONS + 1
PAIR_BUFFER_I = PAIR_ITERATIONS + 1
PAIR_BUFFER_J = PAIR_BUFFER_I + 1
PAIR_WORK = PAIR_BUFFER_J + 1
PAIR_INTS_SIZE = PAIR_WORK + 1
PAIR_FP_I, PAIR_FP_J = 0, FP_SIZE
PAIR_TOL = PAIR_FP_J + FP_SIZE
PAIR_MAX_STEP = PAIR_TOL + 1
PAIR_QUIET_I = PAIR_MAX_STEP + 1
PAIR_QUIET_J = PAIR_QUIET_I + 4
PAIR_FLTS_SIZE = PAIR_QUIET_J + 4

# contact output
OUT_PI, OUT_PJ, OUT_N = 0, 3, 6
OUT_DEPTH = OUT_N + 3
OUT_RESIDUAL = OUT_DEPTH + 1
OUT_NI = OUT_RESIDUAL + 1
OUT_SIZE = OUT_NI + 3
CONTACT_X = OUT_SIZE
CONTACT_ITERATIONS = CONTACT_X + 4  # the solve's Newton iterations (a count)
CONTACT_SIZE = CONTACT_ITERATIONS + 1

# the common-normal solve's scratch, after the output
SOLVE_GI = OUT_SIZE  # surface i's evaluation in the global frame (EV_SIZE)
SOLVE_GJ = SOLVE_GI + EV_SIZE  # surface j's
SOLVE_F = SOLVE_GJ + EV_SIZE  # the conditions at x (4)
SOLVE_FN = SOLVE_F + 4  # ... at the trial point
SOLVE_J = SOLVE_FN + 4  # their Jacobian, row-major (16)
SOLVE_DX = SOLVE_J + 16  # the Newton step
SOLVE_XN = SOLVE_DX + 4  # the trial point
SOLVE_MJ = SOLVE_XN + 4  # m_j = T_uj x T_vj (3)
SOLVE_MU = SOLVE_MJ + 3  # its derivative along u_j, two terms (6)
SOLVE_MV = SOLVE_MU + 6  # ... and along v_j (6)
# the planar solve's scratch (simclient.contact's solve_profile_contact), after the output
PROFILE_EV = OUT_SIZE  # an evaluation (EV_SIZE)
PROFILE_GI = PROFILE_EV + EV_SIZE  # profile i's point, tangent and its derivative, global (6)
PROFILE_GJ = PROFILE_GI + 6  # profile j's
PROFILE_F = PROFILE_GJ + 6  # the conditions (2)
PROFILE_END = PROFILE_F + 2
#: the solve's memory: both surfaces' evaluations (own frames) and the key they were taken at
#: (u_i, v_i, u_j, v_j and both windows' first grid points)
PAIR_EV_I = max(SOLVE_MV + 6, PROFILE_END)
PAIR_EV_J = PAIR_EV_I + EV_SIZE
PAIR_KEY = PAIR_EV_J + EV_SIZE
PAIR_KEY_SIZE = 8
#: scratch space of one contact solve (float64), the output first
SOLVE_WORK_SIZE = PAIR_KEY + PAIR_KEY_SIZE
#: a pair's state: the scratch space, its warm start and its flts
PAIR_X = SOLVE_WORK_SIZE
PAIR_FLTS = PAIR_X + 4
PAIR_WORK_SIZE = PAIR_FLTS + PAIR_FLTS_SIZE

# an elastic-foundation compartment's elements
RAY_O = 0
RAY_D = RAY_O + 3
RAY_UV = RAY_D + 3
RAY_T = RAY_UV + 2  # the ray's outcome: distance,
RAY_HIT_UV = RAY_T + 1  # the hit's parameters,
RAY_HIT_N = RAY_HIT_UV + 2  # the moving surface's normal there,
RAY_STATUS = RAY_HIT_N + 3  # and the status
RAY_SIGNED = RAY_STATUS + 1
RAY_MID = RAY_SIGNED + 1
RAY_SIZE = RAY_MID + 3
RAY_HIT, RAY_LEFT_WINDOW, RAY_MISSED = 0, 1, 2
FLAG_USABLE, FLAG_WARM, FLAG_STARTED, FLAG_TRACKED, FLAG_NEAR, FLAG_EVALUATED, FLAG_QUEUED = range(7)
FLAG_SIZE = FLAG_QUEUED + 1
GRID_NU, GRID_NV, GRID_FOOT_U0, GRID_FOOT_DU, GRID_FOOT_V0, GRID_FOOT_DV, GRID_FOOT_RADIUS = range(7)
GRID_SIZE = GRID_FOOT_RADIUS + 1
SEARCH_FULL, SEARCH_MARGIN, SEARCH_MAX_ITER, SEARCH_TOL = range(4)
SEARCH_SIZE = SEARCH_TOL + 1

# compiled force laws (simclient.contact's law_force): a kind and its parameters
LAW_HERTZIAN, LAW_DOUBLE_LAYER, LAW_PENALTY_STEP = 1, 2, 3
LAW_PARAMS_SIZE = 5
#: friction parameters: mu_s, mu_d, mu_v (s/m), v_t (m/s)
FRICTION_MU_S, FRICTION_MU_D, FRICTION_MU_V, FRICTION_V_T = range(4)
FRICTION_PARAMS_SIZE = FRICTION_V_T + 1
# compiled ligament laws (simclient.dynamics's spring_force)
SPRING_QUADRATIC, SPRING_BLANKEVOORT, SPRING_LINEAR = 1, 2, 3
SPRING_PARAMS_SIZE = 3

# a system's bodies
BODY_MASS = 0
BODY_J = BODY_MASS + 1
BODY_JINV = BODY_J + 9
BODY_GRAVITY = BODY_JINV + 9
BODY_STATE = BODY_GRAVITY + 3
BODY_R = BODY_STATE + 1
BODY_A = BODY_R + 3
BODY_V = BODY_A + 9
BODY_W = BODY_V + 3
BODY_F = BODY_W + 3
BODY_N = BODY_F + 3
BODY_SIZE = BODY_N + 3
#: states of a free body: position, Euler parameters, velocity, angular velocity (body frame)
BODY_STATES = 13
STATE_R, STATE_P, STATE_V, STATE_W = 0, 3, 7, 10

# a system's point contacts
CI_BODY_I, CI_BODY_J, CI_LAW, CI_ACTIVE, CI_FRICTION, CI_PAIR = range(6)
CI_SIZE = CI_PAIR + 1
CF_IMPACT = 0
CF_LAW = CF_IMPACT + 1
CF_OFFSET_I = CF_LAW + LAW_PARAMS_SIZE
CF_ROTATION_I = CF_OFFSET_I + 3
CF_OFFSET_J = CF_ROTATION_I + 9
CF_ROTATION_J = CF_OFFSET_J + 3
CF_FRICTION = CF_ROTATION_J + 9
CF_SIZE = CF_FRICTION + FRICTION_PARAMS_SIZE

# a system's ligaments
LI_BODY_A, LI_BODY_B, LI_LAW, LI_TENSION_ONLY = range(4)
LI_SIZE = LI_TENSION_ONLY + 1
LF_POINT_A = 0
LF_POINT_B = LF_POINT_A + 3
LF_LAW = LF_POINT_B + 3
LF_DAMPING = LF_LAW + SPRING_PARAMS_SIZE
LF_SIZE = LF_DAMPING + 1

# the compiled integrator (Dormand-Prince 8(5,3): 12 stages, the slope at the step's end, 3 more
# for the dense output)
DOP_STAGES = 12
DOP_EXTRA = 3
VEC_K_ROWS = DOP_STAGES + 1 + DOP_EXTRA
VEC_Y = VEC_K_ROWS
VEC_F = VEC_Y + 1
VEC_Y_NEW = VEC_F + 1
VEC_STAGE = VEC_Y_NEW + 1
VEC_ATOL = VEC_STAGE + 1
VEC_SIZE = VEC_ATOL + 1
# step inputs (t, s; the step tried, s; the smallest step, s; the end, s; direction +-1; rtol;
# 1 after a rejection; the stage the first attempt starts from) and outputs (the new time, the step
# taken, the next step, a failed stage's time, s; right-hand sides evaluated; the stage that failed)
STEP_T, STEP_H_ABS, STEP_MIN, STEP_BOUND, STEP_DIRECTION, STEP_RTOL, STEP_REJECTED, STEP_RESUME = range(8)
STEP_T_NEW = STEP_RESUME + 1
STEP_H = STEP_T_NEW + 1
STEP_H_NEXT = STEP_H + 1
STEP_T_STAGE = STEP_H_NEXT + 1
STEP_NFEV = STEP_T_STAGE + 1
STEP_STAGE = STEP_NFEV + 1
STEP_SIZE = STEP_STAGE + 1
