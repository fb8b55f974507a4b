"""The passive learner of the paper's title: a small GRU policy trained offline by behaviour cloning on
``expert`` trajectories of the causal-DAG task, then evaluated interactively (agent ``bc``).

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

__all__ = ["GRUPolicy", "expert_trajectories", "train_bc", "load_policy"]


class GRUPolicy(nn.Module):
    """``obs [B, T, d] -> logits [B, T, 2n]`` (a one-layer GRU with a linear read-in and read-out)."""

    def __init__(self, obs_size: int, n_actions: int, hidden: int = 128):
        super().__init__()
        self.obs_size, self.n_actions, self.hidden = obs_size, n_actions, hidden
        self.inp = nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU())
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_actions)

    def forward(self, obs: torch.Tensor, h: torch.Tensor | None = None):
        y, h = self.gru(self.inp(obs), h)
        return self.out(y), h


def expert_trajectories(n_episodes: int, seed: int, env_id: str = "causalplay/CausalDAG-v0", linear: bool = False,
                        split: str = "train", **env_kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_episodes`` expert episodes: observations ``[E, T, d]`` (float32) and actions ``[E, T]`` (long)."""
    from causalplay.envs import make_batch

    from .agents import DAGTaskInfo, ExpertAgent

    env = make_batch(env_id, n_episodes, seed=seed, linear=linear, split=split, **env_kwargs)
    obs = env.reset()
    agent = ExpertAgent(seed=seed)
    agent.reset(DAGTaskInfo.from_env(env), obs, oracle=env)
    O, A = [], []
    for _ in range(env.horizon):
        a = agent.act(obs, ~env.done)
        O.append(obs.float())
        A.append(a)
        obs, *_ = env.step(a)
    return torch.stack(O, 1), torch.stack(A, 1)


def train_bc(out: str | Path, n_episodes: int = 20000, epochs: int = 20, seed: int = 0, hidden: int = 128,
             lr: float = 3e-3, batch: int = 256, env_id: str = "causalplay/CausalDAG-v0", linear: bool = False,
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


def load_policy(path: str | Path) -> GRUPolicy:
    """Load a policy written by :func:`train_bc`."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no behaviour-cloning checkpoint at {str(p)!r}; train one with "
                                "causalplay.dag.passive.train_bc (or analyses/causal_dag_table.py)")
    ck = torch.load(p, map_location="cpu", weights_only=True)
    pol = GRUPolicy(ck["obs_size"], ck["n_actions"], ck["hidden"])
    pol.load_state_dict(ck["state_dict"])
    pol.eval()
    return pol
