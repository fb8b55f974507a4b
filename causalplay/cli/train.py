"""``causalplay train``: train an RL agent (needs the ``rl`` extra; see ``docs/rl.md``)."""

from __future__ import annotations

import json
import logging

import typer

from causalplay.core.specs import format_spec

from .config import usage_errors

__all__ = ["train_cmd"]


def train_cmd(
    agent: str = typer.Option(..., help="ppo, td3 or ddpg (recurrent-ppo: sb3-contrib's RecurrentPPO, for the "
                                        "Overhypothesis meta-RL baseline)."),
    recurrent: bool = typer.Option(False, "--recurrent", help="The paper's recurrent (Re) variant: a history-LSTM "
                                   "encoder in front of the actor and of the critic."),
    preset: str = typer.Option("", help="Hyper-parameters: 'paper' (IVRE's training scripts; the default on the "
                                        "symbolic Blicket ids) or 'fast' (smaller, for smoke runs; the default on "
                                        "pixel and sequence ids)."),
    env: str = typer.Option("causalplay/IVRE-v0", help="A symbolic Blicket id, a pixel id, or "
                                                    "causalplay/Overhypothesis-v0 (one episode = a sequence)."),
    steps: int = typer.Option(10_000_000, help="Env steps to train (summed over the vector env's rows)."),
    seed: int = typer.Option(0, help="Training seed (networks, exploration, training episodes)."),
    out: str = typer.Option(..., help="Output folder (config.json, progress.csv, best/last checkpoints, PNG). "
                                      "Running the same command again resumes a killed run."),
    envs: int = typer.Option(0, help="Rows of the vector env (0: the preset's)."),
    obs: str = typer.Option("history", help="Observation: 'history' (count, padded history, last belief)."),
    belief_input: bool = typer.Option(False, "--belief-input", help="Append the exact posterior's marginals."),
    belief_tracker: bool = typer.Option(False, "--belief-tracker", help="Append the exact posterior that also "
                                        "excludes the guesses the env rejected, and its MAP blicket set."),
    eval_every: int = typer.Option(0, help="Env steps between held-out evaluations and checkpoints (0: the "
                                           "preset's, 100000 for paper)."),
    eval_episodes: int = typer.Option(0, help="Held-out episodes per evaluation (0: the preset's, 1000)."),
    name: str = typer.Option("", help="Row name in the benchmark (default e.g. ppo-ff, td3-re, ppo-ff-belief)."),
    hyper: str = typer.Option("{}", help='Hyper-parameter overrides as JSON, e.g. \'{"net_arch": [256, 256]}\'.'),
    device: str = typer.Option("cpu", help="Torch device for training: cpu, cuda, cuda:1 (checkpoints load on "
                                           "any device)."),
    threads: int = typer.Option(1, help="Torch intra-op threads."),
    progress: bool = typer.Option(True, help="Show the progress bar."),
) -> None:
    """Train an RL agent on the native vector env; keep the best checkpoint on held-out episodes."""
    import importlib.util

    if importlib.util.find_spec("stable_baselines3") is None:
        raise typer.BadParameter("causalplay train needs the rl extra: pip install 'causalplay[rl]'")
    import torch

    from causalplay.rl.train import TrainConfig, train
    from causalplay.rl.train import log as train_log

    if not train_log.handlers:  # the trainer logs one line per evaluation; the command shows them on stderr
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        train_log.addHandler(handler)
        train_log.setLevel(logging.INFO)

    try:
        hp = json.loads(hyper)
    except json.JSONDecodeError as err:
        raise typer.BadParameter(f"--hyper {hyper!r} is not JSON: {err}") from None
    if not isinstance(hp, dict):
        raise typer.BadParameter(f"--hyper must be a JSON object, got {hyper!r}")
    with usage_errors():
        cfg = TrainConfig(agent=agent, out=out, env=env, steps=steps, seed=seed, envs=envs or None,
                          recurrent=recurrent, preset=preset or None, obs=obs, belief_input=belief_input,
                          belief_tracker=belief_tracker, eval_every=eval_every or None,
                          eval_episodes=eval_episodes or None, name=name or None, hyper=hp, device=device)
    torch.set_num_threads(threads)
    with usage_errors(errors=(ValueError, FileExistsError)):
        path = train(cfg, progress=progress)
    typer.echo(f"done: {cfg.name} in {path} (best.zip, progress.csv, learning_curve.png); "
               f"score it with: causalplay bench --agents \"{format_spec('rl', path=str(path))}\"")
