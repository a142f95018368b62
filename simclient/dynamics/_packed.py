"""A system packed for the compiled kernels, and its compiled right-hand side.

:func:`pack_system` is the one function that turns a :class:`MultibodySystem` (through its public
interface: bodies, gravity, contacts with their laws, frictions, surfaces and pairs, ligaments)
into the arrays :mod:`simclient.geometry.layout` describes. :func:`compile_system` gives a system's
:class:`CompiledSystem` (its ``rhs(t, y)`` and ``gap(contact, y)`` compiled), or says why it has
none: the compiled path holds free bodies, gravity, point contacts (:class:`ContactPair`,
:class:`AtlasPair`) whose laws have a compiled form (:attr:`ForceLaw.packed`), and ligaments with
packed laws. Systems with anything else (other loads, constraints, laws with internal states,
element or profile contacts) run the Python right-hand side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simclient.contact import AtlasPair, ContactPair
from simclient.dynamics._bodies import Body
from simclient.dynamics._compiled import PROBE_FAILED, ligament_history, probe, system_rates
from simclient.dynamics._loads import Ligament
from simclient.dynamics._system import MultibodySystem, pack_bodies
from simclient.errors import ParameterError
from simclient.geometry import layout as L
from simclient.geometry.kernels import CHECK

__all__ = ["SystemPack", "pack_system", "CompiledSystem", "compile_system", "gap_probe", "ligament_forces"]


@dataclass
class SystemPack:
    """A system's arrays for the compiled kernels (:mod:`simclient.geometry.layout`): ``bodies``,
    ``contact_i``, ``contact_f``, ``ligament_i``, ``ligament_f``; :attr:`arrays` is the tuple the
    kernels take. The pack has its own pose and force scratch (the Python system's stay as they are)."""

    bodies: np.ndarray
    contact_i: np.ndarray
    contact_f: np.ndarray
    ligament_i: np.ndarray
    ligament_f: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.bodies, self.contact_i, self.contact_f, self.ligament_i, self.ligament_f


def _compilable(load: Any) -> bool:
    """A load with a compiled form: a ligament between spatial bodies with a packed law."""
    return (isinstance(load, Ligament) and isinstance(load.body_a, Body) and isinstance(load.body_b, Body)
            and getattr(load.law, "packed", None) is not None)


def _pack_ligaments(system: MultibodySystem, ligaments: Sequence[Ligament]) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``ligaments`` (of ``system``'s bodies, with packed laws): integers, floats."""
    li, lf = np.zeros((len(ligaments), L.LI_SIZE), dtype=np.int64), np.zeros((len(ligaments), L.LF_SIZE))
    for m, lig in enumerate(ligaments):
        kind, params = lig.law.packed  # type: ignore[attr-defined]
        li[m] = (system.body_index(lig.body_a), system.body_index(lig.body_b), kind, lig.tension_only)
        lf[m, L.LF_POINT_A:L.LF_POINT_A + 3] = lig.point_a
        lf[m, L.LF_POINT_B:L.LF_POINT_B + 3] = lig.point_b
        lf[m, L.LF_LAW:L.LF_LAW + len(params)] = params
        lf[m, L.LF_DAMPING] = lig.damping
    return li, lf


def pack_system(system: MultibodySystem, ligaments: Sequence[Ligament] | None = None) -> SystemPack:
    """``system`` packed: its bodies (:func:`pack_bodies`), its point contacts (each with a
    compiled law) and its ``ligaments`` (default: its loads, which must all be ligaments with packed
    laws). Contacts start apart (:meth:`CompiledSystem.load` copies their modes in)."""
    ci = np.zeros((len(system.contacts), L.CI_SIZE), dtype=np.int64)
    cf = np.zeros((len(system.contacts), L.CF_SIZE))
    for k, c in enumerate(system.contacts):
        kind, params = c.law.packed  # type: ignore[misc]  # (compile_system checked it has one)
        ci[k, [L.CI_BODY_I, L.CI_BODY_J, L.CI_LAW]] = (system.body_index(c.i.body), system.body_index(c.j.body), kind)
        ci[k, L.CI_PAIR] = c.pair.address  # type: ignore[union-attr]
        cf[k, L.CF_LAW:L.CF_LAW + len(params)] = params
        cf[k, L.CF_OFFSET_I:L.CF_OFFSET_I + 3] = c.i.offset
        cf[k, L.CF_ROTATION_I:L.CF_ROTATION_I + 9] = np.asarray(c.i.rotation, float).ravel()
        cf[k, L.CF_OFFSET_J:L.CF_OFFSET_J + 3] = c.j.offset
        cf[k, L.CF_ROTATION_J:L.CF_ROTATION_J + 9] = np.asarray(c.j.rotation, float).ravel()
        if c.friction is not None:
            ci[k, L.CI_FRICTION] = 1
            cf[k, L.CF_FRICTION:L.CF_FRICTION + L.FRICTION_PARAMS_SIZE] = c.friction.packed
    li, lf = _pack_ligaments(system, system.loads if ligaments is None else ligaments)  # type: ignore[arg-type]
    return SystemPack(pack_bodies(system.bodies, system.gravity, system.state_index), ci, cf, li, lf)


class CompiledSystem:
    """The compiled form of a :class:`MultibodySystem`: its :class:`SystemPack`, kept in step with the
    Python contacts (modes, impact velocities; the pairs' windows refreshed where they moved)."""

    def __init__(self, system: MultibodySystem) -> None:
        self.system = system
        self.pack = pack_system(system)
        self.index = {id(c): k for k, c in enumerate(system.contacts)}
        self.pairs: list[ContactPair] = [c.pair for c in system.contacts]  # type: ignore[misc]
        self.atlases = [(k, c, c.pair) for k, c in enumerate(system.contacts) if isinstance(c.pair, AtlasPair)]
        self.stage_y = np.zeros(len(system.initial_state()))

    def load(self) -> None:
        """The Python side's current state into the arrays: contact modes and impact velocities, and
        each pair refreshed where a window moved or an atlas changed its chart."""
        ci, cf = self.pack.contact_i, self.pack.contact_f
        for k, c in enumerate(self.system.contacts):
            ci[k, L.CI_ACTIVE] = c.active
            cf[k, L.CF_IMPACT] = c.impact_velocity
            pair = self.pairs[k]
            if not pair.synced():
                pair.refresh()
            if CHECK:
                pair.check_pointers()

    def rechart(self, y: np.ndarray) -> None:
        """At an accepted state: each contact on an atlas whose point has come within its margin of
        its chart's edge detected in Python, which moves it to another chart (the compiled stages
        read one table a contact and leave the choice to the accepted states; a chart's margin is
        far more than a step's travel)."""
        for _, c, p in self.atlases:
            x = p.x
            if c.active and x is not None and not p.inside(x):
                self.system.set_state(y)
                self.system.detect(c)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """The system's right-hand side (:meth:`MultibodySystem.rhs`), compiled; the Python one
        where a contact needs it (a window to move, a failure to report)."""
        self.load()
        dy = np.empty(len(y))
        failed = system_rates(t, np.ascontiguousarray(y, dtype=float), dy, self.pack.arrays)
        return self.system.rhs(t, y) if failed >= 0 else dy

    def gap(self, c: Any, y: np.ndarray) -> float:
        """:meth:`MultibodySystem.gap` of contact ``c`` at state ``y`` (m), compiled where the probe
        converges or leaves a window; the Python probe otherwise (coarse restarts, bounding
        volumes, failures)."""
        if c.pair.x is not None:
            self.load()
            status, depth = probe(np.ascontiguousarray(y, dtype=float), self.index[id(c)], self.pack.arrays)
            if status != PROBE_FAILED:  # (converged, or the gap at a window's edge)
                return -depth
        self.system.set_state(y)
        return self.system.gap(c)


def compile_system(system: Any) -> tuple[CompiledSystem | None, str]:
    """The compiled form of ``system`` and ``""``, or None and the reason it has none (see the
    module's docstring). The compiled form offers ``rhs(t, y)`` and ``gap(contact, y)``, the
    system's own evaluated compiled."""
    if not isinstance(system, MultibodySystem):
        return None, f"{type(system).__name__} is not a MultibodySystem"
    if system.constraints:
        return None, "the system has constraints"
    for load in system.loads:
        if not _compilable(load):
            return None, f"the load {load!r} has no compiled form (only ligaments with packed laws have)"
    for c in system.contacts:
        if type(c.pair) not in (ContactPair, AtlasPair):
            return None, f"contact {c.name}: its {type(c.pair).__name__} has no compiled form (a plain ContactPair has)"
        if c.law.n_states or c.law.packed is None:
            return None, f"contact {c.name}: the law {c.law.name} has no compiled form"
    return CompiledSystem(system), ""


def gap_probe(system: Any, compiled: CompiledSystem | None = None) -> Callable[[Any, np.ndarray], float]:
    """``gap(contact, y)``: the signed gap (m) of a contact of ``system`` at state ``y`` (see
    :meth:`MultibodySystem.gap`), by the ``compiled`` system (:func:`compile_system`) when given."""
    if compiled is not None:
        return compiled.gap

    def gap(c: Any, y: np.ndarray) -> float:
        system.set_state(y)
        return float(system.gap(c))
    return gap


def ligament_forces(system: MultibodySystem, ligaments: Sequence[Ligament], Y: np.ndarray) -> np.ndarray:
    """Tensions (N, pulling the insertions together; shape ``(len(Y[0]), len(ligaments))``) of
    ``ligaments`` at each state ``Y[:, n]`` of ``system`` (a history from a result's dense output),
    in one compiled loop (:meth:`Ligament.state`'s force). The ligaments join the system's bodies
    (spatial) and have packed laws."""
    for lig in ligaments:
        if not _compilable(lig):
            raise ParameterError(f"ligament {lig.name}: only spatial ligaments with packed laws have a compiled form")
    pack = pack_system(system, ligaments)
    out = np.empty((Y.shape[1], len(ligaments)))
    ligament_history(np.ascontiguousarray(Y, dtype=float), pack.arrays, out)
    return out
