"""Plug-ins: the example distribution under examples/ (an agent and a task family, declared as entry points in its
pyproject.toml) runs through ``causalplay bench`` with no change to causalplay, in every executor's workers.

The distribution is "installed" the way pip leaves one on disk -- its package next to a ``.dist-info`` folder
whose ``entry_points.txt`` is written from the example's own pyproject.toml -- in a temporary folder put on
``PYTHONPATH``, so the CLI subprocess and its workers (forked, Dask's and Ray's) find it through
``importlib.metadata``, and nothing is installed into the project's environment.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "causalplay-example-plugin"


def _dist_info(site: Path, name: str, version: str, entry_points: dict[str, dict[str, str]]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for group, eps in entry_points.items()))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A site folder with the example distribution installed (package + dist-info from its pyproject.toml)."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(EXAMPLE / "causalplay_example", site / "causalplay_example")
    _dist_info(site, project["name"], project["version"], project["entry-points"])
    return site


def _cli(site: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "COLUMNS": "400"}  # no wrapped messages
    return subprocess.run([sys.executable, "-m", "causalplay", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=site)


def _results(out: Path) -> dict:
    return {r["agent"]: r for r in json.loads((out / "results.json").read_text())}


def test_list_agents_names_the_plugins_and_their_distribution(site):
    res = _cli(site, "bench", "--list-agents")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    plug = [ln for ln in lines if ln.strip().startswith("my-agent")]
    assert plug == ["  my-agent               causalplay-example-plugin 0.1.0 (causalplay_example.agents:MyAgent)"]
    assert "family oneblicket (causalplay-example-plugin 0.1.0): example/OneBlicket-v0" in lines
    assert any(ln.startswith("  halving ") and ln.endswith("causalplay_example.agents:HalvingAgent [default]")
               for ln in lines)


EXECUTORS = ["process", *(pytest.param(x, marks=pytest.mark.skipif(importlib.util.find_spec(x) is None,
                                                                    reason=f"the {x} extra is not installed"))
                          for x in ("dask", "ray"))]


@pytest.fixture(scope="module")
def agent_runs(site, tmp_path_factory):
    """``my-agent`` and ``random`` on IVRE-v0 by each executor (run once each, lazily)."""
    done: dict[str, Path] = {}

    def run(executor: str) -> Path:
        if executor not in done:
            out = tmp_path_factory.mktemp(f"bench-{executor}")
            res = _cli(site, "bench", "--agents", "my-agent,random", "--episodes", "40", "--seeds", "1",
                       "--shard-size", "20", "--executor", executor, "--workers", "2", "--out", str(out))
            assert res.returncode == 0, res.stdout + res.stderr
            done[executor] = out
        return done[executor]

    return run


@pytest.mark.parametrize("executor", EXECUTORS)
def test_plugin_agent_runs_in_every_executor(agent_runs, executor):
    """The workers resolve ``my-agent`` from the metadata; every executor plays the same episodes the same way."""
    out = agent_runs(executor)
    res = _results(out)
    assert set(res) == {"my-agent", "random"} and res["my-agent"]["episodes"] == 40
    records = pd.read_csv(out / "episodes.csv").drop(columns="seconds")
    assert list(records["agent"].unique()) == ["my-agent", "random"]
    if executor != "process":
        base = pd.read_csv(agent_runs("process") / "episodes.csv").drop(columns="seconds")
        pd.testing.assert_frame_equal(records, base)


def test_plugin_agent_plays_as_its_docstring_says(site, monkeypatch):
    """``my-agent`` on IVRE: each trial is one object alone, the lowest index not yet tested alone; its belief
    is 1 / 0 for objects that lit / stayed dark alone. Checked against the episodes' own panels."""
    monkeypatch.syspath_prepend(str(site))
    import torch
    from causalplay.envs import make_batch

    from causalplay.agents import make_agent

    task = make_batch("causalplay/IVRE-v0", 64, seed=3)
    agent = make_agent("my-agent", seed=0)
    obs = task.reset()
    agent.reset(task.info(), obs)
    C, N, T = task.n_context, task.n_objects, task.horizon
    checked = 0
    for t in range(T):
        live = ~task.done
        a = agent.act(obs, live)
        trial, belief = a[live, :N], a[live, N:]
        assert torch.equal(trial.sum(1), torch.ones(len(trial), dtype=trial.dtype))
        seen, lit = task.panels[live, : t + 1], task.lit[live, : t + 1]  # what the live rows were shown so far
        assert torch.equal(agent.panels[live], seen)
        alone = seen & (seen.sum(-1) == 1)[..., None]
        tested = alone.any(1)
        k = trial.argmax(1)
        first_untested = (~tested).int().argmax(1)
        some_left = (~tested).any(1)
        assert torch.equal(k[some_left], first_untested[some_left])
        lit_alone = (alone & lit[..., None]).any(1)
        assert (belief[lit_alone] == 1).all() and (belief[tested & ~lit_alone] == 0).all()
        checked += int(live.sum())
        obs, *_ = task.step(a)
        if bool(task.done.all()):
            break
    assert checked > 64 * C  # the trial steps were checked too, not only the context panels


