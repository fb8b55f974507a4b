"""The benchmark's PNG plots: one file per env, of the size asked for, drawn without touching pyplot's state."""

import matplotlib
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from causalplay.bench.plots import plot_rewards, plot_success


@pytest.fixture
def records():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"env": ["causalplay/IVRE-v0"] * 6 + ["causalplay/EST-v1"] * 6,
                         "agent": ["eig", "random"] * 6, "solved_step": rng.integers(0, 5, 12),
                         "episode_reward": rng.normal(size=12)})


@pytest.fixture
def svg_backend():
    """A backend other than Agg, so that a plot switching the caller's backend is seen."""
    import matplotlib.pyplot as plt

    old = matplotlib.get_backend()
    matplotlib.use("svg")
    yield plt
    matplotlib.use(old)


def test_plots_write_one_png_per_env_and_leave_pyplot_alone(records, svg_backend, tmp_path):
    before = svg_backend.get_fignums()
    paths = plot_success(records, {"causalplay/IVRE-v0": (1, 4), "causalplay/EST-v1": (0, 4)}, tmp_path)
    paths += plot_rewards(records, tmp_path)
    assert [p.name for p in paths] == ["success_causalplay_IVRE-v0.png", "success_causalplay_EST-v1.png",
                                       "rewards_causalplay_IVRE-v0.png", "rewards_causalplay_EST-v1.png"]
    # 6 x 4 inches at 110 dpi; the reward plot is max(6, 2 agents) = 6 inches wide
    assert {Image.open(p).size for p in paths} == {(660, 440)}
    assert matplotlib.get_backend() == "svg"
    assert svg_backend.get_fignums() == before
