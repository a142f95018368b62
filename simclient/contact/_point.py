"""Point contact between two tabulated surfaces by the common-normal conditions (geometry only).

A :class:`ContactPair` finds, for the current poses, the points ``P_i`` on surface i and ``P_j`` on
surface j where both normals are collinear with ``d = P_j - P_i`` (thesis 6.19-6.20), by a damped
Newton solve warm-started from the previous solution, or from a coarse search over the windows'
points when there is none. It returns a :class:`Contact`: geometry only; a force law
(:mod:`simclient.contact._laws`) turns it into a force, as Simbody's trackers and generators split.

Sign convention (the thesis' 2D and 3D conventions differ; this is the one used throughout):
``normal`` is the unit outward normal of surface j at ``P_j`` (global frame, pointing from j
towards i), and ``indentation = (P_j - P_i) . normal``: positive when the surfaces overlap,
negative (minus the gap) when they are apart. The indentation rate, positive while approaching,
is ``-(v_i(P_i) - v_j(P_j)) . normal``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from simclient.contact._nearest import deepest
from simclient.contact._newton import MALFORMED, ContactStatus, solve_contact, solve_contacts, solve_warm
from simclient.errors import ContactError, ParameterError, PointerError
from simclient.geometry import StorageWindow
from simclient.geometry import layout as L
from simclient.geometry.kernels import CHECK
from surfacestore.format import RecordBlock

__all__ = ["Contact", "Contacts", "ContactPair"]

_STATUSES = tuple(ContactStatus)  # a tuple lookup is ten times cheaper than ContactStatus(code)
_CONVERGED, _NEEDS_UPDATE, _LEFT_I, _LEFT_J = (
    int(s) for s in (ContactStatus.CONVERGED, ContactStatus.NEEDS_UPDATE, ContactStatus.LEFT_WINDOW_I,
                     ContactStatus.LEFT_WINDOW_J))
_CONVERGED_STATUS = ContactStatus.CONVERGED
_CHECK, _X = L.PAIR_CHECK, L.CONTACT_X
_CONTACT_SHAPE = (L.CONTACT_SIZE,)  # (a shape tuple: the cheapest np.empty)
_EVALUATIONS, _ITERATIONS = L.PAIR_EVALUATIONS, L.PAIR_ITERATIONS
_empty = np.empty
_F8, _ND = np.dtype(np.float64), np.ndarray
_MALFORMED = MALFORMED


def _poses(R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray,
           c_j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two poses as the compiled calls take them: C-contiguous float64 arrays (each itself where it
    is one), rotations 3 x 3 and positions 3-vectors; :class:`ParameterError` naming the argument
    otherwise (a compiled call would read a wrong shape's memory as the right one)."""
    out = []
    for name, a, shape in (("R_i", R_i, (3, 3)), ("c_i", c_i, (3,)), ("R_j", R_j, (3, 3)), ("c_j", c_j, (3,))):
        try:
            f = np.ascontiguousarray(a, _F8)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"contact pose {name}: not an array of numbers ({exc})") from None
        if f.shape != shape:
            raise ParameterError(f"contact pose {name}: shape {f.shape}, expected {shape}")
        out.append(f)
    return out[0], out[1], out[2], out[3]


#: most detections :meth:`ContactPair.place` makes (each moves the windows up to 8 times)
PLACE_DETECTIONS = 8
#: (rad) the largest turn of a surface between two poses of :meth:`ContactPair.place`'s continuation
PLACE_TURN = 0.2


def _vector(offset: int, doc: str) -> property:
    """A read-only 3-vector of a contact's data at ``offset``."""
    return property(lambda self: self._d[offset:offset + 3], doc=doc)


