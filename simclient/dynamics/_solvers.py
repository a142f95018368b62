"""Steppers: the protocol the project's integrators share with scipy's ``OdeSolver`` (see
:mod:`simclient.dynamics._methods`), the fixed-step :class:`RK4`, the dense outputs and their
piecewise solution, and the forward-difference Jacobian the implicit methods get."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from simclient.errors import ParameterError

__all__ = ["Stepper", "RK4", "CubicHermite", "DenseSolution", "ForwardJacobian"]


class Stepper:
    """What a method of the project shares with scipy's ``OdeSolver``: ``fun`` wrapped to count
    its evaluations (``nfev``), the state ``t``, ``y`` (copies), ``t_old`` and ``status``
    (``running``, ``finished``, ``failed``), and :meth:`step`, which calls ``_step_impl``."""

    TOO_SMALL_STEP = "Required step size is less than spacing between numbers."

    def __init__(self, fun: Callable[[float, np.ndarray], np.ndarray], t0: float, y0: np.ndarray,
                 t_bound: float) -> None:
        self.t, self.t_bound = float(t0), float(t_bound)
        self.y = np.array(y0, dtype=float)
        self.n = len(self.y)
        self.direction = float(np.sign(self.t_bound - self.t)) if self.t_bound != self.t else 1.0
        self.status = "running"
        self.t_old: float | None = None
        self.nfev = self.njev = self.nlu = 0
        self.max_step = math.inf

        def counted(t: float, y: np.ndarray) -> np.ndarray:
            self.nfev += 1
            return np.asarray(fun(t, y), dtype=float)
        self.fun = counted

    def step(self) -> str | None:
        """One step; the reason where it failed (``status`` then ``failed``), else None."""
        if self.status != "running":
            raise RuntimeError("step() of a stepper that has finished or failed")
        if self.n == 0 or self.t == self.t_bound:
            self.t_old, self.t, self.status = self.t, self.t_bound, "finished"
            return None
        t = self.t
        success, message = self._step_impl()
        if not success:
            self.status = "failed"
            return message
        self.t_old = t
        if self.direction * (self.t - self.t_bound) >= 0:
            self.status = "finished"
        return message

    def _step_impl(self) -> tuple[bool, str | None]:
        raise NotImplementedError

    def dense_output(self) -> Any:
        raise NotImplementedError


class RK4(Stepper):
    """Classical fourth-order Runge-Kutta with a fixed step ``h`` (s), the last step shortened to
    end at ``t_bound``. Dense output: the cubic Hermite interpolant of each step from its end values
    and slopes (the slope at a step's end is the next step's first stage, so a step costs four
    evaluations). ``rtol``, ``atol`` and ``max_step`` do not apply and are ignored."""

    def __init__(self, fun: Callable, t0: float, y0: np.ndarray, t_bound: float, h: float = 1e-5,
                 **extraneous: Any) -> None:
        if not (h > 0 and np.isfinite(h)):
            raise ParameterError(f"rk4: the step h must be positive (s), got {h}")
        super().__init__(fun, t0, y0, t_bound)
        self.h = float(h)
        self.f = self.fun(self.t, self.y)
        self.y_old: np.ndarray | None = None
        self.f_old: np.ndarray | None = None

    def _step_impl(self) -> tuple[bool, str | None]:
        t, y, k1 = self.t, self.y, self.f
        remaining = abs(self.t_bound - t)
        last = remaining <= self.h * (1 + 1e-12)
        h = (remaining if last else self.h) * self.direction
        k2 = self.fun(t + h / 2, y + h / 2 * k1)
        k3 = self.fun(t + h / 2, y + h / 2 * k2)
        k4 = self.fun(t + h, y + h * k3)
        self.y_old, self.f_old = y, k1
        self.t, self.y = (self.t_bound if last else t + h), y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        self.f = self.fun(self.t, self.y)
        return True, None

    def dense_output(self) -> CubicHermite:
        assert self.t_old is not None and self.y_old is not None and self.f_old is not None
        return CubicHermite(self.t_old, self.t, self.y_old, self.y, self.f_old, self.f)


class _Interpolant:
    """A step's dense output: ``t_min``, ``t_max`` and ``__call__(t)`` (t a number: the state; an
    array: a column per time)."""

    def __init__(self, t_old: float, t: float) -> None:
        self.t_old, self.t = t_old, t
        self.t_min, self.t_max = min(t_old, t), max(t_old, t)

    def __call__(self, t: Any) -> np.ndarray:
        return self._call_impl(np.asarray(t, dtype=float))

    def _call_impl(self, t: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class CubicHermite(_Interpolant):
    """The cubic through ``(t_old, y_old)`` and ``(t, y)`` with slopes ``f_old`` and ``f``."""

    def __init__(self, t_old: float, t: float, y_old: np.ndarray, y: np.ndarray, f_old: np.ndarray,
                 f: np.ndarray) -> None:
        super().__init__(t_old, t)
        self.h = t - t_old
        self.y0, self.y1, self.m0, self.m1 = y_old, y, self.h * f_old, self.h * f

    def _call_impl(self, t: np.ndarray) -> np.ndarray:
        s = (t - self.t_old) / self.h
        s2, s3 = s * s, s * s * s
        w = (2 * s3 - 3 * s2 + 1, s3 - 2 * s2 + s, -2 * s3 + 3 * s2, s3 - s2)
        if np.ndim(s) == 0:
            return w[0] * self.y0 + w[1] * self.m0 + w[2] * self.y1 + w[3] * self.m1
        return (np.outer(self.y0, w[0]) + np.outer(self.m0, w[1]) + np.outer(self.y1, w[2])
                + np.outer(self.m1, w[3]))


class DenseSolution:
    """The dense output of consecutive steps ending at the times ``ts`` (ascending), one
    interpolant each: ``sol(t)`` from the step holding ``t`` (the first, where two share it)."""

    def __init__(self, ts: Sequence[float], interpolants: Sequence[Any]) -> None:
        self.ts = np.asarray(ts, dtype=float)
        self.interpolants = list(interpolants)
        self.t_min, self.t_max = float(self.ts[0]), float(self.ts[-1])

    def _one(self, t: float) -> np.ndarray:
        k = int(np.searchsorted(self.ts, t, side="left"))
        return self.interpolants[min(max(k - 1, 0), len(self.interpolants) - 1)](t)

    def __call__(self, t: Any) -> np.ndarray:
        if np.ndim(t) == 0:
            return self._one(float(t))
        return np.column_stack([self._one(float(tt)) for tt in np.asarray(t, dtype=float)])


class ForwardJacobian:
    """The Jacobian ``d fun / d y`` (``jac(t, y)``) by forward differences, the step of each state
    ``y_j`` being ``sqrt(eps) max(|y_j|, atol_j / rtol)``; ``evaluations`` counts the calls of
    ``fun``. What :func:`simulate` gives ``Radau`` and ``BDF``: scipy's own estimate grows the step
    of a state the right-hand side does not depend on tenfold at each estimate, without bound (a
    body's position in free flight, or along a flat ground), and at a ball's first impact on the
    ground it put the ball 0.34 m off its ground table, where the contact had no counterpart, and
    the run failed."""

    def __init__(self, fun: Callable[[float, np.ndarray], np.ndarray], rtol: float, atol: float | np.ndarray) -> None:
        self.fun, self.rtol, self.atol = fun, rtol, atol
        self.evaluations = 0

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        f = self.fun(t, y)
        steps = math.sqrt(np.finfo(float).eps) * np.maximum(np.abs(y), np.asarray(self.atol) / self.rtol)
        J = np.empty((len(f), len(y)))
        for j, h in enumerate(steps):
            yj = y.copy()
            yj[j] += h
            J[:, j] = (self.fun(t, yj) - f) / (yj[j] - y[j])  # (the step as represented)
        self.evaluations += len(y) + 1
        return J
