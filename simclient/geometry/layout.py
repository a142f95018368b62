"""The layout of the compiled kernels' work arrays, in one place.

Numba kernels take small packed arrays rather than objects (numba checks the type of every
argument, so fewer arguments make each call cheaper). Every module that packs or reads them uses
these names; nothing else knows an offset.

Window parameters (one per storage window)
    ``ip`` int64[IP_SIZE]: ``IP_BU, IP_BV`` the buffer's size in points (the buffer is addressed
    modulo it), ``IP_I_LO, IP_I_HI, IP_J_LO, IP_J_HI`` the grid points ``[i_lo, i_hi) x [j_lo, j_hi)``
    the window holds, ``IP_U_NPTS, IP_V_NPTS`` the table's grid size, ``IP_PERIODIC_V`` 1 where the
    table is periodic in v (its grid points past either end of v are points of the table).
    ``fp`` float64[FP_SIZE]: ``FP_U0, FP_DU, FP_V0, FP_DV`` the parameter grid, ``FP_NORMAL_SIGN``.

Evaluation output ``ev`` float64[EV_SIZE] (surface frame, see :mod:`simclient.geometry`'s
interpolation): 3-vectors at ``EV_S`` (position), ``EV_SU``, ``EV_SV`` (derivatives of the
interpolated position), ``EV_TU``, ``EV_TV`` (tangents), ``EV_TUU``, ``EV_TUV``, ``EV_TVU``, ``EV_TVV``
(their derivatives) and ``EV_N`` (unit normal).

Contact-pair parameters (one per pair of windows i, j)
    ``ints`` int64[PAIR_INTS_SIZE]: ``ip`` of i at ``PAIR_IP_I``, of j at ``PAIR_IP_J``; ``PAIR_MODE``
    (interpolation), ``PAIR_MAX_ITER``, ``PAIR_CHECK`` (1: return at once when a guess lies outside
    a window's quiet records); the pair's counters ``PAIR_EVALUATIONS`` (contact evaluations) and
    ``PAIR_ITERATIONS`` (Newton iterations); the addresses of both windows' buffers
    (``PAIR_BUFFER_I``, ``PAIR_BUFFER_J``) and of the pair's ``work`` (``PAIR_WORK``), so that the
    address of ``ints`` alone hands a pair's arrays to a compiled call.
    ``flts`` float64[PAIR_FLTS_SIZE]: ``fp`` of i at ``PAIR_FP_I``, of j at ``PAIR_FP_J``; ``PAIR_TOL``
    (cells), ``PAIR_MAX_STEP`` (cells); the quiet boxes ``(u_lo, v_lo, u_hi, v_hi)`` of i at
    ``PAIR_QUIET_I`` and of j at ``PAIR_QUIET_J``.

Contact output ``out`` (the first ``OUT_SIZE`` values of the pair's scratch space, global frame):
``OUT_PI``, ``OUT_PJ`` (points), ``OUT_N`` (unit normal of j), ``OUT_DEPTH`` (indentation, m),
``OUT_RESIDUAL`` (|F|), ``OUT_NI`` (unit normal of i). A contact's data (``CONTACT_SIZE`` values) is
the output followed by the solution ``(u_i, v_i, u_j, v_j)`` at ``CONTACT_X``.
The rest of the scratch space is the solve's own (``PAIR_EV_I``, ``PAIR_EV_J``, ``PAIR_KEY``: it
remembers its last evaluations, so a new scratch space must be filled with NaN), then the pair's
(``PAIR_X``: the warm start, NaN while there is none; ``PAIR_FLTS``: the pair's ``flts``), so that
one array carries a pair's state into ``simclient.contact._newton.solve_warm``.
"""

from __future__ import annotations

# window parameters
IP_BU, IP_BV, IP_I_LO, IP_I_HI, IP_J_LO, IP_J_HI, IP_U_NPTS, IP_V_NPTS, IP_PERIODIC_V = range(9)
IP_SIZE = 9
FP_U0, FP_DU, FP_V0, FP_DV, FP_NORMAL_SIGN = range(5)
FP_SIZE = 5

# evaluation output
EV_S, EV_SU, EV_SV, EV_TU, EV_TV, EV_TUU, EV_TUV, EV_TVU, EV_TVV, EV_N = range(0, 30, 3)
EV_SIZE = 30

# contact-pair parameters
PAIR_IP_I, PAIR_IP_J = 0, IP_SIZE
PAIR_MODE = 2 * IP_SIZE
PAIR_MAX_ITER = PAIR_MODE + 1
PAIR_CHECK = PAIR_MODE + 2
PAIR_EVALUATIONS = PAIR_MODE + 3
PAIR_ITERATIONS = PAIR_MODE + 4
PAIR_BUFFER_I = PAIR_MODE + 5
PAIR_BUFFER_J = PAIR_MODE + 6
PAIR_WORK = PAIR_MODE + 7
PAIR_INTS_SIZE = PAIR_MODE + 8
PAIR_FP_I, PAIR_FP_J = 0, FP_SIZE
PAIR_TOL = 2 * FP_SIZE
PAIR_MAX_STEP = PAIR_TOL + 1
PAIR_QUIET_I = PAIR_TOL + 2
PAIR_QUIET_J = PAIR_QUIET_I + 4
PAIR_FLTS_SIZE = PAIR_QUIET_J + 4

# contact output
OUT_PI, OUT_PJ, OUT_N = 0, 3, 6
OUT_DEPTH, OUT_RESIDUAL = 9, 10
OUT_NI = 11
OUT_SIZE = 16
CONTACT_X = OUT_SIZE
CONTACT_SIZE = CONTACT_X + 4
#: a contact solve's memory (inside its scratch space): both surfaces' evaluations ``ev`` (surface
#: frames) at ``PAIR_EV_I``, ``PAIR_EV_J`` and the key they were taken at (``u_i, v_i, u_j, v_j`` and
#: both windows' first grid points) at ``PAIR_KEY``; a new scratch space is NaN (no memory)
PAIR_EV_I = 160
PAIR_EV_J = PAIR_EV_I + EV_SIZE
PAIR_KEY = PAIR_EV_J + EV_SIZE
PAIR_KEY_SIZE = 8
#: scratch space of one contact solve (float64), the output first
SOLVE_WORK_SIZE = PAIR_KEY + PAIR_KEY_SIZE
#: a pair's state: the scratch space, its warm start and its flts
PAIR_X = SOLVE_WORK_SIZE
PAIR_FLTS = PAIR_X + 4
PAIR_WORK_SIZE = PAIR_FLTS + PAIR_FLTS_SIZE