def test_plugin_family_benchmarks_with_the_numbers_it_must_give(site, tmp_path):
    """``example/OneBlicket-v0`` (4 objects, one blicket, 4 tests then a last guess) through the process pool:
    halving solves every episode with exactly log2(4) = 2 tests; a uniform guess is right with probability 1/16
    per step over 5 steps, so random solves 1 - (15/16)^5 = 27.58 % (2,000 episodes: SE 1.0 point; 4 SE allowed)."""
    out = tmp_path / "fam"
    res = _cli(site, "bench", "--env", "example/OneBlicket-v0", "--episodes", "1000", "--seeds", "2",
               "--executor", "process", "--workers", "2", "--shard-size", "500", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "mean ± 95% CI over episodes" in res.stdout
    rows = json.loads((out / "results.json").read_text())
    halving = [r for r in rows if r["agent"] == "halving"]
    assert len(halving) == 1 and halving[0]["solved"] == 100.0 and halving[0]["tests"] == 2.0
    (rnd,) = [r for r in rows if r["agent"] == "random"]
    p = 1 - (15 / 16) ** 5
    assert rnd["episodes"] == 2000
    assert abs(rnd["solved"] / 100 - p) < 4 * math.sqrt(p * (1 - p) / 2000)


@pytest.fixture
def registry_restored():
    """Families and gymnasium ids registered by a test are forgotten after it."""
    import gymnasium
    from causalplay.envs import families

    fams, loaded, ids = dict(families._REGISTERED), families._PLUGINS_LOADED, set(gymnasium.registry)
    yield
    families._REGISTERED.clear()
    families._REGISTERED.update(fams)
    families._PLUGINS_LOADED = loaded
    for i in set(gymnasium.registry) - ids:
        del gymnasium.registry[i]


def test_gymnasium_single_env_of_a_plugin_family(site, monkeypatch, registry_restored):
    """A plug-in family's ids reach gymnasium once the family is looked up (here by its id)."""
    monkeypatch.syspath_prepend(str(site))
    import gymnasium
    from causalplay.envs import make_batch

    batch = make_batch("example/OneBlicket-v0", 2, seed=0)  # registers the family, and its ids with gymnasium
    env = gymnasium.make("example/OneBlicket-v0", disable_env_checker=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (batch.obs_size,) and env.action_space.shape == (8,)


def test_a_plugin_installed_after_a_first_scan_is_found(site, monkeypatch, registry_restored):
    """The installed families are scanned again when ``sys.path`` changed (a plug-in installed into a running
    session, or a test's site folder after another test looked up an unknown id)."""
    from causalplay.envs import make_batch

    with pytest.raises(ValueError, match="unknown environment id 'example/OneBlicket-v0'"):
        make_batch("example/OneBlicket-v0", 2, seed=0)  # not installed yet: the scan finds no such family
    monkeypatch.syspath_prepend(str(site))
    assert make_batch("example/OneBlicket-v0", 2, seed=0).obs_size > 0


def test_broken_plugin_is_reported_with_its_distribution(tmp_path, monkeypatch):
    _dist_info(tmp_path, "broken-dist", "2.0", {"causalplay.agents": {"broken-agent": "no_such_module_xyz:Agent"},
                                                 "causalplay.families": {"broken": "no_such_module_xyz:FAMILY"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    from causalplay.envs.families import get_family

    from causalplay.agents import make_agent
    from causalplay.core.plugins import PluginError

    with pytest.raises(PluginError, match=r"plug-in 'broken-agent' .* of distribution broken-dist 2\.0 failed to "
                                          r"load: ModuleNotFoundError: No module named 'no_such_module_xyz'"):
        make_agent("broken-agent")
    with pytest.raises(PluginError, match="plug-in 'broken' .* of distribution broken-dist 2.0 failed to load"):
        get_family("broken")
    res = _cli(tmp_path, "bench", "--agents", "broken-agent", "--episodes", "1", "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "broken-dist 2.0" in res.stderr and "Traceback" not in res.stderr
    # an id no built-in family has is looked for among the plug-in families: the broken one is named
    res = _cli(tmp_path, "bench", "--env", "example/Nope-v0", "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "broken-dist 2.0" in res.stderr and "Traceback" not in res.stderr
    # the listing shows the broken family with the reason, and everything else
    res = _cli(tmp_path, "bench", "--list-agents")
    assert res.returncode == 0, res.stderr
    assert "family broken (broken-dist 2.0 (no_such_module_xyz:FAMILY)): plug-in 'broken'" in res.stdout
    assert "  broken-agent           broken-dist 2.0 (no_such_module_xyz:Agent)" in res.stdout
    assert "family blicket (causalplay)" in res.stdout


def test_plugin_agent_refused_for_families_it_does_not_play(site, monkeypatch):
    monkeypatch.syspath_prepend(str(site))
    from causalplay.agents import make_agent

    with pytest.raises(ValueError, match=r"agent 'my-agent' from causalplay-example-plugin 0\.1\.0 .* plays the task "
                                         r"families \['blicket'\], not 'dag'"):
        make_agent("my-agent", family="dag")
