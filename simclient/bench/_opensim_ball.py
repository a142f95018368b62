"""OpenSim 4.6's bouncing ball, the peer of ``simclient bench peers``: the model (an analytic sphere
on a half-space, Hunt-Crossley without dissipation or friction, set so that its law is ours), and
run as a script, a whole process that builds it, integrates 0.4 s and prints the ball's height:
what a user of OpenSim waits for. It imports only OpenSim, so that its process pays for nothing of
this project."""

from __future__ import annotations

import math
import sys
from typing import Any

MASS, RADIUS, GAP, X0, VX, K, T_END, G = 0.092, 0.020, 0.012, -0.03, 0.15, 5.5e9, 0.4, 9.81


def ball_model() -> tuple[Any, Any, Any]:
    """``(model, state, coordinates)``: the ball 12 mm above the floor, moving 0.15 m/s sideways.
    OpenSim combines the two geometries' stiffness k as ``k / 2^(3/2)`` and applies
    ``(4/3) k_c sqrt(R) delta^(3/2)``, so ``k = 2^(3/2) 3 K / (4 sqrt(R))`` gives our Hertz law."""
    import opensim as osim

    # no opensim.log in the working folder, and no line per integration (the Manager logs at Info)
    osim.Logger.removeFileSink()
    osim.Logger.setLevelString("Warn")
    model = osim.Model()
    model.setGravity(osim.Vec3(0, -G, 0))  # OpenSim's y is up
    ball = osim.Body("ball", MASS, osim.Vec3(0), osim.Inertia(0.4 * MASS * RADIUS**2))
    model.addBody(ball)
    model.addJoint(osim.FreeJoint("free", model.getGround(), ball))
    model.addContactGeometry(osim.ContactSphere(RADIUS, osim.Vec3(0), ball, "sphere"))
    model.addContactGeometry(osim.ContactHalfSpace(osim.Vec3(0), osim.Vec3(0, 0, -math.pi / 2), model.getGround(),
                                                   "floor"))
    hc = osim.HuntCrossleyForce()
    hc.setStiffness(2**1.5 * 3 * K / (4 * math.sqrt(RADIUS)))
    hc.setDissipation(0.0)
    hc.setStaticFriction(0.0)
    hc.setDynamicFriction(0.0)
    hc.setViscousFriction(0.0)
    hc.addGeometry("sphere")
    hc.addGeometry("floor")
    model.addForce(hc)
    state = model.initSystem()
    coords = model.getCoordinateSet()
    coords.get(3).setValue(state, X0)
    coords.get(4).setValue(state, RADIUS + GAP)
    coords.get(3).setSpeedValue(state, VX)
    return model, state, coords


def manager(model: Any, state: Any, accuracy: float) -> Any:
    """An integrator from ``state`` (time 0) at ``accuracy``, recording nothing."""
    import opensim as osim

    m = osim.Manager(model)
    m.setIntegratorAccuracy(accuracy)
    m.setRecordStatesTrajectory(False)
    state.setTime(0.0)
    m.initialize(state)
    return m


if __name__ == "__main__":  # the whole process: python _opensim_ball.py [ACCURACY]
    model, state, coords = ball_model()
    integrator = manager(model, state, float(sys.argv[1]) if len(sys.argv) > 1 else 1e-8)
    end = integrator.integrate(T_END)  # (the manager's state: the manager must outlive it)
    print(coords.get(4).getValue(end))