class Contact:
    """Result of a contact evaluation (global frame, SI units).

    ``status`` is a :class:`ContactStatus`; only a converged contact carries meaningful geometry
    (``left window i/j`` is reported by probes, which leave the windows in place).
    ``params`` = ``(u_i, v_i, u_j, v_j)``; ``point_i``, ``point_j`` (m); ``normal`` (unit, outward
    of surface j); ``indentation`` (m, positive when overlapping); ``residual`` (|F|, m^2 per unit
    parameter); ``normal_i`` (unit outward normal of surface i at ``point_i``); ``iterations`` (the
    solve's Newton iterations). ``data`` holds them as :mod:`simclient.geometry.layout` lays out a
    contact (``CONTACT_SIZE`` values, owned).
    """

    __slots__ = ("status", "_d")

    def __init__(self, status: ContactStatus, data: np.ndarray) -> None:
        self.status, self._d = status, data

    @property
    def iterations(self) -> int:
        return int(self._d[L.CONTACT_ITERATIONS])

    @property
    def params(self) -> np.ndarray:
        """``(u_i, v_i, u_j, v_j)`` (a copy)."""
        return self._d[_X:_X + 4].copy()

    point_i = _vector(L.OUT_PI, "The contact point on surface i (m, global).")
    point_j = _vector(L.OUT_PJ, "The contact point on surface j (m, global).")
    normal = _vector(L.OUT_N, "The unit outward normal of surface j at ``point_j`` (global).")
    normal_i = _vector(L.OUT_NI, "The unit outward normal of surface i at ``point_i`` (global).")

    @property
    def middle(self) -> np.ndarray:
        """The middle of the indentation, halfway between ``point_i`` and ``point_j`` (m, global):
        where friction acts on both bodies."""
        return 0.5 * (self._d[L.OUT_PI:L.OUT_PI + 3] + self._d[L.OUT_PJ:L.OUT_PJ + 3])

    @property
    def indentation(self) -> float:
        return float(self._d[L.OUT_DEPTH])

    @property
    def residual(self) -> float:
        return float(self._d[L.OUT_RESIDUAL])

    @property
    def converged(self) -> bool:
        return self.status == ContactStatus.CONVERGED

    def indentation_rate(self, velocity: np.ndarray) -> float:
        """Rate of indentation (m/s, positive while approaching) for the relative velocity
        ``v_i(P_i) - v_j(P_j)`` (m/s, global) of the bodies' material points at the contact."""
        n = self._d[L.OUT_N:L.OUT_N + 3]
        return -float(velocity[0] * n[0] + velocity[1] * n[1] + velocity[2] * n[2])

    def __repr__(self) -> str:
        return (f"Contact({self.status}, {self.iterations} it, indentation={self.indentation:.6e} m, "
                f"point_i={self.point_i.tolist()}, normal={self.normal.tolist()})")


class Contacts:
    """Contacts along a sequence of n poses (:meth:`ContactPair.detect_many`), as arrays: ``status``
    (n, :class:`ContactStatus` values), ``params`` (n x 4: ``u_i, v_i, u_j, v_j``), ``point_i``,
    ``point_j``, ``normal``, ``normal_i`` (n x 3, global, m) and ``indentation`` (n, m), with the
    conventions of :class:`Contact`; ``contacts[k]`` is the k-th as a :class:`Contact`."""

    def __init__(self, status: np.ndarray, data: np.ndarray) -> None:
        self.status, self._d = status, data

    params = property(lambda self: self._d[:, _X:_X + 4])
    point_i = property(lambda self: self._d[:, L.OUT_PI:L.OUT_PI + 3])
    point_j = property(lambda self: self._d[:, L.OUT_PJ:L.OUT_PJ + 3])
    normal = property(lambda self: self._d[:, L.OUT_N:L.OUT_N + 3])
    normal_i = property(lambda self: self._d[:, L.OUT_NI:L.OUT_NI + 3])
    indentation = property(lambda self: self._d[:, L.OUT_DEPTH])

    @property
    def converged(self) -> np.ndarray:
        return self.status == ContactStatus.CONVERGED

    def __len__(self) -> int:
        return len(self.status)

    def __getitem__(self, k: int) -> Contact:
        return Contact(_STATUSES[self.status[k]], self._d[k].copy())


