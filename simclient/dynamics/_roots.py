"""Scalar root finding and minimization by Brent's methods, for the integrators' events.

:func:`find_root` is Brent's zero finder (R. P. Brent, *Algorithms for Minimization without
Derivatives*, Prentice-Hall 1973, chapter 4, procedure *zero*): bisection, secant and inverse
quadratic interpolation on a bracket, never slower than bisection. :func:`find_minimum` is his
minimizer on an interval (chapter 5, procedure *localmin*): golden sections and parabolic steps.
Here rather than scipy's ``brentq`` and ``fminbound`` so that a run needs no ``scipy.optimize``
(a third of a second to import); tested against them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["find_root", "find_minimum"]

_EPS = 2.220446049250313e-16
_GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))  # the golden section's smaller part


def find_root(f: Callable[[float], float], a: float, b: float, xtol: float = 2e-12, rtol: float = 4 * _EPS,
              maxiter: int = 200) -> float:
    """A zero of ``f`` in ``[a, b]``, where ``f(a)`` and ``f(b)`` differ in sign (or one is zero),
    to within ``xtol + rtol |x|``. ``ValueError`` for a bracket without a sign change;
    ``RuntimeError`` after ``maxiter`` evaluations."""
    fa, fb = f(a), f(b)
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if (fa > 0.0) == (fb > 0.0):
        raise ValueError(f"find_root: f({a}) = {fa} and f({b}) = {fb} have the same sign")
    c, fc = a, fa  # b is the best estimate, c the last point with the other sign
    d = e = b - a
    for _ in range(maxiter):
        if (fb > 0.0) == (fc > 0.0):
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 0.5 * (xtol + rtol * abs(b))
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:  # secant
                p, q = 2.0 * m * s, 1.0 - s
            else:  # inverse quadratic interpolation
                q, r = fa / fc, fb / fc
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            else:
                p = -p
            if 2.0 * p < min(3.0 * m * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q
            else:
                d = e = m
        else:
            d = e = m
        a, fa = b, fb
        b += d if abs(d) > tol else math.copysign(tol, m)
        fb = f(b)
    raise RuntimeError(f"find_root: no convergence in {maxiter} evaluations on [{a}, {b}]")


def find_minimum(f: Callable[[float], float], a: float, b: float, xatol: float = 1e-5,
                 maxiter: int = 500) -> tuple[float, float]:
    """A local minimum of ``f`` on ``[a, b]``: ``(x, f(x))``, x to within about
    ``xatol + sqrt(eps) |x|``."""
    x = w = v = a + _GOLDEN * (b - a)
    fx = fw = fv = f(x)
    d = e = 0.0
    for _ in range(maxiter):
        m = 0.5 * (a + b)
        tol1 = math.sqrt(_EPS) * abs(x) + xatol / 3.0
        tol2 = 2.0 * tol1
        if abs(x - m) <= tol2 - 0.5 * (b - a):
            break
        golden = True
        if abs(e) > tol1:  # a parabola through x, w and v
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r, e = e, d
            if abs(p) < abs(0.5 * q * r) and q * (a - x) < p < q * (b - x):
                d = p / q
                u = x + d
                if u - a < tol2 or b - u < tol2:
                    d = tol1 if x < m else -tol1
                golden = False
        if golden:
            e = (b - x) if x < m else (a - x)
            d = _GOLDEN * e
        u = x + (d if abs(d) >= tol1 else math.copysign(tol1, d))
        fu = f(u)
        if fu <= fx:
            if u < x:
                b = x
            else:
                a = x
            v, w, x = w, x, u
            fv, fw, fx = fw, fx, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, w = w, u
                fv, fw = fw, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
    return x, fx
