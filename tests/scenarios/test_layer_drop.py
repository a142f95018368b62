"""``simclient run layer-drop``: a ball dropped on an elastic or viscoelastic layer (the sample
sphere, R = 20 mm, 10 g at 0.03 m/s, on a 5 mm layer, E = 10 MPa, nu = 0.3), against the closed
forms of the paraboloid's foundation ``F = k d^2``, ``k = pi K R / h``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_cli
from scipy.integrate import simpson

from simclient.io import open_surface
from simclient.scenarios import locate
from simclient.scenarios.layer_drop import LayerDropParams, LayerDropScenario, layer_drop
from simclient.scenarios import save_outputs


def _drop(tables, out=None, progress=None, **params):
    sphere, plane = (open_surface(locate(name, tables=tables)) for name in ("ef_sphere", "ef_layer"))
    return save_outputs(layer_drop(sphere, plane, LayerDropParams(**params), progress=progress), out, progress)


def _kink_bound(s):
    """The most the rebound can be off by the integration alone: ``3 (v0 h / d_max)^2`` with ``h``
    the mean step in contact (each element's force starts with a kink a Runge-Kutta step crosses
    with an error of ``J h^2 / 2``; see the viscoelastic layer's tests for the derivation)."""
    t, touching = s.artifacts["history"]["t_s"], s.artifacts["history"]["force_N"] > 0
    t_in, t_out = t[touching][0], t[touching][-1]
    steps = s.artifacts["result"].t
    n = np.count_nonzero((steps[:-1] >= t_in) & (steps[1:] <= t_out))
    return 3 * (s["v0_m_s"] * (t_out - t_in) / max(n, 1) / s["max_indentation_m"]) ** 2


def test_the_elastic_drop_gives_the_closed_forms(sample_tables):
    """Largest indentation ``(3 m v^2 / (2 k))^(1/3)`` and contact time ``(2/3) B(1/3, 1/2) d_max /
    v`` within 1e-3 (measured +0.03 % and +0.04 %: the centre rule on 41 x 41 elements), leaving as
    fast as it came and nothing lost, to what the integration guarantees across the elements' kinks
    (:func:`_kink_bound`; measured 7e-7)."""
    s = _drop(sample_tables)
    assert s.ok and s["left"], s.values
    closed = s["closed_form"]["relaxed"]
    assert s["max_indentation_m"] == pytest.approx(closed["max_indentation_m"], rel=1e-3)
    assert s["contact_time_s"] == pytest.approx(closed["contact_time_s"], rel=1e-3)
    bound = _kink_bound(s)
    assert bound < 1e-2  # (enough steps in contact for the bound to mean something)
    assert s["restitution"] == pytest.approx(1.0, abs=bound)
    assert abs(s["energy_lost_J"]) < 2 * bound * s["energy_in_J"]


@pytest.mark.slow
def test_a_viscoelastic_drop_lies_between_its_elastic_layers_dissipates_what_it_loses_and_is_plotted(
        sample_tables, tmp_path):
    """rho = 0.5, creep time 1 ms (of the order of the 3-4 ms contact):
    - the largest indentation lies between the closed forms of the elastic layers at E / rho (too
      slow to relax) and E (relaxed at once);
    - at every instant the kinetic energy, the layer's (both springs of each element's Zener solid,
      :meth:`MultibodySystem.energy`) and the dashpots' dissipation so far (Simpson's quadrature of
      :meth:`ViscoelasticLayer.dissipation` along the dense output, 1601 times) add up to the energy
      the ball came with, within 1e-3 of it (measured 2.4e-4; the elastic layer keeps its energy
      so: the rest is the depths' midsurface correction); half of it is lost;
    - the energy lost, the energy leaving with the ball and the energy the layer still holds add up
      to what came in; the history and plots are written."""
    s = _drop(sample_tables, tmp_path, rho=0.5, creep_time=1e-3)
    assert s.ok and s["left"] and s["states"] == 41 * 41, s.values
    bounds = s["closed_form"]
    assert bounds["instantaneous"]["max_indentation_m"] < s["max_indentation_m"] < bounds["relaxed"]["max_indentation_m"]

    res, system, load = (s.artifacts[k] for k in ("result", "system", "load"))
    layer, grid = load.contact.layer, load.contact.compartments["layer"].grid
    times = np.linspace(0.0, float(res.t[-1]), 1601)
    power, total = np.empty(len(times)), np.empty(len(times))
    for k, t in enumerate(times):
        total[k] = system.energy(res.sol(t))
        z = system.load_state(load)
        assert z is not None
        load(t, system)
        power[k] = grid.area @ layer.dissipation(load.last["layer"].depth, np.full(grid.n, 0.005), z)
    assert power.min() >= 0
    lost = np.concatenate([[0.0], [simpson(power[:k + 1], x=times[:k + 1]) for k in range(1, len(times))]])
    E0 = s["energy_in_J"]
    assert np.abs(total + lost - E0).max() < 1e-3 * E0
    assert 0.4 < lost[-1] / E0 < 0.6 and s["restitution"] < 0.8  # (what is lost is no rounding: half the energy)

    held = E0 - s["energy_lost_J"] - 0.5 * s["mass_kg"] * (s["restitution"] * s["v0_m_s"]) ** 2
    assert 0 <= held < 0.02 * E0
    history = np.load(tmp_path / "layer_drop.npz")
    assert history["force_N"].max() == pytest.approx(s["peak_force_N"]) and (tmp_path / "layer_drop.png").stat().st_size


def test_a_contact_beyond_the_grid_is_a_failed_run(sample_tables):
    """At 3 m/s the contact outgrows a +-1 mm grid: the force of the elements beyond it is missing,
    so the run is reported failed, saying so, not as a result."""
    s = _drop(sample_tables, v0=3.0, half_width=0.001)
    assert not s.ok and "reached the element grid's edge" in s["message"]


def test_a_ball_still_in_the_layer_has_no_restitution(sample_tables, tmp_path):
    """Stopped at 1 ms, a sixth of the contact, the ball is still pressing in: the run fails saying
    so, and reports no restitution (its last speed over the arriving one would read as a rebound),
    in the summary, the report and the plot."""
    s = _drop(sample_tables, out=tmp_path, t_end=1e-3)
    assert not s.ok and "had not left the layer" in s["message"] and not s["left"]
    assert s["restitution"] is None
    assert "restitution none" in LayerDropScenario().report(s)
    assert (tmp_path / "layer_drop.png").stat().st_size > 0


@pytest.mark.parametrize("strain", ["small", "large"])
def test_a_ball_through_the_layer_ends_the_run_there(sample_tables, strain):
    """At 1 km/s the ball goes through a 2 mm layer in microseconds, on a grid wide enough that the
    contact stays on it: the run ends where the ball has gone through 95 % of the layer (it once ran
    on through the plane for minutes), failed, saying so, with no restitution."""
    s = _drop(sample_tables, v0=1e3, thickness=2e-3, half_width=0.01, strain=strain)
    assert not s.ok and "went through 95 % of the 0.002 m layer" in s["message"]
    assert s["max_indentation_m"] == pytest.approx(0.95 * 2e-3, rel=1e-6)
    assert s.artifacts["result"].t[-1] < 1e-5  # the depth at 1 km/s is reached within 2 us
    assert s["restitution"] is None


def test_a_ball_too_fast_to_resolve_is_said_so(sample_tables):
    """At 10^20 m/s the first integration step goes from above the layer to through it, and the run
    ends at its start: said so (it was reported as a ball that had not left by t_end). At 10^300 m/s
    the kinetic energy overflows: refused before the run, naming v0 (the step control's norms
    overflowed, and it failed with scipy's warnings and its step-size message)."""
    s = _drop(sample_tables, v0=1e20)
    assert not s.ok and "crossed the layer within the first integration step (v0 = 1e+20 m/s" in s["message"]
    assert s["restitution"] is None
    r = run_cli("run", "layer-drop", "--tables", str(sample_tables), "--v0", "1e300")
    assert r.returncode == 1 and "Traceback" not in r.stderr and "Warning" not in r.stderr, r.stderr
    assert "layer-drop: the ball's kinetic energy 0.5 mass v0^2 overflows (v0 = 1e+300 m/s, mass = 0.01 kg)" in r.stderr


def test_an_element_grid_beyond_the_layer_table_is_bad_input(sample_tables):
    """The sample layer's table spans +-10 mm: a grid of +-20 mm is refused before the run, naming
    the table, the grid's span and the table's (it once failed inside a window, naming neither)."""
    r = run_cli("run", "layer-drop", "--tables", str(sample_tables), "--half-width", "0.02")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "ef_layer: the element grid 'layer' has its centres over u in [-0.0195122, 0.0195122]" in r.stderr
    assert "beyond the table's parameter domain [-0.01, 0.01] x [-0.01, 0.01]" in r.stderr


@pytest.mark.slow
def test_a_long_run_reports_its_simulated_time_as_it_goes(sample_tables, monkeypatch):
    """simulate's ``progress`` hears of every accepted step once its wall-time throttle is off (a
    segment without an event, e.g. a long flight, once said nothing until it ended), in time order,
    and listening changes nothing in the run."""
    import simclient.dynamics._integrate as integrate

    quiet = _drop(sample_tables)
    monkeypatch.setattr(integrate, "PROGRESS_EVERY", 0.0)
    said: list[str] = []
    heard = _drop(sample_tables, progress=said.append)
    times = [float(m.split()[2]) for m in said if m.startswith("t = ")]
    assert all(m.endswith("s of 0.05 s") for m in said if m.startswith("t = "))
    assert len(times) >= heard["steps"] and times == sorted(times) and 0 < times[-1] <= 0.05
    assert heard["max_indentation_m"] == quiet["max_indentation_m"] and heard["steps"] == quiet["steps"]
