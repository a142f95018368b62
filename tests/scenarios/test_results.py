"""The results layer's plot helpers: what the pressure maps show."""

import math
from types import SimpleNamespace

import numpy as np
import pytest


@pytest.mark.parametrize("peak", [4.568, 27.4, 0.3046, 115.9, 1.0])
def test_pressure_levels_are_round_and_cover_the_peak(peak):
    from simclient.results import pressure_levels

    levels = pressure_levels(peak)
    step = levels[1] - levels[0]
    assert levels[0] == 0 and levels[-1] >= peak and len(levels) <= 14
    assert np.allclose(np.diff(levels), step)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5)), step


def test_compartment_maps_are_named():
    from simclient.results import draw_compartments, pressure_levels, pyplot

    x, z = np.meshgrid(np.linspace(-0.01, 0.01, 5), np.linspace(-0.01, 0.01, 4), indexing="ij")
    centre = np.column_stack([x.ravel(), np.zeros(x.size), z.ravel()])

    def grid(offset):
        return SimpleNamespace(centre=centre + [0.0, 0.0, offset], shape=x.shape, usable=np.ones(x.size, bool))
    plt = pyplot()
    fig, ax = plt.subplots()
    maps = {"medial": (grid(0.02), np.full(x.size, 2e6)), "lateral": (grid(-0.02), np.full(x.size, 1e6))}
    draw_compartments(ax, maps, pressure_levels(2.0))
    labels = {t.get_text(): t.get_position() for t in ax.texts}
    assert set(labels) == {"medial", "lateral"}
    assert labels["medial"][0] == pytest.approx(20.0) and labels["lateral"][0] == pytest.approx(-20.0)  # z, mm
    plt.close(fig)
