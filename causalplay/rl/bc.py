"""Behaviour cloning for the causal-DAG task: the passive learner of Lampinen et al.'s title, a small GRU policy
(:class:`causalplay.agents.dag.GRUPolicy`) trained offline on ``expert`` trajectories, then evaluated interactively
(agent ``bc:path=...``).

The expert's data are observation sequences and its actions; the learner never acts during training. The
training set holds only ``split="train"`` structures (D never an ancestor of E), so on ``split="test"`` the
learner must use a causal link it never saw used in training -- the paper's generalisation test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from causalplay.agents.dag import ExpertAgent, GRUPolicy
from causalplay.bench.play import play
from causalplay.envs import make_batch

__all__ = ["expert_trajectories", "train_bc"]


def expert_trajectories(n_episodes: int, seed: int, env_id: str = "causalplay/CausalDAG-v1", linear: bool = False,
                        split: str = "train", **env_kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_episodes`` expert episodes: observations ``[E, T, d]`` (float32) and actions ``[E, T]`` (long)."""
    class Recorder(ExpertAgent):  # the expert, writing down what it saw and did
        def act(self, obs, active):
            a = super().act(obs, active)
            seen.append(obs.float())
            did.append(a)
            return a

    seen, did = [], []
    play(make_batch(env_id, n_episodes, seed=seed, linear=linear, split=split, **env_kwargs), Recorder(seed=seed))
    return torch.stack(seen, 1), torch.stack(did, 1)


def train_bc(out: str | Path, n_episodes: int = 20000, epochs: int = 20, seed: int = 0, hidden: int = 128,
             lr: float = 3e-3, batch: int = 256, env_id: str = "causalplay/CausalDAG-v1", linear: bool = False,
             log=print) -> Path:
    """Behaviour cloning (cross-entropy on every step's expert action) on ``n_episodes`` train-split expert
    episodes; writes ``policy.pt`` and ``train.json`` (budget, losses, accuracies) under ``out``."""
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    obs, act = expert_trajectories(n_episodes, seed, env_id, linear)
    val_obs, val_act = expert_trajectories(2000, seed + 1, env_id, linear)
    E, T, d = obs.shape
    n_actions = 2 * (d // (6 if "Adaptive" in env_id else 5))
    pol = GRUPolicy(d, n_actions, hidden)
    opt = torch.optim.Adam(pol.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    hist = []
    for ep in range(epochs):
        perm = torch.randperm(E, generator=gen)
        tot = 0.0
        for s in range(0, E, batch):
            i = perm[s:s + batch]
            logits, _ = pol(obs[i])
            loss = nn.functional.cross_entropy(logits.reshape(-1, n_actions), act[i].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(i)
        with torch.no_grad():
            vl, _ = pol(val_obs)
            acc = (vl.argmax(-1) == val_act).float()
        rec = {"epoch": ep + 1, "loss": tot / E, "val_acc_explore": float(acc[:, :-1].mean()),
               "val_acc_goal": float(acc[:, -1].mean())}
        hist.append(rec)
        log(json.dumps(rec))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": pol.state_dict(), "obs_size": d, "n_actions": n_actions, "hidden": hidden},
               out / "policy.pt")
    (out / "train.json").write_text(json.dumps({
        "n_episodes": n_episodes, "epochs": epochs, "seed": seed, "hidden": hidden, "lr": lr, "batch": batch,
        "env_id": env_id, "linear": linear, "gradient_steps": epochs * int(np.ceil(E / batch)),
        "parameters": sum(p.numel() for p in pol.parameters()), "seconds": time.perf_counter() - t0,
        "history": hist}, indent=1))
    return out / "policy.pt"
