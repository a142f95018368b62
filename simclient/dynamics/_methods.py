"""The integration methods by name (no import of numpy or scipy: the command line lists them).

:data:`METHODS` names each method and where it comes from:

- ``DOP853-jit``: :class:`simclient.dynamics.Dop853`, the project's Dormand-Prince 8(5,3) (the same
  steps as scipy's ``DOP853``), whose steps run compiled, every stage included, for a system that
  has a compiled form (:func:`simclient.dynamics.compile_system`);
- ``rk4``: :class:`simclient.dynamics.RK4`, the thesis' classical fixed-step Runge-Kutta;
- ``RK23``, ``RK45``, ``DOP853``, ``Radau``, ``BDF``, ``LSODA``: scipy's ``solve_ivp`` methods,
  imported only when asked for.

A stepper advances an ODE one step at a time with scipy's ``OdeSolver`` protocol (``step()``,
``status``, ``t``, ``t_old``, ``y``, ``dense_output()``, ``nfev``, a writable ``max_step``), so
:func:`simclient.dynamics.simulate` drives scipy's solvers and the project's alike. An unknown
method is a :class:`simclient.errors.ParameterError` listing the methods.
"""

from __future__ import annotations

import importlib

from simclient.errors import ParameterError

__all__ = ["METHODS", "solver_class"]

#: the integration methods by name: where each comes from
METHODS: dict[str, str] = {
    "DOP853-jit": "simclient.dynamics:Dop853",
    "rk4": "simclient.dynamics:RK4",
    "RK23": "scipy.integrate:RK23", "RK45": "scipy.integrate:RK45", "DOP853": "scipy.integrate:DOP853",
    "Radau": "scipy.integrate:Radau", "BDF": "scipy.integrate:BDF", "LSODA": "scipy.integrate:LSODA",
}


def solver_class(method: str | type) -> type:
    """The stepper class of ``method``: a name in :data:`METHODS`, or a class itself (a scipy
    ``OdeSolver`` subclass or a :class:`Stepper`)."""
    if isinstance(method, type):
        return method
    where = METHODS.get(method) if isinstance(method, str) else None
    if where is None:
        raise ParameterError(f"unknown integration method {method!r}; choose one of {', '.join(METHODS)}")
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)
