"""The project's Dormand-Prince 8(5,3) (``method="DOP853-jit"``): Hairer and Wanner's DOP853 with
the step-size control of Hairer, Norsett & Wanner I, eq. II.4.13 (safety 0.9, the step changing by
0.2 to 10 times, no growth right after a rejection), the same steps as scipy's ``DOP853``.

Its tableau is :mod:`simclient.dynamics._tableau`, its rules (the stages' states, the error
estimate, the control, the dense output's coefficients) the kernels of
:mod:`simclient.dynamics._compiled`. For a system with a compiled form (a
:class:`simclient.dynamics.CompiledSystem`, given as ``compiled``) a step's attempts run in one
compiled call each, every stage included: Python runs once per step (the events' search, the
windows' following) instead of once per stage. A stage the compiled path cannot finish (a window
must move, a warm start must restart from a coarse search, a contact fails) is handed to the
Python right-hand side, which moves the window or raises as the reference path does; its value
becomes the stage, and the attempt goes on. Without ``compiled`` every stage is a Python call of
``fun``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from simclient.dynamics._compiled import (ACCEPTED, TOO_SMALL, attempt, dense_coefficients, error_norm, extra_stages,
                                          stage_state, step_factor)
from simclient.dynamics._solvers import Stepper, _Interpolant
from simclient.dynamics._tableau import C, C_EXTRA, ERROR_ORDER
from simclient.geometry import layout as L

__all__ = ["Dop853", "Dop853Dense", "initial_step", "MAX_HANDOVERS"]

#: compiled attempts at one step that may hand a stage to Python before the step runs in Python
MAX_HANDOVERS = 16
_EPS = float(np.finfo(float).eps)


def _rms(x: np.ndarray) -> float:
    return float(np.linalg.norm(x) / math.sqrt(x.size))


def initial_step(fun: Callable[[float, np.ndarray], np.ndarray], t0: float, y0: np.ndarray, f0: np.ndarray,
                 t_bound: float, max_step: float, rtol: float, atol: np.ndarray, order: int) -> float:
    """The first step's size (s): Hairer, Norsett & Wanner I, section II.4 ("starting step size"),
    for a method of error order ``order``: ``h0 = 0.01 |y0| / |f0|`` in the scaled norm, an Euler
    step to estimate the second derivative, ``h1 = (0.01 / max(|f0|, |y''|))^(1/(order+1))``, the
    least of ``100 h0``, ``h1``, the interval and ``max_step``."""
    interval = abs(t_bound - t0)
    if interval == 0.0:
        return 0.0
    direction = math.copysign(1.0, t_bound - t0)
    scale = atol + np.abs(y0) * rtol
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, interval)
    f1 = fun(t0 + h0 * direction, y0 + h0 * direction * f0)
    d2 = _rms((f1 - f0) / scale) / h0
    h1 = max(1e-6, h0 * 1e-3) if d1 <= 1e-15 and d2 <= 1e-15 else (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, interval, max_step)


class Dop853Dense(_Interpolant):
    """The 7th-order dense output of a step from ``(t_old, y_old)`` to ``t`` with the coefficients
    ``F`` (7 x n, :func:`simclient.dynamics._compiled.dense_coefficients`; Hairer's ``CONTD8``)."""

    def __init__(self, t_old: float, t: float, y_old: np.ndarray, F: np.ndarray) -> None:
        super().__init__(t_old, t)
        self.h, self.y_old, self.F = t - t_old, y_old, F

    def _call_impl(self, t: np.ndarray) -> np.ndarray:
        x = (t - self.t_old) / self.h
        F = self.F if x.ndim == 0 else self.F[:, :, None]
        y = np.zeros_like(F[0], shape=np.broadcast_shapes(F[0].shape, x.shape))
        for i, f in enumerate(F[::-1]):  # y_old + x (F0 + (1 - x) (F1 + x (F2 + ... (F5 + x F6))))
            y += f
            y *= x if i % 2 == 0 else 1.0 - x
        return y + (self.y_old if x.ndim == 0 else self.y_old[:, None])


class Dop853(Stepper):
    """Dormand-Prince 8(5,3) for ``y' = fun(t, y)`` from ``t0`` to ``t_bound`` (see the module).

    ``rtol``, ``atol`` (a number or one per state): the error tolerances; ``max_step`` (s, may be
    changed between steps); ``first_step`` (s; default :func:`initial_step`); ``compiled``: the
    system's compiled form, whose right-hand side ``fun`` must be; ``groups``: slices of the
    state (after every other state, in order) whose errors count as one state each, their
    largest (:func:`simclient.dynamics._compiled.error_norm`)."""

    def __init__(self, fun: Callable[[float, np.ndarray], np.ndarray], t0: float, y0: np.ndarray, t_bound: float,
                 rtol: float = 1e-3, atol: float | np.ndarray = 1e-6, max_step: float = math.inf,
                 first_step: float | None = None, compiled: Any = None, groups: Sequence[slice] = (),
                 **extraneous: Any) -> None:
        super().__init__(fun, t0, y0, t_bound)
        self.max_step = max_step
        self.rtol = max(float(rtol), 100 * _EPS)
        self.compiled = compiled
        self.groups = np.array([[g.start, g.stop] for g in groups], dtype=np.int64).reshape(-1, 2)
        self.vectors = np.zeros((L.VEC_SIZE, self.n))
        self.vectors[L.VEC_ATOL] = atol
        self.step_state = np.zeros(L.STEP_SIZE)
        self.f = self.fun(self.t, self.y)
        self.h_abs = first_step if first_step is not None else initial_step(
            self.fun, self.t, self.y, self.f, self.t_bound, max_step, self.rtol, self.vectors[L.VEC_ATOL], ERROR_ORDER)
        self.h_previous: float | None = None
        self.y_old: np.ndarray | None = None

    def _accept(self, t_new: float, h: float, h_next: float) -> tuple[bool, None]:
        V = self.vectors
        self.h_previous, self.y_old, self.t, self.y = h, self.y, t_new, V[L.VEC_Y_NEW].copy()
        self.h_abs, self.f = h_next, V[L.DOP_STAGES].copy()
        return True, None

    def _start(self) -> tuple[float, float]:
        """The step's start into the vectors; ``(smallest step, the step to try)``."""
        V = self.vectors
        V[L.VEC_Y], V[L.VEC_F] = self.y, self.f
        min_step = 10 * abs(np.nextafter(self.t, self.direction * np.inf) - self.t)
        return min_step, min(max(self.h_abs, min_step), self.max_step)

    def _step_impl(self) -> tuple[bool, str | None]:
        if self.compiled is not None:
            return self._step_compiled()
        return self._step_python()

    def _step_python(self) -> tuple[bool, str | None]:
        """Attempts until one is accepted, each stage a call of ``fun``."""
        t, V = self.t, self.vectors
        min_step, h_abs = self._start()
        V[0] = self.f
        rejected = False
        while True:
            if h_abs < min_step:
                return False, self.TOO_SMALL_STEP
            t_new = t + h_abs * self.direction
            if self.direction * (t_new - self.t_bound) > 0:
                t_new = self.t_bound
            h = t_new - t
            h_abs = abs(h)
            for s in range(1, L.DOP_STAGES):
                stage_state(V, s, h)
                V[s] = self.fun(t + C[s] * h, V[L.VEC_STAGE].copy())
            stage_state(V, L.DOP_STAGES, h)
            V[L.DOP_STAGES] = self.fun(t_new, V[L.VEC_Y_NEW].copy())
            norm = error_norm(V, h, self.rtol, self.groups)
            factor = step_factor(norm, rejected)
            if norm < 1.0:
                return self._accept(t_new, h, h_abs * factor)
            h_abs *= factor
            rejected = True

    def _handover(self, t_stage: float, stage: int) -> None:
        """A stage the compiled path could not finish, evaluated by the Python right-hand side (it
        moves windows, restarts warm starts, or raises as the reference path does)."""
        self.nfev += 1
        self.vectors[stage] = self.compiled.system.rhs(t_stage, self.vectors[L.VEC_STAGE].copy())

    def _step_compiled(self) -> tuple[bool, str | None]:
        """Compiled attempts (:func:`simclient.dynamics._compiled.attempt`); after
        ``MAX_HANDOVERS`` stages handed over in one step, the step in Python."""
        S, cs = self.step_state, self.compiled
        min_step, h_abs = self._start()
        S[[L.STEP_T, L.STEP_H_ABS, L.STEP_MIN, L.STEP_BOUND, L.STEP_DIRECTION, L.STEP_RTOL, L.STEP_REJECTED,
           L.STEP_RESUME]] = (self.t, h_abs, min_step, self.t_bound, self.direction, self.rtol, 0.0, 1.0)
        for _ in range(MAX_HANDOVERS):
            cs.load()
            outcome = attempt(S, self.vectors, cs.pack.arrays)
            self.nfev += int(S[L.STEP_NFEV])
            if outcome == ACCEPTED:
                if cs.atlases:
                    cs.rechart(self.vectors[L.VEC_Y_NEW])
                return self._accept(float(S[L.STEP_T_NEW]), float(S[L.STEP_H]), float(S[L.STEP_H_NEXT]))
            if outcome == TOO_SMALL:
                return False, self.TOO_SMALL_STEP
            stage = int(S[L.STEP_STAGE])
            self._handover(float(S[L.STEP_T_STAGE]), stage)  # then the attempt goes on after that stage
            S[L.STEP_RESUME] = stage + 1
        self.h_abs = float(S[L.STEP_H_ABS])  # the compiled attempts keep handing over: this step in Python
        return self._step_python()

    def dense_output(self) -> Dop853Dense:
        """The last step's dense output, its three extra stages evaluated (compiled where the
        system is, handing a stage over as a step's attempts do)."""
        V, h = self.vectors, self.h_previous
        assert h is not None and self.t_old is not None and self.y_old is not None
        first = L.DOP_STAGES + 1
        if self.compiled is not None:
            S = self.step_state
            S[L.STEP_T], S[L.STEP_H] = self.t_old, h
            while first < L.VEC_K_ROWS:
                self.compiled.load()
                failed = extra_stages(S, V, first, self.compiled.pack.arrays)
                self.nfev += (failed - first + 1) if failed >= 0 else L.VEC_K_ROWS - first
                if failed < 0:
                    break
                self._handover(float(S[L.STEP_T_STAGE]), failed)  # then on after this stage, compiled again
                first = failed + 1
        else:
            for s in range(first, L.VEC_K_ROWS):
                stage_state(V, s, h)
                V[s] = self.fun(self.t_old + C_EXTRA[s - first] * h, V[L.VEC_STAGE].copy())
        F = np.empty((7, self.n))
        dense_coefficients(V, h, F)
        return Dop853Dense(self.t_old, self.t, self.y_old, F)
