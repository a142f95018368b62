"""The bouncing ball's report: what its plots draw, checked on a run."""

import numpy as np
import pytest


def test_the_window_panel_runs_forward_to_the_runs_end(sample_tables):
    """The "window moves" panel: every window's steps at nondecreasing wall times, each ending at
    the run's end (its last move no later), a 3 x 9 ground window moving (thesis Table 6.3: twice)."""
    from simclient.scenarios import SCENARIOS, Tables
    from simclient.scenarios.bouncing_ball.report import window_steps

    cls = SCENARIOS["bouncing-ball"]
    s = cls().run(cls.params({}), Tables(folder=sample_tables))
    steps = window_steps(s.artifacts["moves"], s.artifacts["ended"])
    ends = {name: wall[-1] for name, (wall, _) in steps.items()}
    assert len(set(ends.values())) == 1
    for name, (wall, rj0) in steps.items():
        assert np.all(np.diff(wall) >= 0), name
        assert len(wall) == len(rj0)
    assert len(steps["ground"][1]) - 2 == s["windows"]["ground"]["updates"] == 2


@pytest.mark.slow
def test_writing_the_outputs_is_announced_and_listed(sample_tables, tmp_path):
    """A run with ``out`` says it is writing (before, 13 s passed in silence) and lists the files."""
    from simclient.scenarios import SCENARIOS, Tables

    cls = SCENARIOS["bouncing-ball"]
    said: list[str] = []
    s = cls().run(cls.params({"t_end": 0.06}), Tables(folder=sample_tables), out=tmp_path, progress=said.append)
    assert f"writing histories and plots to {tmp_path}" in said
    assert str(tmp_path / "bouncing_ball.png") in s["outputs"] and str(tmp_path / "bouncing_ball.pvd") in s["outputs"]