class ContactPair:
    """Contact detection between the surfaces read by ``window_i`` and ``window_j``.

    Both windows must use the same interpolation. ``tol`` is the Newton convergence tolerance in
    grid cells; ``max_step`` the largest Newton step in cells. ``kernel`` is the compiled solve (the
    common normal of two surfaces here; of two profiles in :class:`simclient.contact.ProfilePair`),
    ``warm_kernel`` the same from the pair's warm start in one call (:meth:`detect`'s fast path).
    ``evaluations`` and ``newton_iterations`` count the pair's contact evaluations and Newton
    iterations. ``name`` (a contact model's) goes before the tables' names in messages.
    """

    kernel = staticmethod(solve_contact)
    warm_kernel = staticmethod(solve_warm)
    #: whether :meth:`detect_many` may solve poses in one compiled loop (a pair whose detections do
    #: more than the kernel, such as an atlas's, solves them one by one)
    batched = True

    def __init__(self, window_i: StorageWindow, window_j: StorageWindow, *, max_iter: int = 30,
                 tol: float = 1e-9, max_step: float = 4.0, coarse_points: int = 64, name: str | None = None) -> None:
        self.name, self.wi, self.wj = name, window_i, window_j
        self.label = self._label()
        if window_i.mode != window_j.mode:
            raise ParameterError(f"contact {self.label}: both windows must use the same "
                                 f"interpolation, not {window_i.interpolation} and {window_j.interpolation}")
        self.max_iter, self.tol, self.max_step = max_iter, tol, max_step
        self.coarse_points = coarse_points
        # the pair's state in two arrays, so that a warm-started evaluation is one cheap compiled call:
        # the scratch space (NaN: the solve remembers nothing yet), the warm start (NaN: none) and flts
        self.work = np.full(L.PAIR_WORK_SIZE, np.nan)
        self.flts = self.work[L.PAIR_FLTS:L.PAIR_FLTS + L.PAIR_FLTS_SIZE]
        self.ints = np.zeros(L.PAIR_INTS_SIZE, dtype=np.int64)
        self.ints[[L.PAIR_MAX_ITER, L.PAIR_CHECK]] = (max_iter, 1)
        self.flts[:] = 0.0
        self.flts[[L.PAIR_TOL, L.PAIR_MAX_STEP]] = (tol, max_step)
        self._vi = self._vj = -1  # the windows' versions the kernel's parameters were copied at
        # the compiled calls take the pair's arrays by address: the pair owns ints and work for life,
        # and refresh() copies its windows' buffers' addresses each time a window changes
        self.ints[L.PAIR_WORK] = self.work.ctypes.data
        self.refresh()
        self._address = self.address
        self._solve_warm = self.warm_kernel  # (an instance attribute: the cheapest look-up)
        self._followed: tuple[float, np.ndarray] | None = None  # (t, parameters) of the last follow()
        # the last converged parameters of follow() or place() and the surfaces' poses there
        self._placed: tuple[np.ndarray, tuple[np.ndarray, ...]] | None = None
        self._start: tuple[np.ndarray | None, RecordBlock | None, RecordBlock | None] | None = None  # (start())

    def _label(self) -> str:
        """What messages call the contact: its tables, after its model's name where it has one (two
        contacts may join the same tables)."""
        tables = f"{self.wi.name} / {self.wj.name}"
        return tables if self.name is None else f"{self.name} ({tables})"

    @property
    def x(self) -> np.ndarray | None:
        """The last converged ``(u_i, v_i, u_j, v_j)``, the next solve's warm start (a copy), or None."""
        x = self.work[L.PAIR_X:L.PAIR_X + 4]
        return None if np.isnan(x[0]) else x.copy()

    @x.setter
    def x(self, value: np.ndarray | None) -> None:
        self.work[L.PAIR_X:L.PAIR_X + 4] = np.nan if value is None else value

    def follow(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, t: float,
               ahead: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]] | None = None
               ) -> float:
        """Between contacts, at an accepted state of an integration (time ``t``, s; poses as for
        :meth:`detect`): the thesis' update rule for the common normal's points, so that the
        windows follow the bodies while no force needs them (a probe moves no window). Returns the
        time (s) those points would take to leave a window at the rates their parameters changed
        since the last call; inf where nothing bounds it (no common normal found, at rest, heading
        for the table's own edge). Where no earlier call gives the rates (the first call after a
        start or a contact), they come from a probe at ``ahead()``, the poses a short time ``dt``
        (s) later as ``(R_i, c_i, R_j, c_j, dt)`` (the windows and the warm start stay; called only
        then); without it, from nothing: inf."""
        k = self.detect(R_i, c_i, R_j, c_j)
        last, self._followed = self._followed, (t, k.params.copy()) if k.converged else None
        if self._followed is None:
            return math.inf
        self._remember(k, R_i, c_i, R_j, c_j)
        x = self._followed[1]
        if last is not None and t > last[0]:
            rate = (x - last[1]) / (t - last[0])
        elif ahead is not None:
            Ri, ci, Rj, cj, dt = ahead()
            probe = self.detect(Ri, ci, Rj, cj, update_windows=False)
            self.x = x
            if not (probe.converged or probe.status.left_window):
                return math.inf
            rate = (probe.params - x) / dt
        else:
            return math.inf
        if last is None and (self.wi.prefetch or self.wj.prefetch):  # (where the points head, for fetching ahead)
            self.wi.head(rate[0], rate[1])
            self.wj.head(rate[2], rate[3])
        return min(self.wi.time_to_edge(x[0], x[1], rate[0], rate[1]),
                   self.wj.time_to_edge(x[2], x[3], rate[2], rate[3]))

    def describe(self, status: ContactStatus, x: np.ndarray | None = None) -> str:
        """``status`` as a message gives it: a table that was left with its name and parameter ranges
        (a table wraps only where it is periodic in v: past the longitude seam of a sphere built
        without ``periodic_v`` is off its table too). With the last iterate ``x = (u_i, v_i, u_j,
        v_j)``, a solve that failed otherwise with a point within two grid cells of a table's edge
        says so too (a ball rolling off the ground's side: its iterates wander on the ball)."""
        if status in (ContactStatus.LEFT_TABLE_I, ContactStatus.LEFT_TABLE_J):
            return f"{status} ({self._ranges(self.wi if status == ContactStatus.LEFT_TABLE_I else self.wj)})"
        if x is None or status in (ContactStatus.CONVERGED, ContactStatus.SINGULAR_POINT_I,
                                   ContactStatus.SINGULAR_POINT_J):  # (a pole says what it is)
            return str(status)
        for w, (u, v) in ((self.wi, x[0:2]), (self.wj, x[2:4])):
            h = w.header
            near_u = min(u - h.u0, h.u1 - u) < 2 * h.du
            if near_u or (not h.periodic_v and min(v - h.v0, h.v1 - v) < 2 * h.dv):
                return f"{status}, at the edge of a table ({self._ranges(w)})"
        return str(status)

    @staticmethod
    def _ranges(w: StorageWindow) -> str:
        h = w.header
        return (f"{w.name}: u in [{h.u0:.6g}, {h.u1:.6g}], v in [{h.v0:.6g}, {h.v1:.6g}]; past an edge, "
                "or a closed surface's seam, which only a table built periodic in v wraps")

    def track(self) -> None:
        """At an accepted state of an integration: tell windows that fetch ahead where the last
        converged contact point is (:meth:`StorageWindow.track`); nothing for windows that do not."""
        wi, wj = self.wi, self.wj
        if wi.prefetch or wj.prefetch:  # (at every accepted step: kept to a few hundred ns)
            ui, vi, uj, vj = self.work[L.PAIR_X:L.PAIR_X + 4].tolist()
            if ui == ui:  # (not NaN: a point converged)
                wi.track(ui, vi)
                wj.track(uj, vj)

    def forget(self) -> None:
        """Start :meth:`follow`'s rates afresh (the contact closed, or the bodies moved apart)."""
        self._followed = None

    def place(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray,
              strict: bool = False) -> Contact:
        """:meth:`detect`, again from where it stopped while its iterate leaves a window: the windows
        to the contact point of a pose far from the last one (a detection moves them up to 8 times,
        some records each, and starts from the last converged point). Where that does not converge
        (a body turned by radians since: from the far side of a ball, Newton's iterates head for a
        pole), by continuation: from the poses of the last converged follow or placement to these,
        the surfaces turned :data:`PLACE_TURN` at most and moved in proportion at each step, each
        step's solution the next one's start. ``strict``: a pose without a contact point at the
        end raises, as :meth:`detect` does."""
        k = self._place(R_i, c_i, R_j, c_j)
        if not k.converged and self._placed is not None:
            k = self._continue(R_i, c_i, R_j, c_j)
        if k.converged:
            self._remember(k, R_i, c_i, R_j, c_j)
        elif strict:
            k = self.detect(R_i, c_i, R_j, c_j, strict=True)  # (once more, raising where it fails again)
        return k

    def _place(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> Contact:
        for _ in range(PLACE_DETECTIONS):
            k = self.detect(R_i, c_i, R_j, c_j)
            if not k.status.left_window:
                break
            self.x = k.params
        return k

    def _continue(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> Contact:
        """:meth:`place`'s continuation from the last converged poses to these."""
        assert self._placed is not None
        from scipy.spatial.transform import Rotation  # (a rare path: scipy only here)

        x0, (Ri0, ci0, Rj0, cj0) = self._placed
        turn_i = Rotation.from_matrix(R_i @ Ri0.T).as_rotvec()
        turn_j = Rotation.from_matrix(R_j @ Rj0.T).as_rotvec()
        n = max(1, math.ceil(max(np.linalg.norm(turn_i), np.linalg.norm(turn_j)) / PLACE_TURN))
        self.x = x0
        for s in np.arange(1, n + 1) / n:
            k = self._place(Rotation.from_rotvec(s * turn_i).as_matrix() @ Ri0, ci0 + s * (c_i - ci0),
                            Rotation.from_rotvec(s * turn_j).as_matrix() @ Rj0, cj0 + s * (c_j - cj0))
            if not k.converged:
                break
        return self._place(R_i, c_i, R_j, c_j) if k.converged else k  # (the poses themselves, unrounded)

    def _remember(self, k: Contact, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> None:
        self._placed = (k.params.copy(), tuple(np.array(a, float) for a in (R_i, c_i, R_j, c_j)))

    def start(self) -> None:
        """A run's start: the first call keeps the pair's warm start and windows' placements, every
        later one goes back to them, with nothing followed (a system simulated again starts as it
        did the first time, not where its last run ended)."""
        if self._start is None:
            self._start = self.checkpoint()
        self.restore(self._start)
        self.forget()

    def checkpoint(self) -> tuple[np.ndarray | None, RecordBlock | None, RecordBlock | None]:
        """The pair's warm start and its windows' placements, for :meth:`restore`."""
        return self.x, self.wi.block, self.wj.block

    def restore(self, state: tuple[np.ndarray | None, RecordBlock | None, RecordBlock | None]) -> None:
        """Go back to a :meth:`checkpoint`: an integrator retrying from an accepted state must
        not start from the warm start and windows a failed trial far from it left behind."""
        x, bi, bj = state
        self.x = x
        for window, block in ((self.wi, bi), (self.wj, bj)):
            if block is not None:
                window.restore(block)

    @property
    def evaluations(self) -> int:
        return int(self.ints[_EVALUATIONS])

    @property
    def newton_iterations(self) -> int:
        return int(self.ints[_ITERATIONS])

    @property
    def address(self) -> int:
        """The address of the pair's ``ints``, by which compiled calls take all its arrays (both
        windows' buffers, its work; see :mod:`simclient.geometry.layout`)."""
        return int(self.ints.ctypes.data)

    def refresh(self) -> None:
        """Copy the windows' current placement, parameters and buffers' addresses into the
        kernels' arrays: the one place that does, called whenever a window has changed (a move, a
        prefetch, a new buffer) or the pair reads another window (an atlas's chart switch)."""
        wi, wj = self.wi, self.wj
        self.ints[L.PAIR_IP_I:L.PAIR_IP_I + L.IP_SIZE] = wi.ip
        self.ints[L.PAIR_IP_J:L.PAIR_IP_J + L.IP_SIZE] = wj.ip
        self.flts[L.PAIR_FP_I:L.PAIR_FP_I + L.FP_SIZE] = wi.fp
        self.flts[L.PAIR_FP_J:L.PAIR_FP_J + L.FP_SIZE] = wj.fp
        self.flts[L.PAIR_QUIET_I:L.PAIR_QUIET_I + 4] = wi.quiet
        self.flts[L.PAIR_QUIET_J:L.PAIR_QUIET_J + 4] = wj.quiet
        self.ints[L.PAIR_BUFFER_I] = wi.buffer.ctypes.data
        self.ints[L.PAIR_BUFFER_J] = wj.buffer.ctypes.data
        self._vi, self._vj = wi.version, wj.version

    def synced(self) -> bool:
        """Whether the kernels' arrays hold the windows' current state (else :meth:`refresh`)."""
        return self.wi.version == self._vi and self.wj.version == self._vj

    def check_pointers(self) -> None:
        """(``SIMCLIENT_CHECK_POINTERS=1``: before every compiled call.) Each address the pair's
        ``ints`` holds against the array it stands for, and the buffers' shapes against the windows'
        parameters: :class:`simclient.errors.PointerError` naming the pair and the window where one
        is stale (a kernel would read memory that is no longer the window's)."""
        for which, window, slot, ip in (("i", self.wi, L.PAIR_BUFFER_I, L.PAIR_IP_I),
                                         ("j", self.wj, L.PAIR_BUFFER_J, L.PAIR_IP_J)):
            held, actual = int(self.ints[slot]), int(window.buffer.ctypes.data)
            shape = (int(self.ints[ip + L.IP_BU]), int(self.ints[ip + L.IP_BV]))
            if held != actual or shape != window.buffer.shape[:2]:
                raise PointerError(f"contact {self.label}: window {which} ({window.name}): the pair holds buffer "
                                   f"{held:#x} of {shape[0]} x {shape[1]} points, the window's is {actual:#x} of "
                                   f"{window.buffer.shape[0]} x {window.buffer.shape[1]} (refresh() was not called "
                                   "after the window changed)")
        if int(self.ints[L.PAIR_WORK]) != int(self.work.ctypes.data):
            raise PointerError(f"contact {self.label}: the pair's work address is stale")

    def _coarse(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> tuple[np.ndarray, float]:
        """For every point of window i the nearest point of window j: the pair of largest
        indentation along j's normal, as ``(u_i, v_i, u_j, v_j)``, and that indentation (m)."""
        return self._deepest(self.wi.points(self.coarse_points).reshape(-1, L.NFIELDS), R_i, c_i, R_j, c_j)

    def _deepest(self, pi: np.ndarray, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray,
                 c_j: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`_coarse` for the points ``pi`` of surface i (rows of a table's 14 values)."""
        pj = np.ascontiguousarray(self.wj.points(self.coarse_points).reshape(-1, L.NFIELDS))
        pi = np.ascontiguousarray(pi)
        pi, pj = pi[np.isfinite(pi[:, 2:5]).all(axis=1)], pj[np.isfinite(pj[:, 2:8]).all(axis=1)]  # (unfilled points)
        f8 = _poses(R_i, c_i, R_j, c_j)
        a, b, depth = deepest(pi, f8[0], f8[1], pj, f8[2], f8[3]) if len(pi) and len(pj) else (-1, -1, math.nan)
        if a < 0:
            raise ContactError(f"contact {self.label}: poses that put the surfaces' points at "
                               f"non-finite coordinates or distances (c_i = {np.asarray(c_i).tolist()} m, "
                               f"c_j = {np.asarray(c_j).tolist()} m)")
        return np.array([pi[a, 0], pi[a, 1], pj[b, 0], pj[b, 1]]), float(depth)

    def coarse_guess(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> np.ndarray:
        """Initial (u_i, v_i, u_j, v_j) from the windows' points (see :meth:`coarse_depth`)."""
        return self._coarse(R_i, c_i, R_j, c_j)[0]

    def coarse_depth(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray) -> float:
        """The largest indentation (m, negative: minus a gap) between the windows' points, each
        point of i against its nearest point of j: an estimate where the common normal has no
        solution on the windows (bodies far apart)."""
        return self._coarse(R_i, c_i, R_j, c_j)[1]

    def detect(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray,
               strict: bool = False, update_windows: bool = True) -> Contact:
        """Contact for surface poses ``(R, c)`` (a table point ``s`` is at ``c + R s``).

        Windows are updated by the thesis' rule for the initial guess, and again whenever a Newton
        iterate leaves a window. With ``update_windows=False`` (a probe) the windows stay where they
        are and an iterate leaving one ends the solve with status ``left window i``/``j`` (the
        warm start is kept). With ``strict``, a failure raises :class:`ContactError`.
        """
        # the hot path of every integrator stage: one compiled call from the warm start, the
        # general path only where it does not converge there (windows to move, a restart, failures)
        data = _empty(_CONTACT_SHAPE)
        # the windows unchanged since the pair last copied their addresses (:meth:`synced`), and the
        # poses' types, dtypes and ranks checked here (a compiled entry cannot: it would read another
        # dtype's memory as float64, or write a higher rank's shape past its record), their shapes
        # and layouts in the call (cheaper there than normalising here)
        if (self.wi.version == self._vi and self.wj.version == self._vj
                and _ND is type(R_i) is type(c_i) is type(R_j) is type(c_j) and R_i.dtype is _F8 is c_i.dtype
                and R_j.dtype is _F8 is c_j.dtype and R_i.ndim == 2 == R_j.ndim and c_i.ndim == 1 == c_j.ndim):
            if CHECK:
                self.check_pointers()
            code = self._solve_warm(self._address, R_i, c_i, R_j, c_j, data, update_windows)
            if code == _CONVERGED:
                return Contact(_CONVERGED_STATUS, data)
            if code == _MALFORMED:
                code = -1
        else:
            code = -1
            if not self.synced():
                self.refresh()
        return self._solve(*_poses(R_i, c_i, R_j, c_j), strict, update_windows, code, data)

    def _solve(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, strict: bool,
               update_windows: bool, code: int, data: np.ndarray) -> Contact:
        """:meth:`detect`'s general path, after the warm-started solve's outcome ``code`` (its
        parameters and iterations in ``data``), or from the start where ``code`` is -1 (nothing
        tried yet)."""
        wi, wj, ints = self.wi, self.wj, self.ints
        it_total = int(data[L.CONTACT_ITERATIONS]) if code >= 0 else 0
        x = data[_X:_X + 4]
        warm = not np.isnan(self.work[L.PAIR_X])
        if code < 0:
            x[:] = self.work[L.PAIR_X:L.PAIR_X + 4] if warm else self.coarse_guess(R_i, c_i, R_j, c_j)
            ints[_EVALUATIONS] += 1
            ints[_CHECK] = 1 if update_windows else 0
        for _ in range(8):
            if code < 0:
                code, it = self.kernel(wi.buffer, wj.buffer, ints, self.flts, R_i, c_i, R_j, c_j, x, self.work)
                it_total += it
                ints[_ITERATIONS] += it
            if code == _CONVERGED:
                break
            last = code  # reported if the rounds run out on a window move or a restart
            left = code == _LEFT_I or code == _LEFT_J
            if code == _NEEDS_UPDATE or (update_windows and left):
                # the thesis' rule for the guess (or the iterate that left a window), then solve
                # again without the fast-path check (the rule may legitimately keep the window)
                if wi.update(x[0], x[1]) | wj.update(x[2], x[3]):
                    self.refresh()
                ints[_CHECK] = 0
                code = -1
                continue
            if warm and not left:
                # the warm start was too far (bodies moved a long way since, e.g. an integrator's
                # trial step): restart once from a coarse search over the windows' points
                warm = False
                x[:] = self.coarse_guess(R_i, c_i, R_j, c_j)
                code = -1
                continue
            break
        if code < 0:  # every round moved a window (or restarted) and the solve failed again
            code = last
        data[:L.OUT_SIZE] = self.work[:L.OUT_SIZE]
        if code == _CONVERGED:
            self.work[L.PAIR_X:L.PAIR_X + 4] = x
        data[L.CONTACT_ITERATIONS] = it_total
        contact = Contact(_STATUSES[code], data)
        if code != _CONVERGED and strict:
            raise ContactError(f"contact {self.label}: {self.describe(contact.status, x)} after {it_total} "
                               f"iterations at (u_i, v_i, u_j, v_j) = {x.tolist()}, |F| = {contact.residual:.3e}")
        return contact

    def detect_many(self, R_i: np.ndarray, c_i: np.ndarray, R_j: np.ndarray, c_j: np.ndarray, strict: bool = False,
                    update_windows: bool = True) -> Contacts:
        """:meth:`detect` along a sequence of poses in one call (a trajectory to analyse, a sweep
        of placements): ``R`` stacks (n x 3 x 3) or one matrix, ``c`` stacks (n x 3) or one vector,
        each pose warm-started from the last converged one. The poses run in one compiled loop;
        a pose that needs a window moved, or whose solve does not converge from its warm start,
        goes through :meth:`place` (:meth:`detect` without ``update_windows``; same results, same
        errors with ``strict``)."""
        n = max(len(a) if np.ndim(a) == nd else 1 for a, nd in ((R_i, 3), (c_i, 2), (R_j, 3), (c_j, 2)))
        # writable copies: numba compiles read-only arrays (a broadcast's view) as other types
        Ri, Rj = (np.array(np.broadcast_to(R, (n, 3, 3)), dtype=float, order="C") for R in (R_i, R_j))
        ci, cj = (np.array(np.broadcast_to(c, (n, 3)), dtype=float, order="C") for c in (c_i, c_j))
        status, data = np.zeros(n, dtype=np.int64), np.zeros((n, L.CONTACT_SIZE))
        k = 0
        while k < n:
            x = self.x
            if x is not None and self.batched:
                if not self.synced():
                    self.refresh()
                if CHECK:
                    self.check_pointers()
                self.ints[_CHECK] = 1 if update_windows else 0
                k = solve_contacts(self.address, Ri, ci, Rj, cj, k, status, data)
                if k == n:
                    break
            if update_windows:  # (the first pose may be far from the windows: after a run, its start)
                c = self.place(Ri[k], ci[k], Rj[k], cj[k], strict=strict)
            else:
                c = self.detect(Ri[k], ci[k], Rj[k], cj[k], strict=strict, update_windows=False)
            status[k], data[k] = int(c.status), c._d
            k += 1
        return Contacts(status, data)
